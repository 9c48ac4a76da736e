//! A kernel that reads what the kernel before it in the stream wrote,
//! before its own `grid_dependency_wait()`, once a flag that kernel
//! released says the data is there: the acquire orders the polling thread
//! after what the release published (the writes of the releasing block
//! that a barrier put before it). A relaxed poll, or a release that no
//! barrier puts after the other threads' writes, orders nothing, and the
//! read is the usual error.

use super::*;

/// Each thread writes its word of `data`; once the block has (a barrier,
/// if `barrier`), thread 0 counts the block in at `flag[0]`, with release
/// semantics if `release`.
#[kernel(targets(sm_90), launch_bounds(64))]
pub fn publishes(data: &mut [u32], flag: &mut [u32], release: bool, barrier: bool) {
    launch_dependents();
    let t = block_idx_x() * 64 + thread_idx_x();
    data[t as usize] = t * 3 + 1;
    if barrier {
        sync_threads();
    }
    if thread_idx_x() == 0 {
        if release {
            atomic_add(flag, 0u32, 1u32, Order::Release, Scope::Gpu);
        } else {
            atomic_add(flag, 0u32, 1u32, Order::Relaxed, Scope::Gpu);
        }
    }
}

/// Thread 0 waits until `blocks` blocks counted in at `flag[0]` (an
/// acquire if `acquire`) and copies `data` to `out`; every thread waits
/// for the kernel before only at its end.
#[kernel(targets(sm_90), launch_bounds(32))]
pub fn reads_after_the_flag(data: &[u32], flag: &mut [u32], out: &mut [u32], blocks: u32, acquire: bool) {
    if thread_idx_x() == 0 {
        if acquire {
            while atomic_add(flag, 0u32, 0u32, Order::Acquire, Scope::Gpu) < blocks {}
        } else {
            while atomic_add(flag, 0u32, 0u32, Order::Relaxed, Scope::Gpu) < blocks {}
        }
        for k in 0..data.len() {
            out[k] = data[k];
        }
    }
    grid_dependency_wait();
}

/// The two kernels on one stream; the second's result.
fn publish_then_read(release: bool, barrier: bool, acquire: bool) -> Result<Vec<u32>, Error> {
    let device = Device::emulator(Target::Sm90);
    let mut data = device.alloc_zeroed::<u32>(128)?;
    let mut flag = device.alloc_zeroed::<u32>(1)?;
    let mut out = device.alloc_zeroed::<u32>(128)?;
    // SAFETY: two blocks of 64 threads, thread t writes data[t]; one
    // thread reads data and writes out; flag is one word.
    unsafe {
        publishes::Kernel::launch(
            &device,
            LaunchConfig::linear(2, 64),
            &mut data,
            &mut flag,
            release,
            barrier,
        )?;
        reads_after_the_flag::Kernel::launch(
            &device,
            LaunchConfig::linear(1, 32),
            &data,
            &mut flag,
            &mut out,
            2,
            acquire,
        )?;
    }
    device.download(&out)
}

#[test]
fn a_flag_released_after_a_barrier_and_acquired_orders_the_read_of_the_kernel_before() {
    let got = publish_then_read(true, true, true).expect("ordered by the flag");
    assert!(got.iter().enumerate().all(|(t, &v)| v == t as u32 * 3 + 1));
}

#[test]
fn a_relaxed_poll_or_a_release_before_the_other_threads_writes_orders_nothing() {
    let copy = at("reads_after_the_flag", "out[k] = data[k];");
    for (release, barrier, acquire, at_line) in [
        (
            true,
            true,
            false,
            at(
                "reads_after_the_flag",
                "while atomic_add(flag, 0u32, 0u32, Order::Relaxed, Scope::Gpu) < blocks {}",
            ),
        ),
        (
            false,
            true,
            true,
            at(
                "reads_after_the_flag",
                "while atomic_add(flag, 0u32, 0u32, Order::Acquire, Scope::Gpu) < blocks {}",
            ),
        ),
        (true, false, true, copy.clone()),
    ] {
        let e = failure(publish_then_read(release, barrier, acquire).map(drop));
        let text = e.to_string();
        // `file:line:` of the statement (a loop's body prints as `{ ... }`).
        let place = &at_line[..at_line.find(": `").expect("file:line: `statement`") + 1];
        assert!(
            text.contains(&format!("at {place} ")) && text.contains("call `grid_dependency_wait()` before this access"),
            "release {release}, barrier {barrier}, acquire {acquire}: {text}"
        );
    }
}

/// Each thread adds its word of `data` into `sums` and, once the block
/// has, thread 0 counts the block in at `flag[0]` with release semantics:
/// the kernel reads `data` with plain loads.
#[kernel(targets(sm_90), launch_bounds(64))]
pub fn reads_then_publishes(data: &[u32], sums: &mut [u32], flag: &mut [u32]) {
    launch_dependents();
    let t = block_idx_x() * 64 + thread_idx_x();
    sums[t as usize] = data[t as usize] + 1;
    sync_threads();
    if thread_idx_x() == 0 {
        atomic_add(flag, 0u32, 1u32, Order::Release, Scope::Gpu);
    }
}

/// Thread 0 acquires the flag, then overwrites `data`.
#[kernel(targets(sm_90), launch_bounds(32))]
pub fn overwrites_after_the_flag(data: &mut [u32], flag: &mut [u32], blocks: u32) {
    if thread_idx_x() == 0 {
        while atomic_add(flag, 0u32, 0u32, Order::Acquire, Scope::Gpu) < blocks {}
        for k in 0..data.len() {
            data[k] = 7;
        }
    }
    grid_dependency_wait();
}

#[test]
fn a_write_over_what_the_kernel_before_read_still_needs_the_wait() {
    // What the kernel before read may have been read by its bulk copies,
    // which the emulator's shadow of that kernel does not hold: a flag
    // covers its writes only.
    let device = Device::emulator(Target::Sm90);
    let run = || -> Result<(), Error> {
        let mut data = device.upload(&(0..128u32).collect::<Vec<_>>())?;
        let mut sums = device.alloc_zeroed::<u32>(128)?;
        let mut flag = device.alloc_zeroed::<u32>(1)?;
        // SAFETY: two blocks of 64 threads, thread t reads data[t] and
        // writes sums[t]; one thread writes data; flag is one word.
        unsafe {
            reads_then_publishes::Kernel::launch(&device, LaunchConfig::linear(2, 64), &data, &mut sums, &mut flag)?;
            overwrites_after_the_flag::Kernel::launch(&device, LaunchConfig::linear(1, 32), &mut data, &mut flag, 2)?;
        }
        Ok(())
    };
    let e = failure(run());
    let text = e.to_string();
    let line = at("overwrites_after_the_flag", "data[k] = 7;");
    assert!(
        text.contains(&format!("at {line}, line")) && text.contains("call `grid_dependency_wait()` before this access"),
        "{text}"
    );
}
