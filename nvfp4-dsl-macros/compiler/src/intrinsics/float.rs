//! The methods of Rust's floats that kernels use: rounding, `fract`,
//! `copysign`, `recip`, `powi`, `clamp`, `signum`, the classification
//! tests, bit casts, and the `f32` functions PTX approximates (`exp`,
//! `exp2`, `ln`, `log2`, `sin`, `cos`, `tanh`, and `rsqrt_approx` and
//! `recip_approx` of `nvfp4_dsl::ApproxF32`).
//!
//! The exact ones have Rust's results (correctly rounded) and fold, with
//! Rust's result, when their arguments are constants; the approximate ones
//! never fold: their value is the hardware's. Their accuracy is documented
//! in the README and measured by `tests/tests/std_methods.rs`.

use super::int::int_abs;
use super::*;
use crate::lower::fold::f32_imm;
use ArgTy::{Is, T};

const BOOL: Ty = Ty::Scalar(Scalar::Bool);

/// A fold of a float method, computed as Rust computes it in the
/// receiver's own type: `$x` is the receiver, `$arg(i)` argument `i` in
/// that type (for `clamp` and `copysign`), `$wrap` makes the result a
/// constant of the receiver's type (or `bool`, with `test`).
macro_rules! float_fold {
    (|$x:ident $(, $arg:ident)?| $body:expr) => {
        float_fold!(@fold $x, [$($arg)?], Some($body), wrap)
    };
    (test |$x:ident| $body:expr) => {
        float_fold!(@fold $x, [], Some(Const::Bool($body)), bool)
    };
    (@fold $x:ident, [$($arg:ident)?], $result:expr, $kind:ident) => {
        |a: &[Const], _: Scalar| -> Option<Const> {
            match a.first()? {
                Const::F32(x) => float_fold!(@in f32, F32, *x, a, $x, [$($arg)?], $result, $kind),
                Const::F64(x) => float_fold!(@in f64, F64, *x, a, $x, [$($arg)?], $result, $kind),
                _ => None,
            }
        }
    };
    (@in $ty:ty, $variant:ident, $value:expr, $a:ident, $x:ident, [$($arg:ident)?], $result:expr, $kind:ident) => {{
        let $x: $ty = $value;
        $(
            let $arg = |i: usize| match $a.get(i) {
                Some(Const::F32(v)) => Some(*v as $ty),
                Some(Const::F64(v)) => Some(*v as $ty),
                _ => None,
            };
        )?
        float_fold!(@wrap $kind, $variant, $result)
    }};
    (@wrap wrap, $variant:ident, $result:expr) => {
        $result.map(Const::$variant)
    };
    (@wrap bool, $variant:ident, $result:expr) => {
        $result
    };
}

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn floor(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| rounded(l, c, "rmi"),
        fold: float_fold!(|x| x.floor()),
    ),
    row!(
        "fn ceil(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| rounded(l, c, "rpi"),
        fold: float_fold!(|x| x.ceil()),
    ),
    row!(
        "fn trunc(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| rounded(l, c, "rzi"),
        fold: float_fold!(|x| x.trunc()),
    ),
    row!(
        "fn round(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            Ok(Val::Reg(round_half_away(l, s, x)))
        },
        fold: float_fold!(|x| x.round()),
    ),
    row!(
        "fn round_ties_even(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| rounded(l, c, "rni"),
        fold: float_fold!(|x| x.round_ties_even()),
    ),
    row!(
        "fn fract(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            let (t, class) = (s.ptx_arith(), s.reg_class());
            let whole = unary(l, &format!("cvt.rzi.{t}.{t}"), class, x);
            let d = l.reg(class);
            l.emit(format!("sub.rn.{t}"), vec![d.into(), x.into(), whole.into()]);
            Ok(Val::Reg(d))
        },
        fold: float_fold!(|x| x - x.trunc()),
    ),
    row!(
        "fn copysign(self, sign: Self) -> Self",
        params: [T, T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            // PTX's `copysign d, a, b` puts a's sign on b.
            let (s, x) = receiver(l, c);
            let sign = l.in_reg(&arg(c, 1), s);
            let d = l.reg(s.reg_class());
            l.emit(format!("copysign.{}", s.ptx_arith()), vec![d.into(), sign.into(), x.into()]);
            Ok(Val::Reg(d))
        },
        fold: float_fold!(|x, arg| x.copysign(arg(1)?)),
    ),
    row!(
        "fn recip(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            Ok(Val::Reg(unary(l, &format!("rcp.rn.{}", s.ptx_arith()), s.reg_class(), x)))
        },
        fold: float_fold!(|x| 1.0 / x),
    ),
    row!(
        "fn powi(self, n: i32) -> Self",
        params: [T, Is(I32)],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            powi(l, c, s, x)
        },
        fold: |a, _| {
            let Some(Const::Int(n)) = a.get(1) else { return None };
            let n = i32::try_from(*n).ok()?;
            match a.first()? {
                Const::F32(x) => Some(Const::F32(powi_like_rust(*x, n, 1.0))),
                Const::F64(x) => Some(Const::F64(powi_like_rust(*x, n, 1.0))),
                _ => None,
            }
        },
    ),
    row!(
        "fn clamp(self, min: Self, max: Self) -> Self",
        params: [T, T, T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: clamp,
        fold: float_fold!(|x, arg| {
            let (lo, hi) = (arg(1)?, arg(2)?);
            let low = if x < lo { lo } else { x };
            if low > hi { hi } else { low }
        }),
    ),
    row!(
        "fn signum(self) -> Self",
        params: [T],
        types: FLOATS,
        ret: RetTy::T,
        target: Sm80,
        lower: signum,
        fold: float_fold!(|x| x.signum()),
    ),
    row!(
        "fn is_nan(self) -> bool",
        params: [T],
        types: FLOATS,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            test(l, format!("setp.nan.{}", s.ptx_arith()), vec![x.into(), x.into()])
        },
        fold: float_fold!(test |x| x.is_nan()),
    ),
    row!(
        "fn is_finite(self) -> bool",
        params: [T],
        types: FLOATS,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            test(l, format!("testp.finite.{}", s.ptx_arith()), vec![x.into()])
        },
        fold: float_fold!(test |x| x.is_finite()),
    ),
    row!(
        "fn is_infinite(self) -> bool",
        params: [T],
        types: FLOATS,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: |l, c| {
            let (s, x) = receiver(l, c);
            test(l, format!("testp.infinite.{}", s.ptx_arith()), vec![x.into()])
        },
        fold: float_fold!(test |x| x.is_infinite()),
    ),
    row!(
        "fn is_sign_negative(self) -> bool",
        params: [T],
        types: FLOATS,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: |l, c| sign_test(l, c, "lt"),
        fold: float_fold!(test |x| x.is_sign_negative()),
    ),
    row!(
        "fn is_sign_positive(self) -> bool",
        params: [T],
        types: FLOATS,
        ret: RetTy::Is(BOOL),
        target: Sm80,
        lower: |l, c| sign_test(l, c, "ge"),
        fold: float_fold!(test |x| x.is_sign_positive()),
    ),
    row!(
        "fn exp(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let (_, x) = receiver(l, c);
            let scaled = l.reg(RegClass::F32);
            let log2_e = Operand::Imm(f32_imm(std::f32::consts::LOG2_E));
            l.emit("mul.rn.f32", vec![scaled.into(), x.into(), log2_e]);
            Ok(Val::Reg(approx(l, "ex2", scaled)))
        },
        approximate: true,
    ),
    row!(
        "fn exp2(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "ex2"),
        approximate: true,
    ),
    row!(
        "fn ln(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| {
            let (_, x) = receiver(l, c);
            let log2 = approx(l, "lg2", x);
            let d = l.reg(RegClass::F32);
            let ln_2 = Operand::Imm(f32_imm(std::f32::consts::LN_2));
            l.emit("mul.rn.f32", vec![d.into(), log2.into(), ln_2]);
            Ok(Val::Reg(d))
        },
        approximate: true,
    ),
    row!(
        "fn log2(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "lg2"),
        approximate: true,
    ),
    row!(
        "fn sin(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "sin"),
        approximate: true,
    ),
    row!(
        "fn cos(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "cos"),
        approximate: true,
    ),
    row!(
        "fn tanh(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "tanh"),
        approximate: true,
    ),
    row!(
        "fn rsqrt_approx(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "rsqrt"),
        approximate: true,
    ),
    row!(
        "fn recip_approx(self) -> f32",
        params: [T],
        types: &[F32],
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| approx_of(l, c, "rcp"),
        approximate: true,
    ),
    row!(
        "fn to_bits(self) -> u64",
        params: [Is(F64)],
        ret: RetTy::Is(U64),
        target: Sm80,
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::F64);
            Ok(unary_op(l, "mov.b64", RegClass::B64, r.into()))
        },
    ),
    row!(
        "fn f64::from_bits(bits: u64) -> f64",
        params: [Is(U64)],
        ret: RetTy::Is(F64),
        target: Sm80,
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U64);
            Ok(unary_op(l, "mov.b64", RegClass::F64, r.into()))
        },
    ),
];

/// The receiver's type and its register.
fn receiver(l: &mut Lower<'_>, c: &Call) -> (Scalar, ir::Reg) {
    let s = scalar(c, 0);
    (s, l.in_reg(&arg(c, 0), s))
}

/// `cvt.<mode>` to an integral value in the same type.
fn rounded(l: &mut Lower<'_>, c: &Call, mode: &str) -> Result<Val> {
    let (s, x) = receiver(l, c);
    let t = s.ptx_arith();
    Ok(Val::Reg(unary(l, &format!("cvt.{mode}.{t}.{t}"), s.reg_class(), x)))
}

/// `<op>.approx.f32` of `src`.
fn approx(l: &mut Lower<'_>, op: &str, src: ir::Reg) -> ir::Reg {
    let d = l.reg(RegClass::F32);
    l.emit(format!("{op}.approx.f32"), vec![d.into(), src.into()]);
    d
}

/// `<op>.approx.f32` of the receiver.
fn approx_of(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let (_, x) = receiver(l, c);
    Ok(Val::Reg(approx(l, op, x)))
}

/// A predicate set by `op` from `args`.
fn test(l: &mut Lower<'_>, op: String, args: Vec<Operand>) -> Result<Val> {
    let p = l.reg(RegClass::Pred);
    l.emit(op, [vec![p.into()], args].concat());
    Ok(Val::Reg(p))
}

/// The sign bit compared (`lt` or `ge`) with zero as a signed integer.
fn sign_test(l: &mut Lower<'_>, c: &Call, cmp: &str) -> Result<Val> {
    let (s, x) = receiver(l, c);
    let (int_class, int_t, b) = if s == Scalar::F64 {
        (RegClass::B64, "s64", "b64")
    } else {
        (RegClass::B32, "s32", "b32")
    };
    let bits = unary(l, &format!("mov.{b}"), int_class, x);
    test(l, format!("setp.{cmp}.{int_t}"), vec![bits.into(), Operand::imm(0)])
}

/// Rust's order: below `min` gives `min`, then above `max` gives `max`; a
/// NaN stays NaN.
fn clamp(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let (s, x) = receiver(l, c);
    let (t, class) = (s.ptx_arith(), s.reg_class());
    let (lo, hi) = (l.in_reg(&arg(c, 1), s), l.in_reg(&arg(c, 2), s));
    let p = l.reg(RegClass::Pred);
    let d = l.reg(class);
    l.emit(format!("setp.lt.{t}"), vec![p.into(), x.into(), lo.into()]);
    l.emit(format!("selp.{t}"), vec![d.into(), lo.into(), x.into(), p.into()]);
    l.emit(format!("setp.gt.{t}"), vec![p.into(), d.into(), hi.into()]);
    l.emit(format!("selp.{t}"), vec![d.into(), hi.into(), d.into(), p.into()]);
    // ptxas turns the compare-and-selects with constant bounds into
    // `FMNMX.NAN`, which gives the canonical NaN for a NaN `x` (fuzz seeds
    // 5000129, 5000229); an explicit select keeps x.
    let nan = l.reg(RegClass::Pred);
    l.emit(format!("setp.nan.{t}"), vec![nan.into(), x.into(), x.into()]);
    l.emit(format!("selp.{t}"), vec![d.into(), x.into(), d.into(), nan.into()]);
    Ok(Val::Reg(d))
}

/// 1 with x's sign (so -0.0 gives -1.0), NaN for NaN.
fn signum(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let (s, x) = receiver(l, c);
    let (t, class) = (s.ptx_arith(), s.reg_class());
    let one = l.in_reg(&float_const(s, 1.0), s);
    let d = l.reg(class);
    l.emit(format!("copysign.{t}"), vec![d.into(), x.into(), one.into()]);
    let nan = l.reg(RegClass::Pred);
    l.emit(format!("setp.nan.{t}"), vec![nan.into(), x.into(), x.into()]);
    l.emit(format!("selp.{t}"), vec![d.into(), x.into(), d.into(), nan.into()]);
    Ok(Val::Reg(d))
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
