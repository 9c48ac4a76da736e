//! The scalar models the vectorised sums replaced, kept verbatim (but for
//! names) as the reference the tests compare them with: the sum of terms
//! (`m * 2^e`, leading exponent) in an i64, the block-scaled MMA's
//! element (`block_scaled_sum`) and the wgmma's (`dot`).

use super::E2M1X2;
use crate::emu::fp::{self, F32, Val};

/// `m * 2^shift` truncated toward zero (the tensor cores' alignment of a
/// term); `m` and the result fit an i64.
fn shift_toward_zero(m: i64, shift: i32) -> i64 {
    if shift >= 0 {
        m << shift
    } else if shift > -64 {
        m.signum() * (m.abs() >> -shift)
    } else {
        0
    }
}

/// The tensor cores' sum of `terms` (each `(m, e, lead)`: the value
/// `m * 2^e` with leading exponent `lead`) as f32 bits: every term
/// truncated toward zero to units of 2^(largest lead - `sum_bits`), the
/// integer sum rounded toward zero ([`f32_toward_zero`]); +0 for none.
/// The caller keeps the aligned terms' sum within an i64.
fn aligned_sum_toward_zero(terms: &[(i64, i32, i32)], sum_bits: i32) -> u32 {
    let Some(emax) = terms.iter().map(|t| t.2).max() else {
        return 0;
    };
    let unit = emax - sum_bits;
    let sum: i64 = terms.iter().map(|&(m, e, _)| shift_toward_zero(m, e - unit)).sum();
    f32_toward_zero(sum, unit)
}

/// `sum * 2^unit` rounded toward zero to f32 bits; beyond the largest
/// finite value, an infinity (what the tensor cores return); zero is +0.
fn f32_toward_zero(sum: i64, unit: i32) -> u32 {
    if sum == 0 {
        return 0;
    }
    let sign = if sum < 0 { 0x8000_0000u32 } else { 0 };
    let a = sum.unsigned_abs();
    let lead = 63 - a.leading_zeros() as i32 + unit;
    if lead > 127 {
        return sign | 0x7F80_0000;
    }
    // The f32 unit at this magnitude: 2^(lead - 23), or 2^-149 below the
    // normal range.
    let f32_unit = (lead - 23).max(-149);
    let shift = f32_unit - unit;
    let q = if shift >= 0 { a >> shift.min(63) } else { a << -shift } as u32;
    if lead < -126 {
        sign | q
    } else {
        sign | ((lead + 127) as u32) << 23 | (q & 0x7F_FFFF)
    }
}

/// A UE4M3 scale as `(m, e)`, its value `m / 8 * 2^e` (subnormals at
/// exponent -6); `None` for zero. The sign bit is ignored; `0x7F` is NaN
/// (checked by the caller).
fn ue4m3_parts(b: u8) -> Option<(i64, i32)> {
    let v = b & 0x7F;
    let (e, m) = (i32::from(v >> 3), i64::from(v & 7));
    match (e, m) {
        (0, 0) => None,
        (0, m) => Some((m, -6)),
        (e, m) => Some((8 + m, e - 7)),
    }
}

/// Fraction bits the block-scaled MMA keeps below the largest term's
/// leading exponent.
const BLOCK_SUM_BITS: i32 = 35;

/// A row's (of A) or column's (of B) four UE4M3 block scales, decoded
/// once per MMA rather than once per element of D.
#[derive(Clone, Copy)]
pub(super) struct Scales {
    /// `ue4m3_parts` of each (`None`: zero).
    parts: [Option<(i64, i32)>; 4],
    /// One of them is NaN.
    nan: bool,
}

impl Scales {
    pub(super) fn of(s: [u8; 4]) -> Scales {
        Scales {
            parts: s.map(ue4m3_parts),
            nan: s.iter().any(|&b| b & 0x7F == 0x7F),
        }
    }
}

/// One element of D (module docs): `q[c]` is four times block `c`'s exact
/// sum of products (the E2M1 values doubled are integers), `sa`/`sb` the
/// blocks' scales, `old` D's f32 bits when accumulating.
pub(super) fn block_scaled_sum(q: [i32; 4], sa: &Scales, sb: &Scales, old: Option<u32>) -> u32 {
    if sa.nan || sb.nan {
        return 0x7FFF_FFFF;
    }
    // (value numerator, its unit's exponent, leading exponent) per term.
    let mut terms = [(0i64, 0i32, 0i32); 5];
    let mut k = 0;
    for ((q, pa), pb) in q.iter().zip(sa.parts).zip(sb.parts) {
        if let (Some((ma, ea)), Some((mb, eb))) = (pa, pb) {
            // q / 4 * ma / 8 * mb / 8 * 2^(ea + eb).
            terms[k] = (i64::from(*q) * ma * mb, ea + eb - 8, ea + eb);
            k += 1;
        }
    }
    if let Some(bits) = old {
        match fp::unpack(u64::from(bits), fp::F32) {
            fp::Val::Nan => return 0x7FFF_FFFF,
            fp::Val::Inf(_) => return bits,
            fp::Val::Zero(_) => {}
            fp::Val::Fin { s, m, e } => {
                terms[k] = (if s { -(m as i64) } else { m as i64 }, e, e + 23);
                k += 1;
            }
        }
    }
    // Aligned, each term is below 2^47 (block sums under 2^19 shifted by at
    // most 27 bits).
    aligned_sum_toward_zero(&terms[..k], BLOCK_SUM_BITS)
}

/// Four times the exact block sums of one MMA, `out[m * n + j][c]` for
/// D[m][j] and block `c`: `sum_{k in block c} 2 A[m][k] * 2 B[j][k]`.
/// Twice the E2M1 values are small integers, so each is an integer of at
/// most 16 * 144 in magnitude (exact in i16), computed for all `j` at once.
pub(super) fn mma_block_sums(a: &[[u8; 32]], b: &[[u8; 32]]) -> Vec<[i32; 4]> {
    let n = b.len();
    let nib = |row: &[u8; 32], k: usize| E2M1X2[usize::from((row[k / 2] >> (4 * (k % 2))) & 15)];
    // B transposed per K element: bt[k][j].
    let mut bt = vec![0i16; 64 * n];
    for (j, row) in b.iter().enumerate() {
        for k in 0..64 {
            bt[k * n + j] = nib(row, k);
        }
    }
    let mut out = vec![[0i32; 4]; a.len() * n];
    let mut block = vec![0i16; n];
    for (m, row) in a.iter().enumerate() {
        let d = &mut out[m * n..(m + 1) * n];
        for c in 0..4 {
            block.fill(0);
            for k in 16 * c..16 * c + 16 {
                let x = nib(row, k);
                if x != 0 {
                    for (acc, y) in block.iter_mut().zip(&bt[k * n..(k + 1) * n]) {
                        *acc += x * *y;
                    }
                }
            }
            for (d, q) in d.iter_mut().zip(&block) {
                d[c] = i32::from(*q);
            }
        }
    }
    out
}

/// An operand value: `m * 2^e` (`m` signed, 0 for zeros) with its leading
/// exponent `lead` (see the numerics above), an infinity (negative or not)
/// or NaN.
#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
    Fin { m: i64, e: i32, lead: i32 },
    Inf(bool),
    Nan,
}

/// A zero operand.
pub(super) const ZERO: Op = Op::Fin { m: 0, e: 0, lead: 0 };

impl Op {
    pub(super) fn of(bits: u64, f: fp::Fmt, neg: bool) -> Op {
        match fp::unpack(bits, f) {
            Val::Nan => Op::Nan,
            Val::Inf(s) => Op::Inf(s != neg),
            Val::Zero(_) => ZERO,
            // `unpack` keeps subnormals unnormalised (m < 2^man at the
            // least exponent), so e + man is the leading exponent of both.
            Val::Fin { s, m, e } => Op::Fin {
                m: if s != neg { -(m as i64) } else { m as i64 },
                e,
                lead: e + f.man as i32,
            },
        }
    }
}

/// Fraction bits wgmma keeps below the largest term's leading exponent.
const HALF_SUM_BITS: i32 = 25;

/// One element of D: the 16 products of `a` and `b`, plus `old` (f32
/// bits) when accumulating, summed as the H100 does (module docs).
pub(super) fn dot(a: &[Op; 16], b: &[Op; 16], old: Option<u32>) -> u32 {
    // (m, e, lead) of each nonzero term: the value m * 2^e.
    let mut terms = [(0i64, 0i32, 0i32); 17];
    let mut k = 0;
    let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
    let mut infinity = |negative: bool| {
        if negative {
            neg_inf = true;
        } else {
            pos_inf = true;
        }
    };
    for (x, y) in a.iter().zip(b) {
        match (*x, *y) {
            (Op::Fin { m: mx, e: ex, lead: lx }, Op::Fin { m: my, e: ey, lead: ly }) => {
                if mx != 0 && my != 0 {
                    terms[k] = (mx * my, ex + ey, lx + ly);
                    k += 1;
                }
            }
            (Op::Nan, _) | (_, Op::Nan) | (Op::Inf(_), Op::Fin { m: 0, .. }) | (Op::Fin { m: 0, .. }, Op::Inf(_)) => {
                nan = true
            }
            (Op::Inf(s), Op::Fin { m, .. }) | (Op::Fin { m, .. }, Op::Inf(s)) => infinity(s != (m < 0)),
            (Op::Inf(s), Op::Inf(t)) => infinity(s != t),
        }
    }
    if let Some(bits) = old {
        match Op::of(u64::from(bits), F32, false) {
            Op::Fin { m: 0, .. } => {}
            Op::Fin { m, e, lead } => {
                terms[k] = (m, e, lead);
                k += 1;
            }
            Op::Inf(s) => infinity(s),
            Op::Nan => nan = true,
        }
    }
    if nan || (pos_inf && neg_inf) {
        return 0x7FFF_FFFF;
    }
    if pos_inf || neg_inf {
        return F32.inf(neg_inf) as u32;
    }
    // Aligned, each term is at most 2^(SUM_BITS + 2), so 17 of them fit an
    // i64.
    aligned_sum_toward_zero(&terms[..k], HALF_SUM_BITS)
}
