//! Block-scaled NVFP4 GEMM for Blackwell (sm_100a): `C[l][m][n] =
//! f16(sum_k A(l, m, k) * B(l, n, k))` with A `[M, K, L]` and B `[N, K, L]`
//! K-major NVFP4 and their e4m3 scales in the blocked 128x4 layout the
//! tensor cores read (the task's `sfa_permuted`/`sfb_permuted`), consumed
//! directly.
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

use crate::Error;
use crate::nvfp4::Nvfp4Tensor;
use nvfp4_dsl::TileMap2d;
use nvfp4_dsl::prelude::*;

/// Rows of A per block (the MMA's M).
pub const BM: usize = 128;
/// K per pipeline stage: 4 MMAs of K = 64; 128 bytes per row (one
/// 128-byte swizzle atom wide).
pub const BK: usize = 256;
/// Shared-memory pipeline depth (the kernel's `STAGES`).
pub const STAGES: u32 = 4;

/// NVFP4 block-scaled GEMM tile kernel (sm_100a). `map_a`/`map_b`: tensor
/// maps over A `[L*M rows][K/2 bytes]` and B `[L*N rows][K/2 bytes]` with
/// boxes of 128 bytes x 128 (A) or `BN` (B) rows, 128-byte swizzle; `sfa`,
/// `sfb`: the blocked scale layouts; `c`: `[L][M][N]`.
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
) {
    // Shared memory, per stage: A 128 x 128 B, B BN x 128 B (both 1024-byte
    // aligned for the swizzle), then the scale blocks (2048 B per 128 rows).
    const A_BYTES: u32 = 128 * 128;
    const SFA_BYTES: u32 = 2048;
    let b_bytes = BN * 128;
    let sfb_bytes = BN / 128 * 2048;
    let a_base = 0u32;
    let b_base = STAGES * A_BYTES;
    let sfa_base = b_base + STAGES * b_bytes;
    let sfb_base = sfa_base + STAGES * SFA_BYTES;
    let stage_bytes = A_BYTES + b_bytes + SFA_BYTES + sfb_bytes;
    // Tensor memory: the accumulator, then per stage 4 K-steps x 4 scale
    // columns for A and BN / 32 for B (a power of two in all).
    let columns = if BN + STAGES * (16 + BN / 8) <= 256 { 256 } else { 512 };
    let sfa_col = BN;
    let sfb_col = BN + STAGES * 16;
    // mbarriers: full[s] (copies landed), empty[s] (MMAs done with stage s),
    // done (accumulator complete); room for up to 7 stages.
    let full = 0u32;
    let empty = STAGES;
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
        tcgen05_alloc(tmem_slot, 0u32, columns);
        tcgen05_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    sync_threads();
    tcgen05_fence_after_thread_sync();
    let tmem = tmem_slot[0u32];

    if warp == 0 {
        if elect_sync() {
            let a_row = (batch * m + m0) as i32;
            let b_row = (batch * n + n0) as i32;
            let sfa_block = (batch * (m / 128) + m0 / 128) * k_blocks;
            let sfb_block = (batch * (n / 128) + n0 / 128) * k_blocks;
            for kt in 0..k_tiles {
                let s = kt % STAGES;
                mbarrier_wait_parity(bars, empty + s, (kt / STAGES & 1) ^ 1);
                mbarrier_arrive_expect_tx(bars, full + s, stage_bytes);
                let k_byte = (kt * 128) as i32;
                cp_async_bulk_tensor_2d_global_to_shared(
                    smem,
                    a_base + s * A_BYTES,
                    map_a,
                    k_byte,
                    a_row,
                    bars,
                    full + s,
                );
                cp_async_bulk_tensor_2d_global_to_shared(
                    smem,
                    b_base + s * b_bytes,
                    map_b,
                    k_byte,
                    b_row,
                    bars,
                    full + s,
                );
                cp_async_bulk_global_to_shared(
                    smem,
                    sfa_base + s * SFA_BYTES,
                    sfa,
                    (sfa_block + kt * 4) * 512,
                    SFA_BYTES,
                    bars,
                    full + s,
                );
                #[unroll]
                for j in 0..BN / 128 {
                    cp_async_bulk_global_to_shared(
                        smem,
                        sfb_base + s * sfb_bytes + j * 2048,
                        sfb,
                        (sfb_block + j * k_blocks + kt * 4) * 512,
                        2048,
                        bars,
                        full + s,
                    );
                }
            }
        }
    } else if warp == 1 && elect_sync() {
        let idesc = InstrDesc::mxf4nvf4(128, BN);
        for kt in 0..k_tiles {
            let s = kt % STAGES;
            mbarrier_wait_parity(bars, full + s, kt / STAGES & 1);
            tcgen05_fence_after_thread_sync();
            // K-major tiles, 128-byte swizzle: 8-row groups 1024 bytes apart.
            let a_desc = SmemDesc::new(shared_address(smem, a_base + s * A_BYTES))
                .with_leading_byte_offset(16)
                .with_stride_byte_offset(1024)
                .with_swizzle(Swizzle::B128);
            let b_desc = SmemDesc::new(shared_address(smem, b_base + s * b_bytes))
                .with_leading_byte_offset(16)
                .with_stride_byte_offset(1024)
                .with_swizzle(Swizzle::B128);
            #[unroll]
            for j in 0..4 {
                // One K = 64 step: scale block j (512 bytes = 32 rows x 16)
                // into 4 columns of every lane quarter.
                let sfa_tmem = tmem + sfa_col + s * 16 + 4 * j;
                let sfb_tmem = tmem + sfb_col + s * (BN / 8) + j * (BN / 32);
                let sfa_src = SmemDesc::new(shared_address(smem, sfa_base + s * SFA_BYTES + j * 512))
                    .with_stride_byte_offset(128);
                tcgen05_cp_32x128b_warpx4(sfa_tmem, sfa_src);
                #[unroll]
                for h in 0..BN / 128 {
                    let sfb_src = SmemDesc::new(shared_address(smem, sfb_base + s * sfb_bytes + h * 2048 + j * 512))
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
            tcgen05_commit(bars, empty + s);
        }
        tcgen05_commit(bars, done);
    }
    sync_warp();

    // Epilogue: warp w reads accumulator lanes (rows) 32w..32w+32.
    mbarrier_wait_parity(bars, done, 0);
    tcgen05_fence_after_thread_sync();
    let row = (batch * m + m0 + warp * 32 + lane) as usize;
    for chunk in 0..BN / 32 {
        let v = tcgen05_ld_32x32b::<32>(tmem + ((warp * 32) << 16) + chunk * 32);
        tcgen05_wait_ld();
        #[unroll]
        for q in 0..4 {
            let mut h = [0u32; 4];
            #[unroll]
            for i in 0..4 {
                let lo = f32::from_bits(v[8 * q + 2 * i]);
                let hi = f32::from_bits(v[8 * q + 2 * i + 1]);
                h[i] = f16x2::from_f32s(lo, hi).to_bits();
            }
            let col = (n0 + chunk * 32) as usize + 8 * q;
            store_v4(
                c,
                row * n as usize + col,
                u32x4::new(h[0], h[1], h[2], h[3]),
                Cache::Default,
            );
        }
    }

    tcgen05_fence_before_thread_sync();
    sync_threads();
    if warp == 0 {
        tcgen05_fence_after_thread_sync();
        tcgen05_dealloc(tmem, columns);
    }
}

/// Dynamic shared memory of a block with `bn` columns.
pub fn shared_bytes(bn: usize) -> u32 {
    (STAGES as usize * (BM * 128 + bn * 128 + 2048 + bn / 128 * 2048)) as u32
}

/// An NVFP4 GEMM operand on the device: data `[L][rows][K/2]` bytes (with
/// a tensor map over it) and its scales in the blocked layout.
#[derive(Debug)]
pub struct DeviceGemmOperand {
    /// Rows per batch.
    pub rows: usize,
    /// Elements per row.
    pub k: usize,
    /// Batches (L).
    pub batches: usize,
    /// The packed data.
    pub data: DeviceBuffer<Fp4x2>,
    /// The scales, blocked (128 x 4) layout.
    pub scales: DeviceBuffer<E4m3>,
    box_rows: u32,
    map: TensorMap,
}

impl DeviceGemmOperand {
    /// Uploads `t` (rows a multiple of 128, K a multiple of 256) for tiles of
    /// `box_rows` rows (128 for A; the tile's BN for B).
    pub fn upload(device: &Device, t: &Nvfp4Tensor, box_rows: usize) -> Result<DeviceGemmOperand, Error> {
        if !t.rows.is_multiple_of(128)
            || !t.k.is_multiple_of(BK)
            || !matches!(box_rows, 128 | 256)
            || !t.rows.is_multiple_of(box_rows)
        {
            return Err(Error::Shape(format!(
                "a GEMM operand needs rows a multiple of 128 (and of the {box_rows}-row tile) and K a multiple of {BK}; got [{}, {}, {}]",
                t.rows, t.k, t.batches
            )));
        }
        let data = device.upload(&t.data)?;
        let scales = device.upload(&t.blocked_scales())?;
        let map = device.tensor_map_2d(
            &data,
            TileMap2d {
                row_bytes: (t.k / 2) as u64,
                rows: (t.rows * t.batches) as u64,
                row_stride: (t.k / 2) as u64,
                box_bytes: 128,
                box_rows: box_rows as u32,
                swizzle: Swizzle::B128,
            },
        )?;
        Ok(DeviceGemmOperand {
            rows: t.rows,
            k: t.k,
            batches: t.batches,
            data,
            scales,
            box_rows: box_rows as u32,
            map,
        })
    }
}

/// `c = a x b^T` per batch: a `[M, K, L]`, b `[N, K, L]`, c `[L][M][N]`
/// f16. Needs a compute capability 10.0 device (or the emulator).
pub fn gemm(
    device: &Device,
    a: &DeviceGemmOperand,
    b: &DeviceGemmOperand,
    c: &mut DeviceBuffer<f16>,
) -> Result<(), Error> {
    let (major, minor) = device.compute_capability();
    if (major, minor) != (10, 0) {
        return Err(Error::Unsupported(format!(
            "the block-scaled NVFP4 GEMM uses Blackwell tensor cores (sm_100a) and needs a compute capability 10.0 device; {} is {major}.{minor}",
            device.describe()
        )));
    }
    if a.k != b.k || a.batches != b.batches || a.box_rows != 128 {
        return Err(Error::Shape(format!(
            "a is [{}, {}, {}] (tile rows {}), b is [{}, {}, {}]: K and L must match and a must be uploaded for 128-row tiles",
            a.rows, a.k, a.batches, a.box_rows, b.rows, b.k, b.batches
        )));
    }
    let (m, n, k, l) = (a.rows, b.rows, a.k, a.batches);
    if c.len() != m * n * l {
        return Err(Error::Shape(format!(
            "c holds {} values; [{m}, {n}, {l}] needs {}",
            c.len(),
            m * n * l
        )));
    }
    if u32::try_from(m * l).is_err() || u32::try_from(n * l).is_err() || i32::try_from(m * n * l).is_err() {
        return Err(Error::Shape("the problem is too large for 32-bit indices".into()));
    }
    let bn = b.box_rows as usize;
    let launch = LaunchConfig {
        grid: ((n / bn) as u32, (m / BM) as u32, l as u32),
        block: (128, 1, 1),
        shared_bytes: shared_bytes(bn),
    };
    let (mm, nn, kk) = (m as u32, n as u32, k as u32);
    // SAFETY: shapes checked above: every tile is inside a and b (rows are
    // multiples of the tiles, K of 256), the scale blocks exist for every
    // (128 rows, 256 K) tile, and every row and column of c is in bounds.
    unsafe {
        if bn == 128 {
            gemm_nvfp4::Kernel::<128, STAGES>::launch(
                device, launch, a.map, b.map, &a.scales, &b.scales, c, mm, nn, kk,
            )?;
        } else {
            gemm_nvfp4::Kernel::<256, STAGES>::launch(
                device, launch, a.map, b.map, &a.scales, &b.scales, c, mm, nn, kk,
            )?;
        }
    }
    Ok(())
}

/// The task's GEMM test shapes (M, N, K, L).
pub const TEST_SHAPES: [(usize, usize, usize, usize); 10] = [
    (128, 256, 256, 1),
    (128, 1536, 7168, 1),
    (128, 3072, 1536, 1),
    (256, 7168, 256, 1),
    (256, 7168, 2048, 1),
    (2304, 4608, 7168, 1),
    (384, 7168, 2304, 1),
    (512, 512, 7168, 1),
    (512, 4096, 512, 1),
    (512, 1536, 7168, 1),
];

/// The task's GEMM benchmark shapes (M, N, K), L = 1.
pub const BENCH_SHAPES: [(usize, usize, usize); 3] = [(128, 7168, 16384), (128, 4096, 7168), (128, 7168, 2048)];

/// A change made to A's blocked scales after upload: tests use it to show
/// that [`check_gemm`] is not blind.
pub type ScaleTamper<'a> = &'a dyn Fn(&mut [E4m3]);

/// Runs one GEMM on random inputs (C poisoned with NaN first) with tiles of
/// `bn` columns and checks every element against the f64 reference
/// (rtol = atol = 1e-3). `tamper` lets a test corrupt A's blocked scales
/// after upload, to show the check is not blind.
pub fn check_gemm(
    device: &Device,
    rng: &mut crate::rng::Rng,
    (m, n, k, l): (usize, usize, usize, usize),
    kind: crate::nvfp4::Inputs,
    bn: usize,
    tamper: Option<ScaleTamper<'_>>,
) -> Result<(), Error> {
    let (a, b) = crate::nvfp4::gemm_inputs(rng, m, n, k, l, kind)?;
    let want = crate::nvfp4::gemm_reference(&a, &b);
    let mut da = DeviceGemmOperand::upload(device, &a, BM)?;
    if let Some(tamper) = tamper {
        let mut scales = device.download(&da.scales)?;
        tamper(&mut scales);
        device.write(&mut da.scales, &scales)?;
    }
    let db = DeviceGemmOperand::upload(device, &b, bn)?;
    let mut dc = device.upload(&vec![f16::NAN; m * n * l])?;
    gemm(device, &da, &db, &mut dc)?;
    let got = device.download(&dc)?;
    crate::nvfp4::check_close(&got, &want, 1e-3, 1e-3)
        .map_err(|e| Error::Mismatch(format!("GEMM M={m} N={n} K={k} L={l} ({kind:?} inputs, BN={bn}): {e}")))
}
