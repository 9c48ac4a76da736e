//! NVFP4 on the host: the e2m1 and e4m3 codecs, batched K-major NVFP4
//! tensors in the layouts the GPU MODE tasks hand over (plain scales and the
//! 128x4 blocked scales the tensor cores read), input generators, f64 CPU
//! references of the GEMV and the GEMM, and the tolerance check.
//!
//! An NVFP4 element is an e2m1 code times the e4m3 scale of its block of 16
//! consecutive K elements. Every such value has at most 6 significant bits,
//! so the references below compute every product and every partial sum
//! exactly in f64 (see [`gemm_reference`]): they are the exact result, and
//! the only rounding left is the final one to f16.

use crate::Error;
use crate::rng::Rng;
use half::f16;
use nvfp4_dsl::{E4m3, Fp4x2, device};
use std::ops::Range;

/// The 16 e2m1 values by code (codes 8..15 negative; 8 is -0.0); a table
/// kernels may index too.
#[device]
pub const E2M1_VALUES: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// Elements per scale: one e4m3 scale covers 16 consecutive K elements.
const BLOCK: usize = 16;

/// The largest finite e4m3 magnitude, code 0x7E.
const E4M3_MAX: f64 = 448.0;

/// The e4m3 NaN (sign bit clear); 0xFF is the other one.
const E4M3_NAN: u8 = 0x7F;

/// Rows the GEMV pads its vector `b` to, as the task does for `torch._scaled_mm`.
const GEMV_B_ROWS: usize = 128;

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
/// laid out as the GPU MODE task hands them over: data `[L][rows][k/2]`,
/// scales `[L][rows][k/16]` (one e4m3 per 16 consecutive k, the "plain" layout).
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
    /// `batches * rows * k / 2` bytes, `[L][rows][k/2]`; byte `kk / 2` of a row
    /// holds element `kk` in its low nibble when `kk` is even.
    pub data: Vec<Fp4x2>,
    /// `batches * rows * k / 16` scales, `[L][rows][k/16]`; scale `kk / 16` of a
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

    /// Every element as f16, `[L][rows][k]`: exact, since an e2m1 value
    /// times an e4m3 scale has at most 6 significant bits and lies within
    /// f16's range (a NaN scale gives NaN).
    pub fn to_f16(&self) -> Vec<f16> {
        let mut out = Vec::with_capacity(self.batches * self.rows * self.k);
        for l in 0..self.batches {
            for r in 0..self.rows {
                out.extend((0..self.k).map(|kk| f16::from_f64(self.element(l, r, kk))));
            }
        }
        out
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

    /// Quantizes `values`, laid out `[L][rows][k]`, to NVFP4.
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
            return Err(Error::Value(format!(
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
        let plain = &self.scales[..self.batches * self.rows * self.scale_cols()];
        block_scales(plain, self.rows, self.k, self.batches).expect("a consistent tensor's scales")
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

/// Scales in the plain layout `[L][rows][k/16]` (as a checkpoint, the GEMV
/// and [`crate::linear::Linear`] hold them) in the 128x4 blocked layout the
/// GEMM reads ([`crate::gemm::GemmOperand::new`]): [`blocked_scale_len`]
/// of them, scale (l, r, c) at [`blocked_scale_offset`], rows padded to 128
/// and scale columns to 4 by zeros. The two layouts have the same length
/// whenever rows are a multiple of 128 and k of 64, so the GEMM cannot
/// tell one from the other: convert with this. `S`: [`E4m3`] or the bytes
/// of one. `Err` unless `k` is a positive multiple of 16 and `plain` holds
/// `batches * rows * k / 16` scales.
pub fn block_scales<S: Copy + Default>(plain: &[S], rows: usize, k: usize, batches: usize) -> Result<Vec<S>, Error> {
    let scale_cols = k / BLOCK;
    let want = rows.checked_mul(scale_cols).and_then(|n| n.checked_mul(batches));
    if k == 0 || !k.is_multiple_of(BLOCK) || want != Some(plain.len()) {
        return Err(Error::Shape(format!(
            "{} scales for [{rows}, {k}, {batches}]: K must be a positive multiple of {BLOCK} and the scales {rows} x {} per batch",
            plain.len(),
            k / BLOCK
        )));
    }
    let len = checked_blocked_scale_len(rows, scale_cols, batches)
        .ok_or_else(|| Error::Shape(format!("[{rows}, {k}, {batches}] blocked scales overflow usize")))?;
    let mut blocked = vec![S::default(); len];
    for (row_index, row) in plain.chunks_exact(scale_cols).enumerate() {
        let (l, r) = (row_index / rows, row_index % rows);
        for (c, &scale) in row.iter().enumerate() {
            blocked[blocked_scale_offset(l, r, c, rows, scale_cols)] = scale;
        }
    }
    Ok(blocked)
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

/// How inputs are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inputs {
    /// As the task's reference generator: GEMV data bytes in 0..4 (so only
    /// codes 0..3 in the low nibble, high nibble 0) and scales in {0, 1, 2}
    /// (as numbers, converted to e4m3); GEMM data bytes in 0..2 and scales
    /// in {1, 2}.
    Task,
    /// Every byte value 0..=255 (both nibbles, all 16 codes including the
    /// negatives and -0) and normal e4m3 scales whose exponents spread over
    /// e4m3's normal range, drawn so that for every output the sum of the
    /// magnitudes of its products stays at most 4096 (a sixteenth of f16's
    /// largest value).
    ///
    /// Scales are drawn per batch and block column. The column gets a cap
    /// `q` on the exponent of `scale_a * scale_b`: usually a "quiet" cap
    /// that shrinks as K grows (so the many columns of a long row add up to
    /// a few hundred), and with probability 8/(K/16) a "loud" cap of 2. The
    /// cap is split between the operands, exponent caps `q - s` for `a` and
    /// `s` for `b`, both within e4m3's normal exponents -6..=8 (half the
    /// splits give one operand all it can take), and every scale of the
    /// column draws a uniform exponent up to its cap and a uniform mantissa.
    /// Over a loud column either operand can reach 448 while the other stays
    /// small, so both cover the whole normal range while no product of
    /// scales exceeds 2^2 times the mantissas.
    ///
    /// The generator then computes, with the f64 reference on |a| and |b|,
    /// every output's sum of |products| (which bounds the output and every
    /// partial sum of any summation order). A row of `a` whose outputs
    /// exceed the limit gets all its scales divided by the power of two that
    /// brings the largest under it, re-rounded to e4m3, and the check runs
    /// again (a row whose scales were all divided until zero would pass, so
    /// this ends; rows still over after 8 rounds get zero scales). Keeping
    /// the sum at 4096 also keeps a correct f32 accumulation within about
    /// 2^-24 * 4096 = 2.4e-4 of the exact result, under the tasks' atol.
    Wide,
}

/// Bound on the sum of |products| of every output of a `Wide` input.
const WIDE_MAGNITUDE_LIMIT: f64 = 4096.0;

/// Expected loud columns per batch of a `Wide` input.
const WIDE_LOUD_COLUMNS: f32 = 8.0;

/// Exponent cap of `scale_a * scale_b` in a loud column: the smallest that
/// lets either operand's exponent reach 8 while the other's is -6.
const WIDE_LOUD_PRODUCT_EXPONENT: i32 = 2;

/// GEMV inputs: `a` is [m, k, l]; `b` is the vector padded to 128 rows as
/// the task does ([128, k, l], row 0 is the vector).
///
/// Rows 1..128 of `b` are not used by the product; like the task's
/// generator (which draws all 128 rows at random, not zeros) they are drawn
/// from the same distribution as row 0, so a kernel that reads them by
/// mistake produces a visibly wrong result.
///
/// `Err(Error::Shape)` for shapes [`Nvfp4Tensor::zeros`] rejects.
pub fn gemv_inputs(
    rng: &mut Rng,
    m: usize,
    k: usize,
    l: usize,
    kind: Inputs,
) -> Result<(Nvfp4Tensor, Nvfp4Tensor), Error> {
    let mut a = Nvfp4Tensor::zeros(m, k, l)?;
    let mut b = Nvfp4Tensor::zeros(GEMV_B_ROWS, k, l)?;
    match kind {
        Inputs::Task => {
            fill_task(rng, &mut a, 4, &[0.0, 1.0, 2.0]);
            fill_task(rng, &mut b, 4, &[0.0, 1.0, 2.0]);
        }
        Inputs::Wide => fill_wide(rng, &mut a, &mut b, 1),
    }
    Ok((a, b))
}

/// GEMM inputs: a [m, k, l], b [n, k, l].
///
/// `Err(Error::Shape)` for shapes [`Nvfp4Tensor::zeros`] rejects.
pub fn gemm_inputs(
    rng: &mut Rng,
    m: usize,
    n: usize,
    k: usize,
    l: usize,
    kind: Inputs,
) -> Result<(Nvfp4Tensor, Nvfp4Tensor), Error> {
    let mut a = Nvfp4Tensor::zeros(m, k, l)?;
    let mut b = Nvfp4Tensor::zeros(n, k, l)?;
    match kind {
        Inputs::Task => {
            fill_task(rng, &mut a, 2, &[1.0, 2.0]);
            fill_task(rng, &mut b, 2, &[1.0, 2.0]);
        }
        Inputs::Wide => fill_wide(rng, &mut a, &mut b, n),
    }
    Ok((a, b))
}

/// The task's generator: data bytes uniform in `0..byte_bound`, scales
/// uniform over `scale_values` (converted to e4m3 as numbers).
fn fill_task(rng: &mut Rng, tensor: &mut Nvfp4Tensor, byte_bound: u32, scale_values: &[f32]) {
    for byte in &mut tensor.data {
        *byte = Fp4x2(rng.below(byte_bound) as u8);
    }
    for scale in &mut tensor.scales {
        *scale = E4m3(f32_to_e4m3(scale_values[rng.below(scale_values.len() as u32) as usize]));
    }
}

/// The `Wide` generator (see [`Inputs::Wide`]); `b_rows_used` rows of `b`
/// enter the product (1 for the GEMV).
fn fill_wide(rng: &mut Rng, a: &mut Nvfp4Tensor, b: &mut Nvfp4Tensor, b_rows_used: usize) {
    for byte in a.data.iter_mut().chain(b.data.iter_mut()) {
        *byte = Fp4x2(rng.next_u32() as u8);
    }
    let scale_cols = a.scale_cols();
    let quiet = wide_quiet_product_exponent(scale_cols);
    let loud_probability = WIDE_LOUD_COLUMNS / scale_cols as f32;
    for l in 0..a.batches {
        for c in 0..scale_cols {
            let product_cap = if rng.uniform(0.0, 1.0) < loud_probability {
                WIDE_LOUD_PRODUCT_EXPONENT
            } else {
                quiet
            };
            // Split the cap so that both operands' caps are normal exponents.
            // Half the splits are extreme, giving one operand the whole range
            // up to the cap; uniform splits alone reach the top binade rarely.
            let lowest = (product_cap - 8).max(-6);
            let highest = (product_cap + 6).min(8);
            let b_cap = match rng.below(4) {
                0 => lowest,
                1 => highest,
                _ => lowest + rng.below((highest - lowest + 1) as u32) as i32,
            };
            let a_cap = product_cap - b_cap;
            for r in 0..a.rows {
                a.scales[(l * a.rows + r) * scale_cols + c] = draw_normal_scale(rng, a_cap);
            }
            for r in 0..b.rows {
                b.scales[(l * b.rows + r) * scale_cols + c] = draw_normal_scale(rng, b_cap);
            }
        }
    }
    shrink_loud_rows(a, b, b_rows_used);
}

/// The exponent cap of `scale_a * scale_b` for quiet columns, shrinking
/// with the number of columns. With uniform bytes a block's sum of |e2m1
/// products| averages 16 * 2.25^2 = 81; times the scales' mean product a
/// quiet column adds a few times 2^cap to each output. The budget was tuned
/// by measurement: over K = 64..16384 (GEMV and GEMM, several seeds) the
/// outputs' sums of |products| average 200..2000 and a few rows in ten
/// thousand pass the 4096 limit and get shrunk, a safety net, not the rule.
fn wide_quiet_product_exponent(scale_cols: usize) -> i32 {
    const QUIET_BUDGET: f64 = 12.8;
    let cap = (QUIET_BUDGET / scale_cols as f64).log2().floor();
    (cap as i32).clamp(-12, WIDE_LOUD_PRODUCT_EXPONENT)
}

/// A normal e4m3 scale with an exponent uniform in -6..=max_exponent and a
/// uniform mantissa.
fn draw_normal_scale(rng: &mut Rng, max_exponent: i32) -> E4m3 {
    debug_assert!((-6..=8).contains(&max_exponent));
    let exponent = -6 + rng.below((max_exponent + 7) as u32) as i32;
    // In the top binade mantissa 7 would be 0x7F, the NaN; 448 is mantissa 6.
    let mantissas = if exponent == 8 { 7 } else { 8 };
    let mantissa = rng.below(mantissas) as u8;
    E4m3((((exponent + 7) as u8) << 3) | mantissa)
}

/// Divides the scales of every row of `a` whose outputs' sums of |products|
/// exceed [`WIDE_MAGNITUDE_LIMIT`] by a power of two (see [`Inputs::Wide`]).
fn shrink_loud_rows(a: &mut Nvfp4Tensor, b: &Nvfp4Tensor, b_rows_used: usize) {
    let scale_cols = a.scale_cols();
    for _round in 0..8 {
        let magnitudes = products(a, b, b_rows_used, true);
        let mut all_within = true;
        for (row_index, outputs) in magnitudes.chunks_exact(b_rows_used).enumerate() {
            let largest = outputs.iter().fold(0.0f64, |m, &v| m.max(v));
            if largest <= WIDE_MAGNITUDE_LIMIT {
                continue;
            }
            all_within = false;
            let divide_by = (largest / WIDE_MAGNITUDE_LIMIT).log2().ceil().max(1.0) as i32;
            let factor = pow2(-divide_by.min(60));
            for scale in &mut a.scales[row_index * scale_cols..(row_index + 1) * scale_cols] {
                *scale = E4m3(e4m3_from_f64(f64::from(e4m3_to_f32(scale.0)) * factor));
            }
        }
        if all_within {
            return;
        }
    }
    // A round divides a row by at least the factor its largest output is
    // over, exactly while the scales stay normal (subnormal ones may round
    // up), so one or two rounds suffice; zero scales are the guarantee.
    let magnitudes = products(a, b, b_rows_used, true);
    for (row_index, outputs) in magnitudes.chunks_exact(b_rows_used).enumerate() {
        if outputs.iter().any(|&v| v > WIDE_MAGNITUDE_LIMIT) {
            a.scales[row_index * scale_cols..(row_index + 1) * scale_cols].fill(E4m3(0));
        }
    }
}

/// f64 reference: `c[l][m] = sum_k a(l,m,k) * b(l,0,k)`. Result laid out
/// `[L][M]` (the task's c `[M, 1, L]` with L outermost). Exact as described at
/// [`gemm_reference`].
///
/// # Panics
/// If `a` and `b` differ in `k` or `batches`, or either tensor's fields are
/// inconsistent.
pub fn gemv_reference(a: &Nvfp4Tensor, b: &Nvfp4Tensor) -> Vec<f64> {
    products(a, b, 1, false)
}

/// f64 reference: `c[l][m][n] = sum_k a(l,m,k) * b(l,n,k)`, laid out
/// `[L][M][N]`.
///
/// The exact value of the formula, independent of summation order
/// ([`nvfp4_testkit::Nvfp4Dot`], the reference every test crate uses):
/// each 16-element block's e2m1 products are summed as integers, then
/// multiplied by both scales and added in f64, exactly as long as the
/// partial sums stay below 2^33 (8.6e9, far beyond f16's range). NaN
/// scales give NaN. Work is spread over the available cores.
///
/// # Panics
/// If `a` and `b` differ in `k` or `batches`, or either tensor's fields are
/// inconsistent.
pub fn gemm_reference(a: &Nvfp4Tensor, b: &Nvfp4Tensor) -> Vec<f64> {
    products(a, b, b.rows, false)
}

/// The bytes of a slice of one-byte NVFP4 values.
fn bytes<T: nvfp4_dsl::DeviceCopy>(v: &[T]) -> &[u8] {
    assert_eq!(std::mem::size_of::<T>(), 1);
    // SAFETY: `T` is one byte of plain data (`DeviceCopy`: no padding,
    // every bit pattern valid), so `v` is `v.len()` initialised bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len()) }
}

/// The rows of a tensor as the reference reads them.
fn rows_of(t: &Nvfp4Tensor) -> nvfp4_testkit::Nvfp4Rows<'_> {
    nvfp4_testkit::Nvfp4Rows {
        rows: t.rows,
        k: t.k,
        data: bytes(&t.data),
        scales: bytes(&t.scales),
    }
}

/// `out[l][m][n] = sum_k a(l,m,k) * b(l,n,k)` for `n < b_rows_used`, or the
/// same over |a| and |b| when `absolute`.
fn products(a: &Nvfp4Tensor, b: &Nvfp4Tensor, b_rows_used: usize, absolute: bool) -> Vec<f64> {
    for (name, tensor) in [("a", a), ("b", b)] {
        if let Some(problem) = tensor.inconsistency() {
            panic!("NVFP4 reference: tensor {name} is inconsistent: {problem}");
        }
    }
    assert!(
        a.k == b.k && a.batches == b.batches && b_rows_used <= b.rows,
        "NVFP4 reference: a is {} x {} x {} (rows x k x batches) but b is {} x {} x {}",
        a.rows,
        a.k,
        a.batches,
        b.rows,
        b.k,
        b.batches
    );
    let dot = nvfp4_testkit::Nvfp4Dot::new(absolute);
    let (a_rows, b_rows) = (rows_of(a), rows_of(b));
    let mut out = vec![0.0; a.batches * a.rows * b_rows_used];
    for (l, batch_out) in out.chunks_exact_mut(a.rows * b_rows_used).enumerate() {
        parallel_rows(batch_out, b_rows_used, |ms, out_rows| {
            for (m, out_row) in ms.zip(out_rows.chunks_exact_mut(b_rows_used)) {
                let (x, sx) = a_rows.row(l, m);
                for (n, out_value) in out_row.iter_mut().enumerate() {
                    let (y, sy) = b_rows.row(l, n);
                    *out_value = dot.dot(x, sx, y, sy);
                }
            }
        });
    }
    out
}

/// Runs `work(rows, out_rows)` over disjoint runs of the rows of `out`
/// (`row_len` values each), one run per available core.
fn parallel_rows(out: &mut [f64], row_len: usize, work: impl Fn(Range<usize>, &mut [f64]) + Sync) {
    let rows = out.len() / row_len.max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(rows).max(1);
    if threads == 1 {
        work(0..rows, out);
        return;
    }
    let rows_per_thread = rows.div_ceil(threads);
    std::thread::scope(|scope| {
        for (i, chunk) in out.chunks_mut(rows_per_thread * row_len).enumerate() {
            let start = i * rows_per_thread;
            let work = &work;
            scope.spawn(move || work(start..start + chunk.len() / row_len, chunk));
        }
    });
}

/// The largest `|got - want| / (atol + rtol * |want|)` over all values
/// (infinite where either is not finite): at most 1 when [`check_close`]
/// passes.
pub fn worst_error_ratio(got: &[f16], want: &[f64], rtol: f64, atol: f64) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            let g = g.to_f64();
            if g.is_finite() && w.is_finite() {
                (g - w).abs() / (atol + rtol * w.abs())
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max)
}

/// Checks every element: `|got - want| <= atol + rtol * |want|` (NaN and
/// infinities never pass, on either side). `Err` names the first failing
/// index with its value and reference, the worst absolute error and how
/// many failed; also for lengths that differ or a negative or NaN tolerance.
pub fn check_close(got: &[f16], want: &[f64], rtol: f64, atol: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} values to check against {} reference values",
            got.len(),
            want.len()
        ));
    }
    if !(rtol >= 0.0 && atol >= 0.0) {
        return Err(format!(
            "tolerances must be non-negative numbers: rtol {rtol}, atol {atol}"
        ));
    }
    let mut failures = 0usize;
    let mut first_failure = None;
    let mut worst = (0usize, 0.0f64);
    for (i, (&got, &want)) in got.iter().zip(want).enumerate() {
        let got = got.to_f64();
        let error = (got - want).abs();
        let passes = got.is_finite() && want.is_finite() && error <= atol + rtol * want.abs();
        if !passes {
            failures += 1;
            first_failure.get_or_insert((i, got, want));
            // A NaN on either side ranks as an infinite error.
            let error = if error.is_nan() { f64::INFINITY } else { error };
            if failures == 1 || error > worst.1 {
                worst = (i, error);
            }
        }
    }
    match first_failure {
        None => Ok(()),
        Some((index, got_value, want_value)) => Err(format!(
            "{failures} of {} values differ by more than {atol} + {rtol} * |want|; first at index {index}: \
             got {got_value}, want {want_value}; worst at index {}: error {}",
            want.len(),
            worst.0,
            worst.1
        )),
    }
}

#[cfg(test)]
mod tests;
