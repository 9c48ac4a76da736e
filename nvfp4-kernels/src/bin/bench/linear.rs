//! The linear layer on Hopper, timed as a model runs it: 128 tokens of f16
//! activations through `Linear::forward_into` (one kernel quantizes them
//! straight into the GEMM's A, then the GEMM), against the same work in two
//! steps (`quantize` into NVFP4 codes and blocked scales, then `gemm`, whose
//! decode kernel makes A's image of them): the same bits of C, one kernel
//! fewer. The weights rotate through as many layers as the GEMM rows' copies.

use super::timing::{time_graph_ms, time_ms};
use nvfp4_dsl::{Device, DeviceBuffer, f16};
use nvfp4_kernels::gemm::{self, BlockedScales, DeviceGemmOperand, GemmKernel, GemmOperand};
use nvfp4_kernels::linear::Linear;
use nvfp4_kernels::nvfp4::{Nvfp4Tensor, blocked_scale_len, gemm_reference};
use nvfp4_kernels::quantize::{self, ScaleLayout, quantize_reference};
use nvfp4_kernels::rng::Rng;

/// The activations' global scale of the bench's layer.
const INPUT_SCALE: f32 = 0.004;

/// One way's timing: its name, (back-to-back µs, graph µs) and the worst
/// error ratio against the f64 product of the quantized activations and
/// the weights.
pub type Timing = (String, (f64, f64), f64);

/// The two ways' [`Timing`]s.
pub fn linear_timings(
    device: &Device,
    repeats: usize,
    rng: &mut Rng,
    b: &Nvfp4Tensor,
    copies: usize,
) -> Result<Vec<Timing>, String> {
    let (m, n, k) = (128, b.rows, b.k);
    let err = |e: nvfp4_kernels::Error| e.to_string();
    let x: Vec<f32> = (0..m * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let xq: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let x32: Vec<f32> = xq.iter().map(|v| v.to_f32()).collect();
    let dx = device.upload(&xq).map_err(|e| e.to_string())?;
    let data: Vec<u8> = b.data.iter().map(|v| v.0).collect();
    let scales: Vec<u8> = b.scales.iter().map(|v| v.0).collect();
    let layers: Vec<Linear> = (0..copies)
        .map(|_| Linear::new(device, n, k, &data, &scales, 1.0, INPUT_SCALE))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    let weights: Vec<DeviceGemmOperand> = (0..copies)
        .map(|_| DeviceGemmOperand::upload_weights(device, b))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    let aq = quantize_reference(&x32, m, k, INPUT_SCALE).map_err(err)?;
    let want: Vec<f64> = gemm_reference(&aq, b)
        .iter()
        .map(|v| v * f64::from(INPUT_SCALE))
        .collect();
    let mut workspace = layers[0].workspace(device, m).map_err(err)?;
    let mut y: DeviceBuffer<f16> = device.upload(&vec![f16::NAN; m * n]).map_err(|e| e.to_string())?;
    let mut codes = device.alloc_zeroed::<u8>(m * k / 2).map_err(|e| e.to_string())?;
    let mut blocked = device
        .alloc_zeroed::<u8>(blocked_scale_len(m, k / 16, 1))
        .map_err(|e| e.to_string())?;
    let kernel = GemmKernel::for_device(device, m, n, k, 1).ok_or("no GEMM kernel for this device")?;
    let mut out = Vec::new();
    for fused in [true, false] {
        let mut step = |i: usize, y: &mut DeviceBuffer<f16>| -> Result<(), String> {
            let j = i % copies;
            if fused {
                layers[j].forward_into(device, &dx, m, &mut workspace, y).map_err(err)
            } else {
                let layout = ScaleLayout::Blocked;
                quantize::quantize(device, &dx, m, m, k, INPUT_SCALE, layout, &mut codes, &mut blocked).map_err(err)?;
                let a = GemmOperand::new(device, m, k, 1, &codes, BlockedScales(&blocked)).map_err(err)?;
                gemm::gemm_scaled_with(device, a, &weights[j], y, kernel, INPUT_SCALE).map_err(err)
            }
        };
        device
            .write(&mut y, &vec![f16::NAN; m * n])
            .map_err(|e| e.to_string())?;
        step(0, &mut y)?;
        let got = device.download(&y).map_err(|e| e.to_string())?;
        let what = if fused {
            "Linear::forward_into (quantized into A)"
        } else {
            "quantize, then gemm"
        };
        let ratio = super::checked_ratio(&got, &want, &format!("linear M={m} N={n} K={k}: {what}"))?;
        let mut call = |i: usize| step(i, &mut y);
        let us = time_ms(device, repeats, &mut call)? * 1e3;
        let graph_us = time_graph_ms(device, repeats, &mut call)? * 1e3;
        out.push((what.to_string(), (us, graph_us), ratio));
    }
    Ok(out)
}
