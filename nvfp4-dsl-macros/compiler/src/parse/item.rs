//! Functions and items: what a signature may not have, const generics
//! (type parameters are in `crate::generics`),
//! parameters, `#[device]` functions and `#[device]` structs.

use super::ty::parse_scalar_path;
use super::{FnKind, Parser, Result, err};
use crate::ast::{ConstParam, DeviceFn, Loc, Param, Pass};
use crate::types::{Scalar, StructTy, Ty};

/// What neither a kernel nor a device function can be.
pub(super) fn check_signature(sig: &syn::Signature, kind: FnKind) -> Result<()> {
    let what = kind.noun();
    if let Some(c) = &sig.constness {
        return err(Loc::of(&c), format!("{what} cannot be a `const fn`; remove `const`"));
    }
    if let Some(a) = &sig.asyncness {
        return err(Loc::of(&a), format!("{what} cannot be `async`; remove `async`"));
    }
    if let Some(u) = &sig.unsafety {
        let msg = match kind {
            FnKind::Kernel => "a kernel is not declared `unsafe`; its launcher is `unsafe` already",
            FnKind::Device => "a device function is not declared `unsafe`; remove `unsafe`",
        };
        return err(Loc::of(&u), msg);
    }
    if let Some(abi) = &sig.abi {
        return err(Loc::of(&abi), format!("{what} has no ABI string; remove `extern`"));
    }
    if let Some(v) = &sig.variadic {
        return err(Loc::of(&v), "variadic functions are not supported in kernels");
    }
    if let Some(w) = &sig.generics.where_clause {
        return err(
            Loc::of(&w),
            format!(
                "`where` clauses are not supported; {what} bounds its type parameters in place (`<T: Float>`) and takes const generics without bounds"
            ),
        );
    }
    Ok(())
}

/// The const generics of a kernel or device function.
pub(super) fn const_params(sig: &syn::Signature) -> Result<Vec<ConstParam>> {
    let mut consts = Vec::new();
    for param in &sig.generics.params {
        match param {
            syn::GenericParam::Lifetime(_) => {}
            // A kernel's and a device function's are substituted before
            // parsing (`generics`): what is left is a method's.
            syn::GenericParam::Type(t) => {
                return err(
                    Loc::of(&t),
                    "a method takes no type parameters; write a generic `#[device] fn` (`fn f<T: Float>(x: T)`) and call it from the method",
                );
            }
            syn::GenericParam::Const(c) => {
                if let Some(d) = &c.default {
                    return err(
                        Loc::of(&d),
                        "const generic defaults are not supported; list the values in `specialize(..)`",
                    );
                }
                let ty = match parse_scalar_path(&c.ty) {
                    Some(
                        s @ (Scalar::Bool | Scalar::U32 | Scalar::I32 | Scalar::U64 | Scalar::I64 | Scalar::Usize),
                    ) => s,
                    _ => {
                        return err(
                            Loc::of(&c.ty),
                            "a const generic must be `bool`, `u32`, `i32`, `u64`, `i64` or `usize`",
                        );
                    }
                };
                consts.push(ConstParam {
                    name: c.ident.to_string(),
                    ty,
                    span: Loc::of(&c.ident),
                });
            }
        }
    }
    Ok(consts)
}

impl Parser {
    /// The parameters of a kernel, a device function or a method (whose
    /// first may be its receiver).
    pub(super) fn params(&mut self, sig: &syn::Signature, consts: &[ConstParam], kind: FnKind) -> Result<Vec<Param>> {
        let what = kind.noun();
        let mut params: Vec<Param> = Vec::new();
        for (i, input) in sig.inputs.iter().enumerate() {
            let pt = match (input, &self.self_ty) {
                (syn::FnArg::Typed(pt), _) => pt,
                (syn::FnArg::Receiver(r), Some(st)) if i == 0 => {
                    params.push(receiver(r, st)?);
                    continue;
                }
                (syn::FnArg::Receiver(_), _) => {
                    return err(
                        Loc::of(&input),
                        format!("{what} is a free function; it cannot take `self`"),
                    );
                }
            };
            let (name, mutable) = match &*pt.pat {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    (pi.ident.to_string(), pi.mutability.is_some())
                }
                other => {
                    return err(
                        Loc::of(&other),
                        format!(
                            "the parameters of {what} must be plain names (`x: &[f32]`); patterns are not supported"
                        ),
                    );
                }
            };
            let (ty, pass) = match kind {
                FnKind::Kernel => (self.parse_param_ty(&pt.ty)?, Pass::Value),
                FnKind::Device => self.device_param_ty(&pt.ty)?,
            };
            if mutable && (pass != Pass::Value || !ty.is_value()) {
                return err(
                    Loc::of(&pt.pat),
                    "only value parameters can be `mut`; slices, shared memory and references stay bound to what the caller passed",
                );
            }
            params.push(Param {
                name,
                ty,
                mutable,
                pass,
                span: Loc::of(&pt.pat),
            });
        }
        for (i, a) in params.iter().enumerate() {
            if params[..i].iter().any(|b| b.name == a.name) || consts.iter().any(|c| c.name == a.name) {
                return err(a.span, format!("the name `{}` is used twice", a.name));
            }
        }
        Ok(params)
    }

    /// A `#[device]` struct: named fields of numbers, vectors, arrays or
    /// tuples, no generics; `methods` when its impl block came with it.
    pub(super) fn device_struct(&mut self, st: &syn::ItemStruct, methods: bool) -> Result<StructTy> {
        if !st.generics.params.is_empty() {
            return err(Loc::of(&st.generics), "a `#[device]` struct takes no generics");
        }
        let syn::Fields::Named(named) = &st.fields else {
            return err(
                Loc::of(&st.fields),
                "a `#[device]` struct has named fields: `struct Pair { lo: u32, hi: u32 }`",
            );
        };
        let mut fields = Vec::with_capacity(named.named.len());
        for f in &named.named {
            let t = self.parse_ty(&f.ty)?;
            if !t.is_value() || matches!(t, Ty::Struct(_)) {
                return err(
                    Loc::of(&f.ty),
                    format!("a field of a `#[device]` struct is a number, a vector, an array or a tuple, not `{t}`"),
                );
            }
            let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
            fields.push((name, t));
        }
        let at = st.ident.span().start();
        Ok(StructTy {
            name: st.ident.to_string(),
            id: format!("{}@{}:{}", st.ident, at.line, at.column),
            fields,
            methods,
        })
    }

    /// A `#[device]` function reached through the path `key`.
    pub(super) fn device(&mut self, key: &str, item: &syn::ItemFn) -> Result<DeviceFn> {
        let sig = &item.sig;
        self.device_fn(key.to_string(), key, sig, &item.block, sig.ident.to_string(), None)
    }

    /// A device function or a method (`method_of`, with `self.self_ty`
    /// set): `key` is how calls find it, `scope` where its paths resolve
    /// from, `name` how errors name it.
    pub(super) fn device_fn(
        &mut self,
        key: String,
        scope: &str,
        sig: &syn::Signature,
        block: &syn::Block,
        name: String,
        method_of: Option<(StructTy, String)>,
    ) -> Result<DeviceFn> {
        self.caller = scope.to_string();
        check_signature(sig, FnKind::Device)?;
        let consts = const_params(sig)?;
        let saved = std::mem::replace(&mut self.consts, consts.iter().map(|c| c.name.clone()).collect());
        self.kind = FnKind::Device;
        let params = self.params(sig, &consts, FnKind::Device)?;
        let outer = std::mem::replace(&mut self.locals, vec![params.iter().map(|p| p.name.clone()).collect()]);
        let ret = match &sig.output {
            syn::ReturnType::Default => Ty::Unit,
            syn::ReturnType::Type(_, ty) => {
                let t = self.parse_ty(ty)?;
                if t != Ty::Unit && !t.is_value() {
                    return err(
                        Loc::of(&ty),
                        format!("a device function cannot return `{t}`; return a number, a vector or an array"),
                    );
                }
                t
            }
        };
        let body = self.block(block)?;
        self.locals = outer;
        self.consts = saved;
        self.kind = FnKind::Kernel;
        self.caller.clear();
        Ok(DeviceFn {
            key,
            scope: scope.to_string(),
            name,
            method_of,
            name_span: Loc::of(&sig.ident),
            fn_line: sig.fn_token.span.start().line,
            consts,
            params,
            ret,
            body,
        })
    }
}

/// A method's `self`, `mut self`, `&self` or `&mut self`.
fn receiver(r: &syn::Receiver, st: &StructTy) -> Result<Param> {
    if r.colon_token.is_some() {
        return err(
            Loc::of(r),
            "write the receiver as `self`, `mut self`, `&self` or `&mut self`",
        );
    }
    let (pass, mutable) = match (&r.reference, r.mutability.is_some()) {
        (None, mutable) => (Pass::Value, mutable),
        (Some(_), false) => (Pass::Ref, false),
        (Some(_), true) => (Pass::RefMut, false),
    };
    Ok(Param {
        name: "self".to_string(),
        ty: Ty::Struct(st.clone()),
        mutable,
        pass,
        span: Loc::of(r),
    })
}
