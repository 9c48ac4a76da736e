//! Conversions between integers, floats, fp8 and fp4.

use super::*;

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

#[test]
fn cvt_packed_formats_need_registers_of_their_width() {
    // As ptxas: `.e2m1x2` in a `.b8` register, the 8-bit pairs in a
    // `.b16` one, what they unpack to in a `.b32` or `.f16x2` one.
    let pack = "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n";
    for (body, says) in [
        (
            "cvt.rn.satfinite.e2m1x2.f32 %r10, %f1, %f2;",
            "`cvt.rn.satfinite.e2m1x2.f32`: its destination must be a `.b8` register, and `%r10` is `.b32`",
        ),
        (
            ".reg .u8 %u; cvt.rn.satfinite.e2m1x2.f32 %u, %f1, %f2;",
            "its destination must be a `.b8` register, and `%u` is `.u8`",
        ),
        (
            "cvt.rn.satfinite.e4m3x2.f32 %r10, %f1, %f2;",
            "its destination must be a `.b16` register, and `%r10` is `.b32`",
        ),
        (
            "cvt.rn.satfinite.e5m2x2.f32 %b1, %f1, %f2;",
            "its destination must be a `.b16` register, and `%b1` is `.b8`",
        ),
        (
            "cvt.rn.satfinite.e4m3x2.f16x2 %r10, %r1;",
            "its destination must be a `.b16` register, and `%r10` is `.b32`",
        ),
        (
            "cvt.rn.f16x2.e2m1x2 %r10, %r1;",
            "`cvt.rn.f16x2.e2m1x2`: its source must be a `.b8` register, and `%r1` is `.b32`",
        ),
        (
            "cvt.rn.f16x2.e4m3x2 %r10, %b1;",
            "its source must be a `.b16` register, and `%b1` is `.b8`",
        ),
        (
            "cvt.rn.f16x2.e2m1x2 %r10, 3;",
            "its source must be a `.b8` register, and this is not a register",
        ),
        (
            "cvt.rn.f16x2.e2m1x2 %f3, %b1;",
            "its destination must be a `.b32` or `.f16x2` register, and `%f3` is `.f32`",
        ),
    ] {
        let e = try_run(&format!("{pack}\t{body}\n"), &[[0; 8]]).unwrap_err();
        assert!(e.message().contains(says), "{body}: {e}");
        assert!(
            e.message().contains("Arguments mismatch for instruction 'cvt'"),
            "{body}: {e}"
        );
        assert_eq!(e.instruction(), Some(body), "{e}");
    }
    // The widths ptxas asks for, and an `.f16x2` result.
    run(
        &format!(
            "{pack}\t.reg .f16x2 %x;\n\tcvt.rn.satfinite.e2m1x2.f32 %b1, %f1, %f2;\n\tcvt.rn.f16x2.e2m1x2 %x, %b1;\n\tcvt.rn.satfinite.e4m3x2.f16x2 %h1, %x;\n\tcvt.rn.f16x2.e4m3x2 %r10, %h1;\n\tmov.u32 %r11, 0;\n"
        ),
        &[[0; 8]],
    );
}
