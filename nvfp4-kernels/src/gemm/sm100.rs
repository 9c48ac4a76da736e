//! The block-scaled NVFP4 GEMM kernel for Blackwell (sm_100a).
//!
//! One block computes a 128 x `BN` tile of C with four warps:
//! - warp 0 (one elected lane) streams K in steps of 256: a 128B-swizzled
//!   tile of A and of B through the tensor copy engine (`cp.async.bulk.tensor`)
//!   and the tile's 2048-byte scale blocks through plain bulk copies, into
//!   one of `STAGES` shared-memory stages, completing on the stage's `full`
//!   mbarrier;
//! - warp 1 (one elected lane) waits for a stage, copies its scales into
//!   tensor memory (`tcgen05.cp`) and issues four `tcgen05.mma
//!   .kind::mxf4nvf4.block_scale.scale_vec::4X` (K = 64 each) into an f32
//!   accumulator in tensor memory, then `tcgen05.commit`s the stage's `empty`
//!   mbarrier so warp 0 may refill it;
//! - after the last commit all four warps read the accumulator (warp `w`
//!   owns tensor-memory lanes `32w..32w+32`, i.e. rows), convert to f16 and
//!   store C.
//!
//! Verified by ptxas, by the SASS (`UTCOMMA`) and on the project's PTX
//! emulator; no Blackwell GPU was available to run it.

use nvfp4_dsl::prelude::*;

/// NVFP4 block-scaled GEMM tile kernel (sm_100a). `map_a`/`map_b`: tensor
/// maps over A `[L*M rows][K/2 bytes]` and B `[L*N rows][K/2 bytes]` with
/// boxes of 128 bytes x 128 (A) or `BN` (B) rows, 128-byte swizzle; `sfa`,
/// `sfb`: the blocked scale layouts; `c`: `[L][M][N]`, each sum times
/// `alpha` (an epilogue scale, 1 for none).
#[kernel(targets(sm_100a), specialize(BN = [128, 256], STAGES = [4]), launch_bounds(128, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_nvfp4<const BN: u32, const STAGES: u32>(
    map_a: TensorMap,
    map_b: TensorMap,
    sfa: &[E4m3],
    sfb: &[E4m3],
    c: &mut [f16],
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
) {
    // Shared memory, per stage: A 128 x 128 B, B BN x 128 B (both 1024-byte
    // aligned for the swizzle), then the scale blocks (2048 B per 128 rows).
    let b_bytes = BN * 128;
    let sfb_bytes = BN / 128 * 2048;
    let b_base = STAGES * A_BYTES;
    let sfa_base = b_base + STAGES * b_bytes;
    let layout = StageLayout {
        b_base,
        sfa_base,
        sfb_base: sfa_base + STAGES * SFA_BYTES,
        b_bytes,
        sfb_bytes,
    };
    // Tensor memory: the accumulator, then per stage 4 K-steps x 4 scale
    // columns for A and BN / 32 for B (a power of two in all).
    let columns = if BN + STAGES * (16 + BN / 8) <= 256 { 256 } else { 512 };
    let sfa_col = BN;
    let sfb_col = BN + STAGES * 16;
    // mbarriers: full[s] (copies landed), empty[STAGES + s] (MMAs done with
    // stage s), done (accumulator complete); room for up to 7 stages.
    let done = 2 * STAGES;

    let smem = dynamic_shared::<u8>(0);
    let bars = shared_array::<u64, 16>();
    let tmem_slot = shared_array::<u32, 1>();
    let warp = thread_idx_x() / 32;
    let lane = lane_id();
    let n0 = block_idx_x() * BN;
    let m0 = block_idx_y() * 128;
    let batch = block_idx_z();
    let k_tiles = k / 256;
    // Scale blocks: 512 bytes per (128 rows, 4 scale columns); per batch
    // ceil(rows / 128) x K / 64 of them.
    let k_blocks = k / 64;

    if thread_idx_x() == 0 {
        #[unroll]
        for i in 0..2 * STAGES + 1 {
            mbarrier_init(bars, i, 1);
        }
        fence_mbarrier_init();
    }
    if warp == 0 {
        // Lane 0 alone initialised the barriers: the warp is reconverged
        // before the `.aligned` alloc (a branch leaves a warp diverged
        // until the program reconverges it).
        sync_warp();
        tcgen05_alloc(tmem_slot, 0u32, columns);
        tcgen05_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    sync_threads();
    tcgen05_fence_after_thread_sync();
    let tmem = tmem_slot[0u32];

    if warp == 0 {
        if elect_sync() {
            let rows = ((batch * m + m0) as i32, (batch * n + n0) as i32);
            let sfa_block = (batch * (m / 128) + m0 / 128) * k_blocks;
            let sfb_block = (batch * (n / 128) + n0 / 128) * k_blocks;
            let scale_blocks = (sfa_block, sfb_block, k_blocks);
            load_stages::<BN, STAGES>(smem, bars, layout, map_a, map_b, sfa, sfb, rows, scale_blocks, k_tiles);
        }
    } else if warp == 1 && elect_sync() {
        issue_mmas::<BN, STAGES>(smem, bars, layout, tmem, sfa_col, sfb_col, k_tiles);
        tcgen05_commit(bars, done);
    }
    sync_warp();

    // Epilogue: warp w reads accumulator lanes (rows) 32w..32w+32.
    mbarrier_wait_parity(bars, done, 0);
    tcgen05_fence_after_thread_sync();
    let row = (batch * m + m0 + warp * 32 + lane) as usize;
    store_rows::<BN>(c, tmem + ((warp * 32) << 16), row * n as usize + n0 as usize, alpha);

    tcgen05_fence_before_thread_sync();
    sync_threads();
    if warp == 0 {
        tcgen05_fence_after_thread_sync();
        tcgen05_dealloc(tmem, columns);
    }
}

/// Per stage, bytes of A's tile in shared memory (128 rows x 128 bytes, at
/// the start of shared memory) and of its scale blocks.
#[device]
const A_BYTES: u32 = 128 * 128;
#[device]
const SFA_BYTES: u32 = 2048;

/// Where the stages' parts start in shared memory (A's tiles at 0), and the
/// per-stage bytes of B's tile and its scale blocks.
#[device]
#[derive(Clone, Copy)]
struct StageLayout {
    b_base: u32,
    sfa_base: u32,
    sfb_base: u32,
    b_bytes: u32,
    sfb_bytes: u32,
}

/// The producer (warp 0's elected lane): streams the block's `k_tiles` K
/// steps of 256 through the `STAGES` stages, each stage's tiles of A and B
/// (from rows `rows.0` and `rows.1` of the tensor maps) and their scale
/// blocks (`scale_blocks`: A's and B's first, and blocks per 128 rows),
/// completing on the stage's full barrier once its empty barrier says the
/// MMAs are done with it.
#[device]
#[allow(clippy::too_many_arguments)]
fn load_stages<const BN: u32, const STAGES: u32>(
    smem: &SharedSlice<u8>,
    bars: &SharedArray<u64, 16>,
    layout: StageLayout,
    map_a: TensorMap,
    map_b: TensorMap,
    sfa: &[E4m3],
    sfb: &[E4m3],
    rows: (i32, i32),
    scale_blocks: (u32, u32, u32),
    k_tiles: u32,
) {
    let (sfa_block, sfb_block, k_blocks) = scale_blocks;
    let stage_bytes = A_BYTES + layout.b_bytes + SFA_BYTES + layout.sfb_bytes;
    for kt in 0..k_tiles {
        let s = kt % STAGES;
        mbarrier_wait_parity(bars, STAGES + s, ((kt / STAGES) & 1) ^ 1);
        mbarrier_arrive_expect_tx(bars, s, stage_bytes);
        let k_byte = (kt * 128) as i32;
        cp_async_bulk_tensor_2d_global_to_shared(smem, s * A_BYTES, map_a, k_byte, rows.0, bars, s);
        cp_async_bulk_tensor_2d_global_to_shared(
            smem,
            layout.b_base + s * layout.b_bytes,
            map_b,
            k_byte,
            rows.1,
            bars,
            s,
        );
        cp_async_bulk_global_to_shared(
            smem,
            layout.sfa_base + s * SFA_BYTES,
            sfa,
            (sfa_block + kt * 4) * 512,
            SFA_BYTES,
            bars,
            s,
        );
        #[unroll]
        for j in 0..BN / 128 {
            cp_async_bulk_global_to_shared(
                smem,
                layout.sfb_base + s * layout.sfb_bytes + j * 2048,
                sfb,
                (sfb_block + j * k_blocks + kt * 4) * 512,
                2048,
                bars,
                s,
            );
        }
    }
}

/// The MMA issuer (warp 1's elected lane): for each of the `k_tiles` stages
/// once it landed, its scales into tensor memory (A's at column `sfa_col`,
/// B's at `sfb_col`, per stage) and four block-scaled MMAs into the
/// accumulator at `tmem`, then a commit that releases the stage.
#[device]
fn issue_mmas<const BN: u32, const STAGES: u32>(
    smem: &SharedSlice<u8>,
    bars: &SharedArray<u64, 16>,
    layout: StageLayout,
    tmem: u32,
    sfa_col: u32,
    sfb_col: u32,
    k_tiles: u32,
) {
    let idesc = InstrDesc::mxf4nvf4(128, BN);
    for kt in 0..k_tiles {
        let s = kt % STAGES;
        mbarrier_wait_parity(bars, s, (kt / STAGES) & 1);
        tcgen05_fence_after_thread_sync();
        // K-major tiles, 128-byte swizzle: 8-row groups 1024 bytes apart.
        let a_desc = SmemDesc::new(shared_address(smem, s * A_BYTES))
            .with_leading_byte_offset(16)
            .with_stride_byte_offset(1024)
            .with_swizzle(Swizzle::B128);
        let b_desc = SmemDesc::new(shared_address(smem, layout.b_base + s * layout.b_bytes))
            .with_leading_byte_offset(16)
            .with_stride_byte_offset(1024)
            .with_swizzle(Swizzle::B128);
        #[unroll]
        for j in 0..4 {
            // One K = 64 step: scale block j (512 bytes = 32 rows x 16)
            // into 4 columns of every lane quarter.
            let sfa_tmem = tmem + sfa_col + s * 16 + 4 * j;
            let sfb_tmem = tmem + sfb_col + s * (BN / 8) + j * (BN / 32);
            let sfa_src = SmemDesc::new(shared_address(smem, layout.sfa_base + s * SFA_BYTES + j * 512))
                .with_stride_byte_offset(128);
            tcgen05_cp_32x128b_warpx4(sfa_tmem, sfa_src);
            #[unroll]
            for h in 0..BN / 128 {
                let sfb_src = SmemDesc::new(shared_address(
                    smem,
                    layout.sfb_base + s * layout.sfb_bytes + h * 2048 + j * 512,
                ))
                .with_stride_byte_offset(128);
                tcgen05_cp_32x128b_warpx4(sfb_tmem + 4 * h, sfb_src);
            }
            tcgen05_mma_mxf4nvf4(
                tmem,
                a_desc.offset(32 * j),
                b_desc.offset(32 * j),
                idesc,
                sfa_tmem,
                sfb_tmem,
                kt > 0 || j > 0,
            );
        }
        tcgen05_commit(bars, STAGES + s);
    }
}

/// A warp's 32 rows of the tile, `BN` columns from tensor-memory address
/// `lanes` (the warp's lane quarter), times `alpha`, to C from element `at`
/// of the lane's row.
#[device]
fn store_rows<const BN: u32>(c: &mut [f16], lanes: u32, at: usize, alpha: f32) {
    for chunk in 0..BN / 32 {
        let v = tcgen05_ld_32x32b::<32>(lanes + chunk * 32);
        tcgen05_wait_ld();
        #[unroll]
        for q in 0..4 {
            let mut h = [0u32; 4];
            #[unroll]
            for i in 0..4 {
                let lo = f32::from_bits(v[8 * q + 2 * i]) * alpha;
                let hi = f32::from_bits(v[8 * q + 2 * i + 1]) * alpha;
                h[i] = f16x2::from_f32s(lo, hi).to_bits();
            }
            store_v4(
                c,
                at + (chunk * 32) as usize + 8 * q,
                u32x4::new(h[0], h[1], h[2], h[3]),
                Cache::Default,
            );
        }
    }
}
