//! Correctness on a CUDA GPU against the CPU: the sample kernels, every FP4
//! and FP8 decode, the GEMV and the GEMM on the task's test and benchmark
//! shapes; and the PTX emulator against the GPU, bit for bit.
//! Needs a GPU: run with `--ignored` on the GPU host (see the README).

use nvfp4_dsl::{Device, KernelArg, LaunchConfig, Target, Variant};
use nvfp4_kernels::gemm::GemmKernel;
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::Inputs;
use nvfp4_kernels::nvfp4::gemm_inputs;
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::{decode, fidelity, gemm, samples};

// The differential fuzzer's programs, for the batch of generated kernels
// below.
use nvfp4_tests::program;

fn device() -> Device {
    Device::cuda(0).expect("a CUDA device")
}

/// CUDA forbids synchronising a whole context while a stream of it is being
/// captured (the capture is invalidated), and the tests share the primary
/// context. cudarc's `new_stream` does that when event tracking is on: the
/// test that relies on it holds this lock exclusively, those that capture
/// hold it shared.
static CONTEXT_SYNC: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn context_sync_lock(exclusive: bool) -> Box<dyn std::any::Any> {
    if exclusive {
        Box::new(CONTEXT_SYNC.write().unwrap_or_else(|p| p.into_inner()))
    } else {
        Box::new(CONTEXT_SYNC.read().unwrap_or_else(|p| p.into_inner()))
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn samples_match_the_cpu_on_the_gpu() {
    let device = device();
    for seed in [1, 2, 3] {
        let reports = samples::check_all(&device, seed, false).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for r in reports {
            println!("seed {seed}: {} ({}): {} outputs match", r.name, r.what, r.checked);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_prearranged_decode_is_exact_for_every_code_slot_and_scale_on_the_gpu() {
    gemm::prearrange::check_prearranged_decode(&device()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn every_fp4_and_fp8_byte_decodes_exactly_on_the_gpu() {
    let report = decode::check_decode(&device()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "all 256 Fp4x2 and E4m3 bytes decode exactly; e4m3 NaN gives f16 {:04x?} and f32 {:08x?}",
        report.e4m3_nan_f16, report.e4m3_nan_f32
    );
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn gemv_matches_the_reference_on_every_task_shape() {
    let device = device();
    let mut rng = Rng::new(7);
    for shape in gemv::TEST_SHAPES.into_iter().chain(gemv::BENCH_SHAPES) {
        for kind in [Inputs::Task, Inputs::Wide] {
            gemv::check_gemv(&device, &mut rng, shape, kind, None).unwrap_or_else(|e| panic!("{e}"));
        }
        println!("GEMV {shape:?}: task and wide inputs match the f64 reference");
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn every_gemv_variant_matches_the_reference() {
    let device = device();
    let mut rng = Rng::new(8);
    for (ksplit, warps) in [(1, 8), (1, 2), (2, 4), (8, 8)] {
        let cfg = GemvConfig { rows: 4, ksplit, warps };
        for shape in [(128, 256, 1), (512, 1536, 2), (2432, 4608, 2)] {
            gemv::check_gemv(&device, &mut rng, shape, Inputs::Wide, Some(cfg)).unwrap_or_else(|e| panic!("{e}"));
        }
        println!("GEMV variant {cfg:?} matches");
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_emulator_matches_the_gpu_bit_for_bit() {
    let gpu = device();
    let (major, minor) = gpu.compute_capability();
    let target = match (major, minor) {
        (10, 0) => Target::Sm100a,
        (9, _) => Target::Sm90,
        _ => panic!("no emulated target for compute capability {major}.{minor}"),
    };
    let emulator = Device::emulator(target);
    for seed in [21, 22] {
        let on_gpu = fidelity::run_all(&gpu, seed).unwrap_or_else(|e| panic!("GPU: {e}"));
        let emulated = fidelity::run_all(&emulator, seed).unwrap_or_else(|e| panic!("emulator: {e}"));
        let diffs = fidelity::differences(&on_gpu, &emulated);
        assert!(
            diffs.is_empty(),
            "seed {seed}: the emulator differs from the GPU:\n{}",
            diffs.join("\n")
        );
        for o in &on_gpu {
            println!(
                "seed {seed}: {} ({} bytes) identical on the GPU and the emulator",
                o.name,
                o.bytes.len()
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn gemm_matches_the_reference_on_every_task_shape() {
    let device = device();
    let mut rng = Rng::new(51);
    let bench = gemm::BENCH_SHAPES.map(|(m, n, k)| (m, n, k, 1));
    for (m, n, k, l) in gemm::TEST_SHAPES.into_iter().chain(bench) {
        let kernel = GemmKernel::for_device(&device, m, n, k, l);
        for kind in [Inputs::Task, Inputs::Wide] {
            gemm::check_gemm(&device, &mut rng, (m, n, k, l), kind, kernel, None)
                .unwrap_or_else(|e| panic!("{m}x{n}x{k}x{l} {kind:?}: {e}"));
            println!("GEMM M={m} N={n} K={k} L={l} {kind:?} {kernel:?}: every output within 1e-3 of the f64 reference");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn every_gemm_tiling_matches_and_repeats_bit_for_bit() {
    let device = device();
    if device.compute_capability() != (9, 0) {
        return;
    }
    let mut rng = Rng::new(52);
    for (m, n, k) in [(128, 4096, 7168), (256, 512, 2048)] {
        let (a, b) = gemm_inputs(&mut rng, m, n, k, 1, Inputs::Wide).expect("inputs");
        let want = nvfp4_kernels::nvfp4::gemm_reference(&a, &b);
        for (blocks, split) in [(1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (2, 8)] {
            let kernel = Some(GemmKernel::Sm90 { blocks, split });
            let first = gemm::gemm_outputs(&device, &a, &b, kernel, None).unwrap_or_else(|e| panic!("{e}"));
            nvfp4_kernels::nvfp4::check_close(&first, &want, 1e-3, 1e-3)
                .unwrap_or_else(|e| panic!("{m}x{n}x{k} {kernel:?}: {e}"));
            for run in 0..3 {
                let again = gemm::gemm_outputs(&device, &a, &b, kernel, None).unwrap_or_else(|e| panic!("{e}"));
                let same = first.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{m}x{n}x{k} {kernel:?}: run {run} gave other bits");
            }
            println!("GEMM M={m} N={n} K={k} {kernel:?}: within 1e-3 of the reference, the same bits in 4 runs");
        }
    }
}

/// One split-K GEMM (and its reduction) and, on Hopper, one K split in
/// pairs of clusters, for `compute-sanitizer --tool memcheck` and
/// `--tool racecheck` (see the README).
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn gemm_for_the_sanitizer() {
    let device = device();
    let kernel = GemmKernel::for_device(&device, 128, 512, 2048, 1);
    gemm::check_gemm(
        &device,
        &mut Rng::new(53),
        (128, 512, 2048, 1),
        Inputs::Wide,
        kernel,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!("GEMM M=128 N=512 K=2048 {kernel:?}: within 1e-3 of the f64 reference");
    if device.compute_capability() != (9, 0) {
        return;
    }
    // K split 4 over 32 tiles: pairs of clusters of 2 and their counters.
    let pairs = Some(GemmKernel::Sm90 { blocks: 1, split: 4 });
    gemm::check_gemm(
        &device,
        &mut Rng::new(54),
        (128, 4096, 512, 1),
        Inputs::Wide,
        pairs,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!("GEMM M=128 N=4096 K=512 {pairs:?}: within 1e-3 of the f64 reference");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_gemm_on_the_gpu_matches_the_emulator() {
    let gpu = device();
    let target = match gpu.compute_capability() {
        (9, 0) => Target::Sm90a,
        (10, 0) => Target::Sm100a,
        _ => return,
    };
    let emu = Device::emulator(target);
    let mut rng = Rng::new(54);
    for (m, n, k) in [(128, 256, 256), (256, 768, 1024), (128, 1536, 7168)] {
        for kind in [Inputs::Task, Inputs::Wide] {
            let (a, b) = gemm_inputs(&mut rng, m, n, k, 1, kind).expect("inputs");
            let kernel = GemmKernel::for_device(&gpu, m, n, k, 1);
            let on_gpu = gemm::gemm_outputs(&gpu, &a, &b, kernel, None).unwrap_or_else(|e| panic!("GPU: {e}"));
            let on_emu = gemm::gemm_outputs(&emu, &a, &b, kernel, None).unwrap_or_else(|e| panic!("emulator: {e}"));
            let (mut differ, mut largest) = (0, 0.0f64);
            for (g, e) in on_gpu.iter().zip(&on_emu) {
                if g.to_bits() != e.to_bits() {
                    differ += 1;
                    largest = largest.max((g.to_f64() - e.to_f64()).abs() / e.to_f64().abs().max(1e-3));
                }
            }
            println!(
                "GEMM M={m} N={n} K={k} {kind:?} {kernel:?}: {differ} of {} outputs differ between the GPU and the emulator (largest relative difference {largest:.2e})",
                on_gpu.len()
            );
            // The task's inputs sum exactly in f32 (small integers times
            // powers of two), so any difference there is a real one. On
            // Hopper the emulator sums wgmma as the H100 does, so every
            // input must give the same bits; Blackwell's tensor-core sums
            // are modelled exactly, which no B200 has confirmed.
            if matches!(kind, Inputs::Task) || target == Target::Sm90a {
                assert_eq!(
                    differ, 0,
                    "{m}x{n}x{k} {kind:?}: the GPU and the emulator must give the same bits"
                );
            }
        }
    }
}

/// Random GEMV operands as the caller's cudarc memory: packed e2m1 and e4m3
/// bytes in `CudaSlice<u8>`s, as a PyTorch checkpoint holds them.
fn cudarc_operand(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    t: &nvfp4_kernels::nvfp4::Nvfp4Tensor,
) -> (cudarc::driver::CudaSlice<u8>, cudarc::driver::CudaSlice<u8>) {
    let data: Vec<u8> = t.data.iter().map(|b| b.0).collect();
    let scales: Vec<u8> = t.scales.iter().map(|s| s.0).collect();
    (
        stream.clone_htod(&data).expect("upload"),
        stream.clone_htod(&scales).expect("upload"),
    )
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn kernels_run_on_the_callers_context_stream_and_cudarc_buffers() {
    use cudarc::driver::CudaContext;
    use nvfp4_dsl::LaunchConfig;
    use nvfp4_kernels::gemv::Nvfp4View;
    use nvfp4_kernels::samples::saxpy;
    let _alone = context_sync_lock(true);
    // cudarc's defaults: event tracking on, a stream of the caller's.
    let ctx = CudaContext::new(0).expect("context");
    let stream = ctx.new_stream().expect("stream");
    let device = Device::from_cuda_stream(stream.clone()).expect("device");
    let mut rng = Rng::new(81);

    let x: Vec<f32> = (0..300).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let y: Vec<f32> = (0..300).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let dx = stream.clone_htod(&x).expect("upload");
    let mut dy = stream.clone_htod(&y).expect("upload");
    let xs = dx.slice(37..137);
    let mut ys = dy.slice_mut(100..200);
    // SAFETY: one thread per element of ys; xs has as many.
    unsafe { saxpy::Kernel::launch(&device, LaunchConfig::linear(1, 128), &xs, &mut ys, 2.0) }.expect("saxpy");
    let got = stream.clone_dtoh(&dy).expect("download");
    for (i, (&g, &old)) in got.iter().zip(&y).enumerate() {
        let want = if (100..200).contains(&i) {
            2.0 * x[i - 63] + old
        } else {
            old
        };
        assert_eq!(g.to_bits(), want.to_bits(), "y[{i}]");
    }

    let (a, b) = nvfp4_kernels::nvfp4::gemv_inputs(&mut rng, 512, 1536, 2, Inputs::Wide).expect("inputs");
    let want = nvfp4_kernels::nvfp4::gemv_reference(&a, &b);
    let (ad, asc) = cudarc_operand(&stream, &a);
    let (bd, bsc) = cudarc_operand(&stream, &b);
    let va = Nvfp4View::new(512, 1536, 2, &ad, &asc).expect("a").assume_constant();
    let vb = Nvfp4View::new(b.rows, 1536, 2, &bd, &bsc).expect("b");
    let mut c = stream.clone_htod(&vec![nvfp4_dsl::f16::NAN; 1024]).expect("upload");
    // Twice in a row: the second GEMV reads a before the first finishes.
    for _ in 0..2 {
        gemv::gemv(&device, va, vb, &mut c).expect("gemv");
    }
    let got = stream.clone_dtoh(&c).expect("download");
    nvfp4_kernels::nvfp4::check_close(&got, &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{e}"));

    // The first 4 rows of a, 8 bytes off: lengths right, alignment wrong.
    let (data, scales) = (ad.slice(8..8 + 6144), asc.slice(0..768));
    let misaligned = Nvfp4View::new(4, 1536, 2, &data, &scales).expect("lengths");
    let mut c4 = stream.alloc_zeros::<nvfp4_dsl::f16>(8).expect("alloc");
    let err = gemv::gemv(&device, misaligned, vb, &mut c4).expect_err("misaligned");
    assert!(err.to_string().contains("16 bytes"), "{err}");
    println!("saxpy on cudarc views, the GEMV on cudarc bytes on the caller's stream: every output matches");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_gemm_runs_on_cudarc_buffers() {
    use nvfp4_kernels::gemm::GemmOperand;
    let device = device();
    let Some(kernel) = GemmKernel::for_device(&device, 256, 512, 2048, 1) else {
        println!("no GEMM kernel for {}", device.describe());
        return;
    };
    let stream = device.as_cuda().expect("cuda").stream().clone();
    let (a, b) = gemm_inputs(&mut Rng::new(82), 256, 512, 2048, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4_kernels::nvfp4::gemm_reference(&a, &b);
    let bytes = |t: &nvfp4_kernels::nvfp4::Nvfp4Tensor| {
        let data: Vec<u8> = t.data.iter().map(|b| b.0).collect();
        let scales: Vec<u8> = t.blocked_scales().iter().map(|s| s.0).collect();
        (
            stream.clone_htod(&data).expect("upload"),
            stream.clone_htod(&scales).expect("upload"),
        )
    };
    let ((ad, asc), (bd, bsc)) = (bytes(&a), bytes(&b));
    let va = GemmOperand::new(&device, 256, 2048, 1, &ad, &asc).expect("a");
    let vb = GemmOperand::new(&device, 512, 2048, 1, &bd, &bsc).expect("b");
    let mut c = stream
        .clone_htod(&vec![nvfp4_dsl::f16::NAN; 256 * 512])
        .expect("upload");
    gemm::gemm_with(&device, va, vb, &mut c, kernel).expect("gemm");
    let got = stream.clone_dtoh(&c).expect("download");
    nvfp4_kernels::nvfp4::check_close(&got, &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("{e}"));
    println!("GEMM 256x512x2048 {kernel:?} on cudarc buffers: every output within 1e-3");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn eight_threads_on_their_own_streams_get_their_results_and_load_the_kernel_once() {
    let device = device();
    let start = std::sync::Arc::new(std::sync::Barrier::new(8));
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            let (device, start) = (device.new_stream().expect("stream"), start.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut rng = Rng::new(90 + i);
                let (a, b) = nvfp4_kernels::nvfp4::gemv_inputs(&mut rng, 2432, 4608, 2, Inputs::Wide)
                    .map_err(|e| e.to_string())?;
                let want = nvfp4_kernels::nvfp4::gemv_reference(&a, &b);
                let da = gemv::DeviceNvfp4::upload(&device, &a).map_err(|e| e.to_string())?;
                let db = gemv::DeviceNvfp4::upload(&device, &b).map_err(|e| e.to_string())?;
                let mut c = device
                    .upload(&vec![nvfp4_dsl::f16::NAN; 2432 * 2])
                    .map_err(|e| e.to_string())?;
                device.synchronize().map_err(|e| e.to_string())?;
                start.wait();
                // 50 launches per thread, all threads at once.
                for _ in 0..50 {
                    gemv::gemv(&device, &da, &db, &mut c).map_err(|e| e.to_string())?;
                }
                let got = device.download(&c).map_err(|e| e.to_string())?;
                nvfp4_kernels::nvfp4::check_close(&got, &want, 1e-3, 1e-3)
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        t.join().expect("thread").unwrap_or_else(|e| panic!("thread {i}: {e}"));
    }
    assert_eq!(device.module_loads(), 1, "the GEMV module must be loaded once");
    println!("8 threads x 50 GEMVs on their own streams: every output matches; the module was loaded once");
}

/// The dequantized weights of checkpoint layer `layer`: code * scale *
/// weight_scale_2, `[N][K]`.
fn dequantized_weights(checkpoint: &nvfp4_kernels::checkpoint::Checkpoint, n: usize, k: usize) -> Vec<f64> {
    use nvfp4_kernels::checkpoint::Shape;
    use nvfp4_kernels::nvfp4::{e2m1_to_f32, e4m3_to_f32};
    use safetensors::Dtype;
    let codes = checkpoint
        .tensor("layer.weight", Dtype::U8, Shape::Exact(&[n, k / 2]))
        .expect("weight");
    let scales = checkpoint
        .tensor("layer.weight_scale", Dtype::F8_E4M3, Shape::Exact(&[n, k / 16]))
        .expect("weight_scale");
    let global = f64::from(checkpoint.scale("layer.weight_scale_2").expect("weight_scale_2"));
    (0..n * k)
        .map(|i| {
            let code = codes[i / 2] >> (4 * (i % 2));
            f64::from(e2m1_to_f32(code)) * f64::from(e4m3_to_f32(scales[i / 16])) * global
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU and the file scripts/modelopt_linear.py writes; run with --ignored on a GPU host"]
fn a_pytorch_checkpoint_loads_and_matches_pytorch() {
    use nvfp4_kernels::checkpoint::{Checkpoint, Shape};
    use nvfp4_kernels::linear::{Linear, error_bound};
    use safetensors::Dtype;
    let path = std::env::var_os("NVFP4_TORCH_CHECKPOINT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| ".gpu/modelopt_linear.safetensors".into());
    assert!(
        path.is_file(),
        "{} is missing: write it with `python3 scripts/modelopt_linear.py {}` (torch and safetensors)",
        path.display(),
        path.display()
    );
    let device = device();
    let checkpoint = Checkpoint::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let linear = Linear::load(&device, &checkpoint, "layer").unwrap_or_else(|e| panic!("{e}"));
    let (n, k) = (linear.n, linear.k);
    let w = dequantized_weights(&checkpoint, n, k);
    for (x_name, y_name) in [("x_one", "y_one"), ("x_many", "y_many")] {
        let tokens = checkpoint.shape(x_name).expect("x")[0];
        let x_bytes = checkpoint
            .tensor(x_name, Dtype::BF16, Shape::Exact(&[tokens, k]))
            .expect("x");
        let x: Vec<nvfp4_dsl::bf16> = x_bytes
            .chunks_exact(2)
            .map(|b| nvfp4_dsl::bf16::from_le_bytes([b[0], b[1]]))
            .collect();
        let y_bytes = checkpoint
            .tensor(y_name, Dtype::F32, Shape::Exact(&[tokens, n]))
            .expect("y");
        let y_torch: Vec<f64> = y_bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect();
        let dx = device.upload(&x).expect("upload");
        let got = device
            .download(&linear.forward(&device, &dx, tokens).unwrap_or_else(|e| panic!("{e}")))
            .expect("download");
        let xf: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
        let bound = error_bound(&xf, &w, &y_torch, tokens, n, k, linear.input_scale);
        let (mut worst, mut worst_ratio) = (0.0f64, 0.0f64);
        for (i, ((g, want), b)) in got.iter().zip(&y_torch).zip(&bound).enumerate() {
            let err = (g.to_f64() - want).abs();
            assert!(
                err <= *b,
                "{x_name}: output {i} is {g}, PyTorch's {want}: error {err:.3e} over the bound {b:.3e}"
            );
            worst = worst.max(err);
            worst_ratio = worst_ratio.max(err / b);
        }
        println!(
            "{x_name} ({tokens} tokens, {}): every output within the NVFP4 bound of PyTorch's f32 matmul; worst error {worst:.3e}, worst error / bound {worst_ratio:.3}",
            if linear.uses_gemm(&device, tokens) {
                "GEMM"
            } else {
                "GEMV"
            }
        );
    }
}

/// The buffers of one step of a decoder layer's input projection: an f16
/// token, its NVFP4 quantization, and two GEMV outputs.
struct Step {
    x: cudarc::driver::CudaSlice<nvfp4_dsl::f16>,
    codes: cudarc::driver::CudaSlice<u8>,
    scales: cudarc::driver::CudaSlice<u8>,
    y: cudarc::driver::CudaSlice<nvfp4_dsl::f16>,
    y2: cudarc::driver::CudaSlice<nvfp4_dsl::f16>,
}

impl Step {
    /// Quantizes x (a kernel without PDL), then a GEMV that reads the
    /// quantized token after `griddepcontrol.wait` (PDL), then one that
    /// also loads the weights before it (its predecessor wrote y, not them).
    fn run(
        &mut self,
        device: &Device,
        weights: nvfp4_kernels::gemv::Nvfp4View<'_>,
    ) -> Result<(), nvfp4_kernels::Error> {
        use nvfp4_kernels::gemv::{GemvConfig, Nvfp4View};
        use nvfp4_kernels::quantize::{self, ScaleLayout};
        let k = weights.k;
        let plain = ScaleLayout::Plain;
        // Input scale 0.5 keeps the outputs of the test's wide weights
        // within f16 (1/1344, the scale of x's amax, overflows them).
        quantize::quantize(device, &self.x, 1, 1, k, 0.5, plain, &mut self.codes, &mut self.scales)?;
        let token = Nvfp4View::new(1, k, 1, &self.codes, &self.scales)?;
        gemv::gemv_scaled_with(device, GemvConfig::choose(k), 0.5, weights, token, &mut self.y)?;
        gemv::gemv(device, weights, token, &mut self.y2)
    }

    fn outputs(&self, stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> Vec<nvfp4_dsl::f16> {
        let mut out = stream.clone_dtoh(&self.y).expect("download");
        out.extend(stream.clone_dtoh(&self.y2).expect("download"));
        out
    }

    fn poison(&mut self, stream: &std::sync::Arc<cudarc::driver::CudaStream>) {
        let nan = vec![nvfp4_dsl::f16::NAN; self.y.len()];
        stream.memcpy_htod(&nan, &mut self.y).expect("poison");
        stream.memcpy_htod(&nan, &mut self.y2).expect("poison");
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn a_captured_graph_replays_what_direct_launches_compute() {
    use cudarc::driver::CudaContext;
    use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    use nvfp4_kernels::gemv::Nvfp4View;
    use nvfp4_kernels::nvfp4::{check_close, gemv_reference};
    use nvfp4_kernels::quantize::quantize_reference;
    let _capturing = context_sync_lock(false);
    let ctx = CudaContext::new(0).expect("context");
    // SAFETY: every buffer below is used on `stream` only; a capture cannot
    // wait on cudarc's events recorded outside it.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().expect("stream");
    let device = Device::from_cuda_stream(stream.clone()).expect("device");
    let (m, k) = (4096, 7168);
    let mut rng = Rng::new(83);
    let (w, _) = nvfp4_kernels::nvfp4::gemv_inputs(&mut rng, m, k, 1, Inputs::Wide).expect("inputs");
    let (wd, ws) = cudarc_operand(&stream, &w);
    let weights = Nvfp4View::new(m, k, 1, &wd, &ws).expect("weights").assume_constant();
    let token = |rng: &mut Rng| -> Vec<nvfp4_dsl::f16> {
        (0..k)
            .map(|_| nvfp4_dsl::f16::from_f32(rng.uniform(-2.0, 2.0)))
            .collect()
    };
    let x1 = token(&mut rng);
    let mut step = Step {
        x: stream.clone_htod(&x1).expect("upload"),
        codes: stream.alloc_zeros::<u8>(k / 2).expect("alloc"),
        scales: stream.alloc_zeros::<u8>(k / 16).expect("alloc"),
        y: stream.alloc_zeros::<nvfp4_dsl::f16>(m).expect("alloc"),
        y2: stream.alloc_zeros::<nvfp4_dsl::f16>(m).expect("alloc"),
    };
    // Direct launches first: they load the modules, which a capture must not.
    step.run(&device, weights).expect("direct");
    let direct = step.outputs(&stream);
    let xf: Vec<f32> = x1.iter().map(|v| v.to_f32()).collect();
    let want = gemv_reference(&w, &quantize_reference(&xf, 1, k, 0.5).expect("reference"));
    let halved: Vec<f64> = want.iter().map(|v| v * 0.5).collect();
    check_close(&direct[..m], &halved, 1e-3, 1e-3).unwrap_or_else(|e| panic!("direct, scaled: {e}"));
    check_close(&direct[m..], &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("direct: {e}"));

    step.poison(&stream);
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .expect("capture");
    step.run(&device, weights).expect("captured launches");
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))
        .expect("end capture")
        .expect("a graph");
    assert!(
        step.outputs(&stream).iter().all(|v| v.is_nan()),
        "a captured launch must not run"
    );
    graph.launch().expect("replay");
    let replayed = step.outputs(&stream);
    let same = |a: &[nvfp4_dsl::f16], b: &[nvfp4_dsl::f16]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same(&replayed, &direct), "the replay differs from the direct launches");

    // A new token in the same buffer: the graph reads it, 100 replays in a
    // row give what direct launches give.
    let x2 = token(&mut rng);
    stream.memcpy_htod(&x2, &mut step.x).expect("upload");
    step.run(&device, weights).expect("direct");
    let direct2 = step.outputs(&stream);
    step.poison(&stream);
    for _ in 0..100 {
        graph.launch().expect("replay");
    }
    assert!(
        same(&step.outputs(&stream), &direct2),
        "100 replays differ from the direct launches"
    );
    assert!(!same(&direct, &direct2), "the two tokens must give different results");
    println!(
        "quantize + 2 GEMVs (PDL) captured in a CUDA graph: replays equal direct launches bit for bit, for two tokens and 100 replays"
    );
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn a_linear_layer_forward_captured_in_a_graph_replays_bit_for_bit() {
    use cudarc::driver::CudaContext;
    use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    use nvfp4_kernels::linear::Linear;
    use nvfp4_kernels::quantize::quantize_reference;
    let _capturing = context_sync_lock(false);
    let ctx = CudaContext::new(0).expect("context");
    // SAFETY: every buffer below is used on `stream` only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().expect("stream");
    let device = Device::from_cuda_stream(stream.clone()).expect("device");
    let (n, k) = (1024, 2048);
    let mut rng = Rng::new(84);
    let w: Vec<f32> = (0..n * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let weight = quantize_reference(&w, n, k, 1.0 / 2688.0).expect("weights");
    let data: Vec<u8> = weight.data.iter().map(|b| b.0).collect();
    let scales: Vec<u8> = weight.scales.iter().map(|s| s.0).collect();
    let linear = Linear::new(&device, n, k, &data, &scales, 1.0 / 2688.0, 4.0 / 2688.0).expect("layer");
    for tokens in [1, 64] {
        let x: Vec<nvfp4_dsl::bf16> = (0..tokens * k)
            .map(|_| nvfp4_dsl::bf16::from_f32(rng.uniform(-4.0, 4.0)))
            .collect();
        let x = stream.clone_htod(&x).expect("upload");
        let mut workspace = linear.workspace(&device, tokens).expect("workspace");
        let rows = linear.output_rows(&device, tokens);
        let mut y = stream.alloc_zeros::<nvfp4_dsl::f16>(rows * n).expect("alloc");
        linear
            .forward_into(&device, &x, tokens, &mut workspace, &mut y)
            .expect("direct");
        let direct = stream.clone_dtoh(&y).expect("download");
        stream.memset_zeros(&mut y).expect("clear");
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .expect("capture");
        linear
            .forward_into(&device, &x, tokens, &mut workspace, &mut y)
            .expect("captured");
        let graph = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .expect("end capture")
            .expect("a graph");
        graph.launch().expect("replay");
        let replayed = stream.clone_dtoh(&y).expect("download");
        let same = direct.iter().zip(&replayed).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{tokens} tokens: the replay differs from the direct forward");
        // Direct calls after the capture reuse the workspace the GEMM kept
        // before it (the graph has its own).
        stream.memset_zeros(&mut y).expect("clear");
        linear
            .forward_into(&device, &x, tokens, &mut workspace, &mut y)
            .expect("direct after the capture");
        let again = stream.clone_dtoh(&y).expect("download");
        let same = direct.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{tokens} tokens: a direct forward after the capture differs");
        println!(
            "Linear {n}x{k}, {tokens} token(s) ({}): a captured forward replays bit for bit",
            if linear.uses_gemm(&device, tokens) {
                "GEMM"
            } else {
                "GEMV"
            }
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn a_device_dropped_on_another_thread_leaves_a_capture_valid_and_a_graph_outlives_its_device() {
    use cudarc::driver::CudaContext;
    use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    use nvfp4_kernels::samples::saxpy;
    let _capturing = context_sync_lock(false);
    let ctx = CudaContext::new(0).expect("context");
    // SAFETY: every buffer below is used on `stream` only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().expect("stream");
    let device = Device::from_cuda_stream(stream.clone()).expect("device");
    let mut rng = Rng::new(85);
    let x: Vec<f32> = (0..256).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let y: Vec<f32> = (0..256).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let dx = stream.clone_htod(&x).expect("upload");
    let mut dy = stream.clone_htod(&y).expect("upload");
    let config = LaunchConfig::linear(2, 128);
    // Every product below is exact (a power of two), so the sums are the CPU's.
    // SAFETY: one thread per element of dy; dx has as many (each saxpy).
    unsafe { saxpy::Kernel::launch(&device, config, &dx, &mut dy, 1.0) }.expect("direct, loads the module");
    stream.memcpy_htod(&y, &mut dy).expect("reset");
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .expect("capture");
    // SAFETY: as above.
    unsafe { saxpy::Kernel::launch(&device, config, &dx, &mut dy, 2.0) }.expect("captured");
    // Meanwhile another thread opens a device, runs a kernel and drops the
    // device, which unloads its modules.
    std::thread::spawn(move || {
        let other = Device::cuda(0).expect("a CUDA device");
        let mut rng = Rng::new(86);
        let x: Vec<f32> = (0..256).map(|_| rng.uniform(-4.0, 4.0)).collect();
        let dx = other.upload(&x).expect("upload");
        let mut dy = other.upload(&vec![1.0f32; 256]).expect("upload");
        // SAFETY: as above.
        unsafe { saxpy::Kernel::launch(&other, config, &dx, &mut dy, 4.0) }.expect("other thread");
        let got = other.download(&dy).expect("download");
        for (i, (g, v)) in got.iter().zip(&x).enumerate() {
            assert_eq!(g.to_bits(), (4.0 * v + 1.0).to_bits(), "other thread, y[{i}]");
        }
    })
    .join()
    .expect("the other thread");
    // SAFETY: as above.
    unsafe { saxpy::Kernel::launch(&device, config, &dx, &mut dy, 0.5) }.expect("captured after the drop");
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))
        .expect("end capture")
        .expect("a graph");
    // The graph outlives the device whose kernels it launches.
    drop(device);
    graph.launch().expect("replay");
    let got = stream.clone_dtoh(&dy).expect("download");
    for (i, ((g, xv), yv)) in got.iter().zip(&x).zip(&y).enumerate() {
        let want = 0.5 * xv + (2.0 * xv + yv);
        assert_eq!(g.to_bits(), want.to_bits(), "y[{i}]");
    }
    println!(
        "a device dropped on another thread during a capture: the capture stays valid, and its graph replays after its own device is dropped"
    );
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_approximate_functions_are_within_their_bounds_on_the_gpu() {
    let report = nvfp4_tests::approx::check(&device(), 9).unwrap_or_else(|e| panic!("{e}"));
    for (name, worst, unit, at) in report {
        println!("{name}: at most {worst:.3e} {unit} (at x = {at:e})");
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_last_block_to_arrive_sees_every_block_s_release_on_the_gpu() {
    let device = device();
    for (blocks, seed) in [(1000, 12), (20000, 13)] {
        nvfp4_tests::atomics::check(&device, blocks, seed).unwrap_or_else(|e| panic!("{e}"));
    }
    println!("1000 and 20000 blocks: tickets 0 .. n, and the last block summed every block's value");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn every_atomic_matches_the_host_on_the_gpu() {
    use nvfp4_tests::atomic_kernels::{check_all_ops, check_histogram, check_max_by_cas};
    let device = device();
    for seed in [100, 101] {
        for line in check_all_ops(&device, seed).unwrap_or_else(|e| panic!("seed {seed}: {e}")) {
            println!("seed {seed}: {line}");
        }
    }
    for (blocks, n) in [(1, 1000), (132, 1 << 22)] {
        check_histogram(&device, blocks, n, 31).unwrap_or_else(|e| panic!("{e}"));
        println!("histogram of {n} random bytes on {blocks} blocks: every bin matches");
    }
    check_max_by_cas(&device, 264, 1 << 20, 41).unwrap_or_else(|e| panic!("{e}"));
    println!("the maximum of 2^20 floats by compare-and-swap matches");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn integer_div_ceil_matches_std_on_the_gpu() {
    let pairs = nvfp4_tests::div_ceil::check(&device(), 11).unwrap_or_else(|e| panic!("{e}"));
    println!("{pairs} pairs of u32 and of u64: div_ceil as std (MAX for a zero divisor)");
}

/// A variant of the sm_90 PTX `ptx` whose entry is `fuzz`. The launcher
/// takes a `&'static Variant`: one is leaked per program of a bounded batch.
fn leaked_fuzz_variant(ptx: String) -> &'static Variant {
    let ptx: &'static str = Box::leak(ptx.into_boxed_str());
    Box::leak(Box::new(Variant {
        kernel: "fuzz",
        spec: "default",
        entry: "fuzz",
        ptx: Box::leak(vec![(Target::Sm90, ptx)].into_boxed_slice()),
        sources: &[],
        programmatic: false,
    }))
}

/// Runs a generated kernel (PTX from the compiler library) on `device`.
fn run_generated(device: &Device, variant: &'static Variant, inputs: &[u32], words: usize) -> Vec<u32> {
    try_run_generated(device, variant, inputs, words).unwrap_or_else(|e| panic!("{e}"))
}

/// `run_generated`, with a fault (which ends the CUDA context) as an error.
fn try_run_generated(
    device: &Device,
    variant: &'static Variant,
    inputs: &[u32],
    words: usize,
) -> Result<Vec<u32>, String> {
    let inp = device.upload(inputs).map_err(|e| format!("upload: {e:?}"))?;
    let mut out = device.alloc_zeroed::<u32>(words).map_err(|e| format!("alloc: {e:?}"))?;
    let config = LaunchConfig::linear(program::BLOCKS, program::THREADS);
    let mut args = [KernelArg::from(&inp), KernelArg::from(&mut out)];
    // SAFETY: every thread writes its own `slots()` words of `out` and reads
    // `inp` at indices below its length.
    unsafe { nvfp4_dsl::launch(device, variant, config, &mut args) }.map_err(|e| format!("launch: {e:?}"))?;
    device.download(&out).map_err(|e| format!("download: {e:?}"))
}

/// Generated programs where the GPU differs from the emulator because of
/// the driver's JIT, not of our PTX (each checked on the H100).
const KNOWN_DRIVER_DIFFERENCES: &[(u64, &str)] = &[
    (
        5000115,
        "the JIT folds constant f32 add.rn/sub.rn with a rounding that breaks a tie away from even (the_gpu_rounds_f32_ties_to_even_where_the_driver_cannot_fold_constants)",
    ),
    (
        6003704,
        "ptxas writes `i32::MIN | (negative >> 1)` as an add that carries the sign bit out (ptxas_adds_where_an_or_of_the_sign_bit_is_written)",
    ),
];

/// Generated programs that ptxas (the driver's JIT) miscompiles into an
/// illegal address: not run, since a fault ends the CUDA context and so
/// the batch.
const KNOWN_DRIVER_FAULTS: &[(u64, &str)] = &[(
    5001421,
    "ptxas reuses the uniform register that holds `out` on the other side of a divergent branch (ptxas_clobbers_a_uniform_register_live_across_a_divergent_branch)",
)];

/// The differential fuzzer's programs on the GPU and on the emulator: the
/// same bits (the approximate functions within their documented bounds).
/// `NVFP4_GPU_FUZZ_PROGRAMS` sets the batch (default 2000); every program
/// runs, each mismatch is printed (with its PTX and source written to
/// `NVFP4_GPU_FUZZ_DUMP`, a directory, when set) and the test fails at the
/// end if there was any.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn generated_kernels_give_the_same_bits_on_the_gpu_as_on_the_emulator() {
    let gpu = device();
    let emulator = Device::emulator(Target::Sm90);
    let programs: u64 = std::env::var("NVFP4_GPU_FUZZ_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dump = std::env::var_os("NVFP4_GPU_FUZZ_DUMP").map(std::path::PathBuf::from);
    let first: u64 = std::env::var("NVFP4_GPU_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000_000);
    // A fault (CUDA_ERROR_ILLEGAL_ADDRESS) ends the batch; with
    // NVFP4_GPU_FUZZ_VERBOSE set each seed is printed before it runs, so
    // the last one printed is the program that faulted.
    let verbose = std::env::var_os("NVFP4_GPU_FUZZ_VERBOSE").is_some();
    let mut mismatches = Vec::new();
    for seed in first..first + programs {
        if verbose {
            use std::io::Write;
            println!("running seed {seed}");
            std::io::stdout().flush().expect("flush");
        }
        if let Some((_, why)) = KNOWN_DRIVER_FAULTS.iter().find(|(known, _)| *known == seed) {
            println!("seed {seed}: skipped, a known driver fault: {why}");
            continue;
        }
        let p = program::Program::generate(seed);
        let ptx = p.compile_ptx().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let variant = leaked_fuzz_variant(ptx);
        let inputs = program::inputs(seed);
        let words = p.slots() * (program::THREADS * program::BLOCKS) as usize;
        let on_gpu = run_generated(&gpu, variant, &inputs, words);
        let on_emulator = run_generated(&emulator, variant, &inputs, words);
        let want = p.interpret(&inputs);
        if let Err(e) = p.compare_gpu(&on_gpu, &on_emulator, &want) {
            println!("seed {seed}: {e}");
            if let Some(dir) = &dump {
                std::fs::create_dir_all(dir).expect("dump directory");
                std::fs::write(dir.join(format!("seed-{seed}.ptx")), variant.ptx[0].1).expect("write");
                std::fs::write(dir.join(format!("seed-{seed}.rs")), p.source()).expect("write");
            }
            match KNOWN_DRIVER_DIFFERENCES.iter().find(|(known, _)| *known == seed) {
                Some((_, why)) => println!("seed {seed}: a known driver difference: {why}"),
                None => mismatches.push(seed),
            }
        }
    }
    println!(
        "{programs} generated programs on the GPU and the emulator: {} mismatches {mismatches:?} ({} known driver differences listed)",
        mismatches.len(),
        KNOWN_DRIVER_DIFFERENCES.len()
    );
    assert!(
        mismatches.is_empty(),
        "the GPU and the emulator disagree on seeds {mismatches:?}"
    );
}

/// GPU fuzz seed 5000115: the H100 gave `0x790f07e5` where the emulator
/// (IEEE, and the SASS of the CUDA 13.0.88 ptxas, which folds it to a
/// constant) gives `0x790f07e6` for `x - (((x + x) + x) + x)` with the
/// constant x = `0xF83EB532` in `add.rn`/`sub.rn`. The exact result, -3x,
/// lies half-way between the two; ties-to-even gives `...e6`. Measured on
/// the H100 with driver 580.159.04: with x loaded from memory the GPU gives
/// `...e6`, with x a constant `...e5`: the driver's JIT folds the constant
/// arithmetic with another rounding. The test checks the loaded case and
/// prints the constant one (a driver difference no code of ours can
/// change; `KNOWN_DRIVER_DIFFERENCES` lists the seed for the batch).
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_gpu_rounds_f32_ties_to_even_where_the_driver_cannot_fold_constants() {
    let gpu = device();
    let emulator = Device::emulator(Target::Sm90);
    let kernel = |load: bool| {
        let x = if load {
            "ld.global.f32 %f1, [%rd2];"
        } else {
            "mov.f32 %f1, 0fF83EB532;"
        };
        format!(
            ".version 7.8\n.target sm_90\n.address_size 64\n\
             .visible .entry fuzz(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)\n{{\n\
             .reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<8>;\n\
             ld.param.u64 %rd1, [a];\ncvta.to.global.u64 %rd2, %rd1;\n\
             ld.param.u64 %rd3, [c];\ncvta.to.global.u64 %rd4, %rd3;\n\
             {x}\n\
             add.rn.f32 %f2, %f1, %f1;\nadd.rn.f32 %f3, %f2, %f1;\nadd.rn.f32 %f4, %f3, %f1;\n\
             sub.rn.f32 %f5, %f1, %f4;\n\
             mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmad.lo.u32 %r3, %r2, 64, %r1;\n\
             mul.wide.u32 %rd5, %r3, 4;\nadd.s64 %rd6, %rd4, %rd5;\nst.global.f32 [%rd6], %f5;\nret;\n}}\n"
        )
    };
    let inputs = [0xF83E_B532u32; 4];
    let words = (program::THREADS * program::BLOCKS) as usize;
    let mut report = Vec::new();
    for load in [false, true] {
        let variant = leaked_fuzz_variant(kernel(load));
        let on_gpu = run_generated(&gpu, variant, &inputs, words)[0];
        let emulated = run_generated(&emulator, variant, &inputs, words)[0];
        let how = if load { "loaded" } else { "constant" };
        println!("x - (((x + x) + x) + x), x = 0xf83eb532 {how}: GPU {on_gpu:#010x}, emulator {emulated:#010x}");
        report.push((how, on_gpu, emulated));
    }
    let (_, on_gpu, emulated) = report[1];
    assert_eq!(on_gpu, emulated, "x loaded: the GPU and the emulator differ");
}

/// GPU fuzz seed 5001421 faulted: threads that take the `else` of a
/// divergent `if` stored `out[base + 4]` at `0x2a_41d48000 + 4 * (base +
/// 4)`, not in `out`. In the CUDA 13.0.88 SASS of its PTX (`ptxas
/// -arch=sm_90`), `out`'s pointer sits in the uniform register pair
/// UR6:UR7 from the top of the kernel to the `else`'s store, and the
/// `then` side overwrites UR6 (`ULDC.64 UR6, c[0x0][0x210]`, then `UMOV
/// UR6, 0x41d48000`, the 26.5f32 of an `f32` division). Uniform registers
/// are per warp: a warp that diverges runs both sides, so where it runs the
/// `then` side first its `else` threads store through UR6 = 0x41d48000 and
/// UR7 = the pointers' high word, which is the faulting address. Our PTX
/// is plain (no `.uni`, no undefined register); this is ptxas's register
/// allocation. The kernel here is the program reduced by hand (local ptxas
/// still shows the clobber): a divergent `if` whose `then` does an unused
/// `div.u64` and a `div.rn.f32` of a constant, and a `div.u64` and a
/// `div.rn.f32` after it. Each control changes one thing, and the local
/// SASS then keeps `out` intact: the quotient stored, the numerator
/// loaded, no divisions after the `if`. The controls run first (a fault
/// ends the CUDA context); each must match the emulator in every output
/// word, and the reduced kernel must fault (H100, driver 580.159.04: it
/// does). When it runs instead, the driver's ptxas was fixed: take seed
/// 5001421 off `KNOWN_DRIVER_FAULTS`.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn ptxas_clobbers_a_uniform_register_live_across_a_divergent_branch() {
    let gpu = device();
    let emulator = Device::emulator(Target::Sm90);
    let kernel = |then_extra: &str, numerator: &str, after: bool| {
        let after = if after {
            "ld.global.u32 %r13, [%rd7+32];\nld.global.u32 %r14, [%rd7+36];\nmov.b64 %rd16, {%r13, %r14};\n\
             or.b64 %rd16, %rd16, 1;\ndiv.u64 %rd17, 18446744073709551614, %rd16;\n\
             ld.global.u32 %r15, [%rd7+40];\ncvt.rn.f32.u32 %f3, %r15;\ndiv.rn.f32 %f4, 0f41700000, %f3;\n"
        } else {
            ""
        };
        format!(
            ".version 7.8\n.target sm_90\n.address_size 64\n\
             .visible .entry fuzz(.param .u64 inp, .param .u64 inp_len, .param .u64 out, .param .u64 out_len)\n{{\n\
             .reg .pred %p<4>;\n.reg .b32 %r<24>;\n.reg .b64 %rd<24>;\n.reg .f32 %f<8>;\n\
             ld.param.u64 %rd1, [inp];\ncvta.to.global.u64 %rd2, %rd1;\n\
             ld.param.u64 %rd3, [out];\ncvta.to.global.u64 %rd4, %rd3;\n\
             mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r4, %r2, %r3, %r1;\n\
             mul.lo.u32 %r5, %r4, 4;\ncvt.u64.u32 %rd5, %r5;\nmul.wide.u32 %rd6, %r4, 4;\nadd.s64 %rd7, %rd2, %rd6;\n\
             shl.b64 %rd8, %rd5, 2;\nadd.s64 %rd9, %rd4, %rd8;\nst.global.u32 [%rd9], 7;\n\
             ld.global.u32 %r6, [%rd7+4];\nld.global.u32 %r7, [%rd7+8];\nsetp.eq.u32 %p1, %r6, %r7;\n\
             @!%p1 bra $L_else;\n\
             ld.global.u32 %r8, [%rd7+12];\nld.global.u32 %r9, [%rd7+16];\nmov.b64 %rd10, {{%r8, %r9}};\n\
             ld.global.u32 %r10, [%rd7+20];\nld.global.u32 %r11, [%rd7+24];\nmov.b64 %rd11, {{%r10, %r11}};\n\
             or.b64 %rd11, %rd11, 1;\ndiv.u64 %rd12, %rd10, %rd11;\n\
             ld.global.u32 %r12, [%rd7+28];\ncvt.rn.f32.u32 %f1, %r12;\n{numerator}\ndiv.rn.f32 %f2, %f5, %f1;\n\
             {then_extra}\
             bra $L_endif;\n\
             $L_else:\nadd.u64 %rd13, %rd5, 1;\nshl.b64 %rd14, %rd13, 2;\nadd.s64 %rd15, %rd4, %rd14;\n\
             st.global.u32 [%rd15], 1492091482;\n\
             $L_endif:\n{after}\
             ld.global.u32 %r16, [%rd7+48];\nadd.u64 %rd18, %rd5, 2;\nshl.b64 %rd19, %rd18, 2;\n\
             add.s64 %rd20, %rd4, %rd19;\nst.global.u32 [%rd20], %r16;\nret;\n}}\n"
        )
    };
    let constant = "mov.f32 %f5, 0f41D48000;";
    let loaded = "ld.global.f32 %f5, [%rd7+44];";
    let stored = "cvt.u32.u64 %r20, %rd12;\nst.global.u32 [%rd9+12], %r20;\n";
    // inp[i] = i / 2: thread gid takes the `then` side when gid is odd, so
    // every warp diverges.
    let inputs: Vec<u32> = (0..program::INPUTS as u32).map(|i| i / 2).collect();
    let words = 4 * (program::THREADS * program::BLOCKS) as usize;
    let cases = [
        ("control: the u64 quotient stored", kernel(stored, constant, true)),
        ("control: the f32 numerator loaded", kernel("", loaded, true)),
        ("control: no divisions after the if", kernel("", constant, false)),
        ("seed 5001421 reduced", kernel("", constant, true)),
    ];
    let [controls @ .., (reduced, reduced_ptx)] = cases;
    for (name, ptx) in controls {
        let variant = leaked_fuzz_variant(ptx);
        let on_gpu = run_generated(&gpu, variant, &inputs, words);
        let emulated = run_generated(&emulator, variant, &inputs, words);
        let differ: Vec<usize> = (0..words).filter(|&k| on_gpu[k] != emulated[k]).collect();
        println!(
            "{name}: {} of {words} words differ from the emulator {:?}",
            differ.len(),
            &differ[..differ.len().min(8)]
        );
        assert!(differ.is_empty(), "{name}: the GPU differs from the emulator");
    }
    match try_run_generated(&gpu, leaked_fuzz_variant(reduced_ptx), &inputs, words) {
        Err(fault) => println!("{reduced}: faults as ptxas compiles it ({fault})"),
        Ok(_) => panic!("{reduced}: ran without a fault; take seed 5001421 off KNOWN_DRIVER_FAULTS"),
    }
}

/// GPU fuzz seed 6003704, reduced (`nvfp4_tests::sign_bit_or_kernel`; the
/// SASS is in `tests/sass.rs`, which pins ptxas's add): on random inputs
/// the emulator gives Rust's `i32::MIN | ((0x882c6397 | x) >> 1)` and the
/// GPU that value with the sign bit cleared, in every word. When the GPU
/// agrees with the emulator, the driver's ptxas was fixed: take the seed
/// off `KNOWN_DRIVER_DIFFERENCES`.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn ptxas_adds_where_an_or_of_the_sign_bit_is_written() {
    let gpu = device();
    let emulator = Device::emulator(Target::Sm90);
    let variant = leaked_fuzz_variant(nvfp4_tests::sign_bit_or_kernel());
    let inputs = program::inputs(6003704);
    let words = (program::THREADS * program::BLOCKS) as usize;
    let on_gpu = run_generated(&gpu, variant, &inputs, words);
    let emulated = run_generated(&emulator, variant, &inputs, words);
    for k in 0..words {
        let rust = (i32::MIN | ((-2010356841i32 | inputs[k] as i32) >> 1)) as u32;
        assert_eq!(emulated[k], rust, "word {k}: the emulator differs from Rust");
        assert_eq!(
            on_gpu[k],
            rust & 0x7fff_ffff,
            "word {k}: GPU {:#010x}, Rust {rust:#010x}; if they agree, take seed 6003704 off KNOWN_DRIVER_DIFFERENCES",
            on_gpu[k]
        );
    }
    println!("{words} words: the GPU clears the sign bit Rust's result has in every one");
}

/// A struct kernel parameter (`#[repr(C)]` bytes through cudarc's
/// `DeviceRepr`) reads every field at its offset on the GPU as on the host.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn a_struct_parameter_is_read_at_its_repr_c_offsets_on_the_gpu() {
    use nvfp4_tests::struct_params::{Params, params_bits, read_params};
    let device = device();
    let mut rng = Rng::new(95);
    for _ in 0..50 {
        let p = Params::random(&mut rng);
        assert_eq!(read_params(&device, p), params_bits(&p), "{p:?}");
    }
}
