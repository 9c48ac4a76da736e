//! The atomics on the emulator against the host (`tests/src/atomic_kernels.rs`
//! has the kernels and the checks; `tests/gpu/main.rs` runs the same on a GPU),
//! under the default adversarial schedule, other adversarial seeds and a
//! priority schedule; the PTX each form lowers to, assembled by ptxas; and
//! the race check:
//! atomics of one shared word never race with each other, an atomic and a
//! plain load or store of it that no barrier orders do.

use nvfp4_dsl::emu::Options;
use nvfp4_dsl::prelude::*;
use nvfp4_tests::atomic_kernels::{self as k, check_all_ops, check_histogram, check_max_by_cas};

/// The default schedule (adversarial, seed 0), two more adversarial seeds
/// and a priority seed.
fn emulators() -> Vec<(String, Device)> {
    let mut all = vec![("adversarial seed 0".to_string(), Device::emulator(Target::Sm90))];
    for seed in [7, 19] {
        all.push((
            format!("adversarial seed {seed}"),
            Device::emulator_with(Target::Sm90, Options::adversarial(seed)),
        ));
    }
    all.push((
        "priority seed 3".to_string(),
        Device::emulator_with(Target::Sm90, Options::priority(3)),
    ));
    all
}

#[test]
fn every_operation_type_and_memory_matches_the_host() {
    for (seed, (schedule, device)) in emulators().into_iter().enumerate() {
        let lines = check_all_ops(&device, 100 + seed as u64).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        for l in lines {
            println!("{schedule}: {l}");
        }
    }
}

#[test]
fn a_histogram_of_random_bytes_counts_every_byte() {
    for (seed, (schedule, device)) in emulators().into_iter().enumerate() {
        for (blocks, n) in [(1, 1000), (5, 20_000)] {
            check_histogram(&device, blocks, n, 30 + seed as u64).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        }
    }
}

#[test]
fn a_compare_and_swap_loop_finds_the_maximum() {
    for (seed, (schedule, device)) in emulators().into_iter().enumerate() {
        check_max_by_cas(&device, 6, 700, 40 + seed as u64).unwrap_or_else(|e| panic!("{schedule}: {e}"));
    }
}

/// The PTX of `variants` (one kernel's, sm_90).
fn ptx(variants: &[nvfp4_dsl::Variant]) -> &'static str {
    variants[0].ptx[0].1
}

#[test]
fn each_form_lowers_to_its_ptx() {
    let global = ptx(k::ops_u32_global::VARIANTS);
    let shared = ptx(k::ops_i64_shared::VARIANTS);
    for (text, forms) in [
        (
            global,
            &[
                "atom.relaxed.gpu.global.add.u32",
                "atom.acquire.cta.global.min.u32",
                "atom.release.sys.global.max.u32",
                "atom.acq_rel.gpu.global.and.b32",
                "atom.relaxed.cluster.global.or.b32",
                "atom.release.gpu.global.xor.b32",
                "atom.acquire.sys.global.exch.b32",
                "atom.acq_rel.gpu.global.cas.b32",
                // Dropped results: `red` where the order allows one.
                "red.relaxed.gpu.global.add.u32",
                "red.release.cta.global.min.u32",
                "red.relaxed.sys.global.max.u32",
                "red.relaxed.gpu.global.and.b32",
                "red.release.cluster.global.or.b32",
                "red.relaxed.gpu.global.xor.b32",
                "atom.relaxed.gpu.global.exch.b32",
                "atom.release.gpu.global.cas.b32",
            ][..],
        ),
        (
            shared,
            &[
                // `i64` adds as `u64` (PTX has no `add.s64`); min and max
                // compare signed.
                "atom.relaxed.gpu.shared.add.u64",
                "atom.acquire.cta.shared.min.s64",
                "atom.release.sys.shared.max.s64",
                "atom.acq_rel.gpu.shared.and.b64",
                "red.relaxed.gpu.shared.add.u64",
                "red.release.cta.shared.min.s64",
            ][..],
        ),
        (
            ptx(k::histogram::VARIANTS),
            &["red.relaxed.cta.shared.add.u32", "red.relaxed.gpu.global.add.u32"][..],
        ),
        (
            ptx(k::add_f32_global::VARIANTS),
            &["atom.relaxed.gpu.global.add.f32", "red.release.cluster.global.add.f32"][..],
        ),
        (
            ptx(k::add_f16x2_shared::VARIANTS),
            &[
                "atom.relaxed.gpu.shared.add.noftz.f16x2",
                "red.release.cluster.shared.add.noftz.f16x2",
            ][..],
        ),
        (
            ptx(k::add_bf16x2_global::VARIANTS),
            &[
                "atom.relaxed.gpu.global.add.noftz.bf16x2",
                "red.release.cluster.global.add.noftz.bf16x2",
            ][..],
        ),
    ] {
        for form in forms {
            assert!(
                text.contains(&format!("\t{form} ")),
                "`{form}` is missing from:\n{text}"
            );
        }
    }
}

#[test]
fn every_atomic_kernel_assembles() {
    let Some(ptxas) = nvfp4_tests::find_ptxas() else {
        assert!(!nvfp4_tests::in_ci(), "ptxas is required in CI");
        eprintln!("ptxas not found: skipping (run the README's test command to install it)");
        return;
    };
    for v in k::variants() {
        for (target, text) in v.ptx {
            nvfp4_tests::assemble(&ptxas, text, target.name()).unwrap_or_else(|e| panic!("{}: {e}", v.kernel));
        }
    }
}

/// Every thread adds 1 to one shared word (with or without its result) and
/// then, unless `plain` is 0, `plain` 1 reads it and 2 writes it, with no
/// barrier after the atomics.
#[kernel(targets(sm_90))]
pub fn atomics_then_plain(out: &mut [u32], plain: u32) {
    let word = shared_array::<u32, 1>();
    let t = thread_idx_x();
    if t == 0 {
        word[0u32] = 0;
    }
    sync_threads();
    if t % 2 == 0 {
        atomic_add(word, 0u32, 1u32, Order::Relaxed, Scope::Cta);
    } else {
        out[t as usize] = atomic_add(word, 0u32, 1u32, Order::AcqRel, Scope::Cta);
    }
    if plain == 1 {
        out[t as usize] = word[0u32];
    } else if plain == 2 && t == 5 {
        word[0u32] = 7;
    }
    sync_threads();
    if t == 0 {
        out[0] = word[0u32];
    }
}

/// Runs [`atomics_then_plain`] with 64 threads.
fn run_plain(device: &Device, plain: u32) -> nvfp4_dsl::Result<Vec<u32>> {
    let mut out = device.upload(&[0u32; 64])?;
    // SAFETY: one word of `out` per thread.
    unsafe { atomics_then_plain::Kernel::launch(device, LaunchConfig::linear(1, 64), &mut out, plain)? };
    device.download(&out)
}

#[test]
fn atomics_of_one_shared_word_do_not_race_with_each_other() {
    for (schedule, device) in emulators() {
        let out = run_plain(&device, 0).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        assert_eq!(out[0], 64, "{schedule}");
        let mut tickets: Vec<u32> = (1..64).step_by(2).map(|t| out[t]).collect();
        tickets.sort_unstable();
        tickets.dedup();
        assert_eq!(tickets.len(), 32, "{schedule}: the odd threads' tickets are distinct");
    }
}

#[test]
fn an_atomic_and_an_unordered_plain_access_race() {
    for (schedule, device) in emulators() {
        for (plain, access) in [(1, "reads"), (2, "writes")] {
            let e = run_plain(&device, plain).expect_err("a race").to_string();
            assert!(
                e.contains("shared-memory data race")
                    && (e.contains(&format!("this thread {access}")) || e.contains("this thread atomically updates"))
                    && e.contains("atomics race with plain loads and stores"),
                "{schedule}, plain {access}: {e}"
            );
        }
    }
}
