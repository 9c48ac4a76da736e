//! The GEMM block's epilogues: its f32 sums reduced over a split K (in
//! shared memory, through distributed shared memory or global memory) and
//! stored to C, and the reduction kernel for the other splits.

use super::*;

/// The f32 partial tile in shared memory, f32 [128 rows of A][rows of B]
/// with rows of `PITCH` values (the padding spreads a warp's stores over
/// all banks).
#[device]
pub const PITCH: u32 = 260;

/// 2^28: the decoded operands are their values times 2^-14 each.
#[device]
pub const UNSCALE: f32 = 268435456.0;

/// Where the blocks of a cluster of two swap accumulator halves (128-row
/// tiles): `SWAP_BYTES` past the stages of the ring.
#[device]
pub const SWAP_BASE: u32 = STAGES * (IMAGE_BYTES + RAW_BYTES);

/// The pitch, in halves, of C's rows staged in shared memory.
#[device]
pub const C_PITCH: u32 = 136;

/// Consumer thread `ct` puts its accumulators, unscaled, into the partial
/// tile in shared memory (over the ring, which both warpgroups' MMAs are
/// done with after the barrier).
#[device]
pub(super) fn stage_partial_tile<const BLOCKS: u32>(
    partial: &mut SharedSlice<f32>,
    acc0: &[f32; 64],
    acc1: &[f32; 64],
    ct: u32,
) {
    let wg = ct / 128;
    let w = ct / 32 % 4;
    let g = ct % 32 / 4;
    let t = ct % 4;
    // The place of the thread's first value (A row 2t, B row
    // 64 BLOCKS wg + 16 w + g); every other one's is a constant away.
    let first = 2 * t * PITCH + 64 * BLOCKS * wg + 16 * w + g;
    // Both warpgroups' MMAs are done with the ring, so the partial
    // tile may overwrite it.
    named_barrier_sync(1, THREADS);
    #[unroll]
    for x in 0..64 * BLOCKS as usize {
        let blk = x / 64;
        let i = x % 64;
        let b_rows = 64 * blk as u32 + 8 * (i as u32 % 4 / 2);
        let a_rows = 8 * (i as u32 / 4) + i as u32 % 2;
        let v = if blk == 0 { acc0[i] } else { acc1[i] };
        partial[first + (a_rows * PITCH + b_rows)] = v * UNSCALE;
    }
}

/// The hand-off between a tile's two clusters of pairs (`SPLIT = 4`):
/// every consumer thread's stores to `partials` so far are released by
/// the block's increment of `counters[counter]`, whose old value says
/// whether the tile's other cluster has released its own. True for the
/// block that arrives second, which has then acquired the other
/// cluster's partial sums.
#[device]
pub(super) fn second_to_arrive(arrival: &mut SharedArray<u32, 1>, counters: &mut [u32], counter: u32, ct: u32) -> bool {
    fence_acq_rel_gpu();
    named_barrier_sync(1, THREADS);
    if ct == 0 {
        arrival[0u32] = atomic_add(counters, counter, 1, Order::AcqRel, Scope::Gpu);
    }
    named_barrier_sync(1, THREADS);
    let second = arrival[0u32] == 1;
    if second {
        fence_acq_rel_gpu();
    }
    second
}

/// The epilogue of 128-row tiles with K split over a cluster of two (and,
/// `SPLIT = 4`, over pairs of such clusters): the blocks swap halves of
/// their accumulators through distributed shared memory, then store C.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn swap_epilogue<const SPLIT: u32>(
    words: &mut SharedSlice<u32x4>,
    staged_c: &mut SharedSlice<u16>,
    bars: &SharedArray<u64, BARRIERS>,
    rows0: &SharedArray<u32, 2>,
    arrival: &mut SharedArray<u32, 1>,
    acc0: &[f32; 64],
    c: &mut [f16],
    partials: &mut [f32],
    counters: &mut [u32],
    ct: u32,
    n: u32,
    alpha: f32,
) {
    let rank = block_idx_x();
    let wg = ct / 128;
    let w = ct / 32 % 4;
    let g = ct % 32 / 4;
    let t = ct % 4;
    // Block `cr` of the cluster sums C's A rows 64 cr .. 64 cr + 64,
    // accumulators 32 cr .. 32 cr + 32 of every thread (A row 8 (i /
    // 4) + 2 t + i % 2). Each thread pushes the other 32 into the other
    // block's `SWAP_BASE` (past the ring: the other block's warpgroups
    // may still be reading theirs), chunk j at 16-byte word j * 256 +
    // thread, by asynchronous stores that complete on the other block's
    // `SWAP_BAR`; once its own has seen the other block's 32 KiB land, it
    // adds the same thread's chunks pushed by the other block (p0 + p1 in
    // either block: f32 addition commutes). A push costs no round trip,
    // where reading the other block's half would wait for one per chunk,
    // and the mbarrier no cluster barrier (docs/perf.md entry 25).
    let cr = rank % 2;
    let mut kept = [0.0f32; 32];
    // Both blocks have started, their mbarriers initialised (the kernel's
    // first cluster arrive).
    cluster_wait();
    if ct == 0 {
        mbarrier_arrive_expect_tx(bars, SWAP_BAR, SWAP_BYTES);
    }
    #[unroll]
    for j in 0..8usize {
        let mut given = [0u32; 4];
        #[unroll]
        for e in 0..4usize {
            let (lo, hi) = (acc0[4 * j + e], acc0[32 + 4 * j + e]);
            kept[4 * j + e] = if cr == 0 { lo } else { hi };
            given[e] = if cr == 0 { hi.to_bits() } else { lo.to_bits() };
        }
        store_async_cluster(
            words,
            SWAP_BASE / 16 + j as u32 * THREADS + ct,
            u32x4::new(given[0], given[1], given[2], given[3]),
            bars,
            SWAP_BAR,
            1 - cr,
        );
    }
    mbarrier_wait_parity(bars, SWAP_BAR, 0);
    let mut sums = [0.0f32; 32];
    #[unroll]
    for j in 0..8usize {
        let other = words[SWAP_BASE / 16 + j as u32 * THREADS + ct];
        let v = [other.x, other.y, other.z, other.w];
        #[unroll]
        for e in 0..4usize {
            sums[4 * j + e] = kept[4 * j + e] + f32::from_bits(v[e]);
        }
    }
    let mut stores_c = true;
    if SPLIT == 4 {
        // Pairs of clusters: each keeps its sum over its half of K in
        // registers and stores it to `partials[half]`, thread by thread
        // (chunk j of thread ct of block cr of the tile at 16-byte word
        // ((half * tiles + tile) * 2 + cr) * 2048 + j * 256 + ct); the
        // tile's second cluster to finish adds the other half's (the
        // same bits whichever finishes second).
        let half = rank / 2;
        let tile = block_idx_z() * grid_dim_y() + block_idx_y();
        let tiles = grid_dim_y() * grid_dim_z();
        let mine = ((half * tiles + tile) * 2 + cr) * 8192 + 4 * ct;
        let theirs = (((1 - half) * tiles + tile) * 2 + cr) * 8192 + 4 * ct;
        store_chunks::<32>(partials, &sums, mine);
        stores_c = second_to_arrive(arrival, counters, 2 * tile + cr, ct);
        if stores_c {
            add_chunks::<32>(&mut sums, partials, theirs);
        }
    }
    if stores_c {
        // C's 64 rows through the ring as f16, rows of C_PITCH halves (the
        // padding spreads a warp's stores over the banks), then out in
        // 16-byte chunks; the ring is idle once both warpgroups' MMAs are
        // done, which only a barrier of the 256 says (the swap's mbarrier
        // says the other block's half landed, nothing of this block).
        named_barrier_sync(1, THREADS);
        #[unroll]
        for x in 0..16usize {
            // Sums 2x and 2x + 1: rows r and r + 1, one column.
            let i = 2 * x as u32;
            let row = 8 * (i / 4) + 2 * t;
            let col = 64 * wg + 16 * w + g + 8 * (i % 4 / 2);
            let pair = f16x2::from_f32s(sums[2 * x] * UNSCALE * alpha, sums[2 * x + 1] * UNSCALE * alpha).to_bits();
            staged_c[row * C_PITCH + col] = (pair & 0xFFFF) as u16;
            staged_c[(row + 1) * C_PITCH + col] = (pair >> 16) as u16;
        }
        named_barrier_sync(1, THREADS);
        #[unroll]
        for it in 0..4u32 {
            let chunk = ct + THREADS * it;
            let row = chunk / 16;
            let v = words[row * (C_PITCH / 8) + chunk % 16];
            let out = ((rows0[0u32] + 64 * cr + row) * n + block_idx_y() * 128 + chunk % 16 * 8) as usize;
            store_v4(c, out, v, Cache::Default);
        }
    }
}

/// Stores a consumer thread's `N` f32 partial sums in 16-byte chunks, chunk
/// `j` at f32 `at + 1024 j` (with `at` the thread's own 4 f32 of a row of
/// 1024, a warp's stores coalesce).
#[device]
pub(super) fn store_chunks<const N: usize>(partials: &mut [f32], values: &[f32; N], at: u32) {
    #[unroll]
    for j in 0..N / 4 {
        let v = u32x4::new(
            values[4 * j].to_bits(),
            values[4 * j + 1].to_bits(),
            values[4 * j + 2].to_bits(),
            values[4 * j + 3].to_bits(),
        );
        store_v4(partials, (at + 1024 * j as u32) as usize, v, Cache::Global);
    }
}

/// Adds to `sums` the `N` f32 that [`store_chunks`] stored at `at`.
#[device]
pub(super) fn add_chunks<const N: usize>(sums: &mut [f32; N], partials: &[f32], at: u32) {
    #[unroll]
    for j in 0..N / 4 {
        let v = load_v4(partials, (at + 1024 * j as u32) as usize, Cache::Global);
        sums[4 * j] += f32::from_bits(v.x);
        sums[4 * j + 1] += f32::from_bits(v.y);
        sums[4 * j + 2] += f32::from_bits(v.z);
        sums[4 * j + 3] += f32::from_bits(v.w);
    }
}

/// The sum, in rank order from 0, of the eight f32 at 16-byte words `at`
/// and `at + 1` of the shared memory of the cluster's blocks `0..BLOCKS`.
#[device]
pub(super) fn cluster_sum8<const BLOCKS: u32>(words: &SharedSlice<u32x4>, at: u32) -> [f32; 8] {
    let mut sum = [0.0f32; 8];
    #[unroll]
    for src in 0..BLOCKS {
        let lo = load_cluster(words, at, src);
        let hi = load_cluster(words, at + 1, src);
        let v = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w];
        #[unroll]
        for e in 0..8 {
            sum[e] += f32::from_bits(v[e]);
        }
    }
    sum
}

/// The epilogue of 256-row tiles with `SPLIT = 4` in pairs of clusters of
/// two.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn pairs_epilogue(
    words: &SharedSlice<u32x4>,
    rows0: &SharedArray<u32, 2>,
    arrival: &mut SharedArray<u32, 1>,
    c: &mut [f16],
    partials: &mut [f32],
    counters: &mut [u32],
    ct: u32,
    n: u32,
    alpha: f32,
) {
    const BLOCKS: u32 = 2;
    let rank = block_idx_x();
    let b_rows = 128 * BLOCKS;
    cluster_sync();
    // Clusters of two: block `cr` of the cluster sums A rows 64 cr ..
    // 64 cr + 64 of the tile over its cluster (0 + p0 + p1) into
    // partials[half], keeping them; the tile's second cluster to
    // finish adds the other half's (the same bits whichever finishes
    // second: f32 addition commutes) into C.
    let cr = rank % 2;
    let half = rank / 2;
    let items_per_row = 16 * BLOCKS;
    let mut own = [0.0f32; 64];
    #[unroll]
    for it in 0..4 * BLOCKS {
        let item = ct + THREADS * it;
        let a_row = cr * 64 + item / items_per_row;
        let b_row = item % items_per_row * 8;
        let at = (a_row * PITCH + b_row) / 4;
        let sum = cluster_sum8::<2>(words, at);
        #[unroll]
        for e in 0..8 {
            own[8 * it as usize + e] = sum[e];
        }
        let out = ((half * grid_dim_z() * 128 + rows0[0u32] + a_row) * n + block_idx_y() * b_rows + b_row) as usize;
        store_v4(
            partials,
            out,
            u32x4::new(sum[0].to_bits(), sum[1].to_bits(), sum[2].to_bits(), sum[3].to_bits()),
            Cache::Global,
        );
        store_v4(
            partials,
            out + 4,
            u32x4::new(sum[4].to_bits(), sum[5].to_bits(), sum[6].to_bits(), sum[7].to_bits()),
            Cache::Global,
        );
    }
    let tile = block_idx_z() * grid_dim_y() + block_idx_y();
    if second_to_arrive(arrival, counters, 2 * tile + cr, ct) {
        #[unroll]
        for it in 0..4 * BLOCKS {
            let item = ct + THREADS * it;
            let a_row = cr * 64 + item / items_per_row;
            let b_row = item % items_per_row * 8;
            let out = ((rows0[0u32] + a_row) * n + block_idx_y() * b_rows + b_row) as usize;
            let other = out + ((1 - half) * grid_dim_z() * 128 * n) as usize;
            let lo = load_v4(partials, other, Cache::Global);
            let hi = load_v4(partials, other + 4, Cache::Global);
            let v = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w];
            let mut sum = [0.0f32; 8];
            #[unroll]
            for e in 0..8 {
                sum[e] = own[8 * it as usize + e] + f32::from_bits(v[e]);
            }
            store_v4(c, out, scaled_f16x8(sum, alpha), Cache::Default);
        }
    }
    // The other block read this one's partial tile until here (the
    // loads are complete: their values are stored).
    cluster_arrive_relaxed();
    cluster_wait();
}

/// The epilogue of a K split over one cluster (other than 128-row tiles in
/// clusters of two): block `rank` sums its share of the tile's rows over
/// the cluster's partial tiles through distributed shared memory.
#[device]
pub(super) fn cluster_epilogue<const BLOCKS: u32, const SPLIT: u32>(
    words: &SharedSlice<u32x4>,
    rows0: &SharedArray<u32, 2>,
    c: &mut [f16],
    ct: u32,
    n: u32,
    alpha: f32,
) {
    let rank = block_idx_x();
    let b_rows = 128 * BLOCKS;
    // (128-row tiles in clusters of 2 swap halves above.)
    cluster_sync();
    // Block `rank` sums A rows rank * 128 / SPLIT .. (rank + 1) *
    // 128 / SPLIT of the tile over the cluster in rank order, 8 B
    // rows per item, items spread over the 256 threads (the loads of
    // one item from all blocks are in flight together).
    let items_per_row = 16 * BLOCKS;
    #[unroll]
    for it in 0..8 * BLOCKS / SPLIT {
        let item = ct + THREADS * it;
        let a_row = rank * (128 / SPLIT) + item / items_per_row;
        let b_row = item % items_per_row * 8;
        let at = (a_row * PITCH + b_row) / 4;
        let sum = cluster_sum8::<SPLIT>(words, at);
        let out = ((rows0[0u32] + a_row) * n + block_idx_y() * b_rows + b_row) as usize;
        store_v4(c, out, scaled_f16x8(sum, alpha), Cache::Default);
    }
    // The other blocks read this one's partial tile until here (the
    // loads are complete: their values are stored).
    cluster_arrive_relaxed();
    cluster_wait();
}

/// The epilogue without a cluster: the block stores its tile of C, or its
/// f32 partial sums for [`gemm_sm90_reduce`], from shared memory.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn tile_epilogue<const BLOCKS: u32, const SPLIT: u32>(
    words: &SharedSlice<u32x4>,
    rows0: &SharedArray<u32, 2>,
    c: &mut [f16],
    partials: &mut [f32],
    ct: u32,
    n: u32,
    alpha: f32,
) {
    let rank = block_idx_x();
    let b_rows = 128 * BLOCKS;
    named_barrier_sync(1, THREADS);
    // The tile from shared memory, 8 B rows per item, items spread over
    // the 256 threads: f16 C, or the f32 partial sums.
    let items_per_row = 16 * BLOCKS;
    #[unroll]
    for it in 0..8 * BLOCKS {
        let item = ct + THREADS * it;
        let a_row = item / items_per_row;
        let b_row = item % items_per_row * 8;
        let at = (a_row * PITCH + b_row) / 4;
        let lo = words[at];
        let hi = words[at + 1];
        let row = rows0[0u32] + a_row;
        let col = block_idx_y() * b_rows + b_row;
        if SPLIT == 1 {
            let sums = [
                f32::from_bits(lo.x),
                f32::from_bits(lo.y),
                f32::from_bits(lo.z),
                f32::from_bits(lo.w),
                f32::from_bits(hi.x),
                f32::from_bits(hi.y),
                f32::from_bits(hi.z),
                f32::from_bits(hi.w),
            ];
            store_v4(c, (row * n + col) as usize, scaled_f16x8(sums, alpha), Cache::Default);
        } else {
            let out = ((rank * grid_dim_z() * 128 + row) * n + col) as usize;
            store_v4(partials, out, lo, Cache::Global);
            store_v4(partials, out + 4, hi, Cache::Global);
        }
    }
}

/// Eight sums times `alpha`, each rounded to f16, packed in pairs: 16 bytes
/// of C.
#[device]
pub(super) fn scaled_f16x8(sums: [f32; 8], alpha: f32) -> u32x4 {
    let mut h = [0u32; 4];
    #[unroll]
    for e in 0..4 {
        h[e] = f16x2::from_f32s(sums[2 * e] * alpha, sums[2 * e + 1] * alpha).to_bits();
    }
    u32x4::new(h[0], h[1], h[2], h[3])
}

/// Sums the `SPLIT` f32 partial results of [`gemm_nvfp4_sm90`] in rank
/// order (the same bits on every run), times `alpha`, into f16 C:
/// `c[i] = f16(alpha * (0 + partials[0][i] + .. + partials[SPLIT - 1][i]))`
/// for the `8 * items` values of C, each thread 8 of them. Waits for the
/// GEMM before its first load (it may launch while the GEMM runs).
#[kernel(targets(sm_90a), specialize(SPLIT = [2, 4, 8]))]
pub fn gemm_sm90_reduce<const SPLIT: u32>(partials: &[f32], c: &mut [f16], items: u32, alpha: f32) {
    grid_dependency_wait();
    launch_dependents();
    let item = block_idx_x() * block_dim_x() + thread_idx_x();
    if item < items {
        let mut sum = [0.0f32; 8];
        #[unroll]
        for src in 0..SPLIT {
            let at = ((src * items + item) * 8) as usize;
            let lo = load_v4(partials, at, Cache::Streaming);
            let hi = load_v4(partials, at + 4, Cache::Streaming);
            let v = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w];
            #[unroll]
            for e in 0..8 {
                sum[e] += f32::from_bits(v[e]);
            }
        }
        store_v4(c, (item * 8) as usize, scaled_f16x8(sum, alpha), Cache::Default);
    }
}
