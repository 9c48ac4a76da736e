//! A block that spins on a flag the other block of its cluster sets once
//! its own bulk copy has landed, then bulk-copies what that block stored:
//! on a GPU the first copy completes whatever the spinning block does, and
//! the emulator must not hold it back either; the second copy reads the
//! other block's stores only after the acquire that saw the flag. Shared
//! by the emulator tests (`tests/tests/cluster_copy.rs`) and the GPU test.

use nvfp4_dsl::Device;
use nvfp4_dsl::prelude::*;

/// `spin_on_flag`'s `mistake`: none.
#[device]
pub const NO_MISTAKE: u32 = 0;

/// `spin_on_flag`'s `mistake`: block 0 polls the flag with a relaxed load,
/// which orders nothing.
#[device]
pub const RELAXED_POLL: u32 = 1;

/// `spin_on_flag`'s `mistake`: block 1's threads store `y` and release the
/// flag with no `fence_proxy_async_global()` between.
#[device]
pub const NO_PROXY_FENCE: u32 = 2;

/// `spin_on_flag`'s `mistake`: block 1's threads call
/// `fence_proxy_async_global()` only after the flag's release.
#[device]
pub const FENCE_AFTER_RELEASE: u32 = 3;

/// In each cluster of two blocks of 64 threads, block 1 copies its
/// cluster's 64 values of `x` into shared memory by a bulk copy, waits for
/// it, stores them doubled to `y`, orders those stores before the async
/// proxy's reads (`fence_proxy_async_global`) and, after a barrier, sets
/// the cluster's flag with a release. Thread 0 of block 0 spins on the
/// flag (`atomic_load`, an acquire), then bulk-copies the cluster's 64
/// values of `y` into shared memory; every thread of block 0 waits for
/// that copy and writes its value plus one to `z`. `mistake` (one of the
/// constants above) breaks one step.
#[kernel(targets(sm_90))]
pub fn spin_on_flag(x: &[u32], y: &mut [u32], z: &mut [u32], flags: &mut [u32], mistake: u32) {
    let tile = shared_array::<u32, 64>();
    let bars = shared_array::<u64, 1>();
    let t = thread_idx_x();
    let cluster = block_idx_x() / 2;
    let i = (cluster * 64 + t) as usize;
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if cluster_cta_rank() == 1 {
        if t == 0 {
            mbarrier_arrive_expect_tx(bars, 0u32, 256);
            cp_async_bulk_global_to_shared(tile, 0u32, x, cluster * 64, 256, bars, 0u32);
        }
        mbarrier_wait_parity(bars, 0u32, 0);
        y[i] = tile[t] * 2;
        if mistake != NO_PROXY_FENCE && mistake != FENCE_AFTER_RELEASE {
            fence_proxy_async_global();
        }
        sync_threads();
        if t == 0 {
            let _ = atomic_add(flags, cluster, 1u32, Order::Release, Scope::Gpu);
        }
        if mistake == FENCE_AFTER_RELEASE {
            fence_proxy_async_global();
        }
    } else {
        if t == 0 {
            if mistake == RELAXED_POLL {
                while atomic_load(flags, cluster, Order::Relaxed, Scope::Gpu) == 0 {}
            } else {
                while atomic_load(flags, cluster, Order::Acquire, Scope::Gpu) == 0 {}
            }
            mbarrier_arrive_expect_tx(bars, 0u32, 256);
            cp_async_bulk_global_to_shared(tile, 0u32, y, cluster * 64, 256, bars, 0u32);
        }
        mbarrier_wait_parity(bars, 0u32, 0);
        z[i] = tile[t] + 1;
    }
}

/// Runs `spin_on_flag` over `x` (a multiple of 64 values) on `device`
/// with `mistake`: `z`, or the launch's error.
pub fn launch(device: &Device, x: &[u32], mistake: u32) -> Result<Vec<u32>, nvfp4_dsl::Error> {
    let dx = device.upload(x)?;
    let mut y = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let mut z = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let mut flags = device.upload(&vec![0u32; x.len() / 64])?;
    let config = LaunchConfig::linear(2 * (x.len() / 64) as u32, 64).with_cluster((2, 1, 1));
    // SAFETY: cluster c's blocks read x[64c..64c + 64] and write the same
    // part of y and z, and flags[c]; the emulator checks every access.
    unsafe { spin_on_flag::Kernel::launch(device, config, &dx, &mut y, &mut z, &mut flags, mistake)? };
    device.download(&z)
}

/// [`launch`] without the mistake, `z` compared with `2 x + 1` for every
/// element.
pub fn check(device: &Device, x: &[u32]) -> Result<(), String> {
    let z = launch(device, x, NO_MISTAKE).map_err(|e| e.to_string())?;
    let want = |i: usize| x[i].wrapping_mul(2).wrapping_add(1);
    match (0..x.len()).find(|&i| z[i] != want(i)) {
        None => Ok(()),
        Some(i) => Err(format!("z[{i}] = {}, want {}", z[i], want(i))),
    }
}
