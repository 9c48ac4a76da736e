//! The NVFP4 and FP8 value types: their bytes, decoding to f16/f32 (exact)
//! and encoding from f32 (nearest, ties to even, saturating).

use super::*;

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn Fp4x2::from_bits(bits: u8) -> Fp4x2",
        params: [ArgTy::Is(Ty::Scalar(Scalar::U8))],
        ret: RetTy::Is(Ty::Fp4x2),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn E4m3::from_bits(bits: u8) -> E4m3",
        params: [ArgTy::Is(Ty::Scalar(Scalar::U8))],
        ret: RetTy::Is(Ty::E4m3),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn E4m3x2::from_bits(bits: u16) -> E4m3x2",
        params: [ArgTy::Is(Ty::Scalar(Scalar::U16))],
        ret: RetTy::Is(Ty::E4m3x2),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn to_f16x2(self) -> f16x2",
        params: [ArgTy::Is(Ty::Fp4x2)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| {
            let byte = l.bits_reg(&arg(c, 0), RegClass::B32);
            if l.target.has(Target::Sm100a) {
                let b = l.reg(RegClass::B8);
                l.emit(
                    "mov.b32",
                    vec![
                        Operand::Vec(vec![b.into(), Operand::Sink, Operand::Sink, Operand::Sink]),
                        byte.into(),
                    ],
                );
                return Ok(unary_op(l, "cvt.rn.f16x2.e2m1x2", RegClass::B32, b.into()));
            }
            // Low nibble to bits 12..15, high nibble to bits 28..31.
            let t = l.reg(RegClass::B32);
            l.emit("mul.lo.u32", vec![t.into(), byte.into(), Operand::imm("0x01001000")]);
            let scaled = e2m1_pair_sm90(l, t);
            Ok(half2_times(l, scaled, F16X2_2_POW_14))
        },
    ),
    row!(
        "fn decode_e2m1x8(word: u32) -> [f16x2; 4]",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Array(Ty::F16x2, 4),
        target: Sm80,
        lower: |l, c| decode_e2m1x8(l, c, false),
    ),
    row!(
        "fn decode_e2m1x8_scaled(word: u32) -> [f16x2; 4]",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Array(Ty::F16x2, 4),
        target: Sm80,
        lower: |l, c| decode_e2m1x8(l, c, true),
    ),
    row!(
        "fn to_f16x2(self) -> f16x2",
        params: [ArgTy::Is(Ty::E4m3x2)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm90,
        lower: |l, c| {
            let pair = l.bits_reg(&arg(c, 0), RegClass::B32);
            Ok(Val::Reg(e4m3x2_to_f16x2(l, pair)))
        },
    ),
    row!(
        "fn to_f32(self) -> f32",
        params: [ArgTy::Is(Ty::E4m3)],
        ret: RetTy::Is(F32),
        target: Sm90,
        lower: |l, c| {
            let byte = l.bits_reg(&arg(c, 0), RegClass::B32);
            let pair = e4m3x2_to_f16x2(l, byte);
            let lo = l.reg(RegClass::B16);
            l.emit(
                "mov.b32",
                vec![Operand::Vec(vec![lo.into(), Operand::Sink]), pair.into()],
            );
            Ok(unary_op(l, "cvt.f32.f16", RegClass::F32, lo.into()))
        },
    ),
    row!(
        "fn to_bits(self) -> u8",
        params: [ArgTy::Is(Ty::Fp4x2)],
        ret: RetTy::Is(Ty::Scalar(Scalar::U8)),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn to_bits(self) -> u8",
        params: [ArgTy::Is(Ty::E4m3)],
        ret: RetTy::Is(Ty::Scalar(Scalar::U8)),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn to_bits(self) -> u16",
        params: [ArgTy::Is(Ty::E4m3x2)],
        ret: RetTy::Is(Ty::Scalar(Scalar::U16)),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn Fp4x2::from_f32s(lo: f32, hi: f32) -> Fp4x2",
        params: [ArgTy::Is(F32), ArgTy::Is(F32)],
        ret: RetTy::Is(Ty::Fp4x2),
        target: Sm80,
        lower: |l, c| {
            let lo = l.in_reg(&arg(c, 0), Scalar::F32);
            let hi = l.in_reg(&arg(c, 1), Scalar::F32);
            if l.target.has(Target::Sm100a) {
                let b = l.reg(RegClass::B8);
                l.emit("cvt.rn.satfinite.e2m1x2.f32", vec![b.into(), hi.into(), lo.into()]);
                return Ok(unary_op(l, "cvt.u32.u8", RegClass::B32, b.into()));
            }
            let lo = e2m1_code(l, lo);
            let hi = e2m1_code(l, hi);
            let d = l.reg(RegClass::B32);
            l.emit("shl.b32", vec![d.into(), hi.into(), Operand::imm(4)]);
            l.emit("or.b32", vec![d.into(), d.into(), lo.into()]);
            Ok(Val::Reg(d))
        },
    ),
    row!(
        "fn E4m3::from_f32(value: f32) -> E4m3",
        params: [ArgTy::Is(F32)],
        ret: RetTy::Is(Ty::E4m3),
        target: Sm90,
        lower: |l, c| {
            // The high byte encodes +0 (0x00), so the pair is the byte.
            let zero = l.in_reg(&Val::Const(Const::F32(0.0)), Scalar::F32);
            let value = l.in_reg(&arg(c, 0), Scalar::F32);
            Ok(Val::Reg(e4m3x2_from_f32s(l, value, zero)))
        },
    ),
    row!(
        "fn E4m3x2::from_f32s(lo: f32, hi: f32) -> E4m3x2",
        params: [ArgTy::Is(F32), ArgTy::Is(F32)],
        ret: RetTy::Is(Ty::E4m3x2),
        target: Sm90,
        lower: |l, c| {
            let lo = l.in_reg(&arg(c, 0), Scalar::F32);
            let hi = l.in_reg(&arg(c, 1), Scalar::F32);
            Ok(Val::Reg(e4m3x2_from_f32s(l, lo, hi)))
        },
    ),
];

/// 2^14 in both halves of an f16x2: the exponent bias difference between
/// f16 (15) and e2m1 (1).
const F16X2_2_POW_14: &str = "0x74007400";

/// 2^-14 in both halves.
const F16X2_2_POW_MINUS_14: &str = "0x04000400";

/// sm_90 has no FP4 conversion. With an e2m1 code in bits 12..15 and another
/// in bits 28..31 of `t`, sign and exponent-mantissa moved into f16 position
/// (`sign << 15 | em << 9` per half) give each value times 2^-14, exactly
/// (e2m1's subnormal 0.5 lands on an f16 subnormal).
fn e2m1_pair_sm90(l: &mut Lower<'_>, t: ir::Reg) -> ir::Reg {
    let shifted = l.reg(RegClass::B32);
    l.emit("shr.b32", vec![shifted.into(), t.into(), Operand::imm(3)]);
    let sign = l.reg(RegClass::B32);
    l.emit("and.b32", vec![sign.into(), t.into(), Operand::imm("0x80008000")]);
    // Exponent-mantissa, bits 12..14 of each half moved to 9..11.
    let magnitude = l.reg(RegClass::B32);
    l.emit(
        "and.b32",
        vec![magnitude.into(), shifted.into(), Operand::imm("0x0E000E00")],
    );
    let d = l.reg(RegClass::B32);
    l.emit("or.b32", vec![d.into(), sign.into(), magnitude.into()]);
    d
}

/// `v * factor` per half (f16x2 instructions take no immediates).
fn half2_times(l: &mut Lower<'_>, v: ir::Reg, factor: &str) -> Val {
    let f = l.reg(RegClass::B32);
    l.emit("mov.b32", vec![f.into(), Operand::imm(factor)]);
    let d = l.reg(RegClass::B32);
    l.emit("mul.rn.f16x2", vec![d.into(), v.into(), f.into()]);
    Val::Reg(d)
}

/// Eight e2m1 values of a word (byte j holds elements 2j, 2j+1) as four
/// f16x2, element 2j in the low half of result j. `scaled`: times 2^-14.
fn decode_e2m1x8(l: &mut Lower<'_>, c: &Call, scaled: bool) -> Result<Val> {
    let word = l.bits_reg(&arg(c, 0), RegClass::B32);
    let mut pairs = Vec::with_capacity(4);
    if l.target.has(Target::Sm100a) {
        let bytes: Vec<_> = (0..4).map(|_| l.reg(RegClass::B8)).collect();
        l.emit(
            "mov.b32",
            vec![Operand::Vec(bytes.iter().map(|b| (*b).into()).collect()), word.into()],
        );
        for b in bytes {
            let h = l.reg(RegClass::B32);
            l.emit("cvt.rn.f16x2.e2m1x2", vec![h.into(), b.into()]);
            pairs.push(if scaled {
                half2_times(l, h, F16X2_2_POW_MINUS_14)
            } else {
                Val::Reg(h)
            });
        }
        return Ok(Val::Parts(pairs));
    }
    // One byte permute per pair puts element 2j in bits 12..15 (from the
    // word shifted left by 4) and element 2j+1 in bits 28..31.
    let shifted = l.reg(RegClass::B32);
    l.emit("shl.b32", vec![shifted.into(), word.into(), Operand::imm(4)]);
    for j in 0..4u32 {
        let selector = ((4 + j) << 12) | (j << 8) | (j << 4) | j;
        let t = l.reg(RegClass::B32);
        l.emit(
            "prmt.b32",
            vec![
                t.into(),
                shifted.into(),
                word.into(),
                Operand::Imm(format!("0x{selector:04X}")),
            ],
        );
        let h = e2m1_pair_sm90(l, t);
        pairs.push(if scaled {
            Val::Reg(h)
        } else {
            half2_times(l, h, F16X2_2_POW_14)
        });
    }
    Ok(Val::Parts(pairs))
}

/// `cvt.rn.f16x2.e4m3x2` of the low 16 bits of `pair` (low byte to the low half).
fn e4m3x2_to_f16x2(l: &mut Lower<'_>, pair: ir::Reg) -> ir::Reg {
    let h = l.reg(RegClass::B16);
    l.emit(
        "mov.b32",
        vec![Operand::Vec(vec![h.into(), Operand::Sink]), pair.into()],
    );
    let d = l.reg(RegClass::B32);
    l.emit("cvt.rn.f16x2.e4m3x2", vec![d.into(), h.into()]);
    d
}

/// `cvt.rn.satfinite.e4m3x2.f32` of `hi` (high byte) and `lo`, widened.
fn e4m3x2_from_f32s(l: &mut Lower<'_>, lo: ir::Reg, hi: ir::Reg) -> ir::Reg {
    let h = l.reg(RegClass::B16);
    l.emit("cvt.rn.satfinite.e4m3x2.f32", vec![h.into(), hi.into(), lo.into()]);
    let d = l.reg(RegClass::B32);
    l.emit("cvt.u32.u16", vec![d.into(), h.into()]);
    d
}

/// The e2m1 code nearest to `x` (ties to even, saturating; NaN gives +6 as
/// sm_100a's `.satfinite` conversion does), for targets without one. With
/// the magnitude `m` clamped to 6 (`min` drops a NaN): below 1 the codes
/// step by 0.5, so the code is `2m` rounded to an even integer; from 1 on
/// e2m1 keeps one mantissa bit, so the f32 bits rounded to nearest even at
/// bit 22 give exponent and mantissa, `(bits >> 22) - 252` (1.0 is code 2).
fn e2m1_code(l: &mut Lower<'_>, x: ir::Reg) -> ir::Reg {
    let m = l.reg(RegClass::F32);
    l.emit("abs.f32", vec![m.into(), x.into()]);
    l.emit("min.f32", vec![m.into(), m.into(), Operand::imm("0f40C00000")]);
    let twice = l.reg(RegClass::F32);
    l.emit("add.rn.f32", vec![twice.into(), m.into(), m.into()]);
    let small = l.reg(RegClass::B32);
    l.emit("cvt.rni.u32.f32", vec![small.into(), twice.into()]);
    let bits = l.reg(RegClass::B32);
    l.emit("mov.b32", vec![bits.into(), m.into()]);
    let odd = l.reg(RegClass::B32);
    l.emit(
        "bfe.u32",
        vec![odd.into(), bits.into(), Operand::imm(22), Operand::imm(1)],
    );
    let large = l.reg(RegClass::B32);
    l.emit("add.u32", vec![large.into(), bits.into(), Operand::imm("0x1FFFFF")]);
    l.emit("add.u32", vec![large.into(), large.into(), odd.into()]);
    l.emit("shr.u32", vec![large.into(), large.into(), Operand::imm(22)]);
    l.emit("sub.u32", vec![large.into(), large.into(), Operand::imm(252)]);
    let below_one = l.reg(RegClass::Pred);
    l.emit(
        "setp.lt.f32",
        vec![below_one.into(), m.into(), Operand::imm("0f3F800000")],
    );
    let code = l.reg(RegClass::B32);
    l.emit(
        "selp.b32",
        vec![code.into(), small.into(), large.into(), below_one.into()],
    );
    // The sign, kept for zero and small negatives, dropped for NaN.
    let sign = l.reg(RegClass::B32);
    l.emit("mov.b32", vec![sign.into(), x.into()]);
    l.emit("shr.u32", vec![sign.into(), sign.into(), Operand::imm(28)]);
    l.emit("and.b32", vec![sign.into(), sign.into(), Operand::imm(8)]);
    let nan = l.reg(RegClass::Pred);
    l.emit("setp.nan.f32", vec![nan.into(), x.into(), x.into()]);
    l.emit("selp.b32", vec![sign.into(), Operand::imm(0), sign.into(), nan.into()]);
    l.emit("or.b32", vec![code.into(), code.into(), sign.into()]);
    code
}
