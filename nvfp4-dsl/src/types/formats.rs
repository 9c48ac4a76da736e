//! The NVFP4 and FP8 value types: e2m1 pairs, e4m3 scales and pairs of
//! them, decoded exactly and encoded to nearest.

use super::f16x2;
use half::f16;

/// Two e2m1 (FP4) values in one byte: the element with the even index in
/// the low nibble, the odd one in the high nibble.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Fp4x2(pub u8);

/// f16 bits of the 16 e2m1 codes: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
/// negatives (code 8 is -0).
const E2M1_F16_BITS: [u16; 16] = [
    0x0000, 0x3800, 0x3C00, 0x3E00, 0x4000, 0x4200, 0x4400, 0x4600, 0x8000, 0xB800, 0xBC00, 0xBE00, 0xC000, 0xC200,
    0xC400, 0xC600,
];

impl Fp4x2 {
    /// The byte as two e2m1 values (no instruction).
    pub const fn from_bits(bits: u8) -> Fp4x2 {
        Fp4x2(bits)
    }

    /// The bits (no instruction).
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// Both values, exactly: the even element (low nibble) in the low half.
    ///
    /// PTX: sm_100a `cvt.rn.f16x2.e2m1x2` (from a `.b8` register); sm_90 and
    /// sm_80 have no FP4 conversion: `mul.lo.u32` moves the nibbles to bits
    /// 12..15 and 28..31, `shr`/`and`/`or` place sign and exponent-mantissa
    /// into f16 position (the value times 2^-14), and `mul.rn.f16x2` by 2^14
    /// restores the value (exact).
    pub fn to_f16x2(self) -> f16x2 {
        f16x2(
            u32::from(E2M1_F16_BITS[usize::from(self.0 & 15)])
                | (u32::from(E2M1_F16_BITS[usize::from(self.0 >> 4)]) << 16),
        )
    }

    /// The e2m1 values nearest to `lo` (the low nibble) and `hi`: ties to
    /// the even code, magnitudes above 6 (and infinities) saturate to ±6,
    /// the sign is kept (so -0.0 and negatives that round to zero give -0),
    /// and NaN gives +6: what sm_100a's conversion does with `.satfinite`.
    ///
    /// PTX: sm_100a `cvt.rn.satfinite.e2m1x2.f32` (into a `.b8` register);
    /// sm_90 and sm_80 have no FP4 conversion: per value `abs`, `min` with 6,
    /// below 1 `cvt.rni` of twice the magnitude, from 1 on the f32 bits
    /// rounded at bit 22 (`bfe`, two `add`, `shr`, `sub`), a `selp` between
    /// the two, and the sign (`shr`, `and`, `setp.nan`, `selp`, `or`).
    pub fn from_f32s(lo: f32, hi: f32) -> Fp4x2 {
        Fp4x2(e2m1_code(lo) | (e2m1_code(hi) << 4))
    }
}

/// [`Fp4x2::from_f32s`] of one value: its code in the low nibble.
fn e2m1_code(x: f32) -> u8 {
    if x.is_nan() {
        return 7;
    }
    let m = x.abs().min(6.0);
    let code = if m < 1.0 {
        (2.0 * m).round_ties_even() as u8
    } else {
        let bits = m.to_bits();
        (((bits + 0x1F_FFFF + ((bits >> 22) & 1)) >> 22) - 252) as u8
    };
    code | if x.is_sign_negative() { 8 } else { 0 }
}

/// One e4m3 (FP8) value: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
/// infinities, NaN is `0x7F`/`0xFF`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct E4m3(pub u8);

impl E4m3 {
    /// The byte as an e4m3 value (no instruction).
    pub const fn from_bits(bits: u8) -> E4m3 {
        E4m3(bits)
    }

    /// The bits (no instruction).
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The value, exactly (NaN for `0x7F`/`0xFF`).
    ///
    /// PTX (sm_90+): `cvt.rn.f16x2.e4m3x2` of the byte, then `cvt.f32.f16` of
    /// the low half.
    pub fn to_f32(self) -> f32 {
        e4m3_to_f16(self.0).to_f32()
    }

    /// The e4m3 value nearest to `value`: ties to even, magnitudes of 448
    /// and above (and infinities) saturate to ±448, the sign is kept, NaN
    /// gives `0x7F`.
    ///
    /// PTX (sm_90+): `cvt.rn.satfinite.e4m3x2.f32` of the value and 0.0,
    /// then `cvt.u32.u16`.
    pub fn from_f32(value: f32) -> E4m3 {
        E4m3(e4m3_code(value))
    }
}

/// [`E4m3::from_f32`]'s byte. Below 2^-6 (subnormals and the first normal
/// binade's start) codes step by 2^-9; above, the f32 bits rounded to
/// nearest even at bit 20 give exponent and mantissa (2^-6 is code 8).
fn e4m3_code(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let m = x.abs();
    let code = if m >= 448.0 {
        0x7E
    } else if m < 0.015625 {
        (m * 512.0).round_ties_even() as u8
    } else {
        let bits = m.to_bits();
        (((bits + 0x7_FFFF + ((bits >> 20) & 1)) >> 20) - 960) as u8
    };
    code | if x.is_sign_negative() { 0x80 } else { 0 }
}

/// e4m3 -> f16 (exact: every e4m3 value is an f16 value).
fn e4m3_to_f16(byte: u8) -> f16 {
    let sign = u16::from(byte & 0x80) << 8;
    let exponent = u16::from((byte >> 3) & 0xF);
    let mantissa = u16::from(byte & 7);
    if byte & 0x7F == 0x7F {
        return f16::from_bits(0x7FFF);
    }
    let magnitude = if exponent == 0 {
        // Subnormal: mantissa * 2^-9, a normal f16 (or zero).
        f16::from_f32(f32::from(mantissa) / 512.0).to_bits()
    } else {
        // Rebias 7 -> 15 and widen the mantissa 3 -> 10 bits.
        ((exponent + 8) << 10) | (mantissa << 7)
    };
    f16::from_bits(sign | magnitude)
}

/// Two e4m3 values, the first in the low byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct E4m3x2(pub u16);

impl E4m3x2 {
    /// Two bytes as two e4m3 values, the first in the low byte (no
    /// instruction).
    pub const fn from_bits(bits: u16) -> E4m3x2 {
        E4m3x2(bits)
    }

    /// The bits (no instruction).
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// Both values, exactly: the low byte in the low half (NaN for
    /// `0x7F`/`0xFF`).
    ///
    /// PTX (sm_90+): `cvt.rn.f16x2.e4m3x2`.
    pub fn to_f16x2(self) -> f16x2 {
        f16x2::new(e4m3_to_f16(self.0 as u8), e4m3_to_f16((self.0 >> 8) as u8))
    }

    /// The e4m3 values nearest to `lo` (the low byte) and `hi`, each as
    /// [`E4m3::from_f32`].
    ///
    /// PTX (sm_90+): `cvt.rn.satfinite.e4m3x2.f32`, then `cvt.u32.u16`.
    pub fn from_f32s(lo: f32, hi: f32) -> E4m3x2 {
        E4m3x2(u16::from(e4m3_code(lo)) | (u16::from(e4m3_code(hi)) << 8))
    }
}
