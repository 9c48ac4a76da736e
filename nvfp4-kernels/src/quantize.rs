//! NVFP4 quantization of f16/bf16 activations on the GPU, as NVIDIA's
//! ModelOpt NVFP4 layers quantize their input: a global scale
//! `g = 1 / input_scale` (the checkpoint's calibrated `input_scale`), then
//! for each block of 16 consecutive values along K
//!
//! - the e4m3 block scale `s = e4m3(amax * (g / 6))` (round to nearest
//!   even, saturating at 448; `g / 6` rounded to f32 once on the host),
//! - each code `e2m1(|x| * (g / s))` (round to nearest even, saturating at
//!   6; `g / s` an f32 division, 0 when `s` is 0) with the sign of `x`.
//!
//! So `x ≈ code * s * input_scale`: a GEMM over the codes and block scales
//! gives the product up to the factor `input_scale * weight_scale_2`, which
//! the GEMV and GEMM apply in their epilogue ([`crate::linear`]).
//!
//! One thread per block of 16: two 16-byte loads, the amax, the scale, 16
//! codes in two 32-bit stores and one scale byte, in the plain layout
//! `[rows][k/16]` (the GEMV's) or the blocked 128x4 layout (the GEMM's).
//! Rows from `rows` to `rows_out` (padding up to the GEMM's 128-row tiles)
//! get zero codes and scales. [`quantize_reference`] is the same recipe on
//! the CPU, computed in the same f32 operations, so the bytes must match
//! exactly. [`quantize_image_sm90`] quantizes the same way (one
//! `#[device]` function) into the sm_90a GEMM's decoded A instead.

use crate::Error;
use crate::decode::{e2m1_pair_scaled, e4m3_pair_splats};
use crate::gemm::sm90::{BK, IMAGE_BYTES, zero_counters};
use crate::nvfp4::{Nvfp4Tensor, e4m3_to_f32, f32_to_e2m1, f32_to_e4m3, pack};
use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{DeviceView, DeviceViewMut};

/// Thread `t`'s block of 16 values (`T`: f16 or bf16, block `t` of `x`
/// read as raw 16-byte units) quantized: the e4m3 scale's code, then the 16
/// e2m1 codes in two words (the even element in the low nibble). Rows from
/// `rows` on (`blocks_per_row` blocks a row) are zeros.
#[device]
#[allow(clippy::needless_range_loop)]
fn quantize_block<T: Half>(
    x: &[u32x4],
    t: u32,
    rows: u32,
    blocks_per_row: u32,
    global: f32,
    global_over_6: f32,
) -> [u32; 3] {
    let row = t / blocks_per_row;
    let mut v = [0.0f32; 16];
    if row < rows {
        let lo = load(x, (2 * t) as usize, Cache::Streaming);
        let hi = load(x, (2 * t + 1) as usize, Cache::Streaming);
        let words = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w];
        #[unroll]
        for w in 0..8 {
            v[2 * w] = T::from_bits((words[w] & 0xFFFF) as u16).to_f32();
            v[2 * w + 1] = T::from_bits((words[w] >> 16) as u16).to_f32();
        }
    }
    let mut amax = 0.0f32;
    #[unroll]
    for i in 0..16 {
        amax = amax.max(v[i].abs());
    }
    let scale = E4m3::from_f32(amax * global_over_6);
    let inv = if scale.to_bits() == 0 {
        0.0f32
    } else {
        global / scale.to_f32()
    };
    let mut out = [u32::from(scale.to_bits()), 0u32, 0u32];
    #[unroll]
    for i in 0..8 {
        let pair = Fp4x2::from_f32s(v[2 * i] * inv, v[2 * i + 1] * inv);
        out[1 + i / 4] |= u32::from(pair.to_bits()) << (8 * (i % 4));
    }
    out
}

/// Quantizes `rows` rows of `k` halves (`T`: f16 or bf16, read as raw
/// 16-byte units) to NVFP4 codes in `data` (`[rows_out][k/8]` words, eight
/// codes each, the even element in the low nibble) and e4m3 scales in
/// `scales` (blocked layout when `blocked`).
#[kernel(targets(sm_90, sm_100a), specialize(T = [f16, bf16]), launch_bounds(256))]
#[allow(clippy::too_many_arguments)]
pub fn quantize_nvfp4<T: Half>(
    x: &[u32x4],
    data: &mut [u32],
    scales: &mut [E4m3],
    rows: u32,
    rows_out: u32,
    k: u32,
    global: f32,
    global_over_6: f32,
    blocked: bool,
) {
    let t = block_idx_x() * block_dim_x() + thread_idx_x();
    let blocks_per_row = k / 16;
    if t >= rows_out * blocks_per_row {
        return;
    }
    let row = t / blocks_per_row;
    let col = t % blocks_per_row;
    let q = quantize_block::<T>(x, t, rows, blocks_per_row, global, global_over_6);
    data[(2 * t) as usize] = q[1];
    data[(2 * t + 1) as usize] = q[2];
    let at = if blocked {
        // The blocked 128x4 layout (crate::nvfp4::blocked_scale_offset, L = 1).
        ((row / 128) * (blocks_per_row / 4) + col / 4) * 512 + (row % 32) * 16 + (row % 128) / 32 * 4 + col % 4
    } else {
        t
    };
    scales[at as usize] = E4m3::from_bits(q[0] as u8);
}

/// Quantizes activations as [`quantize_nvfp4`] does and writes them, as the
/// sm_90a GEMM's A, straight into the f16 images that
/// [`crate::gemm::gemm_sm90_decode_a`] makes of the quantized codes and
/// scales (the same words: each value
/// times its block scale times 2^-14, K permuted and swizzled as the
/// GEMM's MMAs read it), for `rows_out` rows (a multiple of 128; rows from
/// `rows` on zeros). It zeroes `counters` and lets the GEMM launch as the
/// decode kernel does: it writes the images without waiting for the
/// previous kernel in the stream (into the buffer the GEMM before does not
/// read), and only its first block waits, at its end, then zeroes the
/// counters. So it may be launched as a programmatic dependent only where
/// no kernel that may still run writes `x`; otherwise the launcher starts
/// it once the kernel before is complete. One thread per block of 16.
///
/// Block `g` (0..8) of a row's stage of 128 K lands in half `g % 2` of the
/// stage's image, as word `g / 2` of each of the row's 16-byte chunks: its
/// values `2 j, 2 j + 1` in logical chunk `j`, stored at chunk `j ^ (r %
/// 8)` of row `r` (128-byte swizzle).
#[kernel(targets(sm_90a), specialize(T = [f16, bf16]), launch_bounds(256))]
#[allow(clippy::too_many_arguments)]
pub fn quantize_image_sm90<T: Half>(
    x: &[u32x4],
    images: &mut [u32],
    counters: &mut [u32],
    rows: u32,
    rows_out: u32,
    k: u32,
    global: f32,
    global_over_6: f32,
) {
    launch_dependents();
    let t = block_idx_x() * block_dim_x() + thread_idx_x();
    let blocks_per_row = k / 16;
    if t < rows_out * blocks_per_row {
        let row = t / blocks_per_row;
        let col = t % blocks_per_row;
        let q = quantize_block::<T>(x, t, rows, blocks_per_row, global, global_over_6);
        let splat = e4m3_pair_splats(q[0], 0)[0];
        let (r, g) = (row % 128, col % 8);
        let image =
            ((row / 128) * (k / BK as u32) + col / 8) * (IMAGE_BYTES / 4) + g % 2 * (IMAGE_BYTES / 8) + r * 32 + g / 2;
        #[unroll]
        for j in 0..8u32 {
            let pair = hmul2(e2m1_pair_scaled(q[1 + j as usize / 4], j % 4), splat);
            images[(image + 4 * (j ^ r % 8)) as usize] = pair.to_bits();
        }
    }
    if block_idx_x() == 0 {
        grid_dependency_wait();
        zero_counters(counters, thread_idx_x(), block_dim_x());
    }
}

/// Activations on the device: f16 or bf16 values `[tokens][k]`, in this
/// crate's buffers or the caller's cudarc memory.
#[derive(Clone, Copy, Debug)]
pub enum Activations<'a> {
    /// IEEE half precision.
    F16(DeviceView<'a, f16>),
    /// bfloat16.
    Bf16(DeviceView<'a, bf16>),
}

impl Activations<'_> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Activations::F16(v) => v.len(),
            Activations::Bf16(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

macro_rules! activations_from {
    ($variant:ident, $t:ty) => {
        impl<'a> From<DeviceView<'a, $t>> for Activations<'a> {
            fn from(v: DeviceView<'a, $t>) -> Self {
                Activations::$variant(v)
            }
        }
        impl<'a> From<&'a DeviceBuffer<$t>> for Activations<'a> {
            fn from(b: &'a DeviceBuffer<$t>) -> Self {
                Activations::$variant(b.view())
            }
        }
        impl<'a> From<&'a cudarc::driver::CudaSlice<$t>> for Activations<'a> {
            fn from(s: &'a cudarc::driver::CudaSlice<$t>) -> Self {
                Activations::$variant(DeviceView::from(s))
            }
        }
    };
}
activations_from!(F16, f16);
activations_from!(Bf16, bf16);

/// Where [`quantize`] puts the scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleLayout {
    /// `[rows][k/16]`, as the GEMV reads them.
    Plain,
    /// The blocked 128x4 layout the GEMM's tensor cores read (rows padded
    /// to 128, k a multiple of 64).
    Blocked,
}

/// The host-computed f32 factors of the recipe: `g = 1 / input_scale` and
/// `g / 6`. `Err` unless both are finite and positive.
pub fn global_scales(input_scale: f32) -> Result<(f32, f32), Error> {
    let global = 1.0f32 / input_scale;
    if !(input_scale > 0.0 && global.is_finite()) {
        return Err(Error::Value(format!(
            "input_scale {input_scale} must be positive, finite and have a finite reciprocal"
        )));
    }
    Ok((global, global / 6.0))
}

/// Quantizes `rows` rows of `k` activations (k a positive multiple of 16)
/// into `rows_out >= rows` rows of NVFP4: `data` takes `rows_out * k / 2`
/// bytes, `scales` `rows_out * k / 16` bytes (plain) or
/// [`crate::nvfp4::blocked_scale_len`] (blocked). Launched on `device`'s
/// stream. `x` must start at a multiple of 16 bytes, `data` of 4.
#[allow(clippy::too_many_arguments)]
pub fn quantize<'a, 'd, 's>(
    device: &Device,
    x: impl Into<Activations<'a>>,
    rows: usize,
    rows_out: usize,
    k: usize,
    input_scale: f32,
    layout: ScaleLayout,
    data: impl Into<DeviceViewMut<'d, u8>>,
    scales: impl Into<DeviceViewMut<'s, u8>>,
) -> Result<(), Error> {
    let (x, data, scales) = (x.into(), data.into(), scales.into());
    let (global, global_over_6) = global_scales(input_scale)?;
    let blocked = layout == ScaleLayout::Blocked;
    let scale_len = match layout {
        ScaleLayout::Plain => rows_out * (k / 16),
        ScaleLayout::Blocked => crate::nvfp4::blocked_scale_len(rows_out, k / 16, 1),
    };
    if k == 0 || !k.is_multiple_of(if blocked { 64 } else { 16 }) || rows == 0 || rows_out < rows {
        return Err(Error::Shape(format!(
            "quantize: {rows} rows of K = {k} into {rows_out} rows with {layout:?} scales (K a positive multiple of 16, 64 for blocked scales)"
        )));
    }
    if blocked && !rows_out.is_multiple_of(128) {
        return Err(Error::Shape(format!(
            "quantize: blocked scales need rows_out a multiple of 128, not {rows_out}"
        )));
    }
    if x.len() != rows * k || data.len() != rows_out * k / 2 || scales.len() != scale_len {
        return Err(Error::Shape(format!(
            "quantize: {rows} x {k} activations into {rows_out} rows need {} values, {} data bytes and {scale_len} scale bytes; got {}, {} and {}",
            rows * k,
            rows_out * k / 2,
            x.len(),
            data.len(),
            scales.len()
        )));
    }
    let threads = rows_out * (k / 16);
    let (Ok(threads), Ok(r), Ok(ro), Ok(kk)) = (
        u32::try_from(threads),
        u32::try_from(rows),
        u32::try_from(rows_out),
        u32::try_from(k),
    ) else {
        return Err(Error::Shape("quantize: too large for 32-bit indices".into()));
    };
    let launch = LaunchConfig::linear(threads.div_ceil(256), 256);
    let (data, scales) = (data.cast::<u32>()?, scales.cast::<E4m3>()?);
    // SAFETY: one thread per block of 16 of rows_out rows; a thread of a
    // row below `rows` reads 2 units of x (rows * k / 8 in all), every
    // thread writes 2 words of data (rows_out * k / 8) and one scale, at an
    // index below the scale length checked above.
    unsafe {
        macro_rules! launch {
            ($t:ty, $x:expr) => {
                quantize_nvfp4::Kernel::<$t>::launch(
                    device,
                    launch,
                    $x.cast::<u32x4>()?,
                    data,
                    scales,
                    r,
                    ro,
                    kk,
                    global,
                    global_over_6,
                    blocked,
                )?
            };
        }
        match x {
            Activations::F16(v) => launch!(f16, v),
            Activations::Bf16(v) => launch!(bf16, v),
        }
    }
    Ok(())
}

/// Launches [`quantize_image_sm90`]: `rows` rows of `k` activations into
/// the sm_90a GEMM's A images for `rows_out` rows (`images`: `rows_out * k
/// / 2` words), zeroing `counters`; `scales` from [`global_scales`]. Shapes
/// checked by the caller: K a multiple of 256, `rows_out` of 128 and at
/// least `rows`, `x` `rows * k` values, `rows_out * k / 2` below 2^31.
pub(crate) fn quantize_image(
    device: &Device,
    x: Activations<'_>,
    (rows, rows_out, k): (usize, usize, usize),
    (global, global_over_6): (f32, f32),
    images: DeviceViewMut<'_, u32>,
    counters: DeviceViewMut<'_, u32>,
) -> nvfp4_dsl::Result<()> {
    let x_ready = match x {
        Activations::F16(v) => !device.written_by_running_kernel(v),
        Activations::Bf16(v) => !device.written_by_running_kernel(v),
    };
    let threads = (rows_out * (k / 16)) as u32;
    // Where a kernel that may still run writes x, it is launched once the
    // kernel before is complete (as a programmatic dependent whose blocks
    // all wait first they would sit on the multiprocessors the GEMM before
    // leaves idle, and the quantization ran slower once that GEMM was
    // done: docs/perf.md entry 17).
    let launch = LaunchConfig::linear(threads.div_ceil(256), 256).with_programmatic_launch(x_ready);
    let (r, ro, kk) = (rows as u32, rows_out as u32, k as u32);
    // SAFETY: one thread per block of 16 of rows_out rows; a thread of a
    // row below `rows` reads 2 units of x, every thread writes 8 words of
    // its stage's image, inside the rows_out * k / 2 the caller checked.
    unsafe {
        macro_rules! launch {
            ($t:ty, $x:expr) => {
                quantize_image_sm90::Kernel::<$t>::launch(
                    device,
                    launch,
                    $x.cast::<u32x4>()?,
                    images,
                    counters,
                    r,
                    ro,
                    kk,
                    global,
                    global_over_6,
                )
            };
        }
        match x {
            Activations::F16(v) => launch!(f16, v),
            Activations::Bf16(v) => launch!(bf16, v),
        }
    }
}

/// The recipe of [`quantize_nvfp4`] on the CPU, for `rows` rows of `k`
/// values (exactly representable in f16 or bf16), as an [`Nvfp4Tensor`]
/// with plain scales: the same f32 operations, so the same bytes.
pub fn quantize_reference(x: &[f32], rows: usize, k: usize, input_scale: f32) -> Result<Nvfp4Tensor, Error> {
    let (global, global_over_6) = global_scales(input_scale)?;
    let mut t = Nvfp4Tensor::zeros(rows, k, 1)?;
    if x.len() != rows * k {
        return Err(Error::Shape(format!(
            "quantize_reference: {} values for {rows} x {k}",
            x.len()
        )));
    }
    for ((block, bytes), scale) in x
        .chunks_exact(16)
        .zip(t.data.chunks_exact_mut(8))
        .zip(t.scales.iter_mut())
    {
        let amax = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let code = f32_to_e4m3(amax * global_over_6);
        let s = e4m3_to_f32(code);
        let inv = if code == 0 { 0.0 } else { global / s };
        *scale = E4m3(code);
        for (byte, pair) in bytes.iter_mut().zip(block.chunks_exact(2)) {
            *byte = pack(f32_to_e2m1(pair[0] * inv), f32_to_e2m1(pair[1] * inv));
        }
    }
    Ok(t)
}
