//! f16 conversions and arithmetic by the host's floating point where it
//! gives `fp`'s results bit for bit (and NaNs its canonical NaN): the hot
//! cases of `cvt` and of f16/f16x2 `add sub mul fma` with `.rn`; `fp`'s
//! exact routines stay the reference and do the rest.

use super::float::{ADD, SUB};
use crate::emu::fp;
use crate::emu::inst::Ty;

/// The `cvt`s with `.rn` and no other modifier that the host does: f16 ->
/// f32, f32 -> f16 or bf16, and two f32 (`a` the high half) -> f16x2 or
/// bf16x2; `None` for the others.
pub(super) fn cvt(at: Ty, dt: Ty, a: &[u64; 32], b: &[u64; 32]) -> Option<[u64; 32]> {
    let mut d = [0u64; 32];
    match (at, dt) {
        (Ty::F16, Ty::F32) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = widen(a)),
        (Ty::F32, Ty::F16 | Ty::Bf16) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = narrow(a, dt == Ty::Bf16)),
        (Ty::F32, Ty::F16x2 | Ty::Bf16x2) => {
            let bf = dt == Ty::Bf16x2;
            for ((d, &a), &b) in d.iter_mut().zip(a).zip(b) {
                *d = (narrow(a, bf) << 16) | narrow(b, bf);
            }
        }
        _ => return None,
    }
    Some(d)
}

/// `cvt.f32.f16` by the host: exact, as `fp::convert`; a NaN gives the
/// canonical NaN, as there.
#[inline]
pub(super) fn widen(a: u64) -> u64 {
    let h = half::f16::from_bits(a as u16);
    if h.is_nan() {
        fp::F32.nan()
    } else {
        u64::from(h.to_f32().to_bits())
    }
}

/// `cvt.rn.f16.f32` (`cvt.rn.bf16.f32` with `bf`) by the host: rounding
/// to nearest even as `fp::convert` does; a NaN gives the canonical NaN,
/// as there.
#[inline]
pub(super) fn narrow(a: u64, bf: bool) -> u64 {
    let x = f32::from_bits(a as u32);
    match (x.is_nan(), bf) {
        (true, false) => fp::F16.nan(),
        (true, true) => fp::BF16.nan(),
        (false, false) => u64::from(half::f16::from_f32(x).to_bits()),
        (false, true) => u64::from(half::bf16::from_f32(x).to_bits()),
    }
}

/// `add`/`sub`/`mul` (`op`) of two f16 with `.rn`: the f64 sum and the
/// f32 product of two f16 are exact, so rounding them once to f16 gives
/// what `fp::add_half`/`fp::mul_half` give.
#[inline]
pub(super) fn arith(op: u8, a: u64, b: u64) -> u64 {
    let (x, y) = (half::f16::from_bits(a as u16), half::f16::from_bits(b as u16));
    match op {
        ADD => from_exact(x.to_f64() + y.to_f64()),
        SUB => from_exact(x.to_f64() - y.to_f64()),
        _ => narrow(u64::from((x.to_f32() * y.to_f32()).to_bits()), false),
    }
}

/// `fma.rn.f16`: the f64 product is exact, and so is its sum with `c`
/// where TwoSum shows no error; `fp::fma_half` does the rest (as it would).
#[inline]
pub(super) fn fma(a: u64, b: u64, c: u64) -> u64 {
    let f = |v: u64| half::f16::from_bits(v as u16).to_f64();
    let (p, z) = (f(a) * f(b), f(c));
    let s = p + z;
    if s.is_finite() && s != 0.0 {
        let bb = s - p;
        if (p - (s - bb)) + (z - bb) == 0.0 {
            return from_exact(s);
        }
    }
    fp::fma_half(a, b, c, fp::F16)
}

/// `s`, an exact result of f16 operands (|s| < 2^17, a multiple of 2^-48),
/// rounded to f16 to nearest even: to f32 rounding to odd (f32 has more
/// than two bits beyond f16's, so the second rounding is exact), then to
/// f16.
fn from_exact(s: f64) -> u64 {
    let r = s as f32;
    let mut bits = r.to_bits();
    if f64::from(r) != s {
        // Toward zero, then the odd one of the two neighbours.
        if f64::from(r).abs() > s.abs() {
            bits -= 1;
        }
        bits |= 1;
    }
    narrow(u64::from(bits), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::fp::{Fmt, Rnd};
    use crate::emu::ops::float::MUL;

    /// The host's f16 -> f32 and f32 -> f16/bf16 conversions agree with
    /// `fp::convert` on every f16 and on f32s around every f16 and bf16
    /// boundary (ties, subnormals, overflow, NaNs).
    #[test]
    fn the_host_half_conversions_match_fp() {
        let check = |x: u64, to: Option<Fmt>| {
            let (d, from, to) = match to {
                None => (widen(x), fp::F16, fp::F32),
                Some(to) => (narrow(x, to == fp::BF16), fp::F32, to),
            };
            assert_eq!(d, fp::convert(x, from, to, Rnd::Rn, false), "{x:#x}");
        };
        for h in 0..1u64 << 16 {
            check(h, None);
        }
        // Every f16 and bf16 as an f32, and the f32s just around it and
        // half-way to the next, with both signs.
        for (to, shift) in [(fp::F16, 13), (fp::BF16, 16)] {
            for h in 0..1u64 << 15 {
                let f = if to == fp::F16 {
                    u64::from(half::f16::from_bits(h as u16).to_f32().to_bits())
                } else {
                    h << 16
                };
                let mid = f + (1 << (shift - 1));
                for x in [f, f + 1, f.wrapping_sub(1), mid, mid + 1, mid - 1, f + (1 << shift) - 1] {
                    check(x & 0xFFFF_FFFF, Some(to));
                    check((x | 0x8000_0000) & 0xFFFF_FFFF, Some(to));
                }
            }
        }
    }

    /// The host's f16 arithmetic agrees with `fp`'s on random operands
    /// and on every pair of a set of special values (zeros, subnormals,
    /// the largest finite, infinities, NaNs, values around ties).
    #[test]
    fn the_host_half_arithmetic_matches_fp() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let special: Vec<u64> = [
            0x0000, 0x0001, 0x0002, 0x03FF, 0x0400, 0x0401, 0x3C00, 0x3C01, 0x3BFF, 0x7BFF, 0x7BFE, 0x7C00, 0x7E00,
            0x7C01, 0x5640, 0x1400,
        ]
        .iter()
        .flat_map(|&h| [h, h | 0x8000])
        .collect();
        let check = |a: u64, b: u64, c: u64| {
            for op in [ADD, SUB, MUL] {
                let want = match op {
                    ADD => fp::add_half(a, b, fp::F16),
                    SUB => fp::add_half(a, b ^ 0x8000, fp::F16),
                    _ => fp::mul_half(a, b, fp::F16),
                };
                assert_eq!(arith(op, a, b), want, "op {op} {a:#x} {b:#x}");
            }
            assert_eq!(fma(a, b, c), fp::fma_half(a, b, c, fp::F16), "fma {a:#x} {b:#x} {c:#x}");
        };
        for &a in &special {
            for &b in &special {
                for &c in &special {
                    check(a, b, c);
                }
            }
        }
        for _ in 0..1 << 20 {
            let r = next();
            check(r & 0xFFFF, (r >> 16) & 0xFFFF, (r >> 32) & 0xFFFF);
            // Operands of close exponents: sums that cancel or round at a tie.
            let e = (r >> 48) & 0x7C00;
            check(r & 0x83FF | e, (r >> 16) & 0x83FF | e, (r >> 32) & 0x83FF | e);
        }
    }
}
