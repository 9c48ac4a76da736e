//! `syn::ItemFn` -> the AST of the supported subset (see `ast`).
//!
//! Everything outside the subset is rejected here, with the span of the
//! offending tokens and a message that says what to write instead.
//!
//! One file per construct: `item` (signatures, device functions and
//! structs), `methods` (`#[device] impl` blocks), `ty` (types), `stmt`
//! (statements and blocks), `expr` (expressions), `loops` (`while`,
//! `loop`, `for`), `elements` (element loops: over slices, arrays, array
//! literals, zipped), `macros` (`ptx!` and the assertions), `closure`
//! (closures and their calls),
//! `path` (names and calls), `literal` (literals and named constants),
//! `pat` (patterns), `span` (where an expression is) and `text` (the source
//! line of a statement).

mod closure;
mod elements;
mod expr;
mod item;
mod literal;
mod loops;
mod macros;
mod methods;
mod pat;
mod path;
mod span;
mod stmt;
#[cfg(test)]
mod tests;
mod text;
mod ty;

pub use path::path_key;
pub use ty::is_builtin_type;

use crate::ast::{Expr, ExprId, ExprKind, Kernel, Loc};
use crate::types::StructTy;
use elements::ElementRef;
use item::{check_signature, const_params};

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
        self_ty: None,
        element_refs: Vec::new(),
        locals: Vec::new(),
        in_closure: 0,
    };
    for (key, item) in devices {
        if let syn::Item::Struct(st) = item {
            // A `#[device(methods)]` struct's macro hands over its impl
            // block with it, by the same path.
            let methods = devices.iter().any(|(k, i)| k == key && matches!(i, syn::Item::Impl(_)));
            let ty = p.device_struct(st, methods)?;
            p.structs.push((key.clone(), ty));
        }
    }
    let params = p.params(sig, &consts, FnKind::Kernel)?;
    let body = p.block(&item.block)?;
    let mut parsed = Vec::with_capacity(devices.len());
    for (key, item) in devices {
        match item {
            syn::Item::Fn(f) => parsed.push(p.device(key, f)?),
            syn::Item::Impl(i) => parsed.extend(p.device_impl(key, i)?),
            _ => {}
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
        structs: p.structs,
        expr_count: p.next_id,
    })
}

struct Parser {
    next_id: ExprId,
    /// The const generics of the function being parsed.
    consts: Vec<String>,
    kind: FnKind,
    /// The `#[device]` structs, by the path their users wrote.
    structs: Vec<(String, StructTy)>,
    /// The scope of the device function being parsed (`""`: the kernel),
    /// which paths in it resolve from.
    caller: String,
    /// The struct of the `#[device] impl` block being parsed: `Self`.
    self_ty: Option<StructTy>,
    /// The names element loops bind where Rust binds a reference: `v` in
    /// `for v in x.iter()` (a copy: `*v` is `v` here), or in
    /// `for v in x.iter_mut()` (`*v` is `x[i]`, given here).
    element_refs: Vec<ElementRef>,
    /// The names `let` bound in the blocks around, innermost last: `f(x)`
    /// of one calls a closure (as in Rust, a local hides a function of the
    /// same name), which `check` makes sure it is.
    locals: Vec<String>,
    /// How many closure bodies are around (`return` is not allowed there).
    in_closure: u32,
}

impl Parser {
    /// Whether `name` is bound by a `let` around.
    fn is_local(&self, name: &str) -> bool {
        self.locals.iter().any(|n| n == name)
    }

    fn expr_node(&mut self, kind: ExprKind, span: Loc) -> Expr {
        let id = self.next_id;
        self.next_id += 1;
        Expr { id, kind, span }
    }
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
