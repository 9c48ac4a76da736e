//! Types and names: gives every expression a type before lowering.
//!
//! Inference follows Rust where the subset needs it: unsuffixed literals take
//! their type from context (`let x: u32 = 0`, `a[0]`, `x + 1`) through
//! integer/float type variables, which default to `i32`/`f64` as in rustc.
//! The checks reject what rustc would accept but the DSL cannot lower (and
//! the basic errors rustc would report too, so no later stage sees ill-typed
//! input).
//!
//! The pass is split by construct, one `impl Checker` block per file:
//! `infer` (type variables, unification, the final types), `expr` (the
//! dispatch on expressions; operators, casts, fields, arrays, tuples),
//! `control` (`if`, loops, `break`, `return`), `pattern` (`let` and
//! `match` patterns), `place` (assignments, indexing), `call` (intrinsic
//! calls and methods; `instead`, what to write for the methods kernels
//! lack), `device` (device functions: calls, bodies,
//! recursion), `generic` (calls of generic device functions) and `closure`
//! (closures and their calls). This file holds the entry point, the checker's state, and
//! names and scopes.

mod call;
mod closure;
mod control;
mod device;
mod expr;
mod generic;
mod infer;
mod instead;
mod pattern;
mod place;
mod recover;
#[cfg(test)]
mod tests;

use super::ast::*;
use super::generics::Instance;
use super::typed::{IntrinsicId, Types};
use super::types::{Len, Scalar, StructTy, Ty};
use control::LoopScope;
use device::in_device;
use infer::{TyV, Var, VarKind};
use std::collections::HashMap;

type Result<T> = syn::Result<T>;

fn err<T>(loc: impl Into<Loc>, msg: impl std::fmt::Display) -> Result<T> {
    Err(loc.into().error(msg))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NameKind {
    Local,
    Param,
    /// A device function's `&mut` parameter (`&mut [T; N]`, `&mut Pair`,
    /// `&mut self`): the caller's array or struct.
    ByRef,
    ConstGeneric,
    LocalConst,
    /// A variable as a closure sees it: its value where the closure was
    /// created, read-only.
    Captured,
    /// A closure bound by `let` (its index in `Checker::closures`).
    Closure(usize),
}

#[derive(Clone, Debug)]
struct Binding {
    name: String,
    ty: TyV,
    mutable: bool,
    kind: NameKind,
    /// Bound by a failed statement (see `recover`).
    poisoned: bool,
}

struct Checker<'k> {
    kernel: &'k Kernel,
    /// The device function being checked (`None`: the kernel).
    current: Option<usize>,
    /// A device function's return type, for `return value`.
    ret: Option<TyV>,
    device_calls: HashMap<ExprId, usize>,
    device_lens: HashMap<ExprId, Vec<(String, Len)>>,
    /// Who calls which device function, and where: (caller, callee, call).
    edges: Vec<(Option<usize>, usize, Loc)>,
    vars: Vec<Var>,
    scopes: Vec<Vec<Binding>>,
    expr: Vec<Option<TyV>>,
    calls: HashMap<ExprId, IntrinsicId>,
    /// The loops around the expression being checked, innermost last.
    loop_labels: Vec<LoopScope>,
    /// Integer literals to range-check once their types are known:
    /// (id, magnitude, negated, span).
    int_lits: Vec<(ExprId, u128, bool, Loc)>,
    /// Values negated with unary `-`, which must not be unsigned.
    negated: Vec<(ExprId, Loc)>,
    kernel_name: String,
    closures: Vec<closure::ClosureInfo>,
    /// The instantiations of generic device functions that calls need and
    /// the kernel has not got.
    wanted: Vec<Instance>,
    /// Errors already reported whose checking went on: a statement that
    /// binds no name, or a method rustc has and kernels do not (its type
    /// is Rust's), so that one build shows every such error.
    errors: Vec<syn::Error>,
    /// How many statements failed or were not checked (see `recover`).
    taints: u32,
}

/// What checking a kernel gives: the types, or the instantiations of
/// generic device functions to parse first (then check again).
#[derive(Debug)]
pub enum Checked {
    Types(Types),
    Instantiate(Vec<Instance>),
    /// No error, but statements failed to parse (`Kernel::incomplete`):
    /// their errors are the kernel's.
    Incomplete,
}

pub fn check(k: &Kernel) -> Result<Checked> {
    let mut c = Checker {
        kernel: k,
        current: None,
        ret: None,
        device_calls: HashMap::new(),
        device_lens: HashMap::new(),
        edges: Vec::new(),
        vars: Vec::new(),
        scopes: vec![Vec::new()],
        expr: vec![None; k.expr_count as usize],
        calls: HashMap::new(),
        loop_labels: Vec::new(),
        int_lits: Vec::new(),
        negated: Vec::new(),
        kernel_name: k.name.clone(),
        closures: Vec::new(),
        wanted: Vec::new(),
        errors: Vec::new(),
        taints: 0,
    };
    let checked = c.check_kernel(k);
    if !c.wanted.is_empty() {
        return Ok(Checked::Instantiate(c.wanted));
    }
    let mut errors = std::mem::take(&mut c.errors).into_iter().chain(checked.err());
    if let Some(mut first) = errors.next() {
        first.extend(errors);
        return Err(first);
    }
    if k.incomplete {
        return Ok(Checked::Incomplete);
    }
    c.finish().map(Checked::Types)
}

impl Checker<'_> {
    /// Checks the kernel's body and its device functions. An error may come
    /// from a call of an instantiation not parsed yet (in `wanted`).
    fn check_kernel(&mut self, k: &Kernel) -> Result<()> {
        let c = self;
        for cp in &k.consts {
            c.bind(&cp.name, TyV::Ty(Ty::Scalar(cp.ty)), false, NameKind::ConstGeneric);
        }
        for p in &k.params {
            c.bind(&p.name, TyV::Ty(p.ty.clone()), p.mutable, NameKind::Param);
        }
        let body_ty = c.block(&k.body, None)?;
        if let TyV::Ty(t) = &body_ty
            && *t != Ty::Unit
        {
            let span = k.body.stmts.last().map(|s| s.span).unwrap_or(k.body.span);
            return err(
                span,
                "a kernel returns nothing; end the last statement with `;` and store results through a `&mut [T]` parameter",
            );
        }
        for (i, d) in k.devices.iter().enumerate() {
            let before = c.errors.len();
            let body = c.device_body(i, d);
            // The errors recorded in its body name it, as the one returned.
            let recorded: Vec<syn::Error> = c.errors.drain(before..).map(|e| in_device(e, d, &k.name)).collect();
            c.errors.extend(recorded);
            body.map_err(|e| in_device(e, d, &k.name))?;
        }
        c.reject_recursion()
    }
}

impl Checker<'_> {
    fn bind(&mut self, name: &str, ty: TyV, mutable: bool, kind: NameKind) {
        if name == "_" {
            return;
        }
        self.scopes.last_mut().expect("a scope is always open").push(Binding {
            name: name.to_string(),
            ty,
            mutable,
            kind,
            poisoned: false,
        });
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|b| b.name == name)
    }

    fn block(&mut self, b: &Block, hint: Option<&TyV>) -> Result<TyV> {
        self.scopes.push(Vec::new());
        let mut result = TyV::Ty(Ty::Unit);
        let n = b.stmts.len();
        let mut failed = b.failed.iter().peekable();
        for (i, s) in b.stmts.iter().enumerate() {
            while let Some(f) = failed.next_if(|f| f.at == i) {
                self.fail(&f.binds, &f.mentions);
            }
            let mentions = recover::mentions(s);
            if self.names_poisoned(&mentions) {
                self.fail(&recover::binds(s), &mentions);
                result = TyV::Never;
                continue;
            }
            let last = i + 1 == n;
            let depth = (self.scopes.len(), self.loop_labels.len());
            let taints = self.taints;
            match self.stmt(s, last, hint) {
                Ok(t) if self.taints == taints => result = t,
                // A statement with an error (in a block of its own, or
                // here): later ones are checked as far as they do not
                // depend on it (`recover`). Its value, if the block's,
                // is `!`, which fits any type.
                checked => {
                    self.scopes.truncate(depth.0);
                    self.loop_labels.truncate(depth.1);
                    self.errors.extend(checked.err());
                    self.fail(&recover::binds(s), &mentions);
                    result = TyV::Never;
                }
            }
        }
        for f in failed {
            self.fail(&f.binds, &f.mentions);
            result = TyV::Never;
        }
        self.scopes.pop();
        Ok(result)
    }

    /// One statement of a block; its type where it gives the block's value
    /// (`last`, no `;`), else `()` (or `!` for one that diverges).
    fn stmt(&mut self, s: &Stmt, last: bool, hint: Option<&TyV>) -> Result<TyV> {
        match &s.kind {
            StmtKind::Let {
                pat: LetPat::Name { name, .. },
                init:
                    init @ Expr {
                        kind: ExprKind::Closure { .. },
                        ..
                    },
                ..
            } => self.bind_closure(name, init),
            StmtKind::Let { pat, ty, init } => {
                let declared = ty.clone().map(TyV::Ty);
                let t = self.expr(init, declared.as_ref())?;
                let t = match &declared {
                    Some(d) => self.unify(d, &t, init.span)?,
                    None => t,
                };
                self.bind_let(pat, t)?;
            }
            StmtKind::Const { name, ty, init } => {
                let t = TyV::Ty(Ty::Scalar(*ty));
                let it = self.expr(init, Some(&t))?;
                self.unify(&t, &it, init.span)?;
                self.bind(name, t, false, NameKind::LocalConst);
            }
            StmtKind::Expr(e, semi) => {
                let t = self.expr(e, if last && !semi { hint } else { None })?;
                if last && !semi {
                    return Ok(t);
                } else if *semi && t == TyV::Never {
                    return Ok(TyV::Never);
                } else if !semi {
                    let t = self.shallow(&t);
                    if t != TyV::Ty(Ty::Unit) && t != TyV::Never {
                        return err(e.span, "expected `()`; add `;` after this expression");
                    }
                }
            }
        }
        Ok(TyV::Ty(Ty::Unit))
    }
}
