//! The project's kernels under 20 seeds of the emulator's adversarial
//! schedule each: warps in a different order, asynchronous copies and
//! tensor-core operations completing at different points, every hazard
//! check on; the outputs checked element by element against the CPU
//! reference. A failure names the seed; rerun one kernel under it with
//! `Device::emulator_with(target, Options::adversarial(seed))`.
//!
//! Release-mode tests (a debug build spends minutes on the references):
//!
//! ```text
//! cargo test --release -p nvfp4-tests --test emu_seeds
//! ```

use nvfp4_dsl::emu::Options;
use nvfp4_dsl::{Device, Target};
use nvfp4_kernels::gemm::{self, GemmKernel};
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::{self, Inputs};
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::samples;

/// The seeds of the schedule.
const SEEDS: std::ops::Range<u64> = 0..20;

/// An emulator of `target` under the adversarial schedule with `seed`.
fn device(target: Target, seed: u64) -> Device {
    Device::emulator_with(target, Options::adversarial(seed))
}

/// Runs `kernel` on one M x N x K problem under every seed (the inputs and
/// the reference made once).
fn gemm_under_seeds(target: Target, kernel: GemmKernel, (m, n, k): (usize, usize, usize)) {
    let (a, b) = nvfp4::gemm_inputs(&mut Rng::new(m as u64 ^ k as u64), m, n, k, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4::gemm_reference(&a, &b);
    for seed in SEEDS {
        let got = gemm::gemm_outputs(&device(target, seed), &a, &b, Some(kernel), None)
            .unwrap_or_else(|e| panic!("{kernel:?} {m}x{n}x{k}, seed {seed}: {e}"));
        nvfp4::check_close(&got, &want, 1e-3, 1e-3)
            .unwrap_or_else(|e| panic!("{kernel:?} {m}x{n}x{k}, seed {seed}: {e}"));
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_sm100a_gemm_passes_under_20_seeds() {
    // 5 K tiles: the 4-stage ring wraps; both tile widths.
    gemm_under_seeds(Target::Sm100a, GemmKernel::Sm100 { bn: 128 }, (128, 128, 1280));
    gemm_under_seeds(Target::Sm100a, GemmKernel::Sm100 { bn: 256 }, (128, 256, 1280));
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_sm90a_gemm_passes_under_20_seeds() {
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
fn the_gemv_passes_under_20_seeds() {
    for target in [Target::Sm90, Target::Sm100a] {
        for (ksplit, warps) in [(1, 4), (2, 8), (8, 8)] {
            let cfg = GemvConfig { rows: 4, ksplit, warps };
            for seed in SEEDS {
                gemv::check_gemv(
                    &device(target, seed),
                    &mut Rng::new(seed),
                    (64, 512, 2),
                    Inputs::Wide,
                    Some(cfg),
                )
                .unwrap_or_else(|e| panic!("{target} {cfg:?}, seed {seed}: {e}"));
            }
        }
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test emu_seeds"
)]
fn the_samples_pass_under_20_seeds() {
    for target in [Target::Sm90, Target::Sm100a] {
        for seed in SEEDS {
            let reports = samples::check_all(&device(target, seed), seed, true)
                .unwrap_or_else(|e| panic!("{target}, seed {seed}: {e}"));
            assert_eq!(reports.len(), 5);
        }
    }
}
