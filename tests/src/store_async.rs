//! Values pushed into the other block of a cluster by asynchronous stores
//! (`store_async_cluster`, PTX `st.async`) that complete on that block's
//! mbarrier, as the sm_90a GEMM's blocks swap halves of their sums; shared
//! by the emulator tests (`tests/tests/cluster_copy.rs`) and the GPU test.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, Error};

/// `push_pairs`'s `mistake`: none.
#[device]
pub const NO_MISTAKE: u32 = 0;

/// `push_pairs`'s `mistake`: the inbox read with no wait on its mbarrier.
#[device]
pub const NO_WAIT: u32 = 1;

/// `push_pairs`'s `mistake`: the stores issued with no cluster barrier
/// before them (the other block may not have started).
#[device]
pub const NO_CLUSTER_BARRIER: u32 = 2;

/// In each cluster of two blocks of 64 threads, thread `t` of each block
/// pushes four words made from its value of `x` (`x`, `x + 1`, `2 x`, `x ^
/// rank`) into word `t` of the other block's inbox by one asynchronous
/// store that completes on the other block's mbarrier, which expects the
/// 64 threads' 1024 bytes; it waits on its own and writes the four words
/// it received to `y[4 i..4 i + 4]`. No cluster barrier after the stores:
/// a block may exit before its stores land, the receiver's wait is what
/// says they did. `mistake` (one of the constants above) breaks one step.
#[kernel(targets(sm_90))]
pub fn push_pairs(x: &[u32], y: &mut [u32], mistake: u32) {
    let inbox = shared_array::<u32x4, 64>();
    let bars = shared_array::<u64, 1>();
    let t = thread_idx_x();
    let rank = cluster_cta_rank();
    let i = (block_idx_x() * 64 + t) as usize;
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
        mbarrier_arrive_expect_tx(bars, 0u32, 64 * 16);
    }
    sync_threads();
    if mistake != NO_CLUSTER_BARRIER {
        // The other block has started, its mbarrier initialised.
        cluster_arrive_relaxed();
        cluster_wait();
    }
    let v = x[i];
    store_async_cluster(inbox, t, u32x4::new(v, v + 1, v * 2, v ^ rank), bars, 0u32, 1 - rank);
    if mistake != NO_WAIT {
        mbarrier_wait_parity(bars, 0u32, 0);
    }
    let got = inbox[t];
    y[4 * i] = got.x;
    y[4 * i + 1] = got.y;
    y[4 * i + 2] = got.z;
    y[4 * i + 3] = got.w;
}

/// Runs `push_pairs` over `x` (a multiple of 128 values) on `device` with
/// `mistake`: `y`.
pub fn launch(device: &Device, x: &[u32], mistake: u32) -> Result<Vec<u32>, Error> {
    let dx = device.upload(x)?;
    let mut y = device.upload(&vec![0xDEAD_BEEFu32; 4 * x.len()])?;
    let config = LaunchConfig::linear((x.len() / 64) as u32, 64).with_cluster((2, 1, 1));
    // SAFETY: block b reads x[64b..64b + 64] and writes y[256b..256b +
    // 256]; the emulator checks every access.
    unsafe { push_pairs::Kernel::launch(device, config, &dx, &mut y, mistake)? };
    device.download(&y)
}

/// [`launch`] without a mistake on `n` scrambled values, compared with the
/// host for every element: block b's words are those the other block of
/// its cluster made.
pub fn check(device: &Device, n: usize) -> Result<(), String> {
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 3).collect();
    let y = launch(device, &x, NO_MISTAKE).map_err(|e| e.to_string())?;
    for i in 0..n {
        let (block, t) = (i / 64, i % 64);
        let other = block ^ 1;
        let v = x[other * 64 + t];
        let want = [v, v.wrapping_add(1), v.wrapping_mul(2), v ^ (other % 2) as u32];
        if y[4 * i..4 * i + 4] != want {
            return Err(format!("element {i}: {:?}, want {want:?}", &y[4 * i..4 * i + 4]));
        }
    }
    Ok(())
}
