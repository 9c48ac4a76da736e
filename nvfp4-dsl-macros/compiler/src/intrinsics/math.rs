//! The methods of Rust's primitive numbers that kernels use: wrapping and
//! saturating integer arithmetic, bit counting and rotation, `pow`, `abs`,
//! `signum`, `clamp`, `is_power_of_two`; float rounding, `copysign`,
//! `recip`, `powi`, `clamp`, `signum`, the classification tests, and the
//! `f32` functions PTX approximates (`exp`, `exp2`, `ln`, `log2`, `sin`,
//! `cos`, `tanh`).
//!
//! Each has Rust's (release-build) semantics; calls whose arguments are all
//! constants fold, except the approximate functions, whose value is the
//! hardware's. The accuracy of the approximate ones is documented in the
//! README and measured by `tests/std_methods.rs`.

use super::*;
use crate::lower::fold::{f32_imm, int_imm, wrap_int};
use ast::BinOp;

const INTS: &[Ty] = &[U8, U16, U32, I32, U64, I64, USIZE];
const SIGNED: &[Ty] = &[I32, I64];
const UNSIGNED: &[Ty] = &[U8, U16, U32, U64, USIZE];
const BOOL: Ty = Ty::Scalar(Scalar::Bool);

/// The methods PTX computes with an `.approx` instruction, in `f32` only.
pub const APPROXIMATE: &[&str] = &["exp", "exp2", "ln", "log2", "sin", "cos", "tanh"];

macro_rules! method {
    ($name:literal, [$($p:expr),*], $set:expr, $ret:expr, $sig:literal, $lower:expr) => {
        Intrinsic {
            name: $name,
            form: Form::Method,
            generics: Generics::None,
            params: &[$($p),*],
            t_set: $set,
            ret: $ret,
            min_target: Target::Sm80,
            sig: $sig,
            lower: $lower,
        }
    };
}

/// An integer method: `fn name(self) -> Self` and its relatives.
macro_rules! int_method {
    ($name:literal, [$($p:expr),*], $set:expr, $ret:expr, $sig:literal) => {
        method!($name, [$($p),*], $set, $ret, $sig, |l, c| int(l, c, $name))
    };
}

macro_rules! float_method {
    ($name:literal, [$($p:expr),*], $set:expr, $ret:expr, $sig:literal) => {
        method!($name, [$($p),*], $set, $ret, $sig, |l, c| float(l, c, $name))
    };
}

use ArgTy::{Is, T};

pub(super) static TABLE: &[Intrinsic] = &[
    int_method!(
        "wrapping_add",
        [T, T],
        INTS,
        RetTy::T,
        "fn wrapping_add(self, rhs: Self) -> Self"
    ),
    int_method!(
        "wrapping_sub",
        [T, T],
        INTS,
        RetTy::T,
        "fn wrapping_sub(self, rhs: Self) -> Self"
    ),
    int_method!(
        "wrapping_mul",
        [T, T],
        INTS,
        RetTy::T,
        "fn wrapping_mul(self, rhs: Self) -> Self"
    ),
    int_method!(
        "wrapping_div",
        [T, T],
        INTS,
        RetTy::T,
        "fn wrapping_div(self, rhs: Self) -> Self"
    ),
    int_method!(
        "wrapping_rem",
        [T, T],
        INTS,
        RetTy::T,
        "fn wrapping_rem(self, rhs: Self) -> Self"
    ),
    int_method!("wrapping_neg", [T], INTS, RetTy::T, "fn wrapping_neg(self) -> Self"),
    int_method!(
        "wrapping_shl",
        [T, Is(U32)],
        INTS,
        RetTy::T,
        "fn wrapping_shl(self, rhs: u32) -> Self"
    ),
    int_method!(
        "wrapping_shr",
        [T, Is(U32)],
        INTS,
        RetTy::T,
        "fn wrapping_shr(self, rhs: u32) -> Self"
    ),
    int_method!("wrapping_abs", [T], SIGNED, RetTy::T, "fn wrapping_abs(self) -> Self"),
    int_method!(
        "wrapping_pow",
        [T, Is(U32)],
        INTS,
        RetTy::T,
        "fn wrapping_pow(self, exp: u32) -> Self"
    ),
    int_method!(
        "saturating_add",
        [T, T],
        INTS,
        RetTy::T,
        "fn saturating_add(self, rhs: Self) -> Self"
    ),
    int_method!(
        "saturating_sub",
        [T, T],
        INTS,
        RetTy::T,
        "fn saturating_sub(self, rhs: Self) -> Self"
    ),
    int_method!(
        "saturating_mul",
        [T, T],
        INTS,
        RetTy::T,
        "fn saturating_mul(self, rhs: Self) -> Self"
    ),
    int_method!(
        "leading_zeros",
        [T],
        INTS,
        RetTy::Is(U32),
        "fn leading_zeros(self) -> u32"
    ),
    int_method!(
        "trailing_zeros",
        [T],
        INTS,
        RetTy::Is(U32),
        "fn trailing_zeros(self) -> u32"
    ),
    int_method!("count_ones", [T], INTS, RetTy::Is(U32), "fn count_ones(self) -> u32"),
    int_method!("count_zeros", [T], INTS, RetTy::Is(U32), "fn count_zeros(self) -> u32"),
    int_method!(
        "rotate_left",
        [T, Is(U32)],
        INTS,
        RetTy::T,
        "fn rotate_left(self, n: u32) -> Self"
    ),
    int_method!(
        "rotate_right",
        [T, Is(U32)],
        INTS,
        RetTy::T,
        "fn rotate_right(self, n: u32) -> Self"
    ),
    int_method!("reverse_bits", [T], INTS, RetTy::T, "fn reverse_bits(self) -> Self"),
    int_method!("pow", [T, Is(U32)], INTS, RetTy::T, "fn pow(self, exp: u32) -> Self"),
    int_method!("abs", [T], SIGNED, RetTy::T, "fn abs(self) -> Self"),
    int_method!("signum", [T], SIGNED, RetTy::T, "fn signum(self) -> Self"),
    int_method!(
        "div_ceil",
        [T, T],
        UNSIGNED,
        RetTy::T,
        "fn div_ceil(self, rhs: Self) -> Self"
    ),
    int_method!(
        "is_multiple_of",
        [T, T],
        UNSIGNED,
        RetTy::Is(BOOL),
        "fn is_multiple_of(self, rhs: Self) -> bool"
    ),
    int_method!(
        "is_power_of_two",
        [T],
        UNSIGNED,
        RetTy::Is(BOOL),
        "fn is_power_of_two(self) -> bool"
    ),
    int_method!(
        "clamp",
        [T, T, T],
        INTS,
        RetTy::T,
        "fn clamp(self, min: Self, max: Self) -> Self"
    ),
    float_method!("floor", [T], FLOATS, RetTy::T, "fn floor(self) -> Self"),
    float_method!("ceil", [T], FLOATS, RetTy::T, "fn ceil(self) -> Self"),
    float_method!("trunc", [T], FLOATS, RetTy::T, "fn trunc(self) -> Self"),
    float_method!("round", [T], FLOATS, RetTy::T, "fn round(self) -> Self"),
    float_method!(
        "round_ties_even",
        [T],
        FLOATS,
        RetTy::T,
        "fn round_ties_even(self) -> Self"
    ),
    float_method!("fract", [T], FLOATS, RetTy::T, "fn fract(self) -> Self"),
    float_method!(
        "copysign",
        [T, T],
        FLOATS,
        RetTy::T,
        "fn copysign(self, sign: Self) -> Self"
    ),
    float_method!("recip", [T], FLOATS, RetTy::T, "fn recip(self) -> Self"),
    float_method!("powi", [T, Is(I32)], FLOATS, RetTy::T, "fn powi(self, n: i32) -> Self"),
    float_method!(
        "clamp",
        [T, T, T],
        FLOATS,
        RetTy::T,
        "fn clamp(self, min: Self, max: Self) -> Self"
    ),
    float_method!("signum", [T], FLOATS, RetTy::T, "fn signum(self) -> Self"),
    float_method!("is_nan", [T], FLOATS, RetTy::Is(BOOL), "fn is_nan(self) -> bool"),
    float_method!("is_finite", [T], FLOATS, RetTy::Is(BOOL), "fn is_finite(self) -> bool"),
    float_method!(
        "is_infinite",
        [T],
        FLOATS,
        RetTy::Is(BOOL),
        "fn is_infinite(self) -> bool"
    ),
    float_method!(
        "is_sign_negative",
        [T],
        FLOATS,
        RetTy::Is(BOOL),
        "fn is_sign_negative(self) -> bool"
    ),
    float_method!(
        "is_sign_positive",
        [T],
        FLOATS,
        RetTy::Is(BOOL),
        "fn is_sign_positive(self) -> bool"
    ),
    float_method!("exp", [T], &[F32], RetTy::T, "fn exp(self) -> f32"),
    float_method!("exp2", [T], &[F32], RetTy::T, "fn exp2(self) -> f32"),
    float_method!("ln", [T], &[F32], RetTy::T, "fn ln(self) -> f32"),
    float_method!("log2", [T], &[F32], RetTy::T, "fn log2(self) -> f32"),
    float_method!("sin", [T], &[F32], RetTy::T, "fn sin(self) -> f32"),
    float_method!("cos", [T], &[F32], RetTy::T, "fn cos(self) -> f32"),
    float_method!("tanh", [T], &[F32], RetTy::T, "fn tanh(self) -> f32"),
    method!(
        "to_bits",
        [Is(F64)],
        &[],
        RetTy::Is(U64),
        "fn to_bits(self) -> u64",
        |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::F64);
            Ok(unary_op(l, "mov.b64", RegClass::B64, r.into()))
        }
    ),
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("f64"),
        generics: Generics::None,
        params: &[Is(U64)],
        t_set: &[],
        ret: RetTy::Is(F64),
        min_target: Target::Sm80,
        sig: "fn f64::from_bits(bits: u64) -> f64",
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U64);
            Ok(unary_op(l, "mov.b64", RegClass::F64, r.into()))
        },
    },
];

/// The arguments, when every one is a constant.
fn constants(c: &Call) -> Option<Vec<Const>> {
    c.args
        .iter()
        .map(|(v, _)| match v {
            Val::Const(k) => Some(*k),
            _ => None,
        })
        .collect()
}

/// `b32` or `b64`: the register width of an integer type.
fn bits_of(s: Scalar) -> &'static str {
    if s.reg_class() == RegClass::B64 { "b64" } else { "b32" }
}

/// The unsigned type of the same width (rotations shift in zeros).
fn unsigned(s: Scalar) -> Scalar {
    match s {
        Scalar::I32 => Scalar::U32,
        Scalar::I64 => Scalar::U64,
        s => s,
    }
}

fn int(l: &mut Lower<'_>, c: &Call, name: &str) -> Result<Val> {
    use BinOp::*;
    let s = scalar(c, 0);
    if let Some(k) = constants(c).and_then(|a| fold_int(name, s, &a)) {
        return Ok(Val::Const(k));
    }
    let span = c.span;
    let x = arg(c, 0);
    let bits = s.bits();
    let b = bits_of(s);
    let t = s.ptx_arith();
    let class = s.reg_class();
    match name {
        "wrapping_add" => l.binary(Add, x, arg(c, 1), s, None, None, span),
        "wrapping_sub" => l.binary(Sub, x, arg(c, 1), s, None, None, span),
        "wrapping_mul" => l.binary(Mul, x, arg(c, 1), s, None, None, span),
        "wrapping_div" => l.binary(Div, x, arg(c, 1), s, None, None, span),
        "wrapping_rem" => l.binary(Rem, x, arg(c, 1), s, None, None, span),
        "wrapping_neg" => l.binary(Sub, Val::Const(Const::Int(0)), x, s, None, None, span),
        "wrapping_shl" => l.binary(Shl, x, arg(c, 1), s, Some(Scalar::U32), None, span),
        "wrapping_shr" => l.binary(Shr, x, arg(c, 1), s, Some(Scalar::U32), None, span),
        "abs" | "wrapping_abs" => {
            let xr = l.in_reg(&x, s);
            Ok(Val::Reg(int_abs(l, s, xr)))
        }
        "leading_zeros" | "trailing_zeros" | "count_ones" | "count_zeros" | "is_power_of_two" => {
            let mut src = l.in_reg(&x, s);
            if name == "trailing_zeros" {
                // The trailing zeros are the leading zeros of the reversed bits.
                let r = l.reg(class);
                l.emit(format!("brev.{b}"), vec![r.into(), src.into()]);
                src = r;
            }
            let counts_ones = matches!(name, "count_ones" | "count_zeros" | "is_power_of_two");
            let d = l.reg(RegClass::B32);
            let op = if counts_ones { "popc" } else { "clz" };
            l.emit(format!("{op}.{b}"), vec![d.into(), src.into()]);
            match name {
                // u8/u16 live zero-extended in 32 bits.
                "leading_zeros" if bits < 32 => {
                    l.emit("sub.u32", vec![d.into(), d.into(), Operand::imm(32 - bits)]);
                }
                "trailing_zeros" if bits < 32 => {
                    l.emit("min.u32", vec![d.into(), d.into(), Operand::imm(bits)]);
                }
                "count_zeros" => {
                    let z = l.reg(RegClass::B32);
                    l.emit("sub.u32", vec![z.into(), Operand::imm(bits), d.into()]);
                    return Ok(Val::Reg(z));
                }
                "is_power_of_two" => {
                    let p = l.reg(RegClass::Pred);
                    l.emit("setp.eq.u32", vec![p.into(), d.into(), Operand::imm(1)]);
                    return Ok(Val::Reg(p));
                }
                _ => {}
            }
            Ok(Val::Reg(d))
        }
        "reverse_bits" => {
            let xr = l.in_reg(&x, s);
            let d = l.reg(class);
            l.emit(format!("brev.{b}"), vec![d.into(), xr.into()]);
            if bits < 32 {
                l.emit("shr.u32", vec![d.into(), d.into(), Operand::imm(32 - bits)]);
            }
            Ok(Val::Reg(d))
        }
        "rotate_left" | "rotate_right" => rotate(l, c, name == "rotate_left"),
        "div_ceil" => {
            // The quotient, plus one when quotient x divisor falls short of
            // x (one division, not a second one for the remainder: u64's
            // is a subroutine); by zero `MAX`, as `x / 0` gives (the
            // quotient plus one would wrap). With a remainder the divisor
            // is at least 2, so the quotient plus one fits, and the product
            // never exceeds x.
            let y = arg(c, 1);
            let q = l.binary(Div, x.clone(), y.clone(), s, None, None, span)?;
            let back = l.binary(Mul, q.clone(), y.clone(), s, None, None, span)?;
            let (qr, br, xr, yr) = (l.in_reg(&q, s), l.in_reg(&back, s), l.in_reg(&x, s), l.in_reg(&y, s));
            let (rest, zero) = (l.reg(RegClass::Pred), l.reg(RegClass::Pred));
            l.emit(format!("setp.ne.{t}"), vec![rest.into(), br.into(), xr.into()]);
            l.emit(format!("setp.eq.{t}"), vec![zero.into(), yr.into(), Operand::imm(0)]);
            let up = l.reg(class);
            l.emit(
                format!("selp.{t}"),
                vec![up.into(), Operand::imm(1), Operand::imm(0), rest.into()],
            );
            let d = l.reg(class);
            l.emit(format!("add.{t}"), vec![d.into(), qr.into(), up.into()]);
            let max = l.operand(&Val::Const(Const::Int(s.int_range().1)), s);
            l.emit(format!("selp.{t}"), vec![d.into(), max, d.into(), zero.into()]);
            Ok(Val::Reg(d))
        }
        "is_multiple_of" => {
            // `x % y == 0`, and by zero whether x is zero (std's definition;
            // `x % 0` gives all ones in a kernel, never zero).
            let y = arg(c, 1);
            let zero = Val::Const(Const::Int(0));
            if let Val::Const(Const::Int(0)) = y {
                return l.binary(Eq, x, zero, s, None, None, span);
            }
            let rem = l.binary(Rem, x.clone(), y.clone(), s, None, None, span)?;
            let divides = l.binary(Eq, rem, zero.clone(), s, None, None, span)?;
            if matches!(y, Val::Const(_)) {
                return Ok(divides);
            }
            let (xr, yr) = (l.in_reg(&x, s), l.in_reg(&y, s));
            let (by_zero, x_zero) = (l.reg(RegClass::Pred), l.reg(RegClass::Pred));
            l.emit(format!("setp.eq.{t}"), vec![by_zero.into(), yr.into(), Operand::imm(0)]);
            l.emit(format!("setp.eq.{t}"), vec![x_zero.into(), xr.into(), Operand::imm(0)]);
            l.emit("and.pred", vec![by_zero.into(), by_zero.into(), x_zero.into()]);
            let dr = l.in_reg(&divides, Scalar::Bool);
            let d = l.reg(RegClass::Pred);
            l.emit("or.pred", vec![d.into(), dr.into(), by_zero.into()]);
            Ok(Val::Reg(d))
        }
        "pow" | "wrapping_pow" => int_pow(l, c),
        "signum" => {
            let xr = l.in_reg(&x, s);
            let (pos, neg) = (l.reg(RegClass::Pred), l.reg(RegClass::Pred));
            l.emit(format!("setp.gt.{t}"), vec![pos.into(), xr.into(), Operand::imm(0)]);
            l.emit(format!("setp.lt.{t}"), vec![neg.into(), xr.into(), Operand::imm(0)]);
            let d = l.reg(class);
            l.emit(
                format!("selp.{t}"),
                vec![d.into(), Operand::imm(1), Operand::imm(0), pos.into()],
            );
            l.emit(
                format!("selp.{t}"),
                vec![d.into(), Operand::imm(-1), d.into(), neg.into()],
            );
            Ok(Val::Reg(d))
        }
        "clamp" => {
            // `min(max(x, lo), hi)`: Rust's clamp whenever lo <= hi (Rust
            // panics otherwise).
            let xr = l.in_reg(&x, s);
            let lo = l.operand(&arg(c, 1), s);
            let hi = l.operand(&arg(c, 2), s);
            let d = l.reg(class);
            l.emit(format!("max.{t}"), vec![d.into(), xr.into(), lo]);
            l.emit(format!("min.{t}"), vec![d.into(), d.into(), hi]);
            Ok(Val::Reg(d))
        }
        "saturating_add" | "saturating_sub" if !s.is_signed() => {
            // `min(a, MAX - b) + b` and `max(a, b) - b` never leave the
            // type's range.
            let y = arg(c, 1);
            let add = name == "saturating_add";
            let bound = if add {
                let max = Val::Const(Const::Int(s.int_range().1));
                let room = l.binary(Sub, max, y.clone(), s, None, None, span)?;
                let (xo, ro) = (l.in_reg(&x, s), l.operand(&room, s));
                let m = l.reg(class);
                l.emit(format!("min.{t}"), vec![m.into(), xo.into(), ro]);
                m
            } else {
                let (xo, yo) = (l.in_reg(&x, s), l.operand(&y, s));
                let m = l.reg(class);
                l.emit(format!("max.{t}"), vec![m.into(), xo.into(), yo]);
                m
            };
            l.binary(if add { Add } else { Sub }, Val::Reg(bound), y, s, None, None, span)
        }
        "saturating_add" | "saturating_sub" => {
            // i32, i64: the wrapped result, replaced by MIN or MAX (the
            // side of `x`) when the operation overflowed. Not PTX's
            // `add.sat.s32`: ptxas folds `add.s32 r, a, c1` into a
            // following `add.sat.s32 d, r, c2` as `add.sat(a, c1 + c2)`,
            // which does not saturate when `a + c1` wraps (GPU fuzz seed
            // 5002873: `(a + -457534851).saturating_add(1356611541)`).
            let add = name == "saturating_add";
            let y = arg(c, 1);
            let wrapped = l.binary(if add { Add } else { Sub }, x.clone(), y.clone(), s, None, None, span)?;
            let a = l.binary(BitXor, x.clone(), wrapped.clone(), s, None, None, span)?;
            let other = if add { wrapped.clone() } else { x.clone() };
            let bx = l.binary(BitXor, y, other, s, None, None, span)?;
            let overflow_bits = l.binary(BitAnd, a, bx, s, None, None, span)?;
            let overflowed = l.binary(Lt, overflow_bits, Val::Const(Const::Int(0)), s, None, None, span)?;
            saturate_toward(l, c, x, wrapped, overflowed)
        }
        "saturating_mul" => saturating_mul(l, c),
        other => unreachable!("no integer method `{other}`"),
    }
}

/// `overflowed ? (x < 0 ? MIN : MAX) : wrapped`, for a signed 32- or
/// 64-bit `x` (the call's type).
fn saturate_toward(l: &mut Lower<'_>, c: &Call, x: Val, wrapped: Val, overflowed: Val) -> Result<Val> {
    use BinOp::*;
    let s = scalar(c, 0);
    let top = Val::Const(Const::Int((s.bits() - 1).into()));
    let sign = l.binary(Shr, x, top, s, None, None, c.span)?;
    let max = Val::Const(Const::Int(s.int_range().1));
    let limit = l.binary(BitXor, sign, max, s, None, None, c.span)?;
    let (lo, wo) = (l.operand(&limit, s), l.operand(&wrapped, s));
    let p = l.in_reg(&overflowed, Scalar::Bool);
    let d = l.reg(s.reg_class());
    l.emit(format!("selp.{}", bits_of(s)), vec![d.into(), lo, wo, p.into()]);
    Ok(Val::Reg(d))
}

fn saturating_mul(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    use BinOp::*;
    let s = scalar(c, 0);
    let (x, y) = (arg(c, 0), arg(c, 1));
    let xr = l.in_reg(&x, s);
    let yo = l.operand(&y, s);
    let t = s.ptx_arith();
    match s {
        Scalar::U8 | Scalar::U16 => {
            // The full product fits in 32 bits.
            let d = l.reg(RegClass::B32);
            l.emit("mul.lo.u32", vec![d.into(), xr.into(), yo]);
            l.emit("min.u32", vec![d.into(), d.into(), Operand::imm(s.int_range().1)]);
            Ok(Val::Reg(d))
        }
        Scalar::I32 => {
            let w = l.reg(RegClass::B64);
            l.emit("mul.wide.s32", vec![w.into(), xr.into(), yo]);
            l.emit("max.s64", vec![w.into(), w.into(), Operand::imm(i32::MIN)]);
            l.emit("min.s64", vec![w.into(), w.into(), Operand::imm(i32::MAX)]);
            let d = l.reg(RegClass::B32);
            l.emit("cvt.u32.u64", vec![d.into(), w.into()]);
            Ok(Val::Reg(d))
        }
        Scalar::I64 => {
            // Overflow when the high half is not the sign of the low half.
            let (lo, hi) = (l.reg(RegClass::B64), l.reg(RegClass::B64));
            l.emit("mul.lo.s64", vec![lo.into(), xr.into(), yo.clone()]);
            l.emit("mul.hi.s64", vec![hi.into(), xr.into(), yo]);
            let sign = l.binary(Shr, Val::Reg(lo), Val::Const(Const::Int(63)), s, None, None, c.span)?;
            let overflowed = l.binary(Ne, Val::Reg(hi), sign, s, None, None, c.span)?;
            // The exact product's sign is the sign of x ^ y.
            let signs = l.binary(BitXor, x, y, s, None, None, c.span)?;
            saturate_toward(l, c, signs, Val::Reg(lo), overflowed)
        }
        _ => {
            // u32, u64, usize: any high bits mean the product is too large.
            let (lo, hi) = (l.reg(s.reg_class()), l.reg(s.reg_class()));
            l.emit(format!("mul.lo.{t}"), vec![lo.into(), xr.into(), yo.clone()]);
            l.emit(format!("mul.hi.{t}"), vec![hi.into(), xr.into(), yo]);
            let p = l.reg(RegClass::Pred);
            l.emit(format!("setp.ne.{t}"), vec![p.into(), hi.into(), Operand::imm(0)]);
            let d = l.reg(s.reg_class());
            let b = bits_of(s);
            l.emit(
                format!("selp.{b}"),
                vec![d.into(), Operand::Imm(int_imm(s.int_range().1, s)), lo.into(), p.into()],
            );
            Ok(Val::Reg(d))
        }
    }
}

fn rotate(l: &mut Lower<'_>, c: &Call, left: bool) -> Result<Val> {
    use BinOp::*;
    let s = scalar(c, 0);
    let (x, n) = (arg(c, 0), arg(c, 1));
    if s.bits() == 32 {
        // The funnel shift of x:x is the rotation (its amount is taken mod 32).
        let xr = l.in_reg(&x, s);
        let nr = l.in_reg(&n, Scalar::U32);
        let d = l.reg(RegClass::B32);
        let op = if left { "shf.l.wrap.b32" } else { "shf.r.wrap.b32" };
        l.emit(op, vec![d.into(), xr.into(), xr.into(), nr.into()]);
        return Ok(Val::Reg(d));
    }
    // `x << k | x >> (bits - k)` on the unsigned bits; with k = 0 both
    // shifts (amounts masked to the width, as Rust's) give x.
    let u = unsigned(s);
    let xu = l.cast(x, s, u);
    let bits = Val::Const(Const::Int(s.bits().into()));
    let k = l.binary(
        BitAnd,
        n,
        Val::Const(Const::Int((s.bits() - 1).into())),
        Scalar::U32,
        None,
        None,
        c.span,
    )?;
    let back = l.binary(Sub, bits, k.clone(), Scalar::U32, None, None, c.span)?;
    let (lk, rk) = if left { (k, back) } else { (back, k) };
    let hi = l.binary(Shl, xu.clone(), lk, u, Some(Scalar::U32), None, c.span)?;
    let lo = l.binary(Shr, xu, rk, u, Some(Scalar::U32), None, c.span)?;
    let r = l.binary(BitOr, hi, lo, u, None, None, c.span)?;
    Ok(l.cast(r, u, s))
}

/// `x.pow(e)` by square-and-multiply, wrapping: unrolled for a constant
/// exponent, a loop over the exponent's bits otherwise.
fn int_pow(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    use BinOp::*;
    let s = scalar(c, 0);
    let span = c.span;
    let (x, e) = (arg(c, 0), arg(c, 1));
    if let Val::Const(Const::Int(mut e)) = e {
        let mut result = Val::Const(Const::Int(1));
        let mut base = x;
        while e > 0 {
            if e & 1 == 1 {
                result = l.binary(Mul, result, base.clone(), s, None, None, span)?;
            }
            e >>= 1;
            if e > 0 {
                base = l.binary(Mul, base.clone(), base, s, None, None, span)?;
            }
        }
        return Ok(result);
    }
    let result = l.reg(s.reg_class());
    l.emit(format!("mov.{}", bits_of(s)), vec![result.into(), Operand::imm(1)]);
    let base = l.reg(s.reg_class());
    let xo = l.operand(&x, s);
    l.emit(format!("mov.{}", bits_of(s)), vec![base.into(), xo]);
    let left = l.reg(RegClass::B32);
    let eo = l.operand(&e, Scalar::U32);
    l.emit("mov.b32", vec![left.into(), eo]);
    let id = l.label();
    let (body, ()) = l.nested(|l| {
        let done = l.reg(RegClass::Pred);
        l.emit("setp.eq.u32", vec![done.into(), left.into(), Operand::imm(0)]);
        l.push(ir::Node::If {
            cond: done,
            negate: false,
            then: vec![ir::Node::Break(id)],
            els: vec![],
        });
        // result *= (e & 1) ? base : 1
        let bit = l.reg(RegClass::B32);
        l.emit("and.b32", vec![bit.into(), left.into(), Operand::imm(1)]);
        let odd = l.reg(RegClass::Pred);
        l.emit("setp.ne.u32", vec![odd.into(), bit.into(), Operand::imm(0)]);
        let factor = l.reg(s.reg_class());
        l.emit(
            format!("selp.{}", bits_of(s)),
            vec![factor.into(), base.into(), Operand::imm(1), odd.into()],
        );
        l.binary(Mul, Val::Reg(result), Val::Reg(factor), s, None, Some(result), span)?;
        l.binary(Mul, Val::Reg(base), Val::Reg(base), s, None, Some(base), span)?;
        l.emit("shr.u32", vec![left.into(), left.into(), Operand::imm(1)]);
        Ok(())
    })?;
    l.push(ir::Node::Loop {
        id,
        body,
        continuing: vec![],
    });
    Ok(Val::Reg(result))
}

/// Integer methods on constants, with Rust's results (`None`: not folded
/// here; the wrapping operators fold in `binary`).
fn fold_int(name: &str, s: Scalar, a: &[Const]) -> Option<Const> {
    let ints: Vec<i128> = a
        .iter()
        .map(|k| match k {
            Const::Int(i) => Some(*i),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let bits = s.bits();
    let mask = (1u128 << bits) - 1;
    let pattern = |v: i128| (v as u128) & mask;
    let x = ints[0];
    let (min, max) = s.int_range();
    let value = |v: i128| Some(Const::Int(wrap_int(v, s)));
    let count = |n: u32| Some(Const::Int(n.into()));
    match name {
        "leading_zeros" => count(pattern(x).leading_zeros() - (128 - bits)),
        "trailing_zeros" => count(pattern(x).trailing_zeros().min(bits)),
        "count_ones" => count(pattern(x).count_ones()),
        "count_zeros" => count(bits - pattern(x).count_ones()),
        "is_power_of_two" => Some(Const::Bool(pattern(x).count_ones() == 1)),
        "div_ceil" if ints[1] != 0 => value((x + ints[1] - 1) / ints[1]),
        "is_multiple_of" => Some(Const::Bool(if ints[1] == 0 { x == 0 } else { x % ints[1] == 0 })),
        "reverse_bits" => value((pattern(x).reverse_bits() >> (128 - bits)) as i128),
        "rotate_left" | "rotate_right" => {
            let k = (ints[1] as u32) % bits;
            let k = if name == "rotate_left" { k } else { (bits - k) % bits };
            let p = pattern(x);
            value(((p << k | p >> ((bits - k) % bits)) & mask) as i128)
        }
        "pow" | "wrapping_pow" => {
            let (mut result, mut base, mut e) = (1i128, x, ints[1]);
            while e > 0 {
                if e & 1 == 1 {
                    result = wrap_int(result.wrapping_mul(base), s);
                }
                base = wrap_int(base.wrapping_mul(base), s);
                e >>= 1;
            }
            value(result)
        }
        "abs" | "wrapping_abs" => value(x.abs()),
        "signum" => value(x.signum()),
        "clamp" => value(x.max(ints[1]).min(ints[2])),
        "saturating_add" => value((x + ints[1]).clamp(min, max)),
        "saturating_sub" => value((x - ints[1]).clamp(min, max)),
        "saturating_mul" => value(match x.checked_mul(ints[1]) {
            Some(p) => p.clamp(min, max),
            None if (x < 0) != (ints[1] < 0) => min,
            None => max,
        }),
        _ => None,
    }
}

/// Rust's wrapping `abs` of a signed integer (`MIN.abs()` is `MIN`):
/// `(x ^ m) - m` with `m = x >> (bits - 1)`. Not PTX's `abs.s32`/`abs.s64`:
/// ptxas takes their result to be non-negative and drops the sign
/// correction of a `rem.s32` that divides it, so on the GPU
/// `i32::MIN.abs() % 3` was 2 instead of -2 (fuzz seed 5000195).
fn int_abs(l: &mut Lower<'_>, s: Scalar, x: ir::Reg) -> ir::Reg {
    let (class, b, t) = if s.bits() == 64 {
        (RegClass::B64, "b64", "s64")
    } else {
        (RegClass::B32, "b32", "s32")
    };
    let m = l.reg(class);
    l.emit(format!("shr.{t}"), vec![m.into(), x.into(), Operand::imm(s.bits() - 1)]);
    let flipped = l.reg(class);
    l.emit(format!("xor.{b}"), vec![flipped.into(), x.into(), m.into()]);
    let d = l.reg(class);
    l.emit(format!("sub.{t}"), vec![d.into(), flipped.into(), m.into()]);
    d
}

fn float(l: &mut Lower<'_>, c: &Call, name: &str) -> Result<Val> {
    let s = scalar(c, 0);
    if !APPROXIMATE.contains(&name)
        && let Some(k) = constants(c).and_then(|a| fold_float(name, &a))
    {
        return Ok(Val::Const(k));
    }
    let t = s.ptx_arith();
    let class = s.reg_class();
    let x = l.in_reg(&arg(c, 0), s);
    let approx = |l: &mut Lower<'_>, op: &str, src: ir::Reg| {
        let d = l.reg(RegClass::F32);
        l.emit(format!("{op}.approx.f32"), vec![d.into(), src.into()]);
        d
    };
    let pred = |l: &mut Lower<'_>, op: String, args: Vec<Operand>| {
        let p = l.reg(RegClass::Pred);
        l.emit(op, [vec![p.into()], args].concat());
        Ok(Val::Reg(p))
    };
    Ok(Val::Reg(match name {
        "floor" | "ceil" | "trunc" | "round_ties_even" => {
            let mode = match name {
                "floor" => "rmi",
                "ceil" => "rpi",
                "trunc" => "rzi",
                _ => "rni",
            };
            unary(l, &format!("cvt.{mode}.{t}.{t}"), class, x)
        }
        "round" => round_half_away(l, s, x),
        "fract" => {
            let whole = unary(l, &format!("cvt.rzi.{t}.{t}"), class, x);
            let d = l.reg(class);
            l.emit(format!("sub.rn.{t}"), vec![d.into(), x.into(), whole.into()]);
            d
        }
        "copysign" => {
            // PTX's `copysign d, a, b` puts a's sign on b.
            let sign = l.in_reg(&arg(c, 1), s);
            let d = l.reg(class);
            l.emit(format!("copysign.{t}"), vec![d.into(), sign.into(), x.into()]);
            d
        }
        "recip" => unary(l, &format!("rcp.rn.{t}"), class, x),
        "exp" => {
            let scaled = l.reg(RegClass::F32);
            let log2_e = Operand::Imm(f32_imm(std::f32::consts::LOG2_E));
            l.emit("mul.rn.f32", vec![scaled.into(), x.into(), log2_e]);
            approx(l, "ex2", scaled)
        }
        "ln" => {
            let log2 = approx(l, "lg2", x);
            let d = l.reg(RegClass::F32);
            let ln_2 = Operand::Imm(f32_imm(std::f32::consts::LN_2));
            l.emit("mul.rn.f32", vec![d.into(), log2.into(), ln_2]);
            d
        }
        "exp2" => approx(l, "ex2", x),
        "log2" => approx(l, "lg2", x),
        "sin" | "cos" | "tanh" => approx(l, name, x),
        "powi" => return powi(l, c, s, x),
        "clamp" => {
            // Rust's order: below `min` gives `min`, then above `max` gives
            // `max`; a NaN stays NaN.
            let (lo, hi) = (l.in_reg(&arg(c, 1), s), l.in_reg(&arg(c, 2), s));
            let p = l.reg(RegClass::Pred);
            let d = l.reg(class);
            l.emit(format!("setp.lt.{t}"), vec![p.into(), x.into(), lo.into()]);
            l.emit(format!("selp.{t}"), vec![d.into(), lo.into(), x.into(), p.into()]);
            l.emit(format!("setp.gt.{t}"), vec![p.into(), d.into(), hi.into()]);
            l.emit(format!("selp.{t}"), vec![d.into(), hi.into(), d.into(), p.into()]);
            // ptxas turns the compare-and-selects with constant bounds into
            // `FMNMX.NAN`, which gives the canonical NaN for a NaN `x`
            // (fuzz seeds 5000129, 5000229); an explicit select keeps x.
            let nan = l.reg(RegClass::Pred);
            l.emit(format!("setp.nan.{t}"), vec![nan.into(), x.into(), x.into()]);
            l.emit(format!("selp.{t}"), vec![d.into(), x.into(), d.into(), nan.into()]);
            d
        }
        "signum" => {
            // 1 with x's sign (so -0.0 gives -1.0), NaN for NaN.
            let one = l.in_reg(&float_const(s, 1.0), s);
            let d = l.reg(class);
            l.emit(format!("copysign.{t}"), vec![d.into(), x.into(), one.into()]);
            let nan = l.reg(RegClass::Pred);
            l.emit(format!("setp.nan.{t}"), vec![nan.into(), x.into(), x.into()]);
            l.emit(format!("selp.{t}"), vec![d.into(), x.into(), d.into(), nan.into()]);
            d
        }
        "is_nan" => return pred(l, format!("setp.nan.{t}"), vec![x.into(), x.into()]),
        "is_finite" => return pred(l, format!("testp.finite.{t}"), vec![x.into()]),
        "is_infinite" => return pred(l, format!("testp.infinite.{t}"), vec![x.into()]),
        "is_sign_negative" | "is_sign_positive" => {
            let (int_class, int_t, b) = if s == Scalar::F64 {
                (RegClass::B64, "s64", "b64")
            } else {
                (RegClass::B32, "s32", "b32")
            };
            let bits = unary(l, &format!("mov.{b}"), int_class, x);
            let cmp = if name == "is_sign_negative" { "lt" } else { "ge" };
            return pred(l, format!("setp.{cmp}.{int_t}"), vec![bits.into(), Operand::imm(0)]);
        }
        other => unreachable!("no float method `{other}`"),
    }))
}

fn unary(l: &mut Lower<'_>, op: &str, class: RegClass, x: ir::Reg) -> ir::Reg {
    let d = l.reg(class);
    l.emit(op, vec![d.into(), x.into()]);
    d
}

fn float_const(s: Scalar, v: f64) -> Val {
    Val::Const(if s == Scalar::F32 {
        Const::F32(v as f32)
    } else {
        Const::F64(v)
    })
}

/// Rust's `round`: half-way cases away from zero. `x - trunc(x)` is exact,
/// and so is `trunc(x) ± 1` whenever it is taken (|x| < 2^mantissa).
fn round_half_away(l: &mut Lower<'_>, s: Scalar, x: ir::Reg) -> ir::Reg {
    let t = s.ptx_arith();
    let class = s.reg_class();
    let whole = unary(l, &format!("cvt.rzi.{t}.{t}"), class, x);
    let part = l.reg(class);
    l.emit(format!("sub.rn.{t}"), vec![part.into(), x.into(), whole.into()]);
    l.emit(format!("abs.{t}"), vec![part.into(), part.into()]);
    let half = l.operand(&float_const(s, 0.5), s);
    let up = l.reg(RegClass::Pred);
    l.emit(format!("setp.ge.{t}"), vec![up.into(), part.into(), half]);
    let one = l.in_reg(&float_const(s, 1.0), s);
    let step = l.reg(class);
    l.emit(format!("copysign.{t}"), vec![step.into(), x.into(), one.into()]);
    let away = l.reg(class);
    l.emit(format!("add.rn.{t}"), vec![away.into(), whole.into(), step.into()]);
    let d = l.reg(class);
    l.emit(
        format!("selp.{t}"),
        vec![d.into(), away.into(), whole.into(), up.into()],
    );
    d
}

/// `x.powi(n)` as Rust computes it (compiler-builtins' `__powisf2`):
/// square-and-multiply over |n|'s bits, then one division for n < 0.
fn powi(l: &mut Lower<'_>, c: &Call, s: Scalar, x: ir::Reg) -> Result<Val> {
    let t = s.ptx_arith();
    let class = s.reg_class();
    let mul = |l: &mut Lower<'_>, d: ir::Reg, a: ir::Reg, b: ir::Reg| {
        l.emit(format!("mul.rn.{t}"), vec![d.into(), a.into(), b.into()]);
    };
    let one = l.in_reg(&float_const(s, 1.0), s);
    let result = l.reg(class);
    l.emit(format!("mov.{t}"), vec![result.into(), one.into()]);
    let base = l.reg(class);
    l.emit(format!("mov.{t}"), vec![base.into(), x.into()]);
    let n = arg(c, 1);
    if let Val::Const(Const::Int(n)) = n {
        let mut left = n.unsigned_abs();
        loop {
            if left & 1 == 1 {
                mul(l, result, result, base);
            }
            left >>= 1;
            if left == 0 {
                break;
            }
            mul(l, base, base, base);
        }
        if n < 0 {
            l.emit(format!("div.rn.{t}"), vec![result.into(), one.into(), result.into()]);
        }
        return Ok(Val::Reg(result));
    }
    let nr = l.in_reg(&n, Scalar::I32);
    // |n| as an unsigned count (i32::MIN gives 2^31, as `unsigned_abs`).
    let left = int_abs(l, Scalar::I32, nr);
    let id = l.label();
    let (body, ()) = l.nested(|l| {
        let bit = l.reg(RegClass::B32);
        l.emit("and.b32", vec![bit.into(), left.into(), Operand::imm(1)]);
        let odd = l.reg(RegClass::Pred);
        l.emit("setp.ne.u32", vec![odd.into(), bit.into(), Operand::imm(0)]);
        let (then, ()) = l.nested(|l| {
            mul(l, result, result, base);
            Ok(())
        })?;
        l.push(ir::Node::If {
            cond: odd,
            negate: false,
            then,
            els: vec![],
        });
        l.emit("shr.u32", vec![left.into(), left.into(), Operand::imm(1)]);
        let done = l.reg(RegClass::Pred);
        l.emit("setp.eq.u32", vec![done.into(), left.into(), Operand::imm(0)]);
        l.push(ir::Node::If {
            cond: done,
            negate: false,
            then: vec![ir::Node::Break(id)],
            els: vec![],
        });
        mul(l, base, base, base);
        Ok(())
    })?;
    l.push(ir::Node::Loop {
        id,
        body,
        continuing: vec![],
    });
    let negative = l.reg(RegClass::Pred);
    l.emit("setp.lt.s32", vec![negative.into(), nr.into(), Operand::imm(0)]);
    let (then, ()) = l.nested(|l| {
        l.emit(format!("div.rn.{t}"), vec![result.into(), one.into(), result.into()]);
        Ok(())
    })?;
    l.push(ir::Node::If {
        cond: negative,
        negate: false,
        then,
        els: vec![],
    });
    Ok(Val::Reg(result))
}

/// `x.powi(n)` on the host, in the order the device computes it.
fn powi_like_rust<F: Copy + std::ops::Mul<Output = F> + std::ops::Div<Output = F>>(x: F, n: i32, one: F) -> F {
    let (mut result, mut base, mut left) = (one, x, n.unsigned_abs());
    loop {
        if left & 1 == 1 {
            result = result * base;
        }
        left >>= 1;
        if left == 0 {
            break;
        }
        base = base * base;
    }
    if n < 0 { one / result } else { result }
}

/// The exact float methods on constants, with Rust's results.
fn fold_float(name: &str, a: &[Const]) -> Option<Const> {
    macro_rules! on {
        ($x:expr, $ty:ty, $wrap:path, $rest:expr) => {{
            let x: $ty = $x;
            let arg = |i: usize| match a.get(i) {
                Some(Const::F32(v)) => Some(*v as $ty),
                Some(Const::F64(v)) => Some(*v as $ty),
                _ => None,
            };
            let _ = &arg;
            Some(match name {
                "floor" => $wrap(x.floor()),
                "ceil" => $wrap(x.ceil()),
                "trunc" => $wrap(x.trunc()),
                "round" => $wrap(x.round()),
                "round_ties_even" => $wrap(x.round_ties_even()),
                "fract" => $wrap(x - x.trunc()),
                "recip" => $wrap(1.0 / x),
                "copysign" => $wrap(x.copysign(arg(1)?)),
                "signum" => $wrap(x.signum()),
                "clamp" => {
                    let (lo, hi) = (arg(1)?, arg(2)?);
                    let low = if x < lo { lo } else { x };
                    $wrap(if low > hi { hi } else { low })
                }
                "powi" => match a.get(1) {
                    Some(Const::Int(n)) => $wrap(powi_like_rust(x, i32::try_from(*n).ok()?, 1.0)),
                    _ => return None,
                },
                "is_nan" => Const::Bool(x.is_nan()),
                "is_finite" => Const::Bool(x.is_finite()),
                "is_infinite" => Const::Bool(x.is_infinite()),
                "is_sign_negative" => Const::Bool(x.is_sign_negative()),
                "is_sign_positive" => Const::Bool(x.is_sign_positive()),
                _ => return $rest,
            })
        }};
    }
    match a.first()? {
        Const::F32(x) => on!(*x, f32, Const::F32, None),
        Const::F64(x) => on!(*x, f64, Const::F64, None),
        _ => None,
    }
}
