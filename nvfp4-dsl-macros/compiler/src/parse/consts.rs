//! `#[device] const`s: module-level constants a kernel names as Rust does
//! (`TILE`, `tiles::TILE`, `crate::tiles::LUT`, another crate's `pub`
//! one). The macro fetches their items as it fetches device functions;
//! here they become values, evaluated when first named: a number or a
//! `bool` is the literal of its value with its type's suffix (so it folds
//! wherever a literal does), an array of numbers a [`Table`].
//!
//! An initializer is a constant expression of the subset: literals, other
//! `#[device] const`s, operators, `as` casts, array literals, `[x; N]` and
//! indexing, evaluated with Rust's semantics (`lower::fold`). An array
//! length and a const generic argument may be such an expression too.

use super::path::path_key;
use super::ty::parse_scalar_path;
use super::{Parser, Result, err};
use crate::ast::{BinOp, Expr, ExprKind, Lit, Loc, Table, UnOp, resolve_device};
use crate::lower::fold::{self, Const, wrap_int};
use crate::types::Scalar;
use proc_macro2::Span;

/// The most elements a `#[device] const` array may have (one read at run
/// time must also fit the 64 KiB of constant memory).
const MAX_ELEMENTS: u64 = 1 << 16;

/// The value of a `#[device] const`.
#[derive(Clone, Debug)]
pub(super) enum Value {
    Scalar(Const, Scalar),
    /// An array of numbers: the element type and the elements.
    Array(Scalar, Vec<Const>),
}

/// The type of a `#[device] const`: a number or `bool`, or an array of
/// numbers with its length as written.
enum ConstTy<'a> {
    Scalar(Scalar),
    Array(Scalar, &'a syn::Expr),
}

/// The `#[device] const`s fetched for a kernel, and their values.
#[derive(Default)]
pub(super) struct ModuleConsts {
    /// Each fetched const, by the path it was reached by.
    items: Vec<(String, syn::ItemConst)>,
    /// The keys of the other fetched items (functions, structs).
    others: Vec<String>,
    values: Vec<(String, Value)>,
    /// The consts being evaluated, outermost first.
    evaluating: Vec<String>,
    /// While collecting what to fetch (`missing_devices`), the consts named
    /// but not fetched yet; `None`: naming one is an error.
    pub(super) missing: Option<Vec<(String, Span)>>,
}

impl ModuleConsts {
    pub(super) fn new(devices: &[(String, syn::Item)], collect: bool) -> ModuleConsts {
        let mut m = ModuleConsts {
            missing: collect.then(Vec::new),
            ..ModuleConsts::default()
        };
        for (key, item) in devices {
            match item {
                syn::Item::Const(c) => m.items.push((key.clone(), c.clone())),
                _ => m.others.push(key.clone()),
            }
        }
        m
    }

    fn missing_count(&self) -> usize {
        self.missing.as_ref().map_or(0, Vec::len)
    }
}

/// The type of a `#[device] const`, or an error saying which types it
/// may have.
fn const_type(ty: &syn::Type) -> Result<ConstTy<'_>> {
    let number = |t: &syn::Type, bool_ok: bool| match parse_scalar_path(t) {
        Some(Scalar::F16 | Scalar::Bf16) => None,
        Some(Scalar::Bool) if !bool_ok => None,
        other => other,
    };
    let what = "a `#[device] const` is a number (`u8`, `u16`, `u32`, `u64`, `usize`, `i32`, `i64`, `f32`, `f64`), a `bool`, or an array of numbers (`[u32; 8]`)";
    match ty {
        syn::Type::Array(a) => match number(&a.elem, false) {
            Some(s) => Ok(ConstTy::Array(s, &a.len)),
            None => {
                let hint = match &*a.elem {
                    syn::Type::Array(_) => {
                        "; an array const has one dimension: flatten it and index `row * width + col`"
                    }
                    e if parse_scalar_path(e) == Some(Scalar::Bool) => "; store `bool`s as `u8` (0 and 1)",
                    _ => "",
                };
                err(Loc::of(&a.elem), format!("{what}{hint}"))
            }
        },
        t => match number(t, true) {
            Some(s) => Ok(ConstTy::Scalar(s)),
            None if matches!(parse_scalar_path(t), Some(Scalar::F16 | Scalar::Bf16)) => err(
                Loc::of(t),
                format!(
                    "{what}; keep an `f16` or `bf16` constant as its bits (`u16`) and convert with `f16::from_bits`"
                ),
            ),
            None => err(Loc::of(t), what),
        },
    }
}

/// Checks a `#[device] const` where it is defined: its type, and that its
/// initializer (and array length) is a constant expression of the subset.
/// The consts it names are checked when a kernel fetches them.
pub fn check_device_const(c: &syn::ItemConst) -> Result<()> {
    if !c.generics.params.is_empty() {
        return err(Loc::of(&c.generics), "a `#[device] const` takes no generics");
    }
    let ty = const_type(&c.ty)?;
    let mut p = Parser::new(ModuleConsts::new(&[], true));
    if let ConstTy::Array(_, len) = ty {
        let len = p.expr(len)?;
        constant_form(&len)?;
    }
    let init = p.expr(&c.expr)?;
    constant_form(&init)
}

/// Checks that `e` is built only of what a constant expression may hold.
fn constant_form(e: &Expr) -> Result<()> {
    match &e.kind {
        ExprKind::Lit(_) => Ok(()),
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Repeat(a, _) => constant_form(a),
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => {
            constant_form(a)?;
            constant_form(b)
        }
        ExprKind::Array(items) => items.iter().try_for_each(constant_form),
        ExprKind::Block(b) => match tail(b) {
            Some(t) => constant_form(t),
            None => Err(not_constant(e)),
        },
        _ => Err(not_constant(e)),
    }
}

/// The expression a block is, when it holds nothing else (`{ N * 2 }`).
fn tail(b: &crate::ast::Block) -> Option<&Expr> {
    match b.stmts.as_slice() {
        [s] => match &s.kind {
            crate::ast::StmtKind::Expr(e, false) => Some(e),
            _ => None,
        },
        _ => None,
    }
}

fn not_constant(e: &Expr) -> syn::Error {
    let what = match &e.kind {
        ExprKind::Var(name) => format!("`{name}` is a variable or a const generic, not a constant"),
        ExprKind::Call { path, .. } => format!("`{}(..)` is a call", path.display()),
        ExprKind::MethodCall { method, .. } => format!("`.{method}(..)` is a call"),
        ExprKind::If { .. } | ExprKind::Match { .. } => "a condition is not one".to_string(),
        _ => "this is not one".to_string(),
    };
    e.span.error(format!(
        "a constant here is an expression of literals, `#[device] const`s, operators and `as` casts (`TILE * (TILE + 1)`, `[0u8; 4]`); {what}: compute the value with those, or write it as a literal"
    ))
}

/// The type an expression has on its own (its suffix, its operands', its
/// cast's); `None` for an unsuffixed literal, which takes its context's.
fn own_type(e: &Expr) -> Option<Scalar> {
    match &e.kind {
        ExprKind::Lit(Lit::Int(_, s) | Lit::Float(_, s)) => *s,
        ExprKind::Lit(Lit::Bool(_)) => Some(Scalar::Bool),
        ExprKind::Unary(_, a) => own_type(a),
        ExprKind::Binary(op, ..) if op.is_comparison() || op.is_lazy() => Some(Scalar::Bool),
        ExprKind::Binary(op, a, _) if op.is_shift() => own_type(a),
        ExprKind::Binary(_, a, b) => own_type(a).or_else(|| own_type(b)),
        ExprKind::Cast(_, t) => t.scalar(),
        ExprKind::Block(b) => tail(b).and_then(own_type),
        _ => None,
    }
}

/// Rust's type for an expression without one: `i32`, or `f64` for a float
/// literal.
fn default_type(e: &Expr) -> Scalar {
    let mut float = false;
    crate::ast::walk_expr(e, &mut |x| float |= matches!(x.kind, ExprKind::Lit(Lit::Float(..))));
    if float { Scalar::F64 } else { Scalar::I32 }
}

impl Parser {
    /// What a path naming a `#[device] const` stands for: the literal of a
    /// number's value, or an array's table.
    pub(super) fn const_ref(&mut self, path: &syn::Path, loc: Loc) -> Result<ExprKind> {
        let key = resolve_device(&self.caller, &path_key(path));
        Ok(match self.const_value(&key, loc)? {
            Some(Value::Scalar(c, s)) => self.literal(c, s, loc),
            Some(Value::Array(elem, values)) => ExprKind::Table(self.table(&key, elem, values)),
            // Collecting what to fetch: a stand-in, never compiled.
            None => ExprKind::Lit(Lit::Int(1, None)),
        })
    }

    /// The value of the `#[device] const` reached by `key`, evaluated once;
    /// `None` while collecting, when it (or a const it names) is not
    /// fetched yet.
    fn const_value(&mut self, key: &str, loc: Loc) -> Result<Option<Value>> {
        if let Some((_, v)) = self.module.values.iter().find(|(k, _)| k == key) {
            return Ok(Some(v.clone()));
        }
        let name = key.rsplit("::").next().unwrap_or(key);
        let Some((_, item)) = self.module.items.iter().find(|(k, _)| k == key) else {
            if self.module.others.iter().any(|k| k == key) {
                return err(
                    loc,
                    format!("`{name}` is a `#[device]` function or struct, not a value; call the function"),
                );
            }
            return match &mut self.module.missing {
                Some(missing) => {
                    missing.push((key.to_string(), loc.start));
                    Ok(None)
                }
                None => err(
                    loc,
                    format!(
                        "cannot find `{key}`: a kernel sees its parameters, const generics, locals, local `const`s and the `const`s marked `#[device]` (`#[device] const {name}: u32 = ..;`)"
                    ),
                ),
            };
        };
        let item = item.clone();
        if self.module.evaluating.iter().any(|k| k == key) {
            return err(loc, format!("`{key}` is defined in terms of itself"));
        }
        let before = self.module.missing_count();
        self.module.evaluating.push(key.to_string());
        let saved = self.enter_const(key);
        let value = self.evaluate_const(&item);
        self.leave_const(saved);
        self.module.evaluating.pop();
        if self.module.missing_count() > before {
            return Ok(None);
        }
        let value = value?;
        self.module.values.push((key.to_string(), value.clone()));
        Ok(Some(value))
    }

    fn evaluate_const(&mut self, c: &syn::ItemConst) -> Result<Value> {
        check_device_const(c)?;
        match const_type(&c.ty)? {
            ConstTy::Scalar(s) => {
                let init = self.expr(&c.expr)?;
                Ok(Value::Scalar(self.eval(&init, s)?, s))
            }
            ConstTy::Array(elem, len) => {
                let len_expr = self.expr(len)?;
                let n = self.const_len(&len_expr)?;
                let init = self.expr(&c.expr)?;
                let values = self.eval_array(&init, elem)?;
                if values.len() as u64 != n {
                    return err(
                        init.span,
                        format!("expected an array of {n} elements, found one of {}", values.len()),
                    );
                }
                Ok(Value::Array(elem, values))
            }
        }
    }

    /// The elements of an array initializer.
    fn eval_array(&mut self, e: &Expr, elem: Scalar) -> Result<Vec<Const>> {
        match &e.kind {
            ExprKind::Array(items) => items.iter().map(|x| self.eval(x, elem)).collect(),
            ExprKind::Repeat(x, len) => {
                let v = self.eval(x, elem)?;
                let n = match len {
                    crate::types::Len::Lit(n) => *n,
                    crate::types::Len::Param(p) => return Err(not_constant_name(p, x.span)),
                };
                if n > MAX_ELEMENTS {
                    return err(
                        e.span,
                        format!("a `#[device] const` array holds at most {MAX_ELEMENTS} elements"),
                    );
                }
                Ok(vec![v; n as usize])
            }
            ExprKind::Table(t) if self.tables[*t].elem == elem => Ok(self.tables[*t].values.clone()),
            ExprKind::Block(b) if tail(b).is_some() => self.eval_array(tail(b).expect("checked"), elem),
            _ => err(
                e.span,
                format!(
                    "an array `#[device] const` is an array literal of `{}` values, `[x; N]` or another such const",
                    elem.rust_name()
                ),
            ),
        }
    }

    /// The value of a constant length (an array's, a turbofish's).
    pub(super) fn const_len(&mut self, e: &Expr) -> Result<u64> {
        match self.eval(e, Scalar::Usize)? {
            Const::Int(n) if (0..=i128::from(u64::MAX)).contains(&n) => Ok(n as u64),
            _ => err(e.span, "a length is a non-negative integer"),
        }
    }

    /// The value of a constant expression of type `want` (unless it says
    /// its own), with Rust's semantics.
    pub(super) fn eval(&mut self, e: &Expr, want: Scalar) -> Result<Const> {
        let span = e.span;
        Ok(match &e.kind {
            ExprKind::Lit(Lit::Bool(b)) => Const::Bool(*b),
            ExprKind::Lit(Lit::Int(v, s)) => match s.unwrap_or(want) {
                t if t.is_int() => Const::Int(wrap_int(*v as i128, t)),
                Scalar::F32 | Scalar::F64 => {
                    return err(
                        span,
                        format!("expected `{}`; write a float literal such as `1.0`", want.rust_name()),
                    );
                }
                t => return err(span, format!("expected `{}`, found an integer", t.rust_name())),
            },
            ExprKind::Lit(Lit::Float(text, s)) => {
                let bad = || span.error("invalid float literal");
                match s.unwrap_or(want) {
                    Scalar::F32 => Const::F32(text.parse().map_err(|_| bad())?),
                    Scalar::F64 => Const::F64(text.parse().map_err(|_| bad())?),
                    t => return err(span, format!("expected `{}`, found a float", t.rust_name())),
                }
            }
            ExprKind::Unary(op, a) => {
                let t = own_type(a).unwrap_or(want);
                match (op, self.eval(a, t)?) {
                    (UnOp::Neg, Const::Int(i)) if t.is_signed() => Const::Int(wrap_int(-i, t)),
                    (UnOp::Neg, Const::F32(f)) => Const::F32(-f),
                    (UnOp::Neg, Const::F64(f)) => Const::F64(-f),
                    (UnOp::Not, Const::Bool(b)) => Const::Bool(!b),
                    (UnOp::Not, Const::Int(i)) => Const::Int(wrap_int(!i, t)),
                    _ => return err(span, format!("cannot apply this operator to `{}`", t.rust_name())),
                }
            }
            ExprKind::Binary(op, a, b) if op.is_lazy() => {
                let (x, y) = (self.eval(a, Scalar::Bool)?, self.eval(b, Scalar::Bool)?);
                fold::fold(*op, x, y, Scalar::Bool, Scalar::Bool, span)?
            }
            ExprKind::Binary(op, a, b) => {
                let (t, rt) = if op.is_shift() {
                    (own_type(a).unwrap_or(want), own_type(b).unwrap_or(Scalar::I32))
                } else {
                    let fallback = if op.is_comparison() { default_type(e) } else { want };
                    let t = own_type(a).or_else(|| own_type(b)).unwrap_or(fallback);
                    (t, t)
                };
                let (x, y) = (self.eval(a, t)?, self.eval(b, rt)?);
                if *op == BinOp::Rem && matches!(x, Const::F32(_) | Const::F64(_)) {
                    return err(span, "`%` of floats is not supported in a constant");
                }
                fold::fold(*op, x, y, t, rt, span)?
            }
            ExprKind::Cast(a, to) => {
                let Some(to) = to.scalar().filter(|s| !matches!(s, Scalar::F16 | Scalar::Bf16)) else {
                    return err(span, "a constant casts to a primitive number type");
                };
                let from = own_type(a).unwrap_or_else(|| default_type(a));
                fold::fold_cast(self.eval(a, from)?, from, to)
            }
            ExprKind::Index(base, index) => {
                let i = self.const_len(index)?;
                let values = match &base.kind {
                    ExprKind::Table(t) => self.tables[*t].values.clone(),
                    _ => self.eval_array(base, want)?,
                };
                match values.get(i as usize) {
                    Some(v) => *v,
                    None => {
                        return err(
                            index.span,
                            format!("index {i} is out of bounds for an array of {} elements", values.len()),
                        );
                    }
                }
            }
            ExprKind::Block(b) if tail(b).is_some() => self.eval(tail(b).expect("checked"), want)?,
            _ => return Err(not_constant(e)),
        })
    }

    /// The expression of a constant's value: a literal with its type's
    /// suffix (negative numbers negated, as `i32::MIN` is).
    fn literal(&mut self, c: Const, s: Scalar, loc: Loc) -> ExprKind {
        match c {
            Const::Bool(b) => ExprKind::Lit(Lit::Bool(b)),
            Const::Int(i) if i < 0 => {
                let magnitude = self.expr_node(ExprKind::Lit(Lit::Int(i.unsigned_abs(), Some(s))), loc);
                ExprKind::Unary(UnOp::Neg, Box::new(magnitude))
            }
            Const::Int(i) => ExprKind::Lit(Lit::Int(i as u128, Some(s))),
            // `{:e}` is the shortest text that reads back as the same value.
            Const::F32(f) => ExprKind::Lit(Lit::Float(format!("{f:e}"), Some(s))),
            Const::F64(f) => ExprKind::Lit(Lit::Float(format!("{f:e}"), Some(s))),
        }
    }

    /// The kernel's table with these elements (one per distinct content,
    /// named after the first const that has it).
    fn table(&mut self, key: &str, elem: Scalar, values: Vec<Const>) -> usize {
        if let Some(i) = self.tables.iter().position(|t| t.elem == elem && t.values == values) {
            return i;
        }
        let base = key.rsplit("::").next().unwrap_or(key);
        let taken = self.tables.iter().any(|t| t.name == base);
        let name = if taken {
            format!("{base}_{}", self.tables.len())
        } else {
            base.to_string()
        };
        self.tables.push(Table { name, elem, values });
        self.tables.len() - 1
    }
}

fn not_constant_name(name: &str, span: Loc) -> syn::Error {
    span.error(format!(
        "`{name}` is a const generic; a `#[device] const` cannot depend on one (Rust does not allow it either)"
    ))
}
