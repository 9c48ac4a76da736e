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
        self.loop_labels.push(LoopScope::new(label, false, None));
        self.loop_block(body).map(drop)
    }

    /// The body of the innermost loop scope, which it pops.
    fn loop_block(&mut self, body: &Block) -> Result<LoopScope> {
        let t = self.block(body, None);
        let scope = self.loop_labels.pop().expect("the loop's scope");
        let t = t?;
        let t = self.shallow(&t);
        if t != TyV::Ty(Ty::Unit) && t != TyV::Never {
            return err(body.span, "a loop body has type `()`; end its last statement with `;`");
        }
        Ok(scope)
    }

    /// `loop { body }`: `()`, or the type its `break value`s share.
    pub(super) fn loop_expr(&mut self, body: &Block, label: &Option<String>, hint: Option<&TyV>) -> Result<TyV> {
        self.loop_labels.push(LoopScope::new(label, true, hint.cloned()));
        let scope = self.loop_block(body)?;
        match (scope.valued, scope.plain_break) {
            (false, _) => Ok(TyV::Ty(Ty::Unit)),
            (true, Some(span)) => err(
                span,
                "this `loop` gives a value (another `break` leaves it with one): every `break` out of it needs a value",
            ),
            (true, None) => Ok(scope.value.expect("a `break value` typed it")),
        }
    }

    /// `break`, `break 'label` or `break value`: leaves a loop around it;
    /// a value only out of a `loop`.
    pub(super) fn break_expr(&mut self, e: &Expr, label: &Option<String>, value: Option<&Expr>) -> Result<TyV> {
        let t = self.break_or_continue(e, label)?;
        let i = self.loop_target(label).expect("checked to exist");
        let Some(value) = value else {
            let scope = &mut self.loop_labels[i];
            if scope.is_loop && scope.plain_break.is_none() {
                scope.plain_break = Some(e.span);
            }
            return Ok(t);
        };
        if !self.loop_labels[i].is_loop {
            return err(
                value.span,
                "only a `loop` gives a value with `break value`, not a `while` or `for`; assign to a variable before `break`",
            );
        }
        let want = self.loop_labels[i].value.clone();
        let vt = self.expr(value, want.as_ref())?;
        let vt = match want {
            Some(w) => self.unify(&w, &vt, value.span)?,
            None => vt,
        };
        let scope = &mut self.loop_labels[i];
        (scope.value, scope.valued) = (Some(vt), true);
        Ok(t)
    }

    /// The index in `loop_labels` of the loop `label` names (the innermost
    /// without one).
    fn loop_target(&self, label: &Option<String>) -> Option<usize> {
        match label {
            None => self.loop_labels.len().checked_sub(1),
            Some(l) => self.loop_labels.iter().rposition(|s| s.label.as_ref() == Some(l)),
        }
    }

    pub(super) fn break_or_continue(&mut self, e: &Expr, label: &Option<String>) -> Result<TyV> {
        if self.loop_labels.is_empty() {
            return err(e.span, "`break` and `continue` are only allowed inside a loop");
        }
        if let Some(l) = label
            && self.loop_target(label).is_none()
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

/// A loop around the expression being checked.
#[derive(Debug)]
pub(super) struct LoopScope {
    label: Option<String>,
    /// A `loop` (which a `break value` may leave), not a `while` or `for`.
    is_loop: bool,
    /// The type of the `loop`'s value: the context's, then its `break
    /// value`s'.
    value: Option<TyV>,
    /// Whether a `break value` leaves it.
    valued: bool,
    /// The first `break` without a value that leaves it.
    plain_break: Option<Loc>,
}

impl LoopScope {
    fn new(label: &Option<String>, is_loop: bool, value: Option<TyV>) -> LoopScope {
        LoopScope {
            label: label.clone(),
            is_loop,
            value,
            valued: false,
            plain_break: None,
        }
    }
}
