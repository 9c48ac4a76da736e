//! The tensor cores' sums, a row of D at a time and vectorised: the
//! block-scaled FP4 MMA of `tcgen05.mma` ([`BlockScaledB`]) and the
//! f16/bf16 `wgmma` ([`half_rows`], in `half_sums.rs`).
//!
//! Both models (the `tcgen05` and `wgmma` module docs) align every term of
//! an element of D to the largest leading exponent `emax` among them,
//! truncate it toward zero to a multiple of `2^(emax - bits)`, add the
//! truncated terms exactly and round the sum toward zero to f32. Here a
//! term is an exact f64 (a product of at most 22 significant bits), times
//! `2^(bits - emax)` still exact, and [`trunc`] drops its bits below the
//! unit; the truncated terms are integers below 2^47 whose sum (below
//! 2^50) is exact in any order, and the sum times the unit, cast to f32
//! (to nearest) and stepped back toward zero where the cast went past it,
//! is the result ([`f32_toward_zero`]). Where no term has bits below the
//! unit, which the operands' exponents tell (the scales' for the
//! block-scaled MMA; each row's largest leading and least lowest-bit
//! exponent for wgmma), the plain f64 sum is already exact and the
//! truncation is skipped. The loops over a row's columns are
//! branch-free so that the compiler vectorises them; on x86-64 they are
//! compiled a second time for AVX2 and picked at run time (the same IEEE
//! operations on wider vectors: the same bits). The scalar models they
//! replace are kept as the reference of the tests (`reference.rs`).

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

/// The leading exponent of a zero (no term): below every real one, and
/// two of them added stay far inside an i32.
const NONE: i32 = -100_000;

/// The least `emax` used for the unit: below every real leading exponent
/// (bf16 products reach -252) and keeping `2^(bits - emax)` finite.
const FLOOR: i32 = -300;

/// The least exponent of a term when there is none: above every real one.
const ABSENT: i32 = 100_000;

/// The canonical NaN the tensor cores return.
const NAN: u32 = 0x7FFF_FFFF;

mod half_parts;
mod half_sums;
mod half_tiles;
pub(super) use half_sums::half_rows_frag;
pub(super) use half_tiles::{Chain, Frag};

/// Whether the AVX2 copies run: where the CPU has AVX2, unless a test
/// asks for the baseline ones.
#[cfg(target_arch = "x86_64")]
pub(super) fn use_avx2() -> bool {
    #[cfg(test)]
    if tests::BASELINE.get() {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx2")
}

/// Whether the tiles' copy for AVX-512F runs (the same code in wider
/// registers: the same bits, every operation written out).
#[cfg(target_arch = "x86_64")]
pub(super) fn use_avx512() -> bool {
    #[cfg(test)]
    if tests::NO_AVX512.get() {
        return false;
    }
    use_avx2() && std::arch::is_x86_feature_detected!("avx512f")
}

/// `2^e` (`e` within f64's normal exponents).
#[inline(always)]
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `v` truncated toward zero (`|v| < 2^52`), with additions rather than a
/// library call: `|v| + 2^52 - 2^52` is `|v|` rounded to an integer, one
/// too far when it rounded up.
#[inline(always)]
fn trunc(v: f64) -> f64 {
    const BIG: f64 = 4_503_599_627_370_496.0;
    let a = v.abs();
    let r = (a + BIG) - BIG;
    let r = if r > a { r - 1.0 } else { r };
    r.copysign(v)
}

/// `x` (exact) rounded toward zero to f32 bits, from `2^128` up an
/// infinity (the tensor cores' overflow), +0 for +0.
#[inline(always)]
fn f32_toward_zero(x: f64) -> u32 {
    const LIMIT: f64 = 340_282_366_920_938_463_463_374_607_431_768_211_456.0;
    let y = x as f32;
    let past = f64::from(y).abs() > x.abs() && x.abs() < LIMIT;
    y.to_bits() - u32::from(past)
}

/// An f32 accumulator as a term: its value and leading exponent (`NONE`
/// for zero, infinities and NaN, which the callers handle).
#[inline(always)]
fn f32_term(bits: u32) -> (f64, i32) {
    let e = (bits >> 23 & 0xFF) as i32;
    let finite_nonzero = e != 0xFF && bits & 0x7FFF_FFFF != 0;
    if finite_nonzero {
        (f64::from(f32::from_bits(bits)), e.max(1) - 127)
    } else {
        (0.0, NONE)
    }
}

/// Twice the E2M1 value of each nibble (an integer).
const E2M1X2: [i16; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Twice the 64 E2M1 values of a K-major row.
fn e2m1x2_row(row: &[u8; 32]) -> [i16; 64] {
    std::array::from_fn(|k| E2M1X2[usize::from((row[k / 2] >> (4 * (k % 2))) & 15)])
}

/// A UE4M3 scale (the sign bit ignored) as its value, its exponent (the
/// leading one; subnormals at -6) and whether it is NaN (`0x7F`); a zero
/// scale is `(0, NONE)`.
fn ue4m3(b: u8) -> (f64, i32, bool) {
    let v = b & 0x7F;
    let (e, m) = (i32::from(v >> 3), f64::from(v & 7));
    match e {
        0 if m == 0.0 => (0.0, NONE, false),
        0 => (m / 8.0 * pow2(-6), -6, false),
        e => ((8.0 + m) / 8.0 * pow2(e - 7), e - 7, v == 0x7F),
    }
}

/// B's side of a block-scaled MMA (`.kind::mxf4nvf4`, K = 64, four
/// blocks of 16) decoded once, and the scratch of the rows it finishes.
pub(super) struct BlockScaledB {
    n: usize,
    /// N rounded up to a multiple of 16.
    padded: usize,
    /// Twice B's E2M1 values, K-major: `vals[k * padded + j]` for row `j`
    /// (0 past N).
    vals: Vec<i16>,
    /// Block `c`'s scale of row `j` at `c * n + j`: value and exponent
    /// ([`ue4m3`]).
    scale: Vec<f64>,
    exp: Vec<i32>,
    /// Row `j` has a NaN scale.
    nan: Vec<bool>,
    /// Column `j` of the row being finished needs its terms truncated.
    slow: Vec<bool>,
    /// Four times block `c`'s sum of products for column `j`, at `c *
    /// padded + j` (at most 16 * 144 in magnitude: exact in i16).
    q: Vec<i16>,
}

impl BlockScaledB {
    /// `rows`: B's N rows (64 K-major nibbles each), `scales` their four
    /// UE4M3 block scales.
    pub(super) fn new(rows: &[[u8; 32]], scales: &[[u8; 4]]) -> BlockScaledB {
        let n = rows.len();
        let padded = n.next_multiple_of(16);
        let mut vals = vec![0; 64 * padded];
        let (mut scale, mut exp, mut nan) = (vec![0.0; 4 * n], vec![NONE; 4 * n], vec![false; n]);
        for (j, (row, s)) in rows.iter().zip(scales).enumerate() {
            for (k, v) in e2m1x2_row(row).into_iter().enumerate() {
                vals[k * padded + j] = v;
            }
            for (c, &b) in s.iter().enumerate() {
                let (v, e, bad) = ue4m3(b);
                (scale[c * n + j], exp[c * n + j]) = (v, e);
                nan[j] |= bad;
            }
        }
        BlockScaledB {
            n,
            padded,
            vals,
            scale,
            exp,
            nan,
            slow: vec![false; n],
            q: vec![0; 4 * padded],
        }
    }

    /// One row of D (`d`, N f32 bits, in place): A's row `a` (64 nibbles)
    /// with scales `sa` times B, plus D when `acc`.
    pub(super) fn row(&mut self, a: &[u8; 32], sa: [u8; 4], d: &mut [u32], acc: bool) {
        let parts = sa.map(ue4m3);
        let row = ARow {
            vals: e2m1x2_row(a),
            scale: parts.map(|p| p.0),
            exp: parts.map(|p| p.1),
            nan: parts.iter().any(|p| p.2),
        };
        block_scaled_row(&row, self, &mut d[..self.n], acc);
    }
}

/// A's side of one row of a block-scaled MMA, decoded.
struct ARow {
    vals: [i16; 64],
    scale: [f64; 4],
    exp: [i32; 4],
    nan: bool,
}

vectorised! {
    /// The block-scaled MMA's row `a` of D (`d`) against all of `b`'s
    /// columns: the exact integer block sums, then each element's terms
    /// aligned to its largest scale exponent (or D's), truncated and summed
    /// (module docs; each block's term `q / 4 * sa * sb` with leading
    /// exponent `ea + eb`, 35 bits below the largest kept).
    fn block_scaled_row(a: &ARow, b: &mut BlockScaledB, d: &mut [u32], acc: bool) {
        let (n, np) = (b.n, b.padded);
        // 16 columns at a time, their sums kept in registers.
        for (c, qc) in b.q.chunks_exact_mut(np).enumerate() {
            for (j0, out) in (0..np).step_by(16).zip(qc.chunks_exact_mut(16)) {
                let mut acc = [0i16; 16];
                for k in 16 * c..16 * c + 16 {
                    let x = a.vals[k];
                    for (s, y) in acc.iter_mut().zip(&b.vals[k * np + j0..k * np + j0 + 16]) {
                        *s += x * y;
                    }
                }
                out.copy_from_slice(&acc);
            }
        }
        let q = [0, 1, 2, 3].map(|c| &b.q[c * np..c * np + n]);
        let s = [0, 1, 2, 3].map(|c| &b.scale[c * n..c * n + n]);
        let e = [0, 1, 2, 3].map(|c| &b.exp[c * n..c * n + n]);
        let (nan, slow) = (&b.nan[..n], &mut b.slow[..n]);
        let scale4 = a.scale.map(|x| x / 4.0);
        for j in 0..n {
            let bits = d[j];
            let (dv, dl) = f32_term(bits);
            let (mut sum, dl) = if acc { (dv, dl) } else { (0.0, NONE) };
            let (mut emax, mut low) = (dl, ABSENT);
            for c in 0..4 {
                let ec = a.exp[c] + e[c][j];
                emax = emax.max(ec);
                low = low.min(if ec > NONE / 2 { ec } else { ABSENT });
                sum += f64::from(q[c][j]) * scale4[c] * s[c][j];
            }
            // Every term is a multiple of 2^(emax - 35) (no truncation):
            // the plain sum is exact.
            let exact = emax - low <= 27 && (dl == NONE || emax - dl <= 12);
            slow[j] = !exact;
            let r = finish(f32_toward_zero(sum), bits, acc, a.nan | nan[j]);
            d[j] = if exact { r } else { bits };
        }
        for j in 0..n {
            if slow[j] {
                let at = |v: [&[f64]; 4]| v.map(|x| x[j]);
                let qj = q.map(|x| f64::from(x[j]));
                let r = truncated(a, qj, at(s), e.map(|x| x[j]), d[j], acc);
                d[j] = finish(r, d[j], acc, a.nan | nan[j]);
            }
        }
    }
}

/// A block-scaled element with its terms truncated (module docs): `q`
/// four times the block sums, `s` and `e` B's scales and exponents, `bits`
/// D.
#[inline(always)]
fn truncated(a: &ARow, q: [f64; 4], s: [f64; 4], e: [i32; 4], bits: u32, acc: bool) -> u32 {
    let (dv, dl) = if acc { f32_term(bits) } else { (0.0, NONE) };
    let emax = a.exp.iter().zip(e).fold(dl, |m, (ea, eb)| m.max(ea + eb)).max(FLOOR);
    // q is four times the block sum: 2 bits fewer.
    let inv = pow2(33 - emax);
    let mut sum = trunc(dv * pow2(35 - emax));
    for ((q, sa), sb) in q.iter().zip(a.scale).zip(s) {
        sum += trunc(q * sa * sb * inv);
    }
    f32_toward_zero(sum * pow2(emax - 35))
}

/// A block-scaled element's result `r` unless a scale is NaN (`nan`) or D
/// (`bits`, a term when `acc`) is infinite or NaN.
#[inline(always)]
fn finish(r: u32, bits: u32, acc: bool, nan: bool) -> u32 {
    let special = acc & (bits >> 23 & 0xFF == 0xFF);
    let nan_d = special & (bits & 0x7F_FFFF != 0);
    let r = if special { bits } else { r };
    if nan | nan_d { NAN } else { r }
}
