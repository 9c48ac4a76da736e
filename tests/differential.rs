//! The differential fuzzer: seeded random well-typed kernels over the
//! subset, compiled by the compiler as a library (no rustc), run on the
//! emulator, and compared bit for bit with the same program evaluated by a
//! plain-Rust interpreter of the generator's own syntax tree.
//!
//! Programs use every integer width, f32/f64 and f16/bf16: literals (edge
//! values included), inputs, arithmetic, bit operations, shifts, comparisons,
//! casts, the std methods, `if` and `match` (statements and values), loops
//! with data-dependent trip counts (`for`, `while`, `break`, `continue`),
//! device functions (with early `return`), tuples, local arrays (constant
//! indices, unrolled updates), shared memory with barriers and warp
//! shuffles. Floats compare exactly, any NaN equal to
//! any NaN (Rust does not define NaN payloads); the approximate `f32`
//! functions (`exp`, `sin`, ...) within the bounds the README documents.
//!
//! `cargo test -p nvfp4-tests --test differential` runs the CI budget;
//! `NVFP4_FUZZ_PROGRAMS=N` (and `NVFP4_FUZZ_SEED=S`) run more, e.g. in
//! release: `NVFP4_FUZZ_PROGRAMS=1000000 cargo test --release -p
//! nvfp4-tests --test differential -- --nocapture`.

#[allow(dead_code)]
#[path = "../nvfp4-dsl-macros/src/compiler/mod.rs"]
mod compiler;

// Shared with `tests/gpu.rs`, which uses other parts of it.
#[allow(dead_code)]
#[path = "differential/program.rs"]
mod program;

use nvfp4_dsl::emu::{Launch, Memory, Module, ParamValue};
use program::{BLOCKS, Program, THREADS};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Programs per CI run: well under five minutes on CI's two cores.
const CI_PROGRAMS: usize = 1500;

/// What running one program gave.
enum Outcome {
    Match,
    Mismatch(String),
    CompilerPanic(String),
}

/// Compiles `p` with the compiler library and runs it on the emulator.
fn run_on_emulator(p: &Program, inputs: &[u32]) -> Result<Vec<u32>, String> {
    let ptx = &p.compile_ptx()?;
    let module = Module::parse(ptx).map_err(|e| format!("the emulator rejects the PTX: {e}"))?;
    let mut mem = Memory::new();
    let inp = mem.alloc(inputs.len() * 4, false);
    let bytes: Vec<u8> = inputs.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.write(inp, &bytes).map_err(|e| e.to_string())?;
    let words = p.slots() * (THREADS * BLOCKS) as usize;
    let out = mem.alloc(words * 4, true);
    let launch = Launch::new((BLOCKS, 1, 1), (THREADS, 1, 1), 0);
    let params = [
        ParamValue::U64(inp),
        ParamValue::U64(inputs.len() as u64),
        ParamValue::U64(out),
        ParamValue::U64(words as u64),
    ];
    module
        .launch("fuzz", &launch, &params, &mut mem)
        .map_err(|e| format!("the emulator stopped: {e}"))?;
    let bytes = mem.read(out, words * 4).map_err(|e| e.to_string())?;
    Ok(bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Generates, compiles, runs and compares program `seed`.
fn check_program(seed: u64) -> Outcome {
    let p = Program::generate(seed);
    let inputs = program::inputs(seed);
    let got = match std::panic::catch_unwind(|| run_on_emulator(&p, &inputs)) {
        Ok(Ok(words)) => words,
        Ok(Err(e)) => return Outcome::Mismatch(format!("seed {seed}: {e}\n{}", p.source())),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Outcome::CompilerPanic(format!("seed {seed}: {msg}\n{}", p.source()));
        }
    };
    let want = p.interpret(&inputs);
    match p.compare(&got, &want) {
        Ok(()) => Outcome::Match,
        Err(e) => Outcome::Mismatch(format!("seed {seed}: {e}\n{}", p.source())),
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn generated_kernels_match_the_interpreter_bit_for_bit() {
    let programs = env_number("NVFP4_FUZZ_PROGRAMS").map_or(CI_PROGRAMS, |n| n as usize);
    let first = env_number("NVFP4_FUZZ_SEED").unwrap_or(1);
    let next = AtomicUsize::new(0);
    let (mismatches, panics) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let reports = std::sync::Mutex::new(Vec::new());
    // Keep the panic hook quiet while compiler panics are being counted.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= programs {
                        break;
                    }
                    match check_program(first + i as u64) {
                        Outcome::Match => {}
                        Outcome::Mismatch(r) => {
                            mismatches.fetch_add(1, Ordering::Relaxed);
                            reports.lock().expect("reports").push(r);
                        }
                        Outcome::CompilerPanic(r) => {
                            panics.fetch_add(1, Ordering::Relaxed);
                            reports.lock().expect("reports").push(r);
                        }
                    }
                }
            });
        }
    });
    std::panic::set_hook(hook);
    let (m, p) = (mismatches.into_inner(), panics.into_inner());
    println!("{programs} programs, {m} mismatches, {p} compiler panics");
    let reports = reports.into_inner().expect("reports");
    if let Some(first) = reports.first() {
        panic!("{programs} programs, {m} mismatches, {p} compiler panics; the first:\n{first}");
    }
}

#[test]
fn the_generator_is_deterministic_and_its_programs_differ() {
    let a = Program::generate(7).source();
    assert_eq!(a, Program::generate(7).source());
    assert_ne!(a, Program::generate(8).source());
}

#[test]
fn the_generator_covers_the_subset() {
    let sources: Vec<String> = (0..300).map(|seed| Program::generate(seed).source()).collect();
    for feature in [
        "shfl_xor(",
        "sync_threads()",
        "match ",
        " if ",
        "..=",
        ".step_by(",
        "#[unroll]",
        "while ",
        "loop {",
        "break;",
        "continue;",
        "return ",
        "fn d1(",
        "mut v0",
        "let (",
        ").1",
        " as u8",
        " as f64",
        "f32::from_bits(",
        "f64::NAN",
        ".saturating_mul(",
        ".rotate_left(",
        ".powi(",
        ".mul_add(",
        ".exp()",
        ".sin()",
        " <<= ",
        " %= ",
        "i64)",
        "u16",
        "f16::from_f32(",
        "bf16::from_bits(",
        ".to_f32()",
        "; 4];",
        "for i in 0usize..4usize",
        "fn reduce_",
    ] {
        let n = sources.iter().filter(|s| s.contains(feature)).count();
        assert!(n >= 3, "only {n} of 300 programs use `{feature}`");
    }
}
