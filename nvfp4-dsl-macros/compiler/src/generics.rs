//! Type generics: `fn k<T: Float>(x: &[T])`, a kernel or device function
//! generic over the DSL's element types through a trait of the prelude
//! (`Float`, `Half`, `Int`, or `Num` for both kinds).
//!
//! Compiled by substitution: each instantiation is the function's syntax
//! with `T` replaced by a concrete type (`f16`) and the type parameter
//! removed, parsed and checked as a function written for that type, so the
//! trait's methods are the types' own intrinsic rows. A kernel is
//! instantiated for each type its `specialize(T = [..])` lists; a device
//! function for each type its calls give `T` (read off the arguments'
//! types, as rustc infers it, or from a turbofish): `check` asks the
//! driver for the instantiations it has not got yet ([`Instance`]).

use crate::ast::Loc;
use crate::types::{Scalar, Ty};
use syn::visit_mut::VisitMut;

/// A trait of the prelude that bounds a type parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Float,
    Half,
    Int,
    Num,
}

impl Bound {
    const ALL: [Bound; 4] = [Bound::Float, Bound::Half, Bound::Int, Bound::Num];

    pub fn name(self) -> &'static str {
        match self {
            Bound::Float => "Float",
            Bound::Half => "Half",
            Bound::Int => "Int",
            Bound::Num => "Num",
        }
    }

    /// The types that implement the trait (the first is the one a device
    /// function is parsed with to find what it calls).
    pub fn types(self) -> &'static [Scalar] {
        use Scalar::*;
        match self {
            Bound::Float => &[F16, Bf16, F32, F64],
            Bound::Half => &[F16, Bf16],
            Bound::Int => &[U8, U16, U32, U64, Usize, I32, I64],
            Bound::Num => &[F16, Bf16, F32, F64, U8, U16, U32, U64, Usize, I32, I64],
        }
    }

    /// What `T::item` may name: the trait's functions and constants.
    fn items(self) -> Vec<&'static str> {
        const FLOAT: &[&str] = &[
            "from_f32",
            "to_f32",
            "min",
            "max",
            "ZERO",
            "ONE",
            "MAX",
            "MIN",
            "INFINITY",
            "NEG_INFINITY",
            "NAN",
            "EPSILON",
        ];
        match self {
            Bound::Float => FLOAT.to_vec(),
            Bound::Half => [FLOAT, &["from_bits", "to_bits"]].concat(),
            Bound::Int => vec![
                "wrapping_add",
                "wrapping_sub",
                "wrapping_mul",
                "count_ones",
                "leading_zeros",
                "trailing_zeros",
                "min",
                "max",
                "ZERO",
                "ONE",
                "MIN",
                "MAX",
                "BITS",
            ],
            Bound::Num => vec!["ZERO", "ONE", "MIN", "MAX"],
        }
    }

    /// `Float` (`f16`, `bf16`, `f32`, `f64`).
    pub fn describe(self) -> String {
        let types: Vec<&str> = self.types().iter().map(|s| s.rust_name()).collect();
        format!("`{}` ({})", self.name(), types.join(", "))
    }

    /// `T: Float` (`f16`, ...), `T: Half` (..), `T: Int` (..) or `T: Num`
    /// (..).
    fn all_bounds(param: &str) -> String {
        let all: Vec<String> = Bound::ALL
            .into_iter()
            .map(|b| {
                let types: Vec<&str> = b.types().iter().map(|s| s.rust_name()).collect();
                format!("`{param}: {}` ({})", b.name(), types.join(", "))
            })
            .collect();
        format!("{}, {}, {} or {}", all[0], all[1], all[2], all[3])
    }
}

/// A trait of the intrinsics that may narrow a prelude bound (`T: Num +
/// WarpReduce`): the types the warp reductions or the shuffles take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Narrowing {
    WarpReduce,
    Shuffle,
}

impl Narrowing {
    const ALL: [Narrowing; 2] = [Narrowing::WarpReduce, Narrowing::Shuffle];

    pub fn name(self) -> &'static str {
        match self {
            Narrowing::WarpReduce => "WarpReduce",
            Narrowing::Shuffle => "Shuffle",
        }
    }

    /// The scalar types that implement it (`Shuffle` also takes `f16x2`,
    /// which no prelude bound has).
    fn types(self) -> &'static [Scalar] {
        use Scalar::*;
        &[U32, I32, F32, U64, I64, F64]
    }
}

/// A type parameter, its bound and the intrinsic traits that narrow it.
#[derive(Clone, Debug)]
pub struct TypeParam {
    pub name: String,
    pub bound: Bound,
    pub narrowed: Vec<Narrowing>,
    pub span: Loc,
}

impl TypeParam {
    /// The types it takes: its bound's that each narrowing trait has too.
    pub fn types(&self) -> Vec<Scalar> {
        let mut types = self.bound.types().to_vec();
        for n in &self.narrowed {
            types.retain(|t| n.types().contains(t));
        }
        types
    }

    /// `Num + WarpReduce`.
    pub fn bound_name(&self) -> String {
        std::iter::once(self.bound.name())
            .chain(self.narrowed.iter().map(|n| n.name()))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// `` `Num + WarpReduce` (f32, f64, ..) ``.
    pub fn describe(&self) -> String {
        let types: Vec<&str> = self.types().iter().map(|s| s.rust_name()).collect();
        format!("`{}` ({})", self.bound_name(), types.join(", "))
    }
}

/// The type parameters of a kernel or device function (`what`), each
/// bounded by one trait of the prelude.
pub fn type_params(generics: &syn::Generics, what: &str) -> syn::Result<Vec<TypeParam>> {
    let mut out = Vec::new();
    for p in &generics.params {
        let syn::GenericParam::Type(t) = p else { continue };
        let name = t.ident.to_string();
        if let Some(d) = &t.default {
            return Err(Loc::of(d).error(format!(
                "a type parameter of {what} has no default; list its types in `specialize({name} = [..])` or let the calls give it"
            )));
        }
        let mut bound = None;
        let mut narrowed = Vec::new();
        for b in &t.bounds {
            match bound_of(b, &name)? {
                Err(n) => narrowed.push(n),
                Ok(_) if bound.is_some() => {
                    return Err(Loc::of(b).error(format!(
                        "bound `{name}` by one trait of the prelude: {} (each implies `Copy`, the operators and comparisons), narrowed by `WarpReduce` or `Shuffle` where it calls the warp reductions or shuffles",
                        Bound::all_bounds(&name)
                    )));
                }
                Ok(b) => bound = Some(b),
            }
        }
        let Some(bound) = bound else {
            return Err(Loc::of(&t.ident).error(format!(
                "the type parameter `{name}` needs a bound, a trait of the prelude: {}{}",
                Bound::all_bounds(&name),
                if narrowed.is_empty() {
                    String::new()
                } else {
                    format!(" (`WarpReduce` and `Shuffle` only narrow one: `{name}: Num + WarpReduce`)")
                }
            )));
        };
        let param = TypeParam {
            name,
            bound,
            narrowed,
            span: Loc::of(&t.ident),
        };
        if param.types().is_empty() {
            return Err(Loc::of(&t.bounds).error(format!(
                "no type is `{}`: the warp reductions and shuffles take `u32`, `i32`, `f32`, `u64`, `i64` and `f64`",
                param.bound_name()
            )));
        }
        out.push(param);
    }
    Ok(out)
}

/// The prelude trait `b` names, or the intrinsic trait that narrows one.
fn bound_of(b: &syn::TypeParamBound, name: &str) -> syn::Result<Result<Bound, Narrowing>> {
    let trait_name = match b {
        syn::TypeParamBound::Trait(t)
            if t.lifetimes.is_none() && matches!(t.modifier, syn::TraitBoundModifier::None) =>
        {
            t.path
                .segments
                .last()
                .filter(|s| s.arguments.is_none())
                .map(|s| s.ident.to_string())
        }
        _ => None,
    };
    let narrowing = trait_name
        .as_ref()
        .and_then(|n| Narrowing::ALL.into_iter().find(|t| t.name() == n));
    match trait_name.and_then(|n| Bound::ALL.into_iter().find(|b| b.name() == n)) {
        Some(bound) => Ok(Ok(bound)),
        None if let Some(n) = narrowing => Ok(Err(n)),
        None => Err(Loc::of(b).error(format!(
            "`{}` is not a trait kernels compile; write {}, traits of the prelude (narrowed by `WarpReduce` or `Shuffle` for the warp reductions and shuffles)",
            quote::ToTokens::to_token_stream(b),
            Bound::all_bounds(name)
        ))),
    }
}

/// A device function to compile for some types: its key and the type of
/// each type parameter, in order.
pub type Instance = (String, Vec<Scalar>);

/// The key calls find an instantiation of the device function `key` by.
pub fn instance_key(key: &str, types: &[Scalar]) -> String {
    let types: Vec<&str> = types.iter().map(|t| t.rust_name()).collect();
    format!("{key}::<{}>", types.join(", "))
}

/// `item` for the types `types` (one per type parameter, in order): each
/// path that starts with a type parameter starts with its type instead, and
/// the type parameters are gone. `T::item` must be an item of `T`'s trait.
pub fn substitute(item: &syn::ItemFn, params: &[TypeParam], types: &[Scalar]) -> syn::Result<syn::ItemFn> {
    let mut f = item.clone();
    f.sig.generics.params = f
        .sig
        .generics
        .params
        .into_pairs()
        .filter(|p| !matches!(p.value(), syn::GenericParam::Type(_)))
        .collect();
    if f.sig.generics.params.is_empty() {
        f.sig.generics.lt_token = None;
        f.sig.generics.gt_token = None;
    }
    let mut s = Substitute {
        params,
        types,
        error: None,
    };
    s.visit_signature_mut(&mut f.sig);
    s.visit_block_mut(&mut f.block);
    match s.error {
        Some(e) => Err(e),
        None => Ok(f),
    }
}

struct Substitute<'a> {
    params: &'a [TypeParam],
    types: &'a [Scalar],
    error: Option<syn::Error>,
}

impl VisitMut for Substitute<'_> {
    /// `T::ZERO` and `T::ONE` become the type's literal (`0u32`, `1f32`)
    /// or, for the half types, the `half` crate's constant (`f16::ONE`):
    /// Rust has no `u32::ZERO` to substitute them into.
    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        if let syn::Expr::Path(p) = expr
            && p.qself.is_none()
            && p.path.segments.len() == 2
            && let Some(i) = self.params.iter().position(|t| p.path.segments[0].ident == t.name)
            && let Some(value) = match p.path.segments[1].ident.to_string().as_str() {
                "ZERO" => Some("0"),
                "ONE" => Some("1"),
                _ => None,
            }
            && !matches!(self.types[i], Scalar::F16 | Scalar::Bf16)
        {
            let span = p.path.segments[1].ident.span();
            let lit = syn::LitInt::new(&format!("{value}{}", self.types[i].rust_name()), span);
            *expr = syn::Expr::Lit(syn::ExprLit {
                attrs: p.attrs.clone(),
                lit: syn::Lit::Int(lit),
            });
            return;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        if path.leading_colon.is_none()
            && let Some(first) = path.segments.first()
            && let Some(i) = self.params.iter().position(|p| first.ident == p.name)
        {
            let p = &self.params[i];
            let items = p.bound.items();
            if let Some(item) = path.segments.iter().nth(1)
                && !items.contains(&item.ident.to_string().as_str())
                && self.error.is_none()
            {
                let items: Vec<String> = items.iter().map(|i| format!("`{}::{i}`", p.name)).collect();
                self.error = Some(Loc::of(path).error(format!(
                    "`{}` is `{}: {}`, which has no `{}`; it has {}, the operators and comparisons (convert with `.to_f32()` to use `f32`'s methods)",
                    p.name,
                    p.name,
                    p.bound.name(),
                    item.ident,
                    items.join(", ")
                )));
            }
            let span = first.ident.span();
            path.segments[0].ident = syn::Ident::new(self.types[i].rust_name(), span);
        }
        syn::visit_mut::visit_path_mut(self, path);
    }
}

/// Where a parameter's type mentions a type parameter, for reading the
/// type off an argument.
#[derive(Clone, Debug)]
pub enum Shape {
    Param(usize),
    Slice(Box<Shape>),
    Array(Box<Shape>),
    Shared(Box<Shape>),
    Tuple(Vec<Shape>),
    Other,
}

impl Shape {
    /// The shape of a parameter's type (references see through: a call
    /// passes `&x` for `&[T; N]`).
    pub fn of(ty: &syn::Type, params: &[TypeParam]) -> Shape {
        match ty {
            syn::Type::Group(g) => Shape::of(&g.elem, params),
            syn::Type::Paren(p) => Shape::of(&p.elem, params),
            syn::Type::Reference(r) => match &*r.elem {
                syn::Type::Slice(s) => Shape::Slice(Box::new(Shape::of(&s.elem, params))),
                other => Shape::of(other, params),
            },
            syn::Type::Array(a) => Shape::Array(Box::new(Shape::of(&a.elem, params))),
            syn::Type::Tuple(t) => Shape::Tuple(t.elems.iter().map(|e| Shape::of(e, params)).collect()),
            syn::Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return Shape::Other;
                };
                if p.path.segments.len() == 1
                    && let Some(i) = params.iter().position(|t| last.ident == t.name)
                {
                    return Shape::Param(i);
                }
                match &last.arguments {
                    syn::PathArguments::AngleBracketed(a)
                        if matches!(last.ident.to_string().as_str(), "SharedArray" | "SharedSlice") =>
                    {
                        match a.args.first() {
                            Some(syn::GenericArgument::Type(t)) => Shape::Shared(Box::new(Shape::of(t, params))),
                            _ => Shape::Other,
                        }
                    }
                    _ => Shape::Other,
                }
            }
            _ => Shape::Other,
        }
    }

    pub fn mentions_params(&self) -> bool {
        match self {
            Shape::Param(_) => true,
            Shape::Slice(e) | Shape::Array(e) | Shape::Shared(e) => e.mentions_params(),
            Shape::Tuple(parts) => parts.iter().any(Shape::mentions_params),
            Shape::Other => false,
        }
    }

    /// Reads the type parameters this shape names off `actual`, the type
    /// of an argument (the first reading of each stands, as in rustc a
    /// later argument of another type is a mismatch).
    pub fn infer(&self, actual: &Ty, out: &mut [Option<Ty>]) {
        match (self, actual) {
            (Shape::Param(i), t) if out[*i].is_none() => out[*i] = Some(t.clone()),
            (Shape::Slice(s), Ty::Slice { elem, .. })
            | (Shape::Array(s), Ty::Array { elem, .. })
            | (Shape::Shared(s), Ty::SharedArray { elem, .. } | Ty::SharedSlice { elem }) => s.infer(elem, out),
            (Shape::Tuple(parts), Ty::Tuple(ts)) if parts.len() == ts.len() => {
                for (p, t) in parts.iter().zip(ts) {
                    p.infer(t, out);
                }
            }
            _ => {}
        }
    }
}

/// A generic `#[device]` function, as calls see it before it is
/// instantiated.
#[derive(Clone, Debug)]
pub struct GenericFn {
    pub key: String,
    pub name: String,
    pub type_params: Vec<TypeParam>,
    /// Each generic parameter in order: the index of a type parameter, or
    /// `None` for a const generic.
    pub order: Vec<Option<usize>>,
    /// Each parameter's shape.
    pub params: Vec<Shape>,
    /// The result's shape (for `T` given by the type a call's context
    /// expects, as rustc reads it).
    pub ret: Shape,
}

impl GenericFn {
    pub fn new(key: &str, f: &syn::ItemFn, type_params: Vec<TypeParam>) -> GenericFn {
        let mut next = 0;
        let order = f
            .sig
            .generics
            .params
            .iter()
            .filter_map(|p| match p {
                syn::GenericParam::Type(_) => {
                    next += 1;
                    Some(Some(next - 1))
                }
                syn::GenericParam::Const(_) => Some(None),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        let params = f
            .sig
            .inputs
            .iter()
            .map(|i| match i {
                syn::FnArg::Typed(pt) => Shape::of(&pt.ty, &type_params),
                syn::FnArg::Receiver(_) => Shape::Other,
            })
            .collect();
        let ret = match &f.sig.output {
            syn::ReturnType::Type(_, t) => Shape::of(t, &type_params),
            syn::ReturnType::Default => Shape::Other,
        };
        GenericFn {
            key: key.to_string(),
            name: f.sig.ident.to_string(),
            type_params,
            order,
            params,
            ret,
        }
    }

    /// `fn f<T: Float, const N: usize>`, as errors show it.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .order
            .iter()
            .map(|o| match o {
                Some(i) => format!("{}: {}", self.type_params[*i].name, self.type_params[*i].bound_name()),
                None => "const ..".to_string(),
            })
            .collect();
        format!("fn {}<{}>", self.name, params.join(", "))
    }
}
