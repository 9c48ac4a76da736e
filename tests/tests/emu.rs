//! Kernels on the PTX emulator (CI has no GPU): the sample kernels, every
//! GEMV specialisation on both targets, and the sm_100a block-scaled GEMM,
//! each against its CPU reference on random inputs with poisoned outputs.

use nvfp4_dsl::{Device, E4m3, LaunchConfig, Target};
use nvfp4_kernels::gemm::GemmKernel;
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::Inputs;
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::{Error, decode, encode, fidelity, gemm, samples};

fn emulators() -> [Device; 2] {
    [Device::emulator(Target::Sm90), Device::emulator(Target::Sm100a)]
}

#[test]
fn samples_match_the_cpu_on_the_emulator() {
    for device in emulators() {
        for seed in [11, 12] {
            let reports =
                samples::check_all(&device, seed, true).unwrap_or_else(|e| panic!("{}: {e}", device.describe()));
            assert_eq!(reports.len(), 6);
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
fn every_rounding_boundary_encodes_as_the_cpu_does_on_the_emulator() {
    for device in emulators() {
        encode::check_encode(&device, 3).unwrap_or_else(|e| panic!("{}: {e}", device.describe()));
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
        gemm::check_gemm(&device, &mut rng, shape, kind, Some(GemmKernel::Sm100 { bn }), None)
            .unwrap_or_else(|e| panic!("{shape:?} BN={bn}: {e}"));
    }
}

#[test]
fn the_hopper_gemm_matches_the_reference_on_the_sm90a_emulator() {
    let device = Device::emulator(Target::Sm90a);
    let mut rng = Rng::new(45);
    // Every tiling: two tiles of A and of B rows with K of 10 stages of 128
    // (the 4-stage ring wraps twice, the 3 decoded tiles three times); K
    // split over 2, 4 (10 stages: 2, 3, 2, 3 per block) and 8 blocks (with
    // the reduction kernel); 128- and 256-row tiles of B; batches of 2 with
    // the task's generator (one with two tiles of A per batch).
    for (shape, blocks, split, kind) in [
        ((256, 512, 1280, 1), 2, 1, Inputs::Wide),
        ((128, 256, 768, 1), 1, 2, Inputs::Wide),
        ((256, 256, 512, 2), 1, 2, Inputs::Task),
        ((128, 256, 1280, 1), 2, 4, Inputs::Wide),
        ((128, 256, 512, 2), 1, 4, Inputs::Task),
        ((128, 384, 512, 1), 1, 1, Inputs::Wide),
        ((256, 256, 768, 1), 2, 2, Inputs::Wide),
        ((256, 256, 1024, 2), 1, 8, Inputs::Wide),
    ] {
        let kernel = GemmKernel::Sm90 { blocks, split };
        gemm::check_gemm(&device, &mut rng, shape, kind, Some(kernel), None)
            .unwrap_or_else(|e| panic!("{shape:?} {kernel:?}: {e}"));
    }
}

#[test]
fn the_stream_k_gemm_matches_the_reference_on_the_sm90a_emulator() {
    let mut rng = Rng::new(46);
    // Stream-K over grids that cut the tiles' K stages every way a range
    // can fall, each under two seeds (the blocks run in an order drawn from
    // the seed, so a tile is summed by any of its blocks, from registers
    // or from memory): 3 blocks over 2 tiles of 10 stages (a block with
    // two partial segments); 2 blocks over 5 tiles of 4 (whole tiles
    // between partial ones); batches of 2; two tiles of A over 7 blocks
    // (a block inside one tile); a block per stage (a tile's four blocks).
    for (shape, grid, kind) in [
        ((128, 256, 1280, 1), 3, Inputs::Wide),
        ((128, 640, 512, 1), 2, Inputs::Task),
        ((128, 256, 512, 2), 3, Inputs::Task),
        ((256, 256, 768, 1), 7, Inputs::Wide),
        ((128, 128, 512, 1), 4, Inputs::Wide),
    ] {
        let kernel = GemmKernel::Sm90Stream { grid };
        for seed in [1, 2] {
            let device = Device::emulator_with(Target::Sm90a, nvfp4_dsl::emu::Options::adversarial(seed));
            gemm::check_gemm(&device, &mut rng, shape, kind, Some(kernel), None)
                .unwrap_or_else(|e| panic!("{shape:?} {kernel:?} seed {seed}: {e}"));
        }
    }
}

#[test]
fn a_gemm_of_several_waves_of_short_tiles_runs_as_a_persistent_kernel_of_whole_tiles() {
    // On a GPU of 4 multiprocessors 12 tiles of 4 K stages are 3 waves:
    // `gemm` runs the stream-K kernel over 4 blocks of 3 whole tiles each.
    on_four_multiprocessors((256, 768, 512), GemmKernel::Sm90Stream { grid: 4 }, 47);
}

/// On an emulated GPU of 4 multiprocessors, under two seeds, `gemm` picks
/// `want` for `(m, n, k)` and matches the reference.
fn on_four_multiprocessors((m, n, k): (usize, usize, usize), want: GemmKernel, rng_seed: u64) {
    let mut rng = Rng::new(rng_seed);
    for seed in [1, 2] {
        let options = nvfp4_dsl::emu::Options {
            multiprocessors: Some(4),
            ..nvfp4_dsl::emu::Options::adversarial(seed)
        };
        let device = Device::emulator_with(Target::Sm90a, options);
        assert_eq!(GemmKernel::for_device(&device, m, n, k, 1), Some(want));
        gemm::check_gemm(&device, &mut rng, (m, n, k, 1), Inputs::Wide, None, None)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn a_gemm_whose_last_wave_is_part_empty_runs_stream_k_over_every_multiprocessor() {
    // On a GPU of 4 multiprocessors 5 tiles of 16 K stages are 2 waves of
    // which the second holds one tile (32 stages a block); stream-K over the
    // 4 blocks gives each 20: `gemm` cuts the tiles, and the blocks that
    // share one add their partial sums through the workspace.
    on_four_multiprocessors((128, 640, 2048), GemmKernel::Sm90Stream { grid: 4 }, 48);
}

#[test]
fn the_hopper_gemm_reads_a_before_its_wait_only_when_no_running_kernel_writes_it() {
    use nvfp4_kernels::gemm::{BlockedScales, DeviceGemmOperand, GemmOperand};
    use nvfp4_kernels::quantize::{self, ScaleLayout};
    // The decode kernel reads A before it waits for the kernel before it
    // when no kernel that may still run writes A. The emulator (checked
    // mode) reports an early read of what its predecessor writes, so each
    // call here passes only if the runtime's answer was right.
    // It also writes A's images before that wait, into the buffer the GEMM
    // before it does not read (the launcher alternates two): the emulator
    // reports a write of what the GEMM before reads too. The GEMM lets the
    // next decode launch only after its own wait (which makes the decode
    // before it, and the GEMM that decode waited for, complete): no thread
    // of it triggers before it waits.
    assert!(
        gemm::gemm_nvfp4_sm90::VARIANTS
            .iter()
            .all(|v| v.programmatic && !v.triggers_early)
    );
    let device = Device::emulator(Target::Sm90a);
    let (m, n, k) = (128, 256, 512);
    let mut rng = Rng::new(49);
    let (_, b) = nvfp4_kernels::nvfp4::gemm_inputs(&mut rng, m, n, k, 1, Inputs::Wide).expect("inputs");
    let weights = DeviceGemmOperand::upload_weights(&device, &b).expect("b");
    let x: Vec<half::f16> = (0..m * k)
        .map(|_| half::f16::from_f32(rng.uniform(-2.0, 2.0)))
        .collect();
    let dx = device.upload(&x).expect("x");
    let mut codes = device.alloc_zeroed::<u8>(m * k / 2).expect("codes");
    let scale_len = nvfp4_kernels::nvfp4::blocked_scale_len(m, k / 16, 1);
    let mut scales = device.alloc_zeroed::<u8>(scale_len).expect("scales");
    let poisoned = || device.upload(&vec![half::f16::NAN; m * n]).expect("c");
    let mut c = [poisoned(), poisoned(), poisoned()];
    // A quantized by the kernel just before: the decode waits first. Then
    // the same A again, the GEMM before still running: read early.
    quantize::quantize(
        &device,
        &dx,
        m,
        m,
        k,
        1.0,
        ScaleLayout::Blocked,
        &mut codes,
        &mut scales,
    )
    .expect("quantize");
    for (call, c) in c.iter_mut().take(2).enumerate() {
        // The first call's decode waits for the quantizer; the second's
        // reads A while the first call's GEMM may still run.
        assert_eq!(device.written_by_running_kernel(&codes), call == 0);
        let a = GemmOperand::new(&device, m, k, 1, &codes, BlockedScales(&scales)).expect("a");
        gemm::gemm(&device, a, &weights, c).expect("gemm");
    }
    // The same codes uploaded fresh: the same bits.
    let host_codes = device.download(&codes).expect("codes");
    let host_scales = device.download(&scales).expect("scales");
    let (codes2, scales2) = (
        device.upload(&host_codes).expect("up"),
        device.upload(&host_scales).expect("up"),
    );
    let a = GemmOperand::new(&device, m, k, 1, &codes2, BlockedScales(&scales2)).expect("a");
    gemm::gemm(&device, a, &weights, &mut c[2]).expect("gemm");
    let outputs: Vec<_> = c.iter().map(|c| device.download(c).expect("download")).collect();
    let x32: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
    let aq = quantize::quantize_reference(&x32, m, k, 1.0).expect("reference");
    let want = nvfp4_kernels::nvfp4::gemm_reference(&aq, &b);
    nvfp4_kernels::nvfp4::check_close(&outputs[0], &want, 1e-3, 1e-3).expect("against the reference");
    for other in &outputs[1..] {
        assert!(outputs[0].iter().zip(other).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

#[test]
fn the_hopper_gemm_prearranges_plain_weights_as_the_host_does() {
    use nvfp4_kernels::gemm::DeviceGemmOperand;
    let device = Device::emulator(Target::Sm90a);
    let (m, n, k, l) = (128, 256, 512, 2);
    let (a, b) = nvfp4_kernels::nvfp4::gemm_inputs(&mut Rng::new(48), m, n, k, l, Inputs::Wide).expect("inputs");
    // The device's pre-arrangement is the host's, word for word.
    let plain = DeviceGemmOperand::upload(&device, &b).expect("b");
    let mut words = device
        .upload(&vec![0xDEAD_BEEFu32; gemm::prearranged_words(n, k, l)])
        .expect("words");
    gemm::prearrange_weights(&device, &plain, &mut words).expect("prearrange");
    assert_eq!(
        device.download(&words).expect("download"),
        gemm::prearrange_sm90(&b).expect("host")
    );
    // A plain B (pre-arranged inside the call) gives the same bits as
    // weights uploaded pre-arranged, and as the caller's own pre-arranged
    // words.
    let da = DeviceGemmOperand::upload(&device, &a).expect("a");
    let want = gemm::gemm_outputs(&device, &a, &b, None, None).expect("weights");
    let own = gemm::GemmOperand::from(&plain).with_prearranged(&words).expect("own");
    for operand in [gemm::GemmOperand::from(&plain), own] {
        let mut c = device.upload(&vec![half::f16::NAN; m * n * l]).expect("c");
        gemm::gemm(&device, &da, operand, &mut c).expect("gemm");
        let got = device.download(&c).expect("download");
        assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()));
    }
}

#[test]
fn the_hopper_gemm_sums_a_split_of_4_in_pairs_of_clusters_on_the_emulator() {
    // An emulated GPU of 4 multiprocessors: clusters of 4 would not fit, so
    // each tile's two clusters of 2 sum their halves of K and the second
    // to finish adds them (10 stages: 2 + 3 and 2 + 3 per half, chains
    // shorter than 4 stages; a batch of 2 with one stage per block).
    let device = Device::emulator_with(
        Target::Sm90a,
        nvfp4_dsl::emu::Options::default().with_multiprocessors(4),
    );
    let mut rng = Rng::new(47);
    for (shape, kind) in [((128, 256, 1280, 1), Inputs::Wide), ((128, 256, 512, 2), Inputs::Task)] {
        let kernel = GemmKernel::Sm90 { blocks: 1, split: 4 };
        assert_eq!(
            gemm::sm90_reduction(4, 4 * (shape.1 / 128 * shape.3) as u32, 4),
            gemm::Sm90Reduction::Pairs
        );
        gemm::check_gemm(&device, &mut rng, shape, kind, Some(kernel), None)
            .unwrap_or_else(|e| panic!("{shape:?} {kernel:?}: {e}"));
    }
}

#[test]
fn the_hopper_gemm_check_fails_when_a_scales_are_permuted() {
    let device = Device::emulator(Target::Sm90a);
    let mut rng = Rng::new(46);
    let permute = |scales: &mut [E4m3]| {
        let (first, rest) = scales.split_at_mut(512);
        first.swap_with_slice(&mut rest[..512]);
    };
    let err = gemm::check_gemm(
        &device,
        &mut rng,
        (128, 256, 512, 1),
        Inputs::Wide,
        None,
        Some(&permute),
    )
    .expect_err("permuted scales must not match the reference");
    assert!(matches!(err, Error::Mismatch(_)), "{err}");
}

#[test]
fn the_gemm_on_a_plain_sm90_emulator_is_unsupported_not_a_launch_failure() {
    let device = Device::emulator(Target::Sm90);
    assert_eq!(GemmKernel::for_device(&device, 128, 256, 512, 1), None);
    let err = gemm::check_gemm(&device, &mut Rng::new(47), (128, 256, 512, 1), Inputs::Wide, None, None)
        .expect_err("plain sm_90 has no wgmma");
    assert!(matches!(&err, Error::Unsupported(m) if m.contains("sm_90a")), "{err}");
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
    let err = gemm::check_gemm(
        &device,
        &mut rng,
        (128, 128, 512, 1),
        Inputs::Wide,
        None,
        Some(&permute),
    )
    .expect_err("permuted scales must not match the reference");
    assert!(matches!(err, Error::Mismatch(_)), "{err}");
}

#[test]
fn the_fidelity_run_is_deterministic_on_the_emulator() {
    // The H100 comparison (`tests/gpu/main.rs`) needs the emulator's run to be a
    // function of the seed alone.
    let device = Device::emulator(Target::Sm90);
    let first = fidelity::run_all(&device, 5).unwrap_or_else(|e| panic!("{e}"));
    let again = fidelity::run_all(&Device::emulator(Target::Sm90), 5).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.len(), 10);
    assert!(fidelity::differences(&first, &again).is_empty());
    let other_seed = fidelity::run_all(&device, 6).unwrap_or_else(|e| panic!("{e}"));
    // Every output but the decode table (all 256 bytes, whatever the seed)
    // depends on the random inputs.
    let changed = fidelity::differences(&first, &other_seed);
    assert_eq!(changed.len(), first.len() - 1, "{changed:?}");
}

/// Reads one element past its thread's: the last thread reads past `x`.
#[nvfp4_dsl::kernel(targets(sm_90))]
pub fn read_past_the_end(x: &[u32], y: &mut [u32]) {
    let i = nvfp4_dsl::prelude::thread_idx_x() as usize;
    y[i] = x[i + 1];
}

/// Integer division and remainder by powers of two, which the compiler
/// lowers to shifts and masks: 8 results per input.
#[nvfp4_dsl::kernel(targets(sm_90))]
pub fn divide_by_powers_of_two(x: &[u32], out_u: &mut [u32], out_i: &mut [u64]) {
    let t = nvfp4_dsl::prelude::thread_idx_x() as usize;
    let u = x[t];
    let s = u as i32;
    let w = (u as u64) << 32 | u as u64;
    let l = w as i64;
    out_u[4 * t] = u / 16;
    out_u[4 * t + 1] = u % 64;
    out_u[4 * t + 2] = (s / 8) as u32;
    out_u[4 * t + 3] = (s % 1024) as u32;
    out_i[4 * t] = w / 2;
    out_i[4 * t + 1] = w % (1u64 << 40);
    out_i[4 * t + 2] = (l / 4) as u64;
    out_i[4 * t + 3] = (l % 2147483648) as u64;
}

#[test]
fn division_by_powers_of_two_truncates_as_rust_does() {
    let device = Device::emulator(Target::Sm90);
    let mut inputs: Vec<u32> = vec![
        0,
        1,
        7,
        8,
        9,
        1023,
        1024,
        1025,
        u32::MAX,
        i32::MIN as u32,
        i32::MAX as u32,
    ];
    inputs.extend([-1i32, -7, -8, -9, -1023, -1024, -1025, i32::MIN + 1].map(|v| v as u32));
    let mut rng = Rng::new(44);
    while inputs.len() < 64 {
        inputs.push(rng.next_u32());
    }
    let x = device.upload(&inputs).expect("upload");
    let mut out_u = device.alloc_zeroed::<u32>(4 * 64).expect("alloc");
    let mut out_i = device.alloc_zeroed::<u64>(4 * 64).expect("alloc");
    // SAFETY: 64 threads, each reads x[t] and writes 4 values of each output.
    unsafe {
        divide_by_powers_of_two::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut out_u, &mut out_i)
            .expect("launch");
    }
    let (got_u, got_i) = (
        device.download(&out_u).expect("download"),
        device.download(&out_i).expect("download"),
    );
    for (t, &u) in inputs.iter().enumerate() {
        let (s, w) = (u as i32, (u as u64) << 32 | u as u64);
        let l = w as i64;
        let want_u = [u / 16, u % 64, (s / 8) as u32, (s % 1024) as u32];
        let want_i = [w / 2, w % (1u64 << 40), (l / 4) as u64, (l % 2147483648) as u64];
        assert_eq!(got_u[4 * t..4 * t + 4], want_u, "32-bit, input {u:#x}");
        assert_eq!(got_i[4 * t..4 * t + 4], want_i, "64-bit, input {w:#x}");
    }
}

/// Thread 0 waits at barrier 1 while the others wait at barrier 0: a hang
/// on the GPU. (Threads that exit no longer count, so a barrier skipped by
/// threads that then return is legal, and the emulator accepts it.)
#[nvfp4_dsl::kernel(targets(sm_90))]
pub fn barrier_in_a_branch(y: &mut [u32]) {
    let i = nvfp4_dsl::prelude::thread_idx_x();
    if i == 0 {
        nvfp4_dsl::ptx!((), "bar.sync 1;");
    } else {
        nvfp4_dsl::prelude::sync_threads();
    }
    y[i as usize] = i;
}

#[test]
fn a_faulting_launch_is_an_error_naming_kernel_block_thread_and_line() {
    let device = Device::emulator(Target::Sm90);
    let x = device.upload(&[7u32; 64]).expect("upload");
    let mut y = device.alloc_zeroed::<u32>(64).expect("alloc");
    // SAFETY: the emulator checks every access; the fault is the point.
    let err = unsafe { read_past_the_end::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut y) }
        .expect_err("thread 63 reads x[64]");
    let nvfp4_dsl::Error::Emulator(e) = &err else {
        panic!("not an emulator error: {err}")
    };
    assert_eq!(e.kernel(), Some("read_past_the_end"));
    assert_eq!((e.block(), e.thread()), (Some((0, 0, 0)), Some((63, 0, 0))));
    assert!(e.instruction().is_some_and(|t| t.starts_with("ld.global")), "{err}");
    assert!(e.message().contains("out of bounds"), "{err}");
    let line = e.line().expect("a PTX line") as usize;
    let ptx = read_past_the_end::VARIANTS[0].ptx_for(Target::Sm90).expect("sm_90 PTX");
    assert!(
        ptx.lines()
            .nth(line - 1)
            .is_some_and(|l| l.trim_start().starts_with("ld.global")),
        "{err}"
    );

    let mut y = device.alloc_zeroed::<u32>(64).expect("alloc");
    // SAFETY: as above.
    let err = unsafe { barrier_in_a_branch::Kernel::launch(&device, LaunchConfig::linear(1, 64), &mut y) }
        .expect_err("neither barrier completes");
    let nvfp4_dsl::Error::Emulator(e) = &err else {
        panic!("not an emulator error: {err}")
    };
    assert_eq!(e.kernel(), Some("barrier_in_a_branch"));
    assert!(e.instruction().is_some_and(|t| t.starts_with("bar")), "{err}");
}

/// Thread 0 writes a shared slot that every thread then reads; `SYNC`
/// puts a barrier in between.
#[nvfp4_dsl::kernel(targets(sm_90), specialize(SYNC = [false, true]))]
pub fn broadcast_a_slot<const SYNC: bool>(out: &mut [u32]) {
    let slot = nvfp4_dsl::prelude::shared_array::<u32, 1>();
    let t = nvfp4_dsl::prelude::thread_idx_x();
    if t == 0 {
        slot[0u32] = 42;
    }
    if SYNC {
        nvfp4_dsl::prelude::sync_threads();
    }
    out[t as usize] = slot[0u32];
}

#[test]
fn a_slot_read_by_every_warp_without_a_barrier_is_a_data_race() {
    // Under several seeds: whichever thread meets the race first, the
    // error names both accesses; a read before the write finds the slot
    // unwritten instead, and says to order the write before it (the
    // sequential schedule runs warp 0's write first).
    let mut races = 0;
    let sequential = nvfp4_dsl::emu::Options::sequential();
    for options in [sequential]
        .into_iter()
        .chain((0..4).map(nvfp4_dsl::emu::Options::adversarial))
    {
        let device = Device::emulator_with(Target::Sm90, options);
        let mut out = device.upload(&[0u32; 128]).expect("upload");
        // SAFETY: 128 threads, each writes out[t].
        let err = unsafe { broadcast_a_slot::Kernel::<false>::launch(&device, LaunchConfig::linear(1, 128), &mut out) }
            .expect_err("a data race");
        let nvfp4_dsl::Error::Emulator(e) = &err else {
            panic!("not an emulator error: {err}")
        };
        assert_eq!(e.kernel(), Some("broadcast_a_slot__sync_false"), "{err}");
        let (text, message) = (e.instruction().expect("a line"), e.message());
        if message.starts_with("read of unwritten shared memory") {
            assert!(text.starts_with("ld.shared"), "{err}");
            assert!(message.contains("order that before this read (sync_threads()"), "{err}");
        } else {
            races += 1;
            assert!(message.contains("shared-memory data race"), "{err}");
            assert!(
                (text.starts_with("st.shared") && message.contains("ld.shared"))
                    || (text.starts_with("ld.shared") && message.contains("st.shared")),
                "{err}"
            );
            // The other access by its Rust line too: the one this error is not at.
            let other = if text.starts_with("st.shared") {
                "out[t as usize] = slot[0u32];"
            } else {
                "slot[0u32] = 42;"
            };
            assert!(message.contains("tests/emu.rs:") && message.contains(other), "{err}");
        }
        let mut out = device.upload(&[0u32; 128]).expect("upload");
        // SAFETY: as above.
        unsafe { broadcast_a_slot::Kernel::<true>::launch(&device, LaunchConfig::linear(1, 128), &mut out) }
            .expect("the barrier orders the write before the reads");
        assert!(device.download(&out).expect("download").iter().all(|&v| v == 42));
    }
    assert!(races > 0, "every schedule read the slot before its write");
}

#[test]
#[ignore = "minutes in a debug build; run with `cargo test --release -p nvfp4-tests --test emu -- --ignored`"]
fn the_hopper_gemm_matches_the_reference_on_the_task_shapes_on_the_emulator() {
    let device = Device::emulator(Target::Sm90a);
    let mut rng = Rng::new(47);
    let bench = gemm::BENCH_SHAPES.map(|(m, n, k)| (m, n, k, 1));
    for (m, n, k, l) in gemm::TEST_SHAPES.into_iter().chain(bench) {
        let kernel = GemmKernel::for_device(&device, m, n, k, l);
        gemm::check_gemm(&device, &mut rng, (m, n, k, l), Inputs::Wide, kernel, None)
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}x{l} {kernel:?}: {e}"));
        println!("GEMM M={m} N={n} K={k} L={l} {kernel:?}: every output within 1e-3 of the f64 reference");
    }
}

#[test]
#[ignore = "minutes in a debug build; run with `cargo test --release -p nvfp4-tests --test emu -- --ignored`"]
fn the_gemm_matches_the_reference_on_the_task_shapes_on_the_emulator() {
    let device = Device::emulator(Target::Sm100a);
    let mut rng = Rng::new(43);
    let bench = gemm::BENCH_SHAPES.map(|(m, n, k)| (m, n, k, 1));
    for (m, n, k, l) in gemm::TEST_SHAPES.into_iter().chain(bench) {
        for bn in [128, 256].into_iter().filter(|bn| n.is_multiple_of(*bn)) {
            gemm::check_gemm(
                &device,
                &mut rng,
                (m, n, k, l),
                Inputs::Wide,
                Some(GemmKernel::Sm100 { bn }),
                None,
            )
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}x{l} BN={bn}: {e}"));
            println!("GEMM M={m} N={n} K={k} L={l} BN={bn}: every output within 1e-3 of the f64 reference");
        }
    }
}

/// Reads a shared word that nothing wrote.
#[nvfp4_dsl::kernel(targets(sm_90))]
pub fn read_unwritten(f: &mut [f32], u: &mut [u32]) {
    let floats = nvfp4_dsl::prelude::shared_array::<f32, 4>();
    let words = nvfp4_dsl::prelude::shared_array::<u32, 4>();
    let t = nvfp4_dsl::prelude::thread_idx_x();
    f[t as usize] = floats[t];
    u[t as usize] = words[t];
}

#[test]
fn shared_memory_that_nothing_wrote_is_an_error_and_reads_as_all_ones_in_the_fast_mode() {
    let device = Device::emulator(Target::Sm90);
    let (mut df, mut du) = (
        device.upload(&[0.0f32; 4]).expect("upload"),
        device.upload(&[0u32; 4]).expect("upload"),
    );
    // SAFETY: four threads, each writes its own word of each output.
    let err = unsafe { read_unwritten::Kernel::launch(&device, LaunchConfig::linear(1, 4), &mut df, &mut du) }
        .expect_err("the checked mode");
    assert!(err.to_string().contains("read of unwritten shared memory"), "{err}");
    // The fast mode keeps no shadow of shared memory: not zeros, which a
    // missing initialisation would often pass with (a GPU leaves whatever
    // the last block wrote there), but all ones.
    let device = Device::emulator_with(Target::Sm90, nvfp4_dsl::emu::Options::fast());
    let (mut df, mut du) = (
        device.upload(&[0.0f32; 4]).expect("upload"),
        device.upload(&[0u32; 4]).expect("upload"),
    );
    // SAFETY: as above.
    unsafe { read_unwritten::Kernel::launch(&device, LaunchConfig::linear(1, 4), &mut df, &mut du) }.expect("launch");
    assert!(device.download(&df).expect("download").iter().all(|v| v.is_nan()));
    assert_eq!(device.download(&du).expect("download"), [u32::MAX; 4]);
}

#[test]
fn a_graph_capture_on_the_emulator_is_an_error_that_says_so() {
    let device = Device::emulator(Target::Sm90a);
    let mut recorded = false;
    let Err(err) = device.capture_graph(|| {
        recorded = true;
        Ok::<(), nvfp4_dsl::Error>(())
    }) else {
        panic!("the emulator has no graphs")
    };
    assert!(err.to_string().contains("no CUDA graphs"), "{err}");
    assert!(!recorded, "nothing may run as if captured");
}

#[test]
fn consecutive_linear_forwards_quantize_into_the_images_the_gemm_before_does_not_read() {
    use nvfp4_kernels::linear::Linear;
    use nvfp4_kernels::quantize::quantize_reference;
    // The activations of each forward are ready (uploaded, no kernel
    // writes them), so its quantizer writes A's images while the GEMM of
    // the forward before may still run: into the other of the two
    // buffers. The emulator (checked mode) reports a write of what the
    // GEMM before reads, so the second forward passes only with the
    // buffers alternating; each forward gives the bits of a forward alone.
    let device = Device::emulator(Target::Sm90a);
    let (n, k, tokens) = (256, 512, 128);
    let mut rng = Rng::new(87);
    let w: Vec<f32> = (0..n * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let weight = quantize_reference(&w, n, k, 1.0 / 2688.0).expect("weights");
    let data: Vec<u8> = weight.data.iter().map(|b| b.0).collect();
    let scales: Vec<u8> = weight.scales.iter().map(|s| s.0).collect();
    let linear = Linear::new(&device, n, k, &data, &scales, 1.0 / 2688.0, 4.0 / 2688.0).expect("layer");
    assert!(linear.uses_gemm(&device, tokens));
    let xs: Vec<_> = (0..2)
        .map(|_| {
            let x: Vec<half::f16> = (0..tokens * k)
                .map(|_| half::f16::from_f32(rng.uniform(-4.0, 4.0)))
                .collect();
            device.upload(&x).expect("x")
        })
        .collect();
    let rows = linear.output_rows(&device, tokens);
    let mut workspace = linear.workspace(&device, tokens).expect("workspace");
    let mut ys: Vec<_> = (0..2)
        .map(|_| device.upload(&vec![half::f16::NAN; rows * n]).expect("y"))
        .collect();
    for (x, y) in xs.iter().zip(ys.iter_mut()) {
        linear
            .forward_into(&device, x, tokens, &mut workspace, y)
            .expect("forward");
    }
    let together: Vec<_> = ys.iter().map(|y| device.download(y).expect("download")).collect();
    for (x, got) in xs.iter().zip(&together) {
        let alone = Device::emulator(Target::Sm90a);
        let layer = Linear::new(&alone, n, k, &data, &scales, 1.0 / 2688.0, 4.0 / 2688.0).expect("layer");
        let x = alone.upload(&device.download(x).expect("x")).expect("x");
        let mut y = alone.upload(&vec![half::f16::NAN; rows * n]).expect("y");
        let mut workspace = layer.workspace(&alone, tokens).expect("workspace");
        layer
            .forward_into(&alone, &x, tokens, &mut workspace, &mut y)
            .expect("forward");
        let want = alone.download(&y).expect("download");
        assert!(want.iter().all(|v| !v.is_nan()));
        assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
