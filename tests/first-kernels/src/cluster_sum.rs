//! Pairwise sums across the two blocks of a cluster: each block sums its
//! rows into a shared tile, bulk-copies the tile into the other block's
//! shared memory, and both write the sum of the two tiles; or each thread
//! pushes its sum into the other block by an asynchronous store.

use nvfp4_dsl::prelude::*;

/// Columns of a tile (one per thread).
#[device]
pub const COLS: u32 = 64;

/// Block b of `x` (rows of `COLS`, `rows` of them per block): each thread
/// sums its column over the block's rows; `out[b * COLS + c]` is that sum
/// plus the other block of the cluster's.
#[kernel(targets(sm_90), launch_bounds(COLS))]
pub fn pair_column_sums(x: &[f32], out: &mut [f32], rows: u32) {
    let mine = shared_array::<f32, 64>();
    let theirs = shared_array::<f32, 64>();
    let landed = shared_array::<u64, 1>();
    let c = thread_idx_x();
    let rank = cluster_cta_rank();
    if c == 0 {
        mbarrier_init(landed, 0u32, 1);
        fence_mbarrier_init();
        mbarrier_arrive_expect_tx(landed, 0u32, COLS * 4);
    }
    let mut sum = 0.0f32;
    for r in 0..rows {
        sum += x[((block_idx_x() * rows + r) * COLS + c) as usize];
    }
    mine[c] = sum;
    fence_proxy_async_shared();
    sync_threads();
    // The other block has started and initialised its barrier.
    cluster_sync();
    if c == 0 {
        cp_async_bulk_shared_to_cluster(theirs, 0u32, mine, 0u32, COLS * 4, landed, 0u32, 1 - rank);
    }
    mbarrier_wait_parity(landed, 0u32, 0);
    out[(block_idx_x() * COLS + c) as usize] = mine[c] + theirs[c];
    // Stay until the other block has our tile.
    cluster_sync();
}

/// `pair_column_sums` with each thread's sum stored straight into the
/// other block's `theirs[c]` (a `u32x4`, the sum's bits in `x`) by
/// `store_async_cluster`, completing on that block's barrier: no tile to
/// stage, and no cluster barrier at the end (the receiver's wait covers
/// the stores).
#[kernel(targets(sm_90), launch_bounds(COLS))]
pub fn pair_column_sums_pushed(x: &[f32], out: &mut [f32], rows: u32) {
    let theirs = shared_array::<u32x4, 64>();
    let landed = shared_array::<u64, 1>();
    let c = thread_idx_x();
    let rank = cluster_cta_rank();
    if c == 0 {
        mbarrier_init(landed, 0u32, 1);
        fence_mbarrier_init();
        mbarrier_arrive_expect_tx(landed, 0u32, COLS * 16);
    }
    let mut sum = 0.0f32;
    for r in 0..rows {
        sum += x[((block_idx_x() * rows + r) * COLS + c) as usize];
    }
    // The other block has started and initialised its barrier.
    cluster_sync();
    store_async_cluster(theirs, c, u32x4::new(sum.to_bits(), 0, 0, 0), landed, 0u32, 1 - rank);
    mbarrier_wait_parity(landed, 0u32, 0);
    out[(block_idx_x() * COLS + c) as usize] = sum + f32::from_bits(theirs[c].x);
}

/// Random rows against the sums on the CPU (in the same order, so exact),
/// through both kernels.
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (blocks, rows) = (6u32, 5u32);
    let cols = COLS as usize;
    let x: Vec<f32> = (0..(blocks * rows) as usize * cols).map(|_| rng.f32(4.0)).collect();
    let dx = device.upload(&x)?;
    let column = |b: usize, c: usize| (0..rows as usize).fold(0.0f32, |s, r| s + x[(b * rows as usize + r) * cols + c]);
    for pushed in [false, true] {
        let mut dout = device.upload(&vec![f32::NAN; blocks as usize * cols])?;
        let config = LaunchConfig::linear(blocks, COLS).with_cluster((2, 1, 1));
        // SAFETY: block b reads its rows of x and writes out[b * COLS..][..COLS].
        unsafe {
            if pushed {
                pair_column_sums_pushed::Kernel::launch(device, config, &dx, &mut dout, rows)?;
            } else {
                pair_column_sums::Kernel::launch(device, config, &dx, &mut dout, rows)?;
            }
        }
        let got = device.download(&dout)?;
        for b in 0..blocks as usize {
            for c in 0..cols {
                let want = column(b, c) + column(b ^ 1, c);
                assert_eq!(got[b * cols + c], want, "block {b}, column {c}, pushed {pushed}");
            }
        }
    }
    Ok(())
}
