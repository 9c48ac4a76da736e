//! The soft-float routines against the host's arithmetic and the `half` crate.

use super::*;

fn f16_of(x: f32) -> u64 {
    convert(u64::from(x.to_bits()), F32, F16, Rnd::Rn, false)
}

#[test]
fn f32_to_f16_matches_half_for_all_f16_neighbourhoods() {
    // Every f16 value, the midpoints between neighbours and nudges
    // around them: half's f32 -> f16 conversion is correctly rounded.
    for h in 0u16..=0xFFFF {
        let x = half::f16::from_bits(h).to_f32();
        if x.is_nan() {
            assert_eq!(f16_of(x), 0x7FFF);
            continue;
        }
        for d in [-2i32, -1, 0, 1, 2] {
            let y = f32::from_bits((x.to_bits() as i32).wrapping_add(d) as u32);
            if y.is_nan() {
                continue;
            }
            assert_eq!(
                f16_of(y),
                u64::from(half::f16::from_f32(y).to_bits()),
                "{y:e} ({h:#x}{d:+})"
            );
        }
    }
}

#[test]
fn f32_to_bf16_rounds_to_nearest_even() {
    for bits in [
        0x3F80_8000u32,
        0x3F81_8000,
        0x3F80_8001,
        0x0000_0001,
        0x7F7F_FFFF,
        0x8080_8000,
    ] {
        let x = f32::from_bits(bits);
        let want = half::bf16::from_f32(x).to_bits();
        assert_eq!(
            convert(u64::from(bits), F32, BF16, Rnd::Rn, false),
            u64::from(want),
            "{bits:#x}"
        );
    }
}

#[test]
fn directed_rounding_and_overflow() {
    let one_third = 1.0f64 / 3.0;
    let down = from_f64(one_third, F32, Rnd::Rz);
    let up = from_f64(one_third, F32, Rnd::Rp);
    assert_eq!(up, down + 1);
    assert_eq!(from_f64(1e300, F32, Rnd::Rn), 0x7F80_0000);
    assert_eq!(from_f64(1e300, F32, Rnd::Rz), 0x7F7F_FFFF);
    assert_eq!(from_f64(-1e300, F32, Rnd::Rp), 0xFF7F_FFFF);
    assert_eq!(from_f64(-1e300, F32, Rnd::Rm), 0xFF80_0000);
    assert_eq!(from_f64(70000.0, F16, Rnd::Rn), 0x7C00);
    assert_eq!(convert(u64::from(70000f32.to_bits()), F32, F16, Rnd::Rn, true), 0x7BFF);
    // Smallest subnormals.
    assert_eq!(from_f64(2f64.powi(-149), F32, Rnd::Rn), 1);
    assert_eq!(from_f64(2f64.powi(-150), F32, Rnd::Rn), 0);
    assert_eq!(from_f64(2f64.powi(-150) * 1.5, F32, Rnd::Rn), 1);
    assert_eq!(from_f64(2f64.powi(-160), F32, Rnd::Rp), 1);
    assert_eq!(from_f64(-(2f64.powi(-160)), F32, Rnd::Rm), 0x8000_0001);
    assert_eq!(from_f64(-(2f64.powi(-160)), F32, Rnd::Rz), 0x8000_0000);
}

#[test]
fn exact_ops_agree_with_native_round_to_nearest() {
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20000 {
        let (a, b, c) = (next(), next(), next());
        // Random bit patterns (all classes) and nearby exponents.
        let (a32, b32, c32) = (a as u32, b as u32, c as u32);
        let (fa, fb, fc) = (f32::from_bits(a32), f32::from_bits(b32), f32::from_bits(c32));
        let n = |v: f32| u64::from(canon32(v.to_bits()));
        let (a, b, c) = (u64::from(a32), u64::from(b32), u64::from(c32));
        assert_eq!(add(a, b, F32, Rnd::Rn), n(fa + fb), "{fa:e} + {fb:e}");
        assert_eq!(mul(a, b, F32, Rnd::Rn), n(fa * fb), "{fa:e} * {fb:e}");
        assert_eq!(div(a, b, F32, Rnd::Rn), n(fa / fb), "{fa:e} / {fb:e}");
        assert_eq!(
            fma(a, b, c, F32, Rnd::Rn),
            n(fa.mul_add(fb, fc)),
            "fma {fa:e} {fb:e} {fc:e}"
        );
        assert_eq!(sqrt(a, F32, Rnd::Rn), n(fa.sqrt()), "sqrt {fa:e}");
        let close = f32::from_bits((a32 & 0x807F_FFFF) | (b32 & 0x0F00_0000) | 0x3000_0000);
        let c2 = u64::from(close.to_bits());
        assert_eq!(
            add(a & 0xB0FF_FFFF, c2, F32, Rnd::Rn),
            n(f32::from_bits(a32 & 0xB0FF_FFFF) + close)
        );
        let (da, db) = (f64::from_bits(next()), f64::from_bits(next()));
        let n64 = |v: f64| canon64(v.to_bits());
        assert_eq!(add(da.to_bits(), db.to_bits(), F64, Rnd::Rn), n64(da + db));
        assert_eq!(mul(da.to_bits(), db.to_bits(), F64, Rnd::Rn), n64(da * db));
        assert_eq!(div(da.to_bits(), db.to_bits(), F64, Rnd::Rn), n64(da / db));
        assert_eq!(sqrt(da.to_bits(), F64, Rnd::Rn), n64(da.sqrt()));
    }
}

#[test]
fn half_fma_is_correctly_rounded_when_f64_is_not_exact() {
    // 2^15 * 2^15 + 2^-24: the f64 sum is exact here, but a product
    // with far-apart tiny addend needs the sticky bit.
    let a = f16_of(1.0 + 2f32.powi(-10)); // 1 + ulp
    let c = f16_of(-(2f32.powi(-24))); // smallest negative subnormal
    // (1+u)^2 = 1 + 2u + u^2; minus 2^-24 pulls it just below the tie
    // at 1 + 2u + u/2... checked against the exact path.
    let r = fma_half(a, a, c, F16);
    assert_eq!(r, fma(a, a, c, F16, Rnd::Rn));
    // Random sweep: the fast path agrees with the exact path.
    let mut s = 7u64;
    for _ in 0..50000 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let (a, b, c) = ((s >> 16) & 0xFFFF, (s >> 32) & 0xFFFF, (s >> 48) & 0xFFFF);
        assert_eq!(
            fma_half(a, b, c, F16),
            fma(a, b, c, F16, Rnd::Rn),
            "{a:#x} {b:#x} {c:#x}"
        );
        assert_eq!(fma_half(a, b, c, BF16), fma(a, b, c, BF16, Rnd::Rn));
        assert_eq!(add_half(a, b, F16), add(a, b, F16, Rnd::Rn));
        assert_eq!(add_half(a, b, BF16), add(a, b, BF16, Rnd::Rn));
        assert_eq!(mul_half(a, b, F16), mul(a, b, F16, Rnd::Rn));
    }
}

#[test]
fn float_to_int_saturates_and_maps_nan() {
    let f = |x: f32| u64::from(x.to_bits());
    assert_eq!(to_int(f(f32::NAN), F32, Rnd::Rz, 32, true), 0);
    assert_eq!(to_int(f(f32::NAN), F32, Rnd::Rz, 64, true), 1 << 63);
    assert_eq!(to_int(f64::NAN.to_bits(), F64, Rnd::Rz, 32, true), 0x8000_0000);
    assert_eq!(to_int(f(-1.5), F32, Rnd::Rz, 32, false), 0);
    assert_eq!(to_int(f(3e9), F32, Rnd::Rz, 32, true), 0x7FFF_FFFF);
    assert_eq!(to_int(f(-3e9), F32, Rnd::Rz, 32, true), 0x8000_0000);
    assert_eq!(to_int(f(2.5), F32, Rnd::Rn, 32, true), 2);
    assert_eq!(to_int(f(-2.5), F32, Rnd::Rn, 32, true), 0xFFFF_FFFE);
    assert_eq!(to_int(f(-2.5), F32, Rnd::Rm, 32, true), 0xFFFF_FFFD);
    assert_eq!(to_int(f(2.1), F32, Rnd::Rp, 32, true), 3);
    assert_eq!(to_int(f(f32::INFINITY), F32, Rnd::Rz, 16, false), 0xFFFF);
    assert_eq!(round_to_integral(f(-0.3), F32, Rnd::Rz), f(-0.0));
    assert_eq!(round_to_integral(f(2.5), F32, Rnd::Rn), f(2.0));
}

#[test]
fn small_formats() {
    let f = |x: f32| u64::from(x.to_bits());
    // e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6
    assert_eq!(convert(f(1.25), F32, E2M1, Rnd::Rn, true), 0b0010); // tie -> even (1.0)
    assert_eq!(convert(f(5.0), F32, E2M1, Rnd::Rn, true), 0b0110); // tie 4/6 -> 4
    assert_eq!(convert(f(100.0), F32, E2M1, Rnd::Rn, true), 0b0111);
    assert_eq!(convert(f(-0.25), F32, E2M1, Rnd::Rn, true), 0b1000); // tie 0/0.5 -> -0
    assert_eq!(convert(f(f32::NAN), F32, E2M1, Rnd::Rn, true), 0b0111);
    // e4m3: max 448, NaN 0x7F
    assert_eq!(convert(f(448.0), F32, E4M3, Rnd::Rn, true), 0x7E);
    assert_eq!(convert(f(1000.0), F32, E4M3, Rnd::Rn, true), 0x7E);
    assert_eq!(convert(f(-1000.0), F32, E4M3, Rnd::Rn, true), 0xFE);
    assert_eq!(convert(f(f32::NAN), F32, E4M3, Rnd::Rn, true), 0x7F);
    assert_eq!(convert(f(2f32.powi(-9)), F32, E4M3, Rnd::Rn, true), 0x01);
    assert_eq!(to_f64(0x01, E4M3), 2f64.powi(-9));
    assert_eq!(to_f64(0x7E, E4M3), 448.0);
    assert_eq!(to_f64(0b0111, E2M1), 6.0);
    assert_eq!(to_f64(0b1001, E2M1), -0.5);
    assert_eq!(convert(f(57344.0 * 2.0), F32, E5M2, Rnd::Rn, true), 0x7B);
    assert_eq!(convert(f(57344.0 * 2.0), F32, E5M2, Rnd::Rn, false), 0x7C);
    let _ = (E2M3, E3M2);
}
