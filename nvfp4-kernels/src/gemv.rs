//! NVFP4 GEMV: `c[l][m] = f16(sum_k a(l, m, k) * b(l, 0, k))`, batched over
//! L, reading the task's layouts directly.
//!
//! The kernel views each K-major row as 16-byte units (32 e2m1 values, two
//! scale blocks): `a` as `[L][M][K/32]` `u32x4`, the scales as
//! `[L][M][K/32]` `E4m3x2` (the same bytes as the task's `[M, K/16, L]`
//! e4m3). A warp owns `ROWS` rows; each lane takes every 32nd unit, prepares
//! the vector's unit once and uses it for all `ROWS` rows.
//!
//! On Hopper (no FP4 conversion) the products are integers: twice an e2m1
//! magnitude is one of 0, 1, 2, 3,
//! 4, 6, 8, 12, so `byte_perm` with that table turns four e2m1 codes into
//! four bytes in one instruction (a set sign bit yields 0), and `dp4a` adds
//! four products at a time. With `P` the bytes of A's non-negative elements,
//! `T` the magnitudes of all of A's elements and `b2` the signed bytes `2b`:
//! `dp4a(P, 2 b2) - dp4a(T, b2) = 4 * sum a b`, exactly, in an `i32`. Each
//! 16-element block's integer sum is scaled by `sa * sb / 4` (exact in f32)
//! in one `f32` FMA, so the only rounding is the f32 accumulation across
//! blocks, then the final f16. On Blackwell `cvt.rn.f16x2.e2m1x2` decodes
//! exactly and the products (multiples of 1/4 up to 36) sum exactly in f16
//! FMAs, 8 per half, before the same f32 scaling.
//!
//! `KSPLIT` warps share a group of rows and split K between them (for shapes
//! with few rows); their partial sums meet in shared memory. A block holds
//! one or more groups (up to 8 warps); small blocks keep the last wave of a
//! short kernel short.

use crate::Error;
use crate::decode::{e2m1_doubled, e2m1_signed_doubled};
use crate::nvfp4::Nvfp4Tensor;
use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{DeviceCopy, DeviceView, DeviceViewMut};

/// Batched NVFP4 GEMV. `a`/`sfa`: `[L][M][K/32]` units and scale pairs; `b`
/// /`sfb`: `[L][b_rows][K/32]` (row 0 of each batch is the vector); `c`:
/// `[L][M]`, each sum times `alpha` (an epilogue scale, 1 for none).
/// `rows_per_batch` is M, `units` is K/32.
#[kernel(
    targets(sm_90, sm_100a),
    specialize(ROWS = [4], KSPLIT = [1, 2, 8]),
    launch_bounds(256, 4)
)]
#[allow(clippy::too_many_arguments)]
pub fn gemv_nvfp4<const ROWS: usize, const KSPLIT: u32>(
    a: &[u32x4],
    sfa: &[E4m3x2],
    b: &[u32x4],
    sfb: &[E4m3x2],
    c: &mut [f16],
    rows_per_batch: u32,
    b_rows: u32,
    units: u32,
    a_ready: bool,
    alpha: f32,
) {
    // Let the next kernel launch while this one runs; wait for the previous
    // one before reading its possible outputs (b, and a unless `a_ready`
    // says the previous kernel did not write it) and before writing c.
    launch_dependents();
    let lane = lane_id();
    let warp = thread_idx_x() / 32;
    let groups_per_block = block_dim_x() / 32 / KSPLIT;
    let group = block_idx_x() * groups_per_block + warp / KSPLIT;
    let part = warp % KSPLIT;
    let row0 = group * ROWS as u32;
    if KSPLIT == 1 && row0 as usize >= c.len() {
        return;
    }
    let b_row = row0 / rows_per_batch * b_rows * units;
    // The low word of the table of twice the e2m1 magnitudes (0, 0.5, 1,
    // 1.5, 2, 3, 4, 6) for `byte_perm` (integer path).
    const TABLE_LO: u32 = 0x0302_0100;
    // The integer path's block sums are 4 * sum(a b).
    let sum_unit = if target_at_least(Target::Sm100a) {
        1.0f32
    } else {
        0.25f32
    };
    let stride = 32 * KSPLIT;
    let mut u = part * 32 + lane;
    // A's units and scales for the lane's first step: loaded before waiting
    // for the previous kernel when that kernel did not write a, so the loads
    // overlap its tail.
    let mut aq = [u32x4::new(0, 0, 0, 0); ROWS];
    let mut sq = [E4m3x2::from_bits(0); ROWS];
    if a_ready && u < units {
        load_a_unit::<ROWS>(a, sfa, row0, units, u, &mut aq, &mut sq);
    }
    grid_dependency_wait();
    if !a_ready && u < units {
        load_a_unit::<ROWS>(a, sfa, row0, units, u, &mut aq, &mut sq);
    }
    // b (and c) only after the wait: the previous kernel may write them.
    let mut bq = u32x4::new(0, 0, 0, 0);
    let mut sbq = E4m3x2::from_bits(0);
    if u < units {
        bq = load(b, (b_row + u) as usize, Cache::NonCoherent);
        sbq = load(sfb, (b_row + u) as usize, Cache::NonCoherent);
    }
    let mut acc = [0.0f32; ROWS];
    while u < units {
        // Always TABLE_LO (u < 2^31), but a per-lane run-time value: ptxas
        // then keeps it in one register instead of copying the constant in
        // before every byte_perm (10% of the loop's instructions).
        let table_lo = TABLE_LO | (u >> 31);
        let sb = sbq.to_f16x2();
        let sb0 = sb.lo().to_f32() * sum_unit;
        let sb1 = sb.hi().to_f32() * sum_unit;
        let b_words = [bq.x, bq.y, bq.z, bq.w];
        // Blackwell: the vector's 32 values as 16 exact f16 pairs.
        let mut bh = [f16x2::from_bits(0); 16];
        // Hopper: the vector's values as signed bytes 2b and 4b, four per word.
        let mut b2 = [0u32; 8];
        let mut b4 = [0u32; 8];
        if target_at_least(Target::Sm100a) {
            #[unroll]
            for w in 0..4 {
                let pairs = decode_e2m1x8(b_words[w]);
                #[unroll]
                for j in 0..4 {
                    bh[4 * w + j] = pairs[j];
                }
            }
        } else {
            #[unroll]
            for q in 0..8 {
                let codes = b_words[q / 2] >> (16 * (q % 2));
                b2[q] = e2m1_signed_doubled(table_lo, codes);
                b4[q] = (b2[q] << 1) & 0xFEFE_FEFE;
            }
        }
        #[unroll]
        for r in 0..ROWS {
            let sa = sq[r].to_f16x2();
            let a_words = [aq[r].x, aq[r].y, aq[r].z, aq[r].w];
            let mut sums = [0.0f32; 2];
            #[unroll]
            for block in 0..2 {
                if target_at_least(Target::Sm100a) {
                    // Products of e2m1 values are multiples of 1/4 up to 36;
                    // 8 of them per half sum exactly in f16.
                    let mut h = f16x2::from_bits(0);
                    #[unroll]
                    for w in 2 * block..2 * block + 2 {
                        let pairs = decode_e2m1x8(a_words[w]);
                        #[unroll]
                        for j in 0..4 {
                            h = hfma2(pairs[j], bh[4 * w + j], h);
                        }
                    }
                    sums[block] = h.lo().to_f32() + h.hi().to_f32();
                } else {
                    let mut p = 0i32;
                    let mut t = 0i32;
                    #[unroll]
                    for q in 4 * block..4 * block + 4 {
                        let codes = a_words[q / 2] >> (16 * (q % 2));
                        let magnitudes = codes & 0x7777;
                        p = dp4a_u8_s8(e2m1_doubled(table_lo, codes), b4[q], p);
                        t = dp4a_u8_s8(e2m1_doubled(table_lo, magnitudes), b2[q], t);
                    }
                    sums[block] = (p - t) as f32;
                }
            }
            acc[r] = sums[0].mul_add(sa.lo().to_f32() * sb0, acc[r]);
            acc[r] = sums[1].mul_add(sa.hi().to_f32() * sb1, acc[r]);
        }
        u += stride;
        if u < units {
            load_a_unit::<ROWS>(a, sfa, row0, units, u, &mut aq, &mut sq);
            bq = load(b, (b_row + u) as usize, Cache::NonCoherent);
            sbq = load(sfb, (b_row + u) as usize, Cache::NonCoherent);
        }
    }
    let row = transposing_warp_sum(&mut acc, lane);
    let writer = (lane & (32 / ROWS as u32 - 1)) == 0;
    if KSPLIT == 1 {
        if writer {
            c[(row0 + row) as usize] = f16::from_f32(acc[0] * alpha);
        }
    } else {
        store_split_sums::<ROWS, KSPLIT>(c, acc[0], writer, warp * ROWS as u32 + row, groups_per_block, alpha);
    }
}

/// The transposing reduction of a warp's `ROWS` row sums: at each step a
/// lane keeps half of its row sums and swaps the other half with the lane
/// `offset` away, so ROWS sums take log2(ROWS) + (5 - log2(ROWS)) steps
/// instead of 5 * ROWS shuffles. Returns the row whose whole sum the lane
/// then holds in `acc[0]`.
/// Unit `u` of A's rows `row0 ..` (`ROWS` of them, `units` a row) and its
/// scale pairs into `aq` and `sq`, streamed past the caches (each is read
/// once).
#[device]
fn load_a_unit<const ROWS: usize>(
    a: &[u32x4],
    sfa: &[E4m3x2],
    row0: u32,
    units: u32,
    u: u32,
    aq: &mut [u32x4; ROWS],
    sq: &mut [E4m3x2; ROWS],
) {
    #[unroll]
    for r in 0..ROWS {
        let i = ((row0 + r as u32) * units + u) as usize;
        aq[r] = load(a, i, Cache::NoAllocate);
        sq[r] = load(sfa, i, Cache::NoAllocate);
    }
}

#[device]
fn transposing_warp_sum<const ROWS: usize>(acc: &mut [f32; ROWS], lane: u32) -> u32 {
    let mut row = 0u32;
    #[unroll]
    for step in 0..5 {
        let offset = 16u32 >> step;
        let half = ROWS >> (step + 1);
        if half >= 1 {
            let upper = (lane & offset) != 0;
            if upper {
                row += half as u32;
            }
            #[unroll]
            for i in 0..half {
                let lo = acc[i];
                let hi = acc[i + half];
                let received = shfl_xor(if upper { lo } else { hi }, offset);
                acc[i] = if upper { hi + received } else { lo + received };
            }
        } else {
            acc[0] += shfl_xor(acc[0], offset);
        }
    }
    row
}

/// K split over the `KSPLIT` warps of each of the block's `groups` row
/// groups: the `writer` lanes leave their `sum` at `slot` (warp * ROWS +
/// row) in shared memory, then one thread per row of the block adds the
/// parts in order and stores the sum times `alpha` to C. Every thread of
/// the block calls it.
#[device]
fn store_split_sums<const ROWS: usize, const KSPLIT: u32>(
    c: &mut [f16],
    sum: f32,
    writer: bool,
    slot: u32,
    groups: u32,
    alpha: f32,
) {
    let partial = shared_array::<f32, 64>();
    if writer {
        partial[slot] = sum;
    }
    sync_threads();
    let t = thread_idx_x();
    if t < groups * ROWS as u32 {
        let g = t / ROWS as u32;
        let r = t % ROWS as u32;
        let mut total = 0.0f32;
        #[unroll]
        for p in 0..KSPLIT {
            total += partial[(g * KSPLIT + p) * ROWS as u32 + r];
        }
        c[((block_idx_x() * groups + g) * ROWS as u32 + r) as usize] = f16::from_f32(total * alpha);
    }
}

/// An NVFP4 tensor on the device, in the task's layout, viewed as the GEMV
/// reads it: 16-byte units of 32 values and their scale pairs.
#[derive(Debug)]
pub struct DeviceNvfp4 {
    /// Rows per batch.
    pub rows: usize,
    /// Elements per row.
    pub k: usize,
    /// Batches (L).
    pub batches: usize,
    /// `[L][rows][k/32]` units of 16 bytes.
    pub data: DeviceBuffer<u32x4>,
    /// `[L][rows][k/32]` pairs of e4m3 scales.
    pub scales: DeviceBuffer<E4m3x2>,
}

/// An NVFP4 tensor in device memory as the GEMV reads it: a
/// [`DeviceNvfp4`] (`Nvfp4View::from(&t)`), or the caller's own memory
/// ([`Nvfp4View::new`], for instance cudarc `CudaSlice<u8>`s), without a
/// copy.
#[derive(Clone, Copy, Debug)]
pub struct Nvfp4View<'a> {
    /// Rows per batch.
    pub rows: usize,
    /// Elements per row.
    pub k: usize,
    /// Batches (L).
    pub batches: usize,
    data: DeviceView<'a, u32x4>,
    scales: DeviceView<'a, E4m3x2>,
    constant: bool,
}

impl<'a> Nvfp4View<'a> {
    /// The caller's tensor of `batches` x `rows` x `k` (K a positive
    /// multiple of 32): `data` the packed e2m1 bytes `[L][rows][k/2]` (the
    /// even element in the low nibble, as PyTorch's `float4_e2m1fn_x2`),
    /// `scales` the e4m3 bytes `[L][rows][k/16]`. `Err` unless the lengths
    /// match; the views must start at multiples of 16 (`data`) and 2
    /// (`scales`) bytes, which the launch checks.
    pub fn new(
        rows: usize,
        k: usize,
        batches: usize,
        data: impl Into<DeviceView<'a, u8>>,
        scales: impl Into<DeviceView<'a, u8>>,
    ) -> Result<Nvfp4View<'a>, Error> {
        let (data, scales) = (data.into(), scales.into());
        if k == 0 || !k.is_multiple_of(32) {
            return Err(Error::Shape(format!("K = {k} must be a positive multiple of 32")));
        }
        let elements = rows
            .checked_mul(k)
            .and_then(|n| n.checked_mul(batches))
            .ok_or_else(|| Error::Shape(format!("[{rows}, {k}, {batches}] NVFP4 is too large")))?;
        for (what, len, want) in [
            ("data", data.len(), elements / 2),
            ("scale", scales.len(), elements / 16),
        ] {
            if len != want {
                return Err(Error::Shape(format!(
                    "[{rows}, {k}, {batches}] NVFP4 needs {want} {what} bytes, the view has {len}"
                )));
            }
        }
        Ok(Nvfp4View {
            rows,
            k,
            batches,
            data: data.cast()?,
            scales: scales.cast()?,
            constant: false,
        })
    }

    /// Promises that no kernel writes this tensor while GEMVs read it (a
    /// weight matrix): the GEMV may then load it before the kernel before
    /// it on the stream has finished (programmatic dependent launch). Without
    /// it, the caller's memory is read only after that kernel completes,
    /// since a kernel launched outside this crate may have written it.
    pub fn assume_constant(self) -> Nvfp4View<'a> {
        Nvfp4View { constant: true, ..self }
    }
}

impl<'a> From<&'a DeviceNvfp4> for Nvfp4View<'a> {
    fn from(t: &'a DeviceNvfp4) -> Nvfp4View<'a> {
        Nvfp4View {
            rows: t.rows,
            k: t.k,
            batches: t.batches,
            data: t.data.view(),
            scales: t.scales.view(),
            constant: false,
        }
    }
}

/// Reinterprets plain bytes as `U` elements (same bytes, no conversion).
fn bytes_as<T: DeviceCopy, U: DeviceCopy + Default>(src: &[T]) -> Vec<U> {
    let bytes = std::mem::size_of_val(src);
    let mut out = vec![U::default(); bytes / std::mem::size_of::<U>()];
    // SAFETY: both are plain data (`DeviceCopy`); `out` holds exactly
    // `bytes` bytes, as the callers check.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().cast::<u8>(), out.as_mut_ptr().cast::<u8>(), bytes) };
    out
}

impl DeviceNvfp4 {
    /// Uploads a host tensor (K must be a multiple of 32).
    pub fn upload(device: &Device, t: &Nvfp4Tensor) -> Result<DeviceNvfp4, Error> {
        if !t.k.is_multiple_of(32) {
            return Err(Error::Shape(format!("K = {} is not a multiple of 32", t.k)));
        }
        Ok(DeviceNvfp4 {
            rows: t.rows,
            k: t.k,
            batches: t.batches,
            data: device.upload(&bytes_as::<Fp4x2, u32x4>(&t.data))?,
            scales: device.upload(&bytes_as::<E4m3, E4m3x2>(&t.scales))?,
        })
    }
}

/// The kernel variant and launch shape `gemv` picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemvConfig {
    /// Rows per warp (4).
    pub rows: usize,
    /// Warps splitting K for one group of rows (1, 2 or 8).
    pub ksplit: u32,
    /// Warps per block: a multiple of `ksplit`, at most 8.
    pub warps: u32,
}

impl GemvConfig {
    /// The variant for rows of `k` elements.
    pub fn choose(k: usize) -> GemvConfig {
        // Measured on the H100 (`bench --all-variants`): long rows are split
        // across the 8 warps of a block; shorter ones keep a warp per group
        // of rows in small blocks.
        if k / 32 >= 384 {
            GemvConfig {
                rows: 4,
                ksplit: 8,
                warps: 8,
            }
        } else {
            GemvConfig {
                rows: 4,
                ksplit: 1,
                warps: 4,
            }
        }
    }
}

/// `c = a x b` for every batch: a `[M, K, L]`, b the vector `[b_rows, K, L]`
/// (row 0), c `[L][M]` f16, launched on `device`'s stream (asynchronous, no
/// synchronisation). The operands are [`DeviceNvfp4`]s or [`Nvfp4View`]s of
/// the caller's memory; c a `&mut DeviceBuffer<f16>` or any
/// [`DeviceViewMut`] (a cudarc `&mut CudaSlice<f16>`). Validates every shape
/// and length.
pub fn gemv<'a, 'b, 'c>(
    device: &Device,
    a: impl Into<Nvfp4View<'a>>,
    b: impl Into<Nvfp4View<'b>>,
    c: impl Into<DeviceViewMut<'c, f16>>,
) -> Result<(), Error> {
    let a = a.into();
    gemv_with(device, GemvConfig::choose(a.k), a, b, c)
}

/// [`gemv`] with an explicit kernel variant.
pub fn gemv_with<'a, 'b, 'c>(
    device: &Device,
    cfg: GemvConfig,
    a: impl Into<Nvfp4View<'a>>,
    b: impl Into<Nvfp4View<'b>>,
    c: impl Into<DeviceViewMut<'c, f16>>,
) -> Result<(), Error> {
    gemv_scaled_with(device, cfg, 1.0, a, b, c)
}

/// [`gemv_with`] with every result multiplied by `alpha` before its f16
/// rounding (in the kernel's epilogue: the products of two NVFP4 operands
/// with global scales, say).
pub fn gemv_scaled_with<'a, 'b, 'c>(
    device: &Device,
    cfg: GemvConfig,
    alpha: f32,
    a: impl Into<Nvfp4View<'a>>,
    b: impl Into<Nvfp4View<'b>>,
    c: impl Into<DeviceViewMut<'c, f16>>,
) -> Result<(), Error> {
    let (a, b, mut c) = (a.into(), b.into(), c.into());
    let (m, k, l) = (a.rows, a.k, a.batches);
    if b.k != k || b.batches != l {
        return Err(Error::Shape(format!(
            "a is [{m}, {k}, {l}] but b is [{}, {}, {}]: K and L must match",
            b.rows, b.k, b.batches
        )));
    }
    if k == 0 || k % 32 != 0 {
        return Err(Error::Shape(format!("K = {k} must be a positive multiple of 32")));
    }
    if cfg.rows != 4 || !matches!(cfg.ksplit, 1 | 2 | 8) || cfg.warps > 8 || !cfg.warps.is_multiple_of(cfg.ksplit) {
        return Err(Error::Shape(format!("no GEMV variant {cfg:?}")));
    }
    if m == 0 || m % cfg.rows != 0 {
        return Err(Error::Shape(format!(
            "M = {m} must be a positive multiple of {}",
            cfg.rows
        )));
    }
    let units = k / 32;
    for (name, t) in [("a", a), ("b", b)] {
        let want = t.rows * t.batches * units;
        if t.data.len() != want || t.scales.len() != want {
            return Err(Error::Shape(format!(
                "{name} holds {} units and {} scale pairs; [{}, {k}, {l}] needs {want} of each",
                t.data.len(),
                t.scales.len(),
                t.rows
            )));
        }
    }
    if c.len() != m * l {
        return Err(Error::Shape(format!(
            "c holds {} values; [{m}, 1, {l}] needs {}",
            c.len(),
            m * l
        )));
    }
    if u32::try_from(m * l * units).is_err() || u32::try_from(b.rows * l * units).is_err() || units >= 1 << 31 {
        return Err(Error::Shape(
            "the problem is too large for the kernel's 32-bit indices".into(),
        ));
    }
    // A block holds `warps / ksplit` groups of rows; with K split the groups
    // must fill the blocks, otherwise the last block's spare warps return.
    let groups = (m * l / cfg.rows) as u32;
    let groups_per_block = cfg.warps / cfg.ksplit;
    if cfg.ksplit > 1 && !groups.is_multiple_of(groups_per_block) {
        return Err(Error::Shape(format!(
            "{groups} row groups do not fill blocks of {groups_per_block}"
        )));
    }
    let launch = LaunchConfig::linear(groups.div_ceil(groups_per_block), 32 * cfg.warps);
    let (mm, br, un) = (m as u32, b.rows as u32, units as u32);
    // The kernel may read a before waiting for the previous kernel when that
    // kernel was not given a to write.
    let a_ready =
        a.constant || (!device.written_by_running_kernel(a.data) && !device.written_by_running_kernel(a.scales));
    macro_rules! launch {
        ($rows:literal, $ksplit:literal) => {
            gemv_nvfp4::Kernel::<$rows, $ksplit>::launch(
                device,
                launch,
                a.data,
                a.scales,
                b.data,
                b.scales,
                c.reborrow(),
                mm,
                br,
                un,
                a_ready,
                alpha,
            )
        };
    }
    // SAFETY: lengths were checked above: every row the grid touches is
    // inside a (row < M * L), every unit index is < units, b's row 0 of each
    // batch exists, and c has M * L values.
    unsafe {
        match cfg.ksplit {
            1 => launch!(4, 1)?,
            2 => launch!(4, 2)?,
            _ => launch!(4, 8)?,
        }
    }
    Ok(())
}

/// The task's GEMV test shapes (M, K, L).
pub const TEST_SHAPES: [(usize, usize, usize); 9] = [
    (128, 256, 1),
    (128, 1536, 1),
    (128, 3072, 1),
    (256, 7168, 1),
    (2432, 4608, 2),
    (384, 7168, 2),
    (512, 512, 2),
    (512, 4096, 2),
    (512, 1536, 2),
];

/// The task's GEMV benchmark shapes (M, K, L).
pub const BENCH_SHAPES: [(usize, usize, usize); 3] = [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4)];

/// Runs one GEMV on random inputs (output poisoned with NaN first) and
/// checks every element against the f64 reference with the task's
/// tolerance (rtol = atol = 1e-3).
pub fn check_gemv(
    device: &Device,
    rng: &mut crate::rng::Rng,
    (m, k, l): (usize, usize, usize),
    kind: crate::nvfp4::Inputs,
    cfg: Option<GemvConfig>,
) -> Result<(), Error> {
    let (a, b) = crate::nvfp4::gemv_inputs(rng, m, k, l, kind)?;
    let want = crate::nvfp4::gemv_reference(&a, &b);
    let (da, db) = (DeviceNvfp4::upload(device, &a)?, DeviceNvfp4::upload(device, &b)?);
    let mut dc = device.upload(&vec![f16::NAN; m * l])?;
    gemv_with(device, cfg.unwrap_or(GemvConfig::choose(k)), &da, &db, &mut dc)?;
    let got = device.download(&dc)?;
    crate::nvfp4::check_close(&got, &want, 1e-3, 1e-3)
        .map_err(|e| Error::Mismatch(format!("GEMV M={m} K={k} L={l} ({kind:?} inputs, {cfg:?}): {e}")))
}
