//! Integer arithmetic, division, min/max, shifts, dp4a/dp2a and bit manipulation.

use super::*;

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
    } // Every look-up table, bit by bit; `prmt` with constant selectors
    // (decoded once per instruction), sign replication included.
    let sels = [0x3210u32, 0x1010, 0x3232, 0x2404, 0x9B8A, 0x7654, 0xF0E1, 0x0C48];
    for lut in 0..256u32 {
        let sel = sels[lut as usize % sels.len()];
        let body = format!("\tlop3.b32 %r10, %r1, %r2, %r3, {lut};\n\tprmt.b32 %r11, %r1, %r2, {sel};\n");
        check(&body, &ins, |x| {
            let bit = |v: u32, k: u32| v >> k & 1;
            let l = (0..32).fold(0, |r, k| {
                r | (lut >> (bit(x[0], k) << 2 | bit(x[1], k) << 1 | bit(x[2], k)) & 1) << k
            });
            let src = u64::from(x[0]) | (u64::from(x[1]) << 32);
            let p = (0..4).fold(0u32, |p, k| {
                let n = sel >> (4 * k) & 0xF;
                let byte = (src >> (8 * (n & 7)) & 0xFF) as u32;
                let byte = if n & 8 != 0 {
                    0u32.wrapping_sub(byte >> 7) & 0xFF
                } else {
                    byte
                };
                p | byte << (8 * k)
            });
            [l, p]
        });
    }
}
