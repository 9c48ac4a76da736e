//! Tiles exchanged between the two blocks of a cluster by bulk copies into
//! each other's shared memory (distributed shared memory), twice through
//! one inbox, the receiver telling the sender it is free again by an arrive
//! on the sender's mbarrier; shared by the emulator tests
//! (`tests/tests/cluster_copy.rs`) and the GPU test.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, Error};

/// Each block of a cluster of two puts `3 x + rank` of its 64 values of `x`
/// in a shared tile and copies the tile into the other block's `inbox` with
/// one bulk copy that completes on that block's `full` mbarrier; it waits
/// on its own, writes what it received to `y`, and arrives on the other
/// block's `free` mbarrier (its 64 threads: the inbox is read). Once its
/// own `free` barrier completes (the other block read the first tile, so
/// this block's copy is done and the tile may be rewritten), it sends `x +
/// 7 + rank` the same way, and writes what it received to `z`. The
/// mbarriers' inits are published by `fence_mbarrier_init` and the relaxed
/// cluster arrive after it, as the PTX ISA's example does. `mistake`: 0
/// none, 1 no wait before the inbox is read, 2 no cluster barrier before
/// the blocks exit (a block may leave while its copy still reads its
/// tile), 3 no wait on `free` before the second tile.
#[kernel(targets(sm_90))]
pub fn swap_tiles(x: &[u32], y: &mut [u32], z: &mut [u32], mistake: u32) {
    let tile = shared_array::<u32, 64>();
    let inbox = shared_array::<u32, 64>();
    // full (the inbox landed), free (the other block read its inbox).
    let bars = shared_array::<u64, 2>();
    let t = thread_idx_x();
    let rank = cluster_cta_rank();
    let other = 1 - rank;
    let i = (block_idx_x() * 64 + t) as usize;
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        mbarrier_init(bars, 1u32, 64);
        fence_mbarrier_init();
        mbarrier_arrive_expect_tx(bars, 0u32, 256);
    }
    tile[t] = x[i] * 3 + rank;
    // Each writer orders its store before the async proxy's read, then the
    // barrier orders them before the copy.
    fence_proxy_async_shared();
    sync_threads();
    // The other block has started, its mbarriers initialised.
    cluster_arrive_relaxed();
    cluster_wait();
    if t == 0 {
        cp_async_bulk_shared_to_cluster(inbox, 0u32, tile, 0u32, 256, bars, 0u32, other);
    }
    if mistake != 1 {
        mbarrier_wait_parity(bars, 0u32, 0);
    }
    y[i] = inbox[t];
    if t == 0 {
        // The second tile's bytes, before this block says its inbox is free.
        mbarrier_arrive_expect_tx(bars, 0u32, 256);
    }
    mbarrier_arrive_cluster(bars, 1u32, other);
    if mistake != 3 {
        mbarrier_wait_parity(bars, 1u32, 0);
    }
    tile[t] = x[i] + 7 + rank;
    fence_proxy_async_shared();
    sync_threads();
    if t == 0 {
        cp_async_bulk_shared_to_cluster(inbox, 0u32, tile, 0u32, 256, bars, 0u32, other);
    }
    mbarrier_wait_parity(bars, 0u32, 1);
    z[i] = inbox[t];
    if mistake != 2 {
        // The other block has received this block's second tile: the copy
        // that reads it is done.
        cluster_sync();
    }
}

/// Runs `swap_tiles` over `x` (a multiple of 128 values) on `device`: `y`
/// and `z` as it left them.
pub fn launch(device: &Device, x: &[u32], mistake: u32) -> Result<(Vec<u32>, Vec<u32>), Error> {
    let dx = device.upload(x)?;
    let mut y = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let mut z = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let blocks = (x.len() / 64) as u32;
    let config = LaunchConfig::linear(blocks, 64).with_cluster((2, 1, 1));
    // SAFETY: block b reads x[64b..64b + 64] and writes the same parts of
    // y and z; the emulator checks every access.
    unsafe { swap_tiles::Kernel::launch(device, config, &dx, &mut y, &mut z, mistake)? };
    Ok((device.download(&y)?, device.download(&z)?))
}

/// [`launch`] without a mistake on `x = 0..n` (scrambled), compared with
/// the host: block b's parts of `y` and `z` are `3 x + rank` and `x + 7 +
/// rank` of the other block of its cluster, every element.
pub fn check(device: &Device, n: usize) -> Result<(), String> {
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 7).collect();
    let (y, z) = launch(device, &x, 0).map_err(|e| e.to_string())?;
    for i in 0..n {
        let (block, t) = (i / 64, i % 64);
        let other = block ^ 1;
        let (v, rank) = (x[other * 64 + t], (other % 2) as u32);
        let want = (v * 3 + rank, v + 7 + rank);
        if (y[i], z[i]) != want {
            return Err(format!("element {i}: y {} z {}, want {want:?}", y[i], z[i]));
        }
    }
    Ok(())
}
