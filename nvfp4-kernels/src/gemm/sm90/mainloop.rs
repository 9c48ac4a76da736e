//! The GEMM block's main loop: the producer streaming K stages through
//! the ring and the consumers multiplying them.

use super::*;

/// Initialises the block's mbarriers (from one thread, before the block's
/// first barrier): `full[s]` expects the producer's arrive and the stage's
/// bytes, `empty[STAGES + s]` the 256 consumers, and where the blocks of a
/// cluster swap halves of their accumulators (`swap`), `SWAP_BAR` one
/// consumer's arrive and the other block's half.
#[device]
pub(super) fn init_ring(bars: &SharedArray<u64, BARRIERS>, swap: bool) {
    #[unroll]
    for s in 0..STAGES {
        mbarrier_init(bars, s, 1);
        mbarrier_init(bars, STAGES + s, THREADS);
    }
    if swap {
        mbarrier_init(bars, SWAP_BAR, 1);
    }
    fence_mbarrier_init();
}

/// Requests K stage `kt`'s B chunks of 128-row tiles `b_tile ..` (`blocks`
/// of them) into ring slot `slot`, whose full barrier then expects A's
/// image of the stage as well.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn request_b(
    smem: &SharedSlice<u8>,
    bars: &SharedArray<u64, BARRIERS>,
    weights: &[u32],
    b_tile: u32,
    kt: u32,
    slot: u32,
    k_stages: u32,
    blocks: u32,
) {
    let raw_bytes = RAW_BYTES * blocks;
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
}

/// The producer of a GEMM block, after the kernel's wait for the previous
/// one: streams `stages` K stages (from `first`) of one tile through the
/// four-slot ring, from ring position `pos` (the stages the block streamed
/// before: the ring's slot and phase go on from there) — A's images of row tile `a_tile` and B's pre-arranged chunks of
/// 128-row tiles `b_tile ..` (`blocks` of them) by bulk copies — each
/// completing on the stage's full barrier, each slot refilled once the
/// consumers released the stage before in it. B of the first `ahead`
/// stages was requested before the wait ([`request_b`]: B does not depend
/// on the previous kernel), only their images are left.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn produce(
    smem: &SharedSlice<u8>,
    bars: &SharedArray<u64, BARRIERS>,
    images: &[u32],
    weights: &[u32],
    a_tile: u32,
    b_tile: u32,
    first: u32,
    stages: u32,
    ahead: u32,
    k_stages: u32,
    blocks: u32,
    pos: u32,
) {
    for j in 0..stages {
        let slot = (pos + j) % STAGES;
        let kt = first + j;
        if j >= ahead {
            mbarrier_wait_parity(bars, STAGES + slot, (((pos + j) / STAGES) & 1) ^ 1);
            request_b(smem, bars, weights, b_tile, kt, slot, k_stages, blocks);
        }
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
}

/// How many of a chain's wgmmas a consumer with one m64 block per
/// warpgroup leaves in flight while it decodes the next K step's fragment
/// (with two blocks, one: a second fragment's registers would spill).
#[device]
pub(super) const IN_FLIGHT: u32 = 2;

/// A consumer thread `ct` (0..256) of a GEMM block: multiplies `stages` K
/// stages of one tile, from ring position `pos`, as they land in the ring
/// into its accumulators of
/// `BLOCKS` m64 blocks (`acc0`, and `acc1` for the second), releasing each
/// stage's slot once its MMAs are done. Warpgroup `ct / 128` owns B rows
/// `64 BLOCKS wg .. 64 BLOCKS (wg + 1)` of the tile.
#[device]
#[allow(clippy::too_many_arguments)]
pub(super) fn consume<const BLOCKS: u32>(
    smem: &SharedSlice<u8>,
    words: &SharedSlice<u32x4>,
    scale_words: &SharedSlice<u32>,
    bars: &SharedArray<u64, BARRIERS>,
    acc0: &mut [f32; 64],
    acc1: &mut [f32; 64],
    stages: u32,
    pos: u32,
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
                let s = (pos + i) % STAGES;
                let stage = RING_B_BASE + s * raw_bytes;
                mbarrier_wait_parity(bars, s, ((pos + i) / STAGES) & 1);
                // A's image in slot s as the MMAs read it, built once a
                // stage; each K step's MMA reads it from its own offset.
                let image = WgmmaDesc::new(shared_address(smem, s * IMAGE_BYTES))
                    .with_leading_byte_offset(16)
                    .with_stride_byte_offset(1024)
                    .with_swizzle(Swizzle::B128);
                #[unroll]
                for blk in 0..BLOCKS as usize {
                    // The thread's pre-arranged words of the stage (one
                    // per K step of 16) and its four scales, of the
                    // block's rows g and g + 8 (see [`crate::gemm::prearrange`]).
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
                        let desc = image.offset(step as u32 / 4 * 16384 + step as u32 % 4 * 32);
                        wgmma_fence();
                        wgmma_f16_rs(&mut chain, frag, desc, step > 0 || sub > 0);
                        wgmma_commit_group();
                        if BLOCKS == 1 {
                            wgmma_wait_group(IN_FLIGHT);
                        } else {
                            wgmma_wait_group(1);
                        }
                        if sub > 0 && step == IN_FLIGHT as usize - 1 {
                            // Only this stage's MMAs may be pending: the
                            // previous stage's are done, and with them this
                            // thread's reads of its slot.
                            mbarrier_arrive(bars, STAGES + (pos + i + (STAGES - 1)) % STAGES);
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
            mbarrier_arrive(bars, STAGES + (pos + last_stage) % STAGES);
            #[unroll]
            for e in 0..64usize {
                acc0[e] += chain[e];
            }
        }
    }
}
