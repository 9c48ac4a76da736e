//! What to write instead of the methods rustc has and kernels do not: the
//! hints of the type check's errors, and the result type of the float
//! methods it reports and checks past.

use super::super::types::{Scalar, Ty};
use super::infer::TyV;
use crate::intrinsics::{self, Form, Intrinsic};

/// The error for `x.method()` on `ty`, a method rustc has and kernels do
/// not, saying what to write instead; `None` where there is no hint.
pub(super) fn unsupported_method(method: &str, ty: &Ty) -> Option<String> {
    if method == "swap" && ty.is_memory() {
        return Some(
            "`.swap()` is not available on memory in kernels; swap in one assignment, `(s[i], s[j]) = (s[j], s[i]);`, or through a local"
                .to_string(),
        );
    }
    if matches!(method, "iter" | "iter_mut" | "into_iter") && (ty.is_memory() || matches!(ty, Ty::Array { .. })) {
        return Some(format!(
            "`.{method}()` is for `for` loops in kernels (`for v in x.{method}()`); iterator adapters and consumers (`sum`, `map`, `max`, ...) are not supported: write a `for` loop"
        ));
    }
    if ty.is_memory()
        && matches!(
            method,
            "fill" | "copy_from_slice" | "clone_from_slice" | "swap_with_slice"
        )
    {
        return Some(format!(
            "`.{method}()` is not available on memory in kernels; write a `for` loop (`for i in 0..x.len() {{ x[i] = v; }}`)"
        ));
    }
    if ty.is_int() && matches!(method, "try_into" | "into") {
        return Some(format!(
            "`.{method}()` is not supported in kernels; convert with `as` (wrapping), or `T::from(x)` where it is lossless"
        ));
    }
    if ty.is_memory() && matches!(method, "get" | "get_mut") {
        return Some(format!(
            "`.{method}()` returns an `Option`, which kernels do not have; index after a bounds check: `if i < x.len() {{ x[i] }} else {{ .. }}`"
        ));
    }
    if let Some(instead) = float_method_instead(method)
        && matches!(ty, Ty::Scalar(Scalar::F32 | Scalar::F64))
    {
        return Some(format!(
            "`.{method}()` is not available in kernels (PTX has no instruction for it); write {instead}"
        ));
    }
    let int = ty.is_int();
    if int && (method.starts_with("checked_") || method.starts_with("overflowing_")) {
        let op = method.split_once('_').map_or(method, |(_, op)| op);
        let instead = ["wrapping_", "saturating_"]
            .iter()
            .map(|p| format!("{p}{op}"))
            .filter(|m| intrinsics::all().any(|i| i.name == m && i.form == Form::Method))
            .map(|m| format!("`.{m}()`"))
            .collect::<Vec<_>>();
        let what = if method.starts_with("checked_") {
            "returns an `Option`"
        } else {
            "returns a `(value, overflowed)` tuple"
        };
        let hint = if instead.is_empty() {
            "compute the condition explicitly with a comparison".to_string()
        } else {
            format!("use {}, or compare explicitly", instead.join(" or "))
        };
        return Some(format!(
            "`.{method}()` {what}, which kernels cannot lower (a kernel has no way to panic or unwrap); {hint}"
        ));
    }
    let rows: Vec<&Intrinsic> = intrinsics::all()
        .filter(|i| i.name == method && i.form == Form::Method)
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut types: Vec<String> = rows
        .iter()
        .flat_map(|i| i.t_set.iter().map(|t| format!("`{t}`")))
        .collect();
    types.dedup();
    if types.is_empty() {
        return None;
    }
    let hint = if intrinsics::is_approximate(method) && *ty == Ty::Scalar(Scalar::F64) {
        format!("; PTX approximates it in `f32` only: write `(x as f32).{method}()`")
    } else {
        String::new()
    };
    Some(format!(
        "`.{method}()` is available in kernels on {}, not on `{ty}`{hint}",
        types.join(", ")
    ))
}

/// The type Rust gives `x.method(..)` for a float method of
/// [`float_method_instead`] on `x: ty` (`f32` or `f64`).
pub(super) fn float_method_result(method: &str, ty: &Ty) -> Option<TyV> {
    if float_method_instead(method).is_none() || !matches!(ty, Ty::Scalar(Scalar::F32 | Scalar::F64)) {
        return None;
    }
    Some(TyV::Ty(if method == "sin_cos" {
        Ty::Tuple(vec![ty.clone(), ty.clone()])
    } else {
        ty.clone()
    }))
}

/// What to write for a float method Rust has and kernels do not, from the
/// ones they have.
fn float_method_instead(method: &str) -> Option<&'static str> {
    Some(match method {
        "powf" => {
            "`x.powi(n)` for an integer exponent, or `(y * x.log2()).exp2()` for `x > 0` (approximate, as CUDA's `__powf`)"
        }
        "hypot" => "`(x * x + y * y).sqrt()` (it overflows where `hypot` does not: scale first for values beyond 1e18)",
        "log10" => "`x.log2() * core::f32::consts::LOG10_2`, or `x.ln()` divided by `ln 10`",
        "ln_1p" => "`(1.0 + x).ln()` (inexact for tiny `x`)",
        "exp_m1" => "`x.exp() - 1.0` (inexact for tiny `x`)",
        "sinh" | "cosh" => "it from `x.exp()`: `(x.exp() - (-x).exp()) * 0.5` (`+` for `cosh`)",
        "tan" => "`x.sin() / x.cos()`",
        "sin_cos" => "`(x.sin(), x.cos())`",
        "cbrt" => "`x.signum() * (x.abs().log2() / 3.0).exp2()` (approximate)",
        "atan" | "atan2" | "asin" | "acos" | "asinh" | "acosh" | "atanh" => {
            "a polynomial or a `#[device]` function of your own (no PTX instruction approximates it)"
        }
        "to_degrees" | "to_radians" => "a multiplication by the constant (`x * (180.0 / core::f32::consts::PI)`)",
        "rem_euclid" => "`x - (x / y).floor() * y` for `y > 0` (rounded at each step)",
        "div_euclid" => "`(x / y).floor()` for `y > 0`",
        _ => return None,
    })
}
