//! NVFP4 on the host: the e2m1 and e4m3 codecs and batched K-major NVFP4
//! tensors in the layouts the GPU MODE tasks hand over (plain scales and the
//! 128x4 blocked scales the tensor cores read).
//!
//! An NVFP4 element is an e2m1 code times the e4m3 scale of its block of 16
//! consecutive K elements.

use crate::Error;
use nvfp4_dsl::{E4m3, Fp4x2};

/// The 16 e2m1 values by code (codes 8..15 negative; 8 is -0.0).
pub const E2M1_VALUES: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// Elements per scale: one e4m3 scale covers 16 consecutive K elements.
const BLOCK: usize = 16;

/// The largest finite e4m3 magnitude, code 0x7E.
const E4M3_MAX: f64 = 448.0;

/// The e4m3 NaN (sign bit clear); 0xFF is the other one.
const E4M3_NAN: u8 = 0x7F;

/// The value of the e2m1 code in the low 4 bits of `code` (the high bits are ignored).
pub fn e2m1_to_f32(code: u8) -> f32 {
    E2M1_VALUES[usize::from(code & 0xF)]
}

/// The e2m1 code nearest to `x`: round to nearest, ties to the even code
/// (the one whose mantissa bit is 0), saturating to ±6. The sign is kept,
/// so -0.0 and small negatives that round to zero give code 8 (-0).
///
/// e2m1 has no NaN; NaN maps to code 0 (+0). That is this crate's choice,
/// not necessarily what a device conversion does, so no test should feed
/// NaN to both and compare.
pub fn f32_to_e2m1(x: f32) -> u8 {
    e2m1_from_f64(f64::from(x))
}

/// The value of an e4m3 byte (`float8_e4m3fn`): 1 sign, 4 exponent (bias 7)
/// and 3 mantissa bits; exponent field 0 is subnormal (`m * 2^-9`); 0x7F and
/// 0xFF are NaN; there is no infinity, so the largest magnitude is 448.
pub fn e4m3_to_f32(byte: u8) -> f32 {
    if byte & 0x7F == E4M3_NAN {
        return f32::NAN;
    }
    let exponent_field = i32::from((byte >> 3) & 0xF);
    let mantissa = f64::from(byte & 0x7);
    let magnitude = if exponent_field == 0 {
        mantissa * pow2(-9)
    } else {
        // (1 + m/8) * 2^(e - 7) written as an integer significand times a power of two.
        (8.0 + mantissa) * pow2(exponent_field - 10)
    };
    let magnitude = magnitude as f32; // exact: at most 4 significant bits
    if byte & 0x80 != 0 { -magnitude } else { magnitude }
}

/// The e4m3 byte nearest to `x`: round to nearest, ties to even, saturating
/// finite values and infinities to ±448 (PTX `.satfinite`); NaN gives 0x7F.
/// The sign is kept, so -0.0 gives 0x80.
pub fn f32_to_e4m3(x: f32) -> u8 {
    e4m3_from_f64(f64::from(x))
}

/// Two e2m1 codes in one byte: `even` (the element with the even K index) in
/// the low nibble, `odd` in the high nibble. Only the low 4 bits of each
/// argument are used.
pub fn pack(even: u8, odd: u8) -> Fp4x2 {
    Fp4x2((even & 0xF) | ((odd & 0xF) << 4))
}

/// The two e2m1 codes of a byte, `(even, odd)`: the low nibble first.
pub fn unpack(b: Fp4x2) -> (u8, u8) {
    (b.0 & 0xF, b.0 >> 4)
}

/// 2^n exactly, for the exponents the formats use.
fn pow2(n: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&n));
    f64::from_bits(((1023 + n) as u64) << 52)
}

/// [`f32_to_e2m1`] on f64, so that quotients computed in f64 are rounded once.
fn e2m1_from_f64(x: f64) -> u8 {
    if x.is_nan() {
        return 0;
    }
    let sign = if x.is_sign_negative() { 8 } else { 0 };
    let magnitude = x.abs();
    // MIDPOINTS[i] lies halfway between the magnitudes of codes i and i + 1.
    // Above it code i + 1 is nearer; exactly on it the even code wins, which
    // is code i + 1 when i is odd.
    const MIDPOINTS: [f64; 7] = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0];
    let mut code = 0;
    for (i, &midpoint) in MIDPOINTS.iter().enumerate() {
        if magnitude > midpoint || (magnitude == midpoint && i % 2 == 1) {
            code = i as u8 + 1;
        }
    }
    sign | code
}

/// [`f32_to_e4m3`] on f64, so that `amax / 6` is rounded to e4m3 once.
fn e4m3_from_f64(x: f64) -> u8 {
    if x.is_nan() {
        return E4M3_NAN;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let magnitude = x.abs();
    if magnitude >= E4M3_MAX {
        return sign | 0x7E;
    }
    // Within the binade [2^e, 2^(e+1)) e4m3 values are 2^(e-3) apart; below
    // 2^-5 (subnormals and the first normal binade) they are 2^-9 apart. The
    // code is then (e + 6) * 8 + steps, with steps counting spacings from 0
    // (8..16 in a normal binade). A round-up to steps = 16 lands on the next
    // binade's first code, and since magnitude < 448 the code stays <= 0x7E.
    let exponent = if magnitude < pow2(-6) {
        -6
    } else {
        ((magnitude.to_bits() >> 52) as i32) - 1023
    };
    let steps = (magnitude * pow2(3 - exponent)).round_ties_even();
    sign | ((exponent + 6) * 8 + steps as i32) as u8
}

/// Batched K-major NVFP4 matrices: `batches` (L) matrices of `rows` x `k`,
/// laid out as the GPU MODE task hands them over: data [L][rows][k/2],
/// scales [L][rows][k/16] (one e4m3 per 16 consecutive k, the "plain" layout).
///
/// The methods assume the fields are consistent (as every constructor here
/// makes them); a tensor whose vectors were resized by hand makes them panic.
#[derive(Clone, Debug, PartialEq)]
pub struct Nvfp4Tensor {
    /// Rows per matrix (M for `a`, N for `b`).
    pub rows: usize,
    /// Elements per row, a positive multiple of 16.
    pub k: usize,
    /// Matrices in the batch (L).
    pub batches: usize,
    /// `batches * rows * k / 2` bytes, [L][rows][k/2]; byte `kk / 2` of a row
    /// holds element `kk` in its low nibble when `kk` is even.
    pub data: Vec<Fp4x2>,
    /// `batches * rows * k / 16` scales, [L][rows][k/16]; scale `kk / 16` of a
    /// row covers elements `kk` with that quotient.
    pub scales: Vec<E4m3>,
}

impl Nvfp4Tensor {
    /// An all-zero tensor (codes 0, scales 0).
    ///
    /// `Err(Error::Shape)` unless `rows`, `k` and `batches` are positive, `k`
    /// is a multiple of 16 and every buffer (the blocked scales included)
    /// fits in `usize`.
    pub fn zeros(rows: usize, k: usize, batches: usize) -> Result<Self, Error> {
        let (data_len, scales_len) = buffer_lens(rows, k, batches)?;
        Ok(Nvfp4Tensor {
            rows,
            k,
            batches,
            data: vec![Fp4x2(0); data_len],
            scales: vec![E4m3(0); scales_len],
        })
    }

    /// The value of element `kk` of row `r` of matrix `l`: its e2m1 value
    /// times its block's scale, exact in f64 (NaN if the scale byte is NaN).
    ///
    /// # Panics
    /// If `l`, `r` or `kk` is out of range.
    pub fn element(&self, l: usize, r: usize, kk: usize) -> f64 {
        let value = f64::from(e2m1_to_f32(self.code(l, r, kk)));
        value * f64::from(e4m3_to_f32(self.scale(l, r, kk / BLOCK).0))
    }

    /// The e2m1 code (0..16) of element `kk` of row `r` of matrix `l`.
    ///
    /// # Panics
    /// If `l`, `r` or `kk` is out of range.
    pub fn code(&self, l: usize, r: usize, kk: usize) -> u8 {
        self.check_index(l, r, kk, self.k, "k");
        let (even, odd) = unpack(self.data[self.row_start(l, r) / 2 + kk / 2]);
        if kk.is_multiple_of(2) { even } else { odd }
    }

    /// The scale of block `block` (covering k = 16 * block .. 16 * block + 16)
    /// of row `r` of matrix `l`.
    ///
    /// # Panics
    /// If `l`, `r` or `block` is out of range.
    pub fn scale(&self, l: usize, r: usize, block: usize) -> E4m3 {
        self.check_index(l, r, block, self.scale_cols(), "scale column");
        self.scales[self.row_start(l, r) / BLOCK + block]
    }

    /// Quantizes `values`, laid out [L][rows][k], to NVFP4.
    ///
    /// Per block of 16 values with largest magnitude `amax`: the scale is
    /// `amax / 6` rounded to nearest-even e4m3 (the usual NVFP4 recipe,
    /// without a per-tensor scale), and each code is `x / scale` rounded to
    /// nearest-even e2m1, saturating at ±6.
    ///
    /// A scale rounded down makes the largest elements saturate. With a
    /// normal scale (relative spacing 1/8) `amax / scale` stays below 6.375,
    /// so the saturation error (under 0.375 scale) is less than half the top
    /// e2m1 spacing (1 scale): no worse than rounding, and rounding the scale
    /// up instead would cost resolution. With a subnormal scale (`amax`
    /// below 6 * 2^-6) rounding down can be relatively much larger, up to a
    /// scale of 0; whenever `amax > 7 * scale` the next larger e4m3 is used,
    /// so every element of every block with `amax <= 6 * 448` is within half
    /// an e2m1 spacing (times the scale) of its value.
    ///
    /// An all-zero block gets scale 0 and codes 0; blocks with
    /// `amax > 6 * 448` get scale 448 and saturate.
    ///
    /// `Err(Error::Shape)` for a shape [`zeros`](Self::zeros) rejects, a
    /// length other than `batches * rows * k`, or a non-finite value (which
    /// NVFP4 cannot represent; reported as an input problem too).
    pub fn quantize(values: &[f32], rows: usize, k: usize, batches: usize) -> Result<Self, Error> {
        let mut tensor = Nvfp4Tensor::zeros(rows, k, batches)?;
        if values.len() != tensor.data.len() * 2 {
            return Err(Error::Shape(format!(
                "quantize: {} values for a tensor of {rows} x {k} x {batches} = {} elements",
                values.len(),
                tensor.data.len() * 2
            )));
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::Shape(format!(
                "quantize: value {} at index {i} is not finite",
                values[i]
            )));
        }
        let blocks = values.chunks_exact(BLOCK);
        let outputs = tensor.data.chunks_exact_mut(BLOCK / 2).zip(tensor.scales.iter_mut());
        for (block, (bytes, scale)) in blocks.zip(outputs) {
            let amax = block.iter().fold(0.0f64, |m, &v| m.max(f64::from(v).abs()));
            if amax == 0.0 {
                continue;
            }
            let mut scale_code = e4m3_from_f64(amax / 6.0);
            if amax > 7.0 * f64::from(e4m3_to_f32(scale_code)) && scale_code < 0x7E {
                // Only subnormal scales (or 0) get here; the next code is the next larger value.
                scale_code += 1;
            }
            *scale = E4m3(scale_code);
            let decoded = f64::from(e4m3_to_f32(scale_code));
            for (byte, pair) in bytes.iter_mut().zip(block.chunks_exact(2)) {
                // Dividing in f64 rounds as the exact quotient would: x (24
                // bits) and midpoint * scale (7 bits) differ, if at all, by
                // about 2^-25 relative, far more than f64's rounding error.
                let even = e2m1_from_f64(f64::from(pair[0]) / decoded);
                let odd = e2m1_from_f64(f64::from(pair[1]) / decoded);
                *byte = pack(even, odd);
            }
        }
        Ok(tensor)
    }

    /// The scales in the 128x4 blocked ("permuted") layout the tensor cores
    /// read: [`blocked_scale_len`] bytes, scale (l, r, c) at
    /// [`blocked_scale_offset`], with rows padded to 128 and scale columns
    /// to 4 by zero scales.
    pub fn blocked_scales(&self) -> Vec<E4m3> {
        if let Some(problem) = self.inconsistency() {
            panic!("blocked_scales: inconsistent NVFP4 tensor: {problem}");
        }
        let scale_cols = self.scale_cols();
        let mut blocked = vec![E4m3(0); blocked_scale_len(self.rows, scale_cols, self.batches)];
        let rows = self.scales.chunks_exact(scale_cols).take(self.batches * self.rows);
        for (row_index, row) in rows.enumerate() {
            let (l, r) = (row_index / self.rows, row_index % self.rows);
            for (c, &scale) in row.iter().enumerate() {
                blocked[blocked_scale_offset(l, r, c, self.rows, scale_cols)] = scale;
            }
        }
        blocked
    }

    /// Scale columns per row: k / 16.
    fn scale_cols(&self) -> usize {
        self.k / BLOCK
    }

    /// Index of element 0 of row `r` of matrix `l` in element units.
    fn row_start(&self, l: usize, r: usize) -> usize {
        (l * self.rows + r) * self.k
    }

    /// Indices past a row's end must not quietly read the next row.
    fn check_index(&self, l: usize, r: usize, column: usize, columns: usize, what: &str) {
        assert!(
            l < self.batches && r < self.rows && column < columns,
            "NVFP4 index (l {l}, row {r}, {what} {column}) out of range for {} x {} rows x {columns} {what}s",
            self.batches,
            self.rows
        );
    }

    /// Why the fields disagree with each other, if they do.
    fn inconsistency(&self) -> Option<String> {
        match buffer_lens(self.rows, self.k, self.batches) {
            Err(e) => Some(e.to_string()),
            Ok((data, scales)) if data != self.data.len() || scales != self.scales.len() => Some(format!(
                "{} x {} x {} needs {data} data bytes and {scales} scales, has {} and {}",
                self.rows,
                self.k,
                self.batches,
                self.data.len(),
                self.scales.len()
            )),
            Ok(_) => None,
        }
    }
}

/// The lengths of the data and scale vectors of a `rows` x `k` x `batches`
/// tensor, or why there is no such tensor.
fn buffer_lens(rows: usize, k: usize, batches: usize) -> Result<(usize, usize), Error> {
    if rows == 0 || k == 0 || batches == 0 {
        return Err(Error::Shape(format!(
            "NVFP4 tensor of {rows} rows x {k} k x {batches} batches: every extent must be positive"
        )));
    }
    if !k.is_multiple_of(BLOCK) {
        return Err(Error::Shape(format!(
            "NVFP4 tensor with k = {k}: k must be a multiple of {BLOCK} (one scale per {BLOCK} elements)"
        )));
    }
    let too_large = || Error::Shape(format!("NVFP4 tensor of {rows} x {k} x {batches} is too large"));
    let elements = rows
        .checked_mul(k)
        .and_then(|n| n.checked_mul(batches))
        .ok_or_else(too_large)?;
    // The blocked scales must fit too, so that blocked_scales() cannot overflow.
    checked_blocked_scale_len(rows, k / BLOCK, batches).ok_or_else(too_large)?;
    Ok((elements / 2, elements / BLOCK))
}

/// Offset of the scale of (batch l, row r, scale column c) in the blocked
/// layout for a tensor with `rows` rows and `scale_cols` = k/16 columns:
/// `off = l*RB*KB*512 + ((r/128)*KB + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + c%4`,
/// RB = ceil(rows/128), KB = ceil(scale_cols/4). Meaningful for
/// `r < RB*128` and `c < KB*4` (real and padding positions).
///
/// Each 128-row x 4-column tile is 512 contiguous bytes, tiles ordered
/// row-tile major; inside a tile, row r goes to line r % 32 (16 bytes), in
/// the 4-byte group (r % 128) / 32. This is cuBLAS's "1D block scaling
/// factors layout" and the task's `sfa_permuted` (logical shape
/// (32, 4, rest_m, 4, rest_k, L)).
///
/// # Panics
/// If the offset overflows `usize` (only for sizes no buffer can have).
pub fn blocked_scale_offset(l: usize, r: usize, c: usize, rows: usize, scale_cols: usize) -> usize {
    let batch_len = checked_blocked_scale_len(rows, scale_cols, 1).expect("blocked scale offset overflows usize");
    let row_tiles_across = scale_cols.div_ceil(4);
    let tile = (r / 128)
        .checked_mul(row_tiles_across)
        .and_then(|t| t.checked_add(c / 4))
        .and_then(|t| t.checked_mul(512));
    l.checked_mul(batch_len)
        .zip(tile)
        .and_then(|(batch, tile)| batch.checked_add(tile))
        .and_then(|base| base.checked_add((r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4))
        .expect("blocked scale offset overflows usize")
}

/// Length of the blocked scale buffer: `batches * RB * KB * 512` with
/// RB = ceil(rows/128), KB = ceil(scale_cols/4).
///
/// # Panics
/// If the length overflows `usize`.
pub fn blocked_scale_len(rows: usize, scale_cols: usize, batches: usize) -> usize {
    checked_blocked_scale_len(rows, scale_cols, batches).expect("blocked scale length overflows usize")
}

fn checked_blocked_scale_len(rows: usize, scale_cols: usize, batches: usize) -> Option<usize> {
    rows.div_ceil(128)
        .checked_mul(scale_cols.div_ceil(4))?
        .checked_mul(512)?
        .checked_mul(batches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::BTreeSet;

    /// e4m3 decoded straight from the bit fields, independently of the module.
    fn e4m3_from_fields(byte: u8) -> f64 {
        let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
        let exponent = i32::from((byte >> 3) & 0xF);
        let mantissa = f64::from(byte & 7);
        if exponent == 15 && mantissa == 7.0 {
            f64::NAN
        } else if exponent == 0 {
            sign * mantissa * 2f64.powi(-9)
        } else {
            sign * (1.0 + mantissa / 8.0) * 2f64.powi(exponent - 7)
        }
    }

    /// The nearest of `candidates` (code, value) to `x` by exhaustive search, ties to the even code.
    fn nearest(x: f64, candidates: impl Iterator<Item = (u8, f64)>) -> u8 {
        let mut best: Option<(u8, f64)> = None;
        for (code, value) in candidates {
            let distance = (x - value).abs();
            best = match best {
                Some((best_code, best_distance))
                    if best_distance < distance || (best_distance == distance && best_code % 2 == 0) =>
                {
                    Some((best_code, best_distance))
                }
                _ => Some((code, distance)),
            };
        }
        best.unwrap().0
    }

    /// e4m3 by exhaustive search over the finite codes (which saturates by itself).
    fn nearest_e4m3(x: f64) -> u8 {
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        sign | nearest(x.abs(), (0..=0x7Eu8).map(|c| (c, e4m3_from_fields(c))))
    }

    /// e2m1 of `x / scale` by exhaustive search on the distances `|x - value * scale|`.
    fn nearest_e2m1_scaled(x: f64, scale: f64) -> u8 {
        let sign = if x.is_sign_negative() { 8 } else { 0 };
        sign | nearest(
            x.abs(),
            (0..8u8).map(|c| (c, f64::from(E2M1_VALUES[usize::from(c)]) * scale)),
        )
    }

    fn random_scale_bytes(rng: &mut Rng, tensor: &mut Nvfp4Tensor) {
        for scale in &mut tensor.scales {
            // Positive, finite and non-zero, so that every scale is visible.
            *scale = E4m3(1 + rng.below(0x7E) as u8);
        }
    }

    #[test]
    fn e2m1_codes_decode_exactly_and_round_trip() {
        let expected = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        let mut rng = Rng::new(11);
        for code in 0..16u8 {
            let magnitude = expected[usize::from(code & 7)];
            let value = e2m1_to_f32(code);
            assert_eq!(value.abs(), magnitude, "code {code}");
            assert_eq!(value.is_sign_negative(), code >= 8, "sign of code {code}");
            assert_eq!(E2M1_VALUES[usize::from(code)].to_bits(), value.to_bits());
            // High bits are ignored.
            let noisy = code | ((1 + rng.below(15)) as u8) << 4;
            assert_eq!(e2m1_to_f32(noisy).to_bits(), value.to_bits(), "code {noisy:#x}");
            assert_eq!(f32_to_e2m1(value), code, "round trip of code {code}");
        }
        assert_eq!(f32_to_e2m1(-0.0), 8);
        assert_eq!(f32_to_e2m1(0.0), 0);
    }

    #[test]
    fn e2m1_rounds_to_nearest_even_and_saturates() {
        // Midpoints between neighbouring magnitudes go to the even code.
        let midpoints = [(0.25, 0), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6)];
        for (midpoint, code) in midpoints {
            assert_eq!(f32_to_e2m1(midpoint), code, "+{midpoint}");
            assert_eq!(f32_to_e2m1(-midpoint), code | 8, "-{midpoint}");
            let above = f32::from_bits(midpoint.to_bits() + 1);
            let below = f32::from_bits(midpoint.to_bits() - 1);
            assert_eq!(
                f32_to_e2m1(above),
                nearest_e2m1_scaled(f64::from(above), 1.0),
                "just above {midpoint}"
            );
            assert_eq!(
                f32_to_e2m1(below),
                nearest_e2m1_scaled(f64::from(below), 1.0),
                "below {midpoint}"
            );
            assert_ne!(f32_to_e2m1(above), f32_to_e2m1(below));
        }
        for (x, code) in [
            (6.0, 7),
            (6.9, 7),
            (1e30, 7),
            (f32::INFINITY, 7),
            (f32::NEG_INFINITY, 15),
        ] {
            assert_eq!(f32_to_e2m1(x), code, "{x}");
        }
        assert_eq!(f32_to_e2m1(-100.0), 15);
        assert_eq!(f32_to_e2m1(-1e-9), 8, "tiny negatives round to -0");
        assert_eq!(f32_to_e2m1(f32::NAN), 0);
        assert_eq!(f32_to_e2m1(-f32::NAN), 0);
        let mut rng = Rng::new(12);
        for i in 0..20_000 {
            // Half of the draws sit on the quarter grid, which holds every midpoint.
            let x = if i % 2 == 0 {
                rng.uniform(-8.0, 8.0)
            } else {
                (rng.below(65) as f32 - 32.0) * 0.25
            };
            assert_eq!(f32_to_e2m1(x), nearest_e2m1_scaled(f64::from(x), 1.0), "{x}");
        }
    }

    #[test]
    fn e4m3_all_bytes_decode_exactly_and_round_trip() {
        for byte in 0..=255u8 {
            let expected = e4m3_from_fields(byte);
            let value = e4m3_to_f32(byte);
            if byte & 0x7F == 0x7F {
                assert!(value.is_nan(), "{byte:#04x} must be NaN");
                assert!(expected.is_nan());
                continue;
            }
            assert_eq!(f64::from(value).to_bits(), expected.to_bits(), "{byte:#04x}");
            assert_eq!(f32_to_e4m3(value), byte, "round trip of {byte:#04x} ({value})");
        }
        assert_eq!(e4m3_to_f32(0x7E), 448.0);
        assert_eq!(e4m3_to_f32(0xFE), -448.0);
        assert_eq!(e4m3_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(e4m3_to_f32(0x08), 2f32.powi(-6));
        assert_eq!(e4m3_to_f32(0x38), 1.0);
        assert!(e4m3_to_f32(0x80).is_sign_negative() && e4m3_to_f32(0x80) == 0.0);
    }

    #[test]
    fn e4m3_rounds_to_nearest_even_and_saturates() {
        // Every midpoint between neighbouring finite codes (codes grow with the magnitude).
        for code in 0..0x7Eu8 {
            let (low, high) = (e4m3_from_fields(code), e4m3_from_fields(code + 1));
            let midpoint = ((low + high) / 2.0) as f32;
            assert_eq!(f64::from(midpoint), (low + high) / 2.0, "midpoint is an f32");
            let even = if code % 2 == 0 { code } else { code + 1 };
            assert_eq!(
                f32_to_e4m3(midpoint),
                even,
                "midpoint of {code:#04x} and {:#04x}",
                code + 1
            );
            assert_eq!(f32_to_e4m3(-midpoint), even | 0x80);
            assert_eq!(f32_to_e4m3(f32::from_bits(midpoint.to_bits() + 1)), code + 1);
            assert_eq!(f32_to_e4m3(f32::from_bits(midpoint.to_bits() - 1)), code);
        }
        for x in [448.0, 448.5, 463.9, 464.0, 479.0, 480.0, 1e6, f32::MAX, f32::INFINITY] {
            assert_eq!(f32_to_e4m3(x), 0x7E, "{x}");
            assert_eq!(f32_to_e4m3(-x), 0xFE, "-{x}");
        }
        assert_eq!(f32_to_e4m3(f32::NAN), 0x7F);
        assert_eq!(f32_to_e4m3(-f32::NAN), 0x7F);
        assert_eq!(
            f32_to_e4m3(2f32.powi(-10)),
            0x00,
            "half the smallest subnormal ties to 0"
        );
        assert_eq!(f32_to_e4m3(-2f32.powi(-11)), 0x80);
        assert_eq!(f32_to_e4m3(-0.0), 0x80);
        let mut rng = Rng::new(13);
        for _ in 0..20_000 {
            let exponent = rng.below(24) as i32 - 13;
            let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
            let x = sign * rng.uniform(1.0, 2.0) * 2f32.powi(exponent);
            assert_eq!(f32_to_e4m3(x), nearest_e4m3(f64::from(x)), "{x}");
        }
    }

    #[test]
    fn pack_puts_the_even_element_in_the_low_nibble() {
        assert_eq!(pack(0x3, 0xA), Fp4x2(0xA3));
        assert_eq!(unpack(Fp4x2(0xA3)), (0x3, 0xA));
        let mut rng = Rng::new(14);
        for _ in 0..1000 {
            let (even, odd) = (rng.next_u32() as u8, rng.next_u32() as u8);
            let packed = pack(even, odd);
            assert_eq!(packed.0, (even & 0xF) | (odd << 4), "pack({even:#x}, {odd:#x})");
            assert_eq!(unpack(packed), (even & 0xF, odd & 0xF));
            assert_eq!(pack(unpack(packed).0, unpack(packed).1), packed);
        }
        // The tensor reads the same order: element 2i is the low nibble of byte i.
        let mut tensor = Nvfp4Tensor::zeros(3, 32, 2).unwrap();
        random_scale_bytes(&mut rng, &mut tensor);
        for byte in &mut tensor.data {
            *byte = Fp4x2(rng.next_u32() as u8);
        }
        for (l, r, kk) in [(0, 0, 0), (0, 0, 1), (1, 2, 30), (1, 2, 31), (1, 1, 17)] {
            let byte = tensor.data[(l * 3 + r) * 16 + kk / 2];
            let code = if kk % 2 == 0 { byte.0 & 0xF } else { byte.0 >> 4 };
            assert_eq!(tensor.code(l, r, kk), code);
            let scale = tensor.scales[(l * 3 + r) * 2 + kk / 16];
            assert_eq!(tensor.scale(l, r, kk / 16), scale);
            let expected = f64::from(e2m1_to_f32(code)) * e4m3_from_fields(scale.0);
            assert_eq!(tensor.element(l, r, kk), expected);
        }
    }

    #[test]
    fn zeros_and_quantize_reject_bad_shapes_and_values() {
        for (rows, k, batches) in [
            (0, 16, 1),
            (4, 0, 1),
            (4, 16, 0),
            (4, 24, 1),
            (4, 8, 1),
            (usize::MAX, 16, 2),
        ] {
            assert!(
                matches!(Nvfp4Tensor::zeros(rows, k, batches), Err(Error::Shape(_))),
                "{rows} x {k} x {batches}"
            );
        }
        let mut rng = Rng::new(15);
        let mut values: Vec<f32> = (0..2 * 32).map(|_| rng.uniform(-3.0, 3.0)).collect();
        assert!(Nvfp4Tensor::quantize(&values, 2, 32, 1).is_ok());
        assert!(matches!(
            Nvfp4Tensor::quantize(&values[1..], 2, 32, 1),
            Err(Error::Shape(_))
        ));
        assert!(matches!(Nvfp4Tensor::quantize(&values, 2, 24, 1), Err(Error::Shape(_))));
        values[17] = f32::NAN;
        assert!(matches!(Nvfp4Tensor::quantize(&values, 2, 32, 1), Err(Error::Shape(_))));
        values[17] = f32::INFINITY;
        assert!(matches!(Nvfp4Tensor::quantize(&values, 2, 32, 1), Err(Error::Shape(_))));
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn element_panics_out_of_range() {
        let tensor = Nvfp4Tensor::zeros(2, 32, 1).unwrap();
        // Row 2 would still be inside the buffer of a tensor with more batches; it must not alias.
        tensor.element(0, 2, 0);
    }

    #[test]
    fn quantize_rounds_each_block_to_its_scale() {
        let mut rng = Rng::new(16);
        let (rows, k, batches) = (6, 256, 2);
        let mut values = Vec::new();
        for _ in 0..rows * k * batches / BLOCK {
            // Block magnitudes from subnormal scales to past saturation, and some zero blocks.
            let kind = rng.below(8);
            let magnitude = match kind {
                0 => 0.0,
                1 => 2f32.powi(-(rng.below(8) as i32) - 6),
                2 => rng.uniform(2700.0, 10_000.0),
                _ => 2f32.powf(rng.uniform(-6.0, 11.0)),
            };
            for _ in 0..BLOCK {
                let x = match rng.below(10) {
                    0 => 0.0,
                    1 => -0.0,
                    _ => rng.uniform(-magnitude, magnitude),
                };
                values.push(x);
            }
        }
        let tensor = Nvfp4Tensor::quantize(&values, rows, k, batches).unwrap();
        let mut saw = BTreeSet::new();
        for (index, block) in values.chunks_exact(BLOCK).enumerate() {
            let (row_index, block_column) = (index / (k / BLOCK), index % (k / BLOCK));
            let (l, r) = (row_index / rows, row_index % rows);
            let scale = tensor.scale(l, r, block_column);
            let amax = block.iter().fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
            if amax == 0.0 {
                saw.insert("zero");
                assert_eq!(scale, E4m3(0));
                for kk in 0..BLOCK {
                    assert_eq!(tensor.code(l, r, block_column * BLOCK + kk), 0);
                }
                continue;
            }
            let mut expected_scale = nearest_e4m3(amax / 6.0);
            if amax > 7.0 * e4m3_from_fields(expected_scale) && expected_scale < 0x7E {
                expected_scale += 1;
                saw.insert("bumped");
            }
            assert_eq!(scale, E4m3(expected_scale), "block {index}, amax {amax}");
            let decoded = e4m3_from_fields(scale.0);
            saw.insert(if scale.0 < 8 { "subnormal scale" } else { "normal scale" });
            for (kk, &x) in block.iter().enumerate() {
                let kk = block_column * BLOCK + kk;
                let x = f64::from(x);
                let code = tensor.code(l, r, kk);
                assert_eq!(code, nearest_e2m1_scaled(x, decoded), "x {x}, scale {decoded}");
                let error = (tensor.element(l, r, kk) - x).abs();
                if amax <= 6.0 * 448.0 {
                    // Half the e2m1 spacing around x / scale (spacings 0.5, 1, 2; past 6, the last one).
                    let y = x.abs() / decoded;
                    let half_spacing = if y <= 2.0 {
                        0.25
                    } else if y <= 4.0 {
                        0.5
                    } else {
                        1.0
                    };
                    assert!(error <= half_spacing * decoded, "x {x}, scale {decoded}, error {error}");
                } else {
                    saw.insert("saturated");
                    assert_eq!(scale, E4m3(0x7E));
                }
            }
        }
        for case in ["zero", "bumped", "subnormal scale", "normal scale", "saturated"] {
            assert!(saw.contains(case), "no {case} block drawn");
        }
    }

    #[test]
    fn blocked_offsets_are_a_bijection_onto_the_padded_buffer() {
        let mut rng = Rng::new(17);
        for _ in 0..6 {
            let rows = 1 + rng.below(300) as usize;
            let scale_cols = 1 + rng.below(13) as usize;
            let batches = 1 + rng.below(3) as usize;
            let len = blocked_scale_len(rows, scale_cols, batches);
            let (padded_rows, padded_cols) = (rows.div_ceil(128) * 128, scale_cols.div_ceil(4) * 4);
            assert_eq!(len, batches * padded_rows * padded_cols);
            let mut hit = vec![false; len];
            for l in 0..batches {
                for r in 0..padded_rows {
                    for c in 0..padded_cols {
                        let offset = blocked_scale_offset(l, r, c, rows, scale_cols);
                        assert!(offset < len && !hit[offset], "({l}, {r}, {c}) of {rows} x {scale_cols}");
                        hit[offset] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn blocked_offsets_match_the_tasks_permuted_tensor_and_to_blocked() {
        let mut rng = Rng::new(18);
        let (rows, scale_cols, batches) = (384, 12, 2);
        let (rest_m, rest_k) = (rows / 128, scale_cols / 4);
        // The task allocates a contiguous (L, rest_m, rest_k, 32, 4, 4) tensor, views it as
        // permute(3, 4, 1, 5, 2, 0) = logical (32, 4, rest_m, 4, rest_k, L), and stores scale
        // (r, c, l) at logical index (r % 32, (r % 128) / 32, r / 128, c % 4, c / 4, l).
        let memory_shape = [batches, rest_m, rest_k, 32, 4, 4];
        let mut memory_strides = [1usize; 6];
        for d in (0..5).rev() {
            memory_strides[d] = memory_strides[d + 1] * memory_shape[d + 1];
        }
        let permutation = [3, 4, 1, 5, 2, 0];
        let permuted_offset = |l: usize, r: usize, c: usize| {
            let logical = [r % 32, (r % 128) / 32, r / 128, c % 4, c / 4, l];
            (0..6)
                .map(|d| logical[d] * memory_strides[permutation[d]])
                .sum::<usize>()
        };
        // The reference's to_blocked, per batch: view (rows/128, 128, cols/4, 4), permute
        // (0, 2, 1, 3), reshape (-1, 4, 32, 4) (so row r % 128 = 32 * i + j), transpose (1, 2),
        // flatten: [tile][j][i][c % 4].
        let to_blocked_offset = |l: usize, r: usize, c: usize| {
            let tile = (r / 128) * rest_k + c / 4;
            let (i, j) = ((r % 128) / 32, r % 32);
            l * rows * scale_cols + ((tile * 32 + j) * 4 + i) * 4 + c % 4
        };
        for _ in 0..5000 {
            let (l, r, c) = (
                rng.below(batches as u32) as usize,
                rng.below(rows as u32) as usize,
                rng.below(scale_cols as u32) as usize,
            );
            let offset = blocked_scale_offset(l, r, c, rows, scale_cols);
            assert_eq!(offset, permuted_offset(l, r, c), "({l}, {r}, {c})");
            assert_eq!(offset, to_blocked_offset(l, r, c), "({l}, {r}, {c})");
        }
    }

    #[test]
    fn blocked_scales_place_a_128_row_by_64_k_block_as_documented() {
        let mut rng = Rng::new(19);
        // 200 rows (padded to 256) x 96 k (6 scale columns, padded to 8), 2 batches.
        let mut tensor = Nvfp4Tensor::zeros(200, 96, 2).unwrap();
        random_scale_bytes(&mut rng, &mut tensor);
        let blocked = tensor.blocked_scales();
        assert_eq!(blocked.len(), 2 * 2 * 2 * 512);
        // The block of batch 1, rows 128..256, k 64..128 (scale columns 4..8) is tile
        // (row tile 1, column tile 1): batch base 2048, tile base (1 * 2 + 1) * 512.
        let base = 2048 + 3 * 512;
        for t in 0..128 {
            for j in 0..4 {
                let at = blocked[base + (t % 32) * 16 + (t / 32) * 4 + j];
                let (r, c) = (128 + t, 4 + j);
                let expected = if r < 200 && c < 6 {
                    tensor.scale(1, r, c)
                } else {
                    E4m3(0)
                };
                assert_eq!(at, expected, "row {r}, column {c}");
            }
        }
        // Spot checks of the pattern: row 1 is one 16-byte line down, row 32 one 4-byte group over.
        assert_eq!(blocked[base], tensor.scale(1, 128, 4));
        assert_eq!(blocked[base + 16], tensor.scale(1, 129, 4));
        assert_eq!(blocked[base + 4], tensor.scale(1, 160, 4));
        assert_eq!(blocked[base + 16 + 4 + 1], tensor.scale(1, 161, 5));
        assert_eq!(blocked[base + 3 * 16 + 2 * 4 + 1], tensor.scale(1, 128 + 64 + 3, 5));
        // Every real scale is somewhere; everything else is padding.
        let non_zero = blocked.iter().filter(|s| s.0 != 0).count();
        assert_eq!(non_zero, tensor.scales.len());
        // One 128-row x 256-k tile's scales are 2048 contiguous bytes.
        let wide = Nvfp4Tensor::zeros(128, 512, 1).unwrap();
        let mut offsets: Vec<usize> = (0..128)
            .flat_map(|r| (16..32).map(move |c| blocked_scale_offset(0, r, c, 128, 32)))
            .collect();
        offsets.sort_unstable();
        assert_eq!(offsets, (2048..4096).collect::<Vec<_>>());
        assert_eq!(wide.blocked_scales().len(), 4096);
    }
}
