//! An NVFP4 linear layer loaded from a ModelOpt checkpoint:
//! `y = x W^T` for f16/bf16 activations `x` `[tokens, K]`, computed as
//! NVIDIA's NVFP4 layers do: `x` quantized to NVFP4 on the GPU
//! ([`crate::quantize`]), the GEMV for one token or the GEMM for many over
//! the codes and block scales, and `input_scale * weight_scale_2` applied
//! in their epilogue before the f16 rounding (no extra pass). On Hopper the
//! quantization writes the sm_90a GEMM's decoded A itself
//! ([`crate::quantize::quantize_image_sm90`]), one kernel fewer.
//!
//! # Error bound
//!
//! Against the exact product of the unquantized `x` and the dequantized
//! weights `W = code * weight_scale * weight_scale_2`, each output differs
//! by at most
//!
//! `sum_k e(k) |W[n, k]| (1 + 2^-10) + 2^-10 |y| + 2^-16 sum_k |x_k W[n, k]| + 2^-24`,
//!
//! with `e(k) = (17/16) amax_b / 6 + 6 * 2^-10 * input_scale` for the block
//! `b` of 16 values holding `k`, whenever every block's `amax_b` is at most
//! `6 * 448 * input_scale` (inside the calibrated range). `e` bounds the
//! quantization error of one value: the e4m3 block scale is within 1/16 of
//! `amax_b / 6` (or 2^-10 absolute when subnormal), the e2m1 rounding error
//! is at most one scale step (between 4 and 6), and saturation at 6 costs
//! less than that. The other terms cover the f16 rounding of the output and
//! the f32 accumulation. [`error_bound`] computes it; the tests check every
//! output against it.

use crate::Error;
use crate::checkpoint::{Checkpoint, Shape};
use crate::gemm::{self, BlockedScales, GemmKernel, GemmOperand};
use crate::gemv::{self, GemvConfig, Nvfp4View};
use crate::nvfp4::{block_scales, blocked_scale_len};
use crate::quantize::{self, Activations, ScaleLayout};
use nvfp4_dsl::{Device, DeviceBuffer, DeviceViewMut, f16};
use safetensors::Dtype;

/// Scratch memory of [`Linear::forward_into`]: the quantized activations of
/// up to `tokens` tokens.
#[derive(Debug)]
pub struct Workspace {
    tokens: usize,
    codes: DeviceBuffer<u8>,
    scales: DeviceBuffer<u8>,
}

/// An NVFP4 linear layer on the device: `N` outputs of `K` inputs.
#[derive(Debug)]
pub struct Linear {
    /// Outputs (rows of the weight).
    pub n: usize,
    /// Inputs.
    pub k: usize,
    /// The activations' global scale: `x ≈ code * block_scale * input_scale`.
    pub input_scale: f32,
    /// The weight's global scale.
    pub weight_scale_2: f32,
    /// `[N][K/2]` packed e2m1 codes.
    data: DeviceBuffer<u8>,
    /// `[N][K/16]` e4m3 scales (the GEMV's layout).
    scales: DeviceBuffer<u8>,
    /// The same scales in the blocked layout, when the GEMM can run this
    /// layer (N a multiple of 128, K of 256, a compute capability 9.0 or
    /// 10.0 device).
    blocked_scales: Option<DeviceBuffer<u8>>,
    /// The weight pre-arranged for the sm_90a GEMM
    /// ([`gemm::prearrange`]), on a compute capability 9.0 device when the
    /// GEMM can run this layer: made once here, not by every forward.
    prearranged: Option<DeviceBuffer<u32>>,
}

impl Linear {
    /// Loads layer `prefix` (`prefix.weight`, `prefix.weight_scale`,
    /// `prefix.weight_scale_2`, `prefix.input_scale`) from a ModelOpt NVFP4
    /// checkpoint onto `device`. `Err` naming the tensor for a missing
    /// tensor, a wrong dtype or shape, a scale that is not positive and
    /// finite, or a size the kernels cannot take (K a multiple of 32, N of
    /// 4).
    pub fn load(device: &Device, checkpoint: &Checkpoint, prefix: &str) -> Result<Linear, Error> {
        let name = |suffix: &str| format!("{prefix}.{suffix}");
        let shape = checkpoint.shape(&name("weight"))?;
        let [n, half_k] = shape[..] else {
            return Err(Error::Checkpoint(format!(
                "{}: tensor `{}` has shape {shape:?}, expected [N, K/2]",
                checkpoint.path().display(),
                name("weight")
            )));
        };
        let k = 2 * half_k;
        if !k.is_multiple_of(16) {
            return Err(Error::Checkpoint(format!(
                "{}: `{}` holds K = {k} values per row, not a multiple of 16",
                checkpoint.path().display(),
                name("weight")
            )));
        }
        let weight = checkpoint.tensor(&name("weight"), Dtype::U8, Shape::Exact(&[n, half_k]))?;
        let weight_scale = checkpoint.tensor(&name("weight_scale"), Dtype::F8_E4M3, Shape::Exact(&[n, k / 16]))?;
        let weight_scale_2 = checkpoint.scale(&name("weight_scale_2"))?;
        let input_scale = checkpoint.scale(&name("input_scale"))?;
        Linear::new(device, n, k, weight, weight_scale, weight_scale_2, input_scale)
    }

    /// A layer from its parts in host memory: `weight` `[n][k/2]` packed
    /// e2m1 bytes, `weight_scale` `[n][k/16]` e4m3 bytes.
    pub fn new(
        device: &Device,
        n: usize,
        k: usize,
        weight: &[u8],
        weight_scale: &[u8],
        weight_scale_2: f32,
        input_scale: f32,
    ) -> Result<Linear, Error> {
        if n == 0 || !n.is_multiple_of(4) || k == 0 || !k.is_multiple_of(32) {
            return Err(Error::Shape(format!(
                "an NVFP4 linear layer of N = {n}, K = {k}: the kernels need N a positive multiple of 4 and K of 32"
            )));
        }
        if weight.len() != n * k / 2 || weight_scale.len() != n * k / 16 {
            return Err(Error::Shape(format!(
                "an NVFP4 linear layer of N = {n}, K = {k} needs {} weight bytes and {} scales, not {} and {}",
                n * k / 2,
                n * k / 16,
                weight.len(),
                weight_scale.len()
            )));
        }
        if !(weight_scale_2.is_finite() && weight_scale_2 > 0.0) {
            return Err(Error::Value(format!(
                "weight_scale_2 is {weight_scale_2}; it must be positive and finite"
            )));
        }
        quantize::global_scales(input_scale)?;
        let gemm_fits = n.is_multiple_of(gemm::BM) && k.is_multiple_of(gemm::BK);
        let blocked_scales = if gemm_fits && matches!(device.compute_capability(), (9, 0) | (10, 0)) {
            Some(device.upload(&block_scales(weight_scale, n, k, 1)?)?)
        } else {
            None
        };
        let data = device.upload(weight)?;
        let prearranged = match &blocked_scales {
            Some(blocked) if device.compute_capability() == (9, 0) => {
                let mut words = device.alloc_scratch::<u32>(gemm::prearranged_words(n, k, 1))?;
                gemm::prearrange_weights(
                    device,
                    GemmOperand::new(device, n, k, 1, &data, BlockedScales(blocked))?,
                    &mut words,
                )?;
                Some(words)
            }
            _ => None,
        };
        Ok(Linear {
            n,
            k,
            input_scale,
            weight_scale_2,
            data,
            scales: device.upload(weight_scale)?,
            blocked_scales,
            prearranged,
        })
    }

    /// The factor the epilogue applies: `input_scale * weight_scale_2`.
    pub fn alpha(&self) -> f32 {
        self.input_scale * self.weight_scale_2
    }

    /// Whether `tokens` rows go through the GEMM (else one GEMV each).
    pub fn uses_gemm(&self, device: &Device, tokens: usize) -> bool {
        self.gemm_kernel(device, tokens).is_some()
    }

    fn gemm_kernel(&self, device: &Device, tokens: usize) -> Option<GemmKernel> {
        if tokens < 2 || self.blocked_scales.is_none() {
            return None;
        }
        GemmKernel::for_device(device, tokens.next_multiple_of(gemm::BM), self.n, self.k, 1)
    }

    /// Rows of output [`forward_into`](Self::forward_into) writes for
    /// `tokens` tokens: `tokens`, or `tokens` rounded up to 128 when the GEMM
    /// runs them (its rows come in tiles of 128).
    pub fn output_rows(&self, device: &Device, tokens: usize) -> usize {
        if self.uses_gemm(device, tokens) {
            tokens.next_multiple_of(gemm::BM)
        } else {
            tokens
        }
    }

    /// Scratch memory for forwards of up to `tokens` tokens: the quantized
    /// codes and scales of the forwards that quantize into it (the GEMV's,
    /// and the sm_100a GEMM's; Hopper's GEMM quantizes straight into its
    /// own A images).
    pub fn workspace(&self, device: &Device, tokens: usize) -> Result<Workspace, Error> {
        let rows = (1..=tokens)
            .filter(|&t| {
                !matches!(
                    self.gemm_kernel(device, t),
                    Some(GemmKernel::Sm90 { .. } | GemmKernel::Sm90Stream { .. })
                )
            })
            .map(|t| self.output_rows(device, t))
            .max()
            .unwrap_or(0);
        let k = self.k;
        Ok(Workspace {
            tokens,
            codes: device.alloc_zeroed::<u8>(rows * k / 2)?,
            scales: device.alloc_zeroed::<u8>(blocked_scale_len(rows, k / 16, 1).max(rows * k / 16))?,
        })
    }

    /// `y = x W^T` for `tokens` rows of activations `x` (`[tokens][K]` f16
    /// or bf16, on the device, starting at a multiple of 16 bytes): a new
    /// `[tokens][N]` f16 buffer, computed on `device`'s stream. One token
    /// takes the GEMV; more take the GEMM where it runs (compute
    /// capability 9.0 or 10.0, N a multiple of 128, K of 256), else one
    /// GEMV per token.
    pub fn forward<'a>(
        &self,
        device: &Device,
        x: impl Into<Activations<'a>>,
        tokens: usize,
    ) -> Result<DeviceBuffer<f16>, Error> {
        let mut workspace = self.workspace(device, tokens)?;
        let mut y = device.alloc_zeroed::<f16>(self.output_rows(device, tokens) * self.n)?;
        self.forward_into(device, x, tokens, &mut workspace, &mut y)?;
        y.truncate(tokens * self.n);
        Ok(y)
    }

    /// [`forward`](Self::forward) into the caller's memory, allocating
    /// nothing (so it can be captured into a CUDA graph): `workspace` from
    /// [`workspace`](Self::workspace) for at least `tokens` tokens, `y` at
    /// least [`output_rows`](Self::output_rows) x N values. The first
    /// `tokens` x N are the result; the GEMM also writes its padding rows
    /// after them.
    pub fn forward_into<'a, 'y>(
        &self,
        device: &Device,
        x: impl Into<Activations<'a>>,
        tokens: usize,
        workspace: &mut Workspace,
        y: impl Into<DeviceViewMut<'y, f16>>,
    ) -> Result<(), Error> {
        let (x, mut y) = (x.into(), y.into());
        let (n, k) = (self.n, self.k);
        if tokens == 0 || x.len() != tokens * k {
            return Err(Error::Shape(format!(
                "forward: {} activations for {tokens} tokens of K = {k}",
                x.len()
            )));
        }
        let rows = self.output_rows(device, tokens);
        if tokens > workspace.tokens || y.len() < rows * n {
            return Err(Error::Shape(format!(
                "forward of {tokens} tokens: the workspace is for {} tokens and y holds {} values; it needs {} ({rows} rows of {n})",
                workspace.tokens,
                y.len(),
                rows * n
            )));
        }
        if let (Some(kernel), Some(blocked)) = (self.gemm_kernel(device, tokens), &self.blocked_scales) {
            let b = GemmOperand::new(device, n, k, 1, &self.data, BlockedScales(blocked))?;
            let b = match &self.prearranged {
                Some(words) => b.with_prearranged(words)?,
                None => b,
            };
            if let GemmKernel::Sm90 { .. } | GemmKernel::Sm90Stream { .. } = kernel {
                // Hopper: the activations quantized straight into the
                // GEMM's A, one kernel fewer.
                let y = y.slice(0..rows * n)?;
                return gemm::gemm_activations_sm90(
                    device,
                    x,
                    (tokens, rows),
                    self.input_scale,
                    b,
                    y,
                    kernel,
                    self.alpha(),
                );
            }
            // The quantized rows past `tokens` are zeros.
            let (codes, scales) = (
                workspace.codes.slice_mut(0..rows * k / 2)?,
                workspace.scales.slice_mut(0..blocked_scale_len(rows, k / 16, 1))?,
            );
            let layout = ScaleLayout::Blocked;
            quantize::quantize(device, x, tokens, rows, k, self.input_scale, layout, codes, scales)?;
            let (codes, scales) = (
                workspace.codes.slice(0..rows * k / 2)?,
                workspace.scales.slice(0..blocked_scale_len(rows, k / 16, 1))?,
            );
            let a = GemmOperand::new(device, rows, k, 1, codes, BlockedScales(scales))?;
            gemm::gemm_scaled_with(device, a, b, y.slice(0..rows * n)?, kernel, self.alpha())?;
            return Ok(());
        }
        let layout = ScaleLayout::Plain;
        let (codes, scales) = (
            workspace.codes.slice_mut(0..tokens * k / 2)?,
            workspace.scales.slice_mut(0..tokens * k / 16)?,
        );
        quantize::quantize(device, x, tokens, tokens, k, self.input_scale, layout, codes, scales)?;
        let weights = Nvfp4View::new(n, k, 1, &self.data, &self.scales)?.assume_constant();
        let cfg = GemvConfig::choose(k);
        for t in 0..tokens {
            let token = Nvfp4View::new(
                1,
                k,
                1,
                workspace.codes.slice(t * k / 2..(t + 1) * k / 2)?,
                workspace.scales.slice(t * k / 16..(t + 1) * k / 16)?,
            )?;
            let out = y.reborrow().slice(t * n..(t + 1) * n)?;
            gemv::gemv_scaled_with(device, cfg, self.alpha(), weights, token, out)?;
        }
        Ok(())
    }
}

/// The bound of the module docs on `|y - x W^T|` for every output of a
/// `[tokens][n]` forward: `x` `[tokens][k]` unquantized, `w` `[n][k]`
/// dequantized, `y_ref` the exact products.
pub fn error_bound(
    x: &[f32],
    w: &[f64],
    y_ref: &[f64],
    tokens: usize,
    n: usize,
    k: usize,
    input_scale: f32,
) -> Vec<f64> {
    let mut bound = Vec::with_capacity(tokens * n);
    for t in 0..tokens {
        let row = &x[t * k..(t + 1) * k];
        let e: Vec<f64> = row
            .chunks_exact(16)
            .flat_map(|block| {
                let amax = block.iter().fold(0.0f64, |m, v| m.max(f64::from(*v).abs()));
                let e = 17.0 / 16.0 * amax / 6.0 + 6.0 * f64::from(input_scale) / 1024.0;
                [e; 16]
            })
            .collect();
        for j in 0..n {
            let wr = &w[j * k..(j + 1) * k];
            let quantization: f64 = e.iter().zip(wr).map(|(e, w)| e * w.abs()).sum();
            let magnitude: f64 = row.iter().zip(wr).map(|(x, w)| (f64::from(*x) * w).abs()).sum();
            let y = y_ref[t * n + j].abs();
            bound.push(quantization * (1.0 + 1.0 / 1024.0) + y / 1024.0 + magnitude / 65536.0 + 1.0 / 16_777_216.0);
        }
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvfp4_dsl::Target;

    #[test]
    fn the_hopper_workspace_holds_only_what_the_gemv_quantizes() {
        let (n, k) = (128, 256);
        let weight: Vec<u8> = (0..n * k / 2).map(|i| (i * 37 % 251) as u8).collect();
        let scales: Vec<u8> = (0..n * k / 16).map(|i| 0x30 + (i % 16) as u8).collect();
        // Sm90a: one token's codes (the GEMV), Sm100a: 256 rows (the GEMM's
        // 130 tokens rounded up to its tiles).
        for (target, rows) in [(Target::Sm90a, 1), (Target::Sm100a, 256)] {
            let device = Device::emulator(target);
            let linear = Linear::new(&device, n, k, &weight, &scales, 0.5, 0.25).expect("layer");
            let workspace = linear.workspace(&device, 130).expect("workspace");
            assert_eq!(workspace.codes.len(), rows * k / 2, "{target:?}");
        }
    }
}
