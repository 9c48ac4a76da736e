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

use nvfp4_dsl_compiler as compiler;

use nvfp4_tests::program;

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
        "break 'l",
        "continue 'l",
        ").rev() {",
        "u64::from(",
        "f64::from(",
        ".rev().step_by(",
        "return ",
        "fn d1(",
        "mut v0",
        "let (",
        ").1",
        " as u8",
        " as f64",
        "f32::from_bits(",
        "E4m3::from_f32(",
        "Fp4x2::from_f32s(",
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
        "in v.iter().enumerate()",
        "in v.iter().zip(v.iter()).enumerate()",
        " in [0u32, 1u32",
        "u32::wrapping_",
        ".rsqrt_approx()",
        ".recip_approx()",
        "atomic_add(out, ",
        "atomic_max(q, ",
        "Order::Relaxed, Scope::Gpu",
        "Order::AcqRel, Scope::Cta",
        "const K",
        "const L",
        "#[device(methods)]",
        "p.bump(",
        "fn get(&self)",
        "fn into_b(self)",
        "xs.iter().zip(ys.iter()).enumerate()",
        "let f = move |v: ",
        "for s in [",
        "(acc: &mut [",
        "(&mut q, q2)",
        "shared_array::<[u32; 33], 2>()",
        "shared_array::<[u32; K",
        "(tile: &SharedArray<[u32; C], R>",
        "(q: &mut SharedArray<",
        "atomic_cas(q, ",
        "atomic_exch(q, ",
        "atomic_load(q, 0u32, Order::Acquire",
        "shared_array::<f32, 1>()",
        "] += ",
        "<T: Int>(",
        "<T: Float>(",
        "<T: Half>(",
        "(t0: T",
        "(a0: ",
        "::<f16>(",
        "::<u8>(",
        "let r0: ",
        "let r1: bf16 = g",
        "let m0 = ",
        ".to_bits())",
        "T::from_f32(",
        "T::from_bits(",
        "T::BITS)",
        "T::EPSILON",
        ".leading_zeros()",
        ".wrapping_mul(t",
        "    (x, y) = (y, x ",
        "((z, _), y) = ((y ",
        "std::mem::swap(&mut x, &mut z)",
        "core::mem::swap(&mut x, &mut z)",
        "std::mem::swap(&mut q[",
        "(q[0], q[0]) = (q[0], q[0] ",
        "let mut acc = 0;",
        ".0;\n        acc ",
        "acc -= ",
        "&inp[st..st + n]",
        "&inp[..n]",
        "&inp[st..=st + n - 1]",
        "&inp[st..];",
        "fn view_pick(s: &[u32], k: u32)",
        "view_pick(s, ",
        "for v in inp[st..st + n % 5].iter()",
        "std::cmp::max(",
        "core::cmp::min(",
        "let m: u8 = ",
        "shared_array::<u32, 96>()",
        "sl[tid as usize % sl.len()] = ",
        "break 'outer (k, j);",
        "let [a, mut b, _, d] = q;",
        "let ([p, r], w) = ([d, b], q[2]);",
        "(1 | 2, c, true) if c > 4 => c * 3,",
        "shfl_xor(v64, ",
        "shfl_down(v64, ",
        "shfl_idx(v64, ",
        "let v64: f64 = ",
        "let v64: i64 = ",
    ] {
        let n = sources.iter().filter(|s| s.contains(feature)).count();
        assert!(n >= 3, "only {n} of 300 programs use `{feature}`");
    }
}

/// Compiles a kernel `fuzz(inp: &[u32], out: &mut [u32])` with the compiler
/// library and runs it on the emulator in one thread; its PTX and `out`.
fn run_kernel(src: &str, inputs: &[u32], words: usize) -> (String, Vec<u32>) {
    let item: syn::ItemFn = syn::parse_str(src).expect("kernel source");
    let attr: proc_macro2::TokenStream = "targets(sm_90)".parse().expect("attribute tokens");
    let compiled = compiler::compile(attr, &item, &[], &compiler::Options::default()).expect("compiles");
    let ptx = compiled.variants[0].ptx[0].1.clone();
    let module = Module::parse(&ptx).expect("the emulator parses the PTX");
    let mut mem = Memory::new();
    let inp = mem.alloc(inputs.len() * 4, false);
    let bytes: Vec<u8> = inputs.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.write(inp, &bytes).expect("write");
    let out = mem.alloc(words * 4, true);
    let params = [
        ParamValue::U64(inp),
        ParamValue::U64(inputs.len() as u64),
        ParamValue::U64(out),
        ParamValue::U64(words as u64),
    ];
    module
        .launch("fuzz", &Launch::new((1, 1, 1), (1, 1, 1), 0), &params, &mut mem)
        .expect("runs");
    let bytes = mem.read(out, words * 4).expect("read");
    let words = bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (ptx, words)
}

/// Seed 5000195 on the H100: `(x as i32).abs() % d` with x = i32::MIN gave
/// `2147483648 % d`, positive. The compiler wrote `abs.s32`, whose result
/// ptxas takes to be non-negative, so it dropped the remainder's sign
/// correction; Rust's `MIN.abs()` is `MIN`. Integer `abs` is now
/// `(x ^ m) - m` with `m = x >> 31`, which ptxas leaves alone.
#[test]
fn regression_int_abs_is_not_ptx_abs() {
    let src = "fn fuzz(inp: &[u32], out: &mut [u32]) {
        let x = inp[0] as i32;
        let d = (inp[1] as i32) | 1i32;
        out[0] = (x.abs() % d) as u32;
        out[1] = x.wrapping_abs() as u32;
        let w = ((inp[0] as u64) << 32u32) as i64;
        out[2] = ((w.abs() % (d as i64)) >> 32u32) as u32;
        out[3] = (w.abs() % (d as i64)) as u32;
        out[4] = (2.0f32).powi(inp[2] as i32).to_bits();
    }";
    for (x, d, n) in [
        (0x8000_0000u32, 3u32, 0x8000_0000u32),
        (0xFFFF_FFF9, 0xFFFF_FFFC, 3),
        (7, 2, 0xFFFF_FFFE),
    ] {
        let (ptx, got) = run_kernel(src, &[x, d, n], 5);
        assert!(!ptx.contains("abs.s"), "integer abs must not be PTX's abs:\n{ptx}");
        let (x, d) = (x as i32, d as i32 | 1);
        let w = (u64::from(x as u32) << 32) as i64;
        let wr = w.wrapping_abs() % i64::from(d);
        let want = [
            (x.wrapping_abs() % d) as u32,
            x.wrapping_abs() as u32,
            (wr >> 32) as u32,
            wr as u32,
            2.0f32.powi(n as i32).to_bits(),
        ];
        assert_eq!(got, want, "x = {x}, d = {d}, n = {n}");
    }
}

/// Seed 5000284 on the H100: `-(-(h.to_f32()))` of a bf16 NaN kept
/// `0x7fff0000` (ptxas folded the two `neg.f32` away), while the emulator
/// gave the canonical NaN that one `neg.f32` of a NaN gives on the H100.
/// Rust's `-x` flips the sign bit and keeps a NaN's payload; the compiler
/// now writes it as an `xor` of the sign bit (f16, bf16, f32, f64), which
/// means the same on the GPU however ptxas folds it.
#[test]
fn regression_float_negation_flips_the_sign_bit_of_a_nan() {
    let src = "fn fuzz(inp: &[u32], out: &mut [u32]) {
        let x = f32::from_bits(inp[0]);
        out[0] = (-x).to_bits();
        out[1] = (-(-x)).to_bits();
        let w = f64::from_bits(((inp[0] as u64) << 32u32) | (inp[1] as u64));
        let n = (-w).to_bits();
        out[2] = n as u32;
        out[3] = (n >> 32u32) as u32;
        out[4] = (-f16::from_bits(inp[1] as u16)).to_bits() as u32;
        out[5] = (-bf16::from_bits(inp[1] as u16)).to_bits() as u32;
    }";
    for (a, b) in [
        (0x7FFF_0000u32, 0x7E01u32),
        (0xFFC0_0001, 0xFFFF),
        (0x3F80_0000, 0x8000),
        (0x8000_0000, 0),
    ] {
        let (ptx, got) = run_kernel(src, &[a, b], 6);
        assert!(
            !ptx.contains("neg.f") && !ptx.contains("neg.bf"),
            "float negation must be bits:\n{ptx}"
        );
        let w = (u64::from(a) << 32 | u64::from(b)) ^ (1 << 63);
        let want = [a ^ 0x8000_0000, a, w as u32, (w >> 32) as u32, b ^ 0x8000, b ^ 0x8000];
        assert_eq!(got, want, "inputs {a:#x} {b:#x}");
    }
}

/// Seeds 5000129 and 5000229 on the H100: `x.clamp(3.75, 9.0)` of the NaN
/// `0xfffffffe` gave `0x7fffffff`: ptxas turned the compare-and-selects
/// into `FMNMX.NAN`, which returns the canonical NaN. Rust's `clamp`
/// returns `x` itself; the lowering now selects `x` when it is NaN, which
/// ptxas keeps.
#[test]
fn regression_float_clamp_returns_a_nan_operand_itself() {
    let src = "fn fuzz(inp: &[u32], out: &mut [u32]) {
        out[0] = (f32::from_bits(inp[0])).clamp(3.75f32, 9.0f32).to_bits();
        let w = f64::from_bits(((inp[0] as u64) << 32u32) | (inp[0] as u64));
        out[1] = (w.clamp(-4.5f64, 2.0f64).to_bits() >> 32u32) as u32;
    }";
    for x in [0xFFFF_FFFEu32, 0x7FC0_0000, 0x4000_0000, 0xC2C8_0000, 0x8000_0000] {
        let (ptx, got) = run_kernel(src, &[x], 2);
        assert_eq!(ptx.matches("setp.nan").count(), 2, "{ptx}");
        let w = f64::from_bits(u64::from(x) << 32 | u64::from(x));
        let want = [
            f32::from_bits(x).clamp(3.75, 9.0).to_bits(),
            (w.clamp(-4.5, 2.0).to_bits() >> 32) as u32,
        ];
        assert_eq!(got, want, "x = {x:#x}");
    }
}

/// Seed 5001852 on the H100: `f32::NAN.abs()` gave `0x7fc00000` (ptxas
/// folded the `abs.f32` of the constant), the emulator the canonical NaN
/// that `abs.f32` of a NaN gives on the H100. Rust's `abs` clears the sign
/// bit and keeps a NaN's payload; the compiler now writes it as an `and`
/// (f32, f64), which means the same however ptxas folds it.
#[test]
fn regression_float_abs_clears_the_sign_bit_of_a_nan() {
    let src = "fn fuzz(inp: &[u32], out: &mut [u32]) {
        out[0] = (f32::from_bits(inp[0])).abs().to_bits();
        out[1] = (f32::NAN).abs().to_bits();
        let w = f64::from_bits(((inp[0] as u64) << 32u32) | (inp[1] as u64));
        let a = w.abs().to_bits();
        out[2] = a as u32;
        out[3] = (a >> 32u32) as u32;
    }";
    for (a, b) in [
        (0xFFC0_0001u32, 0xFE01u32),
        (0x7F80_0001, 0xFFFF),
        (0xBF80_0000, 0x8000),
        (0x8000_0000, 0x7C01),
    ] {
        let (ptx, got) = run_kernel(src, &[a, b], 4);
        assert!(!ptx.contains("abs."), "float abs must be bits:\n{ptx}");
        let w = (u64::from(a) << 32 | u64::from(b)) & !(1 << 63);
        let want = [a & 0x7FFF_FFFF, f32::NAN.abs().to_bits(), w as u32, (w >> 32) as u32];
        assert_eq!(got, want, "inputs {a:#x} {b:#x}");
    }
}

/// Seed 5002873 on the H100: `(a + -457534851i32).saturating_add(1356611541)`
/// with `a + -457534851` wrapping to a large positive number did not
/// saturate: ptxas folds the constant `add.s32` into the `add.sat.s32` that
/// follows (`add.sat(a, c1 + c2)`, as the local CUDA 13.0 SASS shows). The
/// compiler now writes i32 `saturating_add`/`saturating_sub` as the i64
/// ones: the wrapped result, replaced by MIN or MAX on overflow.
#[test]
fn regression_i32_saturating_add_after_a_wrapping_add_saturates() {
    let src = "fn fuzz(inp: &[u32], out: &mut [u32]) {
        let a = inp[0] as i32;
        out[0] = ((a + -457534851i32).saturating_add(1356611541i32)) as u32;
        out[1] = ((a - 457534851i32).saturating_sub(-1356611541i32)) as u32;
        out[2] = (a.saturating_add(inp[1] as i32)) as u32;
        out[3] = (a.saturating_sub(inp[1] as i32)) as u32;
    }";
    for (a, b) in [
        (0x96B1_A563u32, 0x7FFF_FFFFu32),
        (0x7FFF_FFFF, 1),
        (0x8000_0000, 0x8000_0000),
        (5, 0xFFFF_FFF0),
    ] {
        let (ptx, got) = run_kernel(src, &[a, b], 4);
        assert!(
            !ptx.contains(".sat.s32"),
            "i32 saturation must not be PTX's .sat:\n{ptx}"
        );
        let (x, y) = (a as i32, b as i32);
        let want = [
            x.wrapping_add(-457534851).saturating_add(1356611541) as u32,
            x.wrapping_sub(457534851).saturating_sub(-1356611541) as u32,
            x.saturating_add(y) as u32,
            x.saturating_sub(y) as u32,
        ];
        assert_eq!(got, want, "inputs {a:#x} {b:#x}");
    }
}
