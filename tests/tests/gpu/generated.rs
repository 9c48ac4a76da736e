//! The differential fuzzer's programs on the GPU against the emulator,
//! and the probes of the driver's and ptxas's bugs that the batch found.

use super::*;

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
        triggers_early: false,
        builds: None,
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
        8001064,
        "the JIT folds the constant f32 add.rn of `1.0 + -28586300.0`, a tie, away from even (the class of 5000115; the_gpu_rounds_f32_ties_to_even_where_the_driver_cannot_fold_constants)",
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
