//! Correctness on a CUDA GPU against the CPU: the sample kernels, every FP4
//! and FP8 decode, and the GEMV on the task's test and benchmark shapes;
//! and the PTX emulator against the GPU, bit for bit.
//! Needs a GPU: run with `--ignored` on the GPU host (see the README).

use nvfp4_dsl::{Device, Target};
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::Inputs;
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::{decode, fidelity, gemm, samples};

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
fn the_gemm_refuses_a_gpu_older_than_blackwell() {
    let device = device();
    if device.compute_capability() == (10, 0) {
        return;
    }
    let err = gemm::check_gemm(&device, &mut Rng::new(1), (128, 128, 256, 1), Inputs::Wide, 128, None)
        .expect_err("the GEMM must not run below compute capability 10.0");
    assert!(matches!(err, nvfp4_kernels::Error::Unsupported(_)), "{err}");
    println!("{err}");
}
