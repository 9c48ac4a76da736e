//! f32, f64, f16, f16x2 and bf16 arithmetic, every rounding mode.

use super::*;

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
