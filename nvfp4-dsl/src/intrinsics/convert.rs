//! Conversions and packed arithmetic: byte permutes, dot products, the
//! FP4 decoders and the `f16x2` operations.

use super::device_only;
use crate::types::f16x2;

/// Byte permute: byte `i` of the result is chosen by nibble `i` of
/// `selector` (bits 0..16) among the eight bytes of `a` (0..4) and `b`
/// (4..8); when the nibble's bit 3 is set, the byte is instead the chosen
/// byte's sign bit replicated (0x00 or 0xFF). With a table of eight small
/// bytes in `a`, `b` this is a four-way table lookup.
///
/// PTX: `prmt.b32 d, a, b, selector;`
#[inline(always)]
pub fn byte_perm(a: u32, b: u32, selector: u32) -> u32 {
    let _ = (a, b, selector);
    device_only("byte_perm")
}

/// `acc` plus the dot product of the four signed bytes of `a` and of `b`.
///
/// PTX: `dp4a.s32.s32 d, a, b, acc;`
#[inline(always)]
pub fn dp4a_s8(a: u32, b: u32, acc: i32) -> i32 {
    let _ = (a, b, acc);
    device_only("dp4a_s8")
}

/// `acc` plus the dot product of the four unsigned bytes of `a` and the four
/// signed bytes of `b`.
///
/// PTX: `dp4a.u32.s32 d, a, b, acc;`
#[inline(always)]
pub fn dp4a_u8_s8(a: u32, b: u32, acc: i32) -> i32 {
    let _ = (a, b, acc);
    device_only("dp4a_u8_s8")
}

/// Eight e2m1 values packed in a word (byte `j` is an [`Fp4x2`](crate::Fp4x2)
/// holding elements `2j` and `2j + 1`) as four `f16x2`, exactly: result `j`
/// holds element `2j` in its low half and `2j + 1` in its high half.
///
/// PTX: sm_100a `mov.b32 {b0, b1, b2, b3}, word;` and four
/// `cvt.rn.f16x2.e2m1x2`; sm_90/sm_80 (no FP4 conversion): `shl.b32` by 4,
/// then per pair one `prmt.b32` (element `2j` to bits 12..15, `2j + 1` to
/// bits 28..31), `shr`/`and`/`or` into f16 position (the value times 2^-14),
/// and `mul.rn.f16x2` by 2^14.
#[inline(always)]
pub fn decode_e2m1x8(word: u32) -> [f16x2; 4] {
    let _ = word;
    device_only("decode_e2m1x8")
}

/// [`decode_e2m1x8`] times 2^-14 (still exact: the smallest magnitude, 0.5 x
/// 2^-14, is an f16 subnormal). The integer decode of sm_90 yields this
/// directly, so a dot product that folds the 2^14 into a later `f32` scale
/// saves one multiply per pair there.
///
/// PTX: sm_90/sm_80 as [`decode_e2m1x8`] without the final multiply;
/// sm_100a `cvt.rn.f16x2.e2m1x2` then `mul.rn.f16x2` by 2^-14.
#[inline(always)]
pub fn decode_e2m1x8_scaled(word: u32) -> [f16x2; 4] {
    let _ = word;
    device_only("decode_e2m1x8_scaled")
}

/// `a + b` per half. PTX: `add.rn.f16x2 d, a, b;`
#[inline(always)]
pub fn hadd2(a: f16x2, b: f16x2) -> f16x2 {
    let _ = (a, b);
    device_only("hadd2")
}

/// `a * b` per half. PTX: `mul.rn.f16x2 d, a, b;`
#[inline(always)]
pub fn hmul2(a: f16x2, b: f16x2) -> f16x2 {
    let _ = (a, b);
    device_only("hmul2")
}

/// `a * b + c` per half, rounded once. PTX: `fma.rn.f16x2 d, a, b, c;`
#[inline(always)]
pub fn hfma2(a: f16x2, b: f16x2, c: f16x2) -> f16x2 {
    let _ = (a, b, c);
    device_only("hfma2")
}
