//! Expressions: the dispatch over the AST's expression kinds, literals,
//! unary and binary operators (with `&&`/`||` short-circuiting), indexing,
//! fields and tuples, and assignment targets.

use super::control::MAX_UNROLL;
use super::emit::{Lower, Val, bit_type};
use super::fold::wrap_int;
use super::fold::{Const, Result, err};
use super::unroll::REGISTER_INDEX;
use crate::ast::*;
use crate::intrinsics;
use crate::ir::*;
use crate::types::{CacheHint, Len, RegClass, Scalar, StructTy, Ty};

/// Expressions that can run unconditionally without changing behaviour: no
/// memory access, no calls with effects.
pub(super) fn is_pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Table(_) => true,
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Field(a, _) => is_pure(a),
        ExprKind::Binary(op, a, b) => !matches!(op, BinOp::Div | BinOp::Rem) && is_pure(a) && is_pure(b),
        ExprKind::Call { path, args, .. } => {
            intrinsics::is_pure_index(&path.name) && path.qualifier.is_none() && args.is_empty()
        }
        _ => false,
    }
}

impl Lower<'_> {
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
            ExprKind::Order(o) => Ok(Val::Order(*o)),
            ExprKind::Scope(s) => Ok(Val::Scope(*s)),
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
            ExprKind::AssignOp(op, place, value) => self.assign_op(*op, place, value, e),
            ExprKind::Cast(inner, to) => {
                let from = self.ty(inner);
                let v = self.expr(inner)?;
                let (Some(fs), Some(ts)) = (from.scalar(), to.scalar()) else {
                    return err(e.span, format!("cannot cast `{from}` as `{to}`"));
                };
                Ok(self.cast(v, fs, ts))
            }
            ExprKind::Index(base, index) => {
                let it = self.ty(index);
                if let ExprKind::Table(t) = base.kind {
                    let i = self.expr(index)?;
                    return self.table_read(t, i, &it, index.span);
                }
                if let Some((m, addr)) = self.shared_cell(base, index)? {
                    return self.load(&m, addr, CacheHint::Default, e.span);
                }
                let b = self.expr(base)?;
                let i = self.expr(index)?;
                self.index_read(b, i, &it, index.span)
            }
            ExprKind::SliceFrom { base, start, end, .. } => {
                let Val::Mem(m) = self.expr(base)? else {
                    unreachable!("checked: a slice")
                };
                let s = self.expr(start)?;
                let end = end.as_deref().map(|x| self.expr(x)).transpose()?;
                Ok(Val::Mem(self.slice_from(m, s, end)))
            }
            ExprKind::Field(base, field) => {
                let bt = self.ty(base);
                let b = self.expr(base)?;
                Ok(self.field(b, &bt, field))
            }
            // The variable's own registers: the intrinsic or the device
            // function updates them in place, or reads them.
            ExprKind::RefMut(var) | ExprKind::Ref(var) => self.expr(var),
            ExprKind::Call { args, generics, .. } => self.call(e, None, args, generics),
            ExprKind::MethodCall { receiver, .. } if self.len_call(e, true).is_some() => {
                let n = self.len_call(e, true).expect("an array's len()");
                self.expr(receiver)?;
                Ok(Val::Const(Const::Int(n.into())))
            }
            ExprKind::MethodCall { receiver, args, .. } => self.call(e, Some(receiver), args, &[]),
            ExprKind::If { cond, then, els } => {
                let v = self.if_expr(e, cond, then, els.as_deref())?;
                Ok(self.restate(e, v))
            }
            ExprKind::While { cond, body, label } => self.while_loop(cond, body, label),
            ExprKind::Loop(body, label) => {
                let v = self.loop_expr(e, body, label)?;
                Ok(self.restate(e, v))
            }
            ExprKind::For(f) => self.for_expr(f, e),
            ExprKind::Break(label, value) => self.break_expr(label, value.as_deref(), e),
            ExprKind::Continue(label) => self.continue_expr(label, e),
            ExprKind::Return(value) => self.return_expr(value.as_deref()),
            ExprKind::Block(b) => self.block_stmts(b),
            ExprKind::Array(items) | ExprKind::Tuple(items) => self.literal_parts(items),
            ExprKind::Repeat(item, len) => self.repeat(item, len, e),
            ExprKind::Match { scrutinee, arms } => {
                let v = self.match_expr(e, scrutinee, arms)?;
                Ok(self.restate(e, v))
            }
            ExprKind::TupleField(base, i) => {
                let b = self.expr(base)?;
                Ok(self.tuple_part(b, *i))
            }
            ExprKind::StructLit { ty, fields } => self.struct_lit(ty, fields),
            ExprKind::Table(t) => Ok(Val::Parts(
                self.kernel.tables[*t].values.iter().map(|c| Val::Const(*c)).collect(),
            )),
            ExprKind::InlinePtx { ret, template, args } => self.inline_ptx(ret, template, args, e),
            ExprKind::Assert { cond, text, debug } => self.assert(cond, text, *debug),
            ExprKind::Closure { body, .. } => Ok(self.closure(e, body)),
            ExprKind::ClosureCall { name, args } => self.closure_call(name, args),
        }
    }

    pub(super) fn lit(&self, l: &Lit, t: &Ty, span: Loc) -> Result<Const> {
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

    pub(super) fn unary(&mut self, op: UnOp, v: Val, t: &Ty) -> Result<Val> {
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

    pub(super) fn binary_expr(&mut self, op: BinOp, l: &Expr, r: &Expr, e: &Expr) -> Result<Val> {
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
    pub(super) fn lazy(&mut self, op: BinOp, l: &Expr, r: &Expr) -> Result<Val> {
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

    pub(super) fn index_read(&mut self, base: Val, index: Val, index_ty: &Ty, span: Loc) -> Result<Val> {
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
                _ => err(span, REGISTER_INDEX),
            },
            other => unreachable!("checked: indexable, not {other:?}"),
        }
    }

    /// A field of a `u32x4` or of a struct.
    pub(super) fn field(&self, b: Val, t: &Ty, field: &str) -> Val {
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

    pub(super) fn tuple_part(&self, v: Val, i: usize) -> Val {
        match v {
            Val::Parts(mut p) if i < p.len() => p.swap_remove(i),
            other => unreachable!("checked: a tuple, not {other:?}"),
        }
    }

    /// Writes `v` to an assignment target.
    pub(super) fn store_place(&mut self, place: &Expr, v: Val) -> Result<()> {
        let t = self.ty(place);
        match &place.kind {
            ExprKind::Var(name) => {
                let dst = self.lookup(name).cloned().expect("checked: a variable");
                self.assign_regs(&dst, &v, &t);
                Ok(())
            }
            ExprKind::Index(base, index) => {
                if let Some((m, addr)) = self.shared_cell(base, index)? {
                    return self.store(&m, addr, v, CacheHint::Default, place.span);
                }
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
                        _ => err(index.span, REGISTER_INDEX),
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

    /// `place op= value`.
    pub(super) fn assign_op(&mut self, op: BinOp, place: &Expr, value: &Expr, e: &Expr) -> Result<Val> {
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
        let v = self.binary(op, cur, rhs, s, rt.scalar(), dst, e.span)?;
        if dst.is_none() || !matches!(v, Val::Reg(r) if Some(r) == dst) {
            self.store_place(place, v)?;
        }
        Ok(Val::Unit)
    }

    /// `[item; len]`.
    pub(super) fn repeat(&mut self, item: &Expr, len: &Len, e: &Expr) -> Result<Val> {
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

    /// A struct literal: evaluated in the order written, stored in declaration order.
    pub(super) fn struct_lit(&mut self, ty: &StructTy, fields: &[(String, Expr, Loc)]) -> Result<Val> {
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

    /// The elements of an array or tuple literal, in order.
    pub(super) fn literal_parts(&mut self, items: &[Expr]) -> Result<Val> {
        let mut parts = Vec::with_capacity(items.len());
        for it in items {
            parts.push(self.expr(it)?);
        }
        Ok(Val::Parts(parts))
    }
}
