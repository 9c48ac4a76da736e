//! `syn::ItemFn` -> the AST of the supported subset (see `ast`).
//!
//! Everything outside the subset is rejected here, with the span of the
//! offending tokens and a message that says what to write instead.
//!
//! Names resolve as in Rust: a name bound in scope (a parameter, a const
//! generic, a local) is itself; any other names a `#[device] const`, which
//! `consts` turns into its value.
//!
//! One file per construct: `item` (signatures, device functions and
//! structs), `methods` (`#[device] impl` blocks), `consts` (`#[device]
//! const`s and constant expressions), `ty` (types), `stmt` (statements and
//! blocks), `expr` (expressions), `loops` (`while`, `loop`, `for`),
//! `elements` (element loops: over slices, arrays, array literals, zipped),
//! `macros` (`ptx!` and the assertions), `closure` (closures and their
//! calls), `assign` (destructuring assignment and `mem::swap`),
//! `path` (names and calls), `literal` (literals and named constants),
//! `pat` (patterns), `span` (where an expression is) and `text` (the source
//! line of a statement).

mod assign;
mod closure;
mod consts;
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

pub use consts::check_device_const;
pub use path::path_key;
pub use ty::is_builtin_type;

use crate::ast::{Expr, ExprId, ExprKind, Kernel, Lit, Loc, Table, UnOp, combine};
use crate::generics::{GenericFn, Instance, instance_key, substitute, type_params};
use crate::lower::fold::Const;
use crate::types::{Scalar, StructTy};
use consts::ModuleConsts;
use elements::ElementRef;
use item::{check_signature, const_params};
use proc_macro2::Span;

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

/// Parses a kernel function and the device functions, structs and consts
/// it uses, each with the path its user wrote.
/// Generic device functions are instantiated for the types `instances`
/// lists (see `generics`); a generic kernel comes instantiated.
pub fn parse_kernel(item: &syn::ItemFn, devices: &[(String, syn::Item)], instances: &[Instance]) -> Result<Kernel> {
    Parser::new(ModuleConsts::new(devices, false)).kernel(item, devices, Some(instances))
}

/// A kernel without the statements that failed to parse, and their errors.
pub type Partial = (Kernel, Vec<syn::Error>);

/// The kernel as far as its statements parse, with the errors of those
/// that do not (in order); `Err` for an error that leaves no kernel to
/// check (in its signature, or in a device function outside a statement).
pub fn parse_kernel_partial(
    item: &syn::ItemFn,
    devices: &[(String, syn::Item)],
    instances: &[Instance],
) -> Result<Partial> {
    Parser::new(ModuleConsts::new(devices, false)).kernel_partial(item, devices, Some(instances))
}

/// What `missing_devices` needs: the kernel as far as its statements parse
/// and their errors, and the
/// `#[device] const`s it, its device functions, the consts they name and
/// `extra` (the `specialize` values) name that are not in `devices` yet,
/// each with the span of a use. A generic device function is parsed for
/// the first type of each bound, which calls the same functions.
pub fn collect_consts(
    item: &syn::ItemFn,
    devices: &[(String, syn::Item)],
    extra: &[syn::Expr],
) -> (Result<Partial>, Vec<(String, Span)>) {
    let mut p = Parser::new(ModuleConsts::new(devices, true));
    let kernel = p.kernel_partial(item, devices, None);
    for e in extra {
        // An error here is reported by `compile`, once they are fetched.
        let _ = p.expr(e);
    }
    (kernel, p.module.missing.take().unwrap_or_default())
}

/// Whether a kernel's signature (its type parameters substituted) parses:
/// then a launcher can be made for it even where its body has an error.
pub fn kernel_signature(sig: &syn::Signature, devices: &[(String, syn::Item)]) -> Result<()> {
    Parser::new(ModuleConsts::new(devices, false))
        .kernel_signature(sig, devices)
        .map(drop)
}

/// The const generics of a kernel (whose type parameters are substituted).
pub fn kernel_consts(sig: &syn::Signature) -> Result<Vec<crate::ast::ConstParam>> {
    const_params(sig)
}

/// The value of a constant expression of type `want` outside a kernel (a
/// `specialize` value), which may name the `#[device] const`s in
/// `devices`. An integer literal is its exact value, unwrapped: the caller
/// checks that it fits.
pub fn constant(e: &syn::Expr, devices: &[(String, syn::Item)], want: Scalar) -> Result<Const> {
    let mut p = Parser::new(ModuleConsts::new(devices, false));
    let x = p.expr(e)?;
    match &x.kind {
        ExprKind::Lit(Lit::Int(v, None)) => return Ok(Const::Int(*v as i128)),
        ExprKind::Unary(UnOp::Neg, m) => {
            if let ExprKind::Lit(Lit::Int(v, None)) = &m.kind {
                return Ok(Const::Int(-(*v as i128)));
            }
        }
        _ => {}
    }
    p.eval(&x, want)
}

struct Parser {
    next_id: ExprId,
    /// The const generics of the function being parsed.
    consts: Vec<String>,
    /// The names bound in the scopes around the code being parsed
    /// (parameters, locals, local `const`s, closure parameters), innermost
    /// last: `f(x)` of one calls a closure (as in Rust, a local hides a
    /// function of the same name), which `check` makes sure it is.
    locals: Vec<Vec<String>>,
    /// The `#[device] const`s fetched, and their values.
    module: ModuleConsts,
    /// The `#[device] const` arrays named so far.
    tables: Vec<Table>,
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
    /// How many closure bodies are around (`return` is not allowed there).
    in_closure: u32,
    /// Errors of statements already reported, whose parse went on at the
    /// next statement (the kernel's parse then fails with all of them).
    errors: Vec<syn::Error>,
}

/// What `Parser::enter_const` replaced, for `leave_const`.
struct Saved {
    caller: String,
    consts: Vec<String>,
    locals: Vec<Vec<String>>,
    element_refs: Vec<ElementRef>,
}

impl Parser {
    fn new(module: ModuleConsts) -> Parser {
        Parser {
            next_id: 0,
            consts: Vec::new(),
            locals: vec![Vec::new()],
            module,
            tables: Vec::new(),
            kind: FnKind::Kernel,
            structs: Vec::new(),
            caller: String::new(),
            self_ty: None,
            element_refs: Vec::new(),
            in_closure: 0,
            errors: Vec::new(),
        }
    }

    /// The kernel `item`, with the device functions, structs and methods of
    /// `devices`; generic device functions for the types of `instances`
    /// (`None`: for the first type of each bound).
    fn kernel(
        &mut self,
        item: &syn::ItemFn,
        devices: &[(String, syn::Item)],
        instances: Option<&[Instance]>,
    ) -> Result<Kernel> {
        let (kernel, errors) = self.kernel_partial(item, devices, instances)?;
        combine(errors).map_or(Ok(kernel), Err)
    }

    /// The kernel without the statements that failed to parse, and their
    /// errors; an error that ended the parse comes after them.
    fn kernel_partial(
        &mut self,
        item: &syn::ItemFn,
        devices: &[(String, syn::Item)],
        instances: Option<&[Instance]>,
    ) -> Result<Partial> {
        let parsed = self.kernel_items(item, devices, instances);
        let errors = std::mem::take(&mut self.errors);
        match parsed {
            Ok(mut kernel) => {
                kernel.incomplete = !errors.is_empty();
                Ok((kernel, errors))
            }
            Err(last) => Err(match combine(errors) {
                Some(mut all) => {
                    all.combine(last);
                    all
                }
                None => last,
            }),
        }
    }

    /// [`Parser::kernel`]'s work, which may leave errors in `errors`.
    fn kernel_items(
        &mut self,
        item: &syn::ItemFn,
        devices: &[(String, syn::Item)],
        instances: Option<&[Instance]>,
    ) -> Result<Kernel> {
        let sig = &item.sig;
        let (consts, params) = self.kernel_signature(sig, devices)?;
        self.locals = vec![params.iter().map(|p| p.name.clone()).collect()];
        let body = self.block(&item.block)?;
        let mut parsed = Vec::with_capacity(devices.len());
        let mut generic = Vec::new();
        for (key, item) in devices {
            match item {
                syn::Item::Fn(f) if f.sig.generics.type_params().next().is_some() => {
                    let g = GenericFn::new(key, f, type_params(&f.sig.generics, "a device function")?);
                    let all: Vec<Vec<Scalar>> = match instances {
                        Some(list) => list.iter().filter(|(k, _)| k == key).map(|(_, t)| t.clone()).collect(),
                        None => vec![g.type_params.iter().map(|t| t.types()[0]).collect()],
                    };
                    for types in all {
                        let f = substitute(f, &g.type_params, &types)?;
                        let name = f.sig.ident.to_string();
                        parsed.push(self.device_fn(instance_key(key, &types), key, &f.sig, &f.block, name, None)?);
                    }
                    generic.push(g);
                }
                syn::Item::Fn(f) => parsed.push(self.device(key, f)?),
                syn::Item::Impl(i) => parsed.extend(self.device_impl(key, i)?),
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
            generics: generic,
            structs: std::mem::take(&mut self.structs),
            tables: std::mem::take(&mut self.tables),
            expr_count: self.next_id,
            incomplete: false,
        })
    }

    /// A kernel's signature: its const generics and parameters (with the
    /// device structs among `devices` that they may name).
    fn kernel_signature(
        &mut self,
        sig: &syn::Signature,
        devices: &[(String, syn::Item)],
    ) -> Result<(Vec<crate::ast::ConstParam>, Vec<crate::ast::Param>)> {
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
        let consts = const_params(sig)?;
        self.consts = consts.iter().map(|c| c.name.clone()).collect();
        for (key, item) in devices {
            if let syn::Item::Struct(st) = item {
                // A `#[device(methods)]` struct's macro hands over its impl
                // block with it, by the same path.
                let methods = devices.iter().any(|(k, i)| k == key && matches!(i, syn::Item::Impl(_)));
                self.caller = key.clone();
                let ty = self.device_struct(st, methods);
                self.caller.clear();
                self.structs.push((key.clone(), ty?));
            }
        }
        let params = self.params(sig, &consts, FnKind::Kernel)?;
        Ok((consts, params))
    }

    /// Whether `name` is bound where the parser is: a parameter, a const
    /// generic or a local.
    fn is_local(&self, name: &str) -> bool {
        self.consts.iter().any(|c| c == name) || self.locals.iter().flatten().any(|l| l == name)
    }

    fn bind_local(&mut self, name: &str) {
        self.locals
            .last_mut()
            .expect("a scope is always open")
            .push(name.to_string());
    }

    /// Parses what follows as the initializer of the `#[device] const`
    /// reached by `key`: paths resolve from its module, no local is bound.
    fn enter_const(&mut self, key: &str) -> Saved {
        Saved {
            caller: std::mem::replace(&mut self.caller, key.to_string()),
            consts: std::mem::take(&mut self.consts),
            locals: std::mem::replace(&mut self.locals, vec![Vec::new()]),
            element_refs: std::mem::take(&mut self.element_refs),
        }
    }

    /// The scopes as they are, to return to after a statement that failed
    /// (it may have failed inside a const's or a closure's).
    fn snapshot(&self) -> (Saved, u32) {
        let saved = Saved {
            caller: self.caller.clone(),
            consts: self.consts.clone(),
            locals: self.locals.clone(),
            element_refs: self.element_refs.clone(),
        };
        (saved, self.in_closure)
    }

    fn leave_const(&mut self, saved: Saved) {
        self.caller = saved.caller;
        self.consts = saved.consts;
        self.locals = saved.locals;
        self.element_refs = saved.element_refs;
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
