//! `syn::ItemFn` -> the AST of the supported subset (see `ast`).
//!
//! Everything outside the subset is rejected here, with the span of the
//! offending tokens and a message that says what to write instead.

use super::ast::*;
use super::target::Target;
use super::types::{CacheHint, Len, Scalar, StructTy, Swizzle, Ty};
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;

type Result<T> = syn::Result<T>;

fn err<T>(loc: impl Into<Loc>, msg: impl std::fmt::Display) -> Result<T> {
    Err(loc.into().error(msg))
}

/// What a function is: the kernel, or a device function it calls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FnKind {
    Kernel,
    Device,
}

impl FnKind {
    fn noun(self) -> &'static str {
        match self {
            FnKind::Kernel => "a kernel",
            FnKind::Device => "a device function",
        }
    }
}

/// Parses a kernel function and the device functions and structs it uses,
/// each with the path its user wrote.
pub fn parse_kernel(item: &syn::ItemFn, devices: &[(String, syn::Item)]) -> Result<Kernel> {
    let sig = &item.sig;
    check_signature(sig, FnKind::Kernel)?;
    if let syn::ReturnType::Type(arrow, ty) = &sig.output {
        let is_unit = matches!(&**ty, syn::Type::Tuple(t) if t.elems.is_empty());
        if !is_unit {
            return err(
                Loc {
                    start: arrow.spans[0],
                    end: Loc::of(ty).end,
                },
                "a kernel returns nothing; write its results through a `&mut [T]` parameter",
            );
        }
    }
    let consts = const_params(sig, FnKind::Kernel)?;
    let mut p = Parser {
        next_id: 0,
        consts: consts.iter().map(|c| c.name.clone()).collect(),
        kind: FnKind::Kernel,
        structs: Vec::new(),
        caller: String::new(),
        element_refs: Vec::new(),
    };
    for (key, item) in devices {
        if let syn::Item::Struct(st) = item {
            let ty = p.device_struct(st)?;
            p.structs.push((key.clone(), ty));
        }
    }
    let params = p.params(sig, &consts, FnKind::Kernel)?;
    let body = p.block(&item.block)?;
    let mut parsed = Vec::with_capacity(devices.len());
    for (key, item) in devices {
        if let syn::Item::Fn(f) = item {
            parsed.push(p.device(key, f)?);
        }
    }
    Ok(Kernel {
        name: sig.ident.to_string(),
        name_span: Loc::of(&sig.ident),
        fn_line: sig.fn_token.span.start().line,
        consts,
        params,
        body,
        devices: parsed,
        expr_count: p.next_id,
    })
}

/// What neither a kernel nor a device function can be.
fn check_signature(sig: &syn::Signature, kind: FnKind) -> Result<()> {
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
            format!("`where` clauses are not supported; {what} takes const generics without bounds"),
        );
    }
    Ok(())
}

/// The const generics of a kernel or device function.
fn const_params(sig: &syn::Signature, kind: FnKind) -> Result<Vec<ConstParam>> {
    let what = kind.noun();
    let mut consts = Vec::new();
    for param in &sig.generics.params {
        match param {
            syn::GenericParam::Lifetime(_) => {}
            syn::GenericParam::Type(t) => {
                let msg = if t.bounds.is_empty() {
                    format!(
                        "generic type parameters are not supported in kernels; use a const generic (`const N: u32`) or write {what} per type"
                    )
                } else {
                    format!(
                        "generic type parameters with trait bounds are not supported in kernels; traits cannot be lowered to PTX; use a const generic or write {what} per type"
                    )
                };
                return err(Loc::of(&t), msg);
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

/// Reads `u32`, `half::f16`, `f16` ... as a scalar type.
fn parse_scalar_path(ty: &syn::Type) -> Option<Scalar> {
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

struct Parser {
    next_id: ExprId,
    /// The const generics of the function being parsed.
    consts: Vec<String>,
    kind: FnKind,
    /// The `#[device]` structs, by the path their users wrote.
    structs: Vec<(String, StructTy)>,
    /// The key of the device function being parsed (`""`: the kernel),
    /// which paths in it resolve from.
    caller: String,
    /// The names element loops bind where Rust binds a reference: `v` in
    /// `for v in x.iter()` (a copy: `*v` is `v` here), or in
    /// `for v in x.iter_mut()` (`*v` is `x[i]`, given here).
    element_refs: Vec<ElementRef>,
}

const SUPPORTED_TYPES: &str = "bool, u8, u16, u32, u64, usize, i32, i64, f16, bf16, f32, f64, u32x4, f16x2, bf16x2, Fp4x2, E4m3, E4m3x2, SmemDesc, WgmmaDesc, InstrDesc, [T; N] (and TensorMap parameters)";

impl Parser {
    fn expr_node(&mut self, kind: ExprKind, span: Loc) -> Expr {
        let id = self.next_id;
        self.next_id += 1;
        Expr { id, kind, span }
    }

    /// The parameters of a kernel or device function.
    fn params(&self, sig: &syn::Signature, consts: &[ConstParam], kind: FnKind) -> Result<Vec<Param>> {
        let what = kind.noun();
        let mut params: Vec<Param> = Vec::new();
        for input in &sig.inputs {
            let syn::FnArg::Typed(pt) = input else {
                return err(
                    Loc::of(&input),
                    format!("{what} is a free function; it cannot take `self`"),
                );
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
            let ty = match kind {
                FnKind::Kernel => self.parse_param_ty(&pt.ty)?,
                FnKind::Device => self.device_param_ty(&pt.ty)?,
            };
            if mutable && !ty.is_value() {
                return err(
                    Loc::of(&pt.pat),
                    "only value parameters can be `mut`; slices stay bound to their buffer",
                );
            }
            params.push(Param {
                name,
                ty,
                mutable,
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

    /// A device function's parameter: a slice or a value (scalar, vector,
    /// array).
    fn device_param_ty(&self, ty: &syn::Type) -> Result<Ty> {
        if let syn::Type::Reference(_) = ty {
            return self.parse_param_ty(ty);
        }
        let t = self.parse_ty(ty)?;
        if t.is_value() {
            Ok(t)
        } else {
            err(
                Loc::of(&ty),
                format!("`{t}` cannot be a device function parameter; pass a slice, a number, a vector or an array"),
            )
        }
    }

    /// A `#[device]` struct: named fields of numbers, vectors, arrays or
    /// tuples, no generics.
    fn device_struct(&self, st: &syn::ItemStruct) -> Result<StructTy> {
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
        })
    }

    /// The `#[device]` struct a type path names, if it is one.
    fn find_struct(&self, path: &syn::Path) -> Option<Ty> {
        let key = resolve_device(&self.caller, &path_key(path));
        self.structs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| Ty::Struct(t.clone()))
    }

    /// A `#[device]` function reached through the path `key`.
    fn device(&mut self, key: &str, item: &syn::ItemFn) -> Result<DeviceFn> {
        self.caller = key.to_string();
        let sig = &item.sig;
        check_signature(sig, FnKind::Device)?;
        let consts = const_params(sig, FnKind::Device)?;
        let saved = std::mem::replace(&mut self.consts, consts.iter().map(|c| c.name.clone()).collect());
        self.kind = FnKind::Device;
        let params = self.params(sig, &consts, FnKind::Device)?;
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
        let body = self.block(&item.block)?;
        self.consts = saved;
        self.kind = FnKind::Kernel;
        self.caller.clear();
        Ok(DeviceFn {
            key: key.to_string(),
            name: sig.ident.to_string(),
            name_span: Loc::of(&sig.ident),
            fn_line: sig.fn_token.span.start().line,
            consts,
            params,
            ret,
            body,
        })
    }

    fn parse_param_ty(&self, ty: &syn::Type) -> Result<Ty> {
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
                    Ty::Scalar(_) | Ty::F16x2 | Ty::Fp4x2 | Ty::E4m3 | Ty::E4m3x2 | Ty::U32x4 | Ty::TensorMap => Ok(t),
                    _ => err(
                        Loc::of(&ty),
                        format!("`{t}` cannot be a kernel parameter; pass a slice or a scalar"),
                    ),
                }
            }
        }
    }

    fn parse_len(&self, e: &syn::Expr) -> Result<Len> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i), ..
            }) => Ok(Len::Lit(i.base10_parse()?)),
            syn::Expr::Path(p) if p.qself.is_none() => {
                if let Some(id) = p.path.get_ident() {
                    let name = id.to_string();
                    if self.consts.contains(&name) {
                        return Ok(Len::Param(name));
                    }
                }
                err(
                    Loc::of(&e),
                    "an array length must be an integer literal or a const generic",
                )
            }
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(inner, None) => self.parse_len(inner),
                _ => err(
                    Loc::of(&e),
                    "an array length must be an integer literal or a const generic",
                ),
            },
            _ => err(
                Loc::of(&e),
                "an array length must be an integer literal or a const generic",
            ),
        }
    }

    fn parse_ty(&self, ty: &syn::Type) -> Result<Ty> {
        match ty {
            // A type from a `macro_rules!` argument (`$t`) or in parentheses.
            syn::Type::Group(g) => self.parse_ty(&g.elem),
            syn::Type::Paren(p) => self.parse_ty(&p.elem),
            syn::Type::Path(tp) if tp.qself.is_none() => {
                let Some(last) = tp.path.segments.last() else {
                    return err(Loc::of(&ty), "expected a type");
                };
                let name = last.ident.to_string();
                if let Some(s) = Scalar::from_rust_name(&name) {
                    if !last.arguments.is_none() {
                        return err(Loc::of(&last.arguments), "this type takes no generic arguments");
                    }
                    return Ok(Ty::Scalar(s));
                }
                let simple = match name.as_str() {
                    "u32x4" => Some(Ty::U32x4),
                    "TensorMap" => Some(Ty::TensorMap),
                    "SmemDesc" => Some(Ty::SmemDesc),
                    "WgmmaDesc" => Some(Ty::WgmmaDesc),
                    "InstrDesc" => Some(Ty::InstrDesc),
                    "f16x2" => Some(Ty::F16x2),
                    "bf16x2" => Some(Ty::Bf16x2),
                    "Fp4x2" => Some(Ty::Fp4x2),
                    "E4m3" => Some(Ty::E4m3),
                    "E4m3x2" => Some(Ty::E4m3x2),
                    _ => None,
                };
                if let Some(t) = simple {
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
                    "isize" | "i8" | "i16" | "u128" | "i128" | "char" | "str" => err(
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
            syn::Type::ImplTrait(_) | syn::Type::TraitObject(_) => {
                err(Loc::of(&ty), "traits cannot be lowered to PTX; use a concrete type")
            }
            _ => err(
                Loc::of(&ty),
                format!("this type is not supported in kernels; the supported types are {SUPPORTED_TYPES}"),
            ),
        }
    }

    fn block(&mut self, b: &syn::Block) -> Result<Block> {
        let mut stmts = Vec::new();
        for s in &b.stmts {
            stmts.push(self.stmt(s)?);
        }
        Ok(Block {
            stmts,
            span: Loc {
                start: b.brace_token.span.open(),
                end: b.brace_token.span.close(),
            },
        })
    }

    fn stmt(&mut self, s: &syn::Stmt) -> Result<Stmt> {
        let span = Loc::of(&s);
        let (line, col) = span.line_col();
        let text = statement_text(s);
        let kind = match s {
            syn::Stmt::Local(local) => {
                if let Some(e) = &local.init
                    && let Some((_, diverge)) = &e.diverge
                {
                    return err(Loc::of(&diverge), "`let ... else` is not supported in kernels");
                }
                let (pat, ty) = match &local.pat {
                    syn::Pat::Type(pt) => (&*pt.pat, Some(self.parse_ty(&pt.ty)?)),
                    p => (p, None),
                };
                let pat = let_pattern(pat)?;
                let Some(init) = &local.init else {
                    return err(
                        Loc::of(&local),
                        "a `let` in a kernel needs an initial value, e.g. `let mut x = 0u32;`",
                    );
                };
                let init = self.expr(&init.expr)?;
                StmtKind::Let { pat, ty, init }
            }
            syn::Stmt::Item(syn::Item::Const(c)) => {
                if !c.generics.params.is_empty() {
                    return err(Loc::of(&c.generics), "a local `const` takes no generics");
                }
                let ty = match parse_scalar_path(&c.ty) {
                    Some(s) if s != Scalar::F16 && s != Scalar::Bf16 => s,
                    _ => {
                        return err(
                            Loc::of(&c.ty),
                            "a local `const` must have a primitive number or `bool` type",
                        );
                    }
                };
                StmtKind::Const {
                    name: c.ident.to_string(),
                    ty,
                    init: self.expr(&c.expr)?,
                }
            }
            syn::Stmt::Item(item) => {
                return err(
                    Loc::of(&item),
                    "items (fn, struct, use, static ...) cannot be declared inside a kernel; only local `const` items can; move a function out of the kernel as a `#[device] fn` (a struct as a `#[device]` struct)",
                );
            }
            syn::Stmt::Expr(e, semi) => StmtKind::Expr(self.expr(e)?, semi.is_some()),
            syn::Stmt::Macro(m) => {
                let e = self.macro_expr(&m.mac)?;
                StmtKind::Expr(e, m.semi_token.is_some())
            }
        };
        Ok(Stmt {
            kind,
            span,
            line,
            col,
            text,
        })
    }

    fn macro_expr(&mut self, mac: &syn::Macro) -> Result<Expr> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if name != "ptx" {
            return err(
                Loc::of(&mac.path),
                format!("macro `{name}!` cannot be used in a kernel; the only macro is `ptx!` (inline PTX)"),
            );
        }
        let span = Loc::of(&mac);
        let (ty, template, args) = mac.parse_body_with(|input: syn::parse::ParseStream| {
            let ty: syn::Type = input.parse()?;
            input.parse::<syn::Token![,]>()?;
            let template: syn::LitStr = input.parse()?;
            let mut args = Vec::new();
            while !input.is_empty() {
                input.parse::<syn::Token![,]>()?;
                if input.is_empty() {
                    break;
                }
                args.push(input.parse::<syn::Expr>()?);
            }
            Ok((ty, template, args))
        })?;
        let ret = self.parse_ty(&ty)?;
        if !matches!(ret, Ty::Unit | Ty::Scalar(_) | Ty::F16x2) {
            return err(
                Loc::of(&ty),
                "`ptx!` returns `()`, a scalar or `f16x2`; write several `ptx!` for more results",
            );
        }
        let args = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?;
        Ok(self.expr_node(
            ExprKind::InlinePtx {
                ret,
                template: template.value(),
                args,
            },
            span,
        ))
    }

    fn expr(&mut self, e: &syn::Expr) -> Result<Expr> {
        use syn::Expr as E;
        let span = expr_loc(e);
        let kind = match e {
            E::Lit(l) => self.lit_expr(l)?,
            E::Paren(p) => return self.expr(&p.expr),
            E::Group(g) => return self.expr(&g.expr),
            E::Path(p) => {
                if let Some(ElementRef { place: Some(_), .. }) = self.element_ref(p) {
                    return err(
                        Loc::of(&p),
                        "an element of `iter_mut` is read and written as `*v` (`*v += 1`, `(*v).abs()`)",
                    );
                }
                self.path_expr(p)?
            }
            E::Unary(u) => {
                if let (syn::UnOp::Deref(_), E::Path(p)) = (&u.op, &*u.expr)
                    && let Some(r) = self.element_ref(p)
                {
                    return match r.place.clone() {
                        Some(place) => self.expr(&place),
                        None => self.expr(&u.expr),
                    };
                }
                let op = match u.op {
                    syn::UnOp::Neg(_) => UnOp::Neg,
                    syn::UnOp::Not(_) => UnOp::Not,
                    _ => {
                        return err(
                            Loc::of(&u.op),
                            "dereferencing is not supported in kernels; index slices with `a[i]`",
                        );
                    }
                };
                ExprKind::Unary(op, Box::new(self.expr(&u.expr)?))
            }
            E::Binary(b) => {
                let (op, assign) = bin_op(&b.op)?;
                if assign {
                    self.reject_element_write(&b.left)?;
                }
                let l = Box::new(self.expr(&b.left)?);
                let r = Box::new(self.expr(&b.right)?);
                if assign {
                    ExprKind::AssignOp(op, l, r)
                } else {
                    ExprKind::Binary(op, l, r)
                }
            }
            E::Assign(a) => {
                self.reject_element_write(&a.left)?;
                ExprKind::Assign(Box::new(self.expr(&a.left)?), Box::new(self.expr(&a.right)?))
            }
            E::Cast(c) => ExprKind::Cast(Box::new(self.expr(&c.expr)?), self.parse_ty(&c.ty)?),
            E::Index(i) => {
                if matches!(&*i.index, E::Range(_)) {
                    return err(
                        Loc::of(&i.index),
                        "slicing is written `&a[start..]` (a view from `start` to the end)",
                    );
                }
                ExprKind::Index(Box::new(self.expr(&i.expr)?), Box::new(self.expr(&i.index)?))
            }
            E::Reference(r) => {
                let slice = match &*r.expr {
                    E::Index(i) => match &*i.index {
                        E::Range(range)
                            if range.end.is_none() && matches!(range.limits, syn::RangeLimits::HalfOpen(_)) =>
                        {
                            range.start.as_ref().map(|s| (&*i.expr, &**s))
                        }
                        _ => None,
                    },
                    _ => None,
                };
                if slice.is_none() && r.mutability.is_some() && matches!(&*r.expr, E::Path(_)) {
                    ExprKind::RefMut(Box::new(self.expr(&r.expr)?))
                } else {
                    let Some((base, start)) = slice else {
                        return err(
                            Loc::of(&r),
                            "references are only supported as sub-slices `&a[start..]` or `&mut a[start..]`, and as `&mut acc` for the accumulator of a `wgmma_*` intrinsic",
                        );
                    };
                    ExprKind::SliceFrom {
                        base: Box::new(self.expr(base)?),
                        start: Box::new(self.expr(start)?),
                        mutable: r.mutability.is_some(),
                    }
                }
            }
            E::Field(f) => match &f.member {
                syn::Member::Named(n) => ExprKind::Field(Box::new(self.expr(&f.base)?), n.to_string()),
                syn::Member::Unnamed(i) => ExprKind::TupleField(Box::new(self.expr(&f.base)?), i.index as usize),
            },
            E::Call(c) => self.call(c)?,
            E::MethodCall(m) => {
                if let Some(t) = &m.turbofish {
                    return err(Loc::of(&t), "method calls take no generic arguments in kernels");
                }
                if m.method == "step_by" {
                    return err(
                        Loc::of(&m),
                        "`step_by` is only supported directly in a `for` loop: `for i in (a..b).step_by(s)`",
                    );
                }
                ExprKind::MethodCall {
                    receiver: Box::new(self.expr(&m.receiver)?),
                    method: m.method.to_string(),
                    args: m.args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?,
                }
            }
            E::If(i) => {
                if let E::Let(l) = &*i.cond {
                    return err(
                        Loc::of(&l),
                        "`if let` is not supported in kernels; there are no enums to match; use `if` with a condition",
                    );
                }
                let els = match &i.else_branch {
                    None => None,
                    Some((_, e)) => Some(Box::new(self.expr(e)?)),
                };
                ExprKind::If {
                    cond: Box::new(self.expr(&i.cond)?),
                    then: self.block(&i.then_branch)?,
                    els,
                }
            }
            E::While(w) => {
                reject_attrs(&w.attrs)?;
                if let E::Let(l) = &*w.cond {
                    return err(
                        Loc::of(&l),
                        "`while let` is not supported in kernels; use `while` with a condition",
                    );
                }
                ExprKind::While {
                    cond: Box::new(self.expr(&w.cond)?),
                    body: self.block(&w.body)?,
                    label: label_name(&w.label),
                }
            }
            E::Loop(l) => {
                reject_attrs(&l.attrs)?;
                ExprKind::Loop(self.block(&l.body)?, label_name(&l.label))
            }
            E::ForLoop(f) => match element_loop(f)? {
                Some((indexed, element_ref)) => {
                    let refs = self.element_refs.len();
                    self.element_refs.extend(element_ref);
                    let parsed = self.for_loop(&indexed);
                    self.element_refs.truncate(refs);
                    ExprKind::For(parsed?)
                }
                None => ExprKind::For(self.for_loop(f)?),
            },
            E::Break(b) => {
                if let Some(v) = &b.expr {
                    return err(
                        Loc::of(&v),
                        "`break` with a value is not supported; assign to a variable before `break`",
                    );
                }
                ExprKind::Break(b.label.as_ref().map(|l| format!("'{}", l.ident)))
            }
            E::Continue(c) => ExprKind::Continue(c.label.as_ref().map(|l| format!("'{}", l.ident))),
            E::Return(r) => match &r.expr {
                Some(v) if self.kind == FnKind::Kernel => {
                    return err(
                        Loc::of(&v),
                        "a kernel returns nothing; write `return;` and store results through a `&mut [T]` parameter",
                    );
                }
                Some(v) => ExprKind::Return(Some(Box::new(self.expr(v)?))),
                None => ExprKind::Return(None),
            },
            E::Block(b) => {
                if let Some(l) = &b.label {
                    return err(Loc::of(&l), "labeled blocks are not supported in kernels");
                }
                reject_attrs(&b.attrs)?;
                ExprKind::Block(self.block(&b.block)?)
            }
            E::Array(a) => ExprKind::Array(a.elems.iter().map(|x| self.expr(x)).collect::<Result<Vec<_>>>()?),
            E::Repeat(r) => ExprKind::Repeat(Box::new(self.expr(&r.expr)?), self.parse_len(&r.len)?),
            E::Macro(m) => return self.macro_expr(&m.mac),
            E::Match(m) => {
                let scrutinee = Box::new(self.expr(&m.expr)?);
                let mut arms = Vec::with_capacity(m.arms.len());
                for arm in &m.arms {
                    reject_attrs(&arm.attrs)?;
                    arms.push(Arm {
                        pat: self.pattern(&arm.pat)?,
                        guard: match &arm.guard {
                            Some((_, g)) => Some(self.expr(g)?),
                            None => None,
                        },
                        body: self.expr(&arm.body)?,
                    });
                }
                ExprKind::Match { scrutinee, arms }
            }
            E::Closure(c) => {
                return err(
                    Loc::of(&c),
                    "closures are not supported in kernels; write the code inline",
                );
            }
            E::Async(a) => return err(Loc::of(&a), "`async` blocks are not supported in kernels"),
            E::Await(a) => return err(Loc::of(&a), "`.await` is not supported in kernels"),
            E::Try(t) => {
                return err(
                    Loc::of(&t.question_token),
                    "the `?` operator is not supported in kernels; there are no `Result`s on the device",
                );
            }
            E::TryBlock(t) => return err(Loc::of(&t), "`try` blocks are not supported in kernels"),
            E::Yield(y) => return err(Loc::of(&y), "`yield` is not supported in kernels"),
            E::Unsafe(u) => {
                return err(
                    Loc::of(&u.unsafe_token),
                    "`unsafe` blocks are not needed in kernels (every access is already device code); remove `unsafe`",
                );
            }
            E::Struct(lit) => {
                let Some(Ty::Struct(ty)) = self.find_struct(&lit.path) else {
                    return err(
                        Loc::of(&lit.path),
                        "kernels build the structs marked `#[device]` only; mark the struct `#[device]`, or build vectors with their constructor, e.g. `u32x4::new(a, b, c, d)`",
                    );
                };
                if let Some(rest) = &lit.rest {
                    return err(Loc::of(rest), "`..base` is not supported in kernels; give every field");
                }
                let mut fields = Vec::with_capacity(lit.fields.len());
                for f in &lit.fields {
                    let syn::Member::Named(name) = &f.member else {
                        return err(Loc::of(&f.member), "name the field");
                    };
                    fields.push((name.to_string(), self.expr(&f.expr)?, Loc::of(f)));
                }
                ExprKind::StructLit { ty, fields }
            }
            E::Tuple(t) => {
                if t.elems.is_empty() {
                    return err(Loc::of(&t), "`()` has no value in a kernel; leave it out");
                }
                ExprKind::Tuple(t.elems.iter().map(|x| self.expr(x)).collect::<Result<Vec<_>>>()?)
            }
            E::Range(r) => {
                return err(
                    Loc::of(&r),
                    "ranges are only supported in `for` loops (`for i in a..b`) and sub-slices (`&a[i..]`)",
                );
            }
            E::Let(l) => {
                return err(Loc::of(&l), "`let` expressions are not supported in kernels");
            }
            E::Const(c) => return err(Loc::of(&c), "`const` blocks are not supported in kernels"),
            E::Infer(i) => return err(Loc::of(&i), "`_` is not an expression"),
            _ => {
                return err(span, "this expression is not supported in kernels");
            }
        };
        Ok(self.expr_node(kind, span))
    }

    /// A `match` arm's pattern on an integer or a `bool`.
    fn pattern(&mut self, p: &syn::Pat) -> Result<Pat> {
        let bound = |parser: &mut Parser, e: &syn::Expr| -> Result<Box<Expr>> { Ok(Box::new(parser.expr(e)?)) };
        match p {
            syn::Pat::Wild(_) => Ok(Pat::Wild),
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                Ok(Pat::Ident(pi.ident.to_string(), Loc::of(&pi.ident)))
            }
            syn::Pat::Lit(l) => Ok(Pat::Lit(self.expr(&syn::Expr::Lit(l.clone()))?)),
            syn::Pat::Path(path) => Ok(Pat::Lit(self.expr(&syn::Expr::Path(path.clone()))?)),
            syn::Pat::Range(r) => Ok(Pat::Range {
                lo: r.start.as_deref().map(|e| bound(self, e)).transpose()?,
                hi: r.end.as_deref().map(|e| bound(self, e)).transpose()?,
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
            }),
            syn::Pat::Or(o) => Ok(Pat::Or(o.cases.iter().map(|c| self.pattern(c)).collect::<Result<_>>()?)),
            syn::Pat::Paren(p) => self.pattern(&p.pat),
            // A negative literal pattern (`-1`) is an expression pattern.
            syn::Pat::Verbatim(_) | syn::Pat::Const(_) => err(Loc::of(p), "write the pattern as a literal or a range"),
            other => err(
                Loc::of(&other),
                "`match` in kernels takes integer and `bool` patterns: literals, constants, ranges (`a..=b`), `|`, `_` and a name; other patterns are not supported",
            ),
        }
    }

    /// A literal; in patterns syn reads `-1` as one literal with the
    /// digits "-1", which is the negation of `1` here.
    fn lit_expr(&mut self, l: &syn::ExprLit) -> Result<ExprKind> {
        let span = Loc::of(l);
        let negated = match &l.lit {
            syn::Lit::Int(i) => match i.base10_digits().strip_prefix('-') {
                Some(d) => {
                    let suffix = match i.suffix() {
                        "" => None,
                        x => Some(self.suffix(x, span, true)?),
                    };
                    let v: u128 = d.parse().map_err(|_| span.error("invalid integer literal"))?;
                    Some(Lit::Int(v, suffix))
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
                let v: u128 = i.base10_parse()?;
                Ok(Lit::Int(v, suffix))
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

    fn path_expr(&mut self, p: &syn::ExprPath) -> Result<ExprKind> {
        if p.qself.is_some() {
            return err(Loc::of(&p), "qualified paths are not supported in kernels");
        }
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if p.path.segments.iter().any(|s| !s.arguments.is_none()) {
            return err(Loc::of(&p), "generic arguments are not supported here");
        }
        match segs.as_slice() {
            [name] => Ok(ExprKind::Var(name.clone())),
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
                None => err(
                    Loc::of(&p),
                    format!(
                        "`{ty}::{item}` is not available in kernels; kernels see their parameters, const generics, locals and the intrinsics"
                    ),
                ),
            },
            [] => err(Loc::of(&p), "expected a name"),
        }
    }

    /// `u32::MAX`, `i32::MIN`, `f32::INFINITY`, `f16::MAX`, ... as the
    /// expression that has their value: a literal, a negated literal, or
    /// `f16::from_bits(..)` of the half types' bits.
    fn named_constant(&mut self, ty: &str, item: &str, span: Loc) -> Option<ExprKind> {
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

    fn call(&mut self, c: &syn::ExprCall) -> Result<ExprKind> {
        let syn::Expr::Path(fp) = &*c.func else {
            return err(
                Loc::of(&c.func),
                "only named functions can be called in kernels (intrinsics such as `thread_idx_x()`)",
            );
        };
        if fp.qself.is_some() {
            return err(Loc::of(&fp), "qualified paths are not supported in kernels");
        }
        let segs: Vec<&syn::PathSegment> = fp.path.segments.iter().collect();
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
        Ok(ExprKind::Call {
            path: CallPath {
                qualifier,
                name: last.ident.to_string(),
                full: path_key(&fp.path),
            },
            generics,
            args,
        })
    }

    fn generic_arg(&mut self, arg: &syn::GenericArgument) -> Result<GenericArg> {
        match arg {
            syn::GenericArgument::Type(syn::Type::Path(tp))
                if tp
                    .path
                    .get_ident()
                    .is_some_and(|i| self.consts.contains(&i.to_string())) =>
            {
                let name = tp.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                Ok(GenericArg::Len(Len::Param(name), Loc::of(&tp)))
            }
            syn::GenericArgument::Type(t) => Ok(GenericArg::Type(self.parse_ty(t)?, Loc::of(&t))),
            syn::GenericArgument::Const(e) => match self.parse_len(e) {
                Ok(len) => Ok(GenericArg::Len(len, Loc::of(&e))),
                Err(_) => Ok(GenericArg::Expr(Box::new(self.expr(e)?), Loc::of(&e))),
            },
            other => err(Loc::of(&other), "unsupported generic argument"),
        }
    }

    /// The element reference a path names, if it is one (the innermost).
    fn element_ref(&self, p: &syn::ExprPath) -> Option<&ElementRef> {
        let ident = p.path.get_ident()?;
        self.element_refs.iter().rev().find(|r| *ident == r.name)
    }

    /// `x.iter()` binds a copy of the element: writing through `*v` would
    /// not reach the slice, so it is an error (`iter_mut` writes).
    fn reject_element_write(&self, target: &syn::Expr) -> Result<()> {
        if let syn::Expr::Unary(u) = target
            && let (syn::UnOp::Deref(_), syn::Expr::Path(p)) = (&u.op, &*u.expr)
            && let Some(ElementRef { place: None, .. }) = self.element_ref(p)
        {
            return err(
                Loc::of(&u),
                "`iter()` reads the elements; write to them with `x.iter_mut()` or by index: `x[i] = ..`",
            );
        }
        Ok(())
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<ForLoop> {
        let mut unroll = false;
        for a in &f.attrs {
            if a.path().is_ident("unroll") {
                if !matches!(a.meta, syn::Meta::Path(_)) {
                    return err(Loc::of(&a), "`#[unroll]` takes no arguments");
                }
                unroll = true;
            } else {
                return err(Loc::of(&a), "the only attribute a loop can take is `#[unroll]`");
            }
        }
        let var = match &*f.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                pi.ident.to_string()
            }
            syn::Pat::Wild(_) => "_".to_string(),
            other => {
                return err(Loc::of(&other), "a `for` loop binds one plain name (`for i in 0..n`)");
            }
        };
        // `a..b`, `(a..b).step_by(s)`, `(a..b).rev()`, `(a..b).rev().step_by(s)`.
        let (counted, step) = match unparen(&f.expr) {
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (unparen(&m.receiver), Some(&m.args[0]))
            }
            other => (other, None),
        };
        let (ranged, rev) = match counted {
            syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
                let inner = unparen(&m.receiver);
                if let syn::Expr::MethodCall(s) = inner
                    && s.method == "step_by"
                {
                    return err(
                        Loc::of(&m),
                        "`.step_by(s).rev()` is not supported; `(a..b).rev().step_by(s)` counts down from `b - 1` by `s`",
                    );
                }
                (inner, true)
            }
            other => (other, false),
        };
        let range = match ranged {
            syn::Expr::Range(r) => r,
            _ if step.is_some() || rev => {
                return err(
                    Loc::of(&ranged),
                    "`step_by` and `rev` must be called on a range: `(a..b).step_by(s)`, `(a..b).rev()`",
                );
            }
            other => {
                return err(
                    Loc::of(&other),
                    "a `for` loop iterates over a range (`a..b`, `a..=b`, `(a..b).step_by(s)`, `(a..b).rev()`, `(a..b).rev().step_by(s)`) or over the elements of a slice or local array (`x.iter()`, `x.iter_mut()`, `.enumerate()` and `.rev()` after them, `x`); other iterators are not supported",
                );
            }
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return err(Loc::of(&range), "a `for` range needs both bounds: `a..b` or `a..=b`");
        };
        Ok(ForLoop {
            var,
            start: Box::new(self.expr(start)?),
            end: Box::new(self.expr(end)?),
            inclusive: matches!(range.limits, syn::RangeLimits::Closed(_)),
            step: match step {
                Some(s) => Some(Box::new(self.expr(s)?)),
                None => None,
            },
            body: self.block(&f.body)?,
            unroll,
            label: label_name(&f.label),
            rev,
        })
    }
}

/// Where an expression is: its first and last tokens, found from the
/// syntax (printing the expression to tokens, as `Loc::of` does, costs
/// time proportional to its size at every level of nesting).
fn expr_loc(e: &syn::Expr) -> Loc {
    Loc {
        start: first_span(e),
        end: last_span(e),
    }
}

fn first_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    let attrs = match e {
        E::ForLoop(f) => &f.attrs,
        E::While(w) => &w.attrs,
        E::Loop(l) => &l.attrs,
        E::Block(b) => &b.attrs,
        _ => &Vec::new(),
    };
    if let Some(a) = attrs.first() {
        return a.pound_token.span;
    }
    match e {
        E::Binary(b) => first_span(&b.left),
        E::Assign(a) => first_span(&a.left),
        E::Cast(c) => first_span(&c.expr),
        E::Index(i) => first_span(&i.expr),
        E::MethodCall(m) => first_span(&m.receiver),
        E::Field(f) => first_span(&f.base),
        E::Call(c) => first_span(&c.func),
        E::Try(t) => first_span(&t.expr),
        E::Await(a) => first_span(&a.base),
        E::Unary(u) => match u.op {
            syn::UnOp::Deref(t) => t.span,
            syn::UnOp::Not(t) => t.span,
            syn::UnOp::Neg(t) => t.span,
            _ => Loc::of(e).start,
        },
        E::Paren(p) => p.paren_token.span.open(),
        E::Tuple(t) => t.paren_token.span.open(),
        E::Array(a) => a.bracket_token.span.open(),
        E::Repeat(r) => r.bracket_token.span.open(),
        E::Lit(l) => l.lit.span(),
        E::Path(p) if p.qself.is_none() => match &p.path.leading_colon {
            Some(c) => c.spans[0],
            None => p
                .path
                .segments
                .first()
                .map_or_else(|| Loc::of(e).start, |s| s.ident.span()),
        },
        E::If(i) => i.if_token.span,
        E::While(w) => w.label.as_ref().map_or(w.while_token.span, |l| l.name.apostrophe),
        E::ForLoop(f) => f.label.as_ref().map_or(f.for_token.span, |l| l.name.apostrophe),
        E::Loop(l) => l.label.as_ref().map_or(l.loop_token.span, |x| x.name.apostrophe),
        E::Block(b) => b
            .label
            .as_ref()
            .map_or(b.block.brace_token.span.open(), |l| l.name.apostrophe),
        E::Match(m) => m.match_token.span,
        E::Return(r) => r.return_token.span,
        E::Break(b) => b.break_token.span,
        E::Continue(c) => c.continue_token.span,
        E::Reference(r) => r.and_token.span,
        E::Struct(s) if s.qself.is_none() => s
            .path
            .segments
            .first()
            .map_or_else(|| Loc::of(e).start, |x| x.ident.span()),
        E::Macro(m) => m
            .mac
            .path
            .segments
            .first()
            .map_or_else(|| Loc::of(e).start, |x| x.ident.span()),
        _ => Loc::of(e).start,
    }
}

fn last_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) => last_span(&b.right),
        E::Assign(a) => last_span(&a.right),
        E::Cast(c) => Loc::of(&c.ty).end,
        E::Index(i) => i.bracket_token.span.close(),
        E::MethodCall(m) => m.paren_token.span.close(),
        E::Field(f) => match &f.member {
            syn::Member::Named(n) => n.span(),
            syn::Member::Unnamed(i) => i.span,
        },
        E::Call(c) => c.paren_token.span.close(),
        E::Unary(u) => last_span(&u.expr),
        E::Paren(p) => p.paren_token.span.close(),
        E::Tuple(t) => t.paren_token.span.close(),
        E::Array(a) => a.bracket_token.span.close(),
        E::Repeat(r) => r.bracket_token.span.close(),
        E::Lit(l) => l.lit.span(),
        E::Path(p) if p.qself.is_none() => match p.path.segments.last() {
            Some(s) => match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => a.gt_token.span,
                syn::PathArguments::Parenthesized(_) => Loc::of(e).end,
                syn::PathArguments::None => s.ident.span(),
            },
            None => Loc::of(e).end,
        },
        E::If(i) => match &i.else_branch {
            Some((_, els)) => last_span(els),
            None => i.then_branch.brace_token.span.close(),
        },
        E::While(w) => w.body.brace_token.span.close(),
        E::ForLoop(f) => f.body.brace_token.span.close(),
        E::Loop(l) => l.body.brace_token.span.close(),
        E::Block(b) => b.block.brace_token.span.close(),
        E::Match(m) => m.brace_token.span.close(),
        E::Return(r) => r.expr.as_deref().map_or(r.return_token.span, last_span),
        E::Break(b) => match (&b.expr, &b.label) {
            (Some(x), _) => last_span(x),
            (None, Some(l)) => l.ident.span(),
            (None, None) => b.break_token.span,
        },
        E::Continue(c) => c.label.as_ref().map_or(c.continue_token.span, |l| l.ident.span()),
        E::Reference(r) => last_span(&r.expr),
        E::Struct(s) => s.brace_token.span.close(),
        E::Macro(m) => m.mac.delimiter.span().close(),
        _ => Loc::of(e).end,
    }
}

/// A `let` pattern: a name, `_`, or a tuple of patterns.
fn let_pattern(p: &syn::Pat) -> Result<LetPat> {
    match p {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Ok(LetPat::Name {
            name: pi.ident.to_string(),
            span: Loc::of(&pi.ident),
            mutable: pi.mutability.is_some(),
        }),
        syn::Pat::Wild(_) => Ok(LetPat::Wild),
        syn::Pat::Tuple(t) => Ok(LetPat::Tuple(
            t.elems.iter().map(let_pattern).collect::<Result<Vec<_>>>()?,
            Loc::of(t),
        )),
        syn::Pat::Paren(p) => let_pattern(&p.pat),
        other => err(
            Loc::of(&other),
            "a `let` in a kernel binds a name, `_` or a tuple of them (`let (a, mut b) = ..`); other patterns are not supported",
        ),
    }
}

/// Whether `name` is a type the DSL knows (or rejects by name): any other
/// type name in a kernel is a `#[device]` struct to fetch.
pub fn is_builtin_type(name: &str) -> bool {
    Scalar::from_rust_name(name).is_some()
        || matches!(
            name,
            "u32x4"
                | "TensorMap"
                | "SmemDesc"
                | "WgmmaDesc"
                | "InstrDesc"
                | "f16x2"
                | "bf16x2"
                | "Fp4x2"
                | "E4m3"
                | "E4m3x2"
                | "SharedArray"
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

/// `for v in x.iter()`, `for v in x` or `&x`, `for (i, v) in
/// x.iter().enumerate()` (also `&v` for `v`, `_` for either; `iter_mut()`
/// for `iter()`; `.rev()` after `iter()` or `enumerate()`) over a slice: the
/// same loop over `0..x.len()` (reversed) that starts with `let v = x[i];`
/// (through `iter_mut`, `*v` stands for `x[i]` instead). Also the name
/// bound to a reference in Rust (`v` without `&`), and what its `*v` is
/// here. `None` for any other loop.
fn element_loop(f: &syn::ExprForLoop) -> Result<Option<(syn::ExprForLoop, Option<ElementRef>)>> {
    use syn::Expr as E;
    let unparen = |e: &syn::Expr| self::unparen(e).clone();
    // `.rev()` last: the same elements (and indices) from the end.
    let (iterated, rev) = match unparen(&f.expr) {
        E::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
            let inner = unparen(&m.receiver);
            match &inner {
                E::MethodCall(it) if it.method == "iter" || it.method == "iter_mut" || it.method == "enumerate" => {
                    (inner, true)
                }
                _ => return Ok(None),
            }
        }
        other => (other, false),
    };
    let iterates = |e: &syn::ExprMethodCall| e.args.is_empty() && (e.method == "iter" || e.method == "iter_mut");
    let (over, enumerate, mutable) = match iterated {
        E::MethodCall(m) if m.method == "enumerate" && m.args.is_empty() => match unparen(&m.receiver) {
            E::MethodCall(it) if iterates(&it) => (*it.receiver, true, it.method == "iter_mut"),
            _ => return Ok(None),
        },
        E::MethodCall(m) if iterates(&m) => (*m.receiver.clone(), false, m.method == "iter_mut"),
        E::Reference(r) if r.mutability.is_none() && !rev => (*r.expr, false, false),
        p @ E::Path(_) if !rev => (p, false, false),
        _ => return Ok(None),
    };
    let (index, element) = if enumerate {
        match &*f.pat {
            syn::Pat::Tuple(t) if t.elems.len() == 2 => (Some(&t.elems[0]), &t.elems[1]),
            other => {
                return err(
                    Loc::of(other),
                    "`.enumerate()` gives (index, element) pairs: `for (i, v) in x.iter().enumerate()`",
                );
            }
        }
    } else {
        (None, &*f.pat)
    };
    let index = match index {
        Some(syn::Pat::Ident(pi)) => pi.ident.clone(),
        _ => syn::Ident::new("__nvfp4_element_index", Span::call_site()),
    };
    let span = syn::spanned::Spanned::span(&f.expr);
    let (element, element_ref) = match element {
        syn::Pat::Reference(r) if r.mutability.is_none() && !mutable => ((*r.pat).clone(), None),
        syn::Pat::Ident(pi) if pi.mutability.is_none() || !mutable => {
            let place = mutable.then(|| syn::parse_quote_spanned!(span=> #over[#index]));
            let name = pi.ident.to_string();
            (element.clone(), Some(ElementRef { name, place }))
        }
        syn::Pat::Wild(_) => (element.clone(), None),
        other if mutable => {
            return err(
                Loc::of(other),
                "an element of `iter_mut` binds one name, read and written as `*v`: `for v in x.iter_mut()`",
            );
        }
        other => (other.clone(), None),
    };
    let (attrs, label, stmts) = (&f.attrs, &f.label, &f.body.stmts);
    // Through `iter_mut`, `*v` is the element itself: nothing is copied.
    let binding = if mutable {
        quote::quote!()
    } else {
        quote::quote_spanned!(span=> let #element = #over[#index];)
    };
    let indices = if rev {
        quote::quote_spanned!(span=> (0usize..#over.len()).rev())
    } else {
        quote::quote_spanned!(span=> 0usize..#over.len())
    };
    let indexed: syn::ExprForLoop = syn::parse_quote_spanned! {span=>
        #(#attrs)* #label for #index in #indices {
            #binding
            #(#stmts)*
        }
    };
    Ok(Some((indexed, element_ref)))
}

/// `e` without the parentheses around it.
fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => &p.expr,
        other => other,
    }
}

/// A name an element loop binds where Rust binds a reference.
#[derive(Clone)]
struct ElementRef {
    name: String,
    /// Through `iter_mut`: the element (`x[i]`) that `*name` stands for.
    /// `None` through `iter()`: `name` holds a copy.
    place: Option<syn::Expr>,
}

/// A loop's label (`'outer`, quote included).
fn label_name(label: &Option<syn::Label>) -> Option<String> {
    label.as_ref().map(|l| format!("'{}", l.name.ident))
}

fn reject_attrs(attrs: &[syn::Attribute]) -> Result<()> {
    match attrs.first() {
        Some(a) if a.path().is_ident("unroll") => err(
            Loc::of(&a),
            "`#[unroll]` applies to `for` loops over constant ranges only",
        ),
        Some(a) => err(Loc::of(&a), "attributes are not supported here"),
        None => Ok(()),
    }
}

fn bin_op(op: &syn::BinOp) -> Result<(BinOp, bool)> {
    use syn::BinOp as B;
    Ok(match op {
        B::Add(_) => (BinOp::Add, false),
        B::Sub(_) => (BinOp::Sub, false),
        B::Mul(_) => (BinOp::Mul, false),
        B::Div(_) => (BinOp::Div, false),
        B::Rem(_) => (BinOp::Rem, false),
        B::And(_) => (BinOp::And, false),
        B::Or(_) => (BinOp::Or, false),
        B::BitXor(_) => (BinOp::BitXor, false),
        B::BitAnd(_) => (BinOp::BitAnd, false),
        B::BitOr(_) => (BinOp::BitOr, false),
        B::Shl(_) => (BinOp::Shl, false),
        B::Shr(_) => (BinOp::Shr, false),
        B::Eq(_) => (BinOp::Eq, false),
        B::Lt(_) => (BinOp::Lt, false),
        B::Le(_) => (BinOp::Le, false),
        B::Ne(_) => (BinOp::Ne, false),
        B::Ge(_) => (BinOp::Ge, false),
        B::Gt(_) => (BinOp::Gt, false),
        B::AddAssign(_) => (BinOp::Add, true),
        B::SubAssign(_) => (BinOp::Sub, true),
        B::MulAssign(_) => (BinOp::Mul, true),
        B::DivAssign(_) => (BinOp::Div, true),
        B::RemAssign(_) => (BinOp::Rem, true),
        B::BitXorAssign(_) => (BinOp::BitXor, true),
        B::BitAndAssign(_) => (BinOp::BitAnd, true),
        B::BitOrAssign(_) => (BinOp::BitOr, true),
        B::ShlAssign(_) => (BinOp::Shl, true),
        B::ShrAssign(_) => (BinOp::Shr, true),
        other => return err(Loc::of(&other), "this operator is not supported in kernels"),
    })
}

/// The `f32::consts`/`f64::consts` a kernel can name, as f64 values (each
/// rounds to the same f32 as Rust's own constant).
const MATH_CONSTANTS: [(&str, f64); 18] = {
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
fn math_constant(ty: &str, item: &str) -> Option<Lit> {
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

/// One line of source text for a statement, for the comment placed before
/// its PTX. Blocks are elided so a loop's comment is its header.
fn statement_text(s: &syn::Stmt) -> String {
    let mut out = String::new();
    print_tokens(s.to_token_stream(), &mut out);
    const MAX: usize = 100;
    if out.chars().count() > MAX {
        let cut: String = out.chars().take(MAX - 3).collect();
        format!("{}...", cut.trim_end())
    } else {
        out
    }
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "in" | "if" | "while" | "for" | "return" | "let" | "mut" | "as" | "else" | "loop" | "break" | "match"
    )
}

enum Atom {
    Word(String),
    Op(String),
    Group(proc_macro2::Group),
}

fn print_tokens(ts: TokenStream, out: &mut String) {
    // Glue joint punctuation into operators (`+=`, `::`, `..`) first.
    let mut atoms = Vec::new();
    let mut op = String::new();
    for tt in ts {
        match tt {
            TokenTree::Punct(p) => {
                op.push(p.as_char());
                if p.spacing() == proc_macro2::Spacing::Alone {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
            }
            TokenTree::Group(g) => {
                if !op.is_empty() {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
                atoms.push(Atom::Group(g));
            }
            other => {
                if !op.is_empty() {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
                atoms.push(Atom::Word(other.to_string()));
            }
        }
    }
    if !op.is_empty() {
        atoms.push(Atom::Op(op));
    }
    // An operator is unary when nothing that ends an operand precedes it.
    let unary = |i: usize| i == 0 || matches!(atoms[i - 1], Atom::Op(_));
    // Inside a turbofish `::<..>` the angle brackets are brackets.
    let mut generic_depth = 0usize;
    let is_op = |a: &Atom, s: &str| matches!(a, Atom::Op(o) if o == s);
    for (i, atom) in atoms.iter().enumerate() {
        let next_is_group = matches!(atoms.get(i + 1), Some(Atom::Group(_)));
        let opens_generic = is_op(atom, "<") && i > 0 && is_op(&atoms[i - 1], "::");
        let closes_generic = generic_depth > 0 && is_op(atom, ">");
        let after_open = i > 0 && is_op(&atoms[i - 1], "<") && generic_depth > 0;
        let after_close = i > 0 && is_op(&atoms[i - 1], ">") && matches!(atom, Atom::Group(_) | Atom::Op(_));
        let space = if i == 0
            || opens_generic
            || closes_generic
            || after_open
            || (after_close && generic_depth == 0 && !matches!(atom, Atom::Word(_)))
        {
            false
        } else {
            match (&atoms[i - 1], atom) {
                (Atom::Op(p), _) if matches!(p.as_str(), "::" | "." | ".." | "..=" | "#") => false,
                (Atom::Op(p), _) if p == "!" && (unary(i - 1) || next_is_group || matches!(atom, Atom::Group(_))) => {
                    false
                }
                (Atom::Op(p), _) if matches!(p.as_str(), "&" | "-" | "*") && unary(i - 1) => false,
                (_, Atom::Op(o)) if matches!(o.as_str(), "::" | "." | "," | ";" | ":" | "?" | ".." | "..=") => false,
                (Atom::Word(_), Atom::Op(o)) if o == "!" && next_is_group => false,
                (Atom::Word(w), Atom::Group(g)) if !is_keyword(w) => {
                    !matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::Bracket)
                }
                (Atom::Group(_), Atom::Group(g)) => {
                    !matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::Bracket)
                }
                _ => true,
            }
        };
        if opens_generic {
            generic_depth += 1;
        } else if closes_generic {
            generic_depth -= 1;
        }
        if space {
            out.push(' ');
        }
        match atom {
            Atom::Word(w) | Atom::Op(w) => out.push_str(w),
            Atom::Group(g) => match g.delimiter() {
                Delimiter::Brace => out.push_str("{ ... }"),
                Delimiter::Parenthesis => {
                    out.push('(');
                    print_tokens(g.stream(), out);
                    out.push(')');
                }
                Delimiter::Bracket => {
                    out.push('[');
                    print_tokens(g.stream(), out);
                    out.push(']');
                }
                Delimiter::None => print_tokens(g.stream(), out),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<Kernel> {
        parse_kernel(&syn::parse_str(src).expect("valid Rust"), &[])
    }

    fn error(src: &str) -> String {
        parse(src).expect_err("expected a parse error").to_string()
    }

    #[test]
    fn reads_signature_consts_and_params() {
        let k = parse("fn k<const N: u32, const B: bool>(a: &[f32], b: &mut [u8], mut n: u32) {}").unwrap();
        assert_eq!(k.name, "k");
        assert_eq!(
            k.consts.iter().map(|c| (c.name.as_str(), c.ty)).collect::<Vec<_>>(),
            [("N", Scalar::U32), ("B", Scalar::Bool)]
        );
        assert_eq!(k.params.len(), 3);
        assert_eq!(
            k.params[0].ty,
            Ty::Slice {
                elem: Box::new(Ty::Scalar(Scalar::F32)),
                mutable: false
            }
        );
        assert!(matches!(&k.params[1].ty, Ty::Slice { mutable: true, .. }));
        assert!(k.params[2].mutable);
    }

    #[test]
    fn reads_statements_and_loops() {
        let k = parse(
            "fn k(a: &mut [u32]) {
                let mut s = 0u32;
                #[unroll]
                for i in 0..4 { s += i; }
                for j in (0..8).step_by(2) { if j == 2 { continue; } }
                while s > 0 { s -= 1; }
                const C: u32 = 3;
                a[0] = s + C;
            }",
        )
        .unwrap();
        assert_eq!(k.body.stmts.len(), 6);
        let StmtKind::Expr(e, _) = &k.body.stmts[1].kind else {
            panic!("a loop")
        };
        let ExprKind::For(f) = &e.kind else {
            panic!("a for loop")
        };
        assert!(f.unroll && f.step.is_none() && !f.inclusive);
        let StmtKind::Expr(e, _) = &k.body.stmts[2].kind else {
            panic!("a loop")
        };
        let ExprKind::For(f) = &e.kind else {
            panic!("a for loop")
        };
        assert!(!f.unroll && f.step.is_some());
        assert!(matches!(k.body.stmts[4].kind, StmtKind::Const { .. }));
    }

    #[test]
    fn expression_ids_are_unique() {
        let k = parse("fn k(a: &mut [u32]) { a[0] = a[1] + 2 * a[2]; }").unwrap();
        assert_eq!(k.expr_count, 13);
    }

    #[test]
    fn statement_text_is_one_readable_line() {
        let k = parse("fn k(a: &mut [u32]) {\n    let v = shared_array::<u32, 4>();\n    for i in (0..4).step_by(2) { a[i as usize] = !a[0] & 3; }\n}").unwrap();
        assert_eq!(k.body.stmts[0].text, "let v = shared_array::<u32, 4>();");
        assert_eq!(k.body.stmts[1].text, "for i in (0..4).step_by(2) { ... }");
        assert_eq!(k.body.stmts[1].line, 3);
    }

    #[test]
    fn rejects_constructs_outside_the_subset() {
        assert!(error("fn k() { let f = |x: u32| x; }").contains("closures"));
        assert!(error("fn k<T>() {}").contains("generic type parameters"));
        assert!(error("fn k(v: Vec<u32>) {}").contains("heap"));
        assert!(error("fn k() -> u32 { 0 }").contains("returns nothing"));
        assert!(error("fn k() { 'a: { break 'a; } }").contains("labeled blocks"));
        assert!(error("fn k(a: &[u32]) { for x in a.iter().skip(1).rev() {} }").contains("must be called on a range"));
        assert!(
            error("fn k(a: &[u32]) { for x in a.iter().skip(1) {} }").contains("other iterators are not supported")
        );
        assert!(error("fn k(a: &mut [u32]) { for mut x in a.iter_mut() {} }").contains("binds one name"));
        assert!(error("fn k(a: &mut [u32]) { for x in a.iter_mut() { let y = x; } }").contains("as `*v`"));
        assert!(error("fn k(a: &mut [u32]) { for x in a { *x = 1; } }").contains("by index"));
        assert!(error("fn k(a: &mut [u32]) { for mut x in a { *x += 1; } }").contains("by index"));
        assert!(error("fn k() { println!(\"x\"); }").contains("`ptx!`"));
        assert!(error("fn k() { let s = \"x\"; }").contains("literals"));
    }

    #[test]
    fn named_constants_become_literals() {
        let k = parse("fn k(a: &mut [u32]) { a[0] = u32::MAX; }").unwrap();
        let StmtKind::Expr(e, _) = &k.body.stmts[0].kind else {
            panic!()
        };
        let ExprKind::Assign(_, v) = &e.kind else { panic!() };
        assert!(matches!(v.kind, ExprKind::Lit(Lit::Int(v, Some(Scalar::U32))) if v == u32::MAX as u128));
    }
}
