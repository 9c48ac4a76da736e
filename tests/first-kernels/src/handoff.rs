//! A hand-off between the two blocks of a cluster through global memory:
//! block 1 sums its rows, stores the sums and raises a flag; block 0 spins
//! on the flag, bulk-copies those sums into its shared memory and adds its
//! own.

use nvfp4_dsl::prelude::*;

/// Columns of a tile (one per thread).
#[device]
pub const COLS: u32 = 64;

/// Cluster k of two blocks over rows `x[2k * rows ..][..2 rows]` of `COLS`
/// columns: block 1 writes its column sums to `partial[k * COLS..]` and
/// sets `flags[k]`; block 0 waits for the flag and writes its column sums
/// plus block 1's to `out[k * COLS..]`.
#[kernel(targets(sm_90), launch_bounds(COLS))]
pub fn handoff_column_sums(x: &[f32], partial: &mut [f32], out: &mut [f32], flags: &mut [u32], rows: u32) {
    let theirs = shared_array::<f32, 64>();
    let landed = shared_array::<u64, 1>();
    let c = thread_idx_x();
    let k = block_idx_x() / 2;
    let mut sum = 0.0f32;
    for r in 0..rows {
        sum += x[((block_idx_x() * rows + r) * COLS + c) as usize];
    }
    let at = (k * COLS + c) as usize;
    if cluster_cta_rank() == 1 {
        partial[at] = sum;
        // The bulk copy of block 0 reads these stores.
        fence_proxy_async_global();
        sync_threads();
        if c == 0 {
            let _ = atomic_add(flags, k, 1u32, Order::Release, Scope::Gpu);
        }
    } else {
        if c == 0 {
            mbarrier_init(landed, 0u32, 1);
            fence_mbarrier_init();
            while atomic_load(flags, k, Order::Acquire, Scope::Gpu) == 0 {}
            mbarrier_arrive_expect_tx(landed, 0u32, COLS * 4);
            cp_async_bulk_global_to_shared(theirs, 0u32, partial, k * COLS, COLS * 4, landed, 0u32);
        }
        sync_threads();
        mbarrier_wait_parity(landed, 0u32, 0);
        out[at] = sum + theirs[c];
    }
}

/// Random rows against the sums on the CPU (in the same order, so exact).
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (clusters, rows) = (3u32, 5u32);
    let cols = COLS as usize;
    let x: Vec<f32> = (0..(2 * clusters * rows) as usize * cols)
        .map(|_| rng.f32(4.0))
        .collect();
    let dx = device.upload(&x)?;
    let mut partial = device.upload(&vec![f32::NAN; clusters as usize * cols])?;
    let mut out = device.upload(&vec![f32::NAN; clusters as usize * cols])?;
    let mut flags = device.upload(&vec![0u32; clusters as usize])?;
    let config = LaunchConfig::linear(2 * clusters, COLS).with_cluster((2, 1, 1));
    // SAFETY: block b reads its rows of x; cluster k writes partial and out
    // at [k * COLS..][..COLS] and flags[k].
    unsafe { handoff_column_sums::Kernel::launch(device, config, &dx, &mut partial, &mut out, &mut flags, rows)? };
    let got = device.download(&out)?;
    let column = |b: usize, c: usize| (0..rows as usize).fold(0.0f32, |s, r| s + x[(b * rows as usize + r) * cols + c]);
    for k in 0..clusters as usize {
        for c in 0..cols {
            assert_eq!(
                got[k * cols + c],
                column(2 * k, c) + column(2 * k + 1, c),
                "cluster {k}, column {c}"
            );
        }
    }
    Ok(())
}
