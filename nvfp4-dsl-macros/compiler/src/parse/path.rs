//! Paths and calls: names, the values of `Swizzle::`, `Target::`,
//! `Cache::`, `Order::` and `Scope::`, named constants, calls of named
//! functions with their generic arguments, and the key a path is found by.

use super::literal::{MATH_CONSTANTS, math_constant};
use super::ty::is_builtin_type;
use super::{Parser, Result, err};
use crate::ast::{CallPath, ExprKind, GenericArg, Loc};
use crate::lower::fold::Const;
use crate::target::Target;
use crate::types::{CacheHint, Len, Order, Scalar, Scope, Swizzle};

impl Parser {
    pub(super) fn path_expr(&mut self, p: &syn::ExprPath) -> Result<ExprKind> {
        if p.qself.is_some() {
            return err(Loc::of(&p), "qualified paths are not supported in kernels");
        }
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if p.path.segments.iter().any(|s| !s.arguments.is_none()) {
            return err(Loc::of(&p), "generic arguments are not supported here");
        }
        if let [name] = segs.as_slice()
            && let Some(msg) = std_variant(name)
        {
            return err(Loc::of(p), msg);
        }
        match segs.as_slice() {
            [name] if self.is_local(name) => Ok(ExprKind::Var(name.clone())),
            [_] => self.const_ref(&p.path, Loc::of(p)),
            [.., ty, item] if ty == "Swizzle" => match Swizzle::ALL.into_iter().find(|s| s.rust_name() == item) {
                Some(s) => Ok(ExprKind::Swizzle(s)),
                None => err(
                    Loc::of(p),
                    format!(
                        "unknown swizzle `Swizzle::{item}`; the swizzles are {}",
                        Swizzle::ALL.map(|s| format!("`Swizzle::{}`", s.rust_name())).join(", ")
                    ),
                ),
            },
            [.., ty, item] if ty == "Target" => match Target::ALL.into_iter().find(|t| t.variant() == item) {
                Some(t) => Ok(ExprKind::Target(t)),
                None => err(
                    Loc::of(p),
                    format!(
                        "unknown target `Target::{item}`; the targets are {}",
                        Target::ALL.map(|t| format!("`Target::{}`", t.variant())).join(", ")
                    ),
                ),
            },
            [.., ty, item] if ty == "Cache" => match CacheHint::ALL.into_iter().find(|h| h.rust_name() == item) {
                Some(h) => Ok(ExprKind::CacheHint(h)),
                None => err(
                    Loc::of(&p),
                    format!(
                        "unknown cache hint `Cache::{item}`; the hints are {}",
                        CacheHint::ALL.map(|h| format!("`Cache::{}`", h.rust_name())).join(", ")
                    ),
                ),
            },
            [.., ty, item] if ty == "Order" => match Order::ALL.into_iter().find(|o| o.rust_name() == item) {
                Some(o) => Ok(ExprKind::Order(o)),
                None => err(
                    Loc::of(&p),
                    format!(
                        "unknown memory order `Order::{item}`; the orders are {} (PTX has no sequentially consistent atomic)",
                        Order::ALL.map(|o| format!("`Order::{}`", o.rust_name())).join(", ")
                    ),
                ),
            },
            [.., ty, item] if ty == "Scope" => match Scope::ALL.into_iter().find(|s| s.rust_name() == item) {
                Some(s) => Ok(ExprKind::Scope(s)),
                None => err(
                    Loc::of(&p),
                    format!(
                        "unknown scope `Scope::{item}`; the scopes are {}",
                        Scope::ALL.map(|s| format!("`Scope::{}`", s.rust_name())).join(", ")
                    ),
                ),
            },
            [.., ty, item] if ty == "Ordering" && Order::ALL.iter().any(|o| o.rust_name() == item) => err(
                Loc::of(&p),
                format!("atomics in kernels take `nvfp4_dsl::Order`, not std's `Ordering`: write `Order::{item}`"),
            ),
            [.., ty, consts, item] if consts == "consts" => match math_constant(ty, item) {
                Some(lit) => Ok(ExprKind::Lit(lit)),
                None => err(
                    Loc::of(&p),
                    format!(
                        "`{ty}::consts::{item}` is not available in kernels; the constants are `f32::consts::` and `f64::consts::` {}",
                        MATH_CONSTANTS.map(|(n, _)| format!("`{n}`")).join(", ")
                    ),
                ),
            },
            [.., ty, item] => match self.named_constant(ty, item, Loc::of(p)) {
                Some(kind) => Ok(kind),
                // A path through modules names a `#[device] const`.
                None if !ty.starts_with(char::is_uppercase) && !is_builtin_type(ty) => {
                    self.const_ref(&p.path, Loc::of(p))
                }
                None => err(
                    Loc::of(&p),
                    format!(
                        "`{ty}::{item}` is not available in kernels; kernels see their parameters, const generics, locals, the intrinsics and the `const`s marked `#[device]` (an associated constant of a type is not one: make it a module-level `#[device] const`)"
                    ),
                ),
            },
            [] => err(Loc::of(&p), "expected a name"),
        }
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> Result<ExprKind> {
        let syn::Expr::Path(fp) = &*c.func else {
            return err(
                Loc::of(&c.func),
                "only named functions can be called in kernels (intrinsics such as `thread_idx_x()`)",
            );
        };
        if let Some(call) = self.closure_call(fp, c) {
            return call;
        }
        if fp.qself.is_some() {
            return err(Loc::of(&fp), "qualified paths are not supported in kernels");
        }
        let segs: Vec<&syn::PathSegment> = fp.path.segments.iter().collect();
        if let [only] = segs.as_slice()
            && let Some(msg) = std_variant(&only.ident.to_string())
        {
            return err(Loc::of(fp), msg);
        }
        if let Some(call) = self.cmp_min_max(&segs, c) {
            return call;
        }
        let last = segs
            .last()
            .copied()
            .ok_or_else(|| Loc::of(fp).error("expected a function name"))?;
        let qualifier = if segs.len() >= 2 {
            let q = segs[segs.len() - 2].ident.to_string();
            // `nvfp4_dsl::intrinsics::sync_threads()` names a free intrinsic.
            if matches!(
                q.as_str(),
                "nvfp4_dsl" | "prelude" | "intrinsics" | "crate" | "self" | "super"
            ) {
                None
            } else {
                if !segs[segs.len() - 2].arguments.is_none() {
                    return err(
                        Loc::of(&segs[segs.len() - 2].arguments),
                        "generic arguments on the type are not supported here",
                    );
                }
                Some(q)
            }
        } else {
            None
        };
        let mut generics = Vec::new();
        match &last.arguments {
            syn::PathArguments::None => {}
            syn::PathArguments::AngleBracketed(ab) => {
                for arg in &ab.args {
                    generics.push(self.generic_arg(arg)?);
                }
            }
            syn::PathArguments::Parenthesized(p) => {
                return err(Loc::of(&p), "unexpected parenthesized generic arguments");
            }
        }
        let args = c.args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?;
        let name = last.ident.to_string();
        // `Self::f` in a method is `Pair::f`, which resolves from the impl
        // block's module as the struct's name does.
        let (qualifier, full) = match (&self.self_ty, qualifier) {
            (Some(st), Some(q)) if q == "Self" && segs.len() == 2 => {
                (Some(st.name.clone()), format!("{}::{name}", st.name))
            }
            (_, q) => (q, path_key(&fp.path)),
        };
        Ok(ExprKind::Call {
            path: CallPath { qualifier, name, full },
            generics,
            args,
        })
    }

    /// `std::cmp::max(a, b)` (also `core::`, `cmp::`, `min`) as `a.max(b)`:
    /// the same for the `Ord` types it takes; `None` for any other call.
    fn cmp_min_max(&mut self, segs: &[&syn::PathSegment], c: &syn::ExprCall) -> Option<Result<ExprKind>> {
        let names: Vec<String> = segs.iter().map(|s| s.ident.to_string()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let (["std" | "core", "cmp", method @ ("max" | "min")] | ["cmp", method @ ("max" | "min")]) = names[..] else {
            return None;
        };
        let [a, b] = c.args.iter().collect::<Vec<_>>()[..] else {
            return Some(err(
                Loc::of(&c.args),
                format!("`cmp::{method}` takes two values: `cmp::{method}(a, b)`"),
            ));
        };
        Some((|| {
            Ok(ExprKind::MethodCall {
                receiver: Box::new(self.expr(a)?),
                method: method.to_string(),
                args: vec![self.expr(b)?],
            })
        })())
    }

    /// A turbofish argument: a type, or a constant. Rust reads a lone name
    /// (`N`, `TILE`) as either; here it is a const generic, a type, or a
    /// `#[device] const`.
    fn generic_arg(&mut self, arg: &syn::GenericArgument) -> Result<GenericArg> {
        match arg {
            syn::GenericArgument::Type(syn::Type::Path(tp))
                if tp.qself.is_none()
                    && tp.path.segments.iter().all(|s| s.arguments.is_none())
                    && tp.path.segments.last().is_some_and(|s| {
                        let name = s.ident.to_string();
                        !is_builtin_type(&name) && self.find_struct(&tp.path).is_none()
                    }) =>
            {
                let e = syn::Expr::Path(syn::ExprPath {
                    attrs: Vec::new(),
                    qself: None,
                    path: tp.path.clone(),
                });
                self.const_arg(&e)
            }
            syn::GenericArgument::Type(t) => Ok(GenericArg::Type(self.parse_ty(t)?, Loc::of(&t))),
            syn::GenericArgument::Const(e) => self.const_arg(e),
            other => err(Loc::of(&other), "unsupported generic argument"),
        }
    }

    /// A constant turbofish argument: a length (a const generic, or a
    /// constant expression's value), or an expression over const generics
    /// for a device function (`helper::<{ N * 2 }>`).
    fn const_arg(&mut self, e: &syn::Expr) -> Result<GenericArg> {
        let loc = Loc::of(e);
        if let Some(name) = self.const_generic(e) {
            return Ok(GenericArg::Len(Len::Param(name), loc));
        }
        let x = self.expr(e)?;
        if let Ok(Const::Int(n)) = self.eval(&x, Scalar::Usize)
            && n >= 0
        {
            return Ok(GenericArg::Len(Len::Lit(n as u64), loc));
        }
        Ok(GenericArg::Expr(Box::new(x), loc))
    }
}

/// A path as `a::b::c`, without generic arguments: the key a device
/// function is found by.
pub fn path_key(path: &syn::Path) -> String {
    let segments = path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::");
    if path.leading_colon.is_some() {
        format!("::{segments}")
    } else {
        segments
    }
}

/// What to write instead of `Some`, `None`, `Ok` or `Err` (kernels have
/// no `Option` or `Result`); `None` for any other name. Without this a
/// variant would be taken for a `#[device] const` or function and fail in
/// rustc's name lookup ("cannot find macro `None`").
fn std_variant(name: &str) -> Option<String> {
    match name {
        "Some" | "None" => Some(format!(
            "`{name}`: kernels have no `Option`; keep a flag beside the value, e.g. `let (found, v) = if i < n {{ (true, x[i]) }} else {{ (false, 0.0) }};`"
        )),
        "Ok" | "Err" => Some(format!(
            "`{name}`: kernels have no `Result`; return a status value beside the result (e.g. a `u32` code in a tuple)"
        )),
        _ => None,
    }
}
