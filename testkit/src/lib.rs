//! Test support shared by every crate that checks kernels: the seeded
//! random number generator of test inputs and the exact CPU references of
//! NVFP4 arithmetic (e2m1 values with e4m3 scales, one per 16), so that
//! the emulator's tests, the workspace tests and the kernels crate's host
//! checks agree on both by construction; and, in [`emu`], the harness that
//! runs snapshot PTX on the emulator for its tests and bench.

#![deny(missing_docs)]

pub mod emu;

/// SplitMix64: fast, good enough for test data, reproducible from a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The high 32 bits of the next 64.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A uniform float in `[lo, hi)` from the next 24 high bits.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(n)) >> 32) as u32
    }
}

/// Elements per scale block.
pub const BLOCK: usize = 16;

/// The value of the e2m1 code in the low 4 bits of `code`: sign, 2
/// exponent bits, 1 mantissa bit, bias 1.
pub fn e2m1(code: u8) -> f64 {
    let v = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][usize::from(code & 7)];
    if code & 8 != 0 { -v } else { v }
}

/// The value of an e4m3 byte (`float8_e4m3fn`): bias 7, subnormals, no
/// infinities, `0x7F` and `0xFF` NaN.
pub fn e4m3(byte: u8) -> f64 {
    let (e, m) = (i32::from((byte >> 3) & 15), f64::from(byte & 7));
    let magnitude = if byte & 0x7F == 0x7F {
        f64::NAN
    } else if e == 0 {
        m / 8.0 * 2f64.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    };
    if byte & 0x80 != 0 { -magnitude } else { magnitude }
}

/// Exact block-scaled NVFP4 dot products. Rows are packed e2m1 codes (two
/// per byte, the even element in the low nibble) with one e4m3 scale byte
/// per 16 elements.
///
/// Each block of 16 products of e2m1 values is four times an integer (at
/// most 16 * 144), summed exactly from a table of byte pairs; scaling it by
/// both scales is exact in f64, and so is the sum over the blocks while
/// the partial sums stay below 2^33 (every term is a multiple of 2^-20
/// with at most 20 significant bits): the result is the exact value,
/// whatever the order. A NaN scale gives NaN.
#[derive(Clone, Debug)]
pub struct Nvfp4Dot {
    /// Four times the dot product of the e2m1 pairs of bytes `x` and `y`,
    /// at `x << 8 | y`.
    pairs: Vec<i32>,
    /// The value of every scale byte.
    scales: Vec<f64>,
}

impl Nvfp4Dot {
    /// The products of the values, or with `magnitudes`, of their
    /// absolute values (the largest a sum can be in any order).
    pub fn new(magnitudes: bool) -> Nvfp4Dot {
        let value = |code: u8| if magnitudes { e2m1(code).abs() } else { e2m1(code) };
        let pairs = (0..1usize << 16)
            .map(|i| {
                let (x, y) = ((i >> 8) as u8, i as u8);
                (4.0 * (value(x & 15) * value(y & 15) + value(x >> 4) * value(y >> 4))) as i32
            })
            .collect();
        let scales = (0..=255u8)
            .map(|b| if magnitudes { e4m3(b).abs() } else { e4m3(b) })
            .collect();
        Nvfp4Dot { pairs, scales }
    }

    /// The dot product of rows `a` and `b` (`K / 2` bytes each) with their
    /// scales (`K / 16` bytes each).
    pub fn dot(&self, a: &[u8], a_scales: &[u8], b: &[u8], b_scales: &[u8]) -> f64 {
        let blocks = a.chunks_exact(BLOCK / 2).zip(b.chunks_exact(BLOCK / 2));
        let mut sum = 0.0;
        for ((x, y), (sa, sb)) in blocks.zip(a_scales.iter().zip(b_scales)) {
            let q: i32 = x
                .iter()
                .zip(y)
                .map(|(x, y)| self.pairs[usize::from(*x) << 8 | usize::from(*y)])
                .sum();
            sum += f64::from(q) / 4.0 * self.scales[usize::from(*sa)] * self.scales[usize::from(*sb)];
        }
        sum
    }
}

/// A batched NVFP4 matrix in the task's layout: `[batches][rows][k / 2]`
/// packed codes and `[batches][rows][k / 16]` scales, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct Nvfp4Rows<'a> {
    /// Rows per batch.
    pub rows: usize,
    /// Elements per row.
    pub k: usize,
    /// The packed codes.
    pub data: &'a [u8],
    /// The scales.
    pub scales: &'a [u8],
}

impl<'a> Nvfp4Rows<'a> {
    /// Row `r` of batch `l`: its codes and its scales.
    pub fn row(&self, l: usize, r: usize) -> (&'a [u8], &'a [u8]) {
        let i = l * self.rows + r;
        (
            &self.data[i * self.k / 2..(i + 1) * self.k / 2],
            &self.scales[i * self.k / BLOCK..(i + 1) * self.k / BLOCK],
        )
    }
}

/// `out[l][m][n] = sum_k a(l, m, k) * b(l, n, k)` for `n < b_rows`, exactly
/// (see [`Nvfp4Dot`]), over `batches` batches.
pub fn products(a: Nvfp4Rows<'_>, b: Nvfp4Rows<'_>, b_rows: usize, batches: usize) -> Vec<f64> {
    let dot = Nvfp4Dot::new(false);
    let mut out = Vec::with_capacity(batches * a.rows * b_rows);
    for l in 0..batches {
        for m in 0..a.rows {
            let (x, sx) = a.row(l, m);
            for n in 0..b_rows {
                let (y, sy) = b.row(l, n);
                out.push(dot.dot(x, sx, y, sy));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_reproducible_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let f = a.uniform(-2.0, 3.0);
            assert!((-2.0..3.0).contains(&f));
            assert!(a.below(10) < 10);
            b.uniform(0.0, 1.0);
            b.below(10);
        }
    }

    #[test]
    fn the_dot_product_is_the_exact_sum_of_every_term() {
        let mut rng = Rng::new(3);
        let k = 64;
        let bytes = |rng: &mut Rng, n| (0..n).map(|_| rng.next_u32() as u8).collect::<Vec<u8>>();
        for _ in 0..50 {
            let (a, b) = (bytes(&mut rng, k / 2), bytes(&mut rng, k / 2));
            // Scales in [2^-6, 8): no NaN.
            let mut scale = || (rng.below(0x58) as u8) | (rng.next_u32() as u8 & 0x80);
            let (sa, sb): (Vec<u8>, Vec<u8>) = ((0..4).map(|_| scale()).collect(), (0..4).map(|_| scale()).collect());
            let code = |row: &[u8], i: usize| (row[i / 2] >> (4 * (i % 2))) & 15;
            let want: f64 = (0..k)
                .map(|i| e2m1(code(&a, i)) * e4m3(sa[i / 16]) * e2m1(code(&b, i)) * e4m3(sb[i / 16]))
                .sum();
            assert_eq!(Nvfp4Dot::new(false).dot(&a, &sa, &b, &sb), want);
            let magnitudes: f64 = (0..k)
                .map(|i| (e2m1(code(&a, i)) * e4m3(sa[i / 16]) * e2m1(code(&b, i)) * e4m3(sb[i / 16])).abs())
                .sum();
            assert_eq!(Nvfp4Dot::new(true).dot(&a, &sa, &b, &sb), magnitudes);
        }
        assert!(
            Nvfp4Dot::new(false)
                .dot(&[0x11; 8], &[0x7F], &[0x11; 8], &[0x38])
                .is_nan()
        );
        assert_eq!((e4m3(0x38), e4m3(0x01), e4m3(0xFE)), (1.0, 2f64.powi(-9), -448.0));
    }
}
