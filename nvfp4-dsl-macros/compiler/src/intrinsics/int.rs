//! The methods of Rust's integers that kernels use: wrapping and
//! saturating arithmetic, bit counting and rotation, `pow`, `abs`,
//! `signum`, `clamp`, `div_ceil`, `is_multiple_of`, `is_power_of_two`.
//!
//! Each has Rust's (release-build) semantics and folds, with Rust's
//! result, when its arguments are constants (the wrapping operators fold
//! in `binary`). `tests/tests/std_methods.rs` compares every one with std.

use super::*;
use crate::lower::fold::{int_imm, wrap_int};
use ArgTy::{Is, T};
use ast::BinOp;

const INTS: &[Ty] = &[U8, U16, U32, I32, U64, I64, USIZE];
const SIGNED: &[Ty] = &[I32, I64];
const UNSIGNED: &[Ty] = &[U8, U16, U32, U64, USIZE];
const BOOL: Ty = Ty::Scalar(Scalar::Bool);

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn wrapping_add(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Add),
    ),
    row!(
        "fn wrapping_sub(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Sub),
    ),
    row!(
        "fn wrapping_mul(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Mul),
    ),
    row!(
        "fn wrapping_div(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Div),
    ),
    row!(
        "fn wrapping_rem(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Rem),
    ),
    row!(
        "fn wrapping_neg(self) -> Self",
        params: [T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| l.binary(BinOp::Sub, Val::Const(Const::Int(0)), arg(c, 0), scalar(c, 0), None, None, c.span),
    ),
    row!(
        "fn wrapping_shl(self, rhs: u32) -> Self",
        params: [T, Is(U32)],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Shl),
    ),
    row!(
        "fn wrapping_shr(self, rhs: u32) -> Self",
        params: [T, Is(U32)],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| wrapping(l, c, BinOp::Shr),
    ),
    row!(
        "fn wrapping_abs(self) -> Self",
        params: [T],
        types: SIGNED,
        ret: RetTy::T,
        target: Sm80,
        lower: abs,
        fold: |a, s| wrapped(ints(a)?[0].abs(), s),
    ),
    row!(
        "fn wrapping_pow(self, exp: u32) -> Self",
        params: [T, Is(U32)],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: int_pow,
        fold: fold_pow,
    ),
    row!(
        "fn saturating_add(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| saturating(l, c, true),
        fold: |a, s| {
            let v = ints(a)?;
            let (min, max) = s.int_range();
            wrapped((v[0] + v[1]).clamp(min, max), s)
        },
    ),
    row!(
        "fn saturating_sub(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| saturating(l, c, false),
        fold: |a, s| {
            let v = ints(a)?;
            let (min, max) = s.int_range();
            wrapped((v[0] - v[1]).clamp(min, max), s)
        },
    ),
    row!(
        "fn saturating_mul(self, rhs: Self) -> Self",
        params: [T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: saturating_mul,
        fold: |a, s| {
            let v = ints(a)?;
            let (min, max) = s.int_range();
            wrapped(
                match v[0].checked_mul(v[1]) {
                    Some(p) => p.clamp(min, max),
                    None if (v[0] < 0) != (v[1] < 0) => min,
                    None => max,
                },
                s,
            )
        },
    ),
    row!(
        "fn leading_zeros(self) -> u32",
        params: [T],
        types: INTS,
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| count_bits(l, c, Count::LeadingZeros),
        fold: |a, s| count(pattern(ints(a)?[0], s).leading_zeros() - (128 - s.bits())),
    ),
    row!(
        "fn trailing_zeros(self) -> u32",
        params: [T],
        types: INTS,
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| count_bits(l, c, Count::TrailingZeros),
        fold: |a, s| count(pattern(ints(a)?[0], s).trailing_zeros().min(s.bits())),
    ),
    row!(
        "fn count_ones(self) -> u32",
        params: [T],
        types: INTS,
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| count_bits(l, c, Count::Ones),
        fold: |a, s| count(pattern(ints(a)?[0], s).count_ones()),
    ),
    row!(
        "fn count_zeros(self) -> u32",
        params: [T],
        types: INTS,
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| count_bits(l, c, Count::Zeros),
        fold: |a, s| count(s.bits() - pattern(ints(a)?[0], s).count_ones()),
    ),
    row!(
        "fn rotate_left(self, n: u32) -> Self",
        params: [T, Is(U32)],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| rotate(l, c, true),
        fold: |a, s| fold_rotate(a, s, true),
    ),
    row!(
        "fn rotate_right(self, n: u32) -> Self",
        params: [T, Is(U32)],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| rotate(l, c, false),
        fold: |a, s| fold_rotate(a, s, false),
    ),
    row!(
        "fn reverse_bits(self) -> Self",
        params: [T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: reverse_bits,
        fold: |a, s| wrapped((pattern(ints(a)?[0], s).reverse_bits() >> (128 - s.bits())) as i128, s),
    ),
    row!(
        "fn pow(self, exp: u32) -> Self",
        params: [T, Is(U32)],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: int_pow,
        fold: fold_pow,
    ),
    row!(
        "fn abs(self) -> Self",
        params: [T],
        types: SIGNED,
        ret: RetTy::T,
        target: Sm80,
        lower: abs,
        fold: |a, s| wrapped(ints(a)?[0].abs(), s),
    ),
    row!(
        "fn signum(self) -> Self",
        params: [T],
        types: SIGNED,
        ret: RetTy::T,
        target: Sm80,
        lower: signum,
        fold: |a, s| wrapped(ints(a)?[0].signum(), s),
    ),
    row!(
        "fn div_ceil(self, rhs: Self) -> Self",
        params: [T, T],
        types: UNSIGNED,
        ret: RetTy::T,
        target: Sm80,
        lower: div_ceil,
        fold: |a, s| {
            let v = ints(a)?;
            if v[1] == 0 {
                return None;
            }
            wrapped((v[0] + v[1] - 1) / v[1], s)
        },
    ),
    row!(
        "fn is_multiple_of(self, rhs: Self) -> bool",
        params: [T, T],
        types: UNSIGNED,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: is_multiple_of,
        fold: |a, _| {
            let v = ints(a)?;
            Some(Const::Bool(if v[1] == 0 { v[0] == 0 } else { v[0] % v[1] == 0 }))
        },
    ),
    row!(
        "fn is_power_of_two(self) -> bool",
        params: [T],
        types: UNSIGNED,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: |l, c| count_bits(l, c, Count::PowerOfTwo),
        fold: |a, s| Some(Const::Bool(pattern(ints(a)?[0], s).count_ones() == 1)),
    ),
    row!(
        "fn clamp(self, min: Self, max: Self) -> Self",
        params: [T, T, T],
        types: INTS,
        ret: RetTy::T,
        target: Sm80,
        lower: clamp,
        fold: |a, s| {
            let v = ints(a)?;
            wrapped(v[0].max(v[1]).min(v[2]), s)
        },
    ),
];

/// The arguments of a call on constants, when all are integers.
fn ints(a: &[Const]) -> Option<Vec<i128>> {
    a.iter()
        .map(|k| match k {
            Const::Int(i) => Some(*i),
            _ => None,
        })
        .collect()
}

/// `x`'s bits in the width of `s`.
fn pattern(x: i128, s: Scalar) -> u128 {
    (x as u128) & ((1u128 << s.bits()) - 1)
}

/// `v` wrapped into `s`, as a constant.
fn wrapped(v: i128, s: Scalar) -> Option<Const> {
    Some(Const::Int(wrap_int(v, s)))
}

/// A bit count, as a constant.
fn count(n: u32) -> Option<Const> {
    Some(Const::Int(n.into()))
}

fn fold_rotate(a: &[Const], s: Scalar, left: bool) -> Option<Const> {
    let v = ints(a)?;
    let bits = s.bits();
    let k = (v[1] as u32) % bits;
    let k = if left { k } else { (bits - k) % bits };
    let p = pattern(v[0], s);
    let mask = (1u128 << bits) - 1;
    wrapped(((p << k | p >> ((bits - k) % bits)) & mask) as i128, s)
}

fn fold_pow(a: &[Const], s: Scalar) -> Option<Const> {
    let v = ints(a)?;
    let (mut result, mut base, mut e) = (1i128, v[0], v[1]);
    while e > 0 {
        if e & 1 == 1 {
            result = wrap_int(result.wrapping_mul(base), s);
        }
        base = wrap_int(base.wrapping_mul(base), s);
        e >>= 1;
    }
    wrapped(result, s)
}

/// `x op y` by the operator itself, which wraps (the `wrapping_*`
/// methods); shifts take a `u32` amount.
fn wrapping(l: &mut Lower<'_>, c: &Call, op: BinOp) -> Result<Val> {
    let amount = matches!(op, BinOp::Shl | BinOp::Shr).then_some(Scalar::U32);
    l.binary(op, arg(c, 0), arg(c, 1), scalar(c, 0), amount, None, c.span)
}

fn abs(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let s = scalar(c, 0);
    let xr = l.in_reg(&arg(c, 0), s);
    Ok(Val::Reg(int_abs(l, s, xr)))
}

/// What `count_bits` counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Count {
    LeadingZeros,
    TrailingZeros,
    Ones,
    Zeros,
    PowerOfTwo,
}

fn count_bits(l: &mut Lower<'_>, c: &Call, what: Count) -> Result<Val> {
    let s = scalar(c, 0);
    let bits = s.bits();
    let b = bits_of(s);
    let mut src = l.in_reg(&arg(c, 0), s);
    if what == Count::TrailingZeros {
        // The trailing zeros are the leading zeros of the reversed bits.
        let r = l.reg(s.reg_class());
        l.emit(format!("brev.{b}"), vec![r.into(), src.into()]);
        src = r;
    }
    let counts_ones = matches!(what, Count::Ones | Count::Zeros | Count::PowerOfTwo);
    let d = l.reg(RegClass::B32);
    let op = if counts_ones { "popc" } else { "clz" };
    l.emit(format!("{op}.{b}"), vec![d.into(), src.into()]);
    match what {
        // u8/u16 live zero-extended in 32 bits.
        Count::LeadingZeros if bits < 32 => {
            l.emit("sub.u32", vec![d.into(), d.into(), Operand::imm(32 - bits)]);
        }
        Count::TrailingZeros if bits < 32 => {
            l.emit("min.u32", vec![d.into(), d.into(), Operand::imm(bits)]);
        }
        Count::Zeros => {
            let z = l.reg(RegClass::B32);
            l.emit("sub.u32", vec![z.into(), Operand::imm(bits), d.into()]);
            return Ok(Val::Reg(z));
        }
        Count::PowerOfTwo => {
            let p = l.reg(RegClass::Pred);
            l.emit("setp.eq.u32", vec![p.into(), d.into(), Operand::imm(1)]);
            return Ok(Val::Reg(p));
        }
        _ => {}
    }
    Ok(Val::Reg(d))
}

fn reverse_bits(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let s = scalar(c, 0);
    let bits = s.bits();
    let xr = l.in_reg(&arg(c, 0), s);
    let d = l.reg(s.reg_class());
    l.emit(format!("brev.{}", bits_of(s)), vec![d.into(), xr.into()]);
    if bits < 32 {
        l.emit("shr.u32", vec![d.into(), d.into(), Operand::imm(32 - bits)]);
    }
    Ok(Val::Reg(d))
}

/// The quotient, plus one when quotient x divisor falls short of x (one
/// division, not a second one for the remainder: u64's is a subroutine);
/// by zero `MAX`, as `x / 0` gives (the quotient plus one would wrap).
/// With a remainder the divisor is at least 2, so the quotient plus one
/// fits, and the product never exceeds x.
fn div_ceil(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    use BinOp::*;
    let (s, span) = (scalar(c, 0), c.span);
    let (t, class) = (s.ptx_arith(), s.reg_class());
    let (x, y) = (arg(c, 0), arg(c, 1));
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

/// `x % y == 0`, and by zero whether x is zero (std's definition; `x % 0`
/// gives all ones in a kernel, never zero).
fn is_multiple_of(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    use BinOp::*;
    let (s, span) = (scalar(c, 0), c.span);
    let t = s.ptx_arith();
    let (x, y) = (arg(c, 0), arg(c, 1));
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

fn signum(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let s = scalar(c, 0);
    let (t, class) = (s.ptx_arith(), s.reg_class());
    let xr = l.in_reg(&arg(c, 0), s);
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

/// `min(max(x, lo), hi)`: Rust's clamp whenever lo <= hi (Rust panics
/// otherwise).
fn clamp(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let s = scalar(c, 0);
    let (t, class) = (s.ptx_arith(), s.reg_class());
    let xr = l.in_reg(&arg(c, 0), s);
    let lo = l.operand(&arg(c, 1), s);
    let hi = l.operand(&arg(c, 2), s);
    let d = l.reg(class);
    l.emit(format!("max.{t}"), vec![d.into(), xr.into(), lo]);
    l.emit(format!("min.{t}"), vec![d.into(), d.into(), hi]);
    Ok(Val::Reg(d))
}

/// `saturating_add` (`add`) or `saturating_sub`.
fn saturating(l: &mut Lower<'_>, c: &Call, add: bool) -> Result<Val> {
    use BinOp::*;
    let (s, span) = (scalar(c, 0), c.span);
    let (t, class) = (s.ptx_arith(), s.reg_class());
    let (x, y) = (arg(c, 0), arg(c, 1));
    if !s.is_signed() {
        // `min(a, MAX - b) + b` and `max(a, b) - b` never leave the
        // type's range.
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
        return l.binary(if add { Add } else { Sub }, Val::Reg(bound), y, s, None, None, span);
    }
    // i32, i64: the wrapped result, replaced by MIN or MAX (the side of
    // `x`) when the operation overflowed. Not PTX's `add.sat.s32`: ptxas
    // folds `add.s32 r, a, c1` into a following `add.sat.s32 d, r, c2` as
    // `add.sat(a, c1 + c2)`, which does not saturate when `a + c1` wraps
    // (GPU fuzz seed 5002873: `(a + -457534851).saturating_add(1356611541)`).
    let wrapped = l.binary(if add { Add } else { Sub }, x.clone(), y.clone(), s, None, None, span)?;
    let a = l.binary(BitXor, x.clone(), wrapped.clone(), s, None, None, span)?;
    let other = if add { wrapped.clone() } else { x.clone() };
    let bx = l.binary(BitXor, y, other, s, None, None, span)?;
    let overflow_bits = l.binary(BitAnd, a, bx, s, None, None, span)?;
    let overflowed = l.binary(Lt, overflow_bits, Val::Const(Const::Int(0)), s, None, None, span)?;
    saturate_toward(l, c, x, wrapped, overflowed)
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

/// Rust's wrapping `abs` of a signed integer (`MIN.abs()` is `MIN`):
/// `(x ^ m) - m` with `m = x >> (bits - 1)`. Not PTX's `abs.s32`/`abs.s64`:
/// ptxas takes their result to be non-negative and drops the sign
/// correction of a `rem.s32` that divides it, so on the GPU
/// `i32::MIN.abs() % 3` was 2 instead of -2 (fuzz seed 5000195).
pub(super) fn int_abs(l: &mut Lower<'_>, s: Scalar, x: ir::Reg) -> ir::Reg {
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
