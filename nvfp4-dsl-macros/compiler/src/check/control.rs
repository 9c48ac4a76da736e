//! Control flow: `if`/`else`, `while`, `loop` and `for` with their labels,
//! `break`, `continue` and `return`.

use super::*;

impl Checker<'_> {
    pub(super) fn if_expr(
        &mut self,
        e: &Expr,
        cond: &Expr,
        then: &Block,
        els: Option<&Expr>,
        hint: Option<&TyV>,
    ) -> Result<TyV> {
        self.expect_bool(cond)?;
        let tt = self.block(then, hint)?;
        match els {
            None => {
                let shown = self.shallow(&tt);
                if shown != TyV::Ty(Ty::Unit) && shown != TyV::Never {
                    return err(
                        e.span,
                        "an `if` without `else` has type `()`; add an `else` branch to use it as a value",
                    );
                }
                Ok(TyV::Ty(Ty::Unit))
            }
            Some(els) => {
                let et = self.expr(els, Some(&tt))?;
                self.unify(&tt, &et, els.span)
            }
        }
    }

    pub(super) fn while_expr(&mut self, cond: &Expr, body: &Block, label: &Option<String>) -> Result<TyV> {
        self.expect_bool(cond)?;
        self.loop_body(body, label)?;
        Ok(TyV::Ty(Ty::Unit))
    }

    pub(super) fn for_expr(&mut self, f: &ForLoop) -> Result<TyV> {
        let st = self.expr(&f.start, None)?;
        let et = self.expr(&f.end, Some(&st))?;
        let vt = self.unify(&st, &et, f.end.span)?;
        let ok = match self.shallow(&vt) {
            TyV::Ty(t) => t.is_int(),
            TyV::Var(v) => self.vars[v as usize].kind == VarKind::Int,
            TyV::Never | TyV::Array(..) | TyV::Tuple(_) => false,
        };
        if !ok {
            return err(f.start.span, "a `for` range must be over integers");
        }
        if let Some(step) = &f.step {
            let usize_t = TyV::Ty(Ty::Scalar(Scalar::Usize));
            let s = self.expr(step, Some(&usize_t))?;
            self.unify(&usize_t, &s, step.span)?;
            if f.inclusive {
                return err(
                    step.span,
                    "`step_by` on an inclusive range is not supported; use `(a..b + 1).step_by(s)`",
                );
            }
        }
        self.scopes.push(Vec::new());
        self.bind(&f.var, vt, false, NameKind::Local);
        self.loop_body(&f.body, &f.label)?;
        self.scopes.pop();
        Ok(TyV::Ty(Ty::Unit))
    }

    pub(super) fn loop_body(&mut self, body: &Block, label: &Option<String>) -> Result<()> {
        self.loop_labels.push(label.clone());
        let t = self.block(body, None);
        self.loop_labels.pop();
        let t = t?;
        let t = self.shallow(&t);
        if t != TyV::Ty(Ty::Unit) && t != TyV::Never {
            return err(body.span, "a loop body has type `()`; end its last statement with `;`");
        }
        Ok(())
    }

    pub(super) fn break_or_continue(&mut self, e: &Expr, label: &Option<String>) -> Result<TyV> {
        if self.loop_labels.is_empty() {
            return err(e.span, "`break` and `continue` are only allowed inside a loop");
        }
        if let Some(l) = label
            && !self.loop_labels.iter().any(|x| x.as_ref() == Some(l))
        {
            return err(
                e.span,
                format!(
                    "no enclosing loop is labeled `{l}`: `break {l}` and `continue {l}` name a loop around them in the same function"
                ),
            );
        }
        Ok(TyV::Never)
    }

    pub(super) fn return_expr(&mut self, e: &Expr, value: Option<&Expr>) -> Result<TyV> {
        match (&self.ret, value) {
            (None, _) => Ok(TyV::Never),
            (Some(ret), None) => {
                let ret = ret.clone();
                self.unify(&ret, &TyV::Ty(Ty::Unit), e.span).map_err(|_| {
                    e.span
                        .error("this device function returns a value: write `return value;`")
                })?;
                Ok(TyV::Never)
            }
            (Some(ret), Some(v)) => {
                let ret = ret.clone();
                let t = self.expr(v, Some(&ret))?;
                self.unify(&ret, &t, v.span)?;
                Ok(TyV::Never)
            }
        }
    }
}
