//! The vectorised sums against the scalar models they replaced
//! (`reference.rs`), element for element, on random operands and on the
//! edge cases (every E2M1 pair; zero, subnormal, largest and NaN scales;
//! zero, subnormal, infinite and NaN accumulators; wide exponent gaps that
//! truncate; cancellation), and the models' own cases.

use super::half_parts::{half_parts, half_parts32};
use super::half_sums::{
    self, HalfB, HalfScratch, RECENT, forget_b, half_rows_frag, half_rows_with, narrow_rows, rows_exact,
};
use super::half_tiles::{Chain, Frag, fragment_column};
use super::reference::{self, Op, Scales};
use super::*;
use crate::emu::fp::{BF16, F16, Fmt};

thread_local! {
    /// Run the baseline copies of the vectorised loops, not the AVX2 ones.
    pub(super) static BASELINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Run the AVX2 copies where there are AVX-512 ones too.
    pub(super) static NO_AVX512: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `f()` with the widest copies of the loops the CPU runs, with the AVX2
/// ones and with the baseline ones, which must agree.
fn both_ways<T: PartialEq + std::fmt::Debug>(f: impl Fn() -> T) -> T {
    forget_b();
    let widest = f();
    NO_AVX512.set(true);
    forget_b();
    let avx2 = f();
    BASELINE.set(true);
    forget_b();
    let baseline = f();
    NO_AVX512.set(false);
    BASELINE.set(false);
    assert_eq!(widest, avx2, "the AVX-512 and the AVX2 loops differ");
    assert_eq!(avx2, baseline, "the AVX2 and the baseline loops differ");
    avx2
}

/// A xorshift generator: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// UE4M3 scales the tests favour: zero (either sign), the least
/// subnormal, the largest subnormal, the least normal, one, the largest,
/// NaN (either sign).
const EDGE_SCALES: [u8; 10] = [0x00, 0x80, 0x01, 0x07, 0x08, 0x38, 0x7E, 0xFE, 0x7F, 0xFF];

/// f32 accumulators the tests favour: zeros, the least subnormal, the
/// largest subnormal, the least normal, the largest, infinities, NaNs, 1.
const EDGE_F32: [u32; 13] = [
    0,
    0x8000_0000,
    1,
    0x807F_FFFF,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0xFFC0_0001,
    0x3F80_0000,
    0xBF80_0000,
];

/// An f32 of either sign with an exponent in `lo..hi` and a random
/// significand.
fn f32_near(rng: &mut Rng, lo: i32, hi: i32) -> u32 {
    let e = lo + rng.below((hi - lo) as u64) as i32;
    let m = 1.0 + rng.below(1 << 23) as f32 / (1u32 << 23) as f32;
    let x = m * 2f32.powi(e);
    if rng.below(2) == 0 { x.to_bits() } else { (-x).to_bits() }
}

/// A scale byte: an edge one, one of a narrow range (no truncation) or
/// any byte.
fn scale(rng: &mut Rng) -> u8 {
    match rng.below(3) {
        0 => rng.pick(&EDGE_SCALES),
        1 => 0x30 + rng.below(0x18) as u8,
        _ => rng.next() as u8,
    }
}

/// Runs one block-scaled MMA of `a.len()` rows both ways and compares
/// every element; returns the new D.
fn check_block_scaled(
    a: &[[u8; 32]],
    b: &[[u8; 32]],
    sa: &[[u8; 4]],
    sb: &[[u8; 4]],
    d: &[u32],
    acc: bool,
) -> Vec<u32> {
    let n = b.len();
    let sums = reference::mma_block_sums(a, b);
    let got = both_ways(|| {
        let mut got = d.to_vec();
        let mut rows = BlockScaledB::new(b, sb);
        for (m, row) in got.chunks_exact_mut(n).enumerate() {
            rows.row(&a[m], sa[m], row, acc);
        }
        got
    });
    for (m, row) in got.chunks_exact(n).enumerate() {
        for j in 0..n {
            let old = d[m * n + j];
            let want = reference::block_scaled_sum(
                sums[m * n + j],
                &Scales::of(sa[m]),
                &Scales::of(sb[j]),
                acc.then_some(old),
            );
            assert_eq!(
                row[j], want,
                "row {m} column {j}: scales {:02x?} x {:02x?}, D {old:#010x} (acc {acc}), A {:02x?}, B {:02x?}",
                sa[m], sb[j], a[m], b[j]
            );
        }
    }
    got
}

fn random_rows(rng: &mut Rng, n: usize) -> Vec<[u8; 32]> {
    (0..n).map(|_| std::array::from_fn(|_| rng.next() as u8)).collect()
}

#[test]
fn block_scaled_rows_match_the_scalar_model_on_random_operands() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..300 {
        let (rows, n) = (1 + rng.below(8) as usize, 8 * (1 + rng.below(8) as usize));
        let a = random_rows(&mut rng, rows);
        let b = random_rows(&mut rng, n);
        let sa: Vec<[u8; 4]> = (0..rows).map(|_| std::array::from_fn(|_| scale(&mut rng))).collect();
        let sb: Vec<[u8; 4]> = (0..n).map(|_| std::array::from_fn(|_| scale(&mut rng))).collect();
        let acc = case % 4 != 0;
        let d: Vec<u32> = (0..rows * n)
            .map(|_| match rng.below(3) {
                0 => rng.pick(&EDGE_F32),
                1 => f32_near(&mut rng, -40, 30),
                _ => rng.next() as u32,
            })
            .collect();
        let first = check_block_scaled(&a, &b, &sa, &sb, &d, acc);
        // Cancellation: the same MMA into minus its result (and again
        // into that).
        let minus: Vec<u32> = first.iter().map(|x| x ^ 0x8000_0000).collect();
        let second = check_block_scaled(&a, &b, &sa, &sb, &minus, true);
        check_block_scaled(&a, &b, &sa, &sb, &second, true);
    }
}

#[test]
fn block_scaled_rows_match_the_scalar_model_on_every_e2m1_pair_and_scale_gap() {
    // Row x of A is code x everywhere, row y of B code y: every product of
    // two codes (with -0), in blocks whose scales span the whole UE4M3
    // range, so that terms far below the largest are truncated.
    let a: Vec<[u8; 32]> = (0..16u8).map(|x| [x | x << 4; 32]).collect();
    let b = a.clone();
    let mut rng = Rng(7);
    for _ in 0..40 {
        let sa: Vec<[u8; 4]> = (0..16)
            .map(|_| std::array::from_fn(|_| rng.pick(&[0x01, 0x08, 0x38, 0x7E, 0x77, 0x00])))
            .collect();
        let sb: Vec<[u8; 4]> = (0..16)
            .map(|_| std::array::from_fn(|_| rng.pick(&[0x01, 0x08, 0x38, 0x7E, 0x77, 0x00])))
            .collect();
        let d: Vec<u32> = (0..256).map(|_| f32_near(&mut rng, -30, 30)).collect();
        check_block_scaled(&a, &b, &sa, &sb, &d, false);
        check_block_scaled(&a, &b, &sa, &sb, &d, true);
    }
}

/// One element of a block-scaled MMA: A's and B's rows given as `(k,
/// code)` nibbles (the rest zero).
fn block_element(a: &[(usize, u8)], b: &[(usize, u8)], sa: [u8; 4], sb: [u8; 4], old: Option<u32>) -> u32 {
    let row = |nibbles: &[(usize, u8)]| {
        let mut r = [0u8; 32];
        for &(k, code) in nibbles {
            r[k / 2] |= code << (4 * (k % 2));
        }
        r
    };
    let d = [old.unwrap_or(0)];
    check_block_scaled(&[row(a)], &[row(b)], &[sa], &[sb], &d, old.is_some())[0]
}

#[test]
fn block_scaled_sums_align_to_the_largest_scale_exponent_and_truncate() {
    // Block 1: 0.5 * 0.5 (codes 1) with the least subnormal scales (2^-9
    // each): 2^-20, leading exponent -12.
    let (tiny, one, big) = (0x01, 0x38, 0x78);
    let q = [(16, 1)];
    assert_eq!(
        block_element(&q, &q, [one, tiny, 0, 0], [one, tiny, 0, 0], None),
        2f32.powi(-20).to_bits()
    );
    // A block whose sum is zero still sets the alignment by its scales
    // (2^16 here), and 2^-20 is below 2^(16 - 35): it vanishes.
    assert_eq!(block_element(&q, &q, [big, tiny, 0, 0], [big, tiny, 0, 0], None), 0);
    // Toward zero: a block summing to 1 (codes 2) at scale 1 plus D =
    // 3 * 2^-25 is 1 in f32 (nearest would give 1 + 2^-23).
    let d = (3.0 * 2f32.powi(-25)).to_bits();
    assert_eq!(
        block_element(&[(0, 2)], &[(0, 2)], [one; 4], [one; 4], Some(d)),
        1f32.to_bits()
    );
    // NaN scales (either sign bit) and NaN D; an infinite D stays.
    assert_eq!(
        block_element(&q, &q, [0xFF, one, one, one], [one; 4], None),
        0x7FFF_FFFF
    );
    assert_eq!(
        block_element(&q, &q, [one; 4], [one; 4], Some(0x7FC0_0000)),
        0x7FFF_FFFF
    );
    assert_eq!(
        block_element(&q, &q, [one; 4], [one; 4], Some(0xFF80_0000)),
        0xFF80_0000
    );
    // A zero sum is +0: 1 - 1 with D = -0.
    assert_eq!(
        block_element(
            &[(0, 2), (16, 10)],
            &[(0, 2), (16, 2)],
            [one; 4],
            [one; 4],
            Some(0x8000_0000)
        ),
        0
    );
}

fn f16(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// A wgmma operand value the tests favour: mostly one of an exponent
/// window, else an edge one (zeros, the least and largest subnormal, the
/// least normal, the largest) or, with `specials`, an infinity, a NaN or
/// any bits. `short`: window values of at most 3 significant bits, or
/// zeros (as the sm_90a GEMM's decoded FP4), whose sums often need no
/// truncation.
fn half_value(rng: &mut Rng, f: Fmt, window: (u64, u64), specials: bool, short: bool) -> u16 {
    let bits = f.exp + f.man;
    let sign = (rng.below(2) << bits) as u16;
    let exp_ones = (1u64 << f.exp) - 1;
    let window_value = |rng: &mut Rng| {
        let e = window.0 + rng.below(window.1 - window.0);
        let m = rng.below(1 << f.man);
        let m = if short { m & 3 << (f.man - 2) } else { m };
        sign | (e << f.man | m) as u16
    };
    if short {
        return if rng.below(8) == 0 { sign } else { window_value(rng) };
    }
    match rng.below(8) {
        0..5 => window_value(rng),
        5 => {
            let edges = [
                1,
                (1 << f.man) - 1,
                1 << f.man,
                (exp_ones - 1) << f.man | ((1 << f.man) - 1),
            ];
            sign | rng.pick(&edges) as u16
        }
        6 => sign,
        _ if !specials => window_value(rng),
        _ if rng.below(2) == 0 => rng.next() as u16,
        _ => sign | rng.pick(&[exp_ones << f.man, exp_ones << f.man | 1]) as u16,
    }
}

/// [`half_sums::half_rows`] with D's columns in their natural order; with
/// `regs`, [`half_rows_frag`] on D scattered into a warp's accumulator
/// registers (N a multiple of 8) instead.
fn half_rows(
    a: &[[u16; 16]; 16],
    b: &[[u16; 16]],
    f: Fmt,
    neg: (bool, bool),
    (old, d): (&[u32], &mut [u32]),
    scale_d: bool,
    regs: bool,
) {
    let n = b.len();
    let at = |i: usize| i - i % n + fragment_column(n, i % n);
    let old: Vec<u32> = (0..16 * n).map(|i| old[at(i)]).collect();
    let mut got = vec![0; 16 * n];
    if regs {
        // The accumulators in registers 3, 5, 7, ... of 2 + N registers,
        // the others poisoned.
        let dregs: Vec<u32> = (0..n as u32 / 2).map(|i| 3 + 2 * i).collect();
        let mut file = vec![0xDEAD_BEEF_DEAD_BEEF; 32 * (2 + n)];
        let mut frag = Frag {
            regs: &mut file,
            d: &dregs,
        };
        for r in 0..16 {
            for c in 0..n / 8 {
                frag.set(r, c, old[r * n + 8 * c..][..8].try_into().unwrap());
            }
        }
        let chain = Chain {
            rows: &mut Vec::new(),
            from: false,
            to: false,
        };
        half_rows_frag(a, b, f, neg, frag, scale_d, chain);
        let frag = Frag {
            regs: &mut file,
            d: &dregs,
        };
        for r in 0..16 {
            for c in 0..n / 8 {
                got[r * n + 8 * c..][..8].copy_from_slice(&frag.get(r, c));
            }
        }
        let held: Vec<usize> = dregs.iter().map(|&r| r as usize).collect();
        for (r, lanes) in file.chunks_exact(32).enumerate() {
            if !held.contains(&r) {
                assert!(
                    lanes.iter().all(|&x| x == 0xDEAD_BEEF_DEAD_BEEF),
                    "register {r} written"
                );
            }
        }
    } else {
        half_sums::half_rows(a, b, f, neg, &old, &mut got, scale_d);
    }
    for (i, x) in got.into_iter().enumerate() {
        d[at(i)] = x;
    }
}

/// Runs a warp's part of a wgmma both ways and compares every element;
/// returns the new D.
fn check_half(a: &[[u16; 16]; 16], b: &[[u16; 16]], f: Fmt, neg: (bool, bool), d: &[u32], scale_d: bool) -> Vec<u32> {
    let n = b.len();
    let got = both_ways(|| {
        let mut got = vec![0; d.len()];
        half_rows(a, b, f, neg, (d, &mut got), scale_d, false);
        got
    });
    if n.is_multiple_of(8) {
        let in_regs = both_ways(|| {
            let mut got = vec![0; d.len()];
            half_rows(a, b, f, neg, (d, &mut got), scale_d, true);
            got
        });
        assert_eq!(in_regs, got, "in registers and gathered");
    }
    for (r, row) in a.iter().enumerate() {
        let ops = |v: &[u16; 16], neg| -> [Op; 16] { v.map(|x| Op::of(u64::from(x), f, neg)) };
        for j in 0..n {
            let old = d[r * n + j];
            let want = reference::dot(&ops(row, neg.0), &ops(&b[j], neg.1), scale_d.then_some(old));
            assert_eq!(
                got[r * n + j],
                want,
                "row {r} column {j}: D {old:#010x} (scale-d {scale_d}), negated {neg:?}, A {row:04x?}, B {:04x?}",
                b[j]
            );
        }
    }
    got
}

#[test]
fn half_rows_match_the_scalar_model_on_random_operands() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for case in 0..400 {
        let f = if case % 2 == 0 { F16 } else { BF16 };
        let n = 8 * (1 + rng.below(6) as usize);
        // A narrow window (few truncations) or a wide one; specials in a
        // quarter of the cases.
        let top = (1u64 << f.exp) - 1;
        let lo = 1 + rng.below(top - 2);
        let window = if case % 3 == 0 {
            (1, top)
        } else {
            (lo, (lo + 1 + rng.below(8)).min(top))
        };
        let (specials, short) = (case % 4 == 1, case % 7 < 3);
        let value = |rng: &mut Rng| half_value(rng, f, window, specials, short);
        let a: [[u16; 16]; 16] = std::array::from_fn(|_| std::array::from_fn(|_| value(&mut rng)));
        let b: Vec<[u16; 16]> = (0..n).map(|_| std::array::from_fn(|_| value(&mut rng))).collect();
        let neg = (rng.below(2) == 0, rng.below(2) == 0);
        let scale_d = case % 5 != 0;
        // Accumulators a few binades below the largest products: their low
        // bits straddle the unit.
        let top_product = (2 * (window.1 as i32 - 1 - f.bias())).clamp(-120, 120);
        let d: Vec<u32> = (0..16 * n)
            .map(|_| match rng.below(4) {
                0 => rng.pick(&EDGE_F32),
                1 => f32_near(&mut rng, -30, 10),
                2 => f32_near(&mut rng, top_product - 6, top_product + 1),
                _ => rng.next() as u32,
            })
            .collect();
        let first = check_half(&a, &b, f, neg, &d, scale_d);
        let minus: Vec<u32> = first.iter().map(|x| x ^ 0x8000_0000).collect();
        let second = check_half(&a, &b, f, neg, &minus, true);
        check_half(&a, &b, f, neg, &second, true);
    }
}

#[test]
fn half_rows_mix_plain_and_truncating_rows_in_a_group_of_four() {
    // Short values a few binades apart sum exactly; a subnormal in a row
    // of A puts products below the unit, so that row truncates. Rows 1,
    // 4, 7, 10 and the whole last group of four truncate.
    let truncating = |r: usize| r % 3 == 1 || r >= 12;
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    for n in [8, 16, 24, 3] {
        let mut value = || half_value(&mut rng, F16, (12, 18), false, true);
        let b: Vec<[u16; 16]> = (0..n).map(|_| std::array::from_fn(|_| value())).collect();
        let a_rows: [[u16; 16]; 16] = std::array::from_fn(|r| {
            let mut row: [u16; 16] = std::array::from_fn(|_| value());
            if truncating(r) {
                row[5] = 0x0001;
            }
            row
        });
        let d: Vec<u32> = (0..16 * n).map(|_| f32_near(&mut rng, -2, 4)).collect();
        // Each row's largest leading and least lowest-bit exponent.
        let lead_low = |rows: &[[u16; 16]]| -> (Vec<i32>, Vec<i32>) {
            rows.iter()
                .map(|row| {
                    row.iter()
                        .fold((NONE, ABSENT), |(l, w), &x| match Op::of(u64::from(x), F16, false) {
                            Op::Fin { m, e, lead } if m != 0 => (l.max(lead), w.min(e + m.trailing_zeros() as i32)),
                            _ => (l, w),
                        })
                })
                .unzip()
        };
        let ((a_lead, a_low), (b_lead, b_low)) = (lead_low(&a_rows), lead_low(&b));
        let a = (&a_lead[..].try_into().unwrap(), &a_low[..].try_into().unwrap());
        let exact = rows_exact(a, (&b_lead, &b_low), &d, false);
        assert_eq!(exact, std::array::from_fn(|r| !truncating(r)), "N = {n}");
        check_half(&a_rows, &b, F16, (false, false), &d, false);
        check_half(&a_rows, &b, F16, (true, false), &d, true);
    }
}

#[test]
fn narrow_rows_sum_in_f32_only_where_every_partial_sum_fits_24_bits() {
    // Short values a few binades apart (as the sm_90a GEMM's decoded
    // FP4) sum in f32, with a row of B of 1 + 2^-10 too; row 3 spans 2^15
    // down to 2^-24 (a subnormal), and row 9 (16 times 4095) times that
    // row of B passes 2^24 units of 2^-10: those two do not.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for n in [8, 16, 32, 40] {
        let mut value = || half_value(&mut rng, F16, (12, 16), false, true);
        let b: Vec<[u16; 16]> = (0..n).map(|_| std::array::from_fn(|_| value())).collect();
        let mut a: [[u16; 16]; 16] = std::array::from_fn(|_| std::array::from_fn(|_| value()));
        (a[3][0], a[3][1]) = (0x7800, 0x0001);
        a[9] = [0x6BFF; 16];
        let mut b_ones = b.clone();
        b_ones[0] = [0x3C01; 16];
        let low = |row: &[u16; 16]| {
            row.iter().fold(ABSENT, |w, &x| match Op::of(u64::from(x), F16, false) {
                Op::Fin { m, e, .. } if m != 0 => w.min(e + m.trailing_zeros() as i32),
                _ => w,
            })
        };
        let av: [f64; 256] = std::array::from_fn(|i| half::f16::from_bits(a[i / 16][i % 16]).to_f64());
        let a_low: [i32; 16] = std::array::from_fn(|r| low(&a[r]));
        let narrow = narrow_rows(&av, &a_low, &HalfB::new(&b_ones, F16, false));
        assert_eq!(narrow, std::array::from_fn(|r| r != 3 && r != 9), "N = {n}");
        let d: Vec<u32> = (0..16 * n).map(|_| f32_near(&mut rng, -2, 4)).collect();
        check_half(&a, &b_ones, F16, (false, true), &d, false);
        check_half(&a, &b, F16, (true, false), &d, true);
    }
}

#[test]
fn tiles_in_registers_take_the_gemms_operands_and_leave_the_others() {
    // Short values (as the sm_90a GEMM's decoded FP4) and short
    // accumulators a few binades around them: every tile passes its
    // checks. Then one
    // change each that some tile must not take (the general sums
    // compute D): an accumulator with bits below the unit, one too large
    // for the products' lowest bits, an infinite one, an A row that is not
    // narrow (a subnormal), an infinity in B, a narrow row whose products'
    // lowest bits may lie 26 binades below their largest (a subnormal's
    // leading exponent is the least normal one: 2^-24 times 2^-11 and
    // 2^5), N = 24 (a half tile).
    let mut rng = Rng(0x1405_7B7E_F767_814F);
    for case in 0..60 {
        let n = [16, 32, 128][case % 3];
        let neg = (case % 2 == 0, case % 4 < 2);
        let mut value = || half_value(&mut rng, F16, (12, 17), false, true);
        let mut a: [[u16; 16]; 16] = std::array::from_fn(|_| std::array::from_fn(|_| value()));
        let mut b: Vec<[u16; 16]> = (0..n).map(|_| std::array::from_fn(|_| value())).collect();
        let change = case % 8;
        if change == 7 {
            b.resize(24, b[0]);
        }
        let n = b.len();
        // 12 significant bits at most, as sums of such products.
        let mut d: Vec<u32> = (0..16 * n).map(|_| f32_near(&mut rng, -2, 6) & !0xFFF).collect();
        let scale_d = case % 5 != 0;
        let at = rng.below(16 * n as u64) as usize;
        match change {
            0 => {}
            1 => d[at] = f32_near(&mut rng, -30, -29) | 1,
            2 => d[at] = f32_near(&mut rng, 40, 41),
            3 => d[at] = 0xFF80_0000,
            4 => a[at % 16][3] = 0x0001,
            5 => b[at % n][7] = 0x7C00,
            6 => {
                a[at % 16] = [0; 16];
                a[at % 16][0] = 0x0001;
                (b[at % n][0], b[at % n][1]) = (0x1000, 0x5000);
            }
            _ => {}
        }
        forget_b();
        let old: Vec<u32> = (0..16 * n).map(|i| d[i - i % n + fragment_column(n, i % n)]).collect();
        let tiles = half_sums::by_tiles(&a, &HalfB::new(&b, F16, neg.1), neg.0, &old, scale_d);
        // Without D, its changes do not matter.
        let taken = change == 0 || (!scale_d && (1..=3).contains(&change));
        assert_eq!(tiles, taken, "case {case}: change {change}, scale-d {scale_d}");
        check_half(&a, &b, F16, neg, &d, scale_d);
    }
}

#[test]
fn operands_decode_alike_in_f32_and_f64() {
    for f in [F16, BF16] {
        for neg in [false, true] {
            for bits in 0..=u16::MAX {
                let (v, lead, low, special) = half_parts(bits, f, neg);
                let (v32, lead32, low32, special32) = half_parts32(bits, f, neg);
                assert_eq!(
                    (f64::from(v32).to_bits(), lead32, low32, special32),
                    (v.to_bits(), lead, low, special),
                    "{bits:#06x} ({}), negated {neg}",
                    if f == F16 { "f16" } else { "bf16" }
                );
            }
        }
    }
}

#[test]
fn truncating_a_normal_sum_is_the_cast_toward_zero() {
    let mut rng = Rng(0xC2B2_AE3D_27D4_EB4F);
    let least = f64::from(f32::MIN_POSITIVE);
    let edges = [
        least,
        least * (1.0 + 2f64.powi(-40)),
        2f64.powi(127) * (2.0 - 2f64.powi(-30)),
        1.0,
        1.0 - 2f64.powi(-53),
    ];
    let random = (0..10_000).map(|_| f64::from_bits(rng.next() >> 12 | ((1023 - 126 + rng.below(254)) << 52)));
    for x in edges.into_iter().chain(random) {
        for x in [x, -x] {
            assert_eq!(half_sums::f32_outside(x) >> 63, 0, "{x:e}");
            assert_eq!(half_sums::f32_truncated(x), f32_toward_zero(x), "{x:e}");
        }
    }
    for x in [
        0.0,
        least * 0.5,
        least * (1.0 - 2f64.powi(-40)),
        2f64.powi(128),
        2f64.powi(1000),
    ] {
        for x in [x, -x] {
            assert_eq!(half_sums::f32_outside(x) >> 63, 1, "{x:e}");
        }
    }
}

#[test]
fn half_rows_reuse_a_decoded_b_only_for_the_same_operand() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let value = |rng: &mut Rng| half_value(rng, F16, (8, 24), false, false);
    let random_b = |rng: &mut Rng| -> Vec<[u16; 16]> { (0..16).map(|_| std::array::from_fn(|_| value(rng))).collect() };
    let b = random_b(&mut rng);
    let mut changed = b.clone();
    changed[5][3] ^= 1;
    // The same B twice, then its negation, one bit changed, B again, more
    // B operands than are kept, and B again.
    let mut cases = vec![
        (b.clone(), false),
        (b.clone(), false),
        (b.clone(), true),
        (changed, true),
        (b.clone(), true),
    ];
    cases.extend((0..RECENT + 2).map(|_| (random_b(&mut rng), false)));
    cases.push((b, false));
    forget_b();
    for (b, neg_b) in &cases {
        let mut a: [[u16; 16]; 16] = std::array::from_fn(|_| std::array::from_fn(|_| value(&mut rng)));
        a[0][3] = f16(1.0);
        let d: Vec<u32> = (0..16 * b.len()).map(|_| f32_near(&mut rng, -4, 4)).collect();
        let mut got = vec![0; d.len()];
        half_sums::half_rows(&a, b, F16, (false, *neg_b), &d, &mut got, true);
        let mut fresh = vec![0; d.len()];
        let fresh_b = HalfB::new(b, F16, *neg_b);
        half_rows_with(&a, &fresh_b, false, (&d, &mut fresh), true, &mut HalfScratch::default());
        assert_eq!(got, fresh, "B negated {neg_b}");
    }
}

/// One element of a wgmma (row 0 of A, one row of B), both ways.
fn dot(a: &[u16; 16], b: &[u16; 16], f: Fmt, old: Option<u32>) -> u32 {
    let mut rows = [[0u16; 16]; 16];
    rows[0] = *a;
    let mut d = [0u32; 16];
    d[0] = old.unwrap_or(0);
    check_half(&rows, &[*b], f, (false, false), &d, old.is_some())[0]
}

#[test]
fn dot_truncates_below_the_largest_term_and_toward_zero() {
    let mut a = [f16(0.0); 16];
    let mut b = [f16(0.0); 16];
    // 1 + 3 * 2^-25: the exact sum rounds to 1 + 2^-23; the H100 keeps 25
    // bits below the largest term (3 units of 2^-25) and truncates the f32
    // result to 1.
    a[0] = f16(1.0);
    b[0] = f16(1.0);
    a[1] = f16(3.0 * 2f32.powi(-13));
    b[1] = f16(2f32.powi(-12));
    assert_eq!(dot(&a, &b, F16, None), 1.0f32.to_bits());
    // Against -1, the same 3 units are exact: 3 * 2^-25.
    assert_eq!(
        dot(&a, &b, F16, Some((-1.0f32).to_bits())),
        (3.0 * 2f32.powi(-25)).to_bits()
    );
    // D's bits below the unit go too: 1 - (1/8 + 2^-26) is 7/8 (exactly
    // summed and truncated once it would be 7/8 - 2^-24).
    let mut one = [f16(0.0); 16];
    one[0] = f16(1.0);
    let d = -(0.125 + 2f32.powi(-26));
    assert_eq!(dot(&one, &one, F16, Some(d.to_bits())), 0.875f32.to_bits());
    // A term below 2^(emax - 25) vanishes, even many of them.
    for i in 1..16 {
        a[i] = f16(2f32.powi(-13));
        b[i] = f16(2f32.powi(-13));
    }
    assert_eq!(dot(&a, &b, F16, None), 1.0f32.to_bits());
    // The leading exponent of a product is the sum of its factors': 1.5 *
    // 1.5 = 2.25 aligns at 2^0, not 2^1, so fifteen terms of 2^-25 survive
    // (1.875 f32 units of 2^-22, truncated to one).
    let mut a = [f16(2f32.powi(-13)); 16];
    let mut b = [f16(2f32.powi(-12)); 16];
    a[0] = f16(1.5);
    b[0] = f16(1.5);
    assert_eq!(dot(&a, &b, F16, None), (2.25f32 + 2f32.powi(-22)).to_bits());
    // An overflow is an infinity, not the largest finite value.
    let big = [half::bf16::from_f32(2f32.powi(64)).to_bits(); 16];
    assert_eq!(dot(&big, &big, BF16, None), f32::INFINITY.to_bits());
    assert_eq!(dot(&big, &big, BF16, Some(f32::MAX.to_bits())), f32::INFINITY.to_bits());
}

#[test]
fn dot_specials_and_zeros() {
    let mut a = [f16(0.0); 16];
    let mut b = [f16(0.0); 16];
    a[0] = f16(1.0);
    b[0] = f16(1.0);
    // inf * 0 and inf - inf are NaN; an infinity otherwise wins.
    a[3] = f16(f32::INFINITY);
    assert_eq!(dot(&a, &b, F16, None), 0x7FFF_FFFF, "inf * 0");
    b[3] = f16(-2.0);
    assert_eq!(dot(&a, &b, F16, None), f32::NEG_INFINITY.to_bits());
    assert_eq!(dot(&a, &b, F16, Some(f32::INFINITY.to_bits())), 0x7FFF_FFFF);
    a[4] = 0x7E00;
    assert_eq!(dot(&a, &b, F16, None), 0x7FFF_FFFF);
    // A zero sum is +0, even from -0 + -0 or from cancellation.
    let z = [f16(-0.0); 16];
    assert_eq!(dot(&z, &z, F16, Some((-0.0f32).to_bits())), 0);
    let mut a = [f16(0.0); 16];
    let b = [f16(1.0); 16];
    a[0] = f16(-1.0);
    assert_eq!(dot(&a, &b, F16, Some(1.0f32.to_bits())), 0);
}

/// Results recorded on an H100 (driver 580, 2026-11-23) by wgmma kernels
/// over random f16 and bf16 operands (subnormals, wide exponents, NaN and
/// infinity included) chaining 2 or 3 K steps into one accumulator, mostly
/// ones where the exact sum rounded once would differ. A line: format,
/// steps, the initial accumulator (`-` for scale-d false), A's 16 * steps
/// values, B's, the final f32 (hex). All 45056 recorded results (8
/// kernels, 2 to 8 steps) matched the model; these are a sample.
#[test]
fn dot_matches_results_recorded_on_an_h100() {
    let data = include_str!("../wgmma_h100.txt");
    let mut checked = 0;
    for (no, line) in data.lines().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        let fmt = if f[0] == "bf16" { BF16 } else { F16 };
        let steps: usize = f[1].parse().unwrap();
        let mut acc = (f[2] != "-").then(|| u32::from_str_radix(f[2], 16).unwrap());
        let values = |hex: &str| -> Vec<u16> {
            (0..16 * steps)
                .map(|i| u16::from_str_radix(&hex[4 * i..4 * i + 4], 16).unwrap())
                .collect()
        };
        let (a, b) = (values(f[3]), values(f[4]));
        let want = u32::from_str_radix(f[5], 16).unwrap();
        for s in 0..steps {
            let step = |v: &[u16]| -> [u16; 16] { v[16 * s..16 * s + 16].try_into().unwrap() };
            acc = Some(dot(&step(&a), &step(&b), fmt, acc));
        }
        assert_eq!(acc, Some(want), "line {}", no + 1);
        checked += 1;
    }
    assert_eq!(checked, 76);
}
