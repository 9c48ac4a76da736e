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
//!   does not depend on the kernels before (only A does, through the decode
//!   kernel, which waits for them before it lets this one launch), so the
//!   first four stages of B are requested before the kernel waits for the
//!   decode;
//! - each warpgroup owns `BLOCKS` m64 blocks of B rows. Per stage and
//!   block a thread loads its words and scales of the stage into registers
//!   (two 16-byte loads and one 4-byte load), converts its four scales
//!   once, then for each of the 8 K steps of 16 decodes its fragment and
//!   issues a `wgmma.m64n128k16`, then waits until at most that one is
//!   pending. A stage's slot (the MMAs read A's image from it) is
//!   released once the next stage's first wait shows its MMAs done, or at
//!   the end of the chain, where the thread waits for all and promotes the
//!   scratch accumulator. The two warpgroups share nothing but the ring,
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
//! K inside a 128-wide stage is permuted the same way for both operands
//! (a dot product does not depend on the order of K): a thread of the
//! fragment layout owns 32 consecutive values of each of its rows, and the
//! MMA's K step `s` column `c` reads value `32 t + 8 (s / 2) + j + 4 h`
//! (`t = c % 8 / 2`, `h = c % 2`, `j = 2 (s % 2) + c / 8`), which makes every
//! register of a fragment two nibbles of one 32-bit word.

use super::prearrange::{PREARRANGED_BLOCK_BYTES, PREARRANGED_DATA_BYTES, e2m1x8_prearranged};
use crate::decode::{e2m1_pair_scaled, e4m3_pair_splats};
use nvfp4_dsl::prelude::*;

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

/// Dynamic shared memory of [`gemm_sm90_decode_a`]: A's raw stage (128 x
/// 64 bytes, 64-byte swizzle) and its scales.
pub const DECODE_SHARED_BYTES: u32 = RAW_BYTES;

/// Blocks of [`gemm_sm90_decode_a`] per image (its grid's z): each loads
/// the tile's raw stage and writes its share of the image. Four measured
/// faster than eight (fewer loads of the same stage) and as fast as two
/// graph-timed (docs/perf.md entry 12).
#[device]
pub const DECODE_PARTS: u32 = 4;

/// Decodes A once for [`gemm_nvfp4_sm90`]: the blocks (kt, tile, part)
/// turn rows `128 tile ..` and K stage `kt` of A into the exact image the
/// GEMM's MMAs read from shared memory — f16 values times 2^-14, K
/// permuted as the module docs say, two 128-byte-swizzled halves — at
/// `images[(tile * K / 128 + kt) * 8192 ..]` (32 KiB), each of the
/// [`DECODE_PARTS`] parts its share. It also zeroes `counters` (the GEMM's tile
/// counters, any length). `map_a`: tensor map over A `[L*M rows][K/2
/// bytes]`, boxes of 64 bytes x 128 rows, 64-byte swizzle; `sfa` its
/// blocked scales. Grid: (K / 128, L * M / 128, [`DECODE_PARTS`]), 256
/// threads.
///
/// It waits for the previous kernel in the stream (which may have written
/// A) before it lets the GEMM after it launch: the GEMM reads B before its
/// own wait, which is sound only once every kernel before this one is
/// complete.
#[kernel(targets(sm_90a), launch_bounds(THREADS))]
pub fn gemm_sm90_decode_a(map_a: TensorMap, sfa: &[E4m3], images: &mut [u32], counters: &mut [u32], k: u32) {
    let smem = dynamic_shared::<u8>(0);
    let words = dynamic_shared::<u32>(0);
    let bars = shared_array::<u64, 1>();
    grid_dependency_wait();
    launch_dependents();
    let tid = thread_idx_x();
    let kt = block_idx_x();
    let tile = block_idx_y();
    // The GEMM's tile counters start at zero (it uses them after this
    // kernel is complete).
    let blocks = grid_dim_x() * grid_dim_y() * grid_dim_z();
    zero_counters(
        counters,
        ((block_idx_z() * grid_dim_y() + tile) * grid_dim_x() + kt) * THREADS + tid,
        blocks * THREADS,
    );
    if tid == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if tid == 0 {
        mbarrier_arrive_expect_tx(bars, 0u32, RAW_BYTES);
        cp_async_bulk_tensor_2d_global_to_shared(smem, 0u32, map_a, (kt * 64) as i32, (tile * 128) as i32, bars, 0u32);
        // Blocked scales: 512 bytes per (128 rows, 64 K).
        cp_async_bulk_global_to_shared(
            smem,
            RAW_TILE_BYTES,
            sfa,
            (tile * (k / 64) + 2 * kt) * 512,
            SCALE_BYTES,
            bars,
            0u32,
        );
    }
    mbarrier_wait_parity(bars, 0u32, 0u32);
    let image = (tile * (k / BK as u32) + kt) * (IMAGE_BYTES / 4);
    // Each thread writes `per_thread` 16-byte chunks of the image, a warp
    // 512 consecutive bytes at a time: chunk q, half `ah` (64 K), row `r`,
    // stored at column q % 8, which holds logical column (the decode job)
    // c (128-byte swizzle).
    let per_thread = IMAGE_BYTES / 16 / (THREADS * DECODE_PARTS);
    for p in 0..per_thread {
        let q = (block_idx_z() * per_thread + p) * THREADS + tid;
        let ah = q / 1024;
        let r = q % 1024 / 8;
        let c = q % 8 ^ r % 8;
        // Row r's raw K words 2 ah + c / 4 of each 16-byte chunk (64-byte
        // swizzle: chunk ch of row r sits at chunk ch ^ (r / 2 % 4)), and its
        // scales of groups 4 h + ah and 4 h + 2 + ah (bytes ah, 2 + ah of word
        // h).
        let sel = if ah == 0 { 0x2020u32 } else { 0x3131u32 };
        let mut out = [0u32; 4];
        #[unroll]
        for h in 0..2u32 {
            let sw = words[(RAW_TILE_BYTES + 512 * h + r % 32 * 16 + r / 32 * 4) / 4];
            let splats = e4m3_pair_splats(sw, sel);
            #[unroll]
            for e in 0..2u32 {
                let ch = 2 * h + e;
                let word = words[(r * 64 + 16 * (ch ^ (r / 2 % 4)) + 8 * ah + 4 * (c / 4)) / 4];
                out[ch as usize] = hmul2(e2m1_pair_scaled(word, c % 4), splats[e as usize]).to_bits();
            }
        }
        store_v4(
            images,
            (image + q * 4) as usize,
            u32x4::new(out[0], out[1], out[2], out[3]),
            Cache::Default,
        );
    }
}

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
/// s]` (stage s consumed).
#[device]
pub const BARRIERS: usize = 2 * STAGES as usize;

/// The producer of a GEMM block: streams its `stages` K stages (from
/// `first`) through the four-slot ring — A's images of row tile `a_tile`
/// and B's pre-arranged chunks of 128-row tiles `b_tile ..` (`blocks` of
/// them) by bulk copies — each completing on the stage's full barrier, each
/// slot refilled once the consumers released the stage before in it. B of
/// the first stages goes before the wait for the previous kernel (B does
/// not depend on it), A's images after it.
#[device]
#[allow(clippy::too_many_arguments)]
fn produce(
    smem: &SharedSlice<u8>,
    bars: &SharedArray<u64, BARRIERS>,
    images: &[u32],
    weights: &[u32],
    a_tile: u32,
    b_tile: u32,
    first: u32,
    stages: u32,
    k_stages: u32,
    blocks: u32,
) {
    let raw_bytes = RAW_BYTES * blocks;
    let ahead = stages.min(STAGES);
    for j in 0..stages {
        let slot = j % STAGES;
        let kt = first + j;
        mbarrier_wait_parity(bars, STAGES + slot, ((j / STAGES) & 1) ^ 1);
        mbarrier_arrive_expect_tx(bars, slot, IMAGE_BYTES + raw_bytes);
        for h in 0..blocks {
            cp_async_bulk_global_to_shared(
                smem,
                RING_B_BASE + slot * raw_bytes + h * RAW_BYTES,
                weights,
                ((b_tile + h) * k_stages + kt) * (RAW_BYTES / 4),
                RAW_BYTES,
                bars,
                slot,
            );
        }
        if j >= ahead {
            cp_async_bulk_global_to_shared(
                smem,
                slot * IMAGE_BYTES,
                images,
                (a_tile * k_stages + kt) * (IMAGE_BYTES / 4),
                IMAGE_BYTES,
                bars,
                slot,
            );
        }
        if j + 1 == ahead {
            grid_dependency_wait();
            for early in 0..ahead {
                cp_async_bulk_global_to_shared(
                    smem,
                    early * IMAGE_BYTES,
                    images,
                    (a_tile * k_stages + first + early) * (IMAGE_BYTES / 4),
                    IMAGE_BYTES,
                    bars,
                    early,
                );
            }
        }
    }
}

/// A consumer thread `ct` (0..256) of a GEMM block: multiplies the block's
/// `stages` K stages as they land in the ring into its accumulators of
/// `BLOCKS` m64 blocks (`acc0`, and `acc1` for the second), releasing each
/// stage's slot once its MMAs are done. Warpgroup `ct / 128` owns B rows
/// `64 BLOCKS wg .. 64 BLOCKS (wg + 1)` of the tile.
#[device]
#[allow(clippy::too_many_arguments)]
fn consume<const BLOCKS: u32>(
    smem: &SharedSlice<u8>,
    words: &SharedSlice<u32x4>,
    scale_words: &SharedSlice<u32>,
    bars: &SharedArray<u64, BARRIERS>,
    acc0: &mut [f32; 64],
    acc1: &mut [f32; 64],
    stages: u32,
    ct: u32,
) {
    let raw_bytes = RAW_BYTES * BLOCKS;
    let wg = ct / 128;
    // The scratch accumulator of the wgmma chain. A chain runs over
    // `chain_stages` (4, 512 K, with one m64 block; 1 with two, whose
    // chains would not fit in registers together) and is then promoted.
    let mut chain = [0.0f32; 64];
    let chain_stages = if BLOCKS == 1 { 4u32 } else { 1u32 };
    for c0 in 0..stages.div_ceil(chain_stages) {
        #[unroll]
        for sub in 0..chain_stages {
            let i = chain_stages * c0 + sub;
            if i < stages {
                let s = i % STAGES;
                let stage = RING_B_BASE + s * raw_bytes;
                mbarrier_wait_parity(bars, s, (i / STAGES) & 1);
                #[unroll]
                for blk in 0..BLOCKS as usize {
                    // The thread's pre-arranged words of the stage (one
                    // per K step of 16) and its four scales, of the
                    // block's rows g and g + 8 (see [`super::prearrange`]).
                    let mb = BLOCKS * wg + blk as u32;
                    let block = stage + mb * PREARRANGED_BLOCK_BYTES;
                    let lo = words[block / 16 + ct % 128];
                    let hi = words[block / 16 + 128 + ct % 128];
                    let q = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w];
                    let scales = scale_words[(block + PREARRANGED_DATA_BYTES) / 4 + ct % 128];
                    let splats = [e4m3_pair_splats(scales, 0x1010), e4m3_pair_splats(scales, 0x3232)];
                    #[unroll]
                    for step in 0..8usize {
                        let raw = e2m1x8_prearranged(q[step]);
                        let splat = splats[step / 4];
                        let mut frag = [f16x2::from_bits(0); 4];
                        #[unroll]
                        for f in 0..4usize {
                            // f: row (f % 2: g or g + 8), K pair (f / 2).
                            frag[f] = hmul2(raw[f], splat[f % 2]);
                        }
                        let desc = WgmmaDesc::new(shared_address(smem, s * IMAGE_BYTES + step as u32 / 4 * 16384))
                            .with_leading_byte_offset(16)
                            .with_stride_byte_offset(1024)
                            .with_swizzle(Swizzle::B128)
                            .offset(step as u32 % 4 * 32);
                        wgmma_fence();
                        wgmma_f16_rs(&mut chain, frag, desc, step > 0 || sub > 0);
                        wgmma_commit_group();
                        wgmma_wait_group(1);
                        if sub > 0 && step == 0 {
                            // Only this step's MMA may be pending: the previous
                            // stage's are done, and with them this thread's
                            // reads of its slot.
                            mbarrier_arrive(bars, STAGES + (i + (STAGES - 1)) % STAGES);
                        }
                    }
                    if BLOCKS == 2 {
                        // Promote the block's chain: one correctly rounded f32
                        // add per value.
                        wgmma_wait_group(0);
                        if blk == 1 {
                            // This thread's reads of stage s, its MMAs' included,
                            // are done.
                            mbarrier_arrive(bars, STAGES + s);
                        }
                        #[unroll]
                        for e in 0..64usize {
                            if blk == 0 {
                                acc0[e] += chain[e];
                            } else {
                                acc1[e] += chain[e];
                            }
                        }
                    }
                }
            }
        }
        if BLOCKS == 1 {
            // Promote the chain, and release the slot of its last stage.
            wgmma_wait_group(0);
            let last_stage = (chain_stages * c0 + chain_stages - 1).min(stages - 1);
            mbarrier_arrive(bars, STAGES + last_stage % STAGES);
            #[unroll]
            for e in 0..64usize {
                acc0[e] += chain[e];
            }
        }
    }
}

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
fn stage_partial_tile<const BLOCKS: u32>(partial: &mut SharedSlice<f32>, acc0: &[f32; 64], acc1: &[f32; 64], ct: u32) {
    let wg = ct / 128;
    let w = ct / 32 % 4;
    let g = ct % 32 / 4;
    let t = ct % 4;
    // Both warpgroups' MMAs are done with the ring, so the partial
    // tile may overwrite it.
    named_barrier_sync(1, THREADS);
    #[unroll]
    for x in 0..64 * BLOCKS as usize {
        let blk = x / 64;
        let i = x % 64;
        let b_row = 64 * (BLOCKS * wg + blk as u32) + 16 * w + g + 8 * (i as u32 % 4 / 2);
        let a_row = 8 * (i as u32 / 4) + 2 * t + i as u32 % 2;
        let v = if blk == 0 { acc0[i] } else { acc1[i] };
        partial[a_row * PITCH + b_row] = v * UNSCALE;
    }
}

/// The hand-off between a tile's two clusters of pairs (`SPLIT = 4`):
/// every consumer thread's stores to `partials` so far are released by
/// the block's increment of `counters[counter]`, whose old value says
/// whether the tile's other cluster has released its own. True for the
/// block that arrives second, which has then acquired the other
/// cluster's partial sums.
#[device]
fn second_to_arrive(arrival: &mut SharedArray<u32, 1>, counters: &mut [u32], counter: u32, ct: u32) -> bool {
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
fn swap_epilogue<const SPLIT: u32>(
    words: &mut SharedSlice<u32x4>,
    staged_c: &mut SharedSlice<u16>,
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
    // thread; after the cluster barrier it adds the same thread's chunks
    // pushed by the other block (p0 + p1 in either block: f32 addition
    // commutes). A push costs no round trip, where reading the other
    // block's half would wait for one per chunk.
    let cr = rank % 2;
    let mut kept = [0.0f32; 32];
    // Both blocks have started (the kernel's first cluster arrive).
    cluster_wait();
    #[unroll]
    for j in 0..8usize {
        let mut given = [0u32; 4];
        #[unroll]
        for e in 0..4usize {
            let (lo, hi) = (acc0[4 * j + e], acc0[32 + 4 * j + e]);
            kept[4 * j + e] = if cr == 0 { lo } else { hi };
            given[e] = if cr == 0 { hi.to_bits() } else { lo.to_bits() };
        }
        store_cluster(
            words,
            SWAP_BASE / 16 + j as u32 * THREADS + ct,
            u32x4::new(given[0], given[1], given[2], given[3]),
            1 - cr,
        );
    }
    // Releases this block's pushes, acquires the other's; neither block
    // touches the other's shared memory after it.
    cluster_sync();
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
        #[unroll]
        for j in 0..8usize {
            let sum = u32x4::new(
                sums[4 * j].to_bits(),
                sums[4 * j + 1].to_bits(),
                sums[4 * j + 2].to_bits(),
                sums[4 * j + 3].to_bits(),
            );
            store_v4(partials, (mine + 1024 * j as u32) as usize, sum, Cache::Global);
        }
        stores_c = second_to_arrive(arrival, counters, 2 * tile + cr, ct);
        if stores_c {
            #[unroll]
            for j in 0..8usize {
                let other = load_v4(partials, (theirs + 1024 * j as u32) as usize, Cache::Global);
                let v = [other.x, other.y, other.z, other.w];
                #[unroll]
                for e in 0..4usize {
                    sums[4 * j + e] += f32::from_bits(v[e]);
                }
            }
        }
    }
    if stores_c {
        // C's 64 rows through the (now idle) ring as f16, rows of
        // C_PITCH halves (the padding spreads a warp's stores over the
        // banks), then out in 16-byte chunks.
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

/// The sum, in rank order from 0, of the eight f32 at 16-byte words `at`
/// and `at + 1` of the shared memory of the cluster's blocks `0..BLOCKS`.
#[device]
fn cluster_sum8<const BLOCKS: u32>(words: &SharedSlice<u32x4>, at: u32) -> [f32; 8] {
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
fn pairs_epilogue(
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
fn cluster_epilogue<const BLOCKS: u32, const SPLIT: u32>(
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
fn tile_epilogue<const BLOCKS: u32, const SPLIT: u32>(
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
/// B is read before the kernel waits for the previous one in the stream:
/// launch it after [`gemm_sm90_decode_a`] (as [`super::gemm`] does), whose
/// wait comes before it lets this kernel start.
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
    // consumed).
    let bars = shared_array::<u64, BARRIERS>();
    // The tile's first rows of A (and C) and of B, for the producer and the
    // epilogue (kept in shared memory rather than in registers through the
    // main loop).
    let rows0 = shared_array::<u32, 2>();
    // The old value of this block's tile counter (`clustered` = 2).
    let arrival = shared_array::<u32, 1>();

    // The next kernel in the stream may start launching now; this one
    // waits for the previous one before it reads A.
    launch_dependents();
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

    if tid == 0 {
        #[unroll]
        for s in 0..STAGES {
            mbarrier_init(bars, s, 1);
            mbarrier_init(bars, STAGES + s, THREADS);
        }
        fence_mbarrier_init();
        rows0[0u32] = batch * m + m0;
        rows0[1u32] = batch * n + n0;
    }
    sync_threads();
    // K split over clusters of two with 128-row tiles (split 2 in one
    // cluster, split 4 in pairs of them): the blocks of a cluster swap
    // halves of their accumulators instead of whole partial tiles, each
    // pushing its half into the other's shared memory once the other has
    // started, which the first phase of the cluster barrier says: every
    // thread arrives at it here. The other reductions' first phase is
    // their consumers' partial tiles staged; the producer warpgroup,
    // which writes none, arrives at it here too.
    let swap = BLOCKS == 1 && (SPLIT == 2 && clustered == 1 || SPLIT == 4 && clustered == 2);
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
                k_stages,
                BLOCKS,
            );
        }
        sync_warp();
        // The consumers' epilogues sum a split K through two phases of the
        // cluster barrier, which every thread of the cluster takes part in
        // (this warpgroup arrived at the first at the start).
        if SPLIT > 1 && clustered != 0 {
            cluster_wait();
            cluster_arrive_relaxed();
            cluster_wait();
        }
    } else {
        setmaxnreg_inc(232);
        let ct = tid;
        // The f32 accumulators of the thread's m64 blocks.
        let mut acc0 = [0.0f32; 64];
        let mut acc1 = [0.0f32; 64];
        consume::<BLOCKS>(smem, words, scale_words, bars, &mut acc0, &mut acc1, stages, ct);
        if !swap {
            stage_partial_tile::<BLOCKS>(partial, &acc0, &acc1, ct);
        }
        if swap {
            swap_epilogue::<SPLIT>(
                words, staged_c, rows0, arrival, &acc0, c, partials, counters, ct, n, alpha,
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

/// Eight sums times `alpha`, each rounded to f16, packed in pairs: 16 bytes
/// of C.
#[device]
fn scaled_f16x8(sums: [f32; 8], alpha: f32) -> u32x4 {
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
