//! Compile-time constants (`Const`): PTX immediates, Rust's wrapping of
//! integers, and folding of operators and casts with Rust's semantics;
//! and the lowering's `Result` and `err`.

use crate::ast::*;
use crate::types::Scalar;

pub type Result<T> = syn::Result<T>;

pub fn err<T>(loc: impl Into<Loc>, msg: impl std::fmt::Display) -> Result<T> {
    Err(loc.into().error(msg))
}

/// A compile-time constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    /// An integer, normalised into its type's range.
    Int(i128),
    F32(f32),
    F64(f64),
}

/// PTX immediate for an integer of type `s`.
pub fn int_imm(v: i128, s: Scalar) -> String {
    match s.bits() {
        64 if s.is_signed() => (v as i64).to_string(),
        64 => (v as u64).to_string(),
        _ if s.is_signed() => (v as i32).to_string(),
        _ => (v as u32).to_string(),
    }
}

pub fn f32_imm(v: f32) -> String {
    format!("0f{:08X}", v.to_bits())
}

pub fn f64_imm(v: f64) -> String {
    format!("0d{:016X}", v.to_bits())
}

/// Wraps an integer into the range of `s`, as Rust's wrapping arithmetic.
pub fn wrap_int(v: i128, s: Scalar) -> i128 {
    let bits = s.bits();
    let m = v & ((1i128 << bits) - 1);
    if s.is_signed() && m >= 1i128 << (bits - 1) {
        m - (1i128 << bits)
    } else {
        m
    }
}

/// Constant folding with Rust's semantics.
pub fn fold(op: BinOp, a: Const, b: Const, s: Scalar, rs: Scalar, span: Loc) -> Result<Const> {
    use BinOp::*;
    Ok(match (a, b) {
        (Const::Int(x), Const::Int(y)) => {
            if op.is_shift() {
                let n = (wrap_int(y, rs) as u32) & (s.bits() - 1);
                let ux = x & ((1i128 << s.bits()) - 1);
                return Ok(Const::Int(match op {
                    Shl => wrap_int(ux << n, s),
                    _ if s.is_signed() => x >> n,
                    _ => ux >> n,
                }));
            }
            match op {
                Add => Const::Int(wrap_int(x + y, s)),
                Sub => Const::Int(wrap_int(x - y, s)),
                Mul => Const::Int(wrap_int(x.wrapping_mul(y), s)),
                Div | Rem if y == 0 => return err(span, "this operation divides by zero"),
                Div => Const::Int(wrap_int(x / y, s)),
                Rem => Const::Int(wrap_int(x % y, s)),
                BitAnd => Const::Int(wrap_int(x & y, s)),
                BitOr => Const::Int(wrap_int(x | y, s)),
                BitXor => Const::Int(wrap_int(x ^ y, s)),
                Eq => Const::Bool(x == y),
                Ne => Const::Bool(x != y),
                Lt => Const::Bool(x < y),
                Le => Const::Bool(x <= y),
                Gt => Const::Bool(x > y),
                Ge => Const::Bool(x >= y),
                And | Or | Shl | Shr => unreachable!("handled elsewhere"),
            }
        }
        (Const::F32(x), Const::F32(y)) => match op {
            Add => Const::F32(x + y),
            Sub => Const::F32(x - y),
            Mul => Const::F32(x * y),
            Div => Const::F32(x / y),
            Eq => Const::Bool(x == y),
            Ne => Const::Bool(x != y),
            Lt => Const::Bool(x < y),
            Le => Const::Bool(x <= y),
            Gt => Const::Bool(x > y),
            Ge => Const::Bool(x >= y),
            _ => return err(span, "unsupported float operation"),
        },
        (Const::F64(x), Const::F64(y)) => match op {
            Add => Const::F64(x + y),
            Sub => Const::F64(x - y),
            Mul => Const::F64(x * y),
            Div => Const::F64(x / y),
            Eq => Const::Bool(x == y),
            Ne => Const::Bool(x != y),
            Lt => Const::Bool(x < y),
            Le => Const::Bool(x <= y),
            Gt => Const::Bool(x > y),
            Ge => Const::Bool(x >= y),
            _ => return err(span, "unsupported float operation"),
        },
        (Const::Bool(x), Const::Bool(y)) => match op {
            BitAnd | And => Const::Bool(x & y),
            BitOr | Or => Const::Bool(x | y),
            BitXor | Ne => Const::Bool(x ^ y),
            Eq => Const::Bool(x == y),
            _ => return err(span, "unsupported bool operation"),
        },
        _ => return err(span, "mismatched constant operands"),
    })
}

pub fn fold_cast(c: Const, from: Scalar, to: Scalar) -> Const {
    let _ = from;
    match c {
        Const::Bool(b) => match to {
            Scalar::F32 => Const::F32(f32::from(u8::from(b))),
            Scalar::F64 => Const::F64(f64::from(u8::from(b))),
            _ => Const::Int(i128::from(b)),
        },
        Const::Int(i) => match to {
            Scalar::F32 => Const::F32(i as f32),
            Scalar::F64 => Const::F64(i as f64),
            t => Const::Int(wrap_int(i, t)),
        },
        Const::F32(f) => float_to(f as f64, f, to),
        Const::F64(f) => float_to(f, f as f32, to),
    }
}

/// Float -> `to` as Rust's `as`: saturating, NaN to 0.
pub(super) fn float_to(f: f64, f32v: f32, to: Scalar) -> Const {
    match to {
        Scalar::F32 => Const::F32(f32v),
        Scalar::F64 => Const::F64(f),
        t => {
            let (min, max) = t.int_range();
            let v = if f.is_nan() {
                0
            } else if f <= min as f64 {
                min
            } else if f >= max as f64 {
                max
            } else {
                f.trunc() as i128
            };
            Const::Int(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_folding_wraps_like_release_rust() {
        let s = Loc::from(proc_macro2::Span::call_site());
        assert_eq!(
            fold(
                BinOp::Add,
                Const::Int(u32::MAX as i128),
                Const::Int(1),
                Scalar::U32,
                Scalar::U32,
                s
            )
            .unwrap(),
            Const::Int(0)
        );
        assert_eq!(
            fold(BinOp::Sub, Const::Int(0), Const::Int(1), Scalar::U8, Scalar::U8, s).unwrap(),
            Const::Int(255)
        );
        assert_eq!(
            fold(
                BinOp::Mul,
                Const::Int(i32::MAX as i128),
                Const::Int(2),
                Scalar::I32,
                Scalar::I32,
                s
            )
            .unwrap(),
            Const::Int(-2)
        );
        assert_eq!(
            fold(BinOp::Shl, Const::Int(1), Const::Int(33), Scalar::U32, Scalar::U32, s).unwrap(),
            Const::Int(2)
        );
        assert_eq!(
            fold(BinOp::Shr, Const::Int(-8), Const::Int(1), Scalar::I32, Scalar::I32, s).unwrap(),
            Const::Int(-4)
        );
        assert_eq!(
            fold(BinOp::Div, Const::Int(-7), Const::Int(2), Scalar::I32, Scalar::I32, s).unwrap(),
            Const::Int(-3)
        );
        assert_eq!(
            fold(BinOp::Rem, Const::Int(-7), Const::Int(2), Scalar::I32, Scalar::I32, s).unwrap(),
            Const::Int(-1)
        );
        assert!(fold(BinOp::Div, Const::Int(1), Const::Int(0), Scalar::U32, Scalar::U32, s).is_err());
    }

    #[test]
    fn cast_folding_follows_as() {
        assert_eq!(fold_cast(Const::F32(-1.5), Scalar::F32, Scalar::U32), Const::Int(0));
        assert_eq!(fold_cast(Const::F32(f32::NAN), Scalar::F32, Scalar::I32), Const::Int(0));
        assert_eq!(
            fold_cast(Const::F32(1e20), Scalar::F32, Scalar::I32),
            Const::Int(i32::MAX as i128)
        );
        assert_eq!(fold_cast(Const::F32(-2.7), Scalar::F32, Scalar::I32), Const::Int(-2));
        assert_eq!(
            fold_cast(Const::Int(-1), Scalar::I32, Scalar::U64),
            Const::Int(u64::MAX as i128)
        );
        assert_eq!(fold_cast(Const::Int(300), Scalar::U32, Scalar::U8), Const::Int(44));
        assert_eq!(fold_cast(Const::Bool(true), Scalar::Bool, Scalar::F32), Const::F32(1.0));
    }

    #[test]
    fn immediates_are_exact() {
        assert_eq!(f32_imm(1.0), "0f3F800000");
        assert_eq!(f64_imm(-2.0), "0dC000000000000000");
        assert_eq!(int_imm(-1, Scalar::I32), "-1");
        assert_eq!(int_imm(u32::MAX as i128, Scalar::U32), "4294967295");
    }
}
