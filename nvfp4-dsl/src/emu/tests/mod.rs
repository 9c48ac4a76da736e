//! Instruction-level tests: hand-written kernels per instruction family,
//! run through the public API and compared with independent Rust
//! computations (special values included: zeros, infinities, NaNs with
//! payloads, subnormals, extreme integers).

use super::{EmuError, Launch, LaunchStats, Memory, Module, Options, ParamValue};
use half::{bf16, f16};

mod control;
mod convert;
mod float;
mod int;
mod memory;
mod warp;

const HEADER: &str = "
.version 8.6
.target sm_100a
.address_size 64
.shared .align 16 .b8 sm[1024];
.visible .entry t(.param .u64 t_in, .param .u64 t_out)
{
\t.reg .pred %p<16>;
\t.reg .b8 %b<8>;
\t.reg .b16 %h<16>;
\t.reg .b32 %r<32>;
\t.reg .b64 %rd<32>;
\t.reg .f32 %f<16>;
\t.reg .f64 %fd<16>;
\tld.param.u64 %rd30, [t_in];
\tld.param.u64 %rd31, [t_out];
\tmov.u32 %r30, %tid.x;
\tmul.wide.u32 %rd29, %r30, 32;
\tadd.s64 %rd28, %rd30, %rd29;
\tld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd28];
\tld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd28+16];
";

const FOOTER: &str = "
\tmul.wide.u32 %rd29, %r30, 8;
\tadd.s64 %rd27, %rd31, %rd29;
\tst.global.v2.u32 [%rd27], {%r10, %r11};
\tret;
}
";

/// Runs `body` on one block with one thread per input: thread `t` finds
/// `inputs[t]` in `%r1..%r8` and leaves its results in `%r10` and `%r11`.
fn try_run(body: &str, inputs: &[[u32; 8]]) -> Result<(Vec<[u32; 2]>, LaunchStats), EmuError> {
    try_run_with(body, inputs, &Options::default())
}

/// [`try_run`] under `options`.
fn try_run_with(body: &str, inputs: &[[u32; 8]], options: &Options) -> Result<(Vec<[u32; 2]>, LaunchStats), EmuError> {
    let src = format!("{HEADER}{body}{FOOTER}");
    let module = Module::parse(&src)?;
    let mut mem = Memory::new();
    let bytes: Vec<u8> = inputs.iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
    let inp = mem.alloc(bytes.len(), false);
    mem.write(inp, &bytes)?;
    let out = mem.alloc(inputs.len() * 8, true);
    let launch = Launch::new((1, 1, 1), (inputs.len() as u32, 1, 1), 0);
    let stats = module.launch_with(
        "t",
        &launch,
        &[ParamValue::U64(inp), ParamValue::U64(out)],
        &mut mem,
        options,
    )?;
    let got = mem.read(out, inputs.len() * 8)?;
    let words: Vec<u32> = got
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Ok((words.chunks(2).map(|c| [c[0], c[1]]).collect(), stats))
}

fn run(body: &str, inputs: &[[u32; 8]]) -> Vec<[u32; 2]> {
    match try_run(body, inputs) {
        Ok((r, _)) => r,
        Err(e) => panic!("{e}\n{body}"),
    }
}

/// Runs `body` and compares every thread's `[%r10, %r11]` with `f`.
fn check(body: &str, inputs: &[[u32; 8]], f: impl Fn(&[u32; 8]) -> [u32; 2]) {
    let got = run(body, inputs);
    for (t, (g, x)) in got.iter().zip(inputs).enumerate() {
        let want = f(x);
        assert_eq!(
            *g, want,
            "thread {t}: inputs {x:08x?}\n got  {g:08x?}\n want {want:08x?}\n{body}"
        );
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 32) as u32
    }
}

/// `n` threads of random words, a quarter of them replaced by `specials`.
fn inputs(n: usize, seed: u64, specials: &[u32]) -> Vec<[u32; 8]> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let mut w = [0u32; 8];
            for x in &mut w {
                *x = r.next();
                if !specials.is_empty() && r.next().is_multiple_of(4) {
                    *x = specials[r.next() as usize % specials.len()];
                }
            }
            w
        })
        .collect()
}

const INT_SPECIALS: &[u32] = &[
    0,
    1,
    2,
    3,
    0xFFFF_FFFF,
    0x8000_0000,
    0x7FFF_FFFF,
    31,
    32,
    33,
    63,
    64,
    0xFF,
    0x80,
];

const F32_SPECIALS: &[u32] = &[
    0x0000_0000, // +0
    0x8000_0000, // -0
    0x7F80_0000, // +inf
    0xFF80_0000, // -inf
    0x7FC0_0000, // NaN
    0xFFC0_0001, // NaN with sign and payload
    0x7F80_0001, // signalling NaN
    0x0000_0001, // smallest subnormal
    0x807F_FFFF, // largest negative subnormal
    0x0080_0000, // smallest normal
    0x7F7F_FFFF, // largest finite
    0x3F80_0000, // 1
    0xBF80_0000, // -1
    0x3F00_0000, // 0.5
    0x4040_0000, // 3
];

type F3<T> = fn(T, T, T) -> T;

fn canon(x: f32) -> u32 {
    if x.is_nan() { 0x7FFF_FFFF } else { x.to_bits() }
}

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

fn d64(lo: u32, hi: u32) -> f64 {
    f64::from_bits(u64::from(lo) | (u64::from(hi) << 32))
}

fn split(x: u64) -> [u32; 2] {
    [x as u32, (x >> 32) as u32]
}

fn sx(x: u32) -> i32 {
    x as i32
}

/// Rounds an exact f64 value to f32 in a directed mode.
fn directed(x: f64, mode: &str) -> u32 {
    let r = x as f32;
    if f64::from(r) == x || r.is_nan() {
        return r.to_bits();
    }
    let next = |v: f32, up: bool| {
        if v == 0.0 {
            return if up { 1u32 } else { 0x8000_0001 };
        }
        let b = v.to_bits();
        if (v > 0.0) == up { b + 1 } else { b - 1 }
    };
    let (lo, hi) = if f64::from(r) < x {
        (r.to_bits(), next(r, true))
    } else {
        (next(r, false), r.to_bits())
    };
    match mode {
        "rz" => {
            if x > 0.0 {
                lo
            } else {
                hi
            }
        }
        "rm" => lo,
        _ => hi,
    }
}

/// Correctly rounded f64 -> f16: round to odd at f32 precision, then to
/// nearest even (exact for this last step).
fn h_of(x: f64) -> u32 {
    if x.is_nan() {
        return 0x7FFF;
    }
    let r = x as f32;
    if f64::from(r) == x || !r.is_finite() {
        return u32::from(f16::from_f32(r).to_bits());
    }
    let tz = if f64::from(r).abs() > x.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    };
    u32::from(f16::from_f32(f32::from_bits(tz.to_bits() | 1)).to_bits())
}

fn b_of(x: f64) -> u32 {
    if x.is_nan() {
        return 0x7FFF;
    }
    let r = x as f32;
    if f64::from(r) == x || !r.is_finite() {
        return u32::from(bf16::from_f32(r).to_bits());
    }
    let tz = if f64::from(r).abs() > x.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    };
    u32::from(bf16::from_f32(f32::from_bits(tz.to_bits() | 1)).to_bits())
}

/// `a * b + c` rounded to odd in f64 (TwoSum finds the error).
fn fma_odd(a: f64, b: f64, c: f64) -> f64 {
    let p = a * b;
    let s = p + c;
    if !s.is_finite() || s == 0.0 {
        return if s == 0.0 && p == 0.0 { p + c } else { s };
    }
    let bb = s - p;
    let err = (p - (s - bb)) + (c - bb);
    if err == 0.0 || s.to_bits() & 1 == 1 && (err > 0.0) == (s > 0.0) {
        return s;
    }
    let tz = if (err > 0.0) == (s > 0.0) {
        s
    } else {
        f64::from_bits(s.to_bits() - 1)
    };
    f64::from_bits(tz.to_bits() | 1)
}

fn hv(x: u32) -> f64 {
    f64::from(f16::from_bits(x as u16).to_f32())
}

fn bv(x: u32) -> f64 {
    f64::from(bf16::from_bits(x as u16).to_f32())
}

const H_SPECIALS: &[u32] = &[
    0x0000_8000,
    0x7C00_FC00,
    0x7E00_0001,
    0x03FF_8001,
    0x3C00_BC00,
    0x7BFF_0400,
    0xFE01_3800,
    0x0001_0001,
];
