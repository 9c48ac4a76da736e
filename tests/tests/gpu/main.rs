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
use nvfp4_kernels::{decode, encode, fidelity, gemm, samples};

// The differential fuzzer's programs, for the batch of generated kernels
// below.
use nvfp4_tests::program;

mod generated;
mod interop;

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

/// A debug build checks each column of a 2-D shared array that is not a
/// constant (a `trap` past its row): the transpose sample's debug PTX,
/// launched from this release binary, runs on the GPU as the release one
/// does where every column is inside its row.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn the_debug_build_s_column_checks_pass_on_the_gpu() {
    let device = device();
    let release = samples::transpose::Kernel::VARIANT;
    let (debug, _) = release
        .builds
        .expect("the transpose sample's debug build checks its columns");
    let variant: &'static Variant = Box::leak(Box::new(Variant {
        kernel: release.kernel,
        spec: release.spec,
        entry: release.entry,
        ptx: debug,
        sources: release.sources,
        programmatic: release.programmatic,
        triggers_early: release.triggers_early,
        builds: None,
    }));
    let mut rng = Rng::new(9);
    for (rows, cols) in [(32, 32), (33, 65), (7, 40), (256, 96)] {
        let report = samples::check_transpose_build(&device, &mut rng, rows, cols, variant)
            .unwrap_or_else(|e| panic!("{rows} x {cols}: {e}"));
        println!("transpose, debug build: {} outputs match", report.checked);
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
fn every_rounding_boundary_encodes_as_the_cpu_does_on_the_gpu() {
    let checked = encode::check_encode(&device(), 3).unwrap_or_else(|e| panic!("{e}"));
    println!("{checked} values encode to Fp4x2, E4m3 and E4m3x2 as on the CPU, bit for bit");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn max_min_and_the_warp_intrinsics_of_narrowed_bounds_match_the_host_on_the_gpu() {
    let checked = nvfp4_tests::generic_ops::check(&device()).unwrap_or_else(|e| panic!("{e}"));
    println!("{checked} outputs of f16, bf16, f32 and f64 max/min and of generic warp reductions match the host");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn a_tile_stored_by_a_bulk_copy_reaches_global_memory_on_the_gpu() {
    nvfp4_tests::bulk_store::check(&device(), 132 * 64).unwrap_or_else(|e| panic!("{e}"));
}

/// A tile bulk-copied into the other block of a cluster of two arrives
/// (`tests/src/cluster_copy.rs`); also for `compute-sanitizer`.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn cluster_copy_for_the_sanitizer() {
    let device = device();
    if device.compute_capability().0 < 9 {
        return;
    }
    nvfp4_tests::cluster_copy::check(&device, 132 * 64).unwrap_or_else(|e| panic!("{e}"));
}

/// Values pushed into the other block of a cluster of two by
/// asynchronous stores arrive (`tests/src/store_async.rs`): 132 clusters,
/// every element; also for `compute-sanitizer`.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn store_async_for_the_sanitizer() {
    let device = device();
    if device.compute_capability().0 < 9 {
        return;
    }
    nvfp4_tests::store_async::check(&device, 264 * 64).unwrap_or_else(|e| panic!("{e}"));
}

/// A block spinning on an acquire load of a flag that the other block of
/// its cluster sets after its bulk copy (`tests/src/flag_spin.rs`): 132
/// clusters, every element; also for `compute-sanitizer`.
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn flag_spin_for_the_sanitizer() {
    let device = device();
    if device.compute_capability().0 < 9 {
        return;
    }
    let x: Vec<u32> = (0..132 * 64u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 5).collect();
    nvfp4_tests::flag_spin::check(&device, &x).unwrap_or_else(|e| panic!("{e}"));
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
        let tilings = [(1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (2, 8)]
            .map(|(blocks, split)| GemmKernel::Sm90 { blocks, split });
        // Stream-K over every multiprocessor (at most a block per K stage
        // of 128 of a tile), over 7 blocks, and as a persistent kernel of 4
        // whole tiles a block.
        let whole = GemmKernel::Sm90Stream {
            grid: (m / 128 * (n / 128) / 4) as u32,
        };
        let streams = [
            GemmKernel::stream_k(&device, m, n, k, 1),
            GemmKernel::Sm90Stream { grid: 7 },
            whole,
        ];
        for kernel in tilings.into_iter().chain(streams) {
            let kernel = Some(kernel);
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
/// pairs of clusters, for `compute-sanitizer --tool memcheck` and `--tool
/// racecheck` (see the README).
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

/// One stream-K GEMM over 7 blocks (partial segments, a tile's counter,
/// the last block's sum), for `compute-sanitizer --tool memcheck` and
/// `--tool synccheck`. Not for racecheck: compute-sanitizer 2025.3.1's
/// racecheck finds no hazard in it but crashes the process at its end
/// whenever the kernel ran (its consumers' `bar.arrive`; docs/perf.md
/// entry 18).
#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn stream_k_for_the_sanitizer() {
    let device = device();
    if device.compute_capability() != (9, 0) {
        return;
    }
    let stream = Some(GemmKernel::Sm90Stream { grid: 7 });
    gemm::check_gemm(
        &device,
        &mut Rng::new(55),
        (128, 512, 2048, 1),
        Inputs::Wide,
        stream,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!("GEMM M=128 N=512 K=2048 {stream:?}: within 1e-3 of the f64 reference");
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
            // On Hopper stream-K as well, over every multiprocessor (or
            // a block per K stage of 128 of a tile, where fewer).
            let chosen = GemmKernel::for_device(&gpu, m, n, k, 1);
            let stream = (target == Target::Sm90a).then(|| GemmKernel::stream_k(&gpu, m, n, k, 1));
            for kernel in [chosen, stream].into_iter().flatten() {
                let kernel = Some(kernel);
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
fn shuffles_and_warp_reductions_of_64_bit_values_match_the_host_on_the_gpu() {
    let words = nvfp4_tests::shuffle64::check(&device(), 64).unwrap_or_else(|e| panic!("{e}"));
    println!("{words} words of 64-bit shuffles and warp reductions as on the host");
}

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn integer_div_ceil_matches_std_on_the_gpu() {
    let pairs = nvfp4_tests::div_ceil::check(&device(), 11).unwrap_or_else(|e| panic!("{e}"));
    println!("{pairs} pairs of u32 and of u64: div_ceil as std (MAX for a zero divisor)");
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
