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

// The compiler library and the differential fuzzer's programs, for the
// batch of generated kernels below.
#[allow(dead_code)]
#[path = "../nvfp4-dsl-macros/src/compiler/mod.rs"]
mod compiler;
#[allow(dead_code)]
#[path = "differential/program.rs"]
mod program;

fn device() -> Device {
    Device::cuda(0).expect("a CUDA device")
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
        for (blocks, split) in [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4)] {
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

/// One cluster-split GEMM, for `compute-sanitizer --tool memcheck` and
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
            // powers of two), so any difference there is a real one.
            if matches!(kind, Inputs::Task) {
                assert_eq!(differ, 0, "{m}x{n}x{k}: the task's inputs must give the same bits");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_approximate_functions_are_within_their_bounds_on_the_gpu() {
    let report = nvfp4_tests::approx::check(&device(), 9).unwrap_or_else(|e| panic!("{e}"));
    for (name, worst, at) in report {
        println!("{name}: at most {worst:.2} ulp against f64 (at x = {at:e})");
    }
}

/// Runs a generated kernel (PTX from the compiler library) on `device`.
fn run_generated(device: &Device, variant: &'static Variant, inputs: &[u32], words: usize) -> Vec<u32> {
    let inp = device.upload(inputs).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(words).expect("alloc");
    let config = LaunchConfig::linear(program::BLOCKS, program::THREADS);
    let mut args = [KernelArg::from(&inp), KernelArg::from(&mut out)];
    // SAFETY: every thread writes its own `slots()` words of `out` and reads
    // `inp` at indices below its length.
    unsafe { nvfp4_dsl::launch(device, variant, config, &mut args) }.expect("launch");
    device.download(&out).expect("download")
}

/// The differential fuzzer's programs on the GPU and on the emulator: the
/// same bits (the approximate functions within their documented bounds).
/// `NVFP4_GPU_FUZZ_PROGRAMS` sets the batch (default 2000).
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn generated_kernels_give_the_same_bits_on_the_gpu_as_on_the_emulator() {
    let gpu = device();
    let emulator = Device::emulator(Target::Sm90);
    let programs: u64 = std::env::var("NVFP4_GPU_FUZZ_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    for seed in 5_000_000..5_000_000 + programs {
        let p = program::Program::generate(seed);
        let ptx = p.compile_ptx().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        // The launcher takes a `&'static Variant`: one leaked per program
        // of this bounded batch.
        let ptx: &'static str = Box::leak(ptx.into_boxed_str());
        let variant: &'static Variant = Box::leak(Box::new(Variant {
            kernel: "fuzz",
            spec: "default",
            entry: "fuzz",
            ptx: Box::leak(vec![(Target::Sm90, ptx)].into_boxed_slice()),
            programmatic: false,
        }));
        let inputs = program::inputs(seed);
        let words = p.slots() * (program::THREADS * program::BLOCKS) as usize;
        let on_gpu = run_generated(&gpu, variant, &inputs, words);
        let on_emulator = run_generated(&emulator, variant, &inputs, words);
        let want = p.interpret(&inputs);
        p.compare_gpu(&on_gpu, &on_emulator, &want)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", p.source()));
    }
    println!("{programs} generated programs: the GPU and the emulator agree bit for bit");
}
