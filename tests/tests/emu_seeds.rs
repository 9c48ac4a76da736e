//! The project's kernels under 20 seeds of the emulator's adversarial
//! schedule and 10 of its priority (PCT) schedule each: warps in a
//! different order (at random, or one running as far ahead as it can),
//! asynchronous copies and tensor-core operations completing at different
//! points, every hazard check on, and under the odd seeds independent
//! thread scheduling (a diverged warp's lanes in separate groups until the
//! program reconverges them); the outputs checked element by element
//! against the CPU reference. A failure names the schedule; rerun one
//! kernel under it with `Device::emulator_with(target, options)`.
//!
//! Release-mode tests (a debug build spends minutes on the references):
//!
//! ```text
//! cargo test --release -p nvfp4-tests --test emu_seeds
//! ```

use nvfp4_dsl::emu::{Options, Schedule};
use nvfp4_dsl::{Device, Target};
use nvfp4_kernels::gemm::{self, GemmKernel};
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::{self, Inputs};
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::samples;

/// The schedules: 20 adversarial seeds and 10 priority ones, the odd
/// ones with independent thread scheduling.
fn schedules() -> impl Iterator<Item = Options> {
    let its = |o: Options, seed: u64| {
        if seed % 2 == 1 { o.with_independent_threads() } else { o }
    };
    (0..20)
        .map(move |s| its(Options::adversarial(s), s))
        .chain((0..10).map(move |s| its(Options::priority(s), s)))
}

/// The seed of a schedule (also the seed of its inputs where they vary).
fn seed(options: &Options) -> u64 {
    match options.schedule {
        Schedule::Adversarial { seed } | Schedule::Priority { seed } => seed,
        Schedule::Sequential => 0,
    }
}

/// Runs `kernel` on one M x N x K problem under every seed (the inputs and
/// the reference made once).
fn gemm_under_seeds(target: Target, kernel: GemmKernel, (m, n, k): (usize, usize, usize)) {
    let (a, b) = nvfp4::gemm_inputs(&mut Rng::new(m as u64 ^ k as u64), m, n, k, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4::gemm_reference(&a, &b);
    for options in schedules() {
        let device = Device::emulator_with(target, options);
        let got = gemm::gemm_outputs(&device, &a, &b, Some(kernel), None)
            .unwrap_or_else(|e| panic!("{kernel:?} {m}x{n}x{k}, {options:?}: {e}"));
        nvfp4::check_close(&got, &want, 1e-3, 1e-3)
            .unwrap_or_else(|e| panic!("{kernel:?} {m}x{n}x{k}, {options:?}: {e}"));
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_sm100a_gemm_passes_under_30_schedules() {
    // 5 K tiles: the 4-stage ring wraps; both tile widths.
    gemm_under_seeds(Target::Sm100a, GemmKernel::Sm100 { bn: 128 }, (128, 128, 1280));
    gemm_under_seeds(Target::Sm100a, GemmKernel::Sm100 { bn: 256 }, (128, 256, 1280));
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_sm90a_gemm_passes_under_30_schedules() {
    // 5 or 6 stages of 128 per block (the ring and the decoded tiles
    // wrap), each tiling width and each K split (K a multiple of 256).
    for (blocks, split) in [(1, 1), (2, 2), (1, 4)] {
        let k = (640 * split as usize).next_multiple_of(256);
        gemm_under_seeds(
            Target::Sm90a,
            GemmKernel::Sm90 { blocks, split },
            (128, 128 * blocks as usize, k),
        );
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_gemv_passes_under_30_schedules() {
    for target in [Target::Sm90, Target::Sm100a] {
        for (ksplit, warps) in [(1, 4), (2, 8), (8, 8)] {
            let cfg = GemvConfig { rows: 4, ksplit, warps };
            for options in schedules() {
                gemv::check_gemv(
                    &Device::emulator_with(target, options),
                    &mut Rng::new(seed(&options)),
                    (64, 512, 2),
                    Inputs::Wide,
                    Some(cfg),
                )
                .unwrap_or_else(|e| panic!("{target} {cfg:?}, {options:?}: {e}"));
            }
        }
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_samples_pass_under_30_schedules() {
    for target in [Target::Sm90, Target::Sm100a] {
        for options in schedules() {
            let reports = samples::check_all(&Device::emulator_with(target, options), seed(&options), true)
                .unwrap_or_else(|e| panic!("{target}, {options:?}: {e}"));
            assert_eq!(reports.len(), 6);
        }
    }
}
