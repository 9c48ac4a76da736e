//! The weight layout the sm_90a GEMM decodes cheapest: B (the weights)
//! pre-arranged once, so that each thread of the kernel loads its fragment
//! of a K stage with two 16-byte loads and turns each K step's eight values
//! into its four wgmma registers with nine bit operations
//! ([`e2m1x8_prearranged`]).
//!
//! The layout: B's rows in tiles of 128 (the batches' rows one after the
//! other), each tile's K in stages of 128, one chunk of
//! [`RAW_BYTES`](super::sm90::RAW_BYTES) per (tile, stage), tile-major. A
//! chunk holds two m64 blocks of
//! [`PREARRANGED_BLOCK_BYTES`]: the block's data, then its scales. Thread
//! `ct` (0..128 of a warpgroup: warp `w = ct / 32`, `g = ct % 32 / 4`,
//! `t = ct % 4`) owns rows `16 w + g` and `16 w + g + 8` of the block and,
//! per K step `s` of 16 (0..8), one 32-bit word at data word
//! `512 (s / 4) + 4 ct + s % 4`, and one scale word at
//! `PREARRANGED_DATA_BYTES / 4 + ct`.
//!
//! The K order inside a stage is the GEMM's (see [`super::sm90`]): K step
//! `s` of thread `t` holds the stage's values `v = 32 t + 8 (s / 2) + 2 (s %
//! 2)` + {0, 1, 4, 5}, that is bytes `v / 2` and `v / 2 + 2` of a row, so
//! each byte of the word is one byte of B with its two nibbles moved
//! ([`split_nibbles`]): the even value's nibble `s e1 e0 m` to bits 7, 3,
//! 2, 1 (the high byte of an f16 equal to the value times 2^-14), the odd
//! value's to bits 0, 6, 5, 4. Byte 0 of the word is row g + 8's byte `v /
//! 2`, byte 1 row g's, bytes 2 and 3 the same rows' byte `v / 2 + 2`. The
//! scale word holds the e4m3 scales of rows g, g + 8 of group `2 t` (K
//! steps 0..4), then of group `2 t + 1` (steps 4..8).

use super::sm90::BK;
use crate::Error;
use crate::decode::e4m3_pair_splats;
use crate::nvfp4::Nvfp4Tensor;
use nvfp4_dsl::prelude::*;

/// Bytes of one m64 block of a pre-arranged chunk: 64 rows x 128 K of
/// FP4, then their 512 scales.
#[device]
pub const PREARRANGED_BLOCK_BYTES: u32 = PREARRANGED_DATA_BYTES + 64 * BK as u32 / 16;

/// Bytes of FP4 data of one m64 block of a pre-arranged chunk.
#[device]
pub const PREARRANGED_DATA_BYTES: u32 = 64 * BK as u32 / 2;

/// A K step's four wgmma A-fragment registers from the thread's
/// pre-arranged word `q`: rows g and g + 8 of K columns `2 t`, `2 t + 1`,
/// then of columns `2 t + 8`, `2 t + 9`, each value as an f16 equal to it
/// times 2^-14 (exact for every code; the subnormal 0.5 lands on an f16
/// subnormal).
#[device]
pub fn e2m1x8_prearranged(q: u32) -> [f16x2; 4] {
    // The odd values' nibbles moved into f16-high-byte form in every byte.
    let odd = (q >> 3) & 0x0E0E_0E0E | (q << 7) & 0x8080_8080;
    [
        f16x2::from_bits(q & 0x8E00_8E00),
        f16x2::from_bits((q << 8) & 0x8E00_8E00),
        f16x2::from_bits(odd & 0xFF00_FF00),
        f16x2::from_bits(byte_perm(odd, 0, 0x2404)),
    ]
}

/// Each byte of `x` with its even (low) nibble `s e1 e0 m` moved to bits 7,
/// 3, 2, 1 and its odd (high) nibble to bits 0, 6, 5, 4.
#[device]
pub fn split_nibbles(x: u32) -> u32 {
    (x & 0x0808_0808) << 4 | (x & 0x0707_0707) << 1 | (x >> 7) & 0x0101_0101 | x & 0x7070_7070
}

/// The inverse of [`split_nibbles`].
fn join_nibbles(x: u32) -> u32 {
    (x >> 4) & 0x0808_0808 | (x >> 1) & 0x0707_0707 | (x & 0x0101_0101) << 7 | x & 0x7070_7070
}

/// 32-bit words of `batches` x `rows` x `k` weights pre-arranged: as many
/// bytes as the plain data and scales together.
pub const fn prearranged_words(rows: usize, k: usize, batches: usize) -> usize {
    batches * rows * k / 2 / 4 + batches * rows * k / 16 / 4
}

/// What one word of the pre-arranged layout holds.
enum Source {
    /// Bytes `byte` and `byte + 2` of rows `row` (g) and `row + 8`.
    Data { row: usize, byte: usize },
    /// Scales `group` and `group + 1` of rows `row` and `row + 8`.
    Scales { row: usize, group: usize },
}

/// Where word `i` of the pre-arranged layout of weights with `k` values a
/// row comes from: whether it is a data word, its rows' first (g, the other
/// is g + 8), and for a data word the byte `v / 2` of those rows (with
/// `v / 2 + 2`), for a scale word the group `2 t` (with `2 t + 1`). The one
/// statement of the layout, for the host and the device.
#[device]
pub fn word_source(i: u32, k: u32) -> (bool, u32, u32) {
    let chunk_words = 2 * PREARRANGED_BLOCK_BYTES / 4;
    let block_words = PREARRANGED_BLOCK_BYTES / 4;
    let data_words = PREARRANGED_DATA_BYTES / 4;
    let (chunk, w) = (i / chunk_words, i % chunk_words);
    let stages = k / BK as u32;
    let (tile, kt) = (chunk / stages, chunk % stages);
    let (mb, r) = (w / block_words, w % block_words);
    let data = r < data_words;
    let ct = if data { r % 512 / 4 } else { r - data_words };
    let (warp, g, t) = (ct / 32, ct % 32 / 4, ct % 4);
    let row = 128 * tile + 64 * mb + 16 * warp + g;
    let s = 4 * (r / 512) + r % 4;
    let at = if data {
        kt * (BK as u32 / 2) + 16 * t + 4 * (s / 2) + s % 2
    } else {
        kt * (BK as u32 / 16) + 2 * t
    };
    (data, row, at)
}

/// The source of word `i` of the pre-arranged layout of weights with `k`
/// values per row.
fn source(i: usize, k: usize) -> Source {
    let (data, row, at) = word_source(i as u32, k as u32);
    let (row, at) = (row as usize, at as usize);
    if data {
        Source::Data { row, byte: at }
    } else {
        Source::Scales { row, group: at }
    }
}

fn check_shape(rows: usize, k: usize, batches: usize) -> Result<(), Error> {
    if rows == 0 || batches == 0 || !rows.is_multiple_of(128) || k == 0 || !k.is_multiple_of(BK) {
        return Err(Error::Shape(format!(
            "pre-arranged weights need rows a positive multiple of 128 and K a positive multiple of {BK}; got [{rows}, {k}, {batches}]"
        )));
    }
    if u32::try_from(prearranged_words(rows, k, batches)).is_err() {
        return Err(Error::Shape(format!(
            "[{rows}, {k}, {batches}] weights are too large for 32-bit indices"
        )));
    }
    Ok(())
}

/// `b` (rows a multiple of 128, K of 128) in the layout the sm_90a GEMM
/// reads its weights in (the module docs), computed on the host; on the
/// device [`super::prearrange_weights`] does the same.
pub fn prearrange_sm90(b: &Nvfp4Tensor) -> Result<Vec<u32>, Error> {
    check_shape(b.rows, b.k, b.batches)?;
    let (row_bytes, groups) = (b.k / 2, b.k / 16);
    let data = |row: usize, byte: usize| b.data[row * row_bytes + byte].0 as u32;
    let scale = |row: usize, group: usize| b.scales[row * groups + group].0 as u32;
    let words = (0..prearranged_words(b.rows, b.k, b.batches))
        .map(|i| match source(i, b.k) {
            Source::Data { row, byte } => split_nibbles(
                data(row + 8, byte) | data(row, byte) << 8 | data(row + 8, byte + 2) << 16 | data(row, byte + 2) << 24,
            ),
            Source::Scales { row, group } => {
                scale(row, group)
                    | scale(row + 8, group) << 8
                    | scale(row, group + 1) << 16
                    | scale(row + 8, group + 1) << 24
            }
        })
        .collect();
    Ok(words)
}

/// The weights that [`prearrange_sm90`] turned into `words`.
pub fn unarrange_sm90(words: &[u32], rows: usize, k: usize, batches: usize) -> Result<Nvfp4Tensor, Error> {
    check_shape(rows, k, batches)?;
    if words.len() != prearranged_words(rows, k, batches) {
        return Err(Error::Shape(format!(
            "[{rows}, {k}, {batches}] pre-arranged weights are {} words, not {}",
            prearranged_words(rows, k, batches),
            words.len()
        )));
    }
    let mut b = Nvfp4Tensor::zeros(rows, k, batches)?;
    let (row_bytes, groups) = (k / 2, k / 16);
    for (i, &word) in words.iter().enumerate() {
        let bytes = match source(i, k) {
            Source::Data { .. } => join_nibbles(word),
            Source::Scales { .. } => word,
        }
        .to_le_bytes();
        match source(i, k) {
            Source::Data { row, byte } => {
                for (j, (r, c)) in [(row + 8, byte), (row, byte), (row + 8, byte + 2), (row, byte + 2)]
                    .into_iter()
                    .enumerate()
                {
                    b.data[r * row_bytes + c] = Fp4x2(bytes[j]);
                }
            }
            Source::Scales { row, group } => {
                for (j, (r, c)) in [(row, group), (row + 8, group), (row, group + 1), (row + 8, group + 1)]
                    .into_iter()
                    .enumerate()
                {
                    b.scales[r * groups + c] = E4m3(bytes[j]);
                }
            }
        }
    }
    Ok(b)
}

/// Pre-arranges weights on the device: thread `i` writes word `i` of
/// `words` (of `count`) from `data` (`[rows][k/2]` bytes read as words)
/// and `scales` (the blocked 128x4 layout, read in pairs), as
/// [`prearrange_sm90`] does on the host. 256 threads a block.
#[kernel(targets(sm_90, sm_100a), launch_bounds(256))]
pub fn prearrange_weights_sm90(data: &[u32], scales: &[u16], words: &mut [u32], k: u32, count: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i < count {
        let (data_word, row, at) = word_source(i, k);
        if data_word {
            // The row's word holding bytes `at - at % 2` .. `+ 4`; row + 8's
            // is k / 8 words on.
            let word = (row * (k / 8) + at / 4) as usize;
            let sel = if at % 2 == 0 { 0x6240 } else { 0x7351 };
            words[i as usize] = split_nibbles(byte_perm(data[word + k as usize], data[word], sel));
        } else {
            // Groups `at` and `at + 1` of a row are one pair of the blocked
            // layout.
            let blocked =
                |row: u32| ((row / 128 * (k / 64) + at / 4) * 512 + row % 32 * 16 + row % 128 / 32 * 4 + at % 4) / 2;
            let g_pair = scales[blocked(row) as usize] as u32;
            let g8_pair = scales[blocked(row + 8) as usize] as u32;
            words[i as usize] = byte_perm(g_pair, g8_pair, 0x5140);
        }
    }
}

/// Thread `i` decodes word `words[i]` with scale word `scales[i]` as the
/// GEMM does: `out[8 i + 4 h + f]` is fragment register `f` times the
/// scale of its row for K steps `4 h ..`. 256 threads a block.
#[kernel(targets(sm_90, sm_100a), launch_bounds(256))]
pub fn decode_prearranged(words: &[u32], scales: &[u32], out: &mut [f16x2], count: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i < count {
        let raw = e2m1x8_prearranged(words[i as usize]);
        let sw = scales[i as usize];
        let splats = [e4m3_pair_splats(sw, 0x1010), e4m3_pair_splats(sw, 0x3232)];
        #[unroll]
        for h in 0..2usize {
            #[unroll]
            for f in 0..4usize {
                out[8 * i as usize + 4 * h + f] = hmul2(raw[f], splats[h][f % 2]);
            }
        }
    }
}

/// Decodes every e2m1 code in every slot of a pre-arranged word with every
/// non-negative finite e4m3 scale on `device`, through the GEMM's decode
/// ([`decode_prearranged`]), and checks each product against the CPU: the
/// f16 value times 2^14 must equal code times scale exactly.
pub fn check_prearranged_decode(device: &Device) -> Result<(), Error> {
    use crate::nvfp4::{e2m1_to_f32, e4m3_to_f32};
    // Word i: plain nibble p (byte p / 2, low or high) holds code (i + 5 p)
    // % 16, scale byte j is (i / 16 + 31 j) % 127: over 16 * 127 words each
    // slot sees every (code, scale) pair once.
    let count = 16 * 127;
    let plain: Vec<u32> = (0..count)
        .map(|i| (0..8).map(|p| ((i + 5 * p) % 16) << (4 * p)).sum())
        .collect();
    let scale_words: Vec<u32> = (0..count)
        .map(|i| (0..4).map(|j| ((i / 16 + 31 * j) % 127) << (8 * j)).sum())
        .collect();
    let words: Vec<u32> = plain.iter().map(|&w| split_nibbles(w)).collect();
    let (dw, ds) = (device.upload(&words)?, device.upload(&scale_words)?);
    let mut out = device.upload(&vec![f16x2::from_bits(0x7E01_7E01); 8 * count as usize])?;
    // SAFETY: thread i < count reads words[i], scales[i] and writes out[8 i
    // .. 8 i + 8], all in bounds.
    unsafe {
        decode_prearranged::Kernel::launch(
            device,
            LaunchConfig::linear(count.div_ceil(256), 256),
            &dw,
            &ds,
            &mut out,
            count,
        )?
    };
    let out = device.download(&out)?;
    for i in 0..count as usize {
        for p in 0..8 {
            let (byte, odd) = (p / 2, p % 2);
            let code = (plain[i] >> (4 * p)) as u8 & 15;
            // Bytes 0, 2 are row g + 8 (fragments 1, 3), 1, 3 row g; the
            // odd nibbles are K columns + 8 (fragments 2, 3).
            let (frag, half) = (usize::from(byte % 2 == 0) + 2 * odd, byte / 2);
            for h in 0..2 {
                let scale = (scale_words[i] >> (8 * (2 * h + frag % 2))) as u8;
                let got = out[8 * i + 4 * h + frag];
                let got = if half == 0 { got.lo() } else { got.hi() }.to_f32() * 16384.0;
                let want = e2m1_to_f32(code) * e4m3_to_f32(scale);
                if got.to_bits() != want.to_bits() && !(got == 0.0 && want == 0.0) {
                    return Err(Error::Mismatch(format!(
                        "pre-arranged decode of code {code} in slot {p} with scale {scale:#04x} (word {i}, steps {}..): {got}, want {want}",
                        4 * h
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvfp4::{Inputs, gemm_inputs};
    use crate::rng::Rng;

    #[test]
    fn prearranging_is_a_bijection() {
        let mut rng = Rng::new(7);
        for (rows, k, batches) in [(128, 128, 1), (256, 384, 2)] {
            for kind in [Inputs::Wide, Inputs::Task] {
                let (_, b) = gemm_inputs(&mut rng, 128, rows, k, batches, kind).expect("inputs");
                let words = prearrange_sm90(&b).expect("prearrange");
                assert_eq!(words.len(), prearranged_words(rows, k, batches));
                let back = unarrange_sm90(&words, rows, k, batches).expect("unarrange");
                assert_eq!(back.data, b.data, "{rows}x{k}x{batches} {kind:?}");
                assert_eq!(back.scales, b.scales, "{rows}x{k}x{batches} {kind:?}");
            }
        }
    }

    #[test]
    fn every_code_in_every_slot_survives_the_nibble_split() {
        for code in 0..16u32 {
            for slot in 0..8 {
                let word = code << (4 * slot) | (15 - code) << (4 * ((slot + 3) % 8));
                assert_eq!(join_nibbles(split_nibbles(word)), word);
            }
        }
    }

    #[test]
    fn the_prearranged_decode_is_exact_on_the_emulator() {
        let device = Device::emulator(Target::Sm90a);
        check_prearranged_decode(&device).unwrap_or_else(|e| panic!("{e}"));
    }
}
