//! Arithmetic methods, half precision, and the NVFP4/FP8 conversions.

use super::*;

const BOOL: Ty = Ty::Scalar(Scalar::Bool);

/// `T::from(x)` (std's lossless conversions into `T`, and the `half`
/// crate's from `f16` and `bf16` into `f32` and `f64`): `x as to`, exact;
/// halves widen through `f32`.
fn lossless(l: &mut Lower<'_>, c: &Call, to: Scalar) -> Val {
    let from = scalar(c, 0);
    if !matches!(from, Scalar::F16 | Scalar::Bf16) {
        return l.cast(arg(c, 0), from, to);
    }
    let wide = half_to_f32(l, &arg(c, 0), from);
    l.cast(wide, Scalar::F32, to)
}

/// An `f16` or `bf16` widened to `f32` (exact).
fn half_to_f32(l: &mut Lower<'_>, v: &Val, from: Scalar) -> Val {
    let h = l.in_reg(v, from);
    if from == Scalar::F16 {
        return unary_op(l, "cvt.f32.f16", RegClass::F32, h.into());
    }
    // bf16 is the top half of an f32: widen exactly with a shift.
    let w = l.reg(RegClass::B32);
    l.emit("cvt.u32.u16", vec![w.into(), h.into()]);
    l.emit("shl.b32", vec![w.into(), w.into(), Operand::imm(16)]);
    unary_op(l, "mov.b32", RegClass::F32, w.into())
}

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn u8::from(value: T) -> u8",
        params: [ArgTy::T],
        types: &[BOOL],
        ret: RetTy::Is(Ty::Scalar(Scalar::U8)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::U8)),
    ),
    row!(
        "fn u16::from(value: T) -> u16",
        params: [ArgTy::T],
        types: &[BOOL, U8],
        ret: RetTy::Is(Ty::Scalar(Scalar::U16)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::U16)),
    ),
    row!(
        "fn u32::from(value: T) -> u32",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16],
        ret: RetTy::Is(Ty::Scalar(Scalar::U32)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::U32)),
    ),
    row!(
        "fn u64::from(value: T) -> u64",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16, U32],
        ret: RetTy::Is(Ty::Scalar(Scalar::U64)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::U64)),
    ),
    row!(
        "fn usize::from(value: T) -> usize",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16],
        ret: RetTy::Is(Ty::Scalar(Scalar::Usize)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::Usize)),
    ),
    row!(
        "fn i32::from(value: T) -> i32",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16],
        ret: RetTy::Is(Ty::Scalar(Scalar::I32)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::I32)),
    ),
    row!(
        "fn i64::from(value: T) -> i64",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16, U32, I32],
        ret: RetTy::Is(Ty::Scalar(Scalar::I64)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::I64)),
    ),
    row!(
        "fn f32::from(value: T) -> f32",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16, F16, BF16],
        ret: RetTy::Is(Ty::Scalar(Scalar::F32)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::F32)),
    ),
    row!(
        "fn f64::from(value: T) -> f64",
        params: [ArgTy::T],
        types: &[BOOL, U8, U16, U32, I32, F32, F16, BF16],
        ret: RetTy::Is(Ty::Scalar(Scalar::F64)),
        target: Sm80,
        lower: |l, c| Ok(lossless(l, c, Scalar::F64)),
    ),
    row!(
        "fn f16::from_f32(value: f32) -> f16",
        params: [ArgTy::Is(F32)],
        ret: RetTy::Is(F16),
        target: Sm80,
        lower: |l, c| {
            let f = f32_reg(l, c, 0);
            Ok(unary_op(l, "cvt.rn.f16.f32", RegClass::B16, f.into()))
        },
    ),
    row!(
        "fn bf16::from_f32(value: f32) -> bf16",
        params: [ArgTy::Is(F32)],
        ret: RetTy::Is(BF16),
        target: Sm80,
        lower: |l, c| {
            let f = f32_reg(l, c, 0);
            Ok(unary_op(l, "cvt.rn.bf16.f32", RegClass::B16, f.into()))
        },
    ),
    // `Float::from_f32` and `Float::to_f32` of `f32` and `f64`: `as`.
    row!(
        "fn f32::from_f32(value: f32) -> f32",
        params: [ArgTy::Is(F32)],
        ret: RetTy::Is(F32),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn f64::from_f32(value: f32) -> f64",
        params: [ArgTy::Is(F32)],
        ret: RetTy::Is(Ty::Scalar(Scalar::F64)),
        target: Sm80,
        lower: |l, c| Ok(l.cast(arg(c, 0), Scalar::F32, Scalar::F64)),
    ),
    row!(
        "fn to_f32(self) -> f32",
        params: [ArgTy::T],
        types: &[F16, BF16, F32, Ty::Scalar(Scalar::F64)],
        ret: RetTy::Is(F32),
        target: Sm80,
        lower: |l, c| match scalar(c, 0) {
            s @ (Scalar::F16 | Scalar::Bf16) => Ok(half_to_f32(l, &arg(c, 0), s)),
            s => Ok(l.cast(arg(c, 0), s, Scalar::F32)),
        },
    ),
    row!(
        "fn f16::from_bits(bits: u16) -> f16",
        params: [ArgTy::Is(U16)],
        ret: RetTy::Is(F16),
        target: Sm80,
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U16);
            Ok(unary_op(l, "cvt.u16.u32", RegClass::B16, r.into()))
        },
    ),
    row!(
        "fn bf16::from_bits(bits: u16) -> bf16",
        params: [ArgTy::Is(U16)],
        ret: RetTy::Is(BF16),
        target: Sm80,
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U16);
            Ok(unary_op(l, "cvt.u16.u32", RegClass::B16, r.into()))
        },
    ),
    row!(
        "fn to_bits(self) -> u16",
        params: [ArgTy::T],
        types: HALVES,
        ret: RetTy::Is(U16),
        target: Sm80,
        lower: |l, c| {
            let h = l.in_reg(&arg(c, 0), scalar(c, 0));
            Ok(unary_op(l, "cvt.u32.u16", RegClass::B32, h.into()))
        },
    ),
    row!(
        "fn f32::from_bits(bits: u32) -> f32",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Is(F32),
        target: Sm80,
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U32);
            Ok(unary_op(l, "mov.b32", RegClass::F32, r.into()))
        },
    ),
    row!(
        "fn to_bits(self) -> u32",
        params: [ArgTy::Is(F32)],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::F32);
            Ok(unary_op(l, "mov.b32", RegClass::B32, r.into()))
        },
    ),
    row!(
        "fn mul_add(self, a: Self, b: Self) -> Self",
        params: [ArgTy::T, ArgTy::T, ArgTy::T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let s = scalar(c, 0);
            let ops: Vec<Operand> = (0..3).map(|i| l.operand(&arg(c, i), s)).collect();
            let d = l.reg(s.reg_class());
            l.emit(format!("fma.rn.{}", s.ptx_arith()), [vec![d.into()], ops].concat());
            Ok(Val::Reg(d))
        },
    ),
    row!(
        "fn abs(self) -> Self",
        params: [ArgTy::T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            // Rust's float `abs` clears the sign bit, NaN included; PTX's
            // `abs` of a NaN gives the canonical NaN on the H100 unless
            // ptxas folds it (of a constant NaN it kept `0x7fc00000`: GPU
            // fuzz seed 5001852), so bits do it (f32, f64).
            let s = scalar(c, 0);
            let a = l.operand(&arg(c, 0), s);
            let (class, b, mask) = if s == Scalar::F64 {
                (RegClass::B64, "b64", "0x7FFFFFFFFFFFFFFF")
            } else {
                (RegClass::B32, "b32", "0x7FFFFFFF")
            };
            let bits = l.reg(class);
            l.emit(format!("mov.{b}"), vec![bits.into(), a]);
            l.emit(format!("and.{b}"), vec![bits.into(), bits.into(), Operand::imm(mask)]);
            let d = l.reg(s.reg_class());
            l.emit(format!("mov.{b}"), vec![d.into(), bits.into()]);
            Ok(Val::Reg(d))
        },
    ),
    row!(
        "fn sqrt(self) -> Self",
        params: [ArgTy::T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let s = scalar(c, 0);
            let a = l.operand(&arg(c, 0), s);
            Ok(unary_op(l, &format!("sqrt.rn.{}", s.ptx_arith()), s.reg_class(), a))
        },
    ),
    row!(
        "fn min(self, other: Self) -> Self",
        params: [ArgTy::T, ArgTy::T],
        types: &[F16, BF16, F32, F64, U8, U16, U32, I32, U64, I64, USIZE],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| min_max(l, c, "min"),
        fold: |a, _| fold_int_min_max(a, Ord::min),
    ),
    row!(
        "fn max(self, other: Self) -> Self",
        params: [ArgTy::T, ArgTy::T],
        types: &[F16, BF16, F32, F64, U8, U16, U32, I32, U64, I64, USIZE],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| min_max(l, c, "max"),
        fold: |a, _| fold_int_min_max(a, Ord::max),
    ),
    row!(
        "fn f16x2::new(lo: f16, hi: f16) -> f16x2",
        params: [ArgTy::Is(F16), ArgTy::Is(F16)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| {
            let lo = l.in_reg(&arg(c, 0), Scalar::F16);
            let hi = l.in_reg(&arg(c, 1), Scalar::F16);
            Ok(unary_op(
                l,
                "mov.b32",
                RegClass::B32,
                Operand::Vec(vec![lo.into(), hi.into()]),
            ))
        },
    ),
    row!(
        "fn f16x2::splat(value: f16) -> f16x2",
        params: [ArgTy::Is(F16)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| {
            let h = l.in_reg(&arg(c, 0), Scalar::F16);
            Ok(unary_op(
                l,
                "mov.b32",
                RegClass::B32,
                Operand::Vec(vec![h.into(), h.into()]),
            ))
        },
    ),
    row!(
        "fn f16x2::from_f32s(lo: f32, hi: f32) -> f16x2",
        params: [ArgTy::Is(F32), ArgTy::Is(F32)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| {
            let lo = f32_reg(l, c, 0);
            let hi = f32_reg(l, c, 1);
            let d = l.reg(RegClass::B32);
            // The first source goes to the upper half.
            l.emit("cvt.rn.f16x2.f32", vec![d.into(), hi.into(), lo.into()]);
            Ok(Val::Reg(d))
        },
    ),
    row!(
        "fn f16x2::from_bits(bits: u32) -> f16x2",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn to_bits(self) -> u32",
        params: [ArgTy::Is(Ty::F16x2)],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn bf16x2::new(lo: bf16, hi: bf16) -> bf16x2",
        params: [ArgTy::Is(BF16), ArgTy::Is(BF16)],
        ret: RetTy::Is(Ty::Bf16x2),
        target: Sm80,
        lower: |l, c| {
            let lo = l.in_reg(&arg(c, 0), Scalar::Bf16);
            let hi = l.in_reg(&arg(c, 1), Scalar::Bf16);
            Ok(unary_op(
                l,
                "mov.b32",
                RegClass::B32,
                Operand::Vec(vec![lo.into(), hi.into()]),
            ))
        },
    ),
    row!(
        "fn bf16x2::from_bits(bits: u32) -> bf16x2",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Is(Ty::Bf16x2),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn to_bits(self) -> u32",
        params: [ArgTy::Is(Ty::Bf16x2)],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn lo(self) -> f16",
        params: [ArgTy::Is(Ty::F16x2)],
        ret: RetTy::Is(F16),
        target: Sm80,
        lower: |l, c| half_of(l, c, false),
    ),
    row!(
        "fn hi(self) -> f16",
        params: [ArgTy::Is(Ty::F16x2)],
        ret: RetTy::Is(F16),
        target: Sm80,
        lower: |l, c| half_of(l, c, true),
    ),
    row!(
        "fn hadd2(a: f16x2, b: f16x2) -> f16x2",
        params: [ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| half2_op(l, c, "add.rn.f16x2"),
    ),
    row!(
        "fn hmul2(a: f16x2, b: f16x2) -> f16x2",
        params: [ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| half2_op(l, c, "mul.rn.f16x2"),
    ),
    row!(
        "fn hfma2(a: f16x2, b: f16x2, c: f16x2) -> f16x2",
        params: [ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2)],
        ret: RetTy::Is(Ty::F16x2),
        target: Sm80,
        lower: |l, c| half2_op(l, c, "fma.rn.f16x2"),
    ),
    row!(
        "fn byte_perm(a: u32, b: u32, selector: u32) -> u32",
        params: [ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(U32)],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| {
            let ops: Vec<Operand> = (0..3).map(|i| l.operand(&arg(c, i), Scalar::U32)).collect();
            let d = l.reg(RegClass::B32);
            l.emit("prmt.b32", [vec![d.into()], ops].concat());
            Ok(Val::Reg(d))
        },
    ),
    row!(
        "fn dp4a_s8(a: u32, b: u32, acc: i32) -> i32",
        params: [ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(I32)],
        ret: RetTy::Is(I32),
        target: Sm80,
        lower: |l, c| dp4a(l, c, "dp4a.s32.s32"),
    ),
    row!(
        "fn dp4a_u8_s8(a: u32, b: u32, acc: i32) -> i32",
        params: [ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(I32)],
        ret: RetTy::Is(I32),
        target: Sm80,
        lower: |l, c| dp4a(l, c, "dp4a.u32.s32"),
    ),
    row!(
        "fn u32x4::new(x: u32, y: u32, z: u32, w: u32) -> u32x4",
        params: [ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(U32)],
        ret: RetTy::Is(Ty::U32x4),
        target: Sm80,
        lower: |_, c| Ok(Val::Parts((0..4).map(|i| arg(c, i)).collect())),
    ),
];

/// Converts a constant f32 argument through a register (cvt takes one).
fn f32_reg(l: &mut Lower<'_>, c: &Call, i: usize) -> ir::Reg {
    l.in_reg(&arg(c, i), Scalar::F32)
}

fn dp4a(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let a = l.operand(&arg(c, 0), Scalar::U32);
    let b = l.operand(&arg(c, 1), Scalar::U32);
    let acc = l.operand(&arg(c, 2), Scalar::I32);
    let d = l.reg(RegClass::B32);
    l.emit(op, vec![d.into(), a, b, acc]);
    Ok(Val::Reg(d))
}

/// `min`/`max` of two integer constants (of the same type, so their
/// values compare as the type's); floats are left to the lowering.
fn fold_int_min_max(a: &[Const], pick: fn(i128, i128) -> i128) -> Option<Const> {
    match a {
        [Const::Int(x), Const::Int(y)] => Some(Const::Int(pick(*x, *y))),
        _ => None,
    }
}

fn min_max(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let s = scalar(c, 0);
    let a = l.operand(&arg(c, 0), s);
    let b = l.operand(&arg(c, 1), s);
    let d = l.reg(s.reg_class());
    l.emit(format!("{op}.{}", s.ptx_arith()), vec![d.into(), a, b]);
    Ok(Val::Reg(d))
}

fn half_of(l: &mut Lower<'_>, c: &Call, high: bool) -> Result<Val> {
    let src = l.bits_reg(&arg(c, 0), RegClass::B32);
    let d = l.reg(RegClass::B16);
    let parts = if high {
        vec![Operand::Sink, d.into()]
    } else {
        vec![d.into(), Operand::Sink]
    };
    l.emit("mov.b32", vec![Operand::Vec(parts), src.into()]);
    Ok(Val::Reg(d))
}

fn half2_op(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let ops: Vec<Operand> = (0..c.args.len())
        .map(|i| Operand::Reg(l.bits_reg(&arg(c, i), RegClass::B32)))
        .collect();
    let d = l.reg(RegClass::B32);
    l.emit(op, [vec![d.into()], ops].concat());
    Ok(Val::Reg(d))
}
