//! f16 conversions and arithmetic by the host's floating point where it
//! gives `fp`'s results bit for bit (and NaNs its canonical NaN): the hot
//! cases of `cvt` and of f16/f16x2 `add sub mul fma` with `.rn`; `fp`'s
//! exact routines stay the reference and do the rest.

use super::float::{ADD, MUL, SUB};
use crate::emu::fp;
use crate::emu::inst::Ty;

/// The `cvt`s with `.rn` and no other modifier that the host does, into
/// `d`: f16 -> f32, f32 -> f16 or bf16, and two f32 (`a` the high half) ->
/// f16x2 or bf16x2; false for the others.
pub(super) fn cvt(d: &mut [u64; 32], at: Ty, dt: Ty, a: &[u64; 32], b: &[u64; 32]) -> bool {
    match (at, dt) {
        (Ty::F16, Ty::F32) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = widen(a)),
        (Ty::F32, Ty::F16 | Ty::Bf16) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = narrow(a, dt == Ty::Bf16)),
        (Ty::F32, Ty::F16x2 | Ty::Bf16x2) => {
            let bf = dt == Ty::Bf16x2;
            for ((d, &a), &b) in d.iter_mut().zip(a).zip(b) {
                *d = (narrow(a, bf) << 16) | narrow(b, bf);
            }
        }
        _ => return false,
    }
    true
}

/// `cvt.f32.f16` by the host: exact, as `fp::convert`; a NaN gives the
/// canonical NaN, as there.
#[inline(always)]
pub(super) fn widen(a: u64) -> u64 {
    let x = f16_f32(a);
    if x.is_nan() {
        fp::F32.nan()
    } else {
        u64::from(x.to_bits())
    }
}

/// `cvt.rn.f16.f32` (`cvt.rn.bf16.f32` with `bf`) by the host: rounding
/// to nearest even as `fp::convert` does; a NaN gives the canonical NaN,
/// as there.
#[inline(always)]
pub(super) fn narrow(a: u64, bf: bool) -> u64 {
    if !bf {
        return f32_f16(f32::from_bits(a as u32));
    }
    let bits = a as u32;
    let mag = bits & 0x7FFF_FFFF;
    if mag > 0x7F80_0000 {
        return fp::BF16.nan();
    }
    // Round at bit 16 to nearest even; a carry out of the mantissa makes
    // the next binade or infinity, as it should.
    u64::from(bits >> 16 & 0x8000 | (mag + 0x7FFF + (mag >> 16 & 1)) >> 16)
}

/// The f16 in the low 16 bits of `h` as f32, exactly (a NaN stays a NaN).
/// Integer operations and one exact product, without branches or the
/// `half` crate's run-time dispatch, so that loops over lanes vectorise.
#[inline(always)]
fn f16_f32(h: u64) -> f32 {
    let h = h as u32;
    let (exp, man) = (h >> 10 & 0x1F, h & 0x3FF);
    // A subnormal is man * 2^-24: an exact product, a normal f32.
    let sub = ((man as i32) as f32 * f32::from_bits(0x3380_0000)).to_bits();
    let mag = match exp {
        0 => sub,
        31 => 0x7F80_0000 | man << 13,
        _ => (exp + 112) << 23 | man << 13,
    };
    f32::from_bits((h & 0x8000) << 16 | mag)
}

/// `x` rounded to f16, to nearest even (a NaN gives the canonical NaN).
#[inline(always)]
fn f32_f16(x: f32) -> u64 {
    let bits = x.to_bits();
    let a = bits & 0x7FFF_FFFF;
    // Below f16's smallest normal (2^-14): adding 0.5, whose unit is
    // 2^-24 (f16's subnormal step), rounds to nearest even and leaves the
    // step count in the low bits.
    let sub = (f32::from_bits(a) + 0.5).to_bits().wrapping_sub(0x3F00_0000);
    // Otherwise: rebias the exponent and round at bit 13 to nearest even
    // (a carry out of the mantissa gives the next binade, or infinity).
    let norm = a.wrapping_sub(112 << 23).wrapping_add(0xFFF + (a >> 13 & 1)) >> 13;
    let mag = if a < 0x3880_0000 {
        sub
    } else if a < 0x4780_0000 {
        norm
    } else {
        0x7C00
    };
    if a > 0x7F80_0000 {
        fp::F16.nan()
    } else {
        u64::from(bits >> 16 & 0x8000 | mag)
    }
}

/// `x` rounded to f16, to nearest even (a NaN gives the canonical NaN), as
/// [`f32_f16`] with f64's fields.
#[inline(always)]
fn f64_f16(x: f64) -> u64 {
    let bits = x.to_bits();
    let a = bits & !(1 << 63);
    // f64's unit at 2^28 is 2^-24.
    let magic = f64::from_bits((1023 + 28) << 52);
    let sub = (f64::from_bits(a) + magic).to_bits().wrapping_sub(magic.to_bits());
    let norm = a.wrapping_sub(1008 << 52).wrapping_add((1 << 41) - 1 + (a >> 42 & 1)) >> 42;
    let mag = if a < 1009 << 52 {
        sub
    } else if a < 1039 << 52 {
        norm
    } else {
        0x7C00
    };
    if a > 0x7FF0_0000_0000_0000 {
        fp::F16.nan()
    } else {
        bits >> 48 & 0x8000 | mag
    }
}

/// `add`/`sub`/`mul` (`op`) of two f16 with `.rn`: the f64 sum and the
/// f32 product of two f16 are exact, so rounding them once to f16 gives
/// what `fp::add_half`/`fp::mul_half` give.
#[inline(always)]
pub(super) fn arith(op: u8, a: u64, b: u64) -> u64 {
    let (x, y) = (f16_f32(a), f16_f32(b));
    match op {
        ADD => f64_f16(f64::from(x) + f64::from(y)),
        SUB => f64_f16(f64::from(x) - f64::from(y)),
        _ => f32_f16(x * y),
    }
}

/// [`arith`] on every lane of f16 (`pair`: f16x2) sources `a` and `b`,
/// into `d`: `mul` by the CPU's f16 conversions where it has them
/// ([`mul_lanes_f16c`]), else one loop per operation, branch-free, which
/// the compiler vectorises.
pub(super) fn arith_lanes(d: &mut [u64; 32], op: u8, pair: bool, a: &[u64; 32], b: &[u64; 32]) {
    #[cfg(target_arch = "x86_64")]
    if op == MUL && std::arch::is_x86_feature_detected!("f16c") && super::tensor_sum::use_avx2() {
        // SAFETY: the CPU has AVX2 and F16C.
        return unsafe { mul_lanes_f16c(d, pair, a, b) };
    }
    arith_lanes_int(d, op, pair, a, b);
}

vectorised! {
    /// [`arith_lanes`] in integer arithmetic.
    fn arith_lanes_int(d: &mut [u64; 32], op: u8, pair: bool, a: &[u64; 32], b: &[u64; 32]) {
        match op {
            ADD => each(d, pair, a, b, |x, y| arith(ADD, x, y)),
            SUB => each(d, pair, a, b, |x, y| arith(SUB, x, y)),
            _ => each(d, pair, a, b, |x, y| arith(MUL, x, y)),
        }
    }
}

/// `mul.rn.f16` (`.f16x2` with `pair`) on every lane, eight values at a
/// time: `vcvtph2ps` widens exactly (subnormals included), the f32
/// product of two f16 is exact (22 significant bits, never an f32
/// subnormal), and `vcvtps2ph` rounds it once to nearest even, to
/// subnormals and infinity as [`arith`] does; a NaN becomes the canonical
/// NaN.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
fn mul_lanes_f16c(d: &mut [u64; 32], pair: bool, a: &[u64; 32], b: &[u64; 32]) {
    use std::arch::x86_64::{__m128i, _MM_FROUND_TO_NEAREST_INT, _mm_loadu_si128, _mm_storeu_si128};
    use std::arch::x86_64::{_mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_mul_ps};
    let nan = fp::F16.nan() as u16;
    for half in 0..1 + usize::from(pair) {
        let shift = 16 * half;
        let x: [u16; 32] = std::array::from_fn(|l| (a[l] >> shift) as u16);
        let y: [u16; 32] = std::array::from_fn(|l| (b[l] >> shift) as u16);
        let mut p = [0u16; 32];
        for q in (0..32).step_by(8) {
            // SAFETY: each load and store is of 8 u16 (16 bytes) inside a
            // 32-element array; the unaligned forms need no alignment.
            unsafe {
                let xv = _mm256_cvtph_ps(_mm_loadu_si128(x[q..].as_ptr().cast::<__m128i>()));
                let yv = _mm256_cvtph_ps(_mm_loadu_si128(y[q..].as_ptr().cast::<__m128i>()));
                let r = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_mul_ps(xv, yv));
                _mm_storeu_si128(p[q..].as_mut_ptr().cast::<__m128i>(), r);
            }
        }
        for (d, &h) in d.iter_mut().zip(&p) {
            let h = if h & 0x7FFF > 0x7C00 { nan } else { h };
            *d = if half == 0 {
                u64::from(h)
            } else {
                *d | u64::from(h) << 16
            };
        }
    }
}

#[inline(always)]
fn each(d: &mut [u64; 32], pair: bool, a: &[u64; 32], b: &[u64; 32], f: impl Fn(u64, u64) -> u64) {
    if pair {
        for l in 0..32 {
            d[l] = f(a[l] & 0xFFFF, b[l] & 0xFFFF) | f(a[l] >> 16 & 0xFFFF, b[l] >> 16 & 0xFFFF) << 16;
        }
    } else {
        for l in 0..32 {
            d[l] = f(a[l] & 0xFFFF, b[l] & 0xFFFF);
        }
    }
}

/// `fma.rn.f16`: the f64 product is exact, and so is its sum with `c`
/// where TwoSum shows no error; `fp::fma_half` does the rest (as it would).
#[inline]
pub(super) fn fma(a: u64, b: u64, c: u64) -> u64 {
    let f = |v: u64| f64::from(f16_f32(v));
    let (p, z) = (f(a) * f(b), f(c));
    let s = p + z;
    if s.is_finite() && s != 0.0 {
        let bb = s - p;
        if (p - (s - bb)) + (z - bb) == 0.0 {
            return f64_f16(s);
        }
    }
    fp::fma_half(a, b, c, fp::F16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::fp::{Fmt, Rnd};

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
        // The lanes' loops give what `arith` gives, f16 and f16x2.
        for op in [ADD, SUB, MUL] {
            for _ in 0..64 {
                let a: [u64; 32] = std::array::from_fn(|_| next() & 0xFFFF_FFFF);
                let b: [u64; 32] = std::array::from_fn(|l| {
                    if l % 5 == 0 {
                        special[l % special.len()]
                    } else {
                        next() & 0xFFFF_FFFF
                    }
                });
                let (mut one, mut two) = ([0; 32], [0; 32]);
                arith_lanes(&mut one, op, false, &a, &b);
                arith_lanes(&mut two, op, true, &a, &b);
                for l in 0..32 {
                    let half = |x: u64, y: u64| arith(op, x & 0xFFFF, y & 0xFFFF);
                    assert_eq!(one[l], half(a[l], b[l]));
                    assert_eq!(two[l], half(a[l], b[l]) | half(a[l] >> 16, b[l] >> 16) << 16);
                }
            }
        }
        // The F16C product gives what the integer one gives: every f16
        // times the special values and random ones, both widths.
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx2") {
            let ys: Vec<u64> = special
                .iter()
                .copied()
                .chain((0..16).map(|_| next() & 0xFFFF))
                .collect();
            for base in (0..1u64 << 16).step_by(32) {
                for &y in &ys {
                    let a: [u64; 32] = std::array::from_fn(|l| (base + l as u64) | ((base + l as u64) ^ 0x5A5A) << 16);
                    let b: [u64; 32] = std::array::from_fn(|l| y | (ys[l % ys.len()] << 16));
                    for pair in [false, true] {
                        let (mut hw, mut int) = ([0; 32], [0; 32]);
                        // SAFETY: the CPU has AVX2 and F16C.
                        unsafe { mul_lanes_f16c(&mut hw, pair, &a, &b) };
                        each(&mut int, pair, &a, &b, |x, y| arith(MUL, x, y));
                        assert_eq!(hw, int, "{a:x?} x {b:x?}");
                    }
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
