//! The tensor cores' sums, a row of D at a time and vectorised: the
//! block-scaled FP4 MMA of `tcgen05.mma` ([`BlockScaledB`]) and the
//! f16/bf16 `wgmma` ([`half_rows`]).
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

use crate::emu::fp::{self, BF16, F16, Fmt, Val};

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

/// Defines `fn $name`, whose body runs compiled for AVX2 where the CPU has
/// it and for the baseline otherwise.
macro_rules! vectorised {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$doc])*
        fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if use_avx2() {
                // SAFETY: `use_avx2` is true only where the CPU has AVX2.
                return unsafe { avx2($($arg),*) };
            }
            body($($arg),*)
        }
    };
}

/// Whether the AVX2 copies run: where the CPU has AVX2, unless a test
/// asks for the baseline ones.
#[cfg(target_arch = "x86_64")]
fn use_avx2() -> bool {
    #[cfg(test)]
    if tests::BASELINE.get() {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx2")
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

/// A wgmma operand value decoded: its value (negated where asked; 0 for
/// zeros, infinities and NaN), its leading exponent (`NONE` for those),
/// the exponent of its lowest set bit (`ABSENT` for those), and whether it
/// is an infinity or NaN.
///
/// Branch-free on the bits (it runs for every operand of every wgmma):
/// `be`/`frac` the fields, subnormals at the least exponent, unnormalised.
#[inline(always)]
fn half_parts(bits: u16, f: Fmt, neg: bool) -> (f64, i32, i32, bool) {
    let (x, ones) = (u32::from(bits), (1u32 << f.exp) - 1);
    let (be, frac) = (x >> f.man & ones, x & ((1 << f.man) - 1));
    let special = be == ones;
    let live = !special && (be | frac) != 0;
    let m = frac | if be != 0 { 1 << f.man } else { 0 };
    let e = be.max(1) as i32 - f.bias() - f.man as i32;
    let v = f64::from(m as i32) * pow2(e);
    let v = if (x >> (f.exp + f.man) != 0) != neg { -v } else { v };
    let low = e + lowest_bit(m);
    if live {
        (v, e + f.man as i32, low, special)
    } else {
        (0.0, NONE, ABSENT, special)
    }
}

/// The position of `m`'s lowest set bit (`m` below 2^24, not 0): that bit
/// as an f32 power of two gives it.
#[inline(always)]
fn lowest_bit(m: u32) -> i32 {
    (((m & m.wrapping_neg()) as i32 as f32).to_bits() >> 23) as i32 - 127
}

/// An f32 accumulator's leading exponent and the exponent of its lowest
/// set bit (`NONE` and `ABSENT` for zero, infinities and NaN).
#[inline(always)]
fn f32_lead_low(bits: u32) -> (i32, i32) {
    let e = (bits >> 23 & 0xFF) as i32;
    let finite_nonzero = e != 0xFF && bits & 0x7FFF_FFFF != 0;
    let m = bits & 0x7F_FFFF | if e == 0 { 0 } else { 1 << 23 };
    let lsb = e.max(1) - 150 + lowest_bit(m);
    if finite_nonzero {
        (e.max(1) - 127, lsb)
    } else {
        (NONE, ABSENT)
    }
}

/// A warp's 16 rows of a `wgmma.mma_async` D (16 x N, row-major f32 bits
/// in `d`, in place): `a` its 16 rows of A, `b` the N rows of B (16
/// K-major f16 or bf16 values each, as bits), `f` their format, `neg` the
/// negations of A and B, `scale_d` whether D is a term.
pub(super) fn half_rows(a: &[[u16; 16]; 16], b: &[[u16; 16]], f: Fmt, neg: (bool, bool), d: &mut [u32], scale_d: bool) {
    RECENT_B.with_borrow_mut(|recent| {
        let same = |l: &HalfB| l.f == f && l.neg == neg.1 && l.rows.first() == b.first() && *l.rows == *b;
        let k = match recent.iter().position(same) {
            Some(k) => k,
            None if recent.len() < RECENT => {
                recent.push(HalfB::new(b, f, neg.1));
                recent.len() - 1
            }
            None => {
                // The oldest entry goes (they are kept in insertion order,
                // rotated).
                recent.rotate_left(1);
                recent[RECENT - 1] = HalfB::new(b, f, neg.1);
                RECENT - 1
            }
        };
        half_rows_with(a, &recent[k], neg.0, d, scale_d);
    });
}

/// How many decoded B operands a thread keeps: the warps of a block
/// multiply the same B (the four of a warpgroup, and often every
/// warpgroup), but a warp runs through several pipeline stages (each a few
/// k16 steps of B) before the next one reaches them.
const RECENT: usize = 48;

thread_local! {
    /// The B operands decoded last on this thread, oldest first.
    static RECENT_B: std::cell::RefCell<Vec<HalfB>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the decoded B operands (the tests decode every B both ways).
#[cfg(test)]
fn forget_b() {
    RECENT_B.with_borrow_mut(Vec::clear);
}

/// B's rows of a wgmma decoded, with the operand they came from: values
/// and leading exponents K-major (`k * n + j`, so that a row of D runs
/// along B's rows), and per row whether it holds an infinity or
/// NaN, its largest leading exponent and its least lowest-bit exponent.
struct HalfB {
    rows: Box<[[u16; 16]]>,
    f: Fmt,
    neg: bool,
    vals: Vec<f64>,
    leads: Vec<i32>,
    special: Vec<bool>,
    lead: Vec<i32>,
    low: Vec<i32>,
}

impl HalfB {
    fn new(b: &[[u16; 16]], f: Fmt, neg: bool) -> HalfB {
        let n = b.len();
        let mut bits = vec![0u16; 16 * n];
        for (j, row) in b.iter().enumerate() {
            for (k, &x) in row.iter().enumerate() {
                bits[k * n + j] = x;
            }
        }
        let mut ops = Decoded::new(16 * n);
        decode(&bits, f, neg, &mut ops);
        let (mut special, mut lead, mut low) = (vec![false; n], vec![NONE; n], vec![ABSENT; n]);
        reduce_b(&ops, &mut special, &mut lead, &mut low);
        HalfB {
            rows: b.into(),
            f,
            neg,
            vals: ops.vals,
            leads: ops.leads,
            special,
            lead,
            low,
        }
    }
}

/// [`half_rows`] with B decoded (`b`), `neg_a` A's negation.
fn half_rows_with(a: &[[u16; 16]; 16], b: &HalfB, neg_a: bool, d: &mut [u32], scale_d: bool) {
    let (n, f) = (b.rows.len(), b.f);
    let mut a_ops = Decoded::new(256);
    decode(a.as_flattened(), f, neg_a, &mut a_ops);
    // Per row of A: whether it holds an infinity or NaN, its largest
    // leading exponent and its least lowest-bit exponent.
    let (mut a_special, mut a_lead, mut a_low) = ([false; 16], [NONE; 16], [ABSENT; 16]);
    for r in 0..16 {
        let row = 16 * r..16 * r + 16;
        a_special[r] = a_ops.special[row.clone()].iter().any(|&s| s);
        a_lead[r] = a_ops.leads[row.clone()].iter().fold(NONE, |m, &l| m.max(l));
        a_low[r] = a_ops.lows[row].iter().fold(ABSENT, |m, &l| m.min(l));
    }
    let mut scratch = HalfScratch {
        emax: vec![0; n],
        inv: vec![0.0; n],
        sum: vec![0.0; n],
    };
    let ops = HalfOps {
        av: a_ops.vals[..].try_into().expect("256 values"),
        al: a_ops.leads[..].try_into().expect("256 exponents"),
        bv: &b.vals,
        bl: &b.leads,
    };
    let any_b_special = b.special.iter().fold(false, |s, &x| s | x);
    let neg = (neg_a, b.neg);
    let mut old = vec![0; n];
    for (r, drow) in d.chunks_exact_mut(n).enumerate() {
        old.copy_from_slice(drow);
        if row_exact((a_lead[r], a_low[r]), &b.lead, &b.low, drow, scale_d) {
            half_row_exact(&ops, r, drow, scale_d);
        } else {
            half_row(&ops, r, drow, scale_d, &mut scratch);
        }
        // Most rows hold no infinity or NaN: one branch-free pass tells.
        let d_special = scale_d && old.iter().fold(false, |s, &o| s | (o >> 23 & 0xFF == 0xFF));
        if !(a_special[r] || any_b_special || d_special) {
            continue;
        }
        for (j, (x, &o)) in drow.iter_mut().zip(&old).enumerate() {
            let d_special = scale_d && o >> 23 & 0xFF == 0xFF;
            if (a_special[r] || b.special[j] || d_special)
                && let Some(bits) = special_dot(&a[r], &b.rows[j], f, neg, scale_d.then_some(o))
            {
                *x = bits;
            }
        }
    }
}

/// wgmma operands decoded one by one ([`half_parts`]): values, leading
/// exponents, lowest-bit exponents and whether each is an infinity or NaN.
struct Decoded {
    vals: Vec<f64>,
    leads: Vec<i32>,
    lows: Vec<i32>,
    special: Vec<bool>,
}

impl Decoded {
    fn new(len: usize) -> Decoded {
        Decoded {
            vals: vec![0.0; len],
            leads: vec![NONE; len],
            lows: vec![ABSENT; len],
            special: vec![false; len],
        }
    }
}

vectorised! {
    /// Decodes `bits` (format `f`, negated if `neg`) into `out`, element
    /// by element: one flat loop over structure-of-arrays outputs, which
    /// the compiler vectorises (with f16's and bf16's fields as constants).
    fn decode(bits: &[u16], f: Fmt, neg: bool, out: &mut Decoded) {
        #[inline(always)]
        fn each(bits: &[u16], f: Fmt, neg: bool, out: &mut Decoded) {
            let n = bits.len();
            let (vals, leads, lows, special) =
                (&mut out.vals[..n], &mut out.leads[..n], &mut out.lows[..n], &mut out.special[..n]);
            for i in 0..n {
                (vals[i], leads[i], lows[i], special[i]) = half_parts(bits[i], f, neg);
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

vectorised! {
    /// Per row `j` of B (decoded K-major in `b`): whether it holds an
    /// infinity or NaN, its largest leading exponent and its least
    /// lowest-bit exponent.
    fn reduce_b(b: &Decoded, special: &mut [bool], lead: &mut [i32], low: &mut [i32]) {
        let n = special.len();
        let (lead, low) = (&mut lead[..n], &mut low[..n]);
        for k in 0..16 {
            let at = k * n..k * n + n;
            let (s, l, w) = (&b.special[at.clone()], &b.leads[at.clone()], &b.lows[at]);
            for j in 0..n {
                special[j] |= s[j];
                lead[j] = lead[j].max(l[j]);
                low[j] = low[j].min(w[j]);
            }
        }
    }
}

vectorised! {
    /// Whether no term of a row of a wgmma's D needs truncating: every
    /// product's lowest bit and D's are at or above `2^(emax - 25)`, with
    /// `emax` bounded by the largest leading exponents of A's row (`a`:
    /// largest leading, least lowest-bit exponent) and B's rows (`b_lead`,
    /// `b_low`) and D's.
    fn row_exact(a: (i32, i32), b_lead: &[i32], b_low: &[i32], d: &[u32], scale_d: bool) -> bool {
        let n = d.len();
        let (b_lead, b_low) = (&b_lead[..n], &b_low[..n]);
        let mut exact = true;
        for j in 0..n {
            let (lead, low) = if scale_d { f32_lead_low(d[j]) } else { (NONE, ABSENT) };
            let unit = (a.0 + b_lead[j]).max(lead) - 25;
            exact &= unit <= a.1 + b_low[j] && unit <= low;
        }
        exact
    }
}

vectorised! {
    /// Row `r` of a wgmma's D (`d`, N f32 bits, in place) where no term
    /// needs truncating ([`row_exact`]), without the infinities and NaN:
    /// the plain sum of the products and D, exact in f64, cast toward zero.
    /// Sixteen columns at a time, their sums kept in registers.
    fn half_row_exact(o: &HalfOps<'_>, r: usize, d: &mut [u32], scale_d: bool) {
        let n = d.len();
        let a: &[f64; 16] = o.av[16 * r..16 * r + 16].try_into().expect("a row of A");
        let mut j0 = 0;
        while j0 < n {
            let w = (n - j0).min(16);
            let mut sum = [0.0f64; 16];
            for (t, &x) in sum.iter_mut().zip(&d[j0..j0 + w]) {
                *t = if scale_d { f32_term(x).0 } else { 0.0 };
            }
            if w == 16 {
                for (k, &x) in a.iter().enumerate() {
                    let b: &[f64; 16] = o.bv[k * n + j0..k * n + j0 + 16].try_into().expect("16 columns");
                    for (t, &y) in sum.iter_mut().zip(b) {
                        *t += x * y;
                    }
                }
            } else {
                for (k, &x) in a.iter().enumerate() {
                    for (t, &y) in sum.iter_mut().zip(&o.bv[k * n + j0..k * n + j0 + w]) {
                        *t += x * y;
                    }
                }
            }
            for (x, &t) in d[j0..j0 + w].iter_mut().zip(&sum) {
                *x = f32_toward_zero(t);
            }
            j0 += w;
        }
    }
}

/// The decoded operands of [`half_row`]: A's values and leading exponents
/// row-major (`16 r + k`), B's K-major (`k * n + j`).
struct HalfOps<'a> {
    av: &'a [f64; 256],
    al: &'a [i32; 256],
    bv: &'a [f64],
    bl: &'a [i32],
}

/// Per column of a row: `emax`, `2^(25 - emax)` and the aligned sum.
struct HalfScratch {
    emax: Vec<i32>,
    inv: Vec<f64>,
    sum: Vec<f64>,
}

vectorised! {
    /// Row `r` of a wgmma's D (`d`, N f32 bits, in place) without the
    /// infinities and NaN (which [`half_rows`] puts in after): 16 products
    /// per element, each with leading exponent `la + lb`, 25 bits below the
    /// largest kept.
    fn half_row(o: &HalfOps<'_>, r: usize, d: &mut [u32], scale_d: bool, s: &mut HalfScratch) {
        let n = d.len();
        let (emax, inv, sum) = (&mut s.emax[..n], &mut s.inv[..n], &mut s.sum[..n]);
        let (bv, bl) = (&o.bv[..16 * n], &o.bl[..16 * n]);
        for (e, &x) in emax.iter_mut().zip(d.iter()) {
            *e = if scale_d { f32_term(x).1 } else { NONE };
        }
        for k in 0..16 {
            let l = o.al[16 * r + k];
            if l != NONE {
                for (e, &m) in emax.iter_mut().zip(&bl[k * n..k * n + n]) {
                    *e = (*e).max(l + m);
                }
            }
        }
        for j in 0..n {
            let e = emax[j].max(FLOOR);
            emax[j] = e;
            inv[j] = pow2(25 - e);
            let dv = if scale_d { f32_term(d[j]).0 } else { 0.0 };
            sum[j] = trunc(dv * inv[j]);
        }
        for k in 0..16 {
            let x = o.av[16 * r + k];
            if x != 0.0 {
                for ((t, &y), &i) in sum.iter_mut().zip(&bv[k * n..k * n + n]).zip(inv.iter()) {
                    *t += trunc(x * y * i);
                }
            }
        }
        for j in 0..n {
            d[j] = f32_toward_zero(sum[j] * pow2(emax[j] - 25));
        }
    }
}

/// The result of an element of a wgmma whose terms include an infinity or
/// a NaN (`None` if none does): NaN operands, `0 * inf` and `inf - inf`
/// give the canonical NaN, infinities otherwise follow IEEE.
fn special_dot(a: &[u16; 16], b: &[u16; 16], f: Fmt, neg: (bool, bool), old: Option<u32>) -> Option<u32> {
    let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
    for (&x, &y) in a.iter().zip(b) {
        match (fp::unpack(u64::from(x), f), fp::unpack(u64::from(y), f)) {
            (Val::Nan, _) | (_, Val::Nan) | (Val::Inf(_), Val::Zero(_)) | (Val::Zero(_), Val::Inf(_)) => nan = true,
            (Val::Inf(_), _) | (_, Val::Inf(_)) => {
                if sign_of(x, f, neg.0) != sign_of(y, f, neg.1) {
                    neg_inf = true;
                } else {
                    pos_inf = true;
                }
            }
            _ => {}
        }
    }
    if let Some(bits) = old {
        match fp::unpack(u64::from(bits), fp::F32) {
            Val::Nan => nan = true,
            Val::Inf(true) => neg_inf = true,
            Val::Inf(false) => pos_inf = true,
            _ => {}
        }
    }
    if nan || (pos_inf && neg_inf) {
        Some(NAN)
    } else if pos_inf || neg_inf {
        Some(fp::F32.inf(neg_inf) as u32)
    } else {
        None
    }
}

/// Whether an operand is negative (after the negation asked for).
fn sign_of(bits: u16, f: Fmt, neg: bool) -> bool {
    (u64::from(bits) >> (f.exp + f.man) & 1 != 0) != neg
}
