//! Patterns: the names a `let` binds (tuples destructured), and `match`
//! with its arms' patterns and guards.

use super::*;

impl Checker<'_> {
    /// Binds the names of a `let` pattern to the parts of a value of type `t`.
    pub(super) fn bind_let(&mut self, pat: &LetPat, t: TyV) -> Result<()> {
        match pat {
            LetPat::Wild => Ok(()),
            LetPat::Name { name, span, mutable } => {
                let shown = self.shallow(&t);
                if let TyV::Ty(ty) = &shown
                    && matches!(
                        ty,
                        Ty::Unit | Ty::Cache | Ty::Target | Ty::Swizzle | Ty::Order | Ty::Scope | Ty::TensorMap
                    )
                {
                    return err(
                        *span,
                        format!(
                            "cannot bind a value of type `{ty}` to a name; pass it directly to the intrinsic that takes it"
                        ),
                    );
                }
                if *mutable
                    && let TyV::Ty(ty) = &shown
                    && ty.is_memory()
                {
                    return err(*span, "memory views cannot be `mut`; bind a new name for another view");
                }
                self.bind(name, t, *mutable, NameKind::Local);
                Ok(())
            }
            LetPat::Array(pats, span) => {
                let elem = match self.shallow(&t) {
                    TyV::Array(elem, Len::Lit(n)) if n == pats.len() as u64 => *elem,
                    TyV::Ty(Ty::Array { elem, len: Len::Lit(n) }) if n == pats.len() as u64 => TyV::Ty(*elem),
                    _ => {
                        let d = self.describe(&t);
                        return err(
                            *span,
                            format!(
                                "this pattern takes an array of {} elements, found {d}; an array pattern names every element (`_` for those it skips)",
                                pats.len()
                            ),
                        );
                    }
                };
                for p in pats {
                    self.bind_let(p, elem.clone())?;
                }
                Ok(())
            }
            LetPat::Tuple(pats, span) => {
                let parts = self.tuple_parts(&t);
                match parts {
                    Some(parts) if parts.len() == pats.len() => {
                        for (p, t) in pats.iter().zip(parts) {
                            self.bind_let(p, t)?;
                        }
                        Ok(())
                    }
                    _ => {
                        let d = self.describe(&t);
                        err(
                            *span,
                            format!("this pattern takes a tuple of {} values, found {d}", pats.len()),
                        )
                    }
                }
            }
        }
    }

    /// The element types of a tuple type.
    pub(super) fn tuple_parts(&mut self, t: &TyV) -> Option<Vec<TyV>> {
        match self.shallow(t) {
            TyV::Tuple(parts) => Some(parts),
            TyV::Ty(Ty::Tuple(parts)) => Some(parts.into_iter().map(TyV::Ty).collect()),
            _ => None,
        }
    }

    /// `match` on an integer or a `bool`: each arm's pattern typed as the
    /// scrutinee, its bindings in a scope of the arm, a `bool` guard, and
    /// the arms' values unified as `if`/`else` branches are.
    pub(super) fn match_expr(&mut self, e: &Expr, scrutinee: &Expr, arms: &[Arm], hint: Option<&TyV>) -> Result<TyV> {
        let st = self.expr(scrutinee, None)?;
        if !self.matchable(&st) {
            let d = self.describe(&st);
            return err(
                scrutinee.span,
                format!("`match` in kernels is on integers, `bool`s and tuples of them, not {d}; use `if`/`else`"),
            );
        }
        // The context's type is a hint only (as for `if`/`else`): the arms'
        // own types decide.
        let mut result: Option<TyV> = None;
        let mut all_diverge = true;
        for arm in arms {
            self.scopes.push(Vec::new());
            self.pattern(&arm.pat, &st)?;
            if let Some(g) = &arm.guard {
                self.expect_bool(g)?;
            }
            let t = self.expr(&arm.body, result.as_ref().or(hint))?;
            self.scopes.pop();
            if t == TyV::Never {
                continue;
            }
            all_diverge = false;
            result = Some(match result {
                Some(r) => self.unify(&r, &t, arm.body.span)?,
                None => t,
            });
        }
        if arms.is_empty() {
            return err(e.span, "a `match` needs at least one arm");
        }
        if all_diverge {
            return Ok(TyV::Never);
        }
        Ok(result.unwrap_or(TyV::Ty(Ty::Unit)))
    }

    /// Whether `match` takes a value of type `t`: an integer, a `bool`, or
    /// a tuple of them.
    fn matchable(&mut self, t: &TyV) -> bool {
        match self.shallow(t) {
            TyV::Ty(t) => {
                t.is_int()
                    || t == Ty::Scalar(Scalar::Bool)
                    || self
                        .tuple_parts(&TyV::Ty(t))
                        .is_some_and(|p| p.iter().all(|q| self.matchable(q)))
            }
            TyV::Var(v) => self.vars[v as usize].kind == VarKind::Int,
            TyV::Tuple(parts) => parts.iter().all(|q| self.matchable(q)),
            TyV::Never | TyV::Array(..) => false,
        }
    }

    fn pattern(&mut self, p: &Pat, st: &TyV) -> Result<()> {
        match p {
            Pat::Tuple(pats, span) => match self.tuple_parts(st) {
                Some(parts) if parts.len() == pats.len() => {
                    for (q, t) in pats.iter().zip(parts) {
                        self.pattern(q, &t)?;
                    }
                    Ok(())
                }
                _ => {
                    let d = self.describe(st);
                    err(
                        *span,
                        format!("this pattern takes a tuple of {} values, found {d}", pats.len()),
                    )
                }
            },
            Pat::Wild => Ok(()),
            Pat::Ident(name, span) => {
                if let Some(b) = self.lookup(name)
                    && matches!(b.kind, NameKind::LocalConst | NameKind::ConstGeneric)
                {
                    return err(
                        *span,
                        format!(
                            "compare with the constant in a guard: `v if v == {name} =>` (constants are not patterns in kernels)"
                        ),
                    );
                }
                self.bind(name, st.clone(), false, NameKind::Local);
                Ok(())
            }
            Pat::Lit(x) => {
                let t = self.expr(x, Some(st))?;
                self.unify(st, &t, x.span)?;
                Ok(())
            }
            Pat::Range { lo, hi, .. } => {
                let bool_t = TyV::Ty(Ty::Scalar(Scalar::Bool));
                for b in [lo, hi].into_iter().flatten() {
                    let t = self.expr(b, Some(st))?;
                    if self.shallow(&t) == bool_t {
                        return err(b.span, "ranges of `bool` are not patterns; write `true` or `false`");
                    }
                    self.unify(st, &t, b.span)?;
                }
                Ok(())
            }
            Pat::Or(ps) => {
                for q in ps {
                    if let Some((name, span)) = binding(q) {
                        return err(
                            span,
                            format!(
                                "alternatives of `|` bind no names in kernels (`{name}` here): write `_` and test the value in a guard, or one arm per alternative"
                            ),
                        );
                    }
                    self.pattern(q, st)?;
                }
                Ok(())
            }
        }
    }
}

/// A name a pattern binds, and where.
fn binding(p: &Pat) -> Option<(&str, Loc)> {
    match p {
        Pat::Ident(name, span) => Some((name, *span)),
        Pat::Or(ps) | Pat::Tuple(ps, _) => ps.iter().find_map(binding),
        Pat::Wild | Pat::Lit(_) | Pat::Range { .. } => None,
    }
}
