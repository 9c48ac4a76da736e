//! The stream-K form of the sm_90a GEMM: a grid of persistent blocks (one
//! per multiprocessor), each an equal share of all tiles' K stages.
//!
//! With 128-row tiles the benchmark shapes have 56, 32 and 56 tiles for
//! the H100's 132 multiprocessors: a K split of 2 runs 112 blocks of
//! half a tile each and leaves 20 idle. Here the `U = tiles * k_stages`
//! units (a tile's K stage of 128) are cut into `G` (the grid) contiguous
//! ranges, block `b` taking units `b U / G .. (b + 1) U / G` in tile order,
//! so every block streams the same number of stages (to one) through one
//! ring. A block's range falls into segments, one per tile it touches:
//! whole tiles, whose C it stores, and at most two partial ones (the end
//! of a tile first, the start of the next last). A partial segment's f32
//! sums go to `partials` (each thread its 64 values, in its own order), and
//! one warp of the producer warpgroup, the releaser, counts the block in
//! at the tile's counter after a named barrier with the consumers (an
//! acquire-release atomic, which releases the stores of all 256; the
//! consumers only arrive at the barrier, `bar.arrive`, and never wait for
//! it mid-stream). The tile's last block counted
//! in adds the tile's partial sums in block order (the same bits whoever is
//! last: its own sums, in registers for its last segment, take their place
//! in that order) and stores C, at the end of its range. No block waits for
//! another, so any grid is correct; one block per multiprocessor is what
//! it is for. On the H100 it is slower than the split tilings on every
//! shape measured (docs/perf.md entry 18).

use super::*;

/// Dynamic shared memory of [`gemm_nvfp4_sm90_stream`]: the ring of
/// 128-row tiles, then a tile of C staged as f16 (rows of `C_PITCH`
/// halves), where the ring's next stages may already be landing.
pub const STREAM_SHARED_BYTES: u32 = SWAP_BASE + 128 * C_PITCH * 2;

/// The consumers and the releasing warp (the producer warpgroup's second):
/// the threads of the named barriers between them.
#[device]
pub const WITH_RELEASER: u32 = THREADS + 32;

/// Named barriers between the consumers and the releaser: the first
/// segment's partial sums stored, the last segment's stored, and the
/// releaser's verdicts (which tiles this block sums) written.
#[device]
pub const FIRST_STORED: u32 = 2;
#[device]
pub const LAST_STORED: u32 = 3;
#[device]
pub const VERDICTS: u32 = 4;

/// Where block `block`'s range of the `units` units starts, on a grid of
/// `grid` blocks.
#[device]
pub fn range_start(block: u32, units: u32, grid: u32) -> u32 {
    block * units / grid
}

/// The block whose range holds unit `unit`.
#[device]
pub fn block_of(unit: u32, units: u32, grid: u32) -> u32 {
    ((unit + 1) * grid - 1) / units
}

/// The first and last block whose range holds stages of tile `tile`.
#[device]
pub fn tile_blocks(tile: u32, units: u32, grid: u32, k_stages: u32) -> [u32; 2] {
    [
        block_of(tile * k_stages, units, grid),
        block_of(tile * k_stages + k_stages - 1, units, grid),
    ]
}

/// Where the partial sums of block `block`'s segment of tile `tile` are:
/// the block's first segment's at slot `2 block`, its last's at `2 block +
/// 1` (its only other partial one), 16384 f32 a slot.
#[device]
pub fn partial_slot(block: u32, tile: u32, units: u32, grid: u32, k_stages: u32) -> u32 {
    let first_tile = range_start(block, units, grid) / k_stages;
    2 * block + if tile == first_tile { 0 } else { 1 }
}

/// The segment of the range `.. u1` that starts at unit `u`: `[tile, first
/// stage, stages]`.
#[device]
pub fn segment(u: u32, u1: u32, k_stages: u32) -> [u32; 3] {
    let first = u % k_stages;
    [u / k_stages, first, (k_stages - first).min(u1 - u)]
}

/// B's first 128-row tile of tile `tile` (A's tile `tile / n_tiles`, in
/// batch `tile / n_tiles / (m / 128)`).
#[device]
pub fn b_tile_of(tile: u32, n_tiles: u32, m: u32) -> u32 {
    tile / n_tiles / (m / 128) * n_tiles + tile % n_tiles
}

/// NVFP4 GEMM, stream-K (sm_90a): 128-row tiles of B (one m64 block per
/// consumer warpgroup) x 128 rows of A, the `tiles * k / 128` K stages of
/// all tiles cut evenly over the grid's blocks (module docs). `images`,
/// `weights`, `c`, `m`, `n`, `k`, `alpha` and `b_ready` as for
/// [`gemm_nvfp4_sm90`] (`m` rows of A per batch), `batches` (`L`);
/// `partials`: `2 * grid * 16384` f32, each block's partial sums of its
/// first and last segment; `counters`: one per tile (`L * M / 128 * N /
/// 128`), zero at the start (the kernel that makes A's images zeroes them).
/// Tile `t` is A's tile `t / (N / 128)` and B's `t % (N / 128)` in its
/// batch. Grid: (G, 1, 1) with `G` at most the units and `G * units <
/// 2^32`, [`BLOCK_THREADS`] threads.
#[kernel(targets(sm_90a), launch_bounds(BLOCK_THREADS, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_nvfp4_sm90_stream(
    images: &[u32],
    weights: &[u32],
    c: &mut [f16],
    partials: &mut [f32],
    counters: &mut [u32],
    batches: u32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    b_ready: bool,
) {
    let smem = dynamic_shared::<u8>(0);
    let words = dynamic_shared::<u32x4>(0);
    let scale_words = dynamic_shared::<u32>(0);
    let staged_c = dynamic_shared::<u16>(0);
    let bars = shared_array::<u64, BARRIERS>();
    // Whether this block sums its first (0) and last (1) segment's tile:
    // the releaser's verdicts.
    let sums_tile = shared_array::<u32, 2>();

    let tid = thread_idx_x();
    let warp = tid / 32;
    let n_tiles = n / 128;
    let k_stages = k / BK as u32;
    let units = batches * (m / 128) * n_tiles * k_stages;
    let grid = grid_dim_x();
    let block = block_idx_x();
    let u0 = range_start(block, units, grid);
    let u1 = range_start(block + 1, units, grid);

    if tid == 0 {
        init_ring(bars, false);
        sums_tile[0u32] = 0;
        sums_tile[1u32] = 0;
    }
    sync_threads();
    // B of the first stages before the wait, as in the split kernel.
    let first = segment(u0, u1, k_stages);
    let ahead = if b_ready { first[2].min(STAGES) } else { 0 };
    if tid == THREADS {
        for j in 0..ahead {
            let b_tile = b_tile_of(first[0], n_tiles, m);
            request_b(smem, bars, weights, b_tile, first[1] + j, j, k_stages, 1);
        }
    }
    sync_warp();
    grid_dependency_wait();
    launch_dependents();

    if warp >= THREADS / 32 {
        setmaxnreg_dec(40);
        if tid == THREADS {
            stream_produce(smem, bars, images, weights, u0, u1, ahead, n_tiles, m, k_stages);
        }
        if warp == THREADS / 32 + 1 {
            release(sums_tile, counters, u0, u1, units, grid, k_stages);
        }
    } else {
        setmaxnreg_inc(232);
        stream_consume(
            smem,
            words,
            scale_words,
            staged_c,
            bars,
            sums_tile,
            c,
            partials,
            u0,
            u1,
            units,
            n,
            k,
            alpha,
            tid,
        );
    }
}

/// The producer of a stream-K block: streams the K stages of its range
/// `u0 .. u1`, tile after tile, through the ring (B of the first `ahead`
/// requested before the wait).
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn stream_produce(
    smem: &SharedSlice<u8>,
    bars: &SharedArray<u64, BARRIERS>,
    images: &[u32],
    weights: &[u32],
    u0: u32,
    u1: u32,
    ahead: u32,
    n_tiles: u32,
    m: u32,
    k_stages: u32,
) {
    let mut u = u0;
    while u < u1 {
        let seg = segment(u, u1, k_stages);
        let early = if u == u0 { ahead } else { 0 };
        let b_tile = b_tile_of(seg[0], n_tiles, m);
        produce(
            smem,
            bars,
            images,
            weights,
            seg[0] / n_tiles,
            b_tile,
            seg[1],
            seg[2],
            early,
            k_stages,
            1,
            u - u0,
        );
        u += seg[2];
    }
}

/// The releasing warp of a stream-K block: after the consumers stored a
/// partial segment's sums (a named barrier with them), its first lane
/// counts the block in at the tile's counter (acquire-release at gpu scope:
/// the barrier puts every consumer's stores before it) and writes the
/// verdict, whether the block is the tile's last, to `sums_tile`; the
/// verdicts reach the consumers by the last barrier.
#[device]
pub(super) fn release(
    sums_tile: &mut SharedArray<u32, 2>,
    counters: &mut [u32],
    u0: u32,
    u1: u32,
    units: u32,
    grid: u32,
    k_stages: u32,
) {
    let mut u = u0;
    while u < u1 {
        let seg = segment(u, u1, k_stages);
        let last = u + seg[2] == u1;
        if seg[2] < k_stages {
            let tile = seg[0];
            if last {
                named_barrier_sync(LAST_STORED, WITH_RELEASER);
            } else {
                named_barrier_sync(FIRST_STORED, WITH_RELEASER);
            }
            if lane_id() == 0 {
                let range = tile_blocks(tile, units, grid, k_stages);
                let blocks = range[1] - range[0] + 1;
                let before = atomic_add(counters, tile, 1, Order::AcqRel, Scope::Gpu);
                sums_tile[if last { 1u32 } else { 0u32 }] = if before + 1 == blocks { 1 } else { 0 };
            }
        }
        u += seg[2];
    }
    named_barrier_arrive(VERDICTS, WITH_RELEASER);
}

/// The consumer thread `ct` of a stream-K block: multiplies each segment
/// of its range `u0 .. u1` into `acc`, stores a whole tile's C or a
/// partial segment's sums, and at the end sums the tiles the releaser's
/// verdicts give it.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn stream_consume(
    smem: &SharedSlice<u8>,
    words: &mut SharedSlice<u32x4>,
    scale_words: &SharedSlice<u32>,
    staged_c: &mut SharedSlice<u16>,
    bars: &SharedArray<u64, BARRIERS>,
    sums_tile: &SharedArray<u32, 2>,
    c: &mut [f16],
    partials: &mut [f32],
    u0: u32,
    u1: u32,
    units: u32,
    n: u32,
    k: u32,
    alpha: f32,
    ct: u32,
) {
    let k_stages = k / BK as u32;
    let grid = grid_dim_x();
    let block = block_idx_x();
    let mut acc = [0.0f32; 64];
    // (The second m64 block's accumulators: none with 128-row tiles.)
    let mut unused = [0.0f32; 64];
    let mut u = u0;
    while u < u1 {
        let seg = segment(u, u1, k_stages);
        let last = u + seg[2] == u1;
        acc = [0.0f32; 64];
        consume::<1>(
            smem,
            words,
            scale_words,
            bars,
            &mut acc,
            &mut unused,
            seg[2],
            u - u0,
            ct,
        );
        if seg[2] == k_stages {
            store_c_tile(words, staged_c, &acc, c, seg[0], n, alpha, ct);
        } else {
            store_partial(partials, &acc, partial_slot(block, seg[0], units, grid, k_stages), ct);
            if last {
                named_barrier_arrive(LAST_STORED, WITH_RELEASER);
            } else {
                named_barrier_arrive(FIRST_STORED, WITH_RELEASER);
            }
        }
        u += seg[2];
    }
    named_barrier_sync(VERDICTS, WITH_RELEASER);
    // The first segment's tile, when partial and not also the last (its
    // sums are in `partials` only by now), then the last segment's (its
    // sums still in `acc`).
    let first = segment(u0, u1, k_stages);
    if first[2] < k_stages && u0 + first[2] < u1 && sums_tile[0u32] == 1 {
        finish_tile(
            words, staged_c, c, partials, &acc, first[0], false, units, n, k, alpha, ct,
        );
    }
    let last = segment(u0.max((u1 - 1) / k_stages * k_stages), u1, k_stages);
    if last[2] < k_stages && sums_tile[1u32] == 1 {
        finish_tile(
            words, staged_c, c, partials, &acc, last[0], true, units, n, k, alpha, ct,
        );
    }
}

/// Consumer thread `ct` stores its 64 partial sums to slot `slot` of
/// `partials`: its 16-byte chunk `j` at f32 `slot * 16384 + 1024 j + 4 ct`
/// (a warp's stores coalesced).
#[device]
pub(super) fn store_partial(partials: &mut [f32], acc: &[f32; 64], slot: u32, ct: u32) {
    store_chunks::<64>(partials, acc, slot * 16384 + 4 * ct);
}

/// The last block counted in at tile `tile`: adds the partial sums of the
/// tile's blocks in block order (its own from `acc` when `own_in_acc`) and
/// stores C.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn finish_tile(
    words: &mut SharedSlice<u32x4>,
    staged_c: &mut SharedSlice<u16>,
    c: &mut [f16],
    partials: &mut [f32],
    acc: &[f32; 64],
    tile: u32,
    own_in_acc: bool,
    units: u32,
    n: u32,
    k: u32,
    alpha: f32,
    ct: u32,
) {
    let k_stages = k / BK as u32;
    let grid = grid_dim_x();
    let mut sums = [0.0f32; 64];
    let range = tile_blocks(tile, units, grid, k_stages);
    for b in range[0]..range[1] + 1 {
        if own_in_acc && b == block_idx_x() {
            #[unroll]
            for e in 0..64usize {
                sums[e] += acc[e];
            }
        } else {
            add_chunks::<64>(
                &mut sums,
                partials,
                partial_slot(b, tile, units, grid, k_stages) * 16384 + 4 * ct,
            );
        }
    }
    store_c_tile(words, staged_c, &sums, c, tile, n, alpha, ct);
}

/// Consumer thread `ct`'s sums of tile `tile` (its accumulator layout),
/// times `alpha`, into C: staged as f16 past the ring (the ring may hold
/// the next segment's stages), then stored in 16-byte chunks.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn store_c_tile(
    words: &mut SharedSlice<u32x4>,
    staged_c: &mut SharedSlice<u16>,
    sums: &[f32; 64],
    c: &mut [f16],
    tile: u32,
    n: u32,
    alpha: f32,
    ct: u32,
) {
    let wg = ct / 128;
    let w = ct / 32 % 4;
    let g = ct % 32 / 4;
    let t = ct % 4;
    // The consumers are done reading the tile staged before.
    named_barrier_sync(1, THREADS);
    #[unroll]
    for x in 0..32usize {
        // Sums 2x and 2x + 1: rows r and r + 1, one column.
        let i = 2 * x as u32;
        let row = 8 * (i / 4) + 2 * t;
        let col = 64 * wg + 16 * w + g + 8 * (i % 4 / 2);
        let pair = f16x2::from_f32s(sums[2 * x] * UNSCALE * alpha, sums[2 * x + 1] * UNSCALE * alpha).to_bits();
        staged_c[SWAP_BASE / 2 + row * C_PITCH + col] = (pair & 0xFFFF) as u16;
        staged_c[SWAP_BASE / 2 + (row + 1) * C_PITCH + col] = (pair >> 16) as u16;
    }
    named_barrier_sync(1, THREADS);
    let n_tiles = n / 128;
    #[unroll]
    for it in 0..8u32 {
        let chunk = ct + THREADS * it;
        let row = chunk / 16;
        let v = words[SWAP_BASE / 16 + row * (C_PITCH / 8) + chunk % 16];
        let out = ((tile / n_tiles * 128 + row) * n + tile % n_tiles * 128 + chunk % 16 * 8) as usize;
        store_v4(c, out, v, Cache::Default);
    }
}
