//! The common case of `fp`'s conversions, on 64-bit integers: rounding to
//! nearest (ties to even) into an IEEE format without `.satfinite`, and
//! widening a narrow format to f64 (exact). The same results as
//! `fp::round` and `fp::convert` (tests below compare them), at a fraction
//! of the cost of their 128-bit arithmetic: half-precision arithmetic and
//! `cvt` to and from f16/bf16 spend most of their time here.

use super::fp::{F64, Fmt, Val, unpack};

/// `(-1)^s * m * 2^e` (`m != 0`, below 2^63) rounded to nearest, ties to
/// even, to the IEEE format `f`: `fp::round(s, m, e, Rnd::Rn, f, false)`.
#[inline]
pub(crate) fn round_rn(s: bool, m: u64, e: i32, f: Fmt) -> u64 {
    let p = f.man as i32 + 1;
    let bias = (1 << (f.exp - 1)) - 1;
    let emin = 1 - bias;
    let sign = u64::from(s) << (f.exp + f.man);
    let inf = sign | (((1 << f.exp) - 1) << f.man);
    let msb = 63 - m.leading_zeros() as i32;
    let top = e + msb;
    if top > bias {
        return inf;
    }
    let mut q = top.max(emin) - (p - 1);
    let shift = q - e;
    let mut k = if shift <= 0 {
        m << -shift
    } else if shift >= 64 {
        // Below half a unit (m < 2^63 <= the half point).
        0
    } else {
        let k = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        k + u64::from(rem > half || (rem == half && k & 1 == 1))
    };
    if k == 1 << p {
        k >>= 1;
        q += 1;
    }
    if k < 1 << (p - 1) {
        return sign | k;
    }
    let be = q + (p - 1) + bias;
    if be >= (1 << f.exp) - 1 {
        return inf;
    }
    sign | ((be as u64) << f.man) | (k & ((1 << f.man) - 1))
}

/// The value of a format narrower than f32 as f64, exactly:
/// `fp::convert(bits, f, F64, Rnd::Rn, false)` (a NaN gives the canonical
/// f64 NaN).
#[inline]
pub(crate) fn narrow_to_f64(bits: u64, f: Fmt) -> f64 {
    match unpack(bits, f) {
        // `m * 2^e` is exact: m has at most 24 bits and 2^e is a normal f64
        // for every format up to f32.
        Val::Fin { s, m, e } => {
            let v = m as f64 * f64::from_bits(((e + 1023) as u64) << 52);
            if s { -v } else { v }
        }
        Val::Zero(s) => {
            if s {
                -0.0
            } else {
                0.0
            }
        }
        Val::Inf(s) => {
            if s {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Val::Nan => f64::from_bits(F64.nan()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::fp::{self, BF16, E2M1, E2M3, E3M2, E4M3, E5M2, F16, F32, Rnd};

    /// A xorshift stream.
    fn stream(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn widening_matches_convert_on_every_encoding() {
        for f in [F16, BF16, E4M3, E5M2, E2M1, E2M3, E3M2] {
            for bits in 0..1u64 << (1 + f.exp + f.man) {
                let want = fp::convert(bits, f, F64, Rnd::Rn, false);
                assert_eq!(narrow_to_f64(bits, f).to_bits(), want, "{f:?} {bits:#x}");
            }
        }
    }

    #[test]
    fn rounding_matches_round() {
        let mut next = stream(0x9E37_79B9_7F4A_7C15);
        for f in [F16, BF16, F32, E5M2] {
            // Every exponent around the format's range, mantissas of every
            // width, and the halfway cases (low bits 100..0, 011..1).
            for e in -200..60 {
                for width in 1..=62 {
                    let r = next();
                    let m = (r >> (64 - width)) | 1 << (width - 1);
                    let half = (m >> 8) << 8 | 0x80;
                    let below = half - 1;
                    for m in [m, half, below, 1 << (width - 1)] {
                        let s = r & 1 == 1;
                        let want = fp::round(s, u128::from(m), e, Rnd::Rn, f, false);
                        assert_eq!(round_rn(s, m, e, f), want, "{f:?} {s} {m:#x} {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn f32_to_half_matches_convert() {
        let mut next = stream(7);
        for hi in 0..1u64 << 16 {
            for lo in [
                0,
                1,
                0x0FFF,
                0x1000,
                0x1001,
                0x1FFF,
                0x2000,
                0x8000,
                0xFFFF,
                next() & 0xFFFF,
            ] {
                let bits = hi << 16 | lo;
                for f in [F16, BF16] {
                    let want = fp::convert(bits, F32, f, Rnd::Rn, false);
                    let got = match unpack(bits, F32) {
                        Val::Fin { s, m, e } => round_rn(s, m, e, f),
                        _ => want,
                    };
                    assert_eq!(got, want, "{f:?} {bits:#x}");
                }
            }
        }
    }
}
