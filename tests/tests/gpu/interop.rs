//! The kernels on the caller's cudarc context, streams and buffers, from
//! several threads, captured in CUDA graphs, and a PyTorch checkpoint.

use super::*;

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
    use nvfp4_kernels::gemm::{BlockedScales, GemmOperand};
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
    let va = GemmOperand::new(&device, 256, 2048, 1, &ad, BlockedScales(&asc)).expect("a");
    let vb = GemmOperand::new(&device, 512, 2048, 1, &bd, BlockedScales(&bsc)).expect("b");
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
fn gemms_captured_by_capture_graph_replay_bit_for_bit_on_the_graph_s_own_workspace() {
    use cudarc::driver::CudaContext;
    use nvfp4_kernels::gemm::DeviceGemmOperand;
    let _capturing = context_sync_lock(false);
    let ctx = CudaContext::new(0).expect("context");
    // SAFETY: every buffer below is used on `stream` only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().expect("stream");
    let device = Device::from_cuda_stream(stream.clone()).expect("device");
    let (m, n, k) = (256, 512, 2048);
    let Some(kernel) = GemmKernel::for_device(&device, m, n, k, 1) else {
        println!("no GEMM kernel for {}", device.describe());
        return;
    };
    let mut rng = Rng::new(86);
    // Three calls on different operands: in the graph, each
    // call's kernels overlap the call before (on the sm_90a GEMM, the next
    // decode writes the images the GEMM before does not read), so they
    // share the capture's workspace as direct calls share the stream's.
    let calls: Vec<_> = (0..3)
        .map(|_| gemm_inputs(&mut rng, m, n, k, 1, Inputs::Wide).expect("inputs"))
        .collect();
    let operands: Vec<_> = calls
        .iter()
        .map(|(a, b)| {
            (
                DeviceGemmOperand::upload(&device, a).expect("a"),
                DeviceGemmOperand::upload_weights(&device, b).expect("b"),
            )
        })
        .collect();
    let mut c: Vec<_> = (0..3)
        .map(|_| stream.alloc_zeros::<nvfp4_dsl::f16>(m * n).expect("alloc"))
        .collect();
    let run = |c: &mut [cudarc::driver::CudaSlice<nvfp4_dsl::f16>]| -> Result<(), nvfp4_kernels::Error> {
        for ((a, b), c) in operands.iter().zip(c.iter_mut()) {
            gemm::gemm_with(&device, a, b, c, kernel)?;
        }
        Ok(())
    };
    let poison = |c: &mut [cudarc::driver::CudaSlice<nvfp4_dsl::f16>]| {
        for c in c.iter_mut() {
            stream
                .memcpy_htod(&vec![nvfp4_dsl::f16::NAN; m * n], c)
                .expect("poison");
        }
    };
    let outputs = |c: &[cudarc::driver::CudaSlice<nvfp4_dsl::f16>]| -> Vec<Vec<nvfp4_dsl::f16>> {
        c.iter().map(|c| stream.clone_dtoh(c).expect("download")).collect()
    };
    poison(&mut c);
    run(&mut c).expect("direct");
    let direct = outputs(&c);
    for ((a, b), got) in calls.iter().zip(&direct) {
        let want = nvfp4_kernels::nvfp4::gemm_reference(a, b);
        nvfp4_kernels::nvfp4::check_close(got, &want, 1e-3, 1e-3).unwrap_or_else(|e| panic!("direct: {e}"));
    }
    poison(&mut c);
    let graph = device.capture_graph(|| run(&mut c)).expect("capture");
    assert!(
        outputs(&c).iter().flatten().all(|v| v.is_nan()),
        "a captured launch must not run"
    );
    let same = |got: &[Vec<nvfp4_dsl::f16>]| {
        got.iter()
            .flatten()
            .zip(direct.iter().flatten())
            .all(|(x, y)| x.to_bits() == y.to_bits())
    };
    graph.launch().expect("replay");
    assert!(same(&outputs(&c)), "the replay differs from the direct calls");
    // The graph owns its workspace: the stream's kept one freed, the
    // replays still give the same bits.
    device.free_workspaces();
    poison(&mut c);
    for _ in 0..10 {
        graph.launch().expect("replay");
    }
    assert!(same(&outputs(&c)), "ten replays after free_workspaces differ");
    println!("3 GEMMs {m}x{n}x{k} {kernel:?} captured by capture_graph: the replays give the direct calls' bits");
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
