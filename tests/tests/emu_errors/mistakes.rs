//! Mistakes new users of the DSL made, and what the emulator says about
//! them: a bulk copy past the view it was launched on.

use super::*;

/// Block `b` copies tile `b` of `x` (64 u32, 256 bytes) into shared
/// memory with one bulk copy, then writes it to `out`.
#[kernel(targets(sm_90))]
pub fn copies_tiles(x: &[u32], out: &mut [u32]) {
    let bars = shared_array::<u64, 1>();
    let tile = shared_array::<u32, 64>();
    let t = thread_idx_x();
    let b = block_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if t == 0 {
        mbarrier_arrive_expect_tx(bars, 0u32, 256);
        cp_async_bulk_global_to_shared(tile, 0u32, x, b * 64, 256, bars, 0u32);
    }
    mbarrier_wait_parity(bars, 0u32, 0u32);
    out[(b * 64 + t) as usize] = tile[t as usize];
}

#[test]
fn a_bulk_copy_past_the_view_it_was_launched_on_is_an_error_naming_the_parameter() {
    let device = Device::emulator(Target::Sm90);
    let data: Vec<u32> = (0..128).collect();
    let buffer = device.upload(&data).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(128).expect("alloc");
    // Two tiles of a 96-element view: the second reads elements 64..128,
    // which the buffer holds but the view does not.
    let x = buffer.slice(0..96).expect("a view");
    // SAFETY: two blocks of 64 threads, each writes out[b * 64 + t]; the emulator checks the rest.
    let e = failure(unsafe { copies_tiles::Kernel::launch(&device, LaunchConfig::linear(2, 64), x, &mut out) });
    let text = e.to_string();
    assert_eq!((e.block(), e.thread()), (Some((1, 0, 0)), Some((0, 0, 0))), "{text}");
    let copy = at(
        "copies_tiles",
        "cp_async_bulk_global_to_shared(tile, 0u32, x, b * 64, 256, bars, 0u32);",
    );
    assert!(text.contains(&format!("at {copy}, line")), "{text}");
    assert!(
        e.message().contains("cp.async.bulk source read of 256 bytes at")
            && e.message().contains("is out of bounds of the view passed as `x`")
            && e.message()
                .contains("384 bytes), which its address was computed from: bytes 256..512 of it, past its end"),
        "{text}"
    );
    // The whole buffer holds both tiles.
    let x = buffer.slice(0..128).expect("a view");
    // SAFETY: as above.
    unsafe { copies_tiles::Kernel::launch(&device, LaunchConfig::linear(2, 64), x, &mut out) }.expect("in bounds");
    assert_eq!(device.download(&out).expect("download"), data);
}
