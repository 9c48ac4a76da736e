//! The f16/bf16 `wgmma` sums straight in the accumulator registers
//! ([`Frag`]), where they need no truncation: a tile of four rows by 16
//! columns sums its products in f32 (exact: [`narrow_rows`]), reads D from
//! D's copy, checks per element that no term needs truncating and adds D
//! rounded toward zero, in one pass. Where a tile fails a check, the
//! general sums (`half_rows_with`) compute the whole of D.
//!
//! [`narrow_rows`]: super::half_sums::narrow_rows

use super::half_parts::{Parts32, decode32};
use super::half_sums::narrow_row;
use super::{ABSENT, NONE};
use crate::emu::fp::Fmt;

/// A warp's 16 x N part of a wgmma's D in its accumulator registers:
/// register `4i + q` of lane `(g, t)` (`g = lane / 4`, `t = lane % 4`)
/// holds row `g + 8 (q / 2)`, column `8i + 2t + q % 2`, so pair `p` of
/// registers (`2p` and `2p + 1`) holds columns `8 (p / 2)..+ 8` of rows
/// `8 (p % 2)..+ 8`, a row in 4 lanes of each: the first register's 4
/// lanes (the even columns), then the second's (the odd ones), which is
/// [`fragment_column`] order.
pub(in crate::emu::ops) struct Frag<'a> {
    /// The warp's registers, 32 lanes each (`regs[32 r + lane]`).
    pub regs: &'a mut [u64],
    /// The N / 2 accumulator registers, in order.
    pub d: &'a [u32],
}

/// D's row-major copy ([`Frag::gather`]'s order) that a warp keeps
/// between two `wgmma.mma_async` on the same accumulators: while a later
/// pending one holds the registers, no other instruction may read or
/// write them, so the first one's D need not go through them.
pub(in crate::emu::ops) struct Chain<'a> {
    /// The copy.
    pub rows: &'a mut Vec<u32>,
    /// Whether `rows` holds D now (the registers are stale).
    pub from: bool,
    /// Whether D is left in `rows` rather than written to the registers.
    pub to: bool,
}

impl Frag<'_> {
    /// N.
    pub(super) fn n(&self) -> usize {
        2 * self.d.len()
    }

    /// The lanes of register pair `p`'s two registers that hold row `r`.
    #[cfg(test)]
    fn at(&self, r: usize, c: usize) -> [usize; 2] {
        let p = 2 * c + r / 8;
        [0, 1].map(|h| self.d[2 * p + h] as usize * 32 + 4 * (r % 8))
    }

    /// The whole of D into `old` (16 x N, row-major), register by
    /// register: each register's 32 lanes are contiguous, which the
    /// cache's prefetch follows (the tiles' own reads and writes, 4 lanes
    /// of a register at a time between the sums, would wait for memory).
    pub(super) fn gather(&self, old: &mut [u32]) {
        let n = self.n();
        for (q, &r) in self.d.iter().enumerate() {
            let lanes: &[u64; 32] = self.regs[r as usize * 32..][..32].try_into().expect("32 lanes");
            for (g, lanes) in lanes.as_chunks::<4>().0.iter().enumerate() {
                let to: &mut [u32; 4] = (&mut old[at(n, q, g)..][..4]).try_into().expect("4 columns");
                *to = lanes.map(|v| v as u32);
            }
        }
    }

    /// Writes the whole of D from `d` (16 x N, row-major), as
    /// [`Frag::gather`] reads it.
    pub(in crate::emu::ops) fn scatter(&mut self, d: &[u32]) {
        let n = self.n();
        for (q, &r) in self.d.iter().enumerate() {
            let lanes: &mut [u64; 32] = (&mut self.regs[r as usize * 32..][..32]).try_into().expect("32 lanes");
            for (g, lanes) in lanes.as_chunks_mut::<4>().0.iter_mut().enumerate() {
                let from: &[u32; 4] = d[at(n, q, g)..][..4].try_into().expect("4 columns");
                *lanes = from.map(u64::from);
            }
        }
    }

    /// Columns `8c..8c + 8` of row `r` (in fragment order).
    #[cfg(test)]
    pub(super) fn get(&self, r: usize, c: usize) -> [u32; 8] {
        let [lo, hi] = self
            .at(r, c)
            .map(|k| -> [u64; 4] { self.regs[k..k + 4].try_into().expect("4 lanes") });
        std::array::from_fn(|j| if j < 4 { lo[j] } else { hi[j - 4] } as u32)
    }

    /// Writes columns `8c..8c + 8` of row `r`.
    #[cfg(test)]
    pub(super) fn set(&mut self, r: usize, c: usize, x: &[u32; 8]) {
        let [lo, hi] = self.at(r, c);
        for (to, from) in [(lo, &x[..4]), (hi, &x[4..])] {
            for (t, &v) in self.regs[to..to + 4].iter_mut().zip(from) {
                *t = u64::from(v);
            }
        }
    }
}

/// The column of D (and row of B) at place `j` of a row of N in the order
/// [`half_rows`] takes them: in each whole group of eight, the even ones
/// then the odd ones, the order of the lanes of two consecutive wgmma
/// accumulator registers, so that the wgmma gathers D by plain copies; a
/// last group of fewer than eight unchanged.
///
/// [`half_rows`]: super::half_sums::half_rows
pub(super) fn fragment_column(n: usize, j: usize) -> usize {
    if j < n - n % 8 {
        j - j % 8 + 2 * (j % 4) + j % 8 / 4
    } else {
        j
    }
}

/// Where the 4 columns of row `g` or `8 + g` that accumulator register `q`
/// holds are in a row-major D of N columns ([`Frag`]'s layout).
#[inline(always)]
fn at(n: usize, q: usize, g: usize) -> usize {
    let p = q / 2;
    (p % 2 * 8 + g) * n + 8 * (p / 2) + 4 * (q % 2)
}

/// The least and the largest leading exponent a tile's operand row or
/// column is taken at: a product's unit `2^(la + lb - 25)` is then inside
/// f32's normal exponents. A lower one is raised to the least, which
/// asks more of D (a conservative check); a higher one leaves the
/// operand to the general sums.
const LEAD_MIN: i32 = -51;
const LEAD_MAX: i32 = 75;

/// A's rows as the tiles take them: values in f32 (exact); per row its
/// largest leading exponent `la` (at least [`LEAD_MIN`]) as f32 exponent
/// bits (`la << 23`), its least lowest-bit exponent `lowa` and their span
/// `la - lowa`; and whether the tiles may take them (every row narrow,
/// with no infinity or NaN, none above [`LEAD_MAX`]).
pub(super) struct ARows {
    vals: [[f32; 16]; 16],
    scale: [i32; 16],
    low: [i32; 16],
    span: [i32; 16],
    ok: bool,
}

vectorised! {
    /// A's 16 rows (format `f`, negated if `neg`) as the tiles take them,
    /// for a B of largest magnitude and least lowest-bit exponent `b`
    /// ([`narrow_row`]): the values decoded ([`decode32`]), then the rows'
    /// reductions side by side.
    pub(super) fn a_rows(a: &[[u16; 16]; 16], f: Fmt, neg: bool, b: (f64, i32)) -> ARows {
        let (mut vals, mut leads) = ([[0.0; 16]; 16], [[0; 16]; 16]);
        let (mut lows, mut specials) = ([[0; 16]; 16], [[false; 16]; 16]);
        let parts = Parts32 {
            vals: vals.as_flattened_mut(),
            leads: leads.as_flattened_mut(),
            lows: lows.as_flattened_mut(),
            special: specials.as_flattened_mut(),
        };
        decode32(a.as_flattened(), f, neg, parts);
        let (mut lead, mut low, mut special, mut sum) = ([NONE; 16], [ABSENT; 16], [false; 16], [0.0f64; 16]);
        // Each row's magnitudes summed in order.
        for k in 0..16 {
            for r in 0..16 {
                lead[r] = lead[r].max(leads[r][k]);
                low[r] = low[r].min(lows[r][k]);
                special[r] |= specials[r][k];
                sum[r] += f64::from(vals[r][k].abs());
            }
        }
        let ok = (0..16).fold(true, |ok, r| ok & narrow_row(sum[r], low[r], b) & !special[r] & (lead[r] <= LEAD_MAX));
        ARows {
            vals,
            scale: lead.map(|l| l.max(LEAD_MIN) << 23),
            low,
            span: std::array::from_fn(|r| lead[r] - low[r]),
            ok,
        }
    }
}

/// B's side of the tiles, per 16 columns (the whole groups of 16).
#[derive(Default)]
pub(super) struct BTiles {
    /// The values in f32 (exact), K-major.
    vals: Vec<[[f32; 16]; 16]>,
    /// Per column, with `lb` its largest leading exponent (at least
    /// [`LEAD_MIN`]) and `lowb` its least lowest-bit exponent: `(152 -
    /// lb) << 23`, less a row's `la << 23` the f32 bits of `2^-(la + lb -
    /// 25)`, and `lowb + 152`.
    scale: Vec<[i32; 16]>,
    thr: Vec<[i32; 16]>,
    /// The largest `lb - lowb`.
    span: Vec<i32>,
    /// No infinity or NaN, no leading exponent above [`LEAD_MAX`].
    ok: bool,
}

impl BTiles {
    /// From B decoded: `vals` K-major (N columns), per column its largest
    /// leading and least lowest-bit exponents and whether it holds an
    /// infinity or NaN.
    pub(super) fn fill(&mut self, vals: &[f32], lead: &[i32], low: &[i32], special: &[bool]) {
        let n = lead.len();
        let groups = 0..n / 16;
        let col = |t: usize, f: &dyn Fn(usize) -> i32| -> [i32; 16] { std::array::from_fn(|j| f(16 * t + j)) };
        self.vals.clear();
        self.vals.extend(
            groups
                .clone()
                .map(|t| std::array::from_fn(|k| vals[k * n + 16 * t..][..16].try_into().expect("16 columns"))),
        );
        self.scale.clear();
        self.scale
            .extend(groups.clone().map(|t| col(t, &|j| (152 - lead[j].max(LEAD_MIN)) << 23)));
        self.thr.clear();
        self.thr.extend(groups.clone().map(|t| col(t, &|j| low[j] + 152)));
        self.span.clear();
        self.span
            .extend(groups.map(|t| col(t, &|j| lead[j] - low[j]).into_iter().fold(i32::MIN, i32::max)));
        self.ok = !special.contains(&true) && lead.iter().all(|&l| l <= LEAD_MAX);
    }
}

/// D (`old` before, `d` after, 16 x N row-major) by tiles, if every tile
/// passes its checks: returns whether it did (else the general sums must
/// compute the whole of D, `d` holding anything). Compiled for AVX-512F
/// or AVX2, with FMA, where the CPU has them (AVX-512's registers hold a
/// tile's row of 16 in one: about 7% faster on this machine's EPYC), else
/// for the baseline.
pub(super) fn narrow_tiles(a: &ARows, b: &BTiles, (old, d): (&[u32], &mut [u32]), scale_d: bool) -> bool {
    type D<'a> = (&'a [u32], &'a mut [u32]);
    #[inline(always)]
    fn body<const FUSED: bool>(a: &ARows, b: &BTiles, (old, d): D<'_>, scale_d: bool) -> bool {
        let n = d.len() / 16;
        if n % 16 != 0 || !a.ok || !b.ok {
            return false;
        }
        // Columns outermost: a tile's B (16 columns of 16 values) is read
        // from the cache's nearest level by all four groups.
        for c in (0..n / 8).step_by(2) {
            for g in 0..4 {
                if !tile::<FUSED>(a, b, (old, d), (g, c), scale_d) {
                    return false;
                }
            }
        }
        true
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn fused(a: &ARows, b: &BTiles, d: D<'_>, scale_d: bool) -> bool {
        body::<true>(a, b, d, scale_d)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn fused512(a: &ARows, b: &BTiles, d: D<'_>, scale_d: bool) -> bool {
        body::<true>(a, b, d, scale_d)
    }
    #[cfg(target_arch = "x86_64")]
    if super::use_avx512() {
        // SAFETY: the CPU has AVX-512F, AVX2 and FMA.
        return unsafe { fused512(a, b, (old, d), scale_d) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::use_avx2() && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { fused(a, b, (old, d), scale_d) };
    }
    body::<false>(a, b, (old, d), scale_d)
}

/// Rows `4g..4g + 4`, columns `8c..8c + 16` of D, where no product needs
/// truncating (`(la - lowa) + (lb - lowb) <= 25` for every row and
/// column, as `rows_exact`) and every element passes [`add_exact`]'s
/// checks (else it writes nothing and returns false).
#[inline(always)]
fn tile<const FUSED: bool>(
    a: &ARows,
    b: &BTiles,
    (old, d): (&[u32], &mut [u32]),
    (g, c): (usize, usize),
    scale_d: bool,
) -> bool {
    let (n, j0, t) = (d.len() / 16, 8 * c, c / 2);
    if (4 * g..4 * g + 4).any(|r| a.span[r] + b.span[t] > 25) {
        return false;
    }
    let rows: &[[f32; 16]; 4] = a.vals[4 * g..4 * g + 4].try_into().expect("4 rows");
    let products = products::<FUSED>(rows, &b.vals[t]);
    let (scale, thr) = (&b.scale[t], &b.thr[t]);
    let mut out = [[0u32; 16]; 4];
    let mut bad = [false; 16];
    for (i, (out, p)) in out.iter_mut().zip(&products).enumerate() {
        let r = 4 * g + i;
        let x: [u32; 16] = if scale_d {
            old[r * n + j0..][..16].try_into().expect("16 columns")
        } else {
            [0; 16]
        };
        for j in 0..16 {
            let (bits, exact) = add_exact(x[j], p[j], scale[j] - a.scale[r], (thr[j] + a.low[r]).min(254));
            out[j] = bits;
            bad[j] |= !exact;
        }
    }
    let ok = !bad.contains(&true);
    if ok {
        for (i, out) in out.iter().enumerate() {
            d[(4 * g + i) * n + j0..][..16].copy_from_slice(out);
        }
    }
    ok
}

/// The sums of the products of four rows of A (`a`) with 16 columns of B
/// (`b`, K-major), in f32: 8 independent chains of fused or plain
/// multiply-adds, the same bits either way (every product and partial sum
/// is exact). The sums start at +0, so a zero sum is +0.
#[inline(always)]
fn products<const FUSED: bool>(a: &[[f32; 16]; 4], b: &[[f32; 16]; 16]) -> [[f32; 16]; 4] {
    let mut sum = [[0.0f32; 16]; 4];
    for (k, b) in b.iter().enumerate() {
        for (s, a) in sum.iter_mut().zip(a) {
            let x = a[k];
            for (t, &y) in s.iter_mut().zip(b) {
                *t = if FUSED { x.mul_add(y, *t) } else { *t + x * y };
            }
        }
    }
    sum
}

/// D (`x`, f32 bits; +0 where it is no term) plus `p`, the exact sum of
/// its products, rounded toward zero, and whether that is the model's
/// result, given that no product needs truncating: D's lowest bit at or
/// above the unit `2^(la + lb - 25)` (`scale`: the f32 bits of the unit's
/// inverse, so that D times it is an integer; exact unless it underflows,
/// to a non-integer or to a zero that D is not), D's leading exponent
/// (subnormals at -126, as the model's; a zero counted as one) at most
/// `lowa + lowb + 25` (`thr`: that plus 127, at most 254, so that D is
/// finite too), and the sum rounds to a finite f32 (`rows_exact`'s
/// condition, but for a zero D where the products' lowest bit is below
/// 2^-151 and the raised leading exponents: the general sums take those).
///
/// The sum toward zero is the sum to nearest `s` stepped toward zero where
/// the error (exact by Knuth's two-sum, f32 having no overflow here) has
/// the other sign.
#[inline(always)]
fn add_exact(x: u32, p: f32, scale: i32, thr: i32) -> (u32, bool) {
    let lead_ok = ((x >> 23 & 0xFF) as i32).max(1) <= thr;
    let dv = f32::from_bits(x);
    let q = dv * f32::from_bits(scale as u32);
    let low_ok = (q == q.trunc()) & ((q != 0.0) | (dv == 0.0));
    let s = dv + p;
    let pp = s - dv;
    let err = (dv - (s - pp)) + (p - pp);
    let toward = (err != 0.0) & ((s.to_bits() ^ err.to_bits()) >> 31 != 0);
    let finite = s.to_bits() & 0x7F80_0000 != 0x7F80_0000;
    (s.to_bits() - u32::from(toward), lead_ok & low_ok & finite)
}
