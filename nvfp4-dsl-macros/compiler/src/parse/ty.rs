//! Types: scalar paths, parameter types, array lengths, the types of
//! locals and casts, and the `#[device]` structs a type path names.

use super::path::path_key;
use super::{Parser, Result, err};
use crate::ast::{Loc, Pass, resolve_device};
use crate::types::{Len, Scalar, StructTy, Ty};

/// Reads `u32`, `half::f16`, `f16` ... as a scalar type.
pub(super) fn parse_scalar_path(ty: &syn::Type) -> Option<Scalar> {
    match ty {
        syn::Type::Group(g) => parse_scalar_path(&g.elem),
        syn::Type::Paren(p) => parse_scalar_path(&p.elem),
        syn::Type::Path(tp) if tp.qself.is_none() => {
            let last = tp.path.segments.last()?;
            if !last.arguments.is_none() {
                return None;
            }
            Scalar::from_rust_name(&last.ident.to_string())
        }
        _ => None,
    }
}

const SUPPORTED_TYPES: &str = "bool, u8, u16, u32, u64, usize, i32, i64, f16, bf16, f32, f64, u32x4, f16x2, bf16x2, Fp4x2, E4m3, E4m3x2, SmemDesc, WgmmaDesc, InstrDesc, [T; N] (and TensorMap parameters)";

impl Parser {
    /// A device function's parameter: a slice, shared memory
    /// (`&SharedArray<T, N>`, `&SharedSlice<T>`, or `&mut` of either), the
    /// caller's local array or struct by reference (`&[T; N]`, `&Pair`
    /// read it; `&mut [T; N]`, `&mut Pair` are the caller's own), a value
    /// (scalar, vector, array, tuple, struct), or the kernel's `TensorMap`.
    pub(super) fn device_param_ty(&mut self, ty: &syn::Type) -> Result<(Ty, Pass)> {
        if let syn::Type::Reference(r) = ty {
            let pass = if r.mutability.is_some() {
                Pass::RefMut
            } else {
                Pass::Ref
            };
            return match &*r.elem {
                syn::Type::Array(_) => Ok((self.parse_ty(&r.elem)?, pass)),
                syn::Type::Path(p) if p.qself.is_none() && shared_kind(&p.path).is_some() => {
                    Ok((self.shared_ty(&p.path)?, Pass::Value))
                }
                syn::Type::Path(p) if p.qself.is_none() && self.find_struct(&p.path).is_some() => {
                    Ok((self.parse_ty(&r.elem)?, pass))
                }
                _ => Ok((self.parse_param_ty(ty)?, Pass::Value)),
            };
        }
        if let syn::Type::Path(p) = ty
            && p.qself.is_none()
            && let Some(array) = shared_kind(&p.path)
        {
            let usage = if array {
                "`&SharedArray<T, N>` or `&mut SharedArray<T, N>`"
            } else {
                "`&SharedSlice<T>` or `&mut SharedSlice<T>`"
            };
            return err(
                Loc::of(&ty),
                format!("a device function takes shared memory by reference: write {usage}"),
            );
        }
        let t = self.parse_ty(ty)?;
        // A tensor map stays the kernel's parameter: the callee's copies
        // name it as the caller's do.
        if t.is_value() || t == Ty::TensorMap {
            Ok((t, Pass::Value))
        } else {
            err(
                Loc::of(&ty),
                format!(
                    "`{t}` cannot be a device function parameter; pass a slice, a number, a vector, an array or a `TensorMap`"
                ),
            )
        }
    }

    /// `SharedArray<T, N>` or `SharedSlice<T>`, as a device function
    /// parameter's type (behind `&` or `&mut`).
    fn shared_ty(&mut self, path: &syn::Path) -> Result<Ty> {
        let last = path.segments.last().expect("a shared memory type");
        let usage = match shared_kind(path) {
            Some(true) => "`&SharedArray<T, N>` or `&mut SharedArray<T, N>`",
            _ => "`&SharedSlice<T>` or `&mut SharedSlice<T>`",
        };
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return err(Loc::of(&path), format!("write the element type: {usage}"));
        };
        let args: Vec<&syn::GenericArgument> = args.args.iter().collect();
        let elem = match args.first() {
            Some(syn::GenericArgument::Type(t)) => self.parse_ty(t)?,
            _ => return err(Loc::of(&path), format!("write the element type: {usage}")),
        };
        let ok = match (&elem, shared_kind(path)) {
            (Ty::Array { .. }, Some(true)) => elem.shared_elem_ok(),
            _ => elem.mem_layout().is_some(),
        };
        if !ok {
            return err(
                Loc::of(&path),
                format!(
                    "`{elem}` cannot live in memory; use a numeric element type, or a row of them in a 2-D `SharedArray<[T; C], R>`"
                ),
            );
        }
        let elem = Box::new(elem);
        match (shared_kind(path), &args[1..]) {
            (Some(false), []) => Ok(Ty::SharedSlice { elem }),
            (Some(true), [len]) => {
                let len = match len {
                    syn::GenericArgument::Const(e) => self.parse_len(e)?,
                    syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => {
                        self.parse_len(&syn::Expr::Path(syn::ExprPath {
                            attrs: Vec::new(),
                            qself: None,
                            path: p.path.clone(),
                        }))?
                    }
                    other => {
                        return err(
                            Loc::of(other),
                            format!("write the length as a literal or a const generic: {usage}"),
                        );
                    }
                };
                Ok(Ty::SharedArray { elem, len })
            }
            _ => err(Loc::of(&path), format!("expected {usage}")),
        }
    }

    /// The `#[device]` struct a type path names, if it is one (`Self` in
    /// a `#[device] impl` block).
    pub(super) fn find_struct(&self, path: &syn::Path) -> Option<Ty> {
        if path.is_ident("Self") {
            return self.self_ty.clone().map(Ty::Struct);
        }
        let key = resolve_device(&self.caller, &path_key(path));
        self.structs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| Ty::Struct(t.clone()))
    }

    pub(super) fn parse_param_ty(&mut self, ty: &syn::Type) -> Result<Ty> {
        match ty {
            syn::Type::Reference(r) => {
                let syn::Type::Slice(s) = &*r.elem else {
                    return err(
                        Loc::of(&r),
                        "a reference parameter must be a slice, `&[T]` or `&mut [T]`; pass scalars by value",
                    );
                };
                let elem = self.parse_ty(&s.elem)?;
                if elem.mem_layout().is_none() {
                    return err(
                        Loc::of(&s.elem),
                        format!("`{elem}` cannot live in memory; use a numeric element type"),
                    );
                }
                Ok(Ty::Slice {
                    elem: Box::new(elem),
                    mutable: r.mutability.is_some(),
                })
            }
            _ => {
                let t = self.parse_ty(ty)?;
                match t {
                    Ty::Scalar(_)
                    | Ty::F16x2
                    | Ty::Bf16x2
                    | Ty::Fp4x2
                    | Ty::E4m3
                    | Ty::E4m3x2
                    | Ty::U32x4
                    | Ty::TensorMap => Ok(t),
                    Ty::Struct(st) => struct_param(st, Loc::of(&ty)),
                    _ => err(
                        Loc::of(&ty),
                        format!("`{t}` cannot be a kernel parameter; pass a slice, a scalar or a `#[device]` struct"),
                    ),
                }
            }
        }
    }

    /// An array length or a turbofish's length: a const generic, or a
    /// constant expression of literals and `#[device] const`s.
    pub(super) fn parse_len(&mut self, e: &syn::Expr) -> Result<Len> {
        if let Some(name) = self.const_generic(e) {
            return Ok(Len::Param(name));
        }
        let len = self.expr(e)?;
        Ok(Len::Lit(self.const_len(&len)?))
    }

    /// The const generic `e` names, when it is one alone (`N`, `{ N }`).
    pub(super) fn const_generic(&self, e: &syn::Expr) -> Option<String> {
        match e {
            syn::Expr::Path(p) if p.qself.is_none() => {
                let name = p.path.get_ident()?.to_string();
                self.consts.contains(&name).then_some(name)
            }
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(inner, None) => self.const_generic(inner),
                _ => None,
            },
            syn::Expr::Paren(p) => self.const_generic(&p.expr),
            _ => None,
        }
    }

    pub(super) fn parse_ty(&mut self, ty: &syn::Type) -> Result<Ty> {
        match ty {
            // A type from a `macro_rules!` argument (`$t`) or in parentheses.
            syn::Type::Group(g) => self.parse_ty(&g.elem),
            syn::Type::Paren(p) => self.parse_ty(&p.elem),
            syn::Type::Path(tp) if tp.qself.is_none() => {
                let Some(last) = tp.path.segments.last() else {
                    return err(Loc::of(&ty), "expected a type");
                };
                let name = last.ident.to_string();
                if let Some(t) = Ty::named(&name) {
                    if !last.arguments.is_none() {
                        return err(Loc::of(&last.arguments), "this type takes no generic arguments");
                    }
                    return Ok(t);
                }
                if let Some(t) = self.find_struct(&tp.path) {
                    return Ok(t);
                }
                match name.as_str() {
                    "Vec" | "Box" | "String" | "Rc" | "Arc" | "HashMap" | "BTreeMap" | "VecDeque" => err(
                        Loc::of(&ty),
                        format!(
                            "`{name}` allocates on the heap, which kernels cannot do; pass a `&[T]`/`&mut [T]` slice, or use a fixed-size array `[T; N]` or shared memory"
                        ),
                    ),
                    "Option" | "Result" => err(
                        Loc::of(&ty),
                        format!("`{name}` is not supported in kernels; use a `bool` flag next to the value"),
                    ),
                    "i8" | "i16" => {
                        let bits = if name == "i8" { 8 } else { 16 };
                        let dp4a = if bits == 8 {
                            " (`dp4a_s8` takes four packed `i8`s as they are)"
                        } else {
                            ""
                        };
                        err(
                            Loc::of(&ty),
                            format!(
                                "`{name}` is not supported in kernels; hold the values as `u{bits}` (a `&[u{bits}]` slice of the same bytes, or `u32` words) and sign-extend one where you compute with it: `((v as u32) << {shift}) as i32 >> {shift}`{dp4a}",
                                shift = 32 - bits
                            ),
                        )
                    }
                    "isize" | "u128" | "i128" | "char" | "str" => err(
                        Loc::of(&ty),
                        format!("`{name}` is not supported in kernels; the supported types are {SUPPORTED_TYPES}"),
                    ),
                    _ => err(
                        Loc::of(&ty),
                        format!("unknown type `{name}` in a kernel; the supported types are {SUPPORTED_TYPES}"),
                    ),
                }
            }
            syn::Type::Array(a) => {
                let elem = self.parse_ty(&a.elem)?;
                if !elem.is_value() {
                    return err(
                        Loc::of(&a.elem),
                        "a local array holds values (numbers, vectors or arrays of them)",
                    );
                }
                Ok(Ty::Array {
                    elem: Box::new(elem),
                    len: self.parse_len(&a.len)?,
                })
            }
            syn::Type::Reference(_) => self.parse_param_ty(ty),
            syn::Type::Tuple(t) if t.elems.is_empty() => Ok(Ty::Unit),
            syn::Type::Tuple(t) => {
                let elems = t.elems.iter().map(|e| self.parse_ty(e)).collect::<Result<Vec<_>>>()?;
                for (e, written) in elems.iter().zip(&t.elems) {
                    if !e.is_value() {
                        return err(
                            Loc::of(written),
                            format!("a tuple holds values (numbers, vectors, arrays), not `{e}`"),
                        );
                    }
                }
                Ok(Ty::Tuple(elems))
            }
            syn::Type::Ptr(p) => err(
                Loc::of(&p),
                "raw pointers are not supported in kernels; use slices (`&[T]`, `&mut [T]`) and indices",
            ),
            syn::Type::ImplTrait(syn::TypeImplTrait { bounds, .. })
            | syn::Type::TraitObject(syn::TypeTraitObject { bounds, .. })
                if bounds.iter().any(is_fn_trait) =>
            {
                err(
                    Loc::of(&ty),
                    "a closure cannot be passed to a function in kernels: a closure is bound with `let` and called where it is made; call a `#[device] fn` by its name instead, or pass a value that selects what to do",
                )
            }
            syn::Type::ImplTrait(_) | syn::Type::TraitObject(_) => {
                err(Loc::of(&ty), "traits cannot be lowered to PTX; use a concrete type")
            }
            _ => err(
                Loc::of(&ty),
                format!("this type is not supported in kernels; the supported types are {SUPPORTED_TYPES}"),
            ),
        }
    }
}

/// `Fn(..)`, `FnMut(..)` or `FnOnce(..)`: the bound of a closure parameter.
fn is_fn_trait(bound: &syn::TypeParamBound) -> bool {
    matches!(bound, syn::TypeParamBound::Trait(t)
        if t.path.segments.last().is_some_and(|s| matches!(s.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce")))
}

/// Most bytes of a struct kernel parameter: what the launcher's argument
/// holds (as for a tensor map).
const MAX_STRUCT_PARAM: u64 = 128;

/// A `#[device]` struct as a kernel parameter: its fields have a fixed C
/// layout (the `.param` the kernel reads), at most `MAX_STRUCT_PARAM` bytes.
fn struct_param(st: StructTy, loc: Loc) -> Result<Ty> {
    match st.repr_c() {
        Err((field, t)) => err(
            loc,
            format!(
                "`{}` cannot be a kernel parameter: its field `{field}` is `{t}`, whose layout Rust does not fix; a struct parameter's fields are numbers, vectors, descriptors and arrays of them",
                st.name
            ),
        ),
        Ok(layout) if layout.size > MAX_STRUCT_PARAM => err(
            loc,
            format!(
                "`{}` is {} bytes, and a struct kernel parameter is at most {MAX_STRUCT_PARAM}; pass the rest in a slice",
                st.name, layout.size
            ),
        ),
        Ok(_) => Ok(Ty::Struct(st)),
    }
}

/// `Some(true)` for a path to `SharedArray`, `Some(false)` for
/// `SharedSlice`.
fn shared_kind(path: &syn::Path) -> Option<bool> {
    match path.segments.last()?.ident.to_string().as_str() {
        "SharedArray" => Some(true),
        "SharedSlice" => Some(false),
        _ => None,
    }
}

/// Whether `name` is a type the DSL knows (or rejects by name): any other
/// type name in a kernel is a `#[device]` struct to fetch.
pub fn is_builtin_type(name: &str) -> bool {
    Ty::named(name).is_some()
        || matches!(
            name,
            "SharedArray"
                | "SharedSlice"
                | "Self"
                | "Vec"
                | "Box"
                | "String"
                | "Rc"
                | "Arc"
                | "HashMap"
                | "BTreeMap"
                | "VecDeque"
                | "Option"
                | "Result"
                | "isize"
                | "i8"
                | "i16"
                | "u128"
                | "i128"
                | "char"
                | "str"
        )
}
