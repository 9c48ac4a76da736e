//! The block-scaled NVFP4 GEMM kernel for Hopper (sm_90a): FP4 decoded
//! exactly to f16 in registers and shared memory, multiplied by the
//! warpgroup tensor cores (`wgmma`), accumulated in f32.
//!
//! Hopper has no FP4 tensor cores, so both operands are decoded to f16:
//! `e2m1 * e4m3` is exact in f16 (at most 6 significant bits), and the
//! products of two such values are exact in f32. Each e2m1 code is moved
//! into an f16 bit pattern that reads as its value times 2^-14 (sign to bit
//! 15, exponent and mantissa to bits 9..12; the subnormal 0.5 lands on an
//! f16 subnormal) and multiplied by its block's scale in one `mul.f16x2`,
//! exact as well; the result is scaled back by 2^28 in the epilogue.
//!
//! The tensor cores add a wgmma's products into f32 by truncating (their
//! internal sum is aligned to the largest term and rounded toward zero),
//! so a long chain of wgmmas into one accumulator drifts toward zero by up
//! to an ulp of the running sum per step; over K = 16384 that exceeds
//! rtol = atol = 1e-3 on inputs whose products cancel (cuBLAS's f16 GEMM
//! does). The kernel therefore runs every 4 K stages of 128 (512 K, 32
//! wgmmas) as a chain of their own into a scratch accumulator and adds the
//! chain's result into the f32 accumulator with a correctly rounded
//! `add.rn.f32` (the promotion DeepGEMM uses for FP8, there every 128 K):
//! a chain 32 times shorter than K = 16384 drifts about 32 times less.
//! With two m64 blocks per warpgroup (256-row tiles) two chains would not
//! fit in registers, so each block's chain is promoted every stage.
//!
//! The kernel computes `C^T = B x A^T` per tile: B (the `N` rows, the
//! weights of a linear layer) is the wgmma's A operand, decoded straight
//! into register fragments; A (the `M` rows, 128 tokens per tile) is the
//! wgmma's B operand, read from 128-byte-swizzled shared memory. A is
//! decoded once, before the GEMM, by [`gemm_sm90_decode_a`]: every tile of
//! B reads the same A, and decoding it in each block cost a quarter of the
//! block's time (docs/perf.md entries 6 and 7); each (128 rows, 128 K) tile of A
//! becomes a 32 KiB f16 image, exactly what the MMAs read from shared
//! memory, which the GEMM copies in with one bulk copy. B, the weights,
//! is read pre-arranged ([`super::prearrange`]): each thread's fragment
//! words of a stage contiguous, each K step's eight values placed so that
//! nine bit operations make the four fragment registers. A block of 256
//! consumer threads (two warpgroups) and a producer warpgroup computes
//! `128 * BLOCKS` rows of B x 128 rows of A over a range of K:
//! - the producer's first thread streams K in stages of 128 through a
//!   four-stage ring — A's image and B's pre-arranged chunks by bulk
//!   copies — each completing on the stage's `full` mbarrier, each slot
//!   refilled once all 256 consumers arrived on its `empty` mbarrier. B
//!   does not depend on the decode kernel (only A does), so where no kernel
//!   that may still run writes B the first four stages of B are requested
//!   before the kernel waits for the decode;
//! - each warpgroup owns `BLOCKS` m64 blocks of B rows. Per stage and
//!   block a thread loads its words and scales of the stage into registers
//!   (two 16-byte loads and one 4-byte load), converts its four scales
//!   once, then for each of the 8 K steps of 16 decodes its fragment and
//!   issues a `wgmma.m64n128k16`, then waits until at most that one and
//!   the one before are pending (`IN_FLIGHT`; one with two m64 blocks), so
//!   that decoding the next step's fragment overlaps two MMAs (docs/perf.md
//!   entry 14). A stage's slot (the MMAs read A's image from it) is
//!   released once the next stage's second wait shows its MMAs done, or
//!   at the end of the chain, where the thread waits for all and promotes
//!   the scratch accumulator. The two warpgroups share nothing but the ring,
//!   so neither waits for the other inside the K loop.
//!
//! K is split among `SPLIT` blocks (along grid x), each taking a
//! contiguous range of stages, so that the small-M shapes fill the
//! multiprocessors. Then
//! - `SPLIT = 1`: the block puts its f32 tile in shared memory and stores
//!   its tile of C from there;
//! - 128-row tiles, `SPLIT = 2` in a cluster: each block of the cluster
//!   owns half of the tile's rows of A (C's rows), which are half of every
//!   thread's accumulators; a thread leaves the other half in its block's
//!   shared memory and, after a cluster barrier, adds the same thread's
//!   half from the other block through distributed shared memory (32
//!   values a thread, no partial tile, no global traffic), then the block
//!   stores its rows of C through shared memory in 16-byte chunks;
//! - 128-row tiles, `SPLIT = 4` in clusters of two (where clusters of 4
//!   would not all run at once): each cluster sums its half of K as above
//!   and stores each thread's 32 sums to `partials[half]` in the thread's
//!   own order; the tile's second cluster to finish (an acquire-release
//!   counter per tile and share of rows, zeroed by the decode kernel) adds
//!   the other half's, the same bits whichever finishes second (f32
//!   addition commutes), and stores C, without a second kernel;
//! - 256-row tiles in clusters (of `SPLIT` blocks, or pairs of clusters of
//!   two for `SPLIT = 4`): every block puts its f32 tile in shared memory,
//!   and after a cluster barrier block `r` sums its share of the tile's
//!   rows over the cluster's blocks in rank order through distributed
//!   shared memory (a cluster must fit in one GPC: the H100 runs at most 30
//!   clusters of 4 at once, 120 of its 132 multiprocessors), then stores C
//!   (or, in pairs, as above through `partials[half]` in row order);
//! - otherwise: every block stores its f32 partial tile to
//!   `partials[rank]`, and [`gemm_sm90_reduce`], the next kernel in the
//!   stream, sums the partials in rank order into C (any number of blocks,
//!   at the cost of writing and reading the partials).
//!
//! Every way the sums run in a fixed order: the same bits on every run.
//!
//! [`gemm_nvfp4_sm90_stream`] (`stream.rs`) is the stream-K form of the
//! same main loop: more blocks than tiles, each tile's K stages shared by
//! its finisher and helpers, the partial sums added through global memory.
//!
//! K inside a 128-wide stage is permuted the same way for both operands
//! (a dot product does not depend on the order of K): a thread of the
//! fragment layout owns 32 consecutive values of each of its rows, and the
//! MMA's K step `s` column `c` reads value `32 t + 8 (s / 2) + j + 4 h`
//! (`t = c % 8 / 2`, `h = c % 2`, `j = 2 (s % 2) + c / 8`), which makes every
//! register of a fragment two nibbles of one 32-bit word.

use super::prearrange::{PREARRANGED_BLOCK_BYTES, PREARRANGED_DATA_BYTES, e2m1x8_prearranged};
use crate::decode::{e2m1_pair_scaled, e4m3_pair_splats};
use nvfp4_dsl::prelude::*;

// The decode kernel, the main loop and the epilogues in files of their own.
// A kernel fetches the functions and constants that its device functions
// use through its own module (README, "Device functions"): this module
// glob-imports the submodules' and each submodule glob-imports this one's.
mod decode_a;
mod epilogue;
mod mainloop;
mod stream;

pub use decode_a::gemm_sm90_decode_a;
pub use epilogue::gemm_sm90_reduce;
use epilogue::*;
use mainloop::*;
pub use stream::{STREAM_SHARED_BYTES, gemm_nvfp4_sm90_stream};

/// K per pipeline stage.
#[device]
pub const BK: usize = 128;

/// Consumer threads per block of the GEMM: two warpgroups.
#[device]
pub const THREADS: u32 = 256;

/// Threads per block of the GEMM: the consumers and a producer warpgroup
/// (whose registers go to the consumers: `setmaxnreg`).
#[device]
pub const BLOCK_THREADS: u32 = THREADS + 128;

/// Stages of the shared-memory ring.
#[device]
pub const STAGES: u32 = 4;

/// Bytes of A's decoded image per tile of 128 rows and K stage: f16, two
/// 128-byte-swizzled 64-wide halves of 16 KiB.
#[device]
pub const IMAGE_BYTES: u32 = 128 * BK as u32 * 2;

/// Bytes of an operand's raw FP4 tile of 128 rows per K stage (64 bytes a
/// row).
#[device]
pub const RAW_TILE_BYTES: u32 = 128 * BK as u32 / 2;

/// Bytes of the blocked e4m3 scales of 128 rows per K stage (one per 16
/// values: 512 bytes per 64 K).
#[device]
pub const SCALE_BYTES: u32 = 128 * BK as u32 / 16;

/// Bytes of an operand's raw stage per 128 rows: the FP4 tile, then its
/// scales.
#[device]
pub const RAW_BYTES: u32 = RAW_TILE_BYTES + SCALE_BYTES;

/// Bytes where the blocks of a cluster of two swap accumulator halves (one
/// m64 block per warpgroup): 8 chunks of 16 bytes per thread.
#[device]
const SWAP_BYTES: u32 = THREADS * 8 * 16;

/// Bytes of one stage of the ring: A's decoded image, B's `128 * blocks` x
/// 64 bytes and their scales.
const fn stage_bytes(blocks: u32) -> u32 {
    IMAGE_BYTES + RAW_BYTES * blocks
}

/// Dynamic shared memory per block: the stages (the images first, each
/// 1 KiB-aligned as the swizzle needs, then the raw B parts), and with one
/// m64 block per warpgroup the swap area past them.
pub const fn shared_bytes(blocks: u32) -> u32 {
    STAGES * stage_bytes(blocks) + if blocks == 1 { SWAP_BYTES } else { 0 }
}

/// Blocks of [`gemm_sm90_decode_a`] per image (its grid's z): each loads
/// the tile's raw stage and writes its share of the image, one 16-byte
/// chunk a thread. Where the GEMM before leaves few multiprocessors idle
/// (4 on the split of 4) most of the decode runs after that GEMM, and the
/// shorter the blocks the sooner it ends: eight measured 0.4 µs faster
/// than four on that shape and the same on the others, one or two, or
/// fewer blocks looping over the images, slower (docs/perf.md entries 12
/// and 19).
#[device]
pub const DECODE_PARTS: u32 = 8;

/// The 16-byte chunks of an image each thread of [`gemm_sm90_decode_a`]
/// writes.
#[device]
pub const DECODE_CHUNKS: usize = (IMAGE_BYTES / 16 / (THREADS * DECODE_PARTS)) as usize;

/// The rows of A a block of [`gemm_sm90_decode_a`] decodes, of one half
/// of the stage's K (its part is at most half an image: `DECODE_PARTS` is
/// at least 2), and so loads: the tensor map's boxes are 64 bytes x
/// `DECODE_ROWS` rows. Loading only them, not the tile's 128 rows (a third
/// of the bytes), measured 0.1-0.2 µs faster on shape 2 and the same on the
/// others (docs/perf.md entry 19).
#[device]
pub const DECODE_ROWS: u32 = 256 / DECODE_PARTS;

const _: () = assert!(DECODE_PARTS >= 2 && DECODE_PARTS <= 8 && 256 % DECODE_PARTS == 0);

/// Dynamic shared memory of [`gemm_sm90_decode_a`]: its rows of A's raw
/// stage (64 bytes a row, 64-byte swizzle), then the stage's scales.
pub const DECODE_SHARED_BYTES: u32 = DECODE_ROWS * 64 + SCALE_BYTES;

/// Zeroes `counters` (any length) from thread `first` of a grid of
/// `threads`, a word each and every `threads` on: what the kernel that
/// makes A's images does for the GEMM's tile counters.
#[device]
pub fn zero_counters(counters: &mut [u32], first: u32, threads: u32) {
    let mut zero = first;
    while (zero as usize) < counters.len() {
        counters[zero as usize] = 0;
        zero += threads;
    }
}

/// Where B's parts of the ring's stages start in a block's shared memory:
/// past the four images of A.
#[device]
pub const RING_B_BASE: u32 = STAGES * IMAGE_BYTES;

/// The GEMM block's mbarriers: `full[s]` (stage s landed), `empty[STAGES +
/// s]` (stage s consumed), and `SWAP_BAR`.
#[device]
pub const BARRIERS: usize = 2 * STAGES as usize + 1;

/// The mbarrier on which the other block of a cluster of two's half of the
/// accumulators lands (`swap_epilogue`).
#[device]
pub const SWAP_BAR: u32 = 2 * STAGES;

/// NVFP4 GEMM tile kernel (sm_90a): `BLOCKS` (1 or 2) m64 blocks of B rows
/// per consumer warpgroup, K split over `SPLIT` (1, 2, 4, 8) blocks.
/// `images`: A decoded by [`gemm_sm90_decode_a`], launched just before this
/// kernel; `weights`: B `[L*N rows][K]` pre-arranged with its scales
/// ([`super::prearrange`]); `c`:
/// `[L][M][N]`, each sum times `alpha` (an epilogue scale, 1 for none);
/// `clustered`: 0, 1 or 2 (below); `partials`: `[SPLIT][L * M][N]` f32,
/// each block's unscaled sums over its K range, written when `SPLIT > 1`
/// and `clustered` is 0 (then c is left to [`gemm_sm90_reduce`]), and
/// `2 * L * M * N` f32 when it is 2 (each cluster's sums over its half of K:
/// in row order with 256-row tiles, in each thread's order with 128-row
/// tiles); `counters`: 2 per tile (`N / (128 *
/// BLOCKS) * L * M / 128` tiles), zero at the start, used when `clustered`
/// is 2. `clustered` 1: launched in clusters of (SPLIT, 1, 1), reducing
/// through distributed shared memory (`SPLIT` 2 or 4); 2: `SPLIT` = 4 in
/// clusters of (2, 1, 1), the halves of K added by the tile's second
/// cluster to finish. Grid: (SPLIT, N / (128 * BLOCKS), L * M / 128),
/// [`BLOCK_THREADS`] threads.
///
/// `b_ready`: no kernel that may still run writes B; then the first
/// stages of B are requested before the kernel waits for the previous one
/// in the stream (which [`gemm_sm90_decode_a`] lets launch at once). It
/// lets the next kernel start only after its own wait, so that the next
/// decode kernel may write the images this kernel does not read before
/// that kernel's wait.
#[kernel(
    targets(sm_90a),
    specialize(BLOCKS = [1, 2], SPLIT = [1, 2, 4, 8]),
    launch_bounds(BLOCK_THREADS, 1)
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_nvfp4_sm90<const BLOCKS: u32, const SPLIT: u32>(
    images: &[u32],
    weights: &[u32],
    c: &mut [f16],
    partials: &mut [f32],
    counters: &mut [u32],
    clustered: u32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    b_ready: bool,
) {
    // Dynamic shared memory: the ring's stages, A's images at s *
    // IMAGE_BYTES, then B's chunks at RING_B_BASE; see [`shared_bytes`].
    let b_rows = 128 * BLOCKS;

    let smem = dynamic_shared::<u8>(0);
    let words = dynamic_shared::<u32x4>(0);
    let scale_words = dynamic_shared::<u32>(0);
    let partial = dynamic_shared::<f32>(0);
    let staged_c = dynamic_shared::<u16>(0);
    // mbarriers: full[s] (stage s landed), empty[STAGES + s] (stage s
    // consumed), the swap's.
    let bars = shared_array::<u64, BARRIERS>();
    // The tile's first rows of A (and C) and of B, for the producer and the
    // epilogue (kept in shared memory rather than in registers through the
    // main loop).
    let rows0 = shared_array::<u32, 2>();
    // The old value of this block's tile counter (`clustered` = 2).
    let arrival = shared_array::<u32, 1>();

    let tid = thread_idx_x();
    let warp = tid / 32;
    let rank = block_idx_x();
    let n0 = block_idx_y() * b_rows;
    let m_tiles = m / 128;
    let batch = block_idx_z() / m_tiles;
    let m0 = block_idx_z() % m_tiles * 128;
    let k_stages = k / BK as u32;
    let first = rank * k_stages / SPLIT;
    let stages = (rank + 1) * k_stages / SPLIT - first;
    // K split over clusters of two with 128-row tiles (split 2 in one
    // cluster, split 4 in pairs of them): the blocks of a cluster swap
    // halves of their accumulators instead of whole partial tiles.
    let swap = BLOCKS == 1 && (SPLIT == 2 && clustered == 1 || SPLIT == 4 && clustered == 2);

    if tid == 0 {
        init_ring(bars, swap);
        rows0[0u32] = batch * m + m0;
        rows0[1u32] = batch * n + n0;
    }
    sync_threads();
    // Where no kernel that may still run writes B (`b_ready`), the
    // producer requests the first stages' B before the wait.
    let ahead = if b_ready { stages.min(STAGES) } else { 0 };
    if tid == THREADS {
        for j in 0..ahead {
            request_b(smem, bars, weights, rows0[1u32] / 128, first + j, j, k_stages, BLOCKS);
        }
    }
    // (The producer's warp meets again before its `.aligned` setmaxnreg.)
    sync_warp();
    // Every thread waits for the previous kernel before it lets the next
    // one launch: the next decode kernel writes A's other images before
    // its own wait, which is sound only once the GEMM that read them last
    // (the one before this one, which that decode kernel waited for) is
    // complete.
    grid_dependency_wait();
    launch_dependents();
    // Where the blocks of a cluster swap, each pushes its half into the
    // other's shared memory once the other has started (its swap
    // mbarrier initialised), which the first phase of the cluster barrier
    // says: every thread arrives at it here. The other reductions' first
    // phase is their consumers' partial tiles staged; the producer
    // warpgroup, which writes none, arrives at it here too.
    if SPLIT > 1 && clustered != 0 && (swap || warp >= THREADS / 32) {
        cluster_arrive_relaxed();
    }

    if warp >= THREADS / 32 {
        // The producer warpgroup keeps 40 registers a thread and gives the
        // rest to the consumers; its first thread is the producer.
        setmaxnreg_dec(40);
        if tid == THREADS {
            produce(
                smem,
                bars,
                images,
                weights,
                rows0[0u32] / 128,
                rows0[1u32] / 128,
                first,
                stages,
                ahead,
                k_stages,
                BLOCKS,
                0,
            );
        }
        sync_warp();
        // The consumers' epilogues sum a split K through two phases of the
        // cluster barrier (one where they swap: the swap's mbarrier says
        // when the other block's half landed), which every thread of the
        // cluster takes part in (this warpgroup arrived at the first at
        // the start).
        if SPLIT > 1 && clustered != 0 {
            cluster_wait();
            if !swap {
                cluster_arrive_relaxed();
                cluster_wait();
            }
        }
    } else {
        setmaxnreg_inc(232);
        let ct = tid;
        // The f32 accumulators of the thread's m64 blocks.
        let mut acc0 = [0.0f32; 64];
        let mut acc1 = [0.0f32; 64];
        consume::<BLOCKS>(smem, words, scale_words, bars, &mut acc0, &mut acc1, stages, 0, ct);
        if !swap {
            stage_partial_tile::<BLOCKS>(partial, &acc0, &acc1, ct);
        }
        if swap {
            swap_epilogue::<SPLIT>(
                words, staged_c, bars, rows0, arrival, &acc0, c, partials, counters, ct, n, alpha,
            );
        } else if BLOCKS == 2 && SPLIT == 4 && clustered == 2 {
            pairs_epilogue(words, rows0, arrival, c, partials, counters, ct, n, alpha);
        } else if SPLIT > 1 && clustered != 0 && (BLOCKS == 2 || SPLIT != 2) {
            // (128-row tiles in clusters of 2 swap halves above.)
            cluster_epilogue::<BLOCKS, SPLIT>(words, rows0, c, ct, n, alpha);
        } else {
            tile_epilogue::<BLOCKS, SPLIT>(words, rows0, c, partials, ct, n, alpha);
        }
    }
}
