//! Instruction-level tests: hand-written kernels per instruction family,
//! run through the public API and compared with independent Rust
//! computations (special values included: zeros, infinities, NaNs with
//! payloads, subnormals, extreme integers).

use super::{EmuError, Launch, LaunchStats, Memory, Module, Options, ParamValue};
use half::{bf16, f16};

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

// ----- integer -----

#[test]
fn integer_add_sub_mul() {
    let ins = inputs(64, 1, INT_SPECIALS);
    check("\tadd.u32 %r10, %r1, %r2;\n\tsub.s32 %r11, %r1, %r2;\n", &ins, |x| {
        [x[0].wrapping_add(x[1]), x[0].wrapping_sub(x[1])]
    });
    check(
        "\tmul.lo.u32 %r10, %r1, %r2;\n\tmul.hi.u32 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            let p = u64::from(x[0]) * u64::from(x[1]);
            [p as u32, (p >> 32) as u32]
        },
    );
    check(
        "\tmul.hi.s32 %r10, %r1, %r2;\n\tmul.wide.s32 %rd1, %r1, %r2;\n\tmov.b64 {_, %r11}, %rd1;\n",
        &ins,
        |x| {
            let p = i64::from(sx(x[0])) * i64::from(sx(x[1]));
            [(p >> 32) as u32, (p >> 32) as u32]
        },
    );
    check(
        "\tmul.wide.u32 %rd1, %r1, %r2;\n\tmov.b64 {%r10, %r11}, %rd1;\n",
        &ins,
        |x| split(u64::from(x[0]) * u64::from(x[1])),
    );
    check(
        "\tmad.lo.s32 %r10, %r1, %r2, %r3;\n\tmad.hi.u32 %r11, %r1, %r2, %r3;\n",
        &ins,
        |x| {
            let hi = ((u64::from(x[0]) * u64::from(x[1])) >> 32) as u32;
            [x[0].wrapping_mul(x[1]).wrapping_add(x[2]), hi.wrapping_add(x[2])]
        },
    );
    check(
        "\tmov.b64 %rd2, {%r3, %r4};\n\tmad.wide.s32 %rd1, %r1, %r2, %rd2;\n\tmov.b64 {%r10, %r11}, %rd1;\n",
        &ins,
        |x| {
            let c = u64::from(x[2]) | (u64::from(x[3]) << 32);
            split(((i64::from(sx(x[0])) * i64::from(sx(x[1]))) as u64).wrapping_add(c))
        },
    );
    check(
        "\tmov.b64 %rd1, {%r1, %r2};\n\tmov.b64 %rd2, {%r3, %r4};\n\tmul.lo.u64 %rd3, %rd1, %rd2;\n\tmul.hi.s64 %rd4, %rd1, %rd2;\n\tmov.b64 {%r10, _}, %rd3;\n\tmov.b64 {_, %r11}, %rd4;\n",
        &ins,
        |x| {
            let a = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let b = u64::from(x[2]) | (u64::from(x[3]) << 32);
            let hi = ((i128::from(a as i64) * i128::from(b as i64)) >> 64) as u64;
            [a.wrapping_mul(b) as u32, (hi >> 32) as u32]
        },
    );
    check(
        "\tadd.sat.s32 %r10, %r1, %r2;\n\tsub.sat.s32 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            [
                sx(x[0]).saturating_add(sx(x[1])) as u32,
                sx(x[0]).saturating_sub(sx(x[1])) as u32,
            ]
        },
    );
    check(
        "\tmul24.lo.u32 %r10, %r1, %r2;\n\tmad24.lo.s32 %r11, %r1, %r2, %r3;\n",
        &ins,
        |x| {
            let s24 = |v: u32| ((v << 8) as i32) >> 8;
            [
                (x[0] & 0xFF_FFFF).wrapping_mul(x[1] & 0xFF_FFFF),
                (s24(x[0]).wrapping_mul(s24(x[1])) as u32).wrapping_add(x[2]),
            ]
        },
    );
    check(
        "\tsad.s32 %r10, %r1, %r2, %r3;\n\tsad.u32 %r11, %r1, %r2, %r3;\n",
        &ins,
        |x| {
            [
                sx(x[0]).abs_diff(sx(x[1])).wrapping_add(x[2]),
                x[0].abs_diff(x[1]).wrapping_add(x[2]),
            ]
        },
    );
    // 16-bit arithmetic in .b16 registers.
    check(
        "\tcvt.u16.u32 %h1, %r1;\n\tcvt.u16.u32 %h2, %r2;\n\tadd.u16 %h3, %h1, %h2;\n\tcvt.u32.u16 %r10, %h3;\n\tmul.wide.s16 %r11, %h1, %h2;\n",
        &ins,
        |x| {
            let (a, b) = (x[0] as u16, x[1] as u16);
            [
                u32::from(a.wrapping_add(b)),
                (i32::from(a as i16) * i32::from(b as i16)) as u32,
            ]
        },
    );
}

#[test]
fn integer_division_by_zero_and_overflow() {
    let mut ins = inputs(64, 2, INT_SPECIALS);
    ins[0][..2].copy_from_slice(&[7, 0]);
    ins[1][..2].copy_from_slice(&[0x8000_0000, 0xFFFF_FFFF]);
    ins[2][..2].copy_from_slice(&[(-7i32) as u32, 0]);
    ins[3][..2].copy_from_slice(&[(-7i32) as u32, 2]);
    check("\tdiv.u32 %r10, %r1, %r2;\n\trem.u32 %r11, %r1, %r2;\n", &ins, |x| {
        [
            x[0].checked_div(x[1]).unwrap_or(u32::MAX),
            x[0].checked_rem(x[1]).unwrap_or(u32::MAX),
        ]
    });
    check("\tdiv.s32 %r10, %r1, %r2;\n\trem.s32 %r11, %r1, %r2;\n", &ins, |x| {
        // x / 0 and x % 0 are all ones, whatever the sign (as on an H100).
        let (a, b) = (sx(x[0]), sx(x[1]));
        if b == 0 {
            [u32::MAX, u32::MAX]
        } else {
            [a.wrapping_div(b) as u32, a.wrapping_rem(b) as u32]
        }
    });
    check(
        "\tmov.b64 %rd1, {%r1, %r2};\n\tmov.b64 %rd2, {%r3, %r3};\n\tdiv.s64 %rd3, %rd1, %rd2;\n\trem.u64 %rd4, %rd1, %rd2;\n\tmov.b64 {%r10, _}, %rd3;\n\tmov.b64 {%r11, _}, %rd4;\n",
        &ins,
        |x| {
            let a = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let b = u64::from(x[2]) | (u64::from(x[2]) << 32);
            let q = if b == 0 {
                u64::MAX
            } else {
                (a as i64).wrapping_div(b as i64) as u64
            };
            let r = a.checked_rem(b).unwrap_or(u64::MAX);
            [q as u32, r as u32]
        },
    );
}

#[test]
fn integer_min_max_neg_abs_logic() {
    let ins = inputs(64, 3, INT_SPECIALS);
    check("\tmin.u32 %r10, %r1, %r2;\n\tmax.s32 %r11, %r1, %r2;\n", &ins, |x| {
        [x[0].min(x[1]), sx(x[0]).max(sx(x[1])) as u32]
    });
    check("\tneg.s32 %r10, %r1;\n\tabs.s32 %r11, %r1;\n", &ins, |x| {
        [sx(x[0]).wrapping_neg() as u32, sx(x[0]).wrapping_abs() as u32]
    });
    check(
        "\tand.b32 %r12, %r1, %r2;\n\tor.b32 %r13, %r12, %r3;\n\txor.b32 %r10, %r13, %r4;\n\tnot.b32 %r14, %r1;\n\tcnot.b32 %r15, %r2;\n\tadd.u32 %r11, %r14, %r15;\n",
        &ins,
        |x| {
            [
                ((x[0] & x[1]) | x[2]) ^ x[3],
                (!x[0]).wrapping_add(u32::from(x[1] == 0)),
            ]
        },
    );
    check("\tmin.relu.s32 %r10, %r1, %r2;\n\tmov.u32 %r11, 0;\n", &ins, |x| {
        [sx(x[0]).min(sx(x[1])).max(0) as u32, 0]
    });
}

#[test]
fn shifts_clamp_their_amount() {
    let ins = inputs(64, 4, INT_SPECIALS);
    check(
        "\tand.b32 %r12, %r2, 63;\n\tshl.b32 %r10, %r1, %r12;\n\tshr.u32 %r11, %r1, %r12;\n",
        &ins,
        |x| {
            let n = x[1] & 63;
            [x[0].checked_shl(n).unwrap_or(0), x[0].checked_shr(n).unwrap_or(0)]
        },
    );
    check(
        "\tand.b32 %r12, %r2, 63;\n\tshr.s32 %r10, %r1, %r12;\n\tshr.s32 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            [
                (sx(x[0]) >> (x[1] & 63).min(31)) as u32,
                (sx(x[0]) >> x[1].min(31)) as u32,
            ]
        },
    );
    check(
        "\tmov.b64 %rd1, {%r1, %r2};\n\tand.b32 %r12, %r3, 127;\n\tshl.b64 %rd2, %rd1, %r12;\n\tshr.s64 %rd3, %rd1, %r12;\n\tmov.b64 {%r10, _}, %rd2;\n\tmov.b64 {_, %r11}, %rd3;\n",
        &ins,
        |x| {
            let a = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let n = x[2] & 127;
            [
                a.checked_shl(n).unwrap_or(0) as u32,
                (((a as i64) >> n.min(63)) as u64 >> 32) as u32,
            ]
        },
    );
    check(
        "\tshf.l.wrap.b32 %r10, %r1, %r2, %r3;\n\tshf.r.clamp.b32 %r11, %r1, %r2, %r3;\n",
        &ins,
        |x| {
            let v = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let l = x[2] & 31;
            let r = x[2].min(32);
            [((v << l) >> 32) as u32, (v >> r) as u32]
        },
    );
}

/// `dp4a`/`dp2a` against byte-by-byte products in i64.
#[test]
fn dp4a_and_dp2a_in_every_sign_combination() {
    let ins = inputs(96, 11, INT_SPECIALS);
    let b8 = |x: u32, k: u32, s: bool| -> i64 {
        let v = (x >> (8 * k)) as u8;
        if s { i64::from(v as i8) } else { i64::from(v) }
    };
    let h16 = |x: u32, k: u32, s: bool| -> i64 {
        let v = (x >> (16 * k)) as u16;
        if s { i64::from(v as i16) } else { i64::from(v) }
    };
    for (sa, sb) in [(false, false), (false, true), (true, false), (true, true)] {
        let (ta, tb) = (if sa { "s32" } else { "u32" }, if sb { "s32" } else { "u32" });
        check(
            &format!("\tdp4a.{ta}.{tb} %r10, %r1, %r2, %r3;\n\tdp2a.lo.{ta}.{tb} %r11, %r1, %r2, %r3;\n"),
            &ins,
            |x| {
                let d4: i64 = (0..4).map(|k| b8(x[0], k, sa) * b8(x[1], k, sb)).sum::<i64>() + i64::from(x[2]);
                let d2: i64 = (0..2).map(|k| h16(x[0], k, sa) * b8(x[1], k, sb)).sum::<i64>() + i64::from(x[2]);
                [d4 as u32, d2 as u32]
            },
        );
        check(
            &format!("\tdp2a.hi.{ta}.{tb} %r10, %r1, %r2, %r3;\n\tdp4a.{ta}.{tb} %r11, %r1, 0x80ff017f, -5;\n"),
            &ins,
            |x| {
                let d2: i64 = (0..2).map(|k| h16(x[0], k, sa) * b8(x[1], 2 + k, sb)).sum::<i64>() + i64::from(x[2]);
                let d4: i64 = (0..4).map(|k| b8(x[0], k, sa) * b8(0x80ff_017f, k, sb)).sum::<i64>() - 5;
                [d2 as u32, d4 as u32]
            },
        );
    }
    // Kernels that overlap with a dependent launch: no-ops here.
    check(
        "\tgriddepcontrol.wait;\n\tmov.u32 %r10, %r1;\n\tgriddepcontrol.launch_dependents;\n\tmov.u32 %r11, 7;\n",
        &ins[..4],
        |x| [x[0], 7],
    );
    assert!(try_run("\tdp2a.u32.u32 %r10, %r1, %r2, %r3;\n", &ins[..1]).is_err());
}

#[test]
fn bit_manipulation() {
    let ins = inputs(64, 5, INT_SPECIALS);
    check("\tpopc.b32 %r10, %r1;\n\tclz.b32 %r11, %r1;\n", &ins, |x| {
        [x[0].count_ones(), x[0].leading_zeros()]
    });
    check("\tbrev.b32 %r10, %r1;\n\tbfind.s32 %r11, %r1;\n", &ins, |x| {
        let v = if sx(x[0]) < 0 { !x[0] } else { x[0] };
        [
            x[0].reverse_bits(),
            if v == 0 { u32::MAX } else { 31 - v.leading_zeros() },
        ]
    });
    check(
        "\tand.b32 %r12, %r2, 63;\n\tand.b32 %r13, %r3, 63;\n\tbfe.u32 %r10, %r1, %r12, %r13;\n\tbfe.s32 %r11, %r1, %r12, %r13;\n",
        &ins,
        |x| {
            let (pos, len) = (x[1] & 63, x[2] & 63);
            let bit = |k: u32| if k < 32 { (x[0] >> k) & 1 } else { 0 };
            let sbit = if len == 0 {
                0
            } else {
                (x[0] >> (pos + len - 1).min(31)) & 1
            };
            let mut u = 0;
            let mut s = 0;
            for k in 0..32 {
                let inside = k < len && pos + k <= 31;
                u |= (if inside { bit(pos + k) } else { 0 }) << k;
                s |= (if inside { bit(pos + k) } else { sbit }) << k;
            }
            [u, s]
        },
    );
    check(
        "\tand.b32 %r12, %r3, 31;\n\tand.b32 %r13, %r4, 31;\n\tbfi.b32 %r10, %r1, %r2, %r12, %r13;\n\tprmt.b32 %r11, %r1, %r2, %r5;\n",
        &ins,
        |x| {
            let (pos, len) = (x[2] & 31, x[3] & 31);
            let mut r = x[1];
            for j in 0..len {
                if pos + j > 31 {
                    break;
                }
                r = (r & !(1 << (pos + j))) | (((x[0] >> j) & 1) << (pos + j));
            }
            let src = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let mut p = 0u32;
            for k in 0..4 {
                let sel = (x[4] >> (4 * k)) & 0xF;
                let byte = ((src >> (8 * (sel & 7))) & 0xFF) as u32;
                let byte = if sel & 8 != 0 {
                    if byte & 0x80 != 0 { 0xFF } else { 0 }
                } else {
                    byte
                };
                p |= byte << (8 * k);
            }
            [r, p]
        },
    );
    for (lut, f) in [
        (
            0x96u32,
            (|a: u32, b: u32, c: u32| a ^ b ^ c) as fn(u32, u32, u32) -> u32,
        ),
        (0xE8, |a, b, c| (a & b) | (a & c) | (b & c)),
        (0xF0, |a, _, _| a),
        (0x80, |a, b, c| a & b & c),
        (0x1E, |a, b, c| a ^ (b | c)),
    ] {
        let body = format!("\tlop3.b32 %r10, %r1, %r2, %r3, {lut};\n\tprmt.b32.f4e %r11, %r1, %r2, %r4;\n");
        check(&body, &ins, |x| {
            let src = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let s = u64::from(x[3] & 3);
            [f(x[0], x[1], x[2]), (src >> (8 * s)) as u32]
        });
    }
}

// ----- float -----

#[test]
fn f32_round_to_nearest_with_nan_and_subnormals() {
    let ins = inputs(256, 6, F32_SPECIALS);
    let ops: [(&str, F3<f32>); 5] = [
        ("add.rn.f32", |a, b, _| a + b),
        ("sub.rn.f32", |a, b, _| a - b),
        ("mul.rn.f32", |a, b, _| a * b),
        ("div.rn.f32", |a, b, _| a / b),
        ("fma.rn.f32", |a, b, c| a.mul_add(b, c)),
    ];
    for (op, g) in ops {
        let args = if op.starts_with("fma") {
            "%f1, %f2, %f3"
        } else {
            "%f1, %f2"
        };
        let body = format!(
            "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tmov.b32 %f3, %r3;\n\t{op} %f4, {args};\n\tmov.b32 %r10, %f4;\n\tmov.u32 %r11, 0;\n"
        );
        check(&body, &ins, |x| [canon(g(f(x[0]), f(x[1]), f(x[2]))), 0]);
    }
    check(
        "\tmov.b32 %f1, %r1;\n\tsqrt.rn.f32 %f2, %f1;\n\tmov.b32 %r10, %f2;\n\trcp.rn.f32 %f3, %f1;\n\tmov.b32 %r11, %f3;\n",
        &ins,
        |x| [canon(f(x[0]).sqrt()), canon(1.0 / f(x[0]))],
    );
    // Immediates and `mad.rn` (an fma).
    check(
        "\tmov.b32 %f1, %r1;\n\tmad.rn.f32 %f2, %f1, 0f3FC00000, 0fBF800000;\n\tmov.b32 %r10, %f2;\n\tmul.f32 %f3, %f1, 0.1;\n\tmov.b32 %r11, %f3;\n",
        &ins,
        |x| [canon(f(x[0]).mul_add(1.5, -1.0)), canon(f(x[0]) * 0.1f64 as f32)],
    );
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

#[test]
fn f32_directed_rounding() {
    // Moderate exponents so that sums and products are exact in f64.
    let mut ins = inputs(256, 7, &[]);
    for x in &mut ins {
        for w in x.iter_mut() {
            *w = (*w & 0x80FF_FFFF) | ((0x3A + (*w >> 24) % 10) << 24);
        }
    }
    for mode in ["rz", "rm", "rp"] {
        let body = format!(
            "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tadd.{mode}.f32 %f3, %f1, %f2;\n\tmul.{mode}.f32 %f4, %f1, %f2;\n\tmov.b32 %r10, %f3;\n\tmov.b32 %r11, %f4;\n"
        );
        check(&body, &ins, |x| {
            let (a, b) = (f64::from(f(x[0])), f64::from(f(x[1])));
            [directed(a + b, mode), directed(a * b, mode)]
        });
    }
    let one_third = [[0x3F80_0000, 0x4040_0000, 0, 0, 0, 0, 0, 0]];
    for (mode, want) in [
        ("rn", 0x3EAA_AAAB),
        ("rz", 0x3EAA_AAAA),
        ("rm", 0x3EAA_AAAA),
        ("rp", 0x3EAA_AAAB),
    ] {
        let body = format!(
            "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tdiv.{mode}.f32 %f3, %f1, %f2;\n\tmov.b32 %r10, %f3;\n\tneg.f32 %f4, %f3;\n\tdiv.{mode}.f32 %f4, %f4, %f4;\n\tmov.b32 %r11, %f4;\n"
        );
        check(&body, &one_third, |_| [want, 0x3F80_0000]);
    }
    // Overflow: rz stays finite, rn goes to infinity.
    let big = [[0x7F7F_FFFF, 0x7F7F_FFFF, 0, 0, 0, 0, 0, 0]];
    check(
        "\tmov.b32 %f1, %r1;\n\tadd.rz.f32 %f2, %f1, %f1;\n\tmov.b32 %r10, %f2;\n\tadd.rn.f32 %f3, %f1, %f1;\n\tmov.b32 %r11, %f3;\n",
        &big,
        |_| [0x7F7F_FFFF, 0x7F80_0000],
    );
    // sqrt.rp of 2 is one ulp above sqrt.rz.
    let two = [[0x4000_0000, 0, 0, 0, 0, 0, 0, 0]];
    check(
        "\tmov.b32 %f1, %r1;\n\tsqrt.rz.f32 %f2, %f1;\n\tmov.b32 %r10, %f2;\n\tsqrt.rp.f32 %f3, %f1;\n\tmov.b32 %r11, %f3;\n",
        &two,
        |_| [0x3FB5_04F3, 0x3FB5_04F4],
    );
}

#[test]
fn f32_min_max_sign_ops_ftz_sat() {
    let ins = inputs(256, 8, F32_SPECIALS);
    let is_nan = |x: u32| f(x).is_nan();
    let less = |a: u32, b: u32| f(a) < f(b) || (f(a) == f(b) && a == 0x8000_0000 && b == 0);
    check(
        "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tmin.f32 %f3, %f1, %f2;\n\tmax.f32 %f4, %f1, %f2;\n\tmov.b32 %r10, %f3;\n\tmov.b32 %r11, %f4;\n",
        &ins,
        |x| {
            let (a, b) = (x[0], x[1]);
            match (is_nan(a), is_nan(b)) {
                (true, true) => [0x7FFF_FFFF; 2],
                (true, false) => [b, b],
                (false, true) => [a, a],
                _ => {
                    if less(a, b) {
                        [a, b]
                    } else if less(b, a) {
                        [b, a]
                    } else {
                        [a, a]
                    }
                }
            }
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tmin.NaN.f32 %f3, %f1, %f2;\n\tmov.b32 %r10, %f3;\n\tmov.u32 %r11, 0;\n",
        &ins,
        |x| {
            if is_nan(x[0]) || is_nan(x[1]) {
                [0x7FFF_FFFF, 0]
            } else if less(x[1], x[0]) {
                [x[1], 0]
            } else {
                [x[0], 0]
            }
        },
    );
    // abs and neg flip or clear the sign of numbers; a NaN becomes the
    // canonical NaN (as on an H100).
    check(
        "\tmov.b32 %f1, %r1;\n\tneg.f32 %f2, %f1;\n\tabs.f32 %f3, %f1;\n\tmov.b32 %r10, %f2;\n\tmov.b32 %r11, %f3;\n",
        &ins,
        |x| {
            if is_nan(x[0]) {
                [0x7FFF_FFFF; 2]
            } else {
                [x[0] ^ 0x8000_0000, x[0] & 0x7FFF_FFFF]
            }
        },
    );
    let sub = |x: u32| x & 0x7F80_0000 == 0 && x & 0x007F_FFFF != 0;
    let flush = |x: u32| if sub(x) { x & 0x8000_0000 } else { x };
    check(
        "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tmul.rn.ftz.f32 %f3, %f1, %f2;\n\tadd.rn.sat.f32 %f4, %f1, %f2;\n\tmov.b32 %r10, %f3;\n\tmov.b32 %r11, %f4;\n",
        &ins,
        |x| {
            let m = flush(canon(f(flush(x[0])) * f(flush(x[1]))));
            let s = f(x[0]) + f(x[1]);
            let sat = if s.is_nan() || s <= 0.0 {
                0
            } else {
                s.min(1.0).to_bits()
            };
            [m, sat]
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tcopysign.f32 %f3, %f1, %f2;\n\tmov.b32 %r10, %f3;\n\ttestp.subnormal.f32 %p1, %f1;\n\ttestp.notanumber.f32 %p2, %f2;\n\tselp.u32 %r12, 1, 0, %p1;\n\tselp.u32 %r13, 2, 0, %p2;\n\tor.b32 %r11, %r12, %r13;\n",
        &ins,
        |x| {
            [
                (x[1] & 0x7FFF_FFFF) | (x[0] & 0x8000_0000),
                u32::from(sub(x[0])) | (u32::from(is_nan(x[1])) << 1),
            ]
        },
    );
}

#[test]
fn f64_arithmetic() {
    let mut ins = inputs(256, 9, F32_SPECIALS);
    // Sprinkle f64 specials into the high words.
    for (k, x) in ins.iter_mut().enumerate() {
        if k % 7 == 0 {
            x[1] = 0x7FF8_0000;
        }
        if k % 11 == 0 {
            x[3] = 0x0000_0000;
        }
    }
    let ops: [(&str, F3<f64>); 5] = [
        ("add.rn.f64", |a, b, _| a + b),
        ("mul.rn.f64", |a, b, _| a * b),
        ("div.rn.f64", |a, b, _| a / b),
        ("fma.rn.f64", |a, b, c| a.mul_add(b, c)),
        ("sub.rn.f64", |a, b, _| a - b),
    ];
    for (op, g) in ops {
        let args = if op.starts_with("fma") {
            "%fd1, %fd2, %fd3"
        } else {
            "%fd1, %fd2"
        };
        let body = format!(
            "\tmov.b64 %fd1, {{%r1, %r2}};\n\tmov.b64 %fd2, {{%r3, %r4}};\n\tmov.b64 %fd3, {{%r5, %r6}};\n\t{op} %fd4, {args};\n\tmov.b64 {{%r10, %r11}}, %fd4;\n"
        );
        check(&body, &ins, |x| {
            let (a, b, c) = (d64(x[0], x[1]), d64(x[2], x[3]), d64(x[4], x[5]));
            let r = g(a, b, c);
            if !r.is_nan() {
                return split(r.to_bits());
            }
            // H100: the first NaN operand in priority order, quieted; an
            // invalid operation gives 0xFFF8000000000000.
            let order = match &op[..3] {
                "fma" => vec![b, c, a],
                "div" => vec![a, b],
                _ => vec![b, a],
            };
            split(
                order
                    .iter()
                    .find(|v| v.is_nan())
                    .map_or(0xFFF8_0000_0000_0000, |v| v.to_bits() | 1 << 51),
            )
        });
    }
    check(
        "\tmov.b64 %fd1, {%r1, %r2};\n\tsqrt.rn.f64 %fd2, %fd1;\n\tabs.f64 %fd3, %fd2;\n\tmov.b64 {%r10, %r11}, %fd3;\n",
        &ins,
        |x| {
            let a = d64(x[0], x[1]);
            if a.is_nan() {
                split(a.to_bits() | 1 << 51)
            } else if a < 0.0 {
                split(0xFFF8_0000_0000_0000)
            } else {
                split(a.sqrt().to_bits())
            }
        },
    );
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

#[test]
fn f16_and_f16x2_arithmetic() {
    let ins = inputs(256, 10, H_SPECIALS);
    let halves = |x: u32| [x & 0xFFFF, x >> 16];
    let each = |a: u32, b: u32, c: u32, g: &dyn Fn(u32, u32, u32) -> u32| {
        let (a, b, c) = (halves(a), halves(b), halves(c));
        g(a[0], b[0], c[0]) | (g(a[1], b[1], c[1]) << 16)
    };
    check(
        "\tadd.rn.f16x2 %r10, %r1, %r2;\n\tmul.rn.f16x2 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            [
                each(x[0], x[1], 0, &|a, b, _| h_of(hv(a) + hv(b))),
                each(x[0], x[1], 0, &|a, b, _| h_of(hv(a) * hv(b))),
            ]
        },
    );
    check(
        "\tfma.rn.f16x2 %r10, %r1, %r2, %r3;\n\tsub.rn.f16x2 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            [
                each(x[0], x[1], x[2], &|a, b, c| h_of(fma_odd(hv(a), hv(b), hv(c)))),
                each(x[0], x[1], 0, &|a, b, _| h_of(hv(a) - hv(b))),
            ]
        },
    );
    // Scalar f16 in .b16 registers, neg/abs as sign operations.
    check(
        "\tmov.b32 {%h1, %h2}, %r1;\n\tmov.b32 {%h3, _}, %r2;\n\tfma.rn.f16 %h4, %h1, %h2, %h3;\n\tneg.f16 %h5, %h1;\n\tabs.f16 %h6, %h2;\n\tmov.b32 %r10, {%h4, %h5};\n\tcvt.u32.u16 %r11, %h6;\n",
        &ins,
        |x| {
            let (a, b, c) = (x[0] & 0xFFFF, x[0] >> 16, x[1] & 0xFFFF);
            let sign_op = |v: u32, f: u32| if hv(v).is_nan() { 0x7FFF } else { f };
            [
                h_of(fma_odd(hv(a), hv(b), hv(c))) | (sign_op(a, a ^ 0x8000) << 16),
                sign_op(b, b & 0x7FFF),
            ]
        },
    );
    check(
        "\tmin.f16x2 %r10, %r1, %r2;\n\tmax.NaN.f16x2 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            let nan = |v: u32| hv(v).is_nan();
            let lt = |a: u32, b: u32| hv(a) < hv(b) || (hv(a) == hv(b) && a == 0x8000 && b == 0);
            let min = |a: u32, b: u32, _: u32| match (nan(a), nan(b)) {
                (true, true) => 0x7FFF,
                (true, false) => b,
                (false, true) => a,
                _ => {
                    if lt(b, a) {
                        b
                    } else {
                        a
                    }
                }
            };
            let max_nan = |a: u32, b: u32, _: u32| {
                if nan(a) || nan(b) {
                    0x7FFF
                } else if lt(a, b) {
                    b
                } else {
                    a
                }
            };
            [each(x[0], x[1], 0, &min), each(x[0], x[1], 0, &max_nan)]
        },
    );
}

#[test]
fn bf16_arithmetic() {
    let ins = inputs(256, 11, H_SPECIALS);
    let halves = |x: u32| [x & 0xFFFF, x >> 16];
    let each = |a: u32, b: u32, c: u32, g: &dyn Fn(u32, u32, u32) -> u32| {
        let (a, b, c) = (halves(a), halves(b), halves(c));
        g(a[0], b[0], c[0]) | (g(a[1], b[1], c[1]) << 16)
    };
    check(
        "\tmul.rn.bf16x2 %r10, %r1, %r2;\n\tfma.rn.bf16x2 %r11, %r1, %r2, %r3;\n",
        &ins,
        |x| {
            [
                each(x[0], x[1], 0, &|a, b, _| b_of(bv(a) * bv(b))),
                each(x[0], x[1], x[2], &|a, b, c| b_of(fma_odd(bv(a), bv(b), bv(c)))),
            ]
        },
    );
    check(
        "\tmov.b32 {%h1, %h2}, %r1;\n\tadd.rn.bf16 %h3, %h1, %h2;\n\tcvt.u32.u16 %r10, %h3;\n\tsub.rn.bf16x2 %r11, %r1, %r2;\n",
        &ins,
        |x| {
            [
                b_of(fma_odd(bv(x[0] & 0xFFFF), 1.0, bv(x[0] >> 16))),
                each(x[0], x[1], 0, &|a, b, _| b_of(fma_odd(bv(a), 1.0, -bv(b)))),
            ]
        },
    );
}

// ----- conversions -----

#[test]
fn cvt_integer_to_integer() {
    let ins = inputs(128, 12, INT_SPECIALS);
    check("\tcvt.u8.u32 %r10, %r1;\n\tcvt.s8.s32 %r11, %r1;\n", &ins, |x| {
        [x[0] & 0xFF, i32::from(x[0] as i8) as u32]
    });
    check(
        "\tcvt.s64.s32 %rd1, %r1;\n\tmov.b64 {_, %r10}, %rd1;\n\tcvt.u64.u32 %rd2, %r1;\n\tmov.b64 {_, %r11}, %rd2;\n",
        &ins,
        |x| [if sx(x[0]) < 0 { u32::MAX } else { 0 }, 0],
    );
    check(
        "\tmov.b64 %rd1, {%r1, %r2};\n\tcvt.u32.u64 %r10, %rd1;\n\tcvt.sat.s32.s64 %r11, %rd1;\n",
        &ins,
        |x| {
            let v = (u64::from(x[0]) | (u64::from(x[1]) << 32)) as i64;
            [x[0], v.clamp(i32::MIN.into(), i32::MAX.into()) as u32]
        },
    );
    check(
        "\tcvt.sat.u8.s32 %r10, %r1;\n\tcvt.sat.s16.u32 %r11, %r1;\n",
        &ins,
        |x| [sx(x[0]).clamp(0, 255) as u32, i32::from(x[0].min(0x7FFF) as i16) as u32],
    );
    check(
        "\tcvt.u16.u32 %h1, %r1;\n\tcvt.s32.s16 %r10, %h1;\n\tcvt.u32.u16 %r11, %h1;\n",
        &ins,
        |x| [i32::from(x[0] as i16) as u32, x[0] & 0xFFFF],
    );
}

#[test]
fn cvt_float_to_integer_saturates() {
    let ins = inputs(256, 13, F32_SPECIALS);
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rzi.s32.f32 %r10, %f1;\n\tcvt.rzi.u32.f32 %r11, %f1;\n",
        &ins,
        |x| [f(x[0]) as i32 as u32, f(x[0]) as u32],
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rni.s32.f32 %r10, %f1;\n\tcvt.rmi.s32.f32 %r12, %f1;\n\tcvt.rpi.s32.f32 %r13, %f1;\n\txor.b32 %r11, %r12, %r13;\n",
        &ins,
        |x| {
            let v = f(x[0]);
            [
                v.round_ties_even() as i32 as u32,
                (v.floor() as i32 ^ v.ceil() as i32) as u32,
            ]
        },
    );
    // NaN: 0 for 32-bit destinations from f32; 1 << 63 into 64 bits, and
    // 1 << 31 from f64.
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rzi.s64.f32 %rd1, %f1;\n\tmov.b64 {%r10, %r11}, %rd1;\n",
        &ins,
        |x| {
            let v = f(x[0]);
            split(if v.is_nan() { 1 << 63 } else { v as i64 as u64 })
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.f64.f32 %fd1, %f1;\n\tcvt.rzi.s32.f64 %r10, %fd1;\n\tcvt.rzi.u64.f64 %rd2, %fd1;\n\tmov.b64 {%r11, _}, %rd2;\n",
        &ins,
        |x| {
            let v = f64::from(f(x[0]));
            if v.is_nan() {
                [0x8000_0000, 0]
            } else {
                [v as i32 as u32, v as u64 as u32]
            }
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rzi.u16.f32 %h1, %f1;\n\tcvt.u32.u16 %r10, %h1;\n\tcvt.rni.s8.f32 %r11, %f1;\n",
        &ins,
        |x| {
            [
                u32::from(f(x[0]) as u16),
                i32::from(f(x[0]).round_ties_even() as i8) as u32,
            ]
        },
    );
}

#[test]
fn cvt_integer_to_float_rounds() {
    let ins = inputs(256, 14, INT_SPECIALS);
    check(
        "\tcvt.rn.f32.s32 %f1, %r1;\n\tmov.b32 %r10, %f1;\n\tcvt.rn.f32.u32 %f2, %r1;\n\tmov.b32 %r11, %f2;\n",
        &ins,
        |x| [(sx(x[0]) as f32).to_bits(), (x[0] as f32).to_bits()],
    );
    for mode in ["rz", "rm", "rp"] {
        let body = format!(
            "\tcvt.{mode}.f32.s32 %f1, %r1;\n\tmov.b32 %r10, %f1;\n\tmov.b64 %rd1, {{%r1, %r2}};\n\tcvt.{mode}.f32.u64 %f2, %rd1;\n\tmov.b32 %r11, %f2;\n"
        );
        check(&body, &ins, |x| {
            let u = u64::from(x[0]) | (u64::from(x[1]) << 32);
            // u64 -> f64 may round; check against the exact i128 path.
            let exact = |v: i128| {
                let r = v as f64;
                if r as i128 == v {
                    directed(r, mode)
                } else {
                    // Rare: recompute from an f64 rounded toward the value's
                    // truncation plus a sticky bit (round to odd).
                    let t = if (r as i128) > v {
                        f64::from_bits(r.to_bits() - 1)
                    } else {
                        r
                    };
                    directed(f64::from_bits(t.to_bits() | 1), mode)
                }
            };
            [exact(i128::from(sx(x[0]))), exact(i128::from(u))]
        });
    }
    check(
        "\tcvt.rn.f16.s32 %h1, %r1;\n\tcvt.u32.u16 %r10, %h1;\n\tmov.b64 %rd1, {%r1, %r2};\n\tcvt.rn.f64.s64 %fd1, %rd1;\n\tcvt.rn.f32.f64 %f1, %fd1;\n\tmov.b32 %r11, %f1;\n",
        &ins,
        |x| {
            let s = (u64::from(x[0]) | (u64::from(x[1]) << 32)) as i64;
            [h_of(f64::from(sx(x[0]))), (s as f64 as f32).to_bits()]
        },
    );
}

#[test]
fn cvt_float_to_float() {
    let ins = inputs(256, 15, F32_SPECIALS);
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rn.f16.f32 %h1, %f1;\n\tcvt.u32.u16 %r10, %h1;\n\tcvt.f32.f16 %f2, %h1;\n\tmov.b32 %r11, %f2;\n",
        &ins,
        |x| {
            let h = f16::from_f32(f(x[0]));
            let h = if h.is_nan() { f16::from_bits(0x7FFF) } else { h };
            [u32::from(h.to_bits()), canon(h.to_f32())]
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rn.bf16.f32 %h1, %f1;\n\tcvt.u32.u16 %r10, %h1;\n\tcvt.rz.f16.f32 %h2, %f1;\n\tcvt.u32.u16 %r11, %h2;\n",
        &ins,
        |x| {
            let v = f(x[0]);
            let b = if v.is_nan() {
                0x7FFF
            } else {
                u32::from(bf16::from_f32(v).to_bits())
            };
            // Toward zero: truncate the f32 to the nearest f16 not above it
            // in magnitude.
            let rz = if v.is_nan() {
                0x7FFF
            } else {
                let n = f16::from_f32(v);
                if (n.is_infinite() && v.is_finite()) || n.to_f32().abs() > v.abs() {
                    u32::from(n.to_bits()) - 1
                } else {
                    u32::from(n.to_bits())
                }
            };
            [b, rz]
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.f64.f32 %fd1, %f1;\n\tmul.rn.f64 %fd2, %fd1, 0d3FF0000000000001;\n\tcvt.rn.f32.f64 %f2, %fd2;\n\tmov.b32 %r10, %f2;\n\tcvt.rz.f32.f64 %f3, %fd2;\n\tmov.b32 %r11, %f3;\n",
        &ins,
        |x| {
            // NaNs keep sign and payload through f32 -> f64 -> f32, quieted.
            if f(x[0]).is_nan() {
                return [x[0] | 0x0040_0000; 2];
            }
            let v = f64::from(f(x[0])) * f64::from_bits(0x3FF0_0000_0000_0001);
            [(v as f32).to_bits(), directed(v, "rz")]
        },
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tcvt.rni.f32.f32 %f2, %f1;\n\tmov.b32 %r10, %f2;\n\tcvt.rzi.f32.f32 %f3, %f1;\n\tmov.b32 %r11, %f3;\n",
        &ins,
        |x| [canon(f(x[0]).round_ties_even()), canon(f(x[0]).trunc())],
    );
    check(
        "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tcvt.rn.f16x2.f32 %r10, %f1, %f2;\n\tcvt.rn.bf16x2.f32 %r11, %f1, %f2;\n",
        &ins,
        |x| {
            let h = |v: u32| h_of(f64::from(f(v)));
            let b = |v: u32| b_of(f64::from(f(v)));
            [h(x[1]) | (h(x[0]) << 16), b(x[1]) | (b(x[0]) << 16)]
        },
    );
}

#[test]
fn cvt_fp8_and_fp4() {
    // Every e4m3 pair decodes exactly and re-encodes to itself (NaN to
    // the canonical 0x7F).
    let pairs: Vec<[u32; 8]> = (0..128u32)
        .map(|k| [k | ((k + 128) << 8), 0, 0, 0, 0, 0, 0, 0])
        .collect();
    let e4m3 = |b: u32| -> f32 {
        let (s, e, m) = (b >> 7, (b >> 3) & 15, b & 7);
        let v = if e == 0 {
            m as f32 / 8.0 * 2f32.powi(-6)
        } else {
            (1.0 + m as f32 / 8.0) * 2f32.powi(e as i32 - 7)
        };
        if s == 1 { -v } else { v }
    };
    check(
        "\tmov.b32 {%h1, _}, %r1;\n\tcvt.rn.f16x2.e4m3x2 %r10, %h1;\n\tmov.b32 {%h2, %h3}, %r10;\n\tcvt.f32.f16 %f1, %h2;\n\tcvt.f32.f16 %f2, %h3;\n\tcvt.rn.satfinite.e4m3x2.f32 %h4, %f2, %f1;\n\tcvt.u32.u16 %r11, %h4;\n",
        &pairs,
        |x| {
            let (lo, hi) = (x[0] & 0xFF, x[0] >> 8);
            let h = |b: u32| {
                if b & 0x7F == 0x7F {
                    0x7FFF
                } else {
                    u32::from(f16::from_f32(e4m3(b)).to_bits())
                }
            };
            let back = |b: u32| if b & 0x7F == 0x7F { 0x7F } else { b };
            [h(lo) | (h(hi) << 16), back(lo) | (back(hi) << 8)]
        },
    );
    let vals: Vec<[u32; 8]> = [448.0f32, 1000.0, -1e9, 0.001953125, 0.0009765625, 3.0, 17.0, f32::NAN]
        .iter()
        .map(|v| [v.to_bits(), 0, 0, 0, 0, 0, 0, 0])
        .collect();
    check(
        "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, 0f00000000;\n\tcvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;\n\tcvt.u32.u16 %r10, %h1;\n\tcvt.rn.satfinite.e2m1x2.f32 %b1, %f1, %f2;\n\tcvt.u32.u8 %r11, %b1;\n",
        &vals,
        |x| {
            let v = f(x[0]);
            let e4 = match v {
                v if v.is_nan() => 0x7F,
                448.0 | 1000.0 => 0x7E,
                -1e9 => 0xFE,
                0.001953125 => 0x01,
                0.0009765625 => 0x00, // half the smallest subnormal: ties to even (0)
                3.0 => 0x44,
                _ => 0x58, // 17 -> 16 (the even neighbour of 16/18)
            };
            let e2 = match v {
                v if v.is_nan() => 0x7,
                448.0 | 1000.0 | 17.0 => 0x7,
                -1e9 => 0xF,
                3.0 => 0x5,
                _ => 0x0,
            };
            [e4 << 8, e2 << 4]
        },
    );
    // All 256 e2m1 pairs decode exactly (high nibble to the high half).
    let pairs: Vec<[u32; 8]> = (0..256u32).map(|k| [k, 0, 0, 0, 0, 0, 0, 0]).collect();
    let e2m1 = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    check(
        "\tcvt.u8.u32 %b1, %r1;\n\tcvt.rn.f16x2.e2m1x2 %r10, %b1;\n\tmov.u32 %r11, 0;\n",
        &pairs,
        |x| {
            let h = |n: u32| {
                let v = e2m1[(n & 7) as usize];
                u32::from(f16::from_f32(if n & 8 != 0 { -v } else { v }).to_bits())
            };
            [h(x[0] & 15) | (h(x[0] >> 4) << 16), 0]
        },
    );
}

// ----- predicates and control flow -----

#[test]
fn setp_every_comparison() {
    let ins = inputs(256, 16, F32_SPECIALS);
    let iops = ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"];
    let mut body = String::from("\tmov.u32 %r10, 0;\n\tmov.u32 %r11, 0;\n");
    for (k, op) in iops.iter().enumerate() {
        let ty = if k < 6 { "s32" } else { "u32" };
        body += &format!(
            "\tsetp.{op}.{ty} %p1, %r1, %r2;\n\tselp.u32 %r12, {}, 0, %p1;\n\tor.b32 %r10, %r10, %r12;\n",
            1 << k
        );
    }
    let fops = [
        "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
    ];
    body += "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n";
    for (k, op) in fops.iter().enumerate() {
        body += &format!(
            "\tsetp.{op}.f32 %p1, %f1, %f2;\n\tselp.u32 %r12, {}, 0, %p1;\n\tor.b32 %r11, %r11, %r12;\n",
            1 << k
        );
    }
    check(&body, &ins, |x| {
        let (a, b) = (sx(x[0]), sx(x[1]));
        let (ua, ub) = (x[0], x[1]);
        let ints = [
            a == b,
            a != b,
            a < b,
            a <= b,
            a > b,
            a >= b,
            ua < ub,
            ua <= ub,
            ua > ub,
            ua >= ub,
        ];
        let (p, q) = (f(x[0]), f(x[1]));
        let u = p.is_nan() || q.is_nan();
        let floats = [
            p == q,
            !u && p != q,
            p < q,
            p <= q,
            p > q,
            p >= q,
            u || p == q,
            u || p != q,
            u || p < q,
            u || p <= q,
            u || p > q,
            u || p >= q,
            !u,
            u,
        ];
        let bits = |v: &[bool]| v.iter().enumerate().fold(0u32, |m, (k, t)| m | (u32::from(*t) << k));
        [bits(&ints), bits(&floats)]
    });
    // Combining forms, p|q, predicate logic, f16 comparisons.
    check(
        "\tsetp.ne.u32 %p3, %r3, 0;\n\tsetp.lt.and.u32 %p1|%p2, %r1, %r2, %p3;\n\tsetp.ge.xor.s32 %p4, %r1, %r2, !%p3;\n\tand.pred %p5, %p1, %p4;\n\tor.pred %p6, %p2, %p5;\n\tnot.pred %p7, %p6;\n\tselp.u32 %r10, 1, 0, %p1;\n\tselp.u32 %r12, 2, 0, %p2;\n\tselp.u32 %r13, 4, 0, %p4;\n\tselp.u32 %r14, 8, 0, %p7;\n\tor.b32 %r10, %r10, %r12;\n\tor.b32 %r10, %r10, %r13;\n\tor.b32 %r10, %r10, %r14;\n\tmov.b32 {%h1, %h2}, %r4;\n\tsetp.gt.f16 %p8, %h1, %h2;\n\tsetp.leu.f16x2 %p9|%p10, %r4, %r5;\n\tselp.u32 %r12, 1, 0, %p8;\n\tselp.u32 %r13, 2, 0, %p9;\n\tselp.u32 %r14, 4, 0, %p10;\n\tor.b32 %r11, %r12, %r13;\n\tor.b32 %r11, %r11, %r14;\n",
        &inputs(256, 17, H_SPECIALS),
        |x| {
            let c = x[2] != 0;
            let lt = x[0] < x[1];
            let p1 = lt && c;
            let p2 = !lt && c;
            let p4 = (sx(x[0]) >= sx(x[1])) ^ !c;
            let p7 = !(p2 || (p1 && p4));
            let leu = |a: u32, b: u32| hv(a).is_nan() || hv(b).is_nan() || hv(a) <= hv(b);
            [
                u32::from(p1) | (u32::from(p2) << 1) | (u32::from(p4) << 2) | (u32::from(p7) << 3),
                u32::from(hv(x[3] & 0xFFFF) > hv(x[3] >> 16))
                    | (u32::from(leu(x[3] & 0xFFFF, x[4] & 0xFFFF)) << 1)
                    | (u32::from(leu(x[3] >> 16, x[4] >> 16)) << 2),
            ]
        },
    );
}

#[test]
fn divergent_branches_reconverge() {
    // Per-lane trip counts, a nested data-dependent branch, a guarded
    // instruction, then a full-warp shuffle that needs every lane back.
    let body = "
\tand.b32 %r12, %r1, 15;
\tmov.u32 %r10, 0;
\tmov.u32 %r13, 0;
$L_loop:
\tsetp.ge.u32 %p1, %r13, %r12;
\t@%p1 bra $L_done;
\tand.b32 %r14, %r13, 1;
\tsetp.eq.u32 %p2, %r14, 0;
\t@%p2 bra $L_even;
\tmul.lo.u32 %r15, %r13, 3;
\tadd.u32 %r10, %r10, %r15;
\tbra $L_next;
$L_even:
\tadd.u32 %r10, %r10, %r13;
$L_next:
\tadd.u32 %r13, %r13, 1;
\tbra.uni $L_loop;
$L_done:
\tsetp.gt.u32 %p3, %r2, 0x80000000;
\t@%p3 xor.b32 %r10, %r10, 0x100;
\tmov.u32 %r16, %laneid;
\txor.b32 %r17, %r16, 1;
\tshfl.sync.idx.b32 %r11, %r10, %r17, 0x1f, -1;
";
    let ins = inputs(96, 18, &[]);
    let own = |x: &[u32; 8]| {
        let mut s = 0u32;
        for k in 0..(x[0] & 15) {
            s += if k % 2 == 1 { 3 * k } else { k };
        }
        if x[1] > 0x8000_0000 {
            s ^= 0x100;
        }
        s
    };
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[0], own(&ins[t]), "thread {t}");
        assert_eq!(g[1], own(&ins[t ^ 1]), "thread {t}");
    }
}

// ----- memory -----

#[test]
fn loads_and_stores_of_every_width() {
    let body = "
\tadd.s64 %rd1, %rd28, 1;
\tld.global.u8 %r12, [%rd1];
\tld.global.s8 %r13, [%rd1+1];
\tld.global.s16 %r14, [%rd28+2];
\tld.global.u16 %r15, [%rd28+2];
\tld.global.s8 %rd2, [%rd28+3];
\tld.global.v2.u32 {%r16, %r17}, [%rd28+8];
\tld.global.nc.L1::no_allocate.L2::256B.v2.u64 {%rd3, %rd4}, [%rd28+16];
\tadd.u32 %r10, %r12, %r13;
\txor.b32 %r10, %r10, %r14;
\tshl.b32 %r18, %r15, 7;
\txor.b32 %r10, %r10, %r18;
\tmov.b64 {%r19, %r20}, %rd2;
\txor.b32 %r10, %r10, %r20;
\txor.b32 %r10, %r10, %r17;
\tmov.b64 {_, %r21}, %rd4;
\txor.b32 %r11, %r16, %r21;
\tmov.b64 {%r22, _}, %rd3;
\txor.b32 %r11, %r11, %r22;
";
    let ins = inputs(64, 19, &[0x8080_8080, 0x7F7F_7F7F, 0xFFFF_0000]);
    check(body, &ins, |x| {
        let b = |k: usize| (x[k / 4] >> (8 * (k % 4))) as u8;
        let r12 = u32::from(b(1));
        let r13 = i32::from(b(2) as i8) as u32;
        let r14 = i32::from((x[0] >> 16) as i16) as u32;
        let r15 = x[0] >> 16;
        let r20 = if (b(3) as i8) < 0 { u32::MAX } else { 0 };
        [
            r12.wrapping_add(r13) ^ r14 ^ (r15 << 7) ^ r20 ^ x[3],
            x[2] ^ x[7] ^ x[4],
        ]
    });
    // st.u8/st.u16 store the low bits of wider registers.
    let body = "
\tmul.wide.u32 %rd1, %r30, 8;
\tadd.s64 %rd2, %rd31, %rd1;
\tst.global.v2.u32 [%rd2], {%r1, %r2};
\tst.global.u8 [%rd2+1], %r3;
\tst.global.u16 [%rd2+6], %r3;
\tld.global.v2.u32 {%r10, %r11}, [%rd2];
";
    check(body, &ins, |x| {
        [
            (x[0] & 0xFFFF_00FF) | ((x[2] & 0xFF) << 8),
            (x[1] & 0xFFFF) | (x[2] << 16),
        ]
    });
}

#[test]
fn shared_memory_symbols_vectors_and_generic_addresses() {
    let body = "
\tmov.u32 %r12, sm;
\tshl.b32 %r13, %r30, 3;
\tadd.u32 %r14, %r12, %r13;
\tst.shared.v2.u32 [%r14], {%r1, %r2};
\tbar.sync 0;
\txor.b32 %r15, %r30, 1;
\tshl.b32 %r16, %r15, 3;
\tadd.u32 %r17, %r12, %r16;
\tld.shared.v2.u32 {%r10, %r18}, [%r17];
\tld.shared.u32 %r19, [sm+4];
\tcvta.shared.u64 %rd1, %r17;
\tld.u32 %r20, [%rd1+4];
\tcvta.to.shared.u64 %rd2, %rd1;
\tcvt.u32.u64 %r21, %rd2;
\tsub.u32 %r22, %r21, %r17;
\tadd.u32 %r11, %r20, %r22;
\txor.b32 %r11, %r11, %r19;
\tst.u16 [%rd1], %r1;
";
    let ins = inputs(64, 20, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let p = &ins[t ^ 1];
        assert_eq!(*g, [p[0], p[1] ^ ins[0][1]], "thread {t}");
    }
}

#[test]
fn param_space_of_every_size() {
    let src = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry p(
\t.param .u64 p_out,
\t.param .u8 p_b,
\t.param .u16 p_h,
\t.param .f32 p_f,
\t.param .f64 p_d,
\t.param .align 16 .b8 p_v[16]
)
{
\t.reg .b16 %h<2>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [p_out];
\tld.param.u8 %r1, [p_b];
\tld.param.s16 %r2, [p_h];
\tld.param.f32 %r3, [p_f];
\tld.param.u64 %rd2, [p_d];
\tld.param.v4.u32 {%r4, %r5, %r6, %r7}, [p_v];
\tld.param.u32 %r8, [p_v+8];
\tmov.b64 {%r9, %r10}, %rd2;
\tst.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r10};
\tst.global.v4.u32 [%rd1+16], {%r4, %r5, %r7, %r8};
\tret;
}
";
    let m = Module::parse(src).unwrap();
    let mut mem = Memory::new();
    let out = mem.alloc(32, true);
    let mut v = [0u8; 16];
    for (k, b) in v.iter_mut().enumerate() {
        *b = k as u8 * 3;
    }
    m.launch(
        "p",
        &Launch::new((1, 1, 1), (1, 1, 1), 0),
        &[
            ParamValue::U64(out),
            ParamValue::U8(200),
            ParamValue::U16(0x8001),
            ParamValue::F32(1.5),
            ParamValue::F64(-2.0),
            ParamValue::B128(v),
        ],
        &mut mem,
    )
    .unwrap();
    let got: Vec<u32> = mem
        .read(out, 32)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let word = |k: usize| u32::from_le_bytes(v[4 * k..4 * k + 4].try_into().unwrap());
    assert_eq!(
        got,
        vec![
            200,
            0xFFFF_8001,
            1.5f32.to_bits(),
            ((-2.0f64).to_bits() >> 32) as u32,
            word(0),
            word(1),
            word(3),
            word(2)
        ]
    );
}

#[test]
fn atomics() {
    let body = "
\tmov.u32 %r12, 1;
\tatom.global.add.u32 %r10, [%rd31], %r12;
\tmax.u32 %r13, %r1, 0;
\tatom.shared.max.s32 %r14, [sm], %r1;
\tbar.sync 0;
\tld.shared.s32 %r11, [sm];
\tatom.shared.cas.b32 %r15, [sm+4], 0, %r30;
\tred.shared.add.f32 [sm+8], 0f3F800000;
";
    let ins = inputs(64, 21, &[]);
    let got = run(body, &ins);
    // Thread 0 wrote its own results over the counters last: check the
    // max and that the adds returned distinct old values.
    let max = ins.iter().map(|x| x[0] as i32).max().unwrap().max(0);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[1], max as u32, "thread {t}");
    }
    let mut olds: Vec<u32> = got[1..].iter().map(|g| g[0]).collect();
    olds.sort_unstable();
    assert_eq!(olds.len(), 63);
    assert!(olds.windows(2).all(|w| w[0] < w[1]));
}

// ----- warp-level -----

/// PTX's shfl.sync source-lane computation.
fn shfl_src(mode: &str, lane: u32, b: u32, c: u32) -> (u32, bool) {
    let (bval, cval, seg) = (i64::from(b & 31), i64::from(c & 31), i64::from((c >> 8) & 31));
    let l = i64::from(lane);
    let max = (l & seg) | (cval & !seg);
    let min = l & seg;
    let (j, ok) = match mode {
        "up" => (l - bval, l - bval >= max),
        "down" => (l + bval, l + bval <= max),
        "bfly" => (l ^ bval, (l ^ bval) <= max),
        _ => {
            let j = min | (bval & !seg);
            (j, j <= max)
        }
    };
    (if ok { j as u32 } else { lane }, ok)
}

#[test]
fn shuffles_in_every_mode() {
    let ins = inputs(64, 22, &[]);
    for mode in ["up", "down", "bfly", "idx"] {
        for c in [0x1f_u32, 0x0, 0x181f, 0x1c1f, 0x1800] {
            let body = format!(
                "\tand.b32 %r12, %r2, 31;\n\tshfl.sync.{mode}.b32 %r10|%p1, %r1, %r12, {c}, 0xffffffff;\n\tselp.u32 %r11, 1, 0, %p1;\n"
            );
            let got = run(&body, &ins);
            for (t, g) in got.iter().enumerate() {
                let (lane, base) = (t as u32 % 32, t - t % 32);
                let (j, ok) = shfl_src(mode, lane, ins[t][1] & 31, c);
                assert_eq!(
                    *g,
                    [ins[base + j as usize][0], u32::from(ok)],
                    "{mode} c={c:#x} thread {t}"
                );
            }
        }
    }
    // Immediate lane operands, as warp_reduce_sum writes them.
    let body = "\tshfl.sync.down.b32 %r10, %r1, 3, 0x1f, -1;\n\tshfl.sync.up.b32 %r11, %r1, 5, 0, -1;\n";
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let (lane, base) = (t % 32, t - t % 32);
        let down = if lane + 3 < 32 {
            ins[base + lane + 3][0]
        } else {
            ins[t][0]
        };
        let up = if lane >= 5 { ins[t - 5][0] } else { ins[t][0] };
        assert_eq!(*g, [down, up], "thread {t}");
    }
}

#[test]
fn shuffle_from_an_absent_lane_is_an_error() {
    // 40 threads: the second warp has 8 lanes; bfly 16 reads lanes 16..23
    // of a warp whose lanes 8..31 do not exist.
    let e = try_run(
        "\tmov.u32 %r11, 0;\n\tshfl.sync.bfly.b32 %r10, %r1, 16, 0x1f, -1;\n",
        &inputs(40, 23, &[]),
    )
    .unwrap_err();
    assert!(e.message().contains("reads lane"), "{e}");
    assert_eq!(e.thread(), Some((32, 0, 0)));
    // A partial mask that matches the executing lanes is fine.
    let body = "\tmov.u32 %r11, 0;\n\tsetp.lt.u32 %p1, %r30, 16;\n\t@!%p1 bra $L_x;\n\tshfl.sync.bfly.b32 %r11, %r1, 1, 0x1f, 0xffff;\n$L_x:\n\tmov.u32 %r10, 0;\n";
    let ins = inputs(32, 24, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[1], if t < 16 { ins[t ^ 1][0] } else { 0 });
    }
}

#[test]
fn elect_vote_activemask_redux() {
    let body = "
\tmov.u32 %r10, 0;
\tmov.u32 %r11, 0;
\tand.b32 %r12, %r30, 1;
\tsetp.eq.u32 %p1, %r12, 1;
\t@!%p1 bra $L_even;
\telect.sync %r13|%p2, 0xaaaaaaaa;
\tselp.u32 %r14, 0x100, 0, %p2;
\tactivemask.b32 %r15;
\tadd.u32 %r10, %r13, %r14;
\txor.b32 %r10, %r10, %r15;
$L_even:
\tsetp.gt.u32 %p3, %r1, 0x80000000;
\tvote.sync.ballot.b32 %r16, %p3, -1;
\tvote.sync.any.pred %p4, %p3, -1;
\tvote.sync.all.pred %p5, !%p3, -1;
\tselp.u32 %r17, 1, 0, %p4;
\tselp.u32 %r18, 2, 0, %p5;
\tredux.sync.add.u32 %r19, %r30, -1;
\tredux.sync.max.s32 %r20, %r1, -1;
\txor.b32 %r11, %r16, %r17;
\txor.b32 %r11, %r11, %r18;
\txor.b32 %r11, %r11, %r19;
\txor.b32 %r11, %r11, %r20;
";
    let ins = inputs(64, 25, &[0xFFFF_FFFF, 0x8000_0001]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let base = t - t % 32;
        let warp = &ins[base..base + 32];
        let ballot = warp
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, x)| m | (u32::from(x[0] > 0x8000_0000) << l));
        let any = u32::from(ballot != 0);
        let all_not = if ballot == 0 { 2 } else { 0 };
        let sum = (base as u32..base as u32 + 32).sum::<u32>();
        let max = warp.iter().map(|x| x[0] as i32).max().unwrap() as u32;
        let r10 = if t % 2 == 1 {
            let leader = 1u32;
            (leader + if t % 32 == 1 { 0x100 } else { 0 }) ^ 0xAAAA_AAAA
        } else {
            0
        };
        assert_eq!(*g, [r10, ballot ^ any ^ all_not ^ sum ^ max], "thread {t}");
    }
}

// ----- barriers -----

#[test]
fn bar_sync_orders_warps() {
    // Each thread publishes, the barrier waits for all 4 warps, then each
    // reads a neighbour from another warp.
    let body = "
\tshl.b32 %r12, %r30, 2;
\tmov.u32 %r13, sm;
\tadd.u32 %r14, %r13, %r12;
\tst.shared.u32 [%r14], %r1;
\tbar.sync 0;
\tadd.u32 %r15, %r30, 37;
\trem.u32 %r15, %r15, 128;
\tshl.b32 %r16, %r15, 2;
\tadd.u32 %r17, %r13, %r16;
\tld.shared.u32 %r10, [%r17];
\tbarrier.sync.aligned 0;
\tst.shared.u32 [%r14], %r2;
\tbarrier.sync 0;
\tld.shared.u32 %r11, [%r17];
";
    let ins = inputs(128, 26, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let n = (t + 37) % 128;
        assert_eq!(*g, [ins[n][0], ins[n][1]], "thread {t}");
    }
}

#[test]
fn named_barriers_with_counts_and_arrive() {
    // Warp 0 produces into shared memory and arrives on barrier 1; warp 1
    // waits there (64 threads), then reads. Warps 2 and 3 never touch it.
    let body = "
\tmov.u32 %r10, 0;
\tmov.u32 %r11, 0;
\tshr.u32 %r12, %r30, 5;
\tsetp.eq.u32 %p1, %r12, 0;
\tsetp.eq.u32 %p2, %r12, 1;
\tmov.u32 %r13, sm;
\tshl.b32 %r14, %r30, 2;
\tadd.u32 %r15, %r13, %r14;
\t@!%p1 bra $L_consumer;
\tst.shared.u32 [%r15], %r1;
\tbar.arrive 1, 64;
\tbra $L_end;
$L_consumer:
\t@!%p2 bra $L_end;
\tbar.sync 1, 64;
\tsub.u32 %r16, %r15, 128;
\tld.shared.u32 %r10, [%r16];
$L_end:
";
    let ins = inputs(128, 27, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let want = if (32..64).contains(&t) { ins[t - 32][0] } else { 0 };
        assert_eq!(g[0], want, "thread {t}");
    }
    // A count that disagrees with the barrier's current round (when warp
    // 0 arrives first, as in the sequential schedule; warps 1 to 3 first
    // would complete a round of 96 on their own).
    let body = "\tmov.u32 %r10, 0;\n\tmov.u32 %r11, 0;\n\tshr.u32 %r12, %r30, 5;\n\tsetp.eq.u32 %p1, %r12, 0;\n\t@%p1 bar.arrive 2, 64;\n\t@!%p1 bar.sync 2, 96;\n";
    let e = try_run_with(body, &inputs(128, 28, &[]), &Options::sequential()).unwrap_err();
    assert!(e.message().contains("barrier 2"), "{e}");
}

/// Each thread stores its input to shared memory, the two halves of the
/// warp reconverge at `bar.warp.sync` on either side of a branch, and each
/// thread reads the value of the thread 16 away into `%r10`.
const SWAP_AFTER_WARP_SYNC: &str = "
\tmov.u32 %r13, sm;
\tshl.b32 %r14, %r30, 2;
\tadd.u32 %r15, %r13, %r14;
\tst.shared.u32 [%r15], %r1;
\tmov.u32 %r16, %laneid;
\tsetp.lt.u32 %p1, %r16, 16;
\t@%p1 bra $L_low;
\tbar.warp.sync -1;
\tbra $L_join;
$L_low:
\tbar.warp.sync -1;
$L_join:
\txor.b32 %r17, %r14, 64;
\tadd.u32 %r18, %r13, %r17;
\tld.shared.u32 %r10, [%r18];
";

#[test]
fn bar_warp_sync_in_divergent_code() {
    let body = format!("{SWAP_AFTER_WARP_SYNC}\tmov.u32 %r11, 0;\n");
    let ins = inputs(64, 29, &[]);
    let got = run(&body, &ins);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[0], ins[t ^ 16][0], "thread {t}");
    }
}

#[test]
fn stats_count_threads_and_instructions() {
    let (_, stats) = try_run("\tmov.u32 %r10, 1;\n\tmov.u32 %r11, 2;\n", &inputs(40, 30, &[])).unwrap();
    // Header (7) + body (2) + footer (4) instructions, 40 threads, 2 warps.
    assert_eq!(stats.thread_instructions, 13 * 40);
    assert_eq!(stats.warp_instructions, 13 * 2);
    assert_eq!((stats.blocks, stats.threads), (1, 40));
}

#[test]
fn warp_collectives_under_independent_thread_scheduling() {
    let its = |seed| Options::adversarial(seed).with_independent_threads();
    // Each half of the warp shuffles at its own instruction: the hardware
    // may pair them, the emulator runs a collective at one instruction.
    let body = "
\tmov.u32 %r11, 0;
\tmov.u32 %r16, %laneid;
\tsetp.lt.u32 %p1, %r16, 16;
\t@%p1 bra $L_low;
\tshfl.sync.bfly.b32 %r10, %r1, 16, 0x1f, -1;
\tbra $L_join;
$L_low:
\tshfl.sync.bfly.b32 %r10, %r1, 16, 0x1f, -1;
$L_join:
";
    for seed in 0..4 {
        let e = try_run_with(body, &inputs(32, 31, &[]), &its(seed)).unwrap_err();
        assert!(e.message().contains("waits at another warp collective"), "{e}");
    }
    // Lane 5 branches past the vote and exits: the vote waits only for
    // lanes that have not exited, whichever side runs first.
    let body = "
\tmov.u32 %r10, 0;
\tmov.u32 %r11, 0;
\tmov.u32 %r16, %laneid;
\tsetp.eq.u32 %p1, %r16, 5;
\tsetp.ne.u32 %p2, %r16, 9;
\t@%p1 bra $L_skip;
\tvote.sync.ballot.b32 %r10, %p2, -1;
$L_skip:
";
    for seed in 0..8 {
        let (got, _) = try_run_with(body, &inputs(32, 32, &[]), &its(seed)).unwrap();
        for (t, g) in got.iter().enumerate() {
            let want = if t == 5 { 0 } else { !(1u32 << 5 | 1 << 9) };
            assert_eq!(g[0], want, "seed {seed}, thread {t}");
        }
    }
    // Reconverged by bar.warp.sync on both sides: the same results.
    let body = format!("{SWAP_AFTER_WARP_SYNC}\tvote.sync.ballot.b32 %r11, %p1, -1;\n");
    let ins = inputs(64, 33, &[]);
    for seed in 0..4 {
        let (got, _) = try_run_with(&body, &ins, &its(seed)).unwrap();
        for (t, g) in got.iter().enumerate() {
            assert_eq!(*g, [ins[t ^ 16][0], 0xffff], "thread {t}");
        }
    }
}
