//! `setmaxnreg` moves registers through the block's pool: an increase
//! waits until decreases have put enough there. Two ways that hangs on
//! the GPU (`scripts/probes/setmaxnreg_pool.cu` saw both on the H100),
//! each a deadlock report naming the increase's Rust line; the forms that
//! run; an increase to fewer registers than the warp holds.

use super::*;

/// 384 threads: the last warpgroup gives its registers up (168 a thread,
/// what `launch_bounds(384, 1)` leaves, down to 40), the first two take
/// them (up to `MORE`): 232 takes exactly what was given, 240 more.
#[kernel(targets(sm_90a), specialize(MORE = [232, 240]), launch_bounds(384, 1))]
pub fn hands_registers_over<const MORE: u32>(out: &mut [u32]) {
    let t = thread_idx_x();
    if t >= 256 {
        setmaxnreg_dec(40);
    } else {
        setmaxnreg_inc(MORE);
        out[t as usize] = t;
    }
}

/// The consumers (the first two warpgroups) arrive on an mbarrier after
/// they took their registers; the producer warpgroup gives its registers
/// up before its wait for them (`late` 0) or after (`late` 1).
#[kernel(targets(sm_90a), launch_bounds(384, 1))]
pub fn waits_before_giving_up(out: &mut [u32], late: u32) {
    let bars = shared_array::<u64, 1>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 256);
        fence_mbarrier_init();
    }
    sync_threads();
    if t >= 256 {
        if late == 0 {
            setmaxnreg_dec(40);
        }
        mbarrier_wait_parity(bars, 0u32, 0u32);
        if late == 1 {
            setmaxnreg_dec(40);
        }
        out[t as usize] = t;
    } else {
        setmaxnreg_inc(232);
        out[t as usize] = t;
        mbarrier_arrive(bars, 0u32);
    }
}

fn device() -> Device {
    Device::emulator(Target::Sm90a)
}

#[test]
fn increases_that_fit_in_what_the_decreases_give_run() {
    let device = device();
    let mut out = device.alloc_zeroed::<u32>(384).expect("alloc");
    // SAFETY: one block of 384 threads, thread t writes out[t] or nothing.
    unsafe { hands_registers_over::Kernel::<232>::launch(&device, LaunchConfig::linear(1, 384), &mut out) }
        .expect("232 registers a thread for two warpgroups: what the third gave up");
    let got = device.download(&out).expect("download");
    assert!((0..256).all(|t| got[t] == t as u32) && got[256..].iter().all(|&v| v == 0));
    // SAFETY: as above, thread t writes out[t].
    unsafe { waits_before_giving_up::Kernel::launch(&device, LaunchConfig::linear(1, 384), &mut out, 0) }
        .expect("the registers given up before the wait");
    let got = device.download(&out).expect("download");
    assert!((0..384).all(|t| got[t] == t as u32));
}

#[test]
fn increases_past_what_the_decreases_give_never_complete_and_name_the_increase() {
    let device = device();
    let mut out = device.alloc_zeroed::<u32>(384).expect("alloc");
    // SAFETY: as in the test above.
    let e = failure(unsafe {
        hands_registers_over::Kernel::<240>::launch(&device, LaunchConfig::linear(1, 384), &mut out)
    });
    let text = e.to_string();
    // 128 threads gave 128 registers each (16384); 256 threads ask for 72
    // each (18432): seven warps get theirs (16128), the eighth waits for
    // 2304 with 256 in the pool.
    assert!(
        e.message().starts_with(
            "setmaxnreg.inc can never complete: this warp asks for 240 registers a thread where it holds 168, 2304 more for its 32 threads, and no warp of the block can run to give them up"
        ),
        "{text}"
    );
    let inc = at("hands_registers_over", "setmaxnreg_inc(MORE);");
    assert!(
        text.contains(&format!(
            "lanes 0-31 wait at setmaxnreg.inc for 240 registers a thread (it holds 168) ({inc}, line "
        )),
        "{text}"
    );
    assert!(
        e.message()
            .contains("1 warp waits in setmaxnreg.inc for registers of the block's pool, which holds 256")
            && e.message()
                .contains("each thread of this kernel starts with 168 registers"),
        "{text}"
    );
}

#[test]
fn a_decrease_after_a_wait_for_the_increasing_warps_never_comes_and_is_named() {
    let device = device();
    let mut out = device.alloc_zeroed::<u32>(384).expect("alloc");
    // SAFETY: as in the tests above.
    let e =
        failure(unsafe { waits_before_giving_up::Kernel::launch(&device, LaunchConfig::linear(1, 384), &mut out, 1) });
    let text = e.to_string();
    assert!(e.message().contains("mbarrier wait can never complete"), "{text}");
    assert!(e.message().contains(", 256 in setmaxnreg.inc,"), "{text}");
    let wait = at("waits_before_giving_up", "mbarrier_wait_parity(bars, 0u32, 0u32);");
    let inc = at("waits_before_giving_up", "setmaxnreg_inc(232);");
    assert!(text.contains(&format!("at {wait}, line")), "{text}");
    for warp in 0..8 {
        assert!(
            text.contains(&format!(
                "warp {warp}: lanes 0-31 wait at setmaxnreg.inc for 232 registers a thread (it holds 168) ({inc}, line "
            )),
            "{text}"
        );
    }
    assert!(
        e.message().contains(
            "A warpgroup that gives registers up must call `setmaxnreg_dec` before it waits for anything the warpgroups that take them do"
        ),
        "{text}"
    );
}

/// 256 threads and one block a multiprocessor leave each thread 256
/// registers: an increase to 232 asks for fewer.
#[kernel(targets(sm_90a), launch_bounds(256, 1))]
pub fn raises_to_fewer(out: &mut [u32]) {
    let t = thread_idx_x();
    setmaxnreg_inc(232);
    out[t as usize] = t;
}

#[test]
fn an_increase_to_fewer_registers_than_the_warp_holds_is_an_error_at_its_line() {
    let device = device();
    let mut out = device.alloc_zeroed::<u32>(256).expect("alloc");
    // SAFETY: one block of 256 threads, thread t writes out[t].
    let e = failure(unsafe { raises_to_fewer::Kernel::launch(&device, LaunchConfig::linear(1, 256), &mut out) });
    let text = e.to_string();
    assert!(
        text.contains(&format!("at {}, line", at("raises_to_fewer", "setmaxnreg_inc(232);")))
            && e.message()
                .starts_with("setmaxnreg.inc to 232 registers a thread, fewer than the 256 this warp holds"),
        "{text}"
    );
}
