//! Literals, and the named constants (`u32::MAX`, `f32::consts::PI`,
//! `f16::EPSILON` ...) that stand for one.

use super::{Parser, Result, err};
use crate::ast::{CallPath, ExprKind, Lit, Loc, UnOp};
use crate::types::Scalar;

impl Parser {
    /// A literal; in patterns syn reads `-1` as one literal with the
    /// digits "-1", which is the negation of `1` here.
    pub(super) fn lit_expr(&mut self, l: &syn::ExprLit) -> Result<ExprKind> {
        let span = Loc::of(l);
        let negated = match &l.lit {
            syn::Lit::Int(i) => match i.base10_digits().strip_prefix('-') {
                Some(d) => {
                    let suffix = match i.suffix() {
                        "" => None,
                        x => Some(self.suffix(x, span, true)?),
                    };
                    Some(int_lit(d, suffix, span)?)
                }
                None => None,
            },
            syn::Lit::Float(f) => match f.base10_digits().strip_prefix('-') {
                Some(d) => {
                    let suffix = match f.suffix() {
                        "" => None,
                        x => Some(self.suffix(x, span, false)?),
                    };
                    Some(Lit::Float(d.to_string(), suffix))
                }
                None => None,
            },
            _ => None,
        };
        Ok(match negated {
            Some(lit) => {
                let magnitude = self.expr_node(ExprKind::Lit(lit), span);
                ExprKind::Unary(UnOp::Neg, Box::new(magnitude))
            }
            None => ExprKind::Lit(self.lit(&l.lit)?),
        })
    }

    fn lit(&self, lit: &syn::Lit) -> Result<Lit> {
        match lit {
            syn::Lit::Int(i) => {
                let suffix = match i.suffix() {
                    "" => None,
                    s => Some(self.suffix(s, Loc::of(&i), true)?),
                };
                int_lit(i.base10_digits(), suffix, Loc::of(&i))
            }
            syn::Lit::Float(f) => {
                let suffix = match f.suffix() {
                    "" => None,
                    s => Some(self.suffix(s, Loc::of(&f), false)?),
                };
                let digits = f.base10_digits().to_string();
                Ok(Lit::Float(digits, suffix))
            }
            syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
            syn::Lit::Byte(b) => Ok(Lit::Int(b.value().into(), Some(Scalar::U8))),
            other => err(
                Loc::of(&other),
                "only number, byte (`b'a'`) and `bool` literals are supported in kernels",
            ),
        }
    }

    fn suffix(&self, s: &str, span: Loc, int: bool) -> Result<Scalar> {
        match Scalar::from_rust_name(s) {
            Some(sc) if (int && sc.is_int()) || sc.is_prim_float() => Ok(sc),
            _ => err(
                span,
                format!("the literal suffix `{s}` is not supported; use one of the supported types"),
            ),
        }
    }

    /// `u32::MAX`, `i32::MIN`, `f32::INFINITY`, `f16::MAX`, ... as the
    /// expression that has their value: a literal, a negated literal, or
    /// `f16::from_bits(..)` of the half types' bits.
    pub(super) fn named_constant(&mut self, ty: &str, item: &str, span: Loc) -> Option<ExprKind> {
        let scalar = Scalar::from_rust_name(ty)?;
        if scalar.is_int() {
            let (min, max) = scalar.int_range();
            let lit = |v: u128, s: Scalar| ExprKind::Lit(Lit::Int(v, Some(s)));
            return Some(match item {
                "MAX" => lit(max as u128, scalar),
                "MIN" if min == 0 => lit(0, scalar),
                "MIN" => {
                    let magnitude = self.expr_node(lit(min.unsigned_abs(), scalar), span);
                    ExprKind::Unary(UnOp::Neg, Box::new(magnitude))
                }
                "BITS" => lit(scalar.bits() as u128, Scalar::U32),
                _ => return None,
            });
        }
        if let Some(bits) = half_constant(scalar, item) {
            let arg = self.expr_node(ExprKind::Lit(Lit::Int(bits.into(), Some(Scalar::U16))), span);
            return Some(ExprKind::Call {
                path: CallPath {
                    qualifier: Some(ty.to_string()),
                    name: "from_bits".to_string(),
                    full: format!("{ty}::from_bits"),
                },
                generics: Vec::new(),
                args: vec![arg],
            });
        }
        float_constant(scalar, item).map(ExprKind::Lit)
    }
}

/// An integer literal's digits with their suffix: `0f32` is a float.
fn int_lit(digits: &str, suffix: Option<Scalar>, span: Loc) -> Result<Lit> {
    if let Some(s) = suffix.filter(|s| s.is_prim_float()) {
        return Ok(Lit::Float(digits.to_string(), Some(s)));
    }
    let v: u128 = digits.parse().map_err(|_| span.error("invalid integer literal"))?;
    Ok(Lit::Int(v, suffix))
}

/// The `f32::consts`/`f64::consts` a kernel can name, as f64 values (each
/// rounds to the same f32 as Rust's own constant).
pub(super) const MATH_CONSTANTS: [(&str, f64); 18] = {
    use std::f64::consts::*;
    [
        ("PI", PI),
        ("TAU", TAU),
        ("E", E),
        ("SQRT_2", SQRT_2),
        ("FRAC_1_SQRT_2", FRAC_1_SQRT_2),
        ("LN_2", LN_2),
        ("LN_10", LN_10),
        ("LOG2_E", LOG2_E),
        ("LOG2_10", LOG2_10),
        ("LOG10_E", LOG10_E),
        ("LOG10_2", LOG10_2),
        ("FRAC_PI_2", FRAC_PI_2),
        ("FRAC_PI_3", FRAC_PI_3),
        ("FRAC_PI_4", FRAC_PI_4),
        ("FRAC_PI_6", FRAC_PI_6),
        ("FRAC_PI_8", FRAC_PI_8),
        ("FRAC_1_PI", FRAC_1_PI),
        ("FRAC_2_PI", FRAC_2_PI),
    ]
};

/// `f32::consts::PI`, ... as a literal of its type.
pub(super) fn math_constant(ty: &str, item: &str) -> Option<Lit> {
    let scalar = Scalar::from_rust_name(ty).filter(|s| s.is_prim_float())?;
    let (_, v) = MATH_CONSTANTS.iter().find(|(n, _)| *n == item)?;
    let text = if scalar == Scalar::F32 {
        format!("{:e}", *v as f32)
    } else {
        format!("{v:e}")
    };
    Some(Lit::Float(text, Some(scalar)))
}

/// The `half` crate's associated constants of `f16` and `bf16` a kernel can
/// name, with their bits in each type.
const HALF_CONSTANTS: [(&str, u16, u16); 12] = [
    ("MAX", 0x7BFF, 0x7F7F),
    ("MIN", 0xFBFF, 0xFF7F),
    ("EPSILON", 0x1400, 0x3C00),
    ("MIN_POSITIVE", 0x0400, 0x0080),
    ("MIN_POSITIVE_SUBNORMAL", 0x0001, 0x0001),
    ("INFINITY", 0x7C00, 0x7F80),
    ("NEG_INFINITY", 0xFC00, 0xFF80),
    ("NAN", 0x7E00, 0x7FC0),
    ("ZERO", 0x0000, 0x0000),
    ("NEG_ZERO", 0x8000, 0x8000),
    ("ONE", 0x3C00, 0x3F80),
    ("NEG_ONE", 0xBC00, 0xBF80),
];

/// The bits of `f16::MAX`, `bf16::EPSILON`, ...
fn half_constant(scalar: Scalar, item: &str) -> Option<u16> {
    let (_, f16_bits, bf16_bits) = HALF_CONSTANTS.iter().find(|(n, ..)| *n == item)?;
    match scalar {
        Scalar::F16 => Some(*f16_bits),
        Scalar::Bf16 => Some(*bf16_bits),
        _ => None,
    }
}

/// Rust's associated constants of the primitive float types, as literals.
fn float_constant(scalar: Scalar, item: &str) -> Option<Lit> {
    let f32_text = |v: f32| format!("{v:e}");
    let f64_text = |v: f64| format!("{v:e}");
    let text = match (scalar, item) {
        (Scalar::F32 | Scalar::F64, "INFINITY") => "inf".to_string(),
        (Scalar::F32 | Scalar::F64, "NEG_INFINITY") => "-inf".to_string(),
        (Scalar::F32 | Scalar::F64, "NAN") => "NaN".to_string(),
        (Scalar::F32, "MAX") => f32_text(f32::MAX),
        (Scalar::F32, "MIN") => f32_text(f32::MIN),
        (Scalar::F32, "EPSILON") => f32_text(f32::EPSILON),
        (Scalar::F32, "MIN_POSITIVE") => f32_text(f32::MIN_POSITIVE),
        (Scalar::F64, "MAX") => f64_text(f64::MAX),
        (Scalar::F64, "MIN") => f64_text(f64::MIN),
        (Scalar::F64, "EPSILON") => f64_text(f64::EPSILON),
        (Scalar::F64, "MIN_POSITIVE") => f64_text(f64::MIN_POSITIVE),
        _ => return None,
    };
    Some(Lit::Float(text, Some(scalar)))
}
