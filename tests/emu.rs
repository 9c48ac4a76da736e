//! Kernels on the PTX emulator (CI has no GPU): the sample kernels, every
//! GEMV specialisation on both targets, and the sm_100a block-scaled GEMM,
//! each against its CPU reference on random inputs with poisoned outputs.

use nvfp4_dsl::{Device, E4m3, Target};
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::Inputs;
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::{Error, decode, fidelity, gemm, samples};

fn emulators() -> [Device; 2] {
    [Device::emulator(Target::Sm90), Device::emulator(Target::Sm100a)]
}

#[test]
fn samples_match_the_cpu_on_the_emulator() {
    for device in emulators() {
        for seed in [11, 12] {
            let reports =
                samples::check_all(&device, seed, true).unwrap_or_else(|e| panic!("{}: {e}", device.describe()));
            assert_eq!(reports.len(), 5);
        }
    }
}

#[test]
fn every_fp4_and_fp8_byte_decodes_exactly_on_the_emulator() {
    for device in emulators() {
        decode::check_decode(&device).unwrap_or_else(|e| panic!("{}: {e}", device.describe()));
    }
}

#[test]
fn every_gemv_specialisation_matches_the_reference_on_both_targets() {
    let mut rng = Rng::new(31);
    for device in emulators() {
        // KSPLIT 1, 2 and 8 are the kernel's specialisations; the block
        // sizes cover one and several row groups per block.
        for (ksplit, warps) in [(1, 4), (1, 8), (2, 4), (8, 8)] {
            let cfg = GemvConfig { rows: 4, ksplit, warps };
            for (shape, kind) in [((64, 512, 2), Inputs::Wide), ((32, 1024, 1), Inputs::Task)] {
                gemv::check_gemv(&device, &mut rng, shape, kind, Some(cfg))
                    .unwrap_or_else(|e| panic!("{}: {e}", device.describe()));
            }
        }
    }
}

#[test]
fn the_gemv_check_catches_a_wrong_kernel_input() {
    // The same driver with swapped scale bytes in A must fail: the check
    // compares every element, so it cannot pass a kernel that reads the
    // scales wrongly.
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(32);
    let (a, b) = nvfp4_kernels::nvfp4::gemv_inputs(&mut rng, 32, 512, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4_kernels::nvfp4::gemv_reference(&a, &b);
    let mut da = gemv::DeviceNvfp4::upload(&device, &a).expect("upload");
    let mut scales = device.download(&da.scales).expect("download");
    assert_ne!(scales[0], scales[1], "the swap must change the input");
    scales.swap(0, 1);
    device.write(&mut da.scales, &scales).expect("write");
    let db = gemv::DeviceNvfp4::upload(&device, &b).expect("upload");
    let mut c = device.upload(&[nvfp4_dsl::f16::NAN; 32]).expect("upload");
    gemv::gemv(&device, &da, &db, &mut c).expect("launch");
    let got = device.download(&c).expect("download");
    assert!(nvfp4_kernels::nvfp4::check_close(&got, &want, 1e-3, 1e-3).is_err());
}

#[test]
fn the_gemm_matches_the_reference_on_the_sm100a_emulator() {
    let device = Device::emulator(Target::Sm100a);
    let mut rng = Rng::new(41);
    // Two tiles in M, two or more in N, K of 5 and 9 stages of 256 so the
    // 4-stage pipeline wraps (one and two rounds of refills); both tile
    // widths; both input generators.
    for (shape, bn, kind) in [
        ((256, 256, 1280, 1), 128, Inputs::Wide),
        ((128, 512, 2304, 1), 256, Inputs::Wide),
        ((256, 384, 512, 2), 128, Inputs::Task),
    ] {
        gemm::check_gemm(&device, &mut rng, shape, kind, bn, None).unwrap_or_else(|e| panic!("{shape:?} BN={bn}: {e}"));
    }
}

#[test]
fn the_gemm_check_fails_when_a_scales_are_permuted() {
    let device = Device::emulator(Target::Sm100a);
    let mut rng = Rng::new(42);
    // Swap two 512-byte blocks of A's blocked scales (the layout of rows
    // 0-31 and 32-63 of one K tile): a kernel reading the plain layout, or
    // the emulator reading scales from the wrong place, looks like this.
    let permute = |scales: &mut [E4m3]| {
        let (first, rest) = scales.split_at_mut(512);
        first.swap_with_slice(&mut rest[..512]);
    };
    let err = gemm::check_gemm(&device, &mut rng, (128, 128, 512, 1), Inputs::Wide, 128, Some(&permute))
        .expect_err("permuted scales must not match the reference");
    assert!(matches!(err, Error::Mismatch(_)), "{err}");
}

#[test]
fn the_fidelity_run_is_deterministic_on_the_emulator() {
    // The H100 comparison (`tests/gpu.rs`) needs the emulator's run to be a
    // function of the seed alone.
    let device = Device::emulator(Target::Sm90);
    let first = fidelity::run_all(&device, 5).unwrap_or_else(|e| panic!("{e}"));
    let again = fidelity::run_all(&Device::emulator(Target::Sm90), 5).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.len(), 9);
    assert!(fidelity::differences(&first, &again).is_empty());
    let other_seed = fidelity::run_all(&device, 6).unwrap_or_else(|e| panic!("{e}"));
    // Every output but the decode table (all 256 bytes, whatever the seed)
    // depends on the random inputs.
    let changed = fidelity::differences(&first, &other_seed);
    assert_eq!(changed.len(), first.len() - 1, "{changed:?}");
}
