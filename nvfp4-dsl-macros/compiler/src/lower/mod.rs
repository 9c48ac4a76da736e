//! AST -> IR for one specialisation and one target.
//!
//! Const generics are substituted, so `if CONST` and every expression over
//! constants fold here (Rust semantics: wrapping integer arithmetic, IEEE
//! float arithmetic rounded to nearest). `#[unroll]` loops with constant
//! bounds are unrolled, one copy of the body per iteration with the loop
//! variable a constant, and so are loops over a local array's indices
//! (`unroll`). Nothing a constant condition removes is emitted.

mod arith;
mod call;
mod control;
pub mod emit;
mod expr;
pub mod fold;
mod memory;
mod params;
mod unroll;

use crate::ast::*;
use crate::attr::SpecValue;
use crate::ir::*;
use crate::target::Target;
use crate::typed::Types;
use crate::types::{Len, RegClass, Scalar, Ty};
use control::diverges;
use emit::{Binding, Lower, MemRef, Space, Val, mov_type};
use fold::{Const, Result, err};
use std::collections::HashSet;

#[derive(Debug)]
pub struct LowerOptions<'a> {
    pub target: Target,
    pub spec: &'a [(String, SpecValue)],
    pub entry: String,
    pub spec_name: String,
    pub launch_bounds: Option<(u32, Option<u32>)>,
    pub line_info: Option<String>,
    /// Compile `debug_assert!`s (the user's crate builds with
    /// `debug_assertions`).
    pub debug_assertions: bool,
}

pub fn lower(kernel: &Kernel, types: &Types, opts: LowerOptions<'_>) -> Result<Function> {
    let func = Function {
        entry: opts.entry,
        kernel: kernel.name.clone(),
        spec: opts.spec_name,
        target: opts.target,
        ptx_version: opts.target.min_ptx(),
        params: Vec::new(),
        regs: Vec::new(),
        shared: Vec::new(),
        tables: Vec::new(),
        dynamic_shared: None,
        launch_bounds: opts.launch_bounds,
        programmatic: false,
        file: opts.line_info.clone(),
        debug_checks: false,
        body: Vec::new(),
    };
    let mut l = Lower {
        kernel,
        types,
        target: opts.target,
        spec: opts.spec,
        func,
        out: vec![Vec::new()],
        scopes: vec![Vec::new()],
        loops: Vec::new(),
        loop_values: Vec::new(),
        next_label: 0,
        var_regs: HashSet::new(),
        line_info: opts.line_info.is_some(),
        returns: Vec::new(),
        debug_assertions: opts.debug_assertions,
        discarded: None,
        headers: Vec::new(),
    };
    l.prologue()?;
    l.block_stmts(&kernel.body)?;
    let body = l.out.pop().expect("the body list");
    l.func.body = body;
    Ok(l.func)
}

/// Whether a body asks a slice for its length (`x.len()`), so the kernel
/// loads the length parameters.
fn uses_len(b: &Block) -> bool {
    let mut found = false;
    walk_exprs(b, &mut |e| {
        found |= matches!(&e.kind, ExprKind::MethodCall { method, .. } if method == "len");
    });
    found
}

impl<'a> Lower<'a> {
    /// Fresh registers shaped like a value of type `t`.
    fn fresh(&mut self, t: &Ty) -> Result<Val> {
        Ok(match t {
            Ty::U32x4 => Val::Parts((0..4).map(|_| Val::Reg(self.reg(RegClass::B32))).collect()),
            Ty::Array { elem, len } => {
                let n = self.len_value(len);
                let mut parts = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    parts.push(self.fresh(elem)?);
                }
                Val::Parts(parts)
            }
            Ty::Tuple(elems) => {
                let mut parts = Vec::with_capacity(elems.len());
                for e in elems {
                    parts.push(self.fresh(e)?);
                }
                Val::Parts(parts)
            }
            Ty::Struct(st) => {
                let mut parts = Vec::with_capacity(st.fields.len());
                for (_, e) in &st.fields {
                    parts.push(self.fresh(e)?);
                }
                Val::Parts(parts)
            }
            Ty::Unit => Val::Unit,
            t => Val::Reg(self.reg(self.class_of(t))),
        })
    }

    /// Writes `src` into the registers of `dst` (same shape).
    fn assign_regs(&mut self, dst: &Val, src: &Val, t: &Ty) {
        if matches!(src, Val::Unit) {
            // A branch that diverged (`return`, `break`) has no value.
            return;
        }
        match (dst, t) {
            (Val::Parts(d), Ty::U32x4) => {
                let s = self.parts(src, 4);
                for (d, s) in d.iter().zip(s) {
                    self.assign_regs(d, &s, &Ty::Scalar(Scalar::U32));
                }
            }
            (Val::Parts(d), Ty::Array { elem, .. }) => {
                let s = self.parts(src, d.len());
                for (d, s) in d.iter().zip(s) {
                    self.assign_regs(d, &s, elem);
                }
            }
            (Val::Parts(d), Ty::Tuple(elems)) => {
                let s = self.parts(src, d.len());
                for ((d, s), t) in d.iter().zip(s).zip(elems) {
                    self.assign_regs(d, &s, t);
                }
            }
            (Val::Parts(d), Ty::Struct(st)) => {
                let s = self.parts(src, d.len());
                for ((d, s), (_, t)) in d.iter().zip(s).zip(&st.fields) {
                    self.assign_regs(d, &s, t);
                }
            }
            (Val::Reg(r), t) => {
                if let Val::Reg(s) = src
                    && s == r
                {
                    return;
                }
                let s = self.scalar_of(t);
                let src = match (src, t) {
                    (Val::Const(_), Ty::Scalar(_)) => self.operand(src, s),
                    _ => Operand::Reg(self.bits_reg(src, r.class)),
                };
                let op = match r.class {
                    RegClass::Pred => "mov.pred".to_string(),
                    c => format!("mov.{}", mov_type(c)),
                };
                self.emit(op, vec![(*r).into(), src]);
            }
            (Val::Unit, _) => {}
            (d, t) => unreachable!("cannot assign into {d:?} of {t}"),
        }
    }

    pub(crate) fn parts(&self, v: &Val, n: usize) -> Vec<Val> {
        match v {
            Val::Parts(p) => p.clone(),
            other => vec![other.clone(); n],
        }
    }

    fn copy_if_var(&mut self, v: Val, t: &Ty) -> Result<Val> {
        let mut regs = Vec::new();
        v.regs(&mut regs);
        if regs.iter().any(|r| self.var_regs.contains(r)) {
            let fresh = self.fresh(t)?;
            self.assign_regs(&fresh, &v, t);
            Ok(fresh)
        } else {
            Ok(v)
        }
    }

    /// `v` in fresh registers of the same classes.
    fn copy_val(&mut self, v: &Val) -> Val {
        match v {
            Val::Reg(r) => {
                let d = self.reg(r.class);
                let op = match r.class {
                    RegClass::Pred => "mov.pred".to_string(),
                    c => format!("mov.{}", mov_type(c)),
                };
                self.emit(op, vec![d.into(), (*r).into()]);
                Val::Reg(d)
            }
            Val::Parts(parts) => Val::Parts(parts.iter().map(|p| self.copy_val(p)).collect()),
            other => other.clone(),
        }
    }

    fn mark_var(&mut self, v: &Val) {
        let mut regs = Vec::new();
        v.regs(&mut regs);
        self.var_regs.extend(regs);
    }

    fn bind(&mut self, name: &str, mut val: Val) {
        if let Val::Mem(m) = &mut val {
            m.name = Some(name.to_string());
        }
        if name != "_" {
            self.scopes.last_mut().expect("a scope").push(Binding {
                name: name.to_string(),
                val,
            });
        }
    }

    fn lookup(&self, name: &str) -> Option<&Val> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|b| b.name == name)
            .map(|b| &b.val)
    }

    fn len_value(&self, len: &Len) -> u64 {
        match len {
            Len::Lit(n) => *n,
            // A const generic of the kernel or of the device function being
            // inlined, bound as a constant.
            Len::Param(p) => match self.lookup(p) {
                Some(Val::Const(Const::Int(v))) => *v as u64,
                _ => 0,
            },
        }
    }

    /// The length, if `e` is `a.len()` on a local array `a` (a constant).
    fn array_len_call(&self, e: &Expr) -> Option<u64> {
        self.len_call(e, false)
    }

    /// The length, if `e` is `a.len()` on a local array, or with `shared`
    /// on a static shared array too (its rows if 2-D): its type's.
    fn len_call(&self, e: &Expr, shared: bool) -> Option<u64> {
        let ExprKind::MethodCall { receiver, method, .. } = &e.kind else {
            return None;
        };
        match self.ty(receiver) {
            Ty::Array { len, .. } if method == "len" => Some(self.len_value(&len)),
            Ty::SharedArray { len, .. } if shared && method == "len" => Some(self.len_value(&len)),
            _ => None,
        }
    }

    fn ty(&self, e: &Expr) -> Ty {
        self.types.of(e).clone()
    }

    fn prologue(&mut self) -> Result<()> {
        for (name, value) in self.spec {
            let c = match value {
                SpecValue::Bool(b) => Const::Bool(*b),
                SpecValue::Int(i) => Const::Int(*i),
                // Substituted before parsing.
                SpecValue::Ty(_) => continue,
            };
            self.bind(name, Val::Const(c));
        }
        let load_len = uses_len(&self.kernel.body) || self.kernel.devices.iter().any(|d| uses_len(&d.body));
        let prefix = self.func.entry.clone();
        for p in &self.kernel.params {
            match &p.ty {
                Ty::Slice { elem, .. } => {
                    let pname = format!("{prefix}_param_{}", p.name);
                    self.func.params.push(super::ir::Param {
                        name: pname.clone(),
                        ptx: ParamTy::Scalar("u64"),
                    });
                    let lname = format!("{prefix}_param_{}_len", p.name);
                    self.func.params.push(super::ir::Param {
                        name: lname.clone(),
                        ptx: ParamTy::Scalar("u64"),
                    });
                    let raw = self.reg(RegClass::B64);
                    self.emit(
                        "ld.param.u64",
                        vec![raw.into(), Operand::Addr(Box::new(Operand::Sym(pname)), 0)],
                    );
                    let ptr = self.reg(RegClass::B64);
                    self.emit("cvta.to.global.u64", vec![ptr.into(), raw.into()]);
                    let len = if load_len {
                        let r = self.reg(RegClass::B64);
                        self.emit(
                            "ld.param.u64",
                            vec![r.into(), Operand::Addr(Box::new(Operand::Sym(lname)), 0)],
                        );
                        Some(Box::new(Val::Reg(r)))
                    } else {
                        None
                    };
                    let m = MemRef {
                        space: Space::Global,
                        base: ptr.into(),
                        offset: 0,
                        elem: (**elem).clone(),
                        len,
                        sub_slice: false,
                        name: None,
                    };
                    self.bind(&p.name, Val::Mem(m));
                }
                Ty::TensorMap => {
                    let pname = format!("{prefix}_param_{}", p.name);
                    self.func.params.push(super::ir::Param {
                        name: pname.clone(),
                        ptx: ParamTy::Bytes { align: 64, size: 128 },
                    });
                    self.bind(&p.name, Val::TensorMap(pname));
                }
                t => {
                    let pname = format!("{prefix}_param_{}", p.name);
                    self.func.params.push(super::ir::Param {
                        name: pname.clone(),
                        ptx: params::declared(t),
                    });
                    let v = self.load_param(t, &pname, 0)?;
                    if p.mutable {
                        self.mark_var(&v);
                    }
                    self.bind(&p.name, v);
                }
            }
        }
        Ok(())
    }

    /// Lowers `e`, whose value is dropped when `dropped` (`f(..);`, `let _ =
    /// f(..);`): a call there may skip making its result (an atomic becomes
    /// a `red`).
    fn expr_dropped(&mut self, e: &Expr, dropped: bool) -> Result<Val> {
        let outer = std::mem::replace(&mut self.discarded, dropped.then_some(e.id));
        let v = self.expr(e);
        self.discarded = outer;
        v
    }

    /// Lowers a block's statements in a new scope; returns the tail value.
    fn block_stmts(&mut self, b: &Block) -> Result<Val> {
        self.scopes.push(Vec::new());
        let mut result = Val::Unit;
        let n = b.stmts.len();
        for (i, s) in b.stmts.iter().enumerate() {
            result = Val::Unit;
            let header = self.stmt_header(s);
            for node in &header {
                self.push(node.clone());
            }
            self.headers.push(header);
            match &s.kind {
                StmtKind::Let { pat, init, .. } => {
                    let t = self.ty(init);
                    let v = self.expr_dropped(init, matches!(pat, LetPat::Wild))?;
                    self.bind_let(pat, v, &t)?;
                }
                StmtKind::Const { name, init, .. } => {
                    let v = self.expr(init)?;
                    if !matches!(v, Val::Const(_)) {
                        return err(init.span, "a local `const` needs a value known at compile time");
                    }
                    self.bind(name, v);
                }
                StmtKind::Expr(e, semi) => {
                    let v = self.expr_dropped(e, *semi || i + 1 < n)?;
                    if i + 1 == n && !semi {
                        result = v;
                    }
                    if diverges(e) {
                        self.headers.pop();
                        break;
                    }
                }
            }
            self.headers.pop();
        }
        self.scopes.pop();
        Ok(result)
    }

    /// After an `if`, `match` or `loop` that gives the value `v` to
    /// the statement around it, that statement's header again: what the
    /// statement does with the value (a store, say) is its own, not its
    /// branch's last statement's, in the PTX and in the emulator's errors.
    fn restate(&mut self, e: &Expr, v: Val) -> Val {
        if self.ty(e) != Ty::Unit
            && let Some(header) = self.headers.last()
        {
            for node in header.clone() {
                self.push(node);
            }
        }
        v
    }

    /// Binds a `let` pattern's names to the parts of `v`: a `mut` name gets
    /// registers of its own, another name shares `v`'s unless they belong to
    /// a variable (which may change later).
    fn bind_let(&mut self, pat: &LetPat, v: Val, t: &Ty) -> Result<()> {
        match pat {
            LetPat::Wild => {}
            // A closure (`let mut f = |..| ..` too) has no registers.
            LetPat::Name { name, .. } if matches!(v, Val::Closure(_)) => self.bind(name, v),
            LetPat::Name { name, mutable, .. } => {
                let v = if *mutable {
                    let fresh = self.fresh(t)?;
                    self.assign_regs(&fresh, &v, t);
                    self.mark_var(&fresh);
                    fresh
                } else {
                    self.copy_if_var(v, t)?
                };
                self.bind(name, v);
            }
            LetPat::Array(pats, span) => {
                let Ty::Array { elem, .. } = t else {
                    unreachable!("checked: an array")
                };
                for (k, p) in pats.iter().enumerate() {
                    let index = Val::Const(Const::Int(k as i128));
                    let v = self.index_read(v.clone(), index, &Ty::Scalar(Scalar::Usize), *span)?;
                    self.bind_let(p, v, elem)?;
                }
            }
            LetPat::Tuple(pats, _) => {
                let Ty::Tuple(elems) = t else {
                    unreachable!("checked: a tuple")
                };
                let parts = self.parts(&v, pats.len());
                for ((p, v), t) in pats.iter().zip(parts).zip(elems) {
                    self.bind_let(p, v, t)?;
                }
            }
        }
        Ok(())
    }

    /// The nodes that start statement `s`: its comment and, with line
    /// information, its `.loc`.
    fn stmt_header(&self, s: &Stmt) -> Vec<Node> {
        if let Some(r) = self.returns.last() {
            // A device function's statement: its line from its own `fn`.
            let rel = s.line.saturating_sub(r.fn_line);
            return vec![Node::Comment(format!("{}:{rel}: {}", r.name, s.text))];
        }
        let rel = s.line.saturating_sub(self.kernel.fn_line);
        let mut header = vec![Node::Comment(format!("{rel}: {}", s.text))];
        if self.line_info {
            header.push(Node::Loc {
                line: s.line as u32,
                col: s.col as u32,
            });
        }
        header
    }
}
