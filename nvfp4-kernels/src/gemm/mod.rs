//! Block-scaled NVFP4 GEMM: `C[l][m][n] = f16(sum_k A(l, m, k) * B(l, n, k))`
//! with A `[M, K, L]` and B `[N, K, L]` K-major NVFP4 and their e4m3 scales
//! in the blocked 128x4 layout the tensor cores read (the task's
//! `sfa_permuted`/`sfb_permuted`), consumed directly.
//!
//! Two kernels, one host API: [`gemm`] picks by compute capability.
//! - Blackwell (compute capability 10.0): [`gemm_nvfp4`] (sm_100a,
//!   `tcgen05` block-scaled MMAs on FP4). Verified by ptxas, its SASS and
//!   the emulator; no Blackwell GPU was available to run it.
//! - Hopper (compute capability 9.0): [`gemm_nvfp4_sm90`] (sm_90a, FP4
//!   decoded exactly to f16, `wgmma` with f32 accumulation, K split over
//!   blocks whose f32 partials [`gemm_sm90_reduce`] sums in a fixed order).

mod bytes;
mod kernel;
mod launch;
pub use bytes::{BlockedScales, E4m3Bytes, Fp4Bytes};
pub use kernel::{GemmKernel, Sm90Reduction, sm90_kernel, sm90_persistent_grid, sm90_reduction, sm90_tiling};
use launch::Sm90A;
pub mod prearrange;
mod sm100;
pub mod sm90;

pub use prearrange::{decode_prearranged, prearrange_sm90, prearrange_weights_sm90, prearranged_words, unarrange_sm90};
pub use sm90::{gemm_nvfp4_sm90, gemm_nvfp4_sm90_stream, gemm_sm90_decode_a, gemm_sm90_reduce};
pub use sm100::gemm_nvfp4;

use crate::Error;
use crate::nvfp4::{Nvfp4Tensor, blocked_scale_len};
use crate::quantize::Activations;
use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{DeviceView, DeviceViewMut, TileMap2d};

/// Rows of A per block of either kernel.
pub const BM: usize = 128;
/// K per pipeline stage of the sm_100a kernel: 4 MMAs of K = 64; 128 bytes
/// per row (one 128-byte swizzle atom wide).
pub const BK: usize = 256;
/// Shared-memory pipeline depth of the sm_100a kernel (its `STAGES`).
pub const STAGES: u32 = 4;

/// Dynamic shared memory of an sm_100a block with `bn` columns.
pub fn shared_bytes(bn: usize) -> u32 {
    (STAGES as usize * (BM * 128 + bn * 128 + 2048 + bn / 128 * 2048)) as u32
}

/// The tile a tensor map serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapTile {
    /// sm_100a: boxes of 128 bytes x `rows` rows, 128-byte swizzle.
    Sm100 { rows: u32 },
    /// sm_90a A: boxes of 64 bytes x [`sm90::DECODE_ROWS`] rows, 64-byte
    /// swizzle, as the decode kernel reads them (B is read pre-arranged,
    /// without a map).
    Sm90A,
}

impl MapTile {
    /// Rows the tensor's rows must be a multiple of for this tile.
    fn rows(self) -> usize {
        match self {
            MapTile::Sm100 { rows } => rows as usize,
            MapTile::Sm90A => BM,
        }
    }

    fn map(self, (rows, k, batches): (usize, usize, usize)) -> TileMap2d {
        let (box_bytes, box_rows, swizzle) = match self {
            MapTile::Sm100 { rows } => (128, rows, Swizzle::B128),
            MapTile::Sm90A => (64, sm90::DECODE_ROWS, Swizzle::B64),
        };
        TileMap2d {
            row_bytes: (k / 2) as u64,
            rows: (rows * batches) as u64,
            row_stride: (k / 2) as u64,
            box_bytes,
            box_rows,
            swizzle,
        }
    }
}

/// The tensor maps of one operand, by tile: at most one per kind of tile
/// the device's kernel reads.
type Maps = [Option<(MapTile, TensorMap)>; 2];

/// The tensor maps over `data` (a `[L][rows][k/2]` operand) that the
/// device's GEMM kernel can read it through, as A or as B.
fn tensor_maps(device: &Device, data: DeviceView<'_, Fp4x2>, shape: (usize, usize, usize)) -> Result<Maps, Error> {
    let tiles: &[MapTile] = match device.compute_capability() {
        (10, 0) => &[MapTile::Sm100 { rows: 128 }, MapTile::Sm100 { rows: 256 }],
        (9, 0) => &[MapTile::Sm90A],
        _ => &[],
    };
    let mut maps = [None; 2];
    for (slot, &tile) in maps.iter_mut().zip(tiles) {
        if shape.0.is_multiple_of(tile.rows()) {
            *slot = Some((tile, device.tensor_map_2d(data, tile.map(shape))?));
        }
    }
    Ok(maps)
}

/// Checks the extents of a GEMM operand.
fn check_operand_shape(rows: usize, k: usize, batches: usize) -> Result<(), Error> {
    if rows == 0 || batches == 0 || !rows.is_multiple_of(BM) || k == 0 || !k.is_multiple_of(BK) {
        return Err(Error::Shape(format!(
            "a GEMM operand needs rows a positive multiple of {BM} and K a positive multiple of {BK}; got [{rows}, {k}, {batches}]"
        )));
    }
    Ok(())
}

/// An NVFP4 GEMM operand on the device: data `[L][rows][K/2]` bytes, its
/// scales in the blocked layout, and the tensor maps over the data that the
/// device's GEMM kernel reads.
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
    maps: Maps,
    /// The operand pre-arranged as the sm_90a kernel's weights (B), made by
    /// [`DeviceGemmOperand::upload_weights`] on a compute capability 9.0
    /// device.
    prearranged: Option<DeviceBuffer<u32>>,
}

impl DeviceGemmOperand {
    /// [`DeviceGemmOperand::upload`] for an operand used as the weights (B):
    /// on a compute capability 9.0 device also pre-arranged once for the
    /// sm_90a kernel ([`prearrange`]; the operand then holds its data
    /// twice), so that no call re-arranges it. Elsewhere the same as
    /// `upload`: the sm_100a kernel reads the plain layout.
    pub fn upload_weights(device: &Device, t: &Nvfp4Tensor) -> Result<DeviceGemmOperand, Error> {
        let mut operand = DeviceGemmOperand::upload(device, t)?;
        if device.compute_capability() == (9, 0) {
            operand.prearranged = Some(device.upload(&prearrange_sm90(t)?)?);
        }
        Ok(operand)
    }

    /// Uploads `t` (rows a multiple of 128, K a multiple of 256) with the
    /// tensor maps the device's kernel can use it through, as A or as B.
    pub fn upload(device: &Device, t: &Nvfp4Tensor) -> Result<DeviceGemmOperand, Error> {
        check_operand_shape(t.rows, t.k, t.batches)?;
        let data = device.upload(&t.data)?;
        let scales = device.upload(&t.blocked_scales())?;
        DeviceGemmOperand::from_buffers(device, (t.rows, t.k, t.batches), data, scales)
    }

    /// An operand of `(rows, k, batches)` in buffers already on the device
    /// (data `[L][rows][k/2]`, scales in the blocked layout), with its tensor
    /// maps.
    pub fn from_buffers(
        device: &Device,
        (rows, k, batches): (usize, usize, usize),
        data: DeviceBuffer<Fp4x2>,
        scales: DeviceBuffer<E4m3>,
    ) -> Result<DeviceGemmOperand, Error> {
        let view = GemmOperand::new(device, rows, k, batches, data.view(), BlockedScales(scales.view()))?;
        let maps = view.maps;
        Ok(DeviceGemmOperand {
            rows,
            k,
            batches,
            data,
            scales,
            maps,
            prearranged: None,
        })
    }
}

/// A GEMM operand in device memory: a [`DeviceGemmOperand`]
/// (`GemmOperand::from(&operand)`) or the caller's own memory
/// ([`GemmOperand::new`]), with the tensor maps the device's kernel reads it
/// through.
#[derive(Clone, Copy, Debug)]
pub struct GemmOperand<'a> {
    /// Rows per batch.
    pub rows: usize,
    /// Elements per row.
    pub k: usize,
    /// Batches (L).
    pub batches: usize,
    data: DeviceView<'a, Fp4x2>,
    scales: DeviceView<'a, E4m3>,
    maps: Maps,
    prearranged: Option<DeviceView<'a, u32>>,
}

impl<'a> GemmOperand<'a> {
    /// The caller's operand of `batches` x `rows` x `k` (rows a positive
    /// multiple of 128, K of 256): `data` the packed e2m1 bytes
    /// `[L][rows][k/2]` (even element in the low nibble), starting at a
    /// multiple of 16 bytes; `scales` the e4m3 bytes in the blocked 128x4
    /// layout the tensor cores read, said so by [`BlockedScales`]
    /// (`BlockedScales(&scales)`; plain scales convert with
    /// [`crate::nvfp4::block_scales`]).
    /// Builds the tensor maps now: the memory must outlive every launch
    /// that uses them.
    pub fn new<T: Fp4Bytes, S: E4m3Bytes>(
        device: &Device,
        rows: usize,
        k: usize,
        batches: usize,
        data: impl Into<DeviceView<'a, T>>,
        scales: BlockedScales<impl Into<DeviceView<'a, S>>>,
    ) -> Result<GemmOperand<'a>, Error> {
        check_operand_shape(rows, k, batches)?;
        let data: DeviceView<'a, Fp4x2> = data.into().cast()?;
        let scales: DeviceView<'a, E4m3> = scales.0.into().cast()?;
        let data_len = rows.checked_mul(k / 2).and_then(|n| n.checked_mul(batches));
        let scales_len = blocked_scale_len(rows, k / 16, batches);
        if data_len != Some(data.len()) || scales.len() != scales_len {
            return Err(Error::Shape(format!(
                "a [{rows}, {k}, {batches}] GEMM operand needs {} data bytes and {scales_len} blocked scale bytes; the views have {} and {}",
                data_len.unwrap_or(usize::MAX),
                data.len(),
                scales.len()
            )));
        }
        let maps = tensor_maps(device, data, (rows, k, batches))?;
        Ok(GemmOperand {
            rows,
            k,
            batches,
            data,
            scales,
            maps,
            prearranged: None,
        })
    }

    /// This operand with `words`, its data and scales pre-arranged for the
    /// sm_90a kernel as [`prearrange_weights`] (or, on the host,
    /// [`prearrange_sm90`]) makes them: the kernel then reads `words` when
    /// the operand is B, and no call re-arranges it.
    pub fn with_prearranged(self, words: impl Into<DeviceView<'a, u32>>) -> Result<GemmOperand<'a>, Error> {
        let words = words.into();
        let want = prearranged_words(self.rows, self.k, self.batches);
        if words.len() != want {
            return Err(Error::Shape(format!(
                "[{}, {}, {}] pre-arranged weights are {want} words; the view has {}",
                self.rows,
                self.k,
                self.batches,
                words.len()
            )));
        }
        Ok(GemmOperand {
            prearranged: Some(words),
            ..self
        })
    }

    fn map(&self, tile: MapTile, role: &str) -> Result<TensorMap, Error> {
        if !self.rows.is_multiple_of(tile.rows()) {
            return Err(Error::Shape(format!(
                "{role} ({} rows) cannot be used by this kernel: it needs rows a multiple of {}",
                self.rows,
                tile.rows()
            )));
        }
        self.maps.iter().flatten().find(|(t, _)| *t == tile).map(|(_, m)| *m).ok_or_else(|| {
            Error::Unsupported(format!(
                "{role}'s tensor maps were made for a device of another kind: make the operand with the device it is launched on (compute capability 9.0 or 10.0, or an sm_90a or sm_100a emulator)"
            ))
        })
    }
}

impl<'a> From<&'a DeviceGemmOperand> for GemmOperand<'a> {
    fn from(o: &'a DeviceGemmOperand) -> GemmOperand<'a> {
        GemmOperand {
            rows: o.rows,
            k: o.k,
            batches: o.batches,
            data: o.data.view(),
            scales: o.scales.view(),
            maps: o.maps,
            prearranged: o.prearranged.as_ref().map(|w| w.view()),
        }
    }
}

/// Pre-arranges the weights `b` on the device into `words`
/// ([`prearranged_words`] of them) for the sm_90a kernel, as
/// [`prearrange_sm90`] does on the host; then
/// `b.with_prearranged(words)` is an operand no call re-arranges. On the
/// stream of `device` (compute capability 9.0 or 10.0, or the emulator).
pub fn prearrange_weights<'a, 'w>(
    device: &Device,
    b: impl Into<GemmOperand<'a>>,
    words: impl Into<DeviceViewMut<'w, u32>>,
) -> Result<(), Error> {
    let (b, mut words) = (b.into(), words.into());
    let count = prearranged_words(b.rows, b.k, b.batches);
    if words.len() != count {
        return Err(Error::Shape(format!(
            "[{}, {}, {}] pre-arranged weights are {count} words; the view has {}",
            b.rows,
            b.k,
            b.batches,
            words.len()
        )));
    }
    if u32::try_from(count).is_err() {
        return Err(Error::Shape("the weights are too large for 32-bit indices".into()));
    }
    Ok(launch_prearrange(device, &b, words.reborrow())?)
}

/// Launches [`prearrange_weights_sm90`] over `b` into `words`, whose length
/// is [`prearranged_words`] of b's shape (below 2^32).
fn launch_prearrange(device: &Device, b: &GemmOperand<'_>, mut words: DeviceViewMut<'_, u32>) -> nvfp4_dsl::Result<()> {
    let count = words.len() as u32;
    let data = b.data.cast::<u32>()?;
    let scales = b.scales.cast::<u16>()?;
    // SAFETY: thread i < count writes word i of `words` (count long) and
    // reads its rows' words of data ([rows][k/2] bytes: rows a multiple of
    // 128, K of 256, checked by GemmOperand) and their blocked scale pairs.
    unsafe {
        prearrange_weights_sm90::Kernel::launch(
            device,
            LaunchConfig::linear(count.div_ceil(256), 256),
            data,
            scales,
            words.reborrow(),
            b.k as u32,
            count,
        )
    }
}

/// `c = a x b^T` per batch: a `[M, K, L]`, b `[N, K, L]`, c `[L][M][N]`
/// f16 (its first `L * M * N` values; any beyond are left alone), with the
/// kernel [`GemmKernel::for_device`] picks, launched on `device`'s stream.
/// The operands are [`DeviceGemmOperand`]s or [`GemmOperand`]s of the
/// caller's memory; c a `&mut DeviceBuffer<f16>` or any [`DeviceViewMut`].
/// Needs a compute capability 9.0 or 10.0 device (or the emulator of sm_90a
/// or sm_100a).
///
/// On sm_90a B is read pre-arranged ([`prearrange`]): give weights made by
/// [`DeviceGemmOperand::upload_weights`] or [`GemmOperand::with_prearranged`],
/// or the call pre-arranges B into its scratch memory first (one more
/// kernel, reading and writing B once). The call's scratch memory (A
/// decoded to f16, `2 M K L` bytes, and with K split through global memory
/// the f32 partial sums) is kept
/// for the next call on the same stream ([`Device::with_workspace`]), so
/// that a call allocates nothing once warm; [`Device::free_workspaces`]
/// returns it.
pub fn gemm<'a, 'b, 'c>(
    device: &Device,
    a: impl Into<GemmOperand<'a>>,
    b: impl Into<GemmOperand<'b>>,
    c: impl Into<DeviceViewMut<'c, f16>>,
) -> Result<(), Error> {
    let (a, b) = (a.into(), b.into());
    let Some(kernel) = GemmKernel::for_device(device, a.rows, b.rows, a.k, a.batches) else {
        let (major, minor) = device.compute_capability();
        return Err(Error::Unsupported(format!(
            "the block-scaled NVFP4 GEMM runs on Hopper (sm_90a, compute capability 9.0) and Blackwell (sm_100a, 10.0) tensor cores; {} is {major}.{minor} (an emulator runs it as sm_90a or sm_100a)",
            device.describe()
        )));
    };
    gemm_with(device, a, b, c, kernel)
}

/// [`gemm`] with a chosen kernel and tiling (for tests and tuning).
pub fn gemm_with<'a, 'b, 'c>(
    device: &Device,
    a: impl Into<GemmOperand<'a>>,
    b: impl Into<GemmOperand<'b>>,
    c: impl Into<DeviceViewMut<'c, f16>>,
    kernel: GemmKernel,
) -> Result<(), Error> {
    gemm_scaled_with(device, a, b, c, kernel, 1.0)
}

/// [`gemm_with`] with every result multiplied by `alpha` before its f16
/// rounding, in the kernel's epilogue.
pub fn gemm_scaled_with<'a, 'b, 'c>(
    device: &Device,
    a: impl Into<GemmOperand<'a>>,
    b: impl Into<GemmOperand<'b>>,
    c: impl Into<DeviceViewMut<'c, f16>>,
    kernel: GemmKernel,
    alpha: f32,
) -> Result<(), Error> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    if a.k != b.k || a.batches != b.batches {
        return Err(Error::Shape(format!(
            "a is [{}, {}, {}], b is [{}, {}, {}]: K and L must match",
            a.rows, a.k, a.batches, b.rows, b.k, b.batches
        )));
    }
    let (m, n, l) = (a.rows, b.rows, a.batches);
    if c.len() < m * n * l {
        return Err(Error::Shape(format!(
            "c holds {} values; [{m}, {n}, {l}] needs {}",
            c.len(),
            m * n * l
        )));
    }
    if u32::try_from(m * l).is_err() || u32::try_from(n * l).is_err() || i32::try_from(m * n * l).is_err() {
        return Err(Error::Shape("the problem is too large for 32-bit indices".into()));
    }
    match kernel {
        GemmKernel::Sm100 { bn } => launch::sm100(device, &a, &b, c, bn, alpha),
        GemmKernel::Sm90 { .. } | GemmKernel::Sm90Stream { .. } => {
            launch::sm90(device, Sm90A::Operand(&a), &b, c, kernel, alpha)
        }
    }
}

/// [`gemm_scaled_with`] with an sm_90a tiling for activations quantized on
/// the fly (the linear layer on Hopper): `rows` rows of `x` (`[rows][K]`),
/// quantized with `input_scale` as [`crate::quantize`] quantizes them,
/// straight into the kernel's A (one kernel instead of the quantization and
/// A's decode: the same A, the same C), times `b`; `rows_out` rows of C
/// (a multiple of 128, the rows past `rows` from zeros).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_activations_sm90(
    device: &Device,
    x: Activations<'_>,
    (rows, rows_out): (usize, usize),
    input_scale: f32,
    b: GemmOperand<'_>,
    c: DeviceViewMut<'_, f16>,
    kernel: GemmKernel,
    alpha: f32,
) -> Result<(), Error> {
    let (n, k) = (b.rows, b.k);
    if b.batches != 1 || c.len() < rows_out * n {
        return Err(Error::Shape(format!(
            "c holds {} values; [{rows_out}, {n}] with one batch of b needs {}",
            c.len(),
            rows_out * n
        )));
    }
    if u32::try_from(rows_out).is_err() || i32::try_from(rows_out * n).is_err() || i32::try_from(rows_out * k).is_err()
    {
        return Err(Error::Shape("the problem is too large for 32-bit indices".into()));
    }
    let a = Sm90A::Activations {
        x,
        rows,
        rows_out,
        input_scale,
    };
    launch::sm90(device, a, &b, c, kernel, alpha)
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

/// Values after C in the buffers of [`gemm_outputs`]: they must stay as
/// they were.
const TAIL: usize = 64;

/// Runs `c = a x b^T` on `device` with `kernel` (or the one [`gemm`]
/// picks), b uploaded as weights ([`DeviceGemmOperand::upload_weights`]),
/// into a buffer poisoned with NaN that extends 64 values beyond C, checks
/// that those are untouched, and returns C.
pub fn gemm_outputs(
    device: &Device,
    a: &Nvfp4Tensor,
    b: &Nvfp4Tensor,
    kernel: Option<GemmKernel>,
    tamper: Option<ScaleTamper<'_>>,
) -> Result<Vec<f16>, Error> {
    let (m, n, k, l) = (a.rows, b.rows, a.k, a.batches);
    let mut da = DeviceGemmOperand::upload(device, a)?;
    if let Some(tamper) = tamper {
        let mut scales = device.download(&da.scales)?;
        tamper(&mut scales);
        device.write(&mut da.scales, &scales)?;
    }
    let db = DeviceGemmOperand::upload_weights(device, b)?;
    let poison = f16::from_bits(0x7E5A);
    let mut dc = device.upload(&vec![poison; m * n * l + TAIL])?;
    let kernel = match kernel {
        Some(kernel) => kernel,
        None => GemmKernel::for_device(device, m, n, k, l)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "no GEMM kernel runs on {}: the GEMM needs sm_90a (compute capability 9.0) or sm_100a (10.0); an emulator runs it as either",
                    device.describe()
                ))
            })?,
    };
    gemm_with(device, &da, &db, &mut dc, kernel)?;
    let mut got = device.download(&dc)?;
    if let Some(i) = got[m * n * l..].iter().position(|v| v.to_bits() != poison.to_bits()) {
        return Err(Error::Mismatch(format!(
            "GEMM M={m} N={n} K={k} L={l} ({kernel:?}) wrote {} values past the end of C (value {} after it)",
            TAIL, i
        )));
    }
    got.truncate(m * n * l);
    Ok(got)
}

/// Runs one GEMM on random inputs (C poisoned with NaN first, values after
/// C checked untouched) with `kernel` (or the one [`gemm`] picks) and checks
/// every element against the f64 reference (rtol = atol = 1e-3). `tamper`
/// lets a test corrupt A's blocked scales after upload, to show the check
/// is not blind.
pub fn check_gemm(
    device: &Device,
    rng: &mut crate::rng::Rng,
    (m, n, k, l): (usize, usize, usize, usize),
    kind: crate::nvfp4::Inputs,
    kernel: Option<GemmKernel>,
    tamper: Option<ScaleTamper<'_>>,
) -> Result<(), Error> {
    let (a, b) = crate::nvfp4::gemm_inputs(rng, m, n, k, l, kind)?;
    let want = crate::nvfp4::gemm_reference(&a, &b);
    let got = gemm_outputs(device, &a, &b, kernel, tamper)?;
    crate::nvfp4::check_close(&got, &want, 1e-3, 1e-3).map_err(|e| {
        Error::Mismatch(format!(
            "GEMM M={m} N={n} K={k} L={l} ({kind:?} inputs, {kernel:?}): {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations_quantized_into_a_give_the_c_of_quantization_then_decode() {
        // The linear layer's Hopper path (one kernel quantizes straight into
        // A's images) against the quantization kernel, then the GEMM with
        // its decode kernel: the same bits of C, padding rows included, for
        // f16 and bf16 activations over many magnitudes (blocks scaled by
        // 2^-12 .. 2^6: subnormal and normal block scales), two row tiles
        // (130 tokens padded to 256) and four tilings (stream-K's 5 blocks
        // over 4 tiles of 4 stages).
        use crate::quantize::{self, ScaleLayout};
        use crate::rng::Rng;
        let device = Device::emulator(Target::Sm90a);
        let mut rng = Rng::new(51);
        let (tokens, rows, n, k, input_scale, alpha) = (130, 256, 256, 512, 0.003f32, 0.37f32);
        let (_, weights) = crate::nvfp4::gemm_inputs(&mut rng, 128, n, k, 1, crate::nvfp4::Inputs::Wide).expect("b");
        let b = DeviceGemmOperand::upload(&device, &weights).expect("b");
        let x: Vec<f32> = (0..tokens * k / 16)
            .flat_map(|_| {
                let scale = 2f32.powi(rng.below(19) as i32 - 12);
                (0..16).map(|_| rng.uniform(-1.0, 1.0) * scale).collect::<Vec<_>>()
            })
            .collect();
        let x16 = device
            .upload(&x.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>())
            .expect("x");
        let xb16 = device
            .upload(&x.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())
            .expect("x");
        for (activations, kernel) in [
            (Activations::F16(x16.view()), GemmKernel::Sm90 { blocks: 1, split: 2 }),
            (Activations::Bf16(xb16.view()), GemmKernel::Sm90 { blocks: 1, split: 1 }),
            (Activations::F16(x16.view()), GemmKernel::Sm90 { blocks: 2, split: 4 }),
            (Activations::Bf16(xb16.view()), GemmKernel::Sm90Stream { grid: 5 }),
        ] {
            let mut codes = device.alloc_zeroed::<u8>(rows * k / 2).expect("codes");
            let mut scales = device
                .alloc_zeroed::<u8>(blocked_scale_len(rows, k / 16, 1))
                .expect("scales");
            let layout = ScaleLayout::Blocked;
            quantize::quantize(
                &device,
                activations,
                tokens,
                rows,
                k,
                input_scale,
                layout,
                &mut codes,
                &mut scales,
            )
            .expect("quantize");
            let a = GemmOperand::new(&device, rows, k, 1, &codes, BlockedScales(&scales)).expect("a");
            let mut want = device.upload(&vec![f16::NAN; rows * n]).expect("c");
            gemm_scaled_with(&device, a, &b, &mut want, kernel, alpha).expect("gemm");
            let mut got = device.upload(&vec![f16::NAN; rows * n]).expect("c");
            let c = DeviceViewMut::from(&mut got);
            gemm_activations_sm90(
                &device,
                activations,
                (tokens, rows),
                input_scale,
                (&b).into(),
                c,
                kernel,
                alpha,
            )
            .expect("gemm of activations");
            let (got, want) = (device.download(&got).expect("c"), device.download(&want).expect("c"));
            assert!(want.iter().all(|v| !v.is_nan()), "{kernel:?}: C not written");
            let same = got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits());
            assert!(same, "{kernel:?}: the fused quantization gives another C");
        }
    }
}
