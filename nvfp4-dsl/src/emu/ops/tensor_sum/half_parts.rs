//! A wgmma operand (f16 or bf16 bits) decoded, branch-free on the bits
//! (it runs for every operand of every wgmma): in f64 for the general
//! sums ([`half_parts`]), in f32 for the tiles and B ([`half_parts32`],
//! [`decode32`]).

use super::{ABSENT, NONE, pow2};
use crate::emu::fp::{BF16, F16, Fmt};

/// A wgmma operand's fields: its significand `m` (with the leading bit of
/// normals) and the exponent `e` of its last bit (subnormals at the least
/// exponent, unnormalised), whether it is negative (after the negation
/// asked for), a nonzero finite value, or an infinity or NaN.
#[inline(always)]
fn half_fields(bits: u16, f: Fmt, neg: bool) -> (u32, i32, bool, bool, bool) {
    let (x, ones) = (u32::from(bits), (1u32 << f.exp) - 1);
    let (be, frac) = (x >> f.man & ones, x & ((1 << f.man) - 1));
    let special = be == ones;
    let live = !special && (be | frac) != 0;
    let m = frac | if be != 0 { 1 << f.man } else { 0 };
    let e = be.max(1) as i32 - f.bias() - f.man as i32;
    (m, e, (x >> (f.exp + f.man) != 0) != neg, live, special)
}

/// A wgmma operand value decoded: its value (negated where asked; 0 for
/// zeros, infinities and NaN), its leading exponent (`NONE` for those),
/// the exponent of its lowest set bit (`ABSENT` for those), and whether it
/// is an infinity or NaN.
#[inline(always)]
pub(super) fn half_parts(bits: u16, f: Fmt, neg: bool) -> (f64, i32, i32, bool) {
    let (m, e, negative, live, special) = half_fields(bits, f, neg);
    let v = f64::from(m as i32) * pow2(e);
    let v = if negative { -v } else { v };
    if live {
        (v, e + f.man as i32, e + lowest_bit(m), special)
    } else {
        (0.0, NONE, ABSENT, special)
    }
}

/// The position of `m`'s lowest set bit (`m` below 2^24, not 0): that bit
/// as an f32 power of two gives it.
#[inline(always)]
pub(super) fn lowest_bit(m: u32) -> i32 {
    (((m & m.wrapping_neg()) as i32 as f32).to_bits() >> 23) as i32 - 127
}

/// A wgmma operand value decoded as `half_parts` does, in f32: its value
/// `m 2^e` (`2^e` normal for every f16), or for a format with smaller
/// ones (bf16) and a negative `e`, `m 2^(e + 64)` (normal) times `2^-64`,
/// exact (at least bf16's least subnormal, 2^-133).
#[inline(always)]
pub(super) fn half_parts32(bits: u16, f: Fmt, neg: bool) -> (f32, i32, i32, bool) {
    let pow2f = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    let (m, e, negative, live, special) = half_fields(bits, f, neg);
    let v = if 1 - f.bias() - f.man as i32 >= -126 {
        m as f32 * pow2f(e)
    } else {
        let (e1, e2) = if e < 0 { (e + 64, -64) } else { (e, 0) };
        m as f32 * pow2f(e1) * pow2f(e2)
    };
    let v = if negative { -v } else { v };
    if live {
        (v, e + f.man as i32, e + lowest_bit(m), special)
    } else {
        (0.0, NONE, ABSENT, special)
    }
}

/// wgmma operands decoded one by one ([`half_parts32`]): values, leading
/// exponents, lowest-bit exponents and whether each is an infinity or NaN.
pub(super) struct Parts32<'a> {
    pub vals: &'a mut [f32],
    pub leads: &'a mut [i32],
    pub lows: &'a mut [i32],
    pub special: &'a mut [bool],
}

vectorised! {
    /// Decodes `bits` (format `f`, negated if `neg`) into `out`, element
    /// by element: one flat loop over structure-of-arrays outputs, which
    /// the compiler vectorises (with f16's and bf16's fields as constants).
    pub(super) fn decode32(bits: &[u16], f: Fmt, neg: bool, out: Parts32<'_>) {
        #[inline(always)]
        fn each(bits: &[u16], f: Fmt, neg: bool, out: Parts32<'_>) {
            let n = bits.len();
            let (vals, leads, lows, special) =
                (&mut out.vals[..n], &mut out.leads[..n], &mut out.lows[..n], &mut out.special[..n]);
            for i in 0..n {
                (vals[i], leads[i], lows[i], special[i]) = half_parts32(bits[i], f, neg);
            }
        }
        if f == F16 {
            each(bits, F16, neg, out);
        } else if f == BF16 {
            each(bits, BF16, neg, out);
        } else {
            each(bits, f, neg, out);
        }
    }
}
