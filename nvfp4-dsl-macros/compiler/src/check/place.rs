//! Places and indexing: assignments (`=` and `op=`) and the targets they
//! write, `a[i]` reads and `&a[start..]` views.

use super::*;

impl Checker<'_> {
    pub(super) fn assign(&mut self, place: &Expr, value: &Expr) -> Result<TyV> {
        let pt = self.place(place)?;
        let vt = self.expr(value, Some(&pt))?;
        self.unify(&pt, &vt, value.span)?;
        Ok(TyV::Ty(Ty::Unit))
    }

    pub(super) fn assign_op(&mut self, e: &Expr, op: BinOp, place: &Expr, value: &Expr) -> Result<TyV> {
        if op.is_lazy() || op.is_comparison() {
            return err(e.span, "invalid compound assignment");
        }
        let pt = self.place(place)?;
        if op.is_shift() {
            let pk = self.known(&pt, place.span)?;
            let vt = self.expr(value, None)?;
            self.shift_rhs(&vt, value.span)?;
            if !pk.is_int() {
                return err(e.span, format!("cannot shift a value of type `{pk}`"));
            }
        } else {
            // The value first: it may give the place its type, as in Rust
            // (`let mut acc = 0.0; acc += x[i];` makes `acc` an `f32`).
            let vt = self.expr(value, Some(&pt))?;
            self.unify(&pt, &vt, value.span)?;
            let pk = self.known(&pt, place.span)?;
            self.arith_operand(op, &pk, e.span)?;
        }
        Ok(TyV::Ty(Ty::Unit))
    }

    /// Types an assignment target and checks that it is writable.
    fn place(&mut self, p: &Expr) -> Result<TyV> {
        match &p.kind {
            ExprKind::Var(name) => {
                let Some(b) = self.lookup(name).cloned() else {
                    return err(p.span, format!("unknown name `{name}`"));
                };
                if !b.mutable {
                    let why = match b.kind {
                        NameKind::ConstGeneric | NameKind::LocalConst => {
                            format!("`{name}` is a constant and cannot be assigned")
                        }
                        NameKind::Param if name == "self" => "cannot assign to `self` of a method that takes `self` or `&self`: take `&mut self` to change the caller's struct, or `mut self` to change a copy".to_string(),
                        NameKind::Param | NameKind::ByRef => {
                            format!("cannot assign to the parameter `{name}`; declare it `mut {name}: ...`")
                        }
                        NameKind::Local => {
                            format!("cannot assign twice to immutable variable `{name}`; declare it `let mut {name}`")
                        }
                        NameKind::Captured => format!(
                            "a closure in a kernel captures `{name}` by value and cannot assign to it; return the new value instead (`let f = |v| v + 1; {name} = f({name});`)"
                        ),
                        NameKind::Closure(_) => format!("`{name}` is a closure and cannot be assigned"),
                    };
                    return err(p.span, why);
                }
                let t = b.ty.clone();
                if let TyV::Ty(ty) = self.shallow(&t)
                    && ty.is_memory()
                {
                    return err(p.span, "memory views cannot be reassigned; bind a new name");
                }
                Ok(self.record(p, t))
            }
            ExprKind::Table(_) => err(
                p.span,
                "a `#[device] const` cannot be changed; copy it into a local to change the copy (`let mut t = TABLE;`)",
            ),
            ExprKind::Index(base, _) if matches!(base.kind, ExprKind::Table(_)) => self.place(base),
            ExprKind::Index(base, index) => {
                if let Some(t) = self.shared_cell(base, index)? {
                    return Ok(self.record(p, t));
                }
                let bt = match &base.kind {
                    ExprKind::Var(_) | ExprKind::Field(..) | ExprKind::Index(..) => {
                        if let ExprKind::Var(n) = &base.kind
                            && let Some(b) = self.lookup(n).cloned()
                            && matches!(self.shallow(&b.ty), TyV::Ty(Ty::Array { .. }) | TyV::Array(..))
                        {
                            self.place(base)?
                        } else if let ExprKind::Index(..) = &base.kind {
                            self.place(base)?
                        } else {
                            self.expr(base, None)?
                        }
                    }
                    _ => self.expr(base, None)?,
                };
                if let TyV::Array(elem, _) = self.shallow(&bt) {
                    self.index_type(
                        &Ty::Array {
                            elem: Box::new(Ty::Unit),
                            len: Len::Lit(0),
                        },
                        index,
                    )?;
                    return Ok(self.record(p, *elem));
                }
                let bt = self.known(&bt, base.span)?;
                if let Ty::Slice { mutable: false, .. } = bt {
                    return err(
                        p.span,
                        "cannot assign through a `&[T]`; declare the parameter `&mut [T]`",
                    );
                }
                not_a_row(&bt, base, p.span)?;
                self.index_type(&bt, index)?;
                match bt.elem() {
                    Some(elem) => {
                        let t = TyV::Ty(elem.clone());
                        Ok(self.record(p, t))
                    }
                    None => err(base.span, format!("cannot index a value of type `{bt}`")),
                }
            }
            ExprKind::TupleField(base, i) => {
                let bt = self.place(base)?;
                let t = self.tuple_field(&bt, *i, p.span)?;
                Ok(self.record(p, t))
            }
            ExprKind::Field(base, field) => {
                let bt = self.place(base)?;
                let bt = self.known(&bt, base.span)?;
                if let Ty::Struct(st) = &bt
                    && let Some((_, t)) = st.fields.iter().find(|(n, _)| n == field)
                {
                    let t = TyV::Ty(t.clone());
                    return Ok(self.record(p, t));
                }
                match (&bt, field.as_str()) {
                    (Ty::U32x4, "x" | "y" | "z" | "w") => {
                        let t = TyV::Ty(Ty::Scalar(Scalar::U32));
                        Ok(self.record(p, t))
                    }
                    _ => err(p.span, format!("`{bt}` has no field `{field}`")),
                }
            }
            _ => err(
                p.span,
                "invalid assignment target; assign to a `let mut` variable, `a[i]`, or a vector field",
            ),
        }
    }

    pub(super) fn index(&mut self, e: &Expr, base: &Expr, index: &Expr) -> Result<TyV> {
        if let Some(t) = self.shared_cell(base, index)? {
            return Ok(t);
        }
        let bt = self.expr(base, None)?;
        if let TyV::Array(elem, _) = self.shallow(&bt) {
            self.index_type(
                &Ty::Array {
                    elem: Box::new(Ty::Unit),
                    len: Len::Lit(0),
                },
                index,
            )?;
            return Ok(*elem);
        }
        let bt = self.known(&bt, base.span)?;
        not_a_row(&bt, base, e.span)?;
        self.index_type(&bt, index)?;
        match bt.elem() {
            Some(elem) => Ok(TyV::Ty(elem.clone())),
            None => err(
                base.span,
                format!("cannot index a value of type `{bt}`; index slices, shared memory or local arrays"),
            ),
        }
    }

    pub(super) fn slice_from(
        &mut self,
        e: &Expr,
        base: &Expr,
        start: &Expr,
        end: Option<&Expr>,
        mutable: bool,
    ) -> Result<TyV> {
        let bt = self.expr(base, None)?;
        let bt = self.known(&bt, base.span)?;
        let Ty::Slice {
            elem,
            mutable: base_mut,
        } = &bt
        else {
            return err(
                base.span,
                format!("`&x[start..]` takes a view of a global slice, not of `{bt}`"),
            );
        };
        if mutable && !base_mut {
            return err(
                e.span,
                "cannot take a mutable view of a `&[T]`; declare the parameter `&mut [T]`",
            );
        }
        let usize_t = TyV::Ty(Ty::Scalar(Scalar::Usize));
        for bound in std::iter::once(start).chain(end) {
            let t = self.expr(bound, Some(&usize_t))?;
            self.unify(&usize_t, &t, bound.span)?;
        }
        Ok(TyV::Ty(Ty::Slice {
            elem: elem.clone(),
            mutable,
        }))
    }

    /// `tile[r][c]` of a 2-D shared array `tile: SharedArray<[T; C], R>`:
    /// `T`, with the row `tile[r]` typed `[T; C]`; `None` when `base` is
    /// not a row of one.
    fn shared_cell(&mut self, base: &Expr, col: &Expr) -> Result<Option<TyV>> {
        let ExprKind::Index(rows, row) = &base.kind else {
            return Ok(None);
        };
        let ExprKind::Var(name) = &rows.kind else {
            return Ok(None);
        };
        let Some(b) = self.lookup(name).cloned() else {
            return Ok(None);
        };
        let TyV::Ty(rt) = self.shallow(&b.ty) else {
            return Ok(None);
        };
        let Some((elem, cols)) = rt.shared_rows() else {
            return Ok(None);
        };
        let row_ty = Ty::Array {
            elem: Box::new(elem.clone()),
            len: cols.clone(),
        };
        let elem = TyV::Ty(elem.clone());
        self.expr(rows, None)?;
        self.index_type(&rt, row)?;
        self.index_type(&rt, col)?;
        self.record(base, TyV::Ty(row_ty));
        Ok(Some(elem))
    }

    fn index_type(&mut self, base: &Ty, index: &Expr) -> Result<()> {
        let usize_t = TyV::Ty(Ty::Scalar(Scalar::Usize));
        match base {
            Ty::Slice { .. } | Ty::Array { .. } => {
                let it = self.expr(index, Some(&usize_t))?;
                self.unify(&usize_t, &it, index.span).map_err(|_| {
                    index
                        .span
                        .error("slices and arrays are indexed by `usize` (as in Rust); convert with `as usize`")
                })?;
                Ok(())
            }
            Ty::SharedArray { .. } | Ty::SharedSlice { .. } => {
                let it = self.expr(index, None)?;
                match self.shallow(&it) {
                    TyV::Ty(Ty::Scalar(Scalar::U32 | Scalar::I32 | Scalar::Usize)) => Ok(()),
                    TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => Ok(()),
                    _ => err(index.span, "shared memory is indexed by `u32`, `i32` or `usize`"),
                }
            }
            other => err(index.span, format!("cannot index a value of type `{other}`")),
        }
    }
}

/// A row of a 2-D shared array is in shared memory, not a value.
fn not_a_row(bt: &Ty, base: &Expr, span: Loc) -> Result<()> {
    if bt.shared_rows().is_none() {
        return Ok(());
    }
    let name = match &base.kind {
        ExprKind::Var(n) => n.as_str(),
        _ => "tile",
    };
    err(
        span,
        format!(
            "a row of the 2-D shared array `{name}: {bt}` is not a value; read and write its elements, `{name}[r][c]`"
        ),
    )
}
