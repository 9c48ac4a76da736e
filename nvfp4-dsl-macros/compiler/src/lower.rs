//! AST -> IR for one specialisation and one target.
//!
//! Const generics are substituted, so `if CONST` and every expression over
//! constants fold here (Rust semantics: wrapping integer arithmetic, IEEE
//! float arithmetic rounded to nearest). `#[unroll]` loops with constant
//! bounds are unrolled, one copy of the body per iteration with the loop
//! variable a constant. Nothing a constant condition removes is emitted.

use super::ast::*;
use super::attr::SpecValue;
use super::intrinsics;
use super::ir::*;
use super::target::Target;
use super::typed::Types;
use super::types::{CacheHint, Len, RegClass, Scalar, Swizzle, Ty};
use std::collections::HashSet;

pub type Result<T> = syn::Result<T>;

pub fn err<T>(loc: impl Into<Loc>, msg: impl std::fmt::Display) -> Result<T> {
    Err(loc.into().error(msg))
}

/// Unrolling more copies than this is almost certainly a mistake (and would
/// make ptxas crawl).
const MAX_UNROLL: u64 = 4096;

/// A compile-time constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    /// An integer, normalised into its type's range.
    Int(i128),
    F32(f32),
    F64(f64),
}

/// Where a memory view points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    /// Another block's shared memory in the cluster (a `mapa` address).
    SharedCluster,
}

/// A view of memory: a global slice, a shared array or the dynamic block.
#[derive(Clone, Debug)]
pub struct MemRef {
    pub space: Space,
    /// A 64-bit generic-to-global converted pointer register (global), or a
    /// 32-bit shared address register or symbol (shared).
    pub base: Operand,
    /// Constant byte offset from `base`.
    pub offset: i64,
    pub elem: Ty,
    /// Number of elements, when known (global slices carry their length).
    pub len: Option<Box<Val>>,
}

/// The value of an expression during lowering.
#[derive(Clone, Debug)]
pub enum Val {
    Unit,
    Const(Const),
    Reg(Reg),
    /// A `u32x4` or a local array: one value per element.
    Parts(Vec<Val>),
    Mem(MemRef),
    Hint(CacheHint),
    Target(Target),
    Swizzle(Swizzle),
    /// A `TensorMap` parameter, by its `.param` name.
    TensorMap(String),
}

impl Val {
    fn regs(&self, out: &mut Vec<RegId>) {
        match self {
            Val::Reg(r) => out.push(r.id),
            Val::Parts(p) => p.iter().for_each(|v| v.regs(out)),
            _ => {}
        }
    }
}

/// An intrinsic call as its lowering function sees it.
#[derive(Debug)]
pub struct Call {
    pub args: Vec<(Val, Ty)>,
    pub span: Loc,
    /// Element type and length from a turbofish, when the intrinsic has one.
    pub generic_ty: Option<Ty>,
    pub generic_len: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
enum LoopTarget {
    /// A real loop: `break` and `continue` jump to its labels.
    Loop(u32),
    /// An unrolled loop: `break` leaves the outer block, `continue` the
    /// iteration's block.
    Unrolled { outer: u32, iteration: u32 },
}

#[derive(Clone, Debug)]
struct Binding {
    name: String,
    val: Val,
}

#[derive(Debug)]
pub struct Lower<'a> {
    kernel: &'a Kernel,
    types: &'a Types,
    pub target: Target,
    spec: &'a [(String, SpecValue)],
    pub func: Function,
    out: Vec<Vec<Node>>,
    scopes: Vec<Vec<Binding>>,
    /// The loops around the code being lowered, innermost last, with
    /// their labels.
    loops: Vec<(Option<String>, LoopTarget)>,
    next_label: u32,
    /// Registers owned by mutable variables: binding them to a new name
    /// copies, so a later assignment does not change the new name's value.
    var_regs: HashSet<RegId>,
    line_info: bool,
    /// The device functions being inlined, innermost last: where their
    /// `return` jumps and the registers their value goes to.
    returns: Vec<Return>,
}

/// An inlined device function's exit.
#[derive(Debug)]
struct Return {
    /// The block around the inlined body.
    block: u32,
    result: Val,
    ty: Ty,
    /// Its name and the line of its `fn`, for the statement comments.
    name: String,
    fn_line: usize,
}

#[derive(Debug)]
pub struct LowerOptions<'a> {
    pub target: Target,
    pub spec: &'a [(String, SpecValue)],
    pub entry: String,
    pub spec_name: String,
    pub launch_bounds: Option<(u32, Option<u32>)>,
    pub line_info: Option<String>,
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
        dynamic_shared: None,
        launch_bounds: opts.launch_bounds,
        programmatic: false,
        file: opts.line_info.clone(),
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
        next_label: 0,
        var_regs: HashSet::new(),
        line_info: opts.line_info.is_some(),
        returns: Vec::new(),
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

/// PTX immediate for an integer of type `s`.
pub fn int_imm(v: i128, s: Scalar) -> String {
    match s.bits() {
        64 if s.is_signed() => (v as i64).to_string(),
        64 => (v as u64).to_string(),
        _ if s.is_signed() => (v as i32).to_string(),
        _ => (v as u32).to_string(),
    }
}

pub fn f32_imm(v: f32) -> String {
    format!("0f{:08X}", v.to_bits())
}

pub fn f64_imm(v: f64) -> String {
    format!("0d{:016X}", v.to_bits())
}

/// Wraps an integer into the range of `s`, as Rust's wrapping arithmetic.
pub fn wrap_int(v: i128, s: Scalar) -> i128 {
    let bits = s.bits();
    let m = v & ((1i128 << bits) - 1);
    if s.is_signed() && m >= 1i128 << (bits - 1) {
        m - (1i128 << bits)
    } else {
        m
    }
}

impl<'a> Lower<'a> {
    // ----- emission helpers (also used by intrinsic lowerings) -----

    pub fn reg(&mut self, class: RegClass) -> Reg {
        self.func.new_reg(class)
    }

    pub fn emit(&mut self, op: impl Into<String>, args: Vec<Operand>) {
        self.push(Node::Inst(Inst {
            guard: None,
            op: op.into(),
            args,
        }));
    }

    /// Raises the module's PTX ISA version to at least `v` (major*10+minor).
    pub fn require_ptx(&mut self, v: u32) {
        self.func.ptx_version = self.func.ptx_version.max(v);
    }

    pub fn push(&mut self, n: Node) {
        self.out.last_mut().expect("an open node list").push(n);
    }

    /// Lowers `f` into a separate node list.
    pub fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<(Vec<Node>, T)> {
        self.out.push(Vec::new());
        let r = f(self);
        let nodes = self.out.pop().expect("pushed above");
        Ok((nodes, r?))
    }

    pub fn label(&mut self) -> u32 {
        self.next_label += 1;
        self.next_label
    }

    /// A PTX source operand for a scalar value: an immediate where PTX allows
    /// one, else a register.
    pub fn operand(&mut self, v: &Val, s: Scalar) -> Operand {
        match v {
            Val::Const(Const::Int(i)) if s.is_int() => Operand::Imm(int_imm(*i, s)),
            Val::Const(Const::F32(f)) if s == Scalar::F32 => Operand::Imm(f32_imm(*f)),
            Val::Const(Const::F64(f)) if s == Scalar::F64 => Operand::Imm(f64_imm(*f)),
            Val::Reg(r) => Operand::Reg(*r),
            _ => Operand::Reg(self.in_reg(v, s)),
        }
    }

    /// A register holding a scalar value.
    pub fn in_reg(&mut self, v: &Val, s: Scalar) -> Reg {
        match v {
            Val::Reg(r) => *r,
            Val::Const(c) => {
                let r = self.reg(s.reg_class());
                let src = match (c, s) {
                    (Const::Bool(b), _) => Operand::imm(u8::from(*b)),
                    (Const::Int(i), s) => Operand::Imm(int_imm(*i, s)),
                    (Const::F32(f), _) => Operand::Imm(f32_imm(*f)),
                    (Const::F64(f), _) => Operand::Imm(f64_imm(*f)),
                };
                let op = match s {
                    Scalar::Bool => "mov.pred".to_string(),
                    _ => format!("mov.{}", mov_type(s.reg_class())),
                };
                self.emit(op, vec![r.into(), src]);
                r
            }
            other => unreachable!("a scalar value, not {other:?}"),
        }
    }

    /// A register of class `class` with the value's bits (for `u32x4` parts
    /// and other b32 values).
    pub fn bits_reg(&mut self, v: &Val, class: RegClass) -> Reg {
        match v {
            Val::Reg(r) => *r,
            Val::Const(Const::Int(i)) => {
                let r = self.reg(class);
                let imm = match class {
                    RegClass::B64 => (*i as u64).to_string(),
                    _ => (*i as u32).to_string(),
                };
                self.emit(format!("mov.{}", mov_type(class)), vec![r.into(), Operand::Imm(imm)]);
                r
            }
            other => unreachable!("a bit pattern, not {other:?}"),
        }
    }

    pub fn scalar_of(&self, t: &Ty) -> Scalar {
        match t {
            Ty::Scalar(s) => *s,
            Ty::F16x2 | Ty::Bf16x2 | Ty::Fp4x2 | Ty::E4m3 | Ty::E4m3x2 | Ty::InstrDesc => Scalar::U32,
            Ty::SmemDesc | Ty::WgmmaDesc => Scalar::U64,
            other => unreachable!("not a scalar type: {other}"),
        }
    }

    /// Register class of a single-register type.
    pub fn class_of(&self, t: &Ty) -> RegClass {
        match t {
            Ty::Scalar(s) => s.reg_class(),
            Ty::F16x2 | Ty::Bf16x2 | Ty::Fp4x2 | Ty::E4m3 | Ty::E4m3x2 | Ty::InstrDesc => RegClass::B32,
            Ty::SmemDesc | Ty::WgmmaDesc => RegClass::B64,
            other => unreachable!("not a single-register type: {other}"),
        }
    }

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

    fn parts(&self, v: &Val, n: usize) -> Vec<Val> {
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

    fn mark_var(&mut self, v: &Val) {
        let mut regs = Vec::new();
        v.regs(&mut regs);
        self.var_regs.extend(regs);
    }

    fn bind(&mut self, name: &str, val: Val) {
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
        let ExprKind::MethodCall { receiver, method, .. } = &e.kind else {
            return None;
        };
        match self.ty(receiver) {
            Ty::Array { len, .. } if method == "len" => Some(self.len_value(&len)),
            _ => None,
        }
    }

    fn ty(&self, e: &Expr) -> Ty {
        self.types.of(e).clone()
    }

    // ----- kernel structure -----

    fn prologue(&mut self) -> Result<()> {
        for (name, value) in self.spec {
            let c = match value {
                SpecValue::Bool(b) => Const::Bool(*b),
                SpecValue::Int(i) => Const::Int(*i),
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
                        ptx: "u64",
                    });
                    let lname = format!("{prefix}_param_{}_len", p.name);
                    self.func.params.push(super::ir::Param {
                        name: lname.clone(),
                        ptx: "u64",
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
                    };
                    self.bind(&p.name, Val::Mem(m));
                }
                Ty::TensorMap => {
                    let pname = format!("{prefix}_param_{}", p.name);
                    self.func.params.push(super::ir::Param {
                        name: pname.clone(),
                        ptx: "tensormap",
                    });
                    self.bind(&p.name, Val::TensorMap(pname));
                }
                t => {
                    let pname = format!("{prefix}_param_{}", p.name);
                    let layout = t.mem_layout().unwrap_or(super::types::MemLayout {
                        bytes: 1,
                        ptx: "u8",
                        vec: 1,
                    });
                    let v = if *t == Ty::U32x4 {
                        self.func.params.push(super::ir::Param {
                            name: pname.clone(),
                            ptx: "u32x4",
                        });
                        let v = self.fresh(t)?;
                        let regs = self.parts(&v, 4).iter().map(|p| self.operand_reg(p)).collect();
                        self.emit(
                            "ld.param.v4.u32",
                            vec![Operand::Vec(regs), Operand::Addr(Box::new(Operand::Sym(pname)), 0)],
                        );
                        v
                    } else if *t == Ty::Scalar(Scalar::Bool) {
                        self.func.params.push(super::ir::Param {
                            name: pname.clone(),
                            ptx: "u8",
                        });
                        let byte = self.reg(RegClass::B32);
                        self.emit(
                            "ld.param.u8",
                            vec![byte.into(), Operand::Addr(Box::new(Operand::Sym(pname)), 0)],
                        );
                        let p = self.reg(RegClass::Pred);
                        self.emit("setp.ne.u32", vec![p.into(), byte.into(), Operand::imm(0)]);
                        Val::Reg(p)
                    } else {
                        self.func.params.push(super::ir::Param {
                            name: pname.clone(),
                            ptx: layout.ptx,
                        });
                        let r = self.reg(self.class_of(t));
                        self.emit(
                            format!("ld.param.{}", layout.ptx),
                            vec![r.into(), Operand::Addr(Box::new(Operand::Sym(pname)), 0)],
                        );
                        Val::Reg(r)
                    };
                    if p.mutable {
                        self.mark_var(&v);
                    }
                    self.bind(&p.name, v);
                }
            }
        }
        Ok(())
    }

    fn operand_reg(&self, v: &Val) -> Operand {
        match v {
            Val::Reg(r) => Operand::Reg(*r),
            other => unreachable!("a register, not {other:?}"),
        }
    }

    /// Lowers a block's statements in a new scope; returns the tail value.
    fn block_stmts(&mut self, b: &Block) -> Result<Val> {
        self.scopes.push(Vec::new());
        let mut result = Val::Unit;
        let n = b.stmts.len();
        for (i, s) in b.stmts.iter().enumerate() {
            result = Val::Unit;
            self.stmt_header(s);
            match &s.kind {
                StmtKind::Let { pat, init, .. } => {
                    let t = self.ty(init);
                    let v = self.expr(init)?;
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
                    let v = self.expr(e)?;
                    if i + 1 == n && !semi {
                        result = v;
                    }
                    if diverges(e) {
                        break;
                    }
                }
            }
        }
        self.scopes.pop();
        Ok(result)
    }

    /// Binds a `let` pattern's names to the parts of `v`: a `mut` name gets
    /// registers of its own, another name shares `v`'s unless they belong to
    /// a variable (which may change later).
    fn bind_let(&mut self, pat: &LetPat, v: Val, t: &Ty) -> Result<()> {
        match pat {
            LetPat::Wild => {}
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

    fn stmt_header(&mut self, s: &Stmt) {
        if let Some(r) = self.returns.last() {
            // A device function's statement: its line from its own `fn`.
            let rel = s.line.saturating_sub(r.fn_line);
            let comment = format!("{}:{rel}: {}", r.name, s.text);
            self.push(Node::Comment(comment));
            return;
        }
        let rel = s.line.saturating_sub(self.kernel.fn_line);
        self.push(Node::Comment(format!("{rel}: {}", s.text)));
        if self.line_info {
            self.push(Node::Loc {
                line: s.line as u32,
                col: s.col as u32,
            });
        }
    }

    // ----- expressions -----

    pub fn expr(&mut self, e: &Expr) -> Result<Val> {
        match &e.kind {
            ExprKind::Lit(l) => Ok(Val::Const(self.lit(l, &self.ty(e), e.span)?)),
            ExprKind::Var(name) => match self.lookup(name) {
                Some(v) => Ok(v.clone()),
                None => err(e.span, format!("unknown name `{name}`")),
            },
            ExprKind::CacheHint(h) => Ok(Val::Hint(*h)),
            ExprKind::Target(t) => Ok(Val::Target(*t)),
            ExprKind::Swizzle(s) => Ok(Val::Swizzle(*s)),
            ExprKind::Unary(op, inner) => {
                let t = self.ty(e);
                let v = self.expr(inner)?;
                self.unary(*op, v, &t)
            }
            ExprKind::Binary(op, l, r) => self.binary_expr(*op, l, r, e),
            ExprKind::Assign(place, value) => {
                let v = self.expr(value)?;
                self.store_place(place, v)?;
                Ok(Val::Unit)
            }
            ExprKind::AssignOp(op, place, value) => {
                let t = self.ty(place);
                let rhs = self.expr(value)?;
                let rt = self.ty(value);
                let cur = self.expr(place)?;
                // A variable is updated in place: `add.s32 %r1, %r1, 1`.
                let dst = match (&cur, &place.kind) {
                    (Val::Reg(r), ExprKind::Var(_)) => Some(*r),
                    _ => None,
                };
                let s = self.scalar_of(&t);
                let v = self.binary(*op, cur, rhs, s, rt.scalar(), dst, e.span)?;
                if dst.is_none() || !matches!(v, Val::Reg(r) if Some(r) == dst) {
                    self.store_place(place, v)?;
                }
                Ok(Val::Unit)
            }
            ExprKind::Cast(inner, to) => {
                let from = self.ty(inner);
                let v = self.expr(inner)?;
                let (Some(fs), Some(ts)) = (from.scalar(), to.scalar()) else {
                    return err(e.span, format!("cannot cast `{from}` as `{to}`"));
                };
                Ok(self.cast(v, fs, ts))
            }
            ExprKind::Index(base, index) => {
                let b = self.expr(base)?;
                let i = self.expr(index)?;
                let it = self.ty(index);
                self.index_read(b, i, &it, index.span)
            }
            ExprKind::SliceFrom { base, start, .. } => {
                let Val::Mem(m) = self.expr(base)? else {
                    unreachable!("checked: a slice")
                };
                let s = self.expr(start)?;
                Ok(Val::Mem(self.slice_from(m, s)))
            }
            ExprKind::Field(base, field) => {
                let bt = self.ty(base);
                let b = self.expr(base)?;
                Ok(self.field(b, &bt, field))
            }
            // The variable's own registers: the intrinsic updates them in place.
            ExprKind::RefMut(var) => self.expr(var),
            ExprKind::Call { args, generics, .. } => self.call(e, None, args, generics),
            ExprKind::MethodCall { receiver, .. } if self.array_len_call(e).is_some() => {
                let n = self.array_len_call(e).expect("an array's len()");
                self.expr(receiver)?;
                Ok(Val::Const(Const::Int(n.into())))
            }
            ExprKind::MethodCall { receiver, args, .. } => self.call(e, Some(receiver), args, &[]),
            ExprKind::If { cond, then, els } => self.if_expr(e, cond, then, els.as_deref()),
            ExprKind::While { cond, body, label } => {
                let id = self.label();
                self.loops.push((label.clone(), LoopTarget::Loop(id)));
                let (body_nodes, ()) = self.nested(|l| {
                    let c = l.expr(cond)?;
                    match c {
                        Val::Const(Const::Bool(true)) => {}
                        Val::Const(Const::Bool(false)) => l.push(Node::Break(id)),
                        v => {
                            let p = l.in_reg(&v, Scalar::Bool);
                            l.push(Node::If {
                                cond: p,
                                negate: true,
                                then: vec![Node::Break(id)],
                                els: vec![],
                            });
                        }
                    }
                    l.block_stmts(body)?;
                    Ok(())
                })?;
                self.loops.pop();
                self.push(Node::Loop {
                    id,
                    body: body_nodes,
                    continuing: vec![],
                });
                Ok(Val::Unit)
            }
            ExprKind::Loop(body, label) => {
                let id = self.label();
                self.loops.push((label.clone(), LoopTarget::Loop(id)));
                let (nodes, _) = self.nested(|l| l.block_stmts(body))?;
                self.loops.pop();
                self.push(Node::Loop {
                    id,
                    body: nodes,
                    continuing: vec![],
                });
                Ok(Val::Unit)
            }
            ExprKind::For(f) => {
                // A loop to a local array's length indexes the array, which
                // lives in registers: it is unrolled.
                if f.unroll || self.array_len_call(&f.end).is_some() {
                    self.unrolled_for(
                        f,
                        Loc {
                            start: f.start.span.start,
                            end: f.end.span.end,
                        },
                    )
                } else {
                    self.for_loop(f, e)
                }
            }
            ExprKind::Break(label) => {
                match self.loop_target(label) {
                    Some(LoopTarget::Loop(id)) => self.push(Node::Break(id)),
                    Some(LoopTarget::Unrolled { outer, .. }) => self.push(Node::ExitBlock(outer)),
                    None => return err(e.span, "`break` outside a loop"),
                }
                Ok(Val::Unit)
            }
            ExprKind::Continue(label) => {
                match self.loop_target(label) {
                    Some(LoopTarget::Loop(id)) => self.push(Node::Continue(id)),
                    Some(LoopTarget::Unrolled { iteration, .. }) => self.push(Node::ExitBlock(iteration)),
                    None => return err(e.span, "`continue` outside a loop"),
                }
                Ok(Val::Unit)
            }
            ExprKind::Return(value) => {
                let Some(ret) = self.returns.last() else {
                    self.push(Node::Return);
                    return Ok(Val::Unit);
                };
                let (block, result, ty) = (ret.block, ret.result.clone(), ret.ty.clone());
                if let Some(v) = value {
                    let v = self.expr(v)?;
                    self.assign_regs(&result, &v, &ty);
                }
                self.push(Node::ExitBlock(block));
                Ok(Val::Unit)
            }
            ExprKind::Block(b) => self.block_stmts(b),
            ExprKind::Array(items) => {
                let mut parts = Vec::with_capacity(items.len());
                for it in items {
                    parts.push(self.expr(it)?);
                }
                Ok(Val::Parts(parts))
            }
            ExprKind::Repeat(item, len) => {
                let v = self.expr(item)?;
                let n = self.len_value(len);
                if n > MAX_UNROLL {
                    return err(
                        e.span,
                        format!("a local array of {n} elements would need {n} registers; use shared memory"),
                    );
                }
                Ok(Val::Parts(vec![v; n as usize]))
            }
            ExprKind::Match { scrutinee, arms } => self.match_expr(e, scrutinee, arms),
            ExprKind::Tuple(items) => {
                let mut parts = Vec::with_capacity(items.len());
                for it in items {
                    parts.push(self.expr(it)?);
                }
                Ok(Val::Parts(parts))
            }
            ExprKind::TupleField(base, i) => {
                let b = self.expr(base)?;
                Ok(self.tuple_part(b, *i))
            }
            ExprKind::StructLit { ty, fields } => {
                // Evaluated in the order written, stored in declaration order.
                let mut values = Vec::with_capacity(fields.len());
                for (name, value, _) in fields {
                    values.push((name, self.expr(value)?));
                }
                let parts = ty
                    .fields
                    .iter()
                    .map(|(n, _)| {
                        values
                            .iter()
                            .find(|(f, _)| *f == n)
                            .map(|(_, v)| v.clone())
                            .expect("checked: every field given")
                    })
                    .collect();
                Ok(Val::Parts(parts))
            }
            ExprKind::InlinePtx { ret, template, args } => {
                let mut inputs = Vec::new();
                for a in args {
                    let t = self.ty(a);
                    let v = self.expr(a)?;
                    let op = match &t {
                        Ty::Scalar(s) => self.operand(&v, *s),
                        _ => Operand::Reg(self.bits_reg(&v, RegClass::B32)),
                    };
                    inputs.push(op);
                }
                let (dest, val) = match ret {
                    Ty::Unit => (None, Val::Unit),
                    t => {
                        let r = self.reg(self.class_of(t));
                        (Some(Operand::Reg(r)), Val::Reg(r))
                    }
                };
                check_template(template, dest.is_some(), inputs.len(), e.span)?;
                self.push(Node::Raw {
                    template: template.clone(),
                    dest,
                    inputs,
                });
                Ok(val)
            }
        }
    }

    fn lit(&self, l: &Lit, t: &Ty, span: Loc) -> Result<Const> {
        Ok(match (l, t.scalar()) {
            (Lit::Bool(b), _) => Const::Bool(*b),
            (Lit::Int(v, _), Some(s)) if s.is_int() => Const::Int(wrap_int(*v as i128, s)),
            (Lit::Float(text, _), Some(Scalar::F32)) => {
                Const::F32(text.parse().map_err(|_| span.error("invalid float literal"))?)
            }
            (Lit::Float(text, _), Some(Scalar::F64)) => {
                Const::F64(text.parse().map_err(|_| span.error("invalid float literal"))?)
            }
            _ => return err(span, format!("a literal cannot have type `{t}`")),
        })
    }

    fn unary(&mut self, op: UnOp, v: Val, t: &Ty) -> Result<Val> {
        let s = self.scalar_of(t);
        if let Val::Const(c) = v {
            return Ok(Val::Const(match (op, c) {
                (UnOp::Neg, Const::Int(i)) => Const::Int(wrap_int(-i, s)),
                (UnOp::Neg, Const::F32(f)) => Const::F32(-f),
                (UnOp::Neg, Const::F64(f)) => Const::F64(-f),
                (UnOp::Not, Const::Bool(b)) => Const::Bool(!b),
                (UnOp::Not, Const::Int(i)) => Const::Int(wrap_int(!i, s)),
                (op, c) => unreachable!("checked: {op:?} {c:?}"),
            }));
        }
        let src = self.operand(&v, s);
        let d = self.reg(s.reg_class());
        match (op, s) {
            (UnOp::Neg, Scalar::F16 | Scalar::Bf16) => {
                // Rust's float negation flips the sign bit, NaN included;
                // PTX's `neg` of a NaN gives the canonical NaN on the H100
                // unless ptxas folds it away (`-(-x)`), so bits do it.
                self.emit("xor.b16", vec![d.into(), src, Operand::imm("0x8000")]);
            }
            (UnOp::Neg, Scalar::F32 | Scalar::F64) => {
                let (class, b, sign) = if s == Scalar::F64 {
                    (RegClass::B64, "b64", "0x8000000000000000")
                } else {
                    (RegClass::B32, "b32", "0x80000000")
                };
                let bits = self.reg(class);
                self.emit(format!("mov.{b}"), vec![bits.into(), src]);
                self.emit(format!("xor.{b}"), vec![bits.into(), bits.into(), Operand::imm(sign)]);
                self.emit(format!("mov.{b}"), vec![d.into(), bits.into()]);
            }
            (UnOp::Neg, s) => self.emit(format!("neg.{}", s.ptx_arith()), vec![d.into(), src]),
            (UnOp::Not, Scalar::Bool) => self.emit("not.pred", vec![d.into(), src]),
            (UnOp::Not, s) => {
                self.emit(format!("not.{}", bit_type(s)), vec![d.into(), src]);
                return Ok(self.normalize(Val::Reg(d), s));
            }
        }
        Ok(Val::Reg(d))
    }

    /// Re-truncates a `u8`/`u16` value held in a 32-bit register.
    fn normalize(&mut self, v: Val, s: Scalar) -> Val {
        let mask = match s {
            Scalar::U8 => 0xFF,
            Scalar::U16 => 0xFFFF,
            _ => return v,
        };
        let Val::Reg(r) = v else { return v };
        self.emit("and.b32", vec![r.into(), r.into(), Operand::imm(mask)]);
        Val::Reg(r)
    }

    fn binary_expr(&mut self, op: BinOp, l: &Expr, r: &Expr, e: &Expr) -> Result<Val> {
        let lt = self.ty(l);
        if op.is_lazy() {
            return self.lazy(op, l, r);
        }
        let lv = self.expr(l)?;
        let rv = self.expr(r)?;
        let s = self.scalar_of(&lt);
        let rs = self.ty(r).scalar();
        self.binary(op, lv, rv, s, rs, None, e.span)
    }

    /// `a && b`, `a || b`: the right side runs only when needed, unless it is
    /// free of effects (then both are computed and combined).
    fn lazy(&mut self, op: BinOp, l: &Expr, r: &Expr) -> Result<Val> {
        let lv = self.expr(l)?;
        let and = op == BinOp::And;
        match lv {
            Val::Const(Const::Bool(b)) => {
                if b == and {
                    self.expr(r)
                } else {
                    Ok(Val::Const(Const::Bool(b)))
                }
            }
            lv => {
                if is_pure(r) {
                    let rv = self.expr(r)?;
                    if let Val::Const(Const::Bool(b)) = rv {
                        return Ok(if b == and { lv } else { Val::Const(Const::Bool(b)) });
                    }
                    let lr = self.in_reg(&lv, Scalar::Bool);
                    let rr = self.in_reg(&rv, Scalar::Bool);
                    let d = self.reg(RegClass::Pred);
                    self.emit(
                        if and { "and.pred" } else { "or.pred" },
                        vec![d.into(), lr.into(), rr.into()],
                    );
                    return Ok(Val::Reg(d));
                }
                let lr = self.in_reg(&lv, Scalar::Bool);
                let d = self.reg(RegClass::Pred);
                self.emit("mov.pred", vec![d.into(), lr.into()]);
                let (then, ()) = self.nested(|lo| {
                    let rv = lo.expr(r)?;
                    lo.assign_regs(&Val::Reg(d), &rv, &Ty::Scalar(Scalar::Bool));
                    Ok(())
                })?;
                self.push(Node::If {
                    cond: d,
                    negate: !and,
                    then,
                    els: vec![],
                });
                Ok(Val::Reg(d))
            }
        }
    }

    /// A binary operation on scalars of type `s` (`rs` is the right side's
    /// type, which differs only for shifts). Writes into `dst` when given.
    #[allow(clippy::too_many_arguments)]
    pub fn binary(
        &mut self,
        op: BinOp,
        l: Val,
        r: Val,
        s: Scalar,
        rs: Option<Scalar>,
        dst: Option<Reg>,
        span: Loc,
    ) -> Result<Val> {
        let rs = rs.unwrap_or(s);
        if let (Val::Const(a), Val::Const(b)) = (&l, &r) {
            return fold(op, *a, *b, s, rs, span).map(Val::Const);
        }
        if let Some(v) = self.identity(op, &l, &r, s) {
            return Ok(v);
        }
        let class = if op.is_comparison() {
            RegClass::Pred
        } else {
            s.reg_class()
        };
        let d = dst.unwrap_or_else(|| self.reg(class));
        if op.is_shift() {
            // Rust (release) masks the shift amount to the type's width; PTX
            // would clamp instead.
            let amount = match r {
                Val::Const(Const::Int(n)) => Operand::imm((n as u32) & (s.bits() - 1)),
                rv => {
                    let rr = self.in_reg(&rv, rs);
                    let r32 = if rr.class == RegClass::B64 {
                        let t = self.reg(RegClass::B32);
                        self.emit("cvt.u32.u64", vec![t.into(), rr.into()]);
                        t
                    } else {
                        rr
                    };
                    let m = self.reg(RegClass::B32);
                    self.emit("and.b32", vec![m.into(), r32.into(), Operand::imm(s.bits() - 1)]);
                    Operand::Reg(m)
                }
            };
            let lo = self.operand(&l, s);
            let opname = match (op, s.is_signed()) {
                (BinOp::Shl, _) => format!("shl.{}", bit_type(s)),
                (_, true) => format!("shr.{}", s.ptx_arith()),
                (_, false) => format!("shr.{}", if s.bits() == 64 { "u64" } else { "u32" }),
            };
            self.emit(opname, vec![d.into(), lo, amount]);
            return Ok(if op == BinOp::Shl {
                self.normalize(Val::Reg(d), s)
            } else {
                Val::Reg(d)
            });
        }
        if matches!(s, Scalar::F16 | Scalar::Bf16) && op == BinOp::Div {
            // No half-precision division in PTX: divide in f32 and round once
            // more; f32 carries enough bits that this equals the correctly
            // rounded half quotient.
            let name = s.ptx_arith();
            let a = self.in_reg(&l, s);
            let b = self.in_reg(&r, s);
            let (fa, fb, fq) = (
                self.reg(RegClass::F32),
                self.reg(RegClass::F32),
                self.reg(RegClass::F32),
            );
            self.emit(format!("cvt.f32.{name}"), vec![fa.into(), a.into()]);
            self.emit(format!("cvt.f32.{name}"), vec![fb.into(), b.into()]);
            self.emit("div.rn.f32", vec![fq.into(), fa.into(), fb.into()]);
            self.emit(format!("cvt.rn.{name}.f32"), vec![d.into(), fq.into()]);
            return Ok(Val::Reg(d));
        }
        if s == Scalar::Bool {
            let a = self.in_reg(&l, s);
            let b = self.in_reg(&r, s);
            match op {
                BinOp::BitAnd => self.emit("and.pred", vec![d.into(), a.into(), b.into()]),
                BinOp::BitOr => self.emit("or.pred", vec![d.into(), a.into(), b.into()]),
                BinOp::BitXor | BinOp::Ne => self.emit("xor.pred", vec![d.into(), a.into(), b.into()]),
                BinOp::Eq => {
                    self.emit("xor.pred", vec![d.into(), a.into(), b.into()]);
                    self.emit("not.pred", vec![d.into(), d.into()]);
                }
                other => unreachable!("checked: bool {other:?}"),
            }
            return Ok(Val::Reg(d));
        }
        if let Some(v) = self.div_by_power_of_two(op, &l, &r, s, d) {
            return Ok(v);
        }
        let a = self.operand(&l, s);
        let b = self.operand(&r, s);
        let t = s.ptx_arith();
        let float = s.is_float();
        let opname = match op {
            BinOp::Add if float => format!("add.rn.{t}"),
            BinOp::Sub if float => format!("sub.rn.{t}"),
            BinOp::Mul if float => format!("mul.rn.{t}"),
            BinOp::Div if float => format!("div.rn.{t}"),
            BinOp::Add => format!("add.{t}"),
            BinOp::Sub => format!("sub.{t}"),
            BinOp::Mul => format!("mul.lo.{t}"),
            BinOp::Div => format!("div.{t}"),
            BinOp::Rem => format!("rem.{t}"),
            BinOp::BitAnd => format!("and.{}", bit_type(s)),
            BinOp::BitOr => format!("or.{}", bit_type(s)),
            BinOp::BitXor => format!("xor.{}", bit_type(s)),
            BinOp::Eq => format!("setp.eq.{t}"),
            BinOp::Ne if float => format!("setp.neu.{t}"),
            BinOp::Ne => format!("setp.ne.{t}"),
            BinOp::Lt => format!("setp.lt.{t}"),
            BinOp::Le => format!("setp.le.{t}"),
            BinOp::Gt => format!("setp.gt.{t}"),
            BinOp::Ge => format!("setp.ge.{t}"),
            other => unreachable!("handled above: {other:?}"),
        };
        self.emit(opname, vec![d.into(), a, b]);
        Ok(if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
            self.normalize(Val::Reg(d), s)
        } else {
            Val::Reg(d)
        })
    }

    /// Integer `x / 2^k` and `x % 2^k` (k >= 1) as shifts and masks with
    /// Rust's truncating semantics: ptxas does not strength-reduce `div`
    /// and `rem` by constants itself (it emits the generic division).
    fn div_by_power_of_two(&mut self, op: BinOp, l: &Val, r: &Val, s: Scalar, d: Reg) -> Option<Val> {
        let Val::Const(Const::Int(divisor)) = *r else {
            return None;
        };
        if !matches!(op, BinOp::Div | BinOp::Rem) || !s.is_int() || divisor < 2 || divisor.count_ones() != 1 {
            return None;
        }
        let k = divisor.trailing_zeros();
        let bits = s.bits().max(32);
        let b = bit_type(s);
        let x = self.operand(l, s);
        if !s.is_signed() {
            if op == BinOp::Div {
                self.emit(
                    format!("shr.{}", if bits == 64 { "u64" } else { "u32" }),
                    vec![d.into(), x, Operand::imm(k)],
                );
            } else {
                let mask = int_imm(divisor - 1, s);
                self.emit(format!("and.{b}"), vec![d.into(), x, Operand::Imm(mask)]);
            }
            return Some(Val::Reg(d));
        }
        // Signed: add 2^k - 1 to negative values so the arithmetic shift
        // rounds toward zero, as Rust's division does.
        let t = s.ptx_arith();
        let class = s.reg_class();
        let sign = self.reg(class);
        self.emit(format!("shr.{t}"), vec![sign.into(), x.clone(), Operand::imm(bits - 1)]);
        let bias = self.reg(class);
        let unsigned = if bits == 64 { "u64" } else { "u32" };
        self.emit(
            format!("shr.{unsigned}"),
            vec![bias.into(), sign.into(), Operand::imm(bits - k)],
        );
        let biased = self.reg(class);
        self.emit(format!("add.{t}"), vec![biased.into(), x.clone(), bias.into()]);
        if op == BinOp::Div {
            self.emit(format!("shr.{t}"), vec![d.into(), biased.into(), Operand::imm(k)]);
        } else {
            let floor = self.reg(class);
            self.emit(
                format!("and.{b}"),
                vec![floor.into(), biased.into(), Operand::Imm(int_imm(-divisor, s))],
            );
            self.emit(format!("sub.{t}"), vec![d.into(), x, floor.into()]);
        }
        Some(Val::Reg(d))
    }

    /// Algebraic identities that need no instruction (`x + 0`, `x * 1`, ...),
    /// for integers only (floats keep `-0.0 + 0.0` semantics).
    fn identity(&self, op: BinOp, l: &Val, r: &Val, s: Scalar) -> Option<Val> {
        if !s.is_int() {
            return None;
        }
        let is = |v: &Val, n: i128| matches!(v, Val::Const(Const::Int(x)) if *x == n);
        match op {
            BinOp::Add | BinOp::BitOr | BinOp::BitXor if is(r, 0) => Some(l.clone()),
            BinOp::Add | BinOp::BitOr | BinOp::BitXor if is(l, 0) => Some(r.clone()),
            BinOp::Sub | BinOp::Shl | BinOp::Shr if is(r, 0) => Some(l.clone()),
            BinOp::Mul | BinOp::Div if is(r, 1) => Some(l.clone()),
            BinOp::Mul if is(l, 1) => Some(r.clone()),
            BinOp::Mul if is(r, 0) || is(l, 0) => Some(Val::Const(Const::Int(0))),
            _ => None,
        }
    }

    /// `x as T` with Rust's semantics.
    pub fn cast(&mut self, v: Val, from: Scalar, to: Scalar) -> Val {
        if let Val::Const(c) = v {
            return Val::Const(fold_cast(c, from, to));
        }
        if from == to {
            return v;
        }
        let src = self.in_reg(&v, from);
        let d = self.reg(to.reg_class());
        match (from.is_int(), to.is_int(), from) {
            (_, _, Scalar::Bool) => {
                let (one, zero) = if to.is_int() {
                    ("1".to_string(), "0".to_string())
                } else if to == Scalar::F32 {
                    (f32_imm(1.0), f32_imm(0.0))
                } else {
                    (f64_imm(1.0), f64_imm(0.0))
                };
                let ty = to.ptx_arith();
                self.emit(
                    format!("selp.{ty}"),
                    vec![d.into(), Operand::Imm(one), Operand::Imm(zero), src.into()],
                );
            }
            (true, true, _) => {
                let (fb, tb) = (from.bits(), to.bits());
                if from.reg_class() == to.reg_class() {
                    // Same register width: u8/u16 truncate, the rest keep bits.
                    if tb < 32 && (fb > tb || from.is_signed()) {
                        self.emit(
                            "and.b32",
                            vec![d.into(), src.into(), Operand::imm(if tb == 8 { 0xFF } else { 0xFFFF })],
                        );
                    } else {
                        self.emit(format!("mov.{}", mov_type(to.reg_class())), vec![d.into(), src.into()]);
                    }
                } else if tb == 64 {
                    // Widening to 64 bits: sign-extend from signed sources.
                    let f = if from.is_signed() { "s32" } else { "u32" };
                    self.emit(
                        format!("cvt.{}.{f}", if from.is_signed() { "s64" } else { "u64" }),
                        vec![d.into(), src.into()],
                    );
                } else {
                    self.emit("cvt.u32.u64", vec![d.into(), src.into()]);
                    if tb < 32 {
                        self.emit(
                            "and.b32",
                            vec![d.into(), d.into(), Operand::imm(if tb == 8 { 0xFF } else { 0xFFFF })],
                        );
                    }
                }
            }
            (true, false, _) => {
                let f = if from.reg_class() == RegClass::B64 {
                    if from.is_signed() { "s64" } else { "u64" }
                } else if from.is_signed() {
                    "s32"
                } else {
                    "u32"
                };
                self.emit(format!("cvt.rn.{}.{f}", to.ptx_arith()), vec![d.into(), src.into()]);
            }
            (false, true, _) => {
                // Float -> int saturates in both Rust and PTX; u8/u16
                // saturate through u32 and a clamp. NaN gives 0 in Rust, and
                // in PTX only from f32/f16 into 32 bits (from f64 or into 64
                // bits the hardware gives the most negative integer).
                let t = match to {
                    Scalar::U8 | Scalar::U16 | Scalar::U32 => "u32",
                    Scalar::I32 => "s32",
                    Scalar::I64 => "s64",
                    _ => "u64",
                };
                self.emit(format!("cvt.rzi.{t}.{}", from.ptx_arith()), vec![d.into(), src.into()]);
                if to.bits() < 32 {
                    self.emit(
                        "min.u32",
                        vec![
                            d.into(),
                            d.into(),
                            Operand::imm(if to.bits() == 8 { 0xFF } else { 0xFFFF }),
                        ],
                    );
                }
                if from == Scalar::F64 || to.bits() == 64 {
                    let nan = self.reg(RegClass::Pred);
                    let f = from.ptx_arith();
                    self.emit(format!("setp.nan.{f}"), vec![nan.into(), src.into(), src.into()]);
                    let bits = if to.bits() == 64 { "b64" } else { "b32" };
                    self.emit(
                        format!("selp.{bits}"),
                        vec![d.into(), Operand::imm(0), d.into(), nan.into()],
                    );
                }
            }
            (false, false, _) => {
                let rnd = if to.bits() < from.bits() { "rn." } else { "" };
                self.emit(
                    format!("cvt.{rnd}{}.{}", to.ptx_arith(), from.ptx_arith()),
                    vec![d.into(), src.into()],
                );
            }
        }
        Val::Reg(d)
    }

    // ----- memory -----

    fn elem_layout(&self, elem: &Ty) -> super::types::MemLayout {
        elem.mem_layout().expect("checked: a memory element type")
    }

    /// The address of element `index` of `m`, as a base operand and a
    /// constant byte offset.
    pub fn element_addr(&mut self, m: &MemRef, index: Val, index_ty: &Ty, span: Loc) -> Result<(Operand, i64)> {
        let size = self.elem_layout(&m.elem).bytes as i64;
        self.byte_addr(m, index, index_ty, size, span)
    }

    /// `m.base + m.offset + index * scale`.
    pub fn byte_addr(
        &mut self,
        m: &MemRef,
        index: Val,
        index_ty: &Ty,
        scale: i64,
        span: Loc,
    ) -> Result<(Operand, i64)> {
        if let Val::Const(Const::Int(i)) = index {
            let off = m.offset.checked_add((i as i64).checked_mul(scale).unwrap_or(i64::MAX));
            return match off {
                Some(o) if o < i64::MAX => Ok((m.base.clone(), o)),
                _ => err(span, "constant index out of range"),
            };
        }
        let is = self.scalar_of(index_ty);
        let ir = self.in_reg(&index, is);
        let addr = match m.space {
            Space::Global => {
                let wide = if ir.class == RegClass::B64 {
                    let t = self.reg(RegClass::B64);
                    self.mul_imm(t, ir, scale, "u64");
                    t
                } else {
                    let t = self.reg(RegClass::B64);
                    let kind = if is.is_signed() { "s32" } else { "u32" };
                    self.emit(
                        format!("mul.wide.{kind}"),
                        vec![t.into(), ir.into(), Operand::imm(scale)],
                    );
                    t
                };
                let a = self.reg(RegClass::B64);
                self.emit("add.s64", vec![a.into(), m.base.clone(), wide.into()]);
                a
            }
            Space::Shared | Space::SharedCluster => {
                let i32r = if ir.class == RegClass::B64 {
                    let t = self.reg(RegClass::B32);
                    self.emit("cvt.u32.u64", vec![t.into(), ir.into()]);
                    t
                } else {
                    ir
                };
                let scaled = self.reg(RegClass::B32);
                self.mul_imm(scaled, i32r, scale, "u32");
                let base = match &m.base {
                    Operand::Sym(s) => {
                        let b = self.reg(RegClass::B32);
                        self.emit("mov.u32", vec![b.into(), Operand::Sym(s.clone())]);
                        Operand::Reg(b)
                    }
                    other => other.clone(),
                };
                let a = self.reg(RegClass::B32);
                self.emit("add.s32", vec![a.into(), base, scaled.into()]);
                a
            }
        };
        Ok((Operand::Reg(addr), m.offset))
    }

    fn mul_imm(&mut self, d: Reg, s: Reg, scale: i64, ty: &str) {
        if scale == 1 {
            self.emit(
                format!("mov.{}", if ty == "u64" { "b64" } else { "b32" }),
                vec![d.into(), s.into()],
            );
        } else if scale > 0 && (scale & (scale - 1)) == 0 {
            let bits = if ty == "u64" { "b64" } else { "b32" };
            self.emit(
                format!("shl.{bits}"),
                vec![d.into(), s.into(), Operand::imm(scale.trailing_zeros())],
            );
        } else {
            self.emit(format!("mul.lo.{ty}"), vec![d.into(), s.into(), Operand::imm(scale)]);
        }
    }

    fn space_name(space: Space) -> &'static str {
        match space {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::SharedCluster => "shared::cluster",
        }
    }

    /// `ld.<space><hint>` or `st.<space><hint>` for a cache hint.
    pub fn mem_op(&self, load: bool, space: Space, hint: CacheHint, span: Loc) -> Result<String> {
        let base = if load { "ld" } else { "st" };
        let sp = Self::space_name(space);
        if space != Space::Global && hint != CacheHint::Default {
            return err(span, "shared memory takes no cache hint; use `Cache::Default`");
        }
        let suffix = match (load, hint) {
            (_, CacheHint::Default) => "",
            (_, CacheHint::Global) => ".cg",
            (_, CacheHint::Streaming) => ".cs",
            (true, CacheHint::NonCoherent) => ".nc",
            (true, CacheHint::NoAllocate) => ".nc.L1::no_allocate",
            (false, h) => {
                return err(
                    span,
                    format!(
                        "`Cache::{}` applies to loads only; stores take `Default`, `Global` or `Streaming`",
                        h.rust_name()
                    ),
                );
            }
        };
        Ok(format!("{base}.{sp}{suffix}"))
    }

    /// Loads one element.
    pub fn load(&mut self, m: &MemRef, addr: (Operand, i64), hint: CacheHint, span: Loc) -> Result<Val> {
        let layout = self.elem_layout(&m.elem);
        let op = self.mem_op(true, m.space, hint, span)?;
        let a = Operand::Addr(Box::new(addr.0), addr.1);
        if layout.vec == 4 {
            let parts: Vec<Reg> = (0..4).map(|_| self.reg(RegClass::B32)).collect();
            self.emit(
                format!("{op}.v4.{}", layout.ptx),
                vec![Operand::Vec(parts.iter().map(|r| Operand::Reg(*r)).collect()), a],
            );
            return Ok(Val::Parts(parts.into_iter().map(Val::Reg).collect()));
        }
        let r = self.reg(self.class_of(&m.elem));
        self.emit(format!("{op}.{}", layout.ptx), vec![r.into(), a]);
        Ok(Val::Reg(r))
    }

    /// Stores one element.
    pub fn store(&mut self, m: &MemRef, addr: (Operand, i64), v: Val, hint: CacheHint, span: Loc) -> Result<()> {
        let layout = self.elem_layout(&m.elem);
        let op = self.mem_op(false, m.space, hint, span)?;
        let a = Operand::Addr(Box::new(addr.0), addr.1);
        if layout.vec == 4 {
            let parts = self.parts(&v, 4);
            let regs = parts.iter().map(|p| self.operand(p, Scalar::U32)).collect();
            self.emit(format!("{op}.v4.{}", layout.ptx), vec![a, Operand::Vec(regs)]);
            return Ok(());
        }
        let src = match &m.elem {
            Ty::Scalar(s) => self.operand(&v, *s),
            _ => Operand::Reg(self.bits_reg(&v, RegClass::B32)),
        };
        self.emit(format!("{op}.{}", layout.ptx), vec![a, src]);
        Ok(())
    }

    fn index_read(&mut self, base: Val, index: Val, index_ty: &Ty, span: Loc) -> Result<Val> {
        match base {
            Val::Mem(m) => {
                let addr = self.element_addr(&m, index, index_ty, span)?;
                self.load(&m, addr, CacheHint::Default, span)
            }
            Val::Parts(parts) => match index {
                Val::Const(Const::Int(i)) => match parts.get(i as usize) {
                    Some(v) if i >= 0 => Ok(v.clone()),
                    _ => err(
                        span,
                        format!("index {i} is out of bounds for an array of {} elements", parts.len()),
                    ),
                },
                _ => err(
                    span,
                    "a local array lives in registers and can only be indexed by constants; index it inside an `#[unroll]` loop, or use shared memory",
                ),
            },
            other => unreachable!("checked: indexable, not {other:?}"),
        }
    }

    fn slice_from(&mut self, m: MemRef, start: Val) -> MemRef {
        let size = self.elem_layout(&m.elem).bytes as i64;
        let len = m.len.clone().map(|l| {
            let v = self.binary(
                BinOp::Sub,
                (*l).clone(),
                start.clone(),
                Scalar::Usize,
                None,
                None,
                Loc::from(proc_macro2::Span::call_site()),
            );
            Box::new(v.unwrap_or(Val::Unit))
        });
        let (base, offset) = match start {
            Val::Const(Const::Int(i)) => (m.base.clone(), m.offset + i as i64 * size),
            v => {
                let ir = self.in_reg(&v, Scalar::Usize);
                let t = self.reg(RegClass::B64);
                self.mul_imm(t, ir, size, "u64");
                let a = self.reg(RegClass::B64);
                self.emit("add.s64", vec![a.into(), m.base.clone(), t.into()]);
                (Operand::Reg(a), m.offset)
            }
        };
        MemRef {
            space: m.space,
            base,
            offset,
            elem: m.elem,
            len,
        }
    }

    /// A field of a `u32x4` or of a struct.
    fn field(&self, b: Val, t: &Ty, field: &str) -> Val {
        if let Ty::Struct(st) = t {
            let i = st
                .fields
                .iter()
                .position(|(n, _)| n == field)
                .expect("checked: a field");
            return self.tuple_part(b, i);
        }
        let i = match field {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            _ => 3,
        };
        self.parts(&b, 4)[i].clone()
    }

    /// Writes `v` to an assignment target.
    fn store_place(&mut self, place: &Expr, v: Val) -> Result<()> {
        let t = self.ty(place);
        match &place.kind {
            ExprKind::Var(name) => {
                let dst = self.lookup(name).cloned().expect("checked: a variable");
                self.assign_regs(&dst, &v, &t);
                Ok(())
            }
            ExprKind::Index(base, index) => {
                let b = self.expr(base)?;
                let i = self.expr(index)?;
                let it = self.ty(index);
                match b {
                    Val::Mem(m) => {
                        let addr = self.element_addr(&m, i, &it, index.span)?;
                        self.store(&m, addr, v, CacheHint::Default, place.span)
                    }
                    Val::Parts(parts) => match i {
                        Val::Const(Const::Int(k)) if k >= 0 && (k as usize) < parts.len() => {
                            self.assign_regs(&parts[k as usize], &v, &t);
                            Ok(())
                        }
                        Val::Const(Const::Int(k)) => err(
                            index.span,
                            format!("index {k} is out of bounds for an array of {} elements", parts.len()),
                        ),
                        _ => err(
                            index.span,
                            "a local array lives in registers and can only be indexed by constants; index it inside an `#[unroll]` loop, or use shared memory",
                        ),
                    },
                    other => unreachable!("checked: indexable, not {other:?}"),
                }
            }
            ExprKind::Field(base, field) => {
                let bt = self.ty(base);
                let b = self.expr(base)?;
                let dst = self.field(b, &bt, field);
                self.assign_regs(&dst, &v, &t);
                Ok(())
            }
            ExprKind::TupleField(base, i) => {
                let b = self.expr(base)?;
                let dst = self.tuple_part(b, *i);
                self.assign_regs(&dst, &v, &t);
                Ok(())
            }
            _ => err(place.span, "invalid assignment target"),
        }
    }

    // ----- control flow -----

    fn if_expr(&mut self, e: &Expr, cond: &Expr, then: &Block, els: Option<&Expr>) -> Result<Val> {
        let t = self.ty(e);
        let c = self.expr(cond)?;
        if let Val::Const(Const::Bool(b)) = c {
            return if b {
                self.block_stmts(then)
            } else {
                match els {
                    Some(e) => self.expr(e),
                    None => Ok(Val::Unit),
                }
            };
        }
        let p = self.in_reg(&c, Scalar::Bool);
        let result = if t == Ty::Unit { Val::Unit } else { self.fresh(&t)? };
        let (then_nodes, ()) = self.nested(|l| {
            let v = l.block_stmts(then)?;
            l.assign_regs(&result, &v, &t);
            Ok(())
        })?;
        let (else_nodes, ()) = self.nested(|l| {
            if let Some(e) = els {
                let v = l.expr(e)?;
                l.assign_regs(&result, &v, &t);
            }
            Ok(())
        })?;
        self.push(Node::If {
            cond: p,
            negate: false,
            then: then_nodes,
            els: else_nodes,
        });
        Ok(result)
    }

    /// `match`: each arm in a block that a failed pattern or guard exits
    /// to the next arm; the matching arm's value goes to the result and
    /// exits the whole match. Patterns on a constant fold, so only the arm
    /// taken is emitted.
    fn match_expr(&mut self, e: &Expr, scrutinee: &Expr, arms: &[Arm]) -> Result<Val> {
        let t = self.ty(e);
        let st = self.ty(scrutinee);
        let s = self.scalar_of(&st);
        let v = self.expr(scrutinee)?;
        let result = if t == Ty::Unit { Val::Unit } else { self.fresh(&t)? };
        let whole = self.label();
        let (nodes, ()) = self.nested(|l| {
            for arm in arms {
                let test = l.pattern_test(&arm.pat, &v, s, e.span)?;
                if let Val::Const(Const::Bool(false)) = test {
                    continue;
                }
                let block = l.label();
                let (body, always) = l.nested(|l| {
                    let mut always = true;
                    if !matches!(test, Val::Const(Const::Bool(true))) {
                        always = false;
                        let p = l.in_reg(&test, Scalar::Bool);
                        l.push(Node::If {
                            cond: p,
                            negate: true,
                            then: vec![Node::ExitBlock(block)],
                            els: vec![],
                        });
                    }
                    l.scopes.push(Vec::new());
                    l.bind_pattern(&arm.pat, &v, &st)?;
                    if let Some(g) = &arm.guard {
                        match l.expr(g)? {
                            Val::Const(Const::Bool(true)) => {}
                            Val::Const(Const::Bool(false)) => {
                                always = false;
                                l.push(Node::ExitBlock(block));
                            }
                            gv => {
                                always = false;
                                let p = l.in_reg(&gv, Scalar::Bool);
                                l.push(Node::If {
                                    cond: p,
                                    negate: true,
                                    then: vec![Node::ExitBlock(block)],
                                    els: vec![],
                                });
                            }
                        }
                    }
                    let value = l.expr(&arm.body)?;
                    l.assign_regs(&result, &value, &t);
                    l.scopes.pop();
                    l.push(Node::ExitBlock(whole));
                    Ok(always)
                })?;
                l.push(Node::Block { id: block, body });
                if always {
                    // Later arms cannot be reached.
                    break;
                }
            }
            Ok(())
        })?;
        self.push(Node::Block { id: whole, body: nodes });
        Ok(result)
    }

    /// Whether `v` (of type `s`) matches `p`, as a `bool` value.
    fn pattern_test(&mut self, p: &Pat, v: &Val, s: Scalar, span: Loc) -> Result<Val> {
        let yes = Val::Const(Const::Bool(true));
        Ok(match p {
            Pat::Wild | Pat::Ident(..) => yes,
            Pat::Lit(x) => {
                let k = self.expr(x)?;
                self.binary(BinOp::Eq, v.clone(), k, s, None, None, span)?
            }
            Pat::Range { lo, hi, inclusive } => {
                let mut test = yes;
                if let Some(lo) = lo {
                    let k = self.expr(lo)?;
                    let above = self.binary(BinOp::Ge, v.clone(), k, s, None, None, span)?;
                    test = self.binary(BinOp::BitAnd, test, above, Scalar::Bool, None, None, span)?;
                }
                if let Some(hi) = hi {
                    let k = self.expr(hi)?;
                    let op = if *inclusive { BinOp::Le } else { BinOp::Lt };
                    let below = self.binary(op, v.clone(), k, s, None, None, span)?;
                    test = self.binary(BinOp::BitAnd, test, below, Scalar::Bool, None, None, span)?;
                }
                test
            }
            Pat::Or(ps) => {
                let mut test = Val::Const(Const::Bool(false));
                for q in ps {
                    let t = self.pattern_test(q, v, s, span)?;
                    test = self.binary(BinOp::BitOr, test, t, Scalar::Bool, None, None, span)?;
                }
                test
            }
        })
    }

    fn bind_pattern(&mut self, p: &Pat, v: &Val, t: &Ty) -> Result<()> {
        if let Pat::Ident(name, _) = p {
            let v = self.copy_if_var(v.clone(), t)?;
            self.bind(name, v);
        }
        Ok(())
    }

    fn tuple_part(&self, v: Val, i: usize) -> Val {
        match v {
            Val::Parts(mut p) if i < p.len() => p.swap_remove(i),
            other => unreachable!("checked: a tuple, not {other:?}"),
        }
    }

    /// A run-time `for` loop. Forward, the counter starts at the start and
    /// runs to the end; reversed (`.rev()`), it starts at the end and is
    /// decremented before the body, so it never passes below the start (no
    /// overflow at `MIN`). With `step_by`, the loop ends where the next value
    /// would pass the other bound, without overflowing: exact for any
    /// bounds, as Rust's `StepBy`.
    fn for_loop(&mut self, f: &ForLoop, e: &Expr) -> Result<Val> {
        let vt = self.ty(&f.start);
        let s = self.scalar_of(&vt);
        let start = self.expr(&f.start)?;
        let end = self.expr(&f.end)?;
        // The counter starts at one bound; the other is evaluated once, as
        // Rust does.
        let (first, bound) = if f.rev { (end, start) } else { (start, end) };
        let bound = self.copy_if_var(bound, &vt)?;
        let step = match &f.step {
            Some(st) => {
                let v = self.expr(st)?;
                if let Val::Const(Const::Int(0)) = v {
                    return err(st.span, "`step_by(0)` never advances; use a step of at least 1");
                }
                Some(v)
            }
            None => None,
        };
        let i = self.reg(s.reg_class());
        self.assign_regs(&Val::Reg(i), &first, &vt);
        self.var_regs.insert(i.id);
        let id = self.label();
        self.loops.push((f.label.clone(), LoopTarget::Loop(id)));
        let cmp = match (f.rev, f.inclusive) {
            (false, false) => BinOp::Lt,
            (false, true) => BinOp::Le,
            (true, false) => BinOp::Gt,
            (true, true) => BinOp::Ge,
        };
        // `i += n` forward, `i -= n` reversed.
        let advance = if f.rev { BinOp::Sub } else { BinOp::Add };
        let one = Val::Const(Const::Int(1));
        let (body, ()) = self.nested(|l| {
            let c = l.binary(cmp, Val::Reg(i), bound.clone(), s, None, None, e.span)?;
            if let Val::Const(Const::Bool(false)) = c {
                l.push(Node::Break(id));
            } else if !matches!(c, Val::Const(Const::Bool(true))) {
                let p = l.in_reg(&c, Scalar::Bool);
                l.push(Node::If {
                    cond: p,
                    negate: true,
                    then: vec![Node::Break(id)],
                    els: vec![],
                });
            }
            if f.rev && !f.inclusive {
                l.binary(BinOp::Sub, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
            }
            l.scopes.push(Vec::new());
            l.bind(&f.var, Val::Reg(i));
            l.block_stmts(&f.body)?;
            l.scopes.pop();
            Ok(())
        })?;
        self.loops.pop();
        let (continuing, ()) = self.nested(|l| {
            match &step {
                None if f.inclusive => {
                    // `a..=MAX` must stop after MAX (reversed, after MIN),
                    // not wrap.
                    let done = l.binary(BinOp::Eq, Val::Reg(i), bound.clone(), s, None, None, e.span)?;
                    let p = l.in_reg(&done, Scalar::Bool);
                    l.push(Node::If {
                        cond: p,
                        negate: false,
                        then: vec![Node::Break(id)],
                        els: vec![],
                    });
                    l.binary(advance, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
                }
                // Reversed, the head decrements.
                None if f.rev => {}
                None => {
                    l.binary(advance, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
                }
                Some(stepv) => {
                    // What is left to the other bound: forward the next value
                    // must stay below the end (`left <= step` leaves),
                    // reversed at or above the start (`left < step` leaves).
                    let us = if s.bits() == 64 { Scalar::U64 } else { Scalar::U32 };
                    let (hi, lo, leave) = if f.rev {
                        (Val::Reg(i), bound.clone(), BinOp::Lt)
                    } else {
                        (bound.clone(), Val::Reg(i), BinOp::Le)
                    };
                    let left = l.binary(BinOp::Sub, hi, lo, us, None, None, e.span)?;
                    let passes = match stepv {
                        Val::Const(Const::Int(n)) if *n <= us.int_range().1 => {
                            let left_s = if s.bits() < 32 {
                                l.cast(left, s, Scalar::U32)
                            } else {
                                left
                            };
                            let c = l.binary(leave, left_s, Val::Const(Const::Int(*n)), us, None, None, e.span)?;
                            l.in_reg(&c, Scalar::Bool)
                        }
                        v => {
                            let wide = l.cast(left, us, Scalar::U64);
                            let c = l.binary(leave, wide, v.clone(), Scalar::U64, None, None, e.span)?;
                            l.in_reg(&c, Scalar::Bool)
                        }
                    };
                    l.push(Node::If {
                        cond: passes,
                        negate: false,
                        then: vec![Node::Break(id)],
                        els: vec![],
                    });
                    let step_s = match stepv {
                        Val::Const(Const::Int(n)) => Val::Const(Const::Int(wrap_int(*n, s))),
                        v => l.cast(v.clone(), Scalar::Usize, s),
                    };
                    l.binary(advance, Val::Reg(i), step_s, s, None, Some(i), e.span)?;
                    if f.rev {
                        // The head takes the last 1.
                        l.binary(BinOp::Add, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
                    }
                }
            }
            Ok(())
        })?;
        self.push(Node::Loop { id, body, continuing });
        Ok(Val::Unit)
    }

    /// The loop a `break` or `continue` with `label` leaves: the innermost
    /// one, or the innermost with that label (checked to exist).
    fn loop_target(&self, label: &Option<String>) -> Option<LoopTarget> {
        let found = match label {
            None => self.loops.last(),
            Some(l) => self.loops.iter().rev().find(|(name, _)| name.as_ref() == Some(l)),
        };
        found.map(|&(_, target)| target)
    }

    fn unrolled_for(&mut self, f: &ForLoop, span: Loc) -> Result<Val> {
        let vt = self.ty(&f.start);
        let s = self.scalar_of(&vt);
        let start = self.expr(&f.start)?;
        let end = self.expr(&f.end)?;
        let step = match &f.step {
            Some(st) => self.expr(st)?,
            None => Val::Const(Const::Int(1)),
        };
        let (Val::Const(Const::Int(a)), Val::Const(Const::Int(b)), Val::Const(Const::Int(st))) = (&start, &end, &step)
        else {
            return err(
                span,
                "`#[unroll]` needs constant bounds and step (literals, const generics or expressions of them); remove `#[unroll]` to keep a run-time loop",
            );
        };
        if *st <= 0 {
            return err(span, "`step_by(0)` never advances; use a step of at least 1");
        }
        let last = if f.inclusive { *b } else { *b - 1 };
        let count = if last < *a { 0 } else { ((last - *a) / *st + 1) as u64 };
        // Forward from the start, or with `.rev()` down from the last value.
        let (first, delta) = if f.rev { (last, -*st) } else { (*a, *st) };
        if count > MAX_UNROLL {
            return err(
                span,
                format!(
                    "`#[unroll]` of {count} iterations is more than the limit of {MAX_UNROLL}; unroll a smaller inner loop"
                ),
            );
        }
        let outer = self.label();
        let (nodes, ()) = self.nested(|l| {
            let mut i = first;
            for _ in 0..count {
                let iteration = l.label();
                l.loops
                    .push((f.label.clone(), LoopTarget::Unrolled { outer, iteration }));
                let (body, _) = l.nested(|l2| {
                    l2.scopes.push(Vec::new());
                    l2.bind(&f.var, Val::Const(Const::Int(wrap_int(i, s))));
                    let r = l2.block_stmts(&f.body);
                    l2.scopes.pop();
                    r
                })?;
                l.loops.pop();
                l.push(Node::Block { id: iteration, body });
                i += delta;
            }
            Ok(())
        })?;
        self.push(Node::Block { id: outer, body: nodes });
        Ok(Val::Unit)
    }

    // ----- intrinsic calls -----

    fn call(&mut self, e: &Expr, receiver: Option<&Expr>, args: &[Expr], generics: &[GenericArg]) -> Result<Val> {
        if let Some(&idx) = self.types.devices.get(&e.id) {
            return self.inline_device(e, idx, args, generics);
        }
        let intr = intrinsics::get(*self.types.calls.get(&e.id).expect("checked: every call resolved"));
        if !self.target.has(intr.min_target) {
            let needs = match intr.min_target {
                Target::Sm90a | Target::Sm100a => format!("exists only on target {}", intr.min_target.name()),
                t => format!("needs target {} or newer", t.name()),
            };
            return err(
                e.span,
                format!(
                    "`{}` {needs}, but this kernel also compiles for {}; remove {} from `targets(..)`",
                    intr.display_name(),
                    self.target.name(),
                    self.target.name()
                ),
            );
        }
        let mut vals = Vec::with_capacity(args.len() + 1);
        if let Some(r) = receiver {
            let v = self.expr(r)?;
            vals.push((v, self.ty(r)));
        }
        for a in args {
            let v = self.expr(a)?;
            vals.push((v, self.ty(a)));
        }
        let mut generic_ty = None;
        let mut generic_len = None;
        for g in generics {
            match g {
                GenericArg::Type(t, _) => generic_ty = Some(t.clone()),
                GenericArg::Len(l, _) => generic_len = Some(self.len_value(l)),
                GenericArg::Expr(..) => unreachable!("checked: intrinsics take lengths"),
            }
        }
        let call = Call {
            args: vals,
            span: e.span,
            generic_ty,
            generic_len,
        };
        (intr.lower)(self, &call)
    }

    /// A device function's body in place of its call: its parameters bound
    /// to the arguments' values in a scope of its own. A body without
    /// `return` is lowered as a block whose value is the call's; with
    /// `return`, inside a block that `return` exits, its value going
    /// through registers.
    fn inline_device(&mut self, e: &Expr, idx: usize, args: &[Expr], generics: &[GenericArg]) -> Result<Val> {
        let kernel = self.kernel;
        let d = &kernel.devices[idx];
        let mut consts = Vec::with_capacity(d.consts.len());
        if let Some(lens) = self.types.device_lens.get(&e.id) {
            for (name, len) in lens {
                let v = match len {
                    Len::Lit(n) => Val::Const(Const::Int(i128::from(*n))),
                    Len::Param(p) => self.lookup(p).cloned().unwrap_or(Val::Unit),
                };
                consts.push((name.clone(), v));
            }
        }
        for (g, c) in generics.iter().zip(&d.consts) {
            let v = match g {
                GenericArg::Len(l, _) => match l {
                    Len::Lit(n) => Val::Const(Const::Int(i128::from(*n))),
                    Len::Param(p) => self.lookup(p).cloned().unwrap_or(Val::Unit),
                },
                GenericArg::Expr(x, _) => self.expr(x)?,
                GenericArg::Type(..) => unreachable!("checked: const generics take values"),
            };
            let Val::Const(k) = v else {
                return err(
                    e.span,
                    format!("the const generic `{}` needs a value known at compile time", c.name),
                );
            };
            consts.push((c.name.clone(), Val::Const(k)));
        }
        let mut params = Vec::with_capacity(args.len());
        for (a, p) in args.iter().zip(&d.params) {
            let v = self.expr(a)?;
            let v = if p.mutable {
                let t = self.ty(a);
                let fresh = self.fresh(&t)?;
                self.assign_regs(&fresh, &v, &t);
                self.mark_var(&fresh);
                fresh
            } else {
                v
            };
            params.push((p.name.clone(), v));
        }
        const MAX_DEPTH: usize = 64;
        if self.returns.len() >= MAX_DEPTH {
            return err(e.span, "device functions nest more than 64 calls deep here");
        }
        let scopes = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        let loops = std::mem::take(&mut self.loops);
        for (name, v) in consts.into_iter().chain(params) {
            self.bind(&name, v);
        }
        let ty = self.ty(e);
        let mut has_return = false;
        walk_exprs(&d.body, &mut |x| has_return |= matches!(x.kind, ExprKind::Return(_)));
        let block = self.label();
        let result = if has_return && ty != Ty::Unit {
            self.fresh(&ty)?
        } else {
            Val::Unit
        };
        self.returns.push(Return {
            block,
            result: result.clone(),
            ty: ty.clone(),
            name: d.name.clone(),
            fn_line: d.fn_line,
        });
        let lowered = if has_return {
            self.nested(|l| {
                let v = l.block_stmts(&d.body)?;
                l.assign_regs(&result, &v, &ty);
                Ok(())
            })
            .map(|(body, ())| {
                self.push(Node::Block { id: block, body });
                result
            })
        } else {
            self.block_stmts(&d.body)
        };
        self.returns.pop();
        self.scopes = scopes;
        self.loops = loops;
        lowered
    }

    /// Declares a static shared array and returns its view.
    pub fn declare_shared(&mut self, elem: &Ty, len: u64, span: Loc) -> Result<MemRef> {
        let layout = self.elem_layout(elem);
        let bytes = len * layout.bytes as u64;
        let name = format!("{}_smem{}", self.func.entry, self.func.shared.len());
        let total: u64 = self.func.shared.iter().map(|s| s.bytes).sum::<u64>() + bytes;
        if total > 48 * 1024 {
            return err(
                span,
                format!(
                    "static shared memory would be {total} bytes, over the 48 KiB static limit; use `dynamic_shared` for more"
                ),
            );
        }
        self.func.shared.push(SharedDecl {
            name: name.clone(),
            align: layout.bytes.max(16),
            bytes: bytes.max(1),
        });
        Ok(MemRef {
            space: Space::Shared,
            base: Operand::Sym(name),
            offset: 0,
            elem: elem.clone(),
            len: Some(Box::new(Val::Const(Const::Int(len as i128)))),
        })
    }

    /// The dynamic shared block, viewed as `elem` from `byte_offset`.
    pub fn dynamic_shared(&mut self, elem: &Ty, byte_offset: Val) -> MemRef {
        let align = 1024;
        self.func.dynamic_shared = Some(align);
        let name = format!("{}_dyn_smem", self.func.entry);
        match byte_offset {
            Val::Const(Const::Int(o)) => MemRef {
                space: Space::Shared,
                base: Operand::Sym(name),
                offset: o as i64,
                elem: elem.clone(),
                len: None,
            },
            v => {
                let b = self.reg(RegClass::B32);
                self.emit("mov.u32", vec![b.into(), Operand::Sym(name)]);
                let o = self.in_reg(&v, Scalar::U32);
                let a = self.reg(RegClass::B32);
                self.emit("add.s32", vec![a.into(), b.into(), o.into()]);
                MemRef {
                    space: Space::Shared,
                    base: a.into(),
                    offset: 0,
                    elem: elem.clone(),
                    len: None,
                }
            }
        }
    }
}

fn diverges(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Break(_) | ExprKind::Continue(_) | ExprKind::Return(_))
}

/// Expressions that can run unconditionally without changing behaviour: no
/// memory access, no calls with effects.
fn is_pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => true,
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Field(a, _) => is_pure(a),
        ExprKind::Binary(op, a, b) => !matches!(op, BinOp::Div | BinOp::Rem) && is_pure(a) && is_pure(b),
        ExprKind::Call { path, args, .. } => {
            intrinsics::is_pure_index(&path.name) && path.qualifier.is_none() && args.is_empty()
        }
        _ => false,
    }
}

/// `mov` type for a register class.
pub fn mov_type(c: RegClass) -> &'static str {
    match c {
        RegClass::Pred => "pred",
        RegClass::B8 => "b8",
        RegClass::B16 => "b16",
        RegClass::B32 => "b32",
        RegClass::B64 => "b64",
        RegClass::F32 => "f32",
        RegClass::F64 => "f64",
    }
}

fn bit_type(s: Scalar) -> &'static str {
    if s.bits() == 64 { "b64" } else { "b32" }
}

fn check_template(t: &str, has_dest: bool, inputs: usize, span: Loc) -> Result<()> {
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return err(span, "unclosed `{` in the `ptx!` template");
        };
        let name = &after[..close];
        match name {
            "d" if has_dest => {}
            "d" => return err(span, "`{d}` names the result, but this `ptx!` returns `()`"),
            n => match n.parse::<usize>() {
                Ok(i) if i < inputs => {}
                Ok(i) => return err(span, format!("`{{{i}}}` names input {i}, but only {inputs} are given")),
                Err(_) => {
                    return err(
                        span,
                        format!(
                            "unknown placeholder `{{{n}}}`; use `{{d}}` for the result and `{{0}}`, `{{1}}`... for the inputs"
                        ),
                    );
                }
            },
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// Constant folding with Rust's semantics.
fn fold(op: BinOp, a: Const, b: Const, s: Scalar, rs: Scalar, span: Loc) -> Result<Const> {
    use BinOp::*;
    Ok(match (a, b) {
        (Const::Int(x), Const::Int(y)) => {
            if op.is_shift() {
                let n = (wrap_int(y, rs) as u32) & (s.bits() - 1);
                let ux = x & ((1i128 << s.bits()) - 1);
                return Ok(Const::Int(match op {
                    Shl => wrap_int(ux << n, s),
                    _ if s.is_signed() => x >> n,
                    _ => ux >> n,
                }));
            }
            match op {
                Add => Const::Int(wrap_int(x + y, s)),
                Sub => Const::Int(wrap_int(x - y, s)),
                Mul => Const::Int(wrap_int(x.wrapping_mul(y), s)),
                Div | Rem if y == 0 => return err(span, "this operation divides by zero"),
                Div => Const::Int(wrap_int(x / y, s)),
                Rem => Const::Int(wrap_int(x % y, s)),
                BitAnd => Const::Int(wrap_int(x & y, s)),
                BitOr => Const::Int(wrap_int(x | y, s)),
                BitXor => Const::Int(wrap_int(x ^ y, s)),
                Eq => Const::Bool(x == y),
                Ne => Const::Bool(x != y),
                Lt => Const::Bool(x < y),
                Le => Const::Bool(x <= y),
                Gt => Const::Bool(x > y),
                Ge => Const::Bool(x >= y),
                And | Or | Shl | Shr => unreachable!("handled elsewhere"),
            }
        }
        (Const::F32(x), Const::F32(y)) => match op {
            Add => Const::F32(x + y),
            Sub => Const::F32(x - y),
            Mul => Const::F32(x * y),
            Div => Const::F32(x / y),
            Eq => Const::Bool(x == y),
            Ne => Const::Bool(x != y),
            Lt => Const::Bool(x < y),
            Le => Const::Bool(x <= y),
            Gt => Const::Bool(x > y),
            Ge => Const::Bool(x >= y),
            _ => return err(span, "unsupported float operation"),
        },
        (Const::F64(x), Const::F64(y)) => match op {
            Add => Const::F64(x + y),
            Sub => Const::F64(x - y),
            Mul => Const::F64(x * y),
            Div => Const::F64(x / y),
            Eq => Const::Bool(x == y),
            Ne => Const::Bool(x != y),
            Lt => Const::Bool(x < y),
            Le => Const::Bool(x <= y),
            Gt => Const::Bool(x > y),
            Ge => Const::Bool(x >= y),
            _ => return err(span, "unsupported float operation"),
        },
        (Const::Bool(x), Const::Bool(y)) => match op {
            BitAnd | And => Const::Bool(x & y),
            BitOr | Or => Const::Bool(x | y),
            BitXor | Ne => Const::Bool(x ^ y),
            Eq => Const::Bool(x == y),
            _ => return err(span, "unsupported bool operation"),
        },
        _ => return err(span, "mismatched constant operands"),
    })
}

fn fold_cast(c: Const, from: Scalar, to: Scalar) -> Const {
    let _ = from;
    match c {
        Const::Bool(b) => match to {
            Scalar::F32 => Const::F32(f32::from(u8::from(b))),
            Scalar::F64 => Const::F64(f64::from(u8::from(b))),
            _ => Const::Int(i128::from(b)),
        },
        Const::Int(i) => match to {
            Scalar::F32 => Const::F32(i as f32),
            Scalar::F64 => Const::F64(i as f64),
            t => Const::Int(wrap_int(i, t)),
        },
        Const::F32(f) => float_to(f as f64, f, to),
        Const::F64(f) => float_to(f, f as f32, to),
    }
}

/// Float -> `to` as Rust's `as`: saturating, NaN to 0.
fn float_to(f: f64, f32v: f32, to: Scalar) -> Const {
    match to {
        Scalar::F32 => Const::F32(f32v),
        Scalar::F64 => Const::F64(f),
        t => {
            let (min, max) = t.int_range();
            let v = if f.is_nan() {
                0
            } else if f <= min as f64 {
                min
            } else if f >= max as f64 {
                max
            } else {
                f.trunc() as i128
            };
            Const::Int(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_folding_wraps_like_release_rust() {
        let s = Loc::from(proc_macro2::Span::call_site());
        assert_eq!(
            fold(
                BinOp::Add,
                Const::Int(u32::MAX as i128),
                Const::Int(1),
                Scalar::U32,
                Scalar::U32,
                s
            )
            .unwrap(),
            Const::Int(0)
        );
        assert_eq!(
            fold(BinOp::Sub, Const::Int(0), Const::Int(1), Scalar::U8, Scalar::U8, s).unwrap(),
            Const::Int(255)
        );
        assert_eq!(
            fold(
                BinOp::Mul,
                Const::Int(i32::MAX as i128),
                Const::Int(2),
                Scalar::I32,
                Scalar::I32,
                s
            )
            .unwrap(),
            Const::Int(-2)
        );
        assert_eq!(
            fold(BinOp::Shl, Const::Int(1), Const::Int(33), Scalar::U32, Scalar::U32, s).unwrap(),
            Const::Int(2)
        );
        assert_eq!(
            fold(BinOp::Shr, Const::Int(-8), Const::Int(1), Scalar::I32, Scalar::I32, s).unwrap(),
            Const::Int(-4)
        );
        assert_eq!(
            fold(BinOp::Div, Const::Int(-7), Const::Int(2), Scalar::I32, Scalar::I32, s).unwrap(),
            Const::Int(-3)
        );
        assert_eq!(
            fold(BinOp::Rem, Const::Int(-7), Const::Int(2), Scalar::I32, Scalar::I32, s).unwrap(),
            Const::Int(-1)
        );
        assert!(fold(BinOp::Div, Const::Int(1), Const::Int(0), Scalar::U32, Scalar::U32, s).is_err());
    }

    #[test]
    fn cast_folding_follows_as() {
        assert_eq!(fold_cast(Const::F32(-1.5), Scalar::F32, Scalar::U32), Const::Int(0));
        assert_eq!(fold_cast(Const::F32(f32::NAN), Scalar::F32, Scalar::I32), Const::Int(0));
        assert_eq!(
            fold_cast(Const::F32(1e20), Scalar::F32, Scalar::I32),
            Const::Int(i32::MAX as i128)
        );
        assert_eq!(fold_cast(Const::F32(-2.7), Scalar::F32, Scalar::I32), Const::Int(-2));
        assert_eq!(
            fold_cast(Const::Int(-1), Scalar::I32, Scalar::U64),
            Const::Int(u64::MAX as i128)
        );
        assert_eq!(fold_cast(Const::Int(300), Scalar::U32, Scalar::U8), Const::Int(44));
        assert_eq!(fold_cast(Const::Bool(true), Scalar::Bool, Scalar::F32), Const::F32(1.0));
    }

    #[test]
    fn immediates_are_exact() {
        assert_eq!(f32_imm(1.0), "0f3F800000");
        assert_eq!(f64_imm(-2.0), "0dC000000000000000");
        assert_eq!(int_imm(-1, Scalar::I32), "-1");
        assert_eq!(int_imm(u32::MAX as i128, Scalar::U32), "4294967295");
    }

    #[test]
    fn templates_are_checked() {
        let s = Loc::from(proc_macro2::Span::call_site());
        assert!(check_template("add.u32 {d}, {0}, {1};", true, 2, s).is_ok());
        assert!(check_template("add.u32 {d}, {0}, {2};", true, 2, s).is_err());
        assert!(check_template("membar.gl; {d}", false, 0, s).is_err());
        assert!(check_template("x {y}", true, 0, s).is_err());
    }
}
