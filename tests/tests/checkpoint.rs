//! The NVFP4 checkpoint layer on the emulator: the activation quantization
//! kernel against the CPU recipe (byte for byte), ModelOpt safetensors files
//! written here (and broken on purpose), and `Linear::forward` through the
//! GEMV, the per-token GEMVs and both GEMMs against the exact product of the
//! quantized operands and against the unquantized product within the
//! stated bound (`nvfp4_kernels::linear`).

use nvfp4_dsl::{Device, Target, bf16, f16};
use nvfp4_kernels::checkpoint::Checkpoint;
use nvfp4_kernels::linear::{Linear, error_bound};
use nvfp4_kernels::nvfp4::{Nvfp4Tensor, check_close};
use nvfp4_kernels::quantize::{self, ScaleLayout, quantize_reference};
use nvfp4_kernels::rng::Rng;
use safetensors::Dtype;
use safetensors::tensor::TensorView;
use std::path::PathBuf;

/// Values over many magnitudes: each block of 16 scaled by its own power
/// of two (2^-12 .. 2^6), so block scales cover subnormal and normal e4m3.
fn activations(rng: &mut Rng, n: usize) -> Vec<f32> {
    let mut x = Vec::with_capacity(n);
    for _ in 0..n / 16 {
        let scale = 2f32.powi(rng.below(19) as i32 - 12);
        x.extend((0..16).map(|_| rng.uniform(-1.0, 1.0) * scale));
    }
    x
}

/// Blocks the random ones rarely give (with input_scale 1, block scale 1
/// for the first): every e2m1 midpoint (ties go to the even code), signs,
/// -0, a subnormal block scale, an all-zero block, one that saturates.
fn edge_blocks() -> Vec<f32> {
    let mut x = vec![
        6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -5.0, 5.9, 0.0, -0.0, 0.2617,
    ];
    x.extend((0..16).map(|i| (i as f32 - 7.5) * 0.004));
    x.extend([0.0; 16]);
    x.extend((0..16).map(|i| 3000.0 + 50.0 * i as f32));
    x
}

fn halves(x: &[f32], bf: bool) -> Vec<f32> {
    x.iter()
        .map(|&v| {
            if bf {
                bf16::from_f32(v).to_f32()
            } else {
                f16::from_f32(v).to_f32()
            }
        })
        .collect()
}

#[test]
fn the_quantize_kernel_gives_the_cpu_recipes_bytes() {
    let mut rng = Rng::new(101);
    let (rows, k) = (3, 256);
    for target in [Target::Sm90, Target::Sm100a] {
        let device = Device::emulator(target);
        for (bf, input_scale) in [(false, 1.0f32), (true, 1.0), (false, 0.37), (true, 0.0123)] {
            let mut x = edge_blocks();
            x.extend(activations(&mut rng, rows * k - x.len()));
            let x = halves(&x, bf);
            let want = quantize_reference(&x, rows, k, input_scale).expect("reference");
            for layout in [ScaleLayout::Plain, ScaleLayout::Blocked] {
                let rows_out = if layout == ScaleLayout::Blocked { 128 } else { rows };
                let scale_len = match layout {
                    ScaleLayout::Plain => rows * k / 16,
                    ScaleLayout::Blocked => nvfp4_kernels::nvfp4::blocked_scale_len(128, k / 16, 1),
                };
                let mut data = device.upload(&vec![0xA5u8; rows_out * k / 2]).expect("upload");
                let mut scales = device.upload(&vec![0x5Au8; scale_len]).expect("upload");
                let (x_bf16, x_f16);
                let activations: quantize::Activations = if bf {
                    x_bf16 = device
                        .upload(&x.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())
                        .expect("upload");
                    (&x_bf16).into()
                } else {
                    x_f16 = device
                        .upload(&x.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>())
                        .expect("upload");
                    (&x_f16).into()
                };
                quantize::quantize(
                    &device,
                    activations,
                    rows,
                    rows_out,
                    k,
                    input_scale,
                    layout,
                    &mut data,
                    &mut scales,
                )
                .expect("quantize");
                let what = format!("{target} bf16={bf} input_scale={input_scale} {layout:?}");
                let got_data = device.download(&data).expect("download");
                let want_data: Vec<u8> = want.data.iter().map(|b| b.0).collect();
                assert_eq!(&got_data[..want_data.len()], &want_data[..], "{what}: codes");
                assert!(
                    got_data[want_data.len()..].iter().all(|&b| b == 0),
                    "{what}: padding rows are zero"
                );
                let want_scales: Vec<u8> = match layout {
                    ScaleLayout::Plain => want.scales.iter().map(|s| s.0).collect(),
                    ScaleLayout::Blocked => want.blocked_scales().iter().map(|s| s.0).collect(),
                };
                assert_eq!(
                    device.download(&scales).expect("download"),
                    want_scales,
                    "{what}: scales"
                );
            }
        }
    }
}

#[test]
fn the_quantize_kernel_rejects_bad_arguments() {
    let device = Device::emulator(Target::Sm90);
    let x = device.upload(&[f16::ONE; 64]).expect("upload");
    let mut data = device.alloc_zeroed::<u8>(32).expect("alloc");
    let mut scales = device.alloc_zeroed::<u8>(4).expect("alloc");
    let plain = ScaleLayout::Plain;
    for (input_scale, rows, k) in [(0.0, 1, 64), (f32::NAN, 1, 64), (1.0, 2, 64), (1.0, 1, 48)] {
        let r = quantize::quantize(&device, &x, rows, rows, k, input_scale, plain, &mut data, &mut scales);
        assert!(r.is_err(), "input_scale {input_scale}, {rows} x {k}");
    }
    let r = quantize::quantize(&device, &x, 1, 1, 64, 1.0, ScaleLayout::Blocked, &mut data, &mut scales);
    assert!(r.is_err(), "blocked scales need 128 rows");
}

/// A ModelOpt NVFP4 linear layer of random weights: the checkpoint's
/// tensors (as bytes) and the dequantized weights.
struct Layer {
    n: usize,
    k: usize,
    weight: Nvfp4Tensor,
    weight_scale_2: f32,
    dequantized: Vec<f64>,
}

impl Layer {
    fn random(rng: &mut Rng, n: usize, k: usize) -> Layer {
        let w = activations(rng, n * k);
        // ModelOpt's recipe for weights is the activations' with the global
        // scale weight_scale_2 = amax / (6 * 448).
        let amax = w.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let weight_scale_2 = amax / 2688.0;
        let weight = quantize_reference(&w, n, k, weight_scale_2).expect("quantize");
        let dequantized = (0..n * k)
            .map(|i| weight.element(0, i / k, i % k) * f64::from(weight_scale_2))
            .collect();
        Layer {
            n,
            k,
            weight,
            weight_scale_2,
            dequantized,
        }
    }

    /// The tensors of layer `layer` in a safetensors file, with `edit`
    /// applied to the list first (to break it).
    fn write(
        &self,
        name: &str,
        input_scale: f32,
        edit: impl FnOnce(&mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>),
    ) -> PathBuf {
        let (n, k) = (self.n, self.k);
        let mut tensors = vec![
            (
                "layer.weight".to_string(),
                Dtype::U8,
                vec![n, k / 2],
                self.weight.data.iter().map(|b| b.0).collect(),
            ),
            (
                "layer.weight_scale".to_string(),
                Dtype::F8_E4M3,
                vec![n, k / 16],
                self.weight.scales.iter().map(|s| s.0).collect(),
            ),
            (
                "layer.weight_scale_2".to_string(),
                Dtype::F32,
                vec![],
                self.weight_scale_2.to_le_bytes().to_vec(),
            ),
            (
                "layer.input_scale".to_string(),
                Dtype::F32,
                vec![],
                input_scale.to_le_bytes().to_vec(),
            ),
        ];
        edit(&mut tensors);
        let views: Vec<(String, TensorView<'_>)> = tensors
            .iter()
            .map(|(name, dtype, shape, data)| {
                (
                    name.clone(),
                    TensorView::new(*dtype, shape.clone(), data).expect("view"),
                )
            })
            .collect();
        let path = std::env::temp_dir().join(format!("nvfp4-{}-{name}.safetensors", std::process::id()));
        safetensors::serialize_to_file(views, None, &path).expect("write");
        path
    }
}

#[test]
fn broken_checkpoints_are_clear_errors() {
    let device = Device::emulator(Target::Sm90);
    let layer = Layer::random(&mut Rng::new(102), 64, 256);
    let load_err = |path: PathBuf| {
        let err = Checkpoint::open(&path)
            .and_then(|c| Linear::load(&device, &c, "layer"))
            .expect_err("broken");
        let _ = std::fs::remove_file(&path);
        err.to_string()
    };
    let missing = load_err(layer.write("missing", 0.01, |t| t.retain(|(n, ..)| n != "layer.input_scale")));
    assert!(missing.contains("`layer.input_scale` is missing"), "{missing}");
    let dtype = load_err(layer.write("dtype", 0.01, |t| t[1].1 = Dtype::U8));
    assert!(
        dtype.contains("`layer.weight_scale` is U8, expected F8_E4M3"),
        "{dtype}"
    );
    let shape = load_err(layer.write("shape", 0.01, |t| t[1].2 = vec![32, 32]));
    assert!(
        shape.contains("`layer.weight_scale` has shape [32, 32], expected [64, 16]"),
        "{shape}"
    );
    let scale = load_err(layer.write("scale", -1.0, |_| {}));
    assert!(scale.contains("`layer.input_scale` is -1"), "{scale}");
    let path = layer.write("truncated", 0.01, |_| {});
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 100]).expect("truncate");
    let truncated = load_err(path);
    assert!(truncated.contains("not a complete safetensors file"), "{truncated}");
    let absent = load_err(std::env::temp_dir().join("nvfp4-no-such-file.safetensors"));
    assert!(absent.contains("cannot open it"), "{absent}");
}

/// Loads a layer written to a file, runs `tokens` random tokens through it
/// on `device` and checks every output twice: against the exact product of
/// the quantized operands (rtol = atol = 1e-3: what catches a wrong code,
/// scale or epilogue factor) and against the unquantized product within
/// the stated bound (a worst case, so far looser).
fn check_forward(device: &Device, seed: u64, (n, k, tokens): (usize, usize, usize), bf: bool, gemm: bool) {
    let mut rng = Rng::new(seed);
    let layer = Layer::random(&mut rng, n, k);
    let x = halves(&activations(&mut rng, tokens * k), bf);
    // Calibrated as ModelOpt does: amax / (6 * 448).
    let input_scale = x.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 2688.0;
    let path = layer.write(&format!("forward-{seed}"), input_scale, |_| {});
    let checkpoint = Checkpoint::open(&path).expect("open");
    let linear = Linear::load(device, &checkpoint, "layer").expect("load");
    let _ = std::fs::remove_file(&path);
    assert_eq!(linear.uses_gemm(device, tokens), gemm, "{}", device.describe());
    let y = if bf {
        let dx = device
            .upload(&x.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())
            .expect("upload");
        linear.forward(device, &dx, tokens)
    } else {
        let dx = device
            .upload(&x.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>())
            .expect("upload");
        linear.forward(device, &dx, tokens)
    }
    .expect("forward");
    assert_eq!(y.len(), tokens * n);
    let got = device.download(&y).expect("download");

    let xq = quantize_reference(&x, tokens, k, input_scale).expect("quantize");
    let alpha = f64::from(linear.alpha());
    let mut exact = vec![0.0f64; tokens * n];
    let mut unquantized = vec![0.0f64; tokens * n];
    for t in 0..tokens {
        for j in 0..n {
            let w = &layer.dequantized[j * k..(j + 1) * k];
            let q: f64 = (0..k)
                .map(|i| xq.element(0, t, i) * w[i] / f64::from(layer.weight_scale_2))
                .sum();
            exact[t * n + j] = q * alpha;
            unquantized[t * n + j] = (0..k).map(|i| f64::from(x[t * k + i]) * w[i]).sum();
        }
    }
    let what = format!("{} N={n} K={k} tokens={tokens} bf16={bf}", device.describe());
    check_close(&got, &exact, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{what}: {e}"));
    let bound = error_bound(&x, &layer.dequantized, &unquantized, tokens, n, k, input_scale);
    let mut worst = 0.0f64;
    for (i, ((g, want), b)) in got.iter().zip(&unquantized).zip(&bound).enumerate() {
        let err = (g.to_f64() - want).abs();
        assert!(
            err <= *b,
            "{what}: output {i} is {g}, the f64 product {want}: error {err:.3e} over the bound {b:.3e}"
        );
        worst = worst.max(err / b);
    }
    println!(
        "{what}: within 1e-3 of the quantized product; worst error / bound against the unquantized product {worst:.3}"
    );
}

#[test]
fn one_token_goes_through_the_gemv() {
    check_forward(&Device::emulator(Target::Sm90), 103, (64, 512, 1), false, false);
    check_forward(&Device::emulator(Target::Sm100a), 104, (64, 512, 1), true, false);
}

#[test]
fn several_tokens_without_a_gemm_go_through_one_gemv_each() {
    // sm_90 has no wgmma; N = 68 fits no GEMM tile either.
    check_forward(&Device::emulator(Target::Sm90), 105, (64, 256, 3), true, false);
    check_forward(&Device::emulator(Target::Sm100a), 106, (68, 256, 3), false, false);
}

#[test]
fn many_tokens_go_through_the_hopper_gemm() {
    check_forward(&Device::emulator(Target::Sm90a), 107, (128, 256, 130), false, true);
}

#[test]
fn many_tokens_go_through_the_blackwell_gemm() {
    check_forward(&Device::emulator(Target::Sm100a), 108, (128, 256, 130), true, true);
}

#[test]
fn the_epilogue_factor_scales_every_gemv_variant_and_a_split_gemm() {
    use nvfp4_kernels::gemm::{self, DeviceGemmOperand, GemmKernel};
    use nvfp4_kernels::gemv::{self, DeviceNvfp4, GemvConfig};
    use nvfp4_kernels::nvfp4::{Inputs, gemm_inputs, gemm_reference, gemv_inputs, gemv_reference};
    let alpha = 0.375f32;
    let mut rng = Rng::new(109);
    let device = Device::emulator(Target::Sm90);
    let (a, b) = gemv_inputs(&mut rng, 64, 512, 2, Inputs::Wide).expect("inputs");
    let want: Vec<f64> = gemv_reference(&a, &b).iter().map(|v| v * f64::from(alpha)).collect();
    let (da, db) = (
        DeviceNvfp4::upload(&device, &a).expect("a"),
        DeviceNvfp4::upload(&device, &b).expect("b"),
    );
    for (ksplit, warps) in [(1, 4), (2, 4), (8, 8)] {
        let cfg = GemvConfig { rows: 4, ksplit, warps };
        let mut c = device.upload(&[f16::NAN; 128]).expect("upload");
        gemv::gemv_scaled_with(&device, cfg, alpha, &da, &db, &mut c).expect("gemv");
        check_close(&device.download(&c).expect("download"), &want, 1e-3, 1e-3)
            .unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    }
    let device = Device::emulator(Target::Sm90a);
    let (a, b) = gemm_inputs(&mut rng, 128, 256, 512, 1, Inputs::Wide).expect("inputs");
    let want: Vec<f64> = gemm_reference(&a, &b).iter().map(|v| v * f64::from(alpha)).collect();
    let da = DeviceGemmOperand::upload(&device, &a).expect("a");
    let db = DeviceGemmOperand::upload(&device, &b).expect("b");
    let mut c = device.upload(&vec![f16::NAN; 128 * 256]).expect("upload");
    let kernel = GemmKernel::Sm90 { blocks: 1, split: 2 };
    gemm::gemm_scaled_with(&device, &da, &db, &mut c, kernel, alpha).expect("gemm");
    check_close(&device.download(&c).expect("download"), &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn forward_into_reuses_one_workspace_and_gives_what_forward_gives() {
    let device = Device::emulator(Target::Sm90a);
    let mut rng = Rng::new(110);
    let layer = Layer::random(&mut rng, 128, 256);
    let scales: Vec<u8> = layer.weight.scales.iter().map(|s| s.0).collect();
    let data: Vec<u8> = layer.weight.data.iter().map(|b| b.0).collect();
    let linear = Linear::new(&device, 128, 256, &data, &scales, layer.weight_scale_2, 0.002).expect("layer");
    let mut workspace = linear.workspace(&device, 130).expect("workspace");
    let mut y = device.alloc_zeroed::<f16>(256 * 128).expect("alloc");
    for tokens in [130, 1, 3] {
        let x: Vec<f16> = activations(&mut rng, tokens * 256)
            .iter()
            .map(|&v| f16::from_f32(v))
            .collect();
        let dx = device.upload(&x).expect("upload");
        linear
            .forward_into(&device, &dx, tokens, &mut workspace, &mut y)
            .expect("forward_into");
        let got = device.download(&y).expect("download");
        let want = device
            .download(&linear.forward(&device, &dx, tokens).expect("forward"))
            .expect("download");
        let same = got[..tokens * 128]
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{tokens} tokens: forward_into differs from forward");
    }
    let x = device.upload(&vec![f16::ONE; 131 * 256]).expect("upload");
    assert!(
        linear.forward_into(&device, &x, 131, &mut workspace, &mut y).is_err(),
        "131 tokens, workspace for 130"
    );
    let mut short = device.alloc_zeroed::<f16>(130 * 128).expect("alloc");
    let x = device.upload(&vec![f16::ONE; 130 * 256]).expect("upload");
    let err = linear
        .forward_into(&device, &x, 130, &mut workspace, &mut short)
        .expect_err("y too short");
    assert!(err.to_string().contains("256 rows of 128"), "{err}");
}
