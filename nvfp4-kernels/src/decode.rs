//! A kernel that decodes every FP4 and FP8 byte with the DSL's conversion
//! intrinsics, to compare the hardware (or the emulator) with the CPU.

use crate::Error;
use nvfp4_dsl::prelude::*;

/// The e2m1 codes `j` (bits 4j..4j+4) of both 16-bit halves of `word`,
/// each as an f16 equal to the value times 2^-14: the sign to bit 15 and
/// the exponent-mantissa to bits 9..12 of its half (exact; e2m1's
/// subnormal 0.5 lands on an f16 subnormal). `j` is a constant in the
/// kernels (unrolled loops), so the shifts fold.
#[device]
pub fn e2m1_pair_scaled(word: u32, j: u32) -> f16x2 {
    let magnitude = if j == 3 { word >> 3 } else { word << (9 - 4 * j) };
    let sign = word << (12 - 4 * j);
    f16x2::from_bits((magnitude & 0x0E00_0E00) | (sign & 0x8000_8000))
}

/// The two e4m3 scales that `byte_perm(word, 0, sel)` picks (its low 16
/// bits), each as an f16 splat into both halves of an `f16x2`.
#[device]
pub fn e4m3_pair_splats(word: u32, sel: u32) -> [f16x2; 2] {
    let two = E4m3x2::from_bits(byte_perm(word, 0, sel) as u16).to_f16x2().to_bits();
    [
        f16x2::from_bits(byte_perm(two, 0, 0x1010)),
        f16x2::from_bits(byte_perm(two, 0, 0x3232)),
    ]
}

/// Twice the magnitudes of the e2m1 codes in the four low nibbles of
/// `codes` (their sign bits ignored unless set: see below), one byte each,
/// by a `byte_perm` lookup in the table 0, 1, 2, 3, 4, 6, 8, 12 whose low
/// word is `table_lo` (0x0302_0100, passed as a run-time value so ptxas
/// keeps it in a register). A code with its sign bit set indexes the
/// table's sign-replicating half: pass magnitudes, or see
/// [`e2m1_signed_doubled`].
#[device]
pub fn e2m1_doubled(table_lo: u32, codes: u32) -> u32 {
    const TABLE_HI: u32 = 0x0C08_0604;
    byte_perm(table_lo, TABLE_HI, codes)
}

/// Twice the values of the e2m1 codes in the four low nibbles of `codes`
/// as signed bytes: the doubled magnitude of the positive codes, minus that
/// of the negative ones (bytewise, without borrows between bytes).
#[device]
pub fn e2m1_signed_doubled(table_lo: u32, codes: u32) -> u32 {
    let positive = e2m1_doubled(table_lo, codes);
    let negative = e2m1_doubled(table_lo, codes ^ 0x8888);
    positive | ((0x8080_8080 - negative) ^ 0x8080_8080)
}

/// Thread `i` (launch 256 threads) decodes byte `i` as `Fp4x2` and as
/// `E4m3`, the pair `pairs[i]` as `E4m3x2`, and the word `words[i]` with
/// both eight-value decodes.
#[kernel(targets(sm_90, sm_100a), launch_bounds(256))]
#[allow(clippy::too_many_arguments)]
pub fn decode_all(
    bytes: &[Fp4x2],
    scales: &[E4m3],
    pairs: &[E4m3x2],
    words: &[u32],
    fp4: &mut [f16x2],
    fp8: &mut [f32],
    fp8x2: &mut [f16x2],
    x8: &mut [f16x2],
    x8_scaled: &mut [f16x2],
) {
    let i = thread_idx_x() as usize;
    fp4[i] = bytes[i].to_f16x2();
    fp8[i] = scales[i].to_f32();
    fp8x2[i] = pairs[i].to_f16x2();
    let exact = decode_e2m1x8(words[i]);
    let scaled = decode_e2m1x8_scaled(words[i]);
    #[unroll]
    for j in 0..4 {
        x8[i * 4 + j] = exact[j];
        x8_scaled[i * 4 + j] = scaled[j];
    }
}

/// What the decode check saw: the NaN encodings the device produced.
#[derive(Debug, Clone)]
pub struct DecodeReport {
    /// f16 bits the device gave for e4m3 NaN (0x7F, 0xFF), through `E4m3x2`.
    pub e4m3_nan_f16: Vec<u16>,
    /// f32 bits the device gave for e4m3 NaN through `E4m3::to_f32`.
    pub e4m3_nan_f32: Vec<u32>,
}

fn mismatch(what: &str, input: u32, got: impl std::fmt::Debug, want: impl std::fmt::Debug) -> Error {
    Error::Mismatch(format!(
        "{what} of {input:#x} gave {got:?}, the CPU model says {want:?}"
    ))
}

/// The decode kernel's inputs (every byte; pairs and words built from the
/// index) and its outputs on one device.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// Words decoded eight values at a time.
    pub words: Vec<u32>,
    /// The `E4m3x2` inputs.
    pub pairs: Vec<E4m3x2>,
    /// `Fp4x2(i).to_f16x2()`.
    pub fp4: Vec<f16x2>,
    /// `E4m3(i).to_f32()`.
    pub fp8: Vec<f32>,
    /// `pairs[i].to_f16x2()`.
    pub fp8x2: Vec<f16x2>,
    /// `decode_e2m1x8(words[i])`, four per word.
    pub x8: Vec<f16x2>,
    /// `decode_e2m1x8_scaled(words[i])`, four per word.
    pub x8_scaled: Vec<f16x2>,
}

/// Runs `decode_all` over all 256 `Fp4x2` and `E4m3` bytes on `device`
/// (outputs poisoned first).
pub fn decode_every_byte(device: &Device) -> Result<Decoded, Error> {
    let bytes: Vec<Fp4x2> = (0..=255u8).map(Fp4x2).collect();
    let scales: Vec<E4m3> = (0..=255u8).map(E4m3).collect();
    let pairs: Vec<E4m3x2> = (0..=255u16).map(|i| E4m3x2(i | ((255 - i) << 8))).collect();
    let words: Vec<u32> = (0..=255u32)
        .map(|i| i | ((i + 1) & 255) << 8 | ((i + 2) & 255) << 16 | ((i + 3) & 255) << 24)
        .collect();
    let poison = f16x2::from_bits(0x7E01_7E01);
    let (db, ds, dp, dw) = (
        device.upload(&bytes)?,
        device.upload(&scales)?,
        device.upload(&pairs)?,
        device.upload(&words)?,
    );
    let mut fp4 = device.upload(&vec![poison; 256])?;
    let mut fp8 = device.upload(&vec![f32::from_bits(0x7FC0_0001); 256])?;
    let mut fp8x2 = device.upload(&vec![poison; 256])?;
    let mut x8 = device.upload(&vec![poison; 1024])?;
    let mut x8s = device.upload(&vec![poison; 1024])?;
    // SAFETY: 256 threads, each reads index i < 256 and writes i (and 4i..4i+4).
    unsafe {
        decode_all::Kernel::launch(
            device,
            LaunchConfig::linear(1, 256),
            &db,
            &ds,
            &dp,
            &dw,
            &mut fp4,
            &mut fp8,
            &mut fp8x2,
            &mut x8,
            &mut x8s,
        )?
    };
    Ok(Decoded {
        words,
        pairs,
        fp4: device.download(&fp4)?,
        fp8: device.download(&fp8)?,
        fp8x2: device.download(&fp8x2)?,
        x8: device.download(&x8)?,
        x8_scaled: device.download(&x8s)?,
    })
}

/// Decodes all 256 `Fp4x2` and `E4m3` bytes (and `E4m3x2` pairs and the
/// eight-value word decodes) on `device` and compares every value with the
/// CPU models (`nvfp4::e2m1_to_f32`, `nvfp4::e4m3_to_f32`, bit for bit
/// except NaN, which must be NaN).
pub fn check_decode(device: &Device) -> Result<DecodeReport, Error> {
    use crate::nvfp4::{e2m1_to_f32, e4m3_to_f32};
    let Decoded {
        words,
        pairs,
        fp4,
        fp8,
        fp8x2,
        x8,
        x8_scaled: x8s,
    } = decode_every_byte(device)?;
    let same = |got: f32, want: f32| got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
    let mut report = DecodeReport {
        e4m3_nan_f16: Vec::new(),
        e4m3_nan_f32: Vec::new(),
    };
    for i in 0..256usize {
        let (lo, hi) = (i as u8 & 15, i as u8 >> 4);
        let got = (fp4[i].lo().to_f32(), fp4[i].hi().to_f32());
        if !same(got.0, e2m1_to_f32(lo)) || !same(got.1, e2m1_to_f32(hi)) || fp4[i] != Fp4x2(i as u8).to_f16x2() {
            return Err(mismatch(
                "Fp4x2::to_f16x2",
                i as u32,
                got,
                (e2m1_to_f32(lo), e2m1_to_f32(hi)),
            ));
        }
        if !same(fp8[i], e4m3_to_f32(i as u8)) {
            return Err(mismatch("E4m3::to_f32", i as u32, fp8[i], e4m3_to_f32(i as u8)));
        }
        if fp8[i].is_nan() {
            report.e4m3_nan_f32.push(fp8[i].to_bits());
        }
        let pair = pairs[i].0;
        let want = (e4m3_to_f32(pair as u8), e4m3_to_f32((pair >> 8) as u8));
        let got = (fp8x2[i].lo().to_f32(), fp8x2[i].hi().to_f32());
        if !same(got.0, want.0) || !same(got.1, want.1) {
            return Err(mismatch("E4m3x2::to_f16x2", u32::from(pair), got, want));
        }
        if got.0.is_nan() {
            report.e4m3_nan_f16.push(fp8x2[i].lo().to_bits());
        }
        for j in 0..4 {
            let byte = Fp4x2((words[i] >> (8 * j)) as u8);
            let want = byte.to_f16x2();
            if x8[4 * i + j] != want {
                return Err(mismatch("decode_e2m1x8", words[i], x8[4 * i + j], want));
            }
            let scaled = x8s[4 * i + j];
            let back = (scaled.lo().to_f32() * 16384.0, scaled.hi().to_f32() * 16384.0);
            if !same(back.0, want.lo().to_f32()) || !same(back.1, want.hi().to_f32()) {
                return Err(mismatch("decode_e2m1x8_scaled (times 2^14)", words[i], back, want));
            }
        }
    }
    report.e4m3_nan_f16.sort_unstable();
    report.e4m3_nan_f16.dedup();
    report.e4m3_nan_f32.sort_unstable();
    report.e4m3_nan_f32.dedup();
    Ok(report)
}
