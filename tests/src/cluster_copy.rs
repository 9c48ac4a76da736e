//! A block's shared tile copied into the other block of its cluster of two
//! by one bulk copy (distributed shared memory), shared by the emulator
//! tests (`tests/tests/cluster_copy.rs`) and the GPU test.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, Error};

/// Each block of a cluster of two puts `3 x + rank` of its 64 values of `x`
/// in a shared tile, copies the tile into the other block's `inbox` with
/// one bulk copy that completes on that block's mbarrier, waits on its own
/// and writes what it received to `y`. The mbarrier's init is published by
/// `fence_mbarrier_init` and the relaxed cluster arrive after it, as the
/// PTX ISA's example does. `mistake`: 0 none, 1 no wait before the inbox is
/// read, 2 no cluster barrier before the blocks exit (a block may leave
/// while its copy still reads its tile).
#[kernel(targets(sm_90))]
pub fn swap_tiles(x: &[u32], y: &mut [u32], mistake: u32) {
    let tile = shared_array::<u32, 64>();
    let inbox = shared_array::<u32, 64>();
    let bar = shared_array::<u64, 1>();
    let t = thread_idx_x();
    let rank = cluster_cta_rank();
    let i = (block_idx_x() * 64 + t) as usize;
    if t == 0 {
        mbarrier_init(bar, 0u32, 1);
        fence_mbarrier_init();
        mbarrier_arrive_expect_tx(bar, 0u32, 256);
    }
    tile[t] = x[i] * 3 + rank;
    // Each writer orders its store before the async proxy's read, then the
    // barrier orders them before the copy.
    fence_proxy_async_shared();
    sync_threads();
    // The other block has started, its mbarrier initialised.
    cluster_arrive_relaxed();
    cluster_wait();
    if t == 0 {
        cp_async_bulk_shared_to_cluster(inbox, 0u32, tile, 0u32, 256, bar, 0u32, 1 - rank);
    }
    if mistake != 1 {
        mbarrier_wait_parity(bar, 0u32, 0);
    }
    y[i] = inbox[t];
    if mistake != 2 {
        // The other block has received this block's tile: the copy that
        // reads it is done.
        cluster_sync();
    }
}

/// Runs `swap_tiles` over `x` (a multiple of 128 values) on `device`: `y`
/// as it left it.
pub fn launch(device: &Device, x: &[u32], mistake: u32) -> Result<Vec<u32>, Error> {
    let dx = device.upload(x)?;
    let mut y = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let blocks = (x.len() / 64) as u32;
    let config = LaunchConfig::linear(blocks, 64).with_cluster((2, 1, 1));
    // SAFETY: block b reads x[64b..64b + 64] and writes the same part of
    // y; the emulator checks every access.
    unsafe { swap_tiles::Kernel::launch(device, config, &dx, &mut y, mistake)? };
    device.download(&y)
}

/// [`launch`] without a mistake on `x = 0..n` (scrambled), compared with
/// the host: block b's part of `y` is `3 x + rank` of the other block of
/// its cluster, every element.
pub fn check(device: &Device, n: usize) -> Result<(), String> {
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 7).collect();
    let y = launch(device, &x, 0).map_err(|e| e.to_string())?;
    for (i, got) in y.iter().enumerate() {
        let (block, t) = (i / 64, i % 64);
        let other = block ^ 1;
        let want = x[other * 64 + t] * 3 + (other % 2) as u32;
        if *got != want {
            return Err(format!("element {i}: {got}, want {want}"));
        }
    }
    Ok(())
}
