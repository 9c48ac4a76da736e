//! Expressions: the dispatch on each construct, and literals, names,
//! operators, casts, fields, arrays, tuples, struct literals and `ptx!`.

use super::*;

impl Checker<'_> {
    pub(super) fn expr(&mut self, e: &Expr, hint: Option<&TyV>) -> Result<TyV> {
        let t = self.expr_inner(e, hint)?;
        Ok(self.record(e, t))
    }

    pub(super) fn expect_bool(&mut self, e: &Expr) -> Result<()> {
        let t = self.expr(e, Some(&TyV::Ty(Ty::Scalar(Scalar::Bool))))?;
        self.unify(&TyV::Ty(Ty::Scalar(Scalar::Bool)), &t, e.span)?;
        Ok(())
    }

    fn expr_inner(&mut self, e: &Expr, hint: Option<&TyV>) -> Result<TyV> {
        let hint = hint.map(|h| self.shallow(h));
        match &e.kind {
            ExprKind::Lit(lit) => self.lit(e, lit, hint),
            ExprKind::Var(name) => self.name(e, name),
            ExprKind::CacheHint(_) => Ok(TyV::Ty(Ty::Cache)),
            ExprKind::Target(_) => Ok(TyV::Ty(Ty::Target)),
            ExprKind::Swizzle(_) => Ok(TyV::Ty(Ty::Swizzle)),
            ExprKind::Order(_) => Ok(TyV::Ty(Ty::Order)),
            ExprKind::Scope(_) => Ok(TyV::Ty(Ty::Scope)),
            ExprKind::Unary(op, inner) => self.unary(e, *op, inner, hint.as_ref()),
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, e.span, hint.as_ref()),
            ExprKind::Assign(place, value) => self.assign(place, value),
            ExprKind::AssignOp(op, place, value) => self.assign_op(e, *op, place, value),
            ExprKind::Cast(inner, to) => self.cast(e, inner, to),
            ExprKind::Index(base, index) => self.index(e, base, index),
            ExprKind::SliceFrom {
                base,
                start,
                end,
                mutable,
            } => self.slice_from(e, base, start, end.as_deref(), *mutable),
            ExprKind::RefMut(_) | ExprKind::Ref(_) => err(e.span, REFERENCE_USES),
            ExprKind::Field(base, field) => self.field(e, base, field),
            ExprKind::Call { path, generics, args } => self.call(e, path, generics, args, hint.as_ref()),
            ExprKind::MethodCall { receiver, method, args } => self.method_call(e, receiver, method, args),
            ExprKind::If { cond, then, els } => self.if_expr(e, cond, then, els.as_deref(), hint.as_ref()),
            ExprKind::While { cond, body, label } => self.while_expr(cond, body, label),
            ExprKind::Loop(body, label) => self.loop_expr(body, label, hint.as_ref()),
            ExprKind::For(f) => self.for_expr(f),
            ExprKind::Break(label, value) => self.break_expr(e, label, value.as_deref()),
            ExprKind::Continue(label) => self.break_or_continue(e, label),
            ExprKind::Return(value) => self.return_expr(e, value.as_deref()),
            ExprKind::Block(b) => self.block(b, hint.as_ref()),
            ExprKind::Array(items) => self.array(e, items, hint.as_ref()),
            ExprKind::Repeat(item, len) => self.repeat(e, item, len, hint.as_ref()),
            ExprKind::Match { scrutinee, arms } => self.match_expr(e, scrutinee, arms, hint.as_ref()),
            ExprKind::Tuple(items) => self.tuple(items, hint.as_ref()),
            ExprKind::TupleField(base, i) => {
                let bt = self.expr(base, None)?;
                self.tuple_field(&bt, *i, e.span)
            }
            ExprKind::StructLit { ty, fields } => self.struct_lit(e, ty, fields),
            ExprKind::Table(t) => {
                let t = &self.kernel.tables[*t];
                Ok(TyV::Ty(Ty::Array {
                    elem: Box::new(Ty::Scalar(t.elem)),
                    len: Len::Lit(t.values.len() as u64),
                }))
            }
            ExprKind::InlinePtx { ret, args, .. } => self.inline_ptx(ret, args),
            ExprKind::ClosureCall { name, args } => self.closure_call(e, name, args),
            ExprKind::Closure { .. } => unreachable!("parse makes a closure only the value of a `let`"),
            ExprKind::Assert { cond, .. } => {
                let want = TyV::Ty(Ty::Scalar(Scalar::Bool));
                let t = self.expr(cond, Some(&want))?;
                self.unify(&want, &t, cond.span).map_err(|_| {
                    let found = self.describe(&t);
                    cond.span.error(format!(
                        "an assertion's condition is a `bool`, not {found}; compare, e.g. `x != 0`"
                    ))
                })?;
                Ok(TyV::Ty(Ty::Unit))
            }
        }
    }

    /// A literal: an unsuffixed number takes the context's type, or a
    /// new type variable.
    fn lit(&mut self, e: &Expr, lit: &Lit, hint: Option<TyV>) -> Result<TyV> {
        match lit {
            Lit::Bool(_) => Ok(TyV::Ty(Ty::Scalar(Scalar::Bool))),
            Lit::Int(v, suffix) => {
                self.int_lits.push((e.id, *v, false, e.span));
                Ok(match suffix {
                    Some(s) => TyV::Ty(Ty::Scalar(*s)),
                    None => match hint {
                        Some(TyV::Ty(t)) if t.is_int() => TyV::Ty(t),
                        Some(TyV::Var(v)) if self.vars[v as usize].kind == VarKind::Int => TyV::Var(v),
                        _ => self.new_var(VarKind::Int),
                    },
                })
            }
            Lit::Float(_, suffix) => Ok(match suffix {
                Some(s) => TyV::Ty(Ty::Scalar(*s)),
                None => match hint {
                    Some(TyV::Ty(Ty::Scalar(s))) if s.is_prim_float() => TyV::Ty(Ty::Scalar(s)),
                    Some(TyV::Var(v)) if self.vars[v as usize].kind == VarKind::Float => TyV::Var(v),
                    _ => self.new_var(VarKind::Float),
                },
            }),
        }
    }

    /// A name: a local, a parameter or a const generic.
    fn name(&self, e: &Expr, name: &str) -> Result<TyV> {
        match self.lookup(name) {
            Some(Binding {
                kind: NameKind::Closure(_),
                ..
            }) => err(
                e.span,
                format!("the closure `{name}` can only be called in a kernel (`{name}(..)`), not passed or stored"),
            ),
            Some(b) => Ok(b.ty.clone()),
            None => err(
                e.span,
                format!(
                    "unknown name `{name}`; a kernel sees its parameters, its const generics, its locals and local `const`s (not items outside the kernel)"
                ),
            ),
        }
    }

    fn unary(&mut self, e: &Expr, op: UnOp, inner: &Expr, hint: Option<&TyV>) -> Result<TyV> {
        if let (UnOp::Neg, ExprKind::Lit(Lit::Int(..))) = (op, &inner.kind) {
            let t = self.expr(inner, hint)?;
            if let Some(l) = self.int_lits.last_mut() {
                l.2 = true;
            }
            self.negated.push((inner.id, e.span));
            return Ok(t);
        }
        let t = self.expr(inner, hint)?;
        let shown = self.shallow(&t);
        match (op, &shown) {
            (UnOp::Neg, TyV::Var(_)) => {
                self.negated.push((inner.id, e.span));
                Ok(t)
            }
            (UnOp::Neg, TyV::Ty(Ty::Scalar(s))) if s.is_float() || s.is_signed() => Ok(t),
            (UnOp::Neg, TyV::Ty(Ty::Scalar(s))) if s.is_int() => err(
                e.span,
                format!(
                    "cannot apply unary `-` to type `{}`; unsigned values cannot be negated",
                    s.rust_name()
                ),
            ),
            (UnOp::Not, TyV::Ty(Ty::Scalar(s))) if s.is_int() || *s == Scalar::Bool => Ok(t),
            (UnOp::Not, TyV::Var(v)) if self.vars[*v as usize].kind == VarKind::Int => Ok(t),
            _ => {
                let d = self.describe(&t);
                err(
                    e.span,
                    format!(
                        "cannot apply unary `{}` to {d}",
                        if op == UnOp::Neg { "-" } else { "!" }
                    ),
                )
            }
        }
    }

    fn binary(&mut self, op: BinOp, l: &Expr, r: &Expr, span: Loc, hint: Option<&TyV>) -> Result<TyV> {
        let bool_t = TyV::Ty(Ty::Scalar(Scalar::Bool));
        if op.is_lazy() {
            self.expect_bool(l)?;
            self.expect_bool(r)?;
            return Ok(bool_t);
        }
        if op.is_shift() {
            let lt = self.expr(l, hint)?;
            let rt = self.expr(r, None)?;
            self.shift_rhs(&rt, r.span)?;
            match self.shallow(&lt) {
                TyV::Ty(t) if t.is_int() => {}
                TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => {}
                _ => return err(l.span, "only integers can be shifted"),
            }
            return Ok(lt);
        }
        // The operands' own types win over the context (`(32 * n) as usize`
        // with `n: u32` multiplies u32s); the context only types what is
        // still a bare literal afterwards (`let x: u64 = 1 + 2`).
        let lt = self.expr(l, None)?;
        let rt = self.expr(r, Some(&lt))?;
        let mut t = self.unify(&lt, &rt, span)?;
        if !op.is_comparison()
            && let (TyV::Var(_), Some(h)) = (self.shallow(&t), hint)
            && let Ok(u) = self.unify(&t, h, span)
        {
            t = u;
        }
        if op.is_comparison() {
            match self.shallow(&t) {
                TyV::Tuple(_) | TyV::Ty(Ty::Tuple(_)) => {
                    return err(
                        span,
                        "tuples are not compared in kernels: compare their elements (`a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)`, `a.0 == b.0 && a.1 == b.1`)",
                    );
                }
                TyV::Array(..) => {
                    return err(span, "arrays are not compared in kernels: compare their elements");
                }
                _ => {}
            }
        }
        if let TyV::Ty(ty) = self.shallow(&t) {
            if op.is_comparison() {
                if ty.scalar().is_none() {
                    return err(span, format!("cannot compare values of type `{ty}`"));
                }
                if matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge) && ty == Ty::Scalar(Scalar::Bool) {
                    return err(span, "ordering comparisons on `bool` are not supported");
                }
            } else {
                self.arith_operand(op, &ty, span)?;
            }
        } else if let TyV::Var(v) = self.shallow(&t)
            && !op.is_comparison()
            && self.vars[v as usize].kind == VarKind::Float
            && matches!(op, BinOp::Rem | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
        {
            return err(span, format!("cannot apply `{}` to a float", op.symbol()));
        }
        Ok(if op.is_comparison() { bool_t } else { t })
    }

    pub(super) fn shift_rhs(&mut self, t: &TyV, span: Loc) -> Result<()> {
        match self.shallow(t) {
            TyV::Ty(t) if t.is_int() => Ok(()),
            TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => Ok(()),
            _ => err(span, "a shift amount must be an integer"),
        }
    }

    pub(super) fn arith_operand(&mut self, op: BinOp, t: &Ty, span: Loc) -> Result<()> {
        let s = t.scalar();
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => s.is_some_and(|s| s != Scalar::Bool),
            BinOp::Rem => s.is_some_and(|s| s.is_int()),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => s.is_some_and(|s| s.is_int() || s == Scalar::Bool),
            _ => true,
        };
        if ok {
            return Ok(());
        }
        let hint = if op == BinOp::Rem && s.is_some_and(|s| s.is_float()) {
            "; the float remainder is not supported in kernels"
        } else if matches!(t, Ty::F16x2) {
            "; use the half2 intrinsics `hadd2`, `hmul2`, `hfma2`"
        } else {
            ""
        };
        err(span, format!("cannot apply `{}` to `{t}`{hint}", op.symbol()))
    }

    fn cast(&mut self, e: &Expr, inner: &Expr, to: &Ty) -> Result<TyV> {
        let t = self.expr(inner, Some(&TyV::Ty(to.clone())))?;
        let from = match self.shallow(&t) {
            TyV::Var(v) => match self.vars[v as usize].kind {
                VarKind::Int => Ty::Scalar(Scalar::I32),
                VarKind::Float => Ty::Scalar(Scalar::F64),
            },
            TyV::Ty(t) => t,
            TyV::Array(..) | TyV::Tuple(_) => return err(e.span, "cannot cast an array or a tuple"),
            TyV::Never => return Ok(TyV::Ty(to.clone())),
        };
        let ok = match (from.scalar(), to.scalar()) {
            (Some(f), Some(t)) => {
                let prim = |s: Scalar| s.is_int() || s.is_prim_float();
                (prim(f) || f == Scalar::Bool) && prim(t)
            }
            _ => false,
        };
        if !ok {
            let hint = match (from.scalar(), to.scalar()) {
                (Some(Scalar::F16 | Scalar::Bf16), _) => {
                    "; `as` does not convert half-precision values: use `.to_f32()`"
                }
                (_, Some(Scalar::F16 | Scalar::Bf16)) => {
                    "; `as` does not convert to half precision: use `f16::from_f32(x)`"
                }
                (_, Some(Scalar::Bool)) => "; compare instead, e.g. `x != 0`",
                _ => "",
            };
            return err(e.span, format!("cannot cast `{from}` as `{to}`{hint}"));
        }
        Ok(TyV::Ty(to.clone()))
    }

    fn field(&mut self, e: &Expr, base: &Expr, field: &str) -> Result<TyV> {
        let bt = self.expr(base, None)?;
        let bt = self.known(&bt, base.span)?;
        if let Ty::Struct(st) = &bt {
            return match st.fields.iter().find(|(n, _)| n == field) {
                Some((_, t)) => Ok(TyV::Ty(t.clone())),
                None => err(e.span, format!("`{}` has no field `{field}`", st.name)),
            };
        }
        match (&bt, field) {
            (Ty::U32x4, "x" | "y" | "z" | "w") => Ok(TyV::Ty(Ty::Scalar(Scalar::U32))),
            (Ty::U32x4, _) => err(
                e.span,
                format!("`u32x4` has the fields `x`, `y`, `z`, `w`, not `{field}`"),
            ),
            _ => err(
                e.span,
                format!("`{bt}` has no field `{field}`; only `u32x4` has fields (`x`, `y`, `z`, `w`)"),
            ),
        }
    }

    fn array(&mut self, e: &Expr, items: &[Expr], hint: Option<&TyV>) -> Result<TyV> {
        let Some(first) = items.first() else {
            return err(e.span, "an empty array has no use in a kernel");
        };
        let elem_hint = self.array_elem_hint(hint);
        let mut t = self.expr(first, elem_hint.as_ref())?;
        for item in &items[1..] {
            let it = self.expr(item, Some(&t))?;
            t = self.unify(&t, &it, item.span)?;
        }
        self.array_elem_ok(&t, first.span)?;
        Ok(TyV::Array(Box::new(t), Len::Lit(items.len() as u64)))
    }

    fn repeat(&mut self, e: &Expr, item: &Expr, len: &Len, hint: Option<&TyV>) -> Result<TyV> {
        let elem_hint = self.array_elem_hint(hint);
        let t = self.expr(item, elem_hint.as_ref())?;
        self.array_elem_ok(&t, item.span)?;
        self.check_len(len, e.span)?;
        Ok(TyV::Array(Box::new(t), len.clone()))
    }

    fn array_elem_hint(&mut self, hint: Option<&TyV>) -> Option<TyV> {
        match hint {
            Some(TyV::Ty(Ty::Array { elem, .. })) => Some(TyV::Ty((**elem).clone())),
            Some(TyV::Array(elem, _)) => Some((**elem).clone()),
            _ => None,
        }
    }

    fn array_elem_ok(&mut self, t: &TyV, span: Loc) -> Result<()> {
        match self.shallow(t) {
            TyV::Var(_) => Ok(()),
            TyV::Array(e, _) => self.array_elem_ok(&e, span),
            TyV::Ty(elem) if elem.is_value() => Ok(()),
            other => {
                let d = self.describe(&other);
                err(span, format!("an array cannot hold {d}"))
            }
        }
    }

    fn check_len(&mut self, len: &Len, span: Loc) -> Result<()> {
        if let Len::Param(p) = len {
            match self.lookup(p) {
                Some(b) if b.kind == NameKind::ConstGeneric && b.ty == TyV::Ty(Ty::Scalar(Scalar::Usize)) => {}
                _ => {
                    return err(
                        span,
                        format!("an array length must be a literal or a `usize` const generic, and `{p}` is not one"),
                    );
                }
            }
        }
        Ok(())
    }

    fn tuple(&mut self, items: &[Expr], hint: Option<&TyV>) -> Result<TyV> {
        let hints = match hint.and_then(|h| self.tuple_parts(h)) {
            Some(h) if h.len() == items.len() => h.into_iter().map(Some).collect(),
            _ => vec![None; items.len()],
        };
        let mut parts = Vec::with_capacity(items.len());
        for (item, h) in items.iter().zip(hints) {
            let t = self.expr(item, h.as_ref())?;
            self.tuple_elem_ok(&t, item.span)?;
            parts.push(t);
        }
        Ok(TyV::Tuple(parts))
    }

    fn tuple_elem_ok(&mut self, t: &TyV, span: Loc) -> Result<()> {
        match self.shallow(t) {
            TyV::Var(_) | TyV::Array(..) | TyV::Tuple(_) => Ok(()),
            TyV::Ty(t) if t.is_value() => Ok(()),
            other => {
                let d = self.describe(&other);
                err(
                    span,
                    format!("a tuple holds values (numbers, vectors, arrays), not {d}"),
                )
            }
        }
    }

    pub(super) fn tuple_field(&mut self, t: &TyV, i: usize, span: Loc) -> Result<TyV> {
        match self.tuple_parts(t) {
            Some(parts) if i < parts.len() => Ok(parts[i].clone()),
            Some(parts) => err(
                span,
                format!("this tuple has {} fields, `.{i}` is not one", parts.len()),
            ),
            None => {
                let d = self.describe(t);
                err(span, format!("`.{i}` is a tuple field, and this is {d}"))
            }
        }
    }

    fn struct_lit(&mut self, e: &Expr, ty: &StructTy, fields: &[(String, Expr, Loc)]) -> Result<TyV> {
        for (name, value, span) in fields {
            let Some((_, want)) = ty.fields.iter().find(|(n, _)| n == name) else {
                return err(*span, format!("`{}` has no field `{name}`", ty.name));
            };
            if fields.iter().filter(|(n, ..)| n == name).count() > 1 {
                return err(*span, format!("the field `{name}` is given twice"));
            }
            let want = TyV::Ty(want.clone());
            let t = self.expr(value, Some(&want))?;
            self.unify(&want, &t, value.span)?;
        }
        if let Some((name, _)) = ty.fields.iter().find(|(n, _)| !fields.iter().any(|(f, ..)| f == n)) {
            return err(e.span, format!("missing field `{name}` of `{}`", ty.name));
        }
        Ok(TyV::Ty(Ty::Struct(ty.clone())))
    }

    fn inline_ptx(&mut self, ret: &Ty, args: &[Expr]) -> Result<TyV> {
        for a in args {
            let t = self.expr(a, None)?;
            let t = self.known(&t, a.span)?;
            if !matches!(t, Ty::Scalar(_) | Ty::F16x2) {
                return err(
                    a.span,
                    format!("a `ptx!` operand must be a scalar or `f16x2`, not `{t}`"),
                );
            }
        }
        Ok(TyV::Ty(ret.clone()))
    }
}
