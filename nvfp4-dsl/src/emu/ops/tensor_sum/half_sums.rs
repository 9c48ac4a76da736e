//! The f16/bf16 `wgmma` sums ([`half_rows`]), a warp's 16 rows of D at a
//! time. B is decoded once per operand and kept ([`HalfB`]); rows whose
//! terms need no truncation (checked from the operands' exponents) are
//! plain f64 sums, four rows by eight columns at a time; the others
//! truncate each term; infinities and NaN are put in after.

use super::half_parts::{Parts32, decode32, half_parts, lowest_bit};
use super::half_tiles::{BTiles, Chain, Frag, a_rows, fragment_column, narrow_tiles};
use super::{ABSENT, FLOOR, NAN, NONE, f32_term, f32_toward_zero, pow2, trunc};
use crate::emu::fp::{self, BF16, F16, Fmt, Val};

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

/// A warp's 16 rows of a `wgmma.mma_async` D (16 x N, row-major f32 bits:
/// `old` before, `d` after, the columns in [`fragment_column`] order): `a`
/// its 16 rows of A, `b` the N rows of B (16 K-major f16 or bf16 values
/// each, as bits), `f` their format, `neg` the negations of A and B,
/// `scale_d` whether D is a term.
#[cfg(test)]
pub(super) fn half_rows(
    a: &[[u16; 16]; 16],
    b: &[[u16; 16]],
    f: Fmt,
    neg: (bool, bool),
    old: &[u32],
    d: &mut [u32],
    scale_d: bool,
) {
    RECENT_B.with_borrow_mut(|recent| {
        let k = recent.find(b, f, neg.1);
        half_rows_with(a, &recent.entries[k], neg.0, (old, d), scale_d, &mut recent.scratch);
    });
}

/// How many decoded B operands a thread keeps: the warps of a block
/// multiply the same B (the four of a warpgroup, and often every
/// warpgroup), but a warp runs through several pipeline stages (each a few
/// k16 steps of B) before the next one reaches them.
pub(super) const RECENT: usize = 48;

thread_local! {
    /// The B operands decoded last on this thread, and the scratch of the
    /// sums (no allocation per wgmma).
    static RECENT_B: std::cell::RefCell<Recent> = std::cell::RefCell::new(Recent::default());
}

/// Forgets the decoded B operands (the tests decode every B both ways).
#[cfg(test)]
pub(super) fn forget_b() {
    RECENT_B.with_borrow_mut(|r| *r = Recent::default());
}

/// The decoded B operands a thread keeps, replaced oldest first.
#[derive(Default)]
struct Recent {
    entries: Vec<HalfB>,
    /// Once `entries` is full, the oldest one.
    next: usize,
    scratch: HalfScratch,
    /// D before and after, where [`half_rows_frag`] gathers it.
    old: Vec<u32>,
    d: Vec<u32>,
}

impl Recent {
    /// The index of `b` (format `f`, negated if `neg`) decoded, decoding
    /// it in place of the oldest where it is not kept.
    fn find(&mut self, b: &[[u16; 16]], f: Fmt, neg: bool) -> usize {
        if let Some(k) = self.entries.iter().position(|l| l.is(b, f, neg)) {
            return k;
        }
        if self.entries.len() < RECENT {
            self.entries.push(HalfB::new(b, f, neg));
            return self.entries.len() - 1;
        }
        let k = self.next;
        self.next = (k + 1) % RECENT;
        self.entries[k].refill(b, f, neg);
        k
    }
}

/// B's rows of a wgmma decoded, with the operand they came from: values
/// and leading exponents K-major (`k * n + j`, so that a row of D runs
/// along B's rows) in [`fragment_column`] order, as are per row whether
/// it holds an infinity or NaN, its largest leading exponent and its
/// least lowest-bit exponent. A refill reuses the buffers.
pub(super) struct HalfB {
    rows: Vec<[u16; 16]>,
    f: Fmt,
    neg: bool,
    /// The bits K-major, and their lowest-bit exponents and specials (the
    /// decoding's scratch).
    bits: Vec<u16>,
    lows: Vec<i32>,
    specials: Vec<bool>,
    /// The values in f32 (exact).
    vals32: Vec<f32>,
    /// What the tiles take of it.
    tiles: BTiles,
    leads: Vec<i32>,
    special: Vec<bool>,
    lead: Vec<i32>,
    low: Vec<i32>,
    /// The largest magnitude and the least lowest-bit exponent (for
    /// [`narrow_rows`]).
    max_abs: f64,
    bottom: i32,
}

impl HalfB {
    pub(super) fn new(b: &[[u16; 16]], f: Fmt, neg: bool) -> HalfB {
        let mut h = HalfB {
            rows: Vec::new(),
            f,
            neg,
            bits: Vec::new(),
            lows: Vec::new(),
            specials: Vec::new(),
            vals32: Vec::new(),
            tiles: BTiles::default(),
            leads: Vec::new(),
            special: Vec::new(),
            lead: Vec::new(),
            low: Vec::new(),
            max_abs: 0.0,
            bottom: ABSENT,
        };
        h.refill(b, f, neg);
        h
    }

    /// Whether it is `b` (format `f`, negated if `neg`) decoded.
    fn is(&self, b: &[[u16; 16]], f: Fmt, neg: bool) -> bool {
        self.f == f && self.neg == neg && self.rows.first() == b.first() && *self.rows == *b
    }

    /// Its largest magnitude and least lowest-bit exponent (for
    /// [`narrow_row`]).
    pub(super) fn narrow_bounds(&self) -> (f64, i32) {
        (self.max_abs, self.bottom)
    }

    fn refill(&mut self, b: &[[u16; 16]], f: Fmt, neg: bool) {
        let n = b.len();
        (self.f, self.neg) = (f, neg);
        self.rows.clear();
        self.rows.extend_from_slice(b);
        self.bits.resize(16 * n, 0);
        for j in 0..n {
            for (k, &x) in b[fragment_column(n, j)].iter().enumerate() {
                self.bits[k * n + j] = x;
            }
        }
        self.vals32.resize(16 * n, 0.0);
        self.leads.resize(16 * n, 0);
        self.lows.resize(16 * n, 0);
        self.specials.resize(16 * n, false);
        let parts = Parts32 {
            vals: &mut self.vals32,
            leads: &mut self.leads,
            lows: &mut self.lows,
            special: &mut self.specials,
        };
        decode32(&self.bits, f, neg, parts);
        for (v, x) in [(&mut self.lead, NONE), (&mut self.low, ABSENT)] {
            v.clear();
            v.resize(n, x);
        }
        self.special.clear();
        self.special.resize(n, false);
        reduce_b(
            &self.specials,
            &self.leads,
            &self.lows,
            &mut self.special,
            &mut self.lead,
            &mut self.low,
        );
        self.tiles.fill(&self.vals32, &self.lead, &self.low, &self.special);
        self.max_abs = f64::from(max_abs(&self.vals32));
        self.bottom = self.low.iter().fold(ABSENT, |b, &w| b.min(w));
    }
}

/// A wgmma's 16 rows of A decoded (values and leading exponents
/// row-major, `16 r + k`; the values in f32 too, zeros where no row is
/// narrow), and per row whether it holds an infinity or NaN, its largest
/// leading and least lowest-bit exponents and whether it is narrow
/// ([`narrow_rows`]).
struct DecodedA {
    av: [f64; 256],
    al: [i32; 256],
    av32: [[f32; 16]; 16],
    special: [bool; 16],
    lead: [i32; 16],
    low: [i32; 16],
    narrow: [bool; 16],
}

impl DecodedA {
    fn new(a: &[[u16; 16]; 16], b: &HalfB, neg_a: bool) -> DecodedA {
        let (mut av, mut al) = ([0.0; 256], [NONE; 256]);
        let (mut lows, mut specials) = ([ABSENT; 256], [false; 256]);
        let parts = Parts {
            vals: &mut av,
            leads: &mut al,
            lows: &mut lows,
            special: &mut specials,
        };
        decode(a.as_flattened(), b.f, neg_a, parts);
        let (mut special, mut lead, mut low) = ([false; 16], [NONE; 16], [ABSENT; 16]);
        for r in 0..16 {
            let row = 16 * r..16 * r + 16;
            special[r] = specials[row.clone()].iter().any(|&s| s);
            lead[r] = al[row.clone()].iter().fold(NONE, |m, &l| m.max(l));
            low[r] = lows[row].iter().fold(ABSENT, |m, &l| m.min(l));
        }
        let narrow = narrow_rows(&av, &low, b);
        let av32 = if narrow.contains(&true) {
            std::array::from_fn(|r| std::array::from_fn(|k| av[16 * r + k] as f32))
        } else {
            [[0.0; 16]; 16]
        };
        DecodedA {
            av,
            al,
            av32,
            special,
            lead,
            low,
            narrow,
        }
    }

    /// With B decoded (`b`, its values in f64 `bv`).
    fn ops<'a>(&'a self, b: &'a HalfB, bv: &'a [f64]) -> HalfOps<'a> {
        HalfOps {
            av: &self.av,
            al: &self.al,
            bv,
            bl: &b.leads,
            av32: self.av32.as_flattened(),
            bv32: &b.vals32,
        }
    }
}

/// Whether [`half_rows_frag`] sums D (`old`, 16 x N row-major) by tiles
/// alone (`a` with `b` decoded, A negated if `neg_a`).
#[cfg(test)]
pub(super) fn by_tiles(a: &[[u16; 16]; 16], b: &HalfB, neg_a: bool, old: &[u32], scale_d: bool) -> bool {
    let rows = a_rows(a, b.f, neg_a, b.narrow_bounds());
    narrow_tiles(&rows, &b.tiles, (old, &mut vec![0; old.len()]), scale_d)
}

/// [`half_rows`] with D in the accumulator registers (`frag`), in place:
/// D gathered, summed by tiles ([`narrow_tiles`]) where none needs
/// truncating, else all by the general sums, and scattered back; or, as
/// `chain` says, taken from and left in the warp's row-major copy.
pub(in crate::emu::ops) fn half_rows_frag(
    a: &[[u16; 16]; 16],
    b: &[[u16; 16]],
    f: Fmt,
    neg: (bool, bool),
    mut frag: Frag<'_>,
    scale_d: bool,
    chain: Chain<'_>,
) {
    RECENT_B.with_borrow_mut(|recent| {
        let k = recent.find(b, f, neg.1);
        let Recent {
            entries,
            scratch,
            old,
            d,
            ..
        } = recent;
        let b = &entries[k];
        let n = frag.n();
        if scale_d && chain.from {
            std::mem::swap(old, chain.rows);
        }
        old.resize(16 * n, 0);
        d.resize(16 * n, 0);
        if scale_d && !chain.from {
            frag.gather(old);
        }
        let rows = a_rows(a, f, neg.0, b.narrow_bounds());
        if !narrow_tiles(&rows, &b.tiles, (old, d), scale_d) {
            half_rows_decoded(a, &DecodedA::new(a, b, neg.0), b, neg.0, (old, d), scale_d, scratch);
        }
        if chain.to {
            std::mem::swap(d, chain.rows);
        } else {
            frag.scatter(d);
        }
    });
}

/// [`half_rows`] with B decoded (`b`), `neg_a` A's negation.
#[cfg(test)]
pub(super) fn half_rows_with(
    a: &[[u16; 16]; 16],
    b: &HalfB,
    neg_a: bool,
    (old, d): (&[u32], &mut [u32]),
    scale_d: bool,
    s: &mut HalfScratch,
) {
    half_rows_decoded(a, &DecodedA::new(a, b, neg_a), b, neg_a, (old, d), scale_d, s);
}

/// [`half_rows_with`] with A decoded too (`da`).
fn half_rows_decoded(
    a: &[[u16; 16]; 16],
    da: &DecodedA,
    b: &HalfB,
    neg_a: bool,
    (old, d): (&[u32], &mut [u32]),
    scale_d: bool,
    s: &mut HalfScratch,
) {
    let (n, f) = (b.rows.len(), b.f);
    let (a_special, a_lead, a_low, narrow) = (&da.special, &da.lead, &da.low, &da.narrow);
    let HalfScratch { bv, columns } = s;
    bv.clear();
    bv.extend(b.vals32.iter().map(|&v| f64::from(v)));
    columns.fit(n);
    let ops = da.ops(b, bv);
    let exact = rows_exact((a_lead, a_low), (&b.lead, &b.low), old, scale_d);
    half_rows_exact(&ops, (&exact, narrow), old, d, scale_d);
    let any_b_special = b.special.iter().fold(false, |s, &x| s | x);
    let neg = (neg_a, b.neg);
    for (r, (drow, old)) in d.chunks_exact_mut(n).zip(old.chunks_exact(n)).enumerate() {
        if !exact[r] {
            drow.copy_from_slice(old);
            half_row(&ops, r, drow, scale_d, columns);
        }
        // Most rows hold no infinity or NaN: one branch-free pass tells.
        let d_special = scale_d && old.iter().fold(false, |s, &o| s | (o >> 23 & 0xFF == 0xFF));
        if !(a_special[r] || any_b_special || d_special) {
            continue;
        }
        for (j, (x, &o)) in drow.iter_mut().zip(old).enumerate() {
            let d_special = scale_d && o >> 23 & 0xFF == 0xFF;
            if (a_special[r] || b.special[j] || d_special)
                && let Some(bits) = special_dot(&a[r], &b.rows[fragment_column(n, j)], f, neg, scale_d.then_some(o))
            {
                *x = bits;
            }
        }
    }
}

/// wgmma operands decoded one by one ([`half_parts`]): values, leading
/// exponents, lowest-bit exponents and whether each is an infinity or NaN.
struct Parts<'a> {
    vals: &'a mut [f64],
    leads: &'a mut [i32],
    lows: &'a mut [i32],
    special: &'a mut [bool],
}

vectorised! {
    /// Decodes `bits` (format `f`, negated if `neg`) into `out`, element
    /// by element: one flat loop over structure-of-arrays outputs, which
    /// the compiler vectorises (with f16's and bf16's fields as constants).
    fn decode(bits: &[u16], f: Fmt, neg: bool, out: Parts<'_>) {
        #[inline(always)]
        fn each(bits: &[u16], f: Fmt, neg: bool, out: Parts<'_>) {
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
    /// The largest magnitude of `vals` (no NaN): four running maxima, which
    /// the compiler vectorises (a fold with `f64::max` it does not).
    fn max_abs(vals: &[f32]) -> f32 {
        let larger = |m: f32, v: f32| if v.abs() > m { v.abs() } else { m };
        let mut m = [0.0f32; 4];
        let quads = vals.chunks_exact(4);
        let rest = quads.remainder();
        for q in quads {
            for i in 0..4 {
                m[i] = larger(m[i], q[i]);
            }
        }
        rest.iter().chain(&m).fold(0.0, |m, &v| larger(m, v))
    }
}

vectorised! {
    /// Per row `j` of B (decoded K-major: `specials`, `leads`, `lows`):
    /// whether it holds an infinity or NaN, its largest leading exponent
    /// and its least lowest-bit exponent.
    fn reduce_b(
        specials: &[bool],
        leads: &[i32],
        lows: &[i32],
        special: &mut [bool],
        lead: &mut [i32],
        low: &mut [i32],
    ) {
        let n = special.len();
        let (lead, low) = (&mut lead[..n], &mut low[..n]);
        for k in 0..16 {
            let at = k * n..k * n + n;
            let (s, l, w) = (&specials[at.clone()], &leads[at.clone()], &lows[at]);
            for j in 0..n {
                special[j] |= s[j];
                lead[j] = lead[j].max(l[j]);
                low[j] = low[j].min(w[j]);
            }
        }
    }
}

vectorised! {
    /// Per row of a wgmma's D (`d`, 16 x N): whether no term needs
    /// truncating, every product's lowest bit and D's at or above `2^(emax
    /// - 25)`, with `emax` bounded by the largest leading exponents of A's
    /// row and B's rows and D's (`a` and `b`: the rows' largest leading
    /// and least lowest-bit exponents).
    pub(super) fn rows_exact(a: (&[i32; 16], &[i32; 16]), b: (&[i32], &[i32]), d: &[u32], scale_d: bool) -> [bool; 16] {
        let n = b.0.len();
        let (b_lead, b_low) = (b.0, &b.1[..n]);
        let mut out = [true; 16];
        for (r, drow) in d.chunks_exact(n).take(16).enumerate() {
            let (lead_a, low_a) = (a.0[r], a.1[r]);
            let mut exact = true;
            for j in 0..n {
                let (lead, low) = if scale_d { f32_lead_low(drow[j]) } else { (NONE, ABSENT) };
                let unit = (lead_a + b_lead[j]).max(lead) - 25;
                exact &= (unit <= low_a + b_low[j]) & (unit <= low);
            }
            out[r] = exact;
        }
        out
    }
}

/// Per row of A (`av`: its values; `low`: each row's least lowest-bit
/// exponent) whether the sums of its 16 products with every row of B are
/// exact in f32 in any order: every product and partial sum is a multiple
/// of `2^lo`, `lo` the sum of the row's and B's least lowest-bit
/// exponents, and at most the row's sum of magnitudes times B's largest
/// (computed in f64 with a margin for its rounding), so it has at most 24
/// bits where that bound is below `2^(24 + lo)`, and lies inside f32's
/// exponents (subnormals included) where the bound is below `2^120` and
/// `lo >= -149`. A row or a B of zeros is narrow.
pub(super) fn narrow_rows(av: &[f64; 256], low: &[i32; 16], b: &HalfB) -> [bool; 16] {
    std::array::from_fn(|r| {
        let sum = av[16 * r..16 * r + 16].iter().fold(0.0, |s, v| s + v.abs());
        narrow_row(sum, low[r], b.narrow_bounds())
    })
}

/// [`narrow_rows`] for one row: `sum` its magnitudes summed in order,
/// `low` its least lowest-bit exponent, `(max_abs, bottom)` B's largest
/// magnitude and least lowest-bit exponent.
pub(super) fn narrow_row(sum: f64, low: i32, (max_abs, bottom): (f64, i32)) -> bool {
    let lo = low.saturating_add(bottom);
    let bound = sum * max_abs * (1.0 + pow2(-30));
    bound == 0.0 || (bound < pow2((24 + lo).min(120)) && lo >= -149)
}

/// `W` columns from `j0` of rows `r0..r0 + 4` of a wgmma's D where no
/// term needs truncating, without the infinities and NaN: the plain sums
/// of the products and D (`old`), exact in f64 in any order, cast toward
/// zero into `d`. The 4 x W sums stay in registers: 8 independent chains
/// of additions at W = 8. `FUSED`: with fused multiply-adds, which give
/// the same bits (every product is exact in f64). `NARROW`: the products
/// summed in f32 first (exact there: [`narrow_rows`]; twice the lanes a
/// vector), then D added in f64; a zero sum is +0 either way (every chain
/// starts at +0 or D's nonzero value, and an exact zero of a sum of
/// values not both -0 is +0).
#[inline(always)]
fn exact_tile<const W: usize, const FUSED: bool, const NARROW: bool>(
    o: &HalfOps<'_>,
    (r0, j0): (usize, usize),
    old: &[u32],
    d: &mut [u32],
    scale_d: bool,
) {
    let n = d.len() / 16;
    let mut sum = [[0.0f64; W]; 4];
    if NARROW {
        let products = narrow_products::<W, FUSED>(o, (r0, j0));
        for (i, (s, p)) in sum.iter_mut().zip(&products).enumerate() {
            let from: &[u32; W] = old[(r0 + i) * n + j0..][..W].try_into().expect("W columns");
            for ((t, &x), &p) in s.iter_mut().zip(from).zip(p) {
                *t = if scale_d { f32_term(x).0 } else { 0.0 } + f64::from(p);
            }
        }
    } else {
        wide_sums::<W, FUSED>(o, (r0, j0), old, scale_d, &mut sum);
    }
    finish_tile((r0, j0), &sum, d);
}

/// [`exact_tile`]'s sums in f64: D's terms, then the products added.
#[inline(always)]
fn wide_sums<const W: usize, const FUSED: bool>(
    o: &HalfOps<'_>,
    (r0, j0): (usize, usize),
    old: &[u32],
    scale_d: bool,
    sum: &mut [[f64; W]; 4],
) {
    let n = o.bv.len() / 16;
    let a: [&[f64; 16]; 4] = std::array::from_fn(|i| o.av[16 * (r0 + i)..][..16].try_into().expect("a row of A"));
    for (i, s) in sum.iter_mut().enumerate() {
        let from: &[u32; W] = old[(r0 + i) * n + j0..][..W].try_into().expect("W columns");
        for (t, &x) in s.iter_mut().zip(from) {
            *t = if scale_d { f32_term(x).0 } else { 0.0 };
        }
    }
    for k in 0..16 {
        let b: &[f64; W] = o.bv[k * n + j0..][..W].try_into().expect("W columns");
        for (s, a) in sum.iter_mut().zip(&a) {
            let x = a[k];
            for (t, &y) in s.iter_mut().zip(b) {
                *t = if FUSED { x.mul_add(y, *t) } else { *t + x * y };
            }
        }
    }
}

/// [`exact_tile`]'s sums of the products alone, in f32.
#[inline(always)]
fn narrow_products<const W: usize, const FUSED: bool>(o: &HalfOps<'_>, (r0, j0): (usize, usize)) -> [[f32; W]; 4] {
    let n = o.bv32.len() / 16;
    let a: [&[f32; 16]; 4] = std::array::from_fn(|i| o.av32[16 * (r0 + i)..][..16].try_into().expect("a row of A"));
    let mut sum = [[0.0f32; W]; 4];
    for k in 0..16 {
        let b: &[f32; W] = o.bv32[k * n + j0..][..W].try_into().expect("W columns");
        for (s, a) in sum.iter_mut().zip(&a) {
            let x = a[k];
            for (t, &y) in s.iter_mut().zip(b) {
                *t = if FUSED { x.mul_add(y, *t) } else { *t + x * y };
            }
        }
    }
    sum
}

/// Writes [`exact_tile`]'s sums (`sum`, exact) into `d` cast toward zero.
#[inline(always)]
fn finish_tile<const W: usize>((r0, j0): (usize, usize), sum: &[[f64; W]; 4], d: &mut [u32]) {
    let n = d.len() / 16;
    // Most tiles' sums are all in f32's normal range, where dropping the
    // bits below f32's is the cast toward zero.
    let mut outside = 0;
    for s in sum {
        for &t in s {
            outside |= f32_outside(t);
        }
    }
    let normal = outside >> 63 == 0;
    for (i, s) in sum.iter().enumerate() {
        let to: &mut [u32; W] = (&mut d[(r0 + i) * n + j0..][..W]).try_into().expect("W columns");
        if normal {
            for (x, &t) in to.iter_mut().zip(s) {
                *x = f32_truncated(t);
            }
        } else {
            for (x, &t) in to.iter_mut().zip(s) {
                *x = f32_toward_zero(t);
            }
        }
    }
}

/// A word whose top bit says whether `x` is outside f32's normal range
/// (rounded toward zero), so that a tile's words ORed tell whether any
/// is: with `e` its biased f64 exponent, `e - 897` wraps for those below,
/// and `e - 897 + 2^63 - 254` reaches 2^63 for those above.
#[inline(always)]
pub(super) fn f32_outside(x: f64) -> u64 {
    let below = (x.to_bits() >> 52 & 0x7FF).wrapping_sub(1023 - 126);
    below | below.wrapping_add((1 << 63) - 254)
}

/// `x`, in f32's normal range ([`f32_outside`]), rounded toward zero to
/// f32 bits: its sign, exponent rebiased and the top 23 bits of its
/// fraction.
#[inline(always)]
pub(super) fn f32_truncated(x: f64) -> u32 {
    let b = x.to_bits();
    let sign = (b >> 32) as u32 & 0x8000_0000;
    sign | ((b & !(1 << 63)) >> 29).wrapping_sub((1023 - 127) << 23) as u32
}

/// The rows of a wgmma's D (`d`, 16 x N f32 bits; `old` before) in
/// groups of four that hold one where no term needs truncating
/// (`exact.0`), as [`exact_tile`]s, narrow ones 16 columns wide where
/// the group's four rows are narrow (`exact.1`); the caller does the
/// others. Compiled for AVX2 with FMA where the CPU has both, else for
/// the baseline.
fn half_rows_exact(o: &HalfOps<'_>, exact: (&[bool; 16], &[bool; 16]), old: &[u32], d: &mut [u32], scale_d: bool) {
    type Rows<'a> = (&'a [bool; 16], &'a [bool; 16]);
    #[inline(always)]
    fn body<const FUSED: bool>(o: &HalfOps<'_>, (exact, narrow): Rows<'_>, old: &[u32], d: &mut [u32], scale_d: bool) {
        let n = d.len() / 16;
        let (wide, pairs) = (n - n % 8, n - n % 16);
        let groups: [bool; 4] = std::array::from_fn(|g| exact[4 * g..4 * g + 4].contains(&true));
        let narrow: [bool; 4] = std::array::from_fn(|g| !narrow[4 * g..4 * g + 4].contains(&false));
        // Columns outermost: a tile's B (8 or 16 columns of 16 values) is
        // read from the cache's nearest level by all four groups.
        for j0 in (0..pairs).step_by(16) {
            for g in (0..4).filter(|&g| groups[g]) {
                if narrow[g] {
                    exact_tile::<16, FUSED, true>(o, (4 * g, j0), old, d, scale_d);
                } else {
                    exact_tile::<8, FUSED, false>(o, (4 * g, j0), old, d, scale_d);
                    exact_tile::<8, FUSED, false>(o, (4 * g, j0 + 8), old, d, scale_d);
                }
            }
        }
        for j0 in (pairs..wide).step_by(8) {
            for g in (0..4).filter(|&g| groups[g]) {
                exact_tile::<8, FUSED, false>(o, (4 * g, j0), old, d, scale_d);
            }
        }
        for j0 in wide..n {
            for g in (0..4).filter(|&g| groups[g]) {
                exact_tile::<1, FUSED, false>(o, (4 * g, j0), old, d, scale_d);
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn fused(o: &HalfOps<'_>, exact: Rows<'_>, old: &[u32], d: &mut [u32], scale_d: bool) {
        body::<true>(o, exact, old, d, scale_d);
    }
    #[cfg(target_arch = "x86_64")]
    if super::use_avx2() && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { fused(o, exact, old, d, scale_d) };
    }
    body::<false>(o, exact, old, d, scale_d);
}

/// The decoded operands of [`half_row`]: A's values and leading exponents
/// row-major (`16 r + k`), B's K-major (`k * n + j`).
struct HalfOps<'a> {
    av: &'a [f64; 256],
    al: &'a [i32; 256],
    bv: &'a [f64],
    bl: &'a [i32],
    /// `av` and `bv` as f32 (`av` all zeros where no row is narrow).
    av32: &'a [f32],
    bv32: &'a [f32],
}

/// The general sums' scratch: B's values in f64, and per column of a
/// truncating row what [`half_row`] keeps.
#[derive(Default)]
pub(super) struct HalfScratch {
    bv: Vec<f64>,
    columns: Columns,
}

/// Per column of a truncating row: `emax`, `2^(25 - emax)` and the
/// aligned sum.
#[derive(Default)]
struct Columns {
    emax: Vec<i32>,
    inv: Vec<f64>,
    sum: Vec<f64>,
}

impl Columns {
    /// Room for `n` columns.
    fn fit(&mut self, n: usize) {
        self.emax.resize(n, 0);
        self.inv.resize(n, 0.0);
        self.sum.resize(n, 0.0);
    }
}

vectorised! {
    /// Row `r` of a wgmma's D (`d`, N f32 bits, in place) without the
    /// infinities and NaN (which [`half_rows`] puts in after): 16 products
    /// per element, each with leading exponent `la + lb`, 25 bits below the
    /// largest kept.
    fn half_row(o: &HalfOps<'_>, r: usize, d: &mut [u32], scale_d: bool, s: &mut Columns) {
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
