//! Closures: a `let` binds one with the names in scope there (what it
//! captures, read-only: a kernel's closure captures by value); each call
//! checks its arguments against the parameters. The first call types the
//! body, once (a closure has one type, as in Rust): parameters without an
//! annotation take the types of its arguments.

use super::*;

/// A closure bound by a `let`.
pub(super) struct ClosureInfo {
    /// Its expression (parameters and body).
    id: ExprId,
    /// The parameters' types; `None` until the first call gives one.
    params: Vec<Option<TyV>>,
    /// The result's type, once the body is checked.
    ret: Option<TyV>,
    /// The names in scope where it is created, its captures among them.
    pub(super) scopes: Vec<Vec<Binding>>,
    /// The locals its body names: a call is not checked where one of
    /// them is poisoned (see `recover`).
    pub(super) mentions: Vec<String>,
}

impl Checker<'_> {
    /// `let name = |..| ..;`.
    pub(super) fn bind_closure(&mut self, name: &str, e: &Expr) {
        let ExprKind::Closure { params, .. } = &e.kind else {
            unreachable!("parse binds only closures here")
        };
        let scopes = self.scopes.iter().map(|s| s.iter().map(captured).collect()).collect();
        self.closures.push(ClosureInfo {
            id: e.id,
            params: params.iter().map(|(_, t)| t.clone().map(TyV::Ty)).collect(),
            ret: None,
            scopes,
            mentions: recover::expr_mentions(e),
        });
        self.bind(
            name,
            TyV::Ty(Ty::Unit),
            false,
            NameKind::Closure(self.closures.len() - 1),
        );
    }

    /// `name(args)` of a closure.
    pub(super) fn closure_call(&mut self, e: &Expr, name: &str, args: &[Expr]) -> Result<TyV> {
        let Some(NameKind::Closure(idx)) = self.lookup(name).map(|b| b.kind) else {
            return err(
                e.span,
                format!(
                    "`{name}` is not a closure; a kernel calls intrinsics, `#[device]` functions and closures bound with `let`"
                ),
            );
        };
        let count = self.closures[idx].params.len();
        if args.len() != count {
            return err(
                e.span,
                format!(
                    "the closure `{name}` takes {count} argument{}, {} given",
                    if count == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        for (i, a) in args.iter().enumerate() {
            let want = self.closures[idx].params[i].clone();
            let t = self.expr(a, want.as_ref())?;
            match want {
                Some(w) => {
                    self.unify(&w, &t, a.span).map_err(|_| {
                        let (w, found) = (self.describe(&w), self.describe(&t));
                        a.span.error(format!(
                            "argument {} of the closure `{name}` must be {w}, found {found}",
                            i + 1
                        ))
                    })?;
                }
                None => self.closures[idx].params[i] = Some(t),
            }
        }
        match &self.closures[idx].ret {
            Some(ret) => Ok(ret.clone()),
            None => self.closure_body(idx),
        }
    }

    /// Types a closure's body, in the scope it was created in, with its
    /// parameters bound to the types of the first call's arguments.
    fn closure_body(&mut self, idx: usize) -> Result<TyV> {
        let kernel = self.kernel;
        let Some(ExprKind::Closure { params, ret, body }) = find_expr(kernel, self.closures[idx].id).map(|d| &d.kind)
        else {
            unreachable!("a closure's id names its expression")
        };
        let scopes = std::mem::replace(&mut self.scopes, self.closures[idx].scopes.clone());
        // A `break` in the body cannot leave a loop around the closure.
        let labels = std::mem::take(&mut self.loop_labels);
        self.scopes.push(Vec::new());
        let types = self.closures[idx].params.clone();
        let mut t = Ok(TyV::Ty(Ty::Unit));
        for ((pat, _), ty) in params.iter().zip(types) {
            t = t.and_then(|_| {
                self.bind_let(pat, ty.expect("each argument typed its parameter"))?;
                Ok(TyV::Ty(Ty::Unit))
            });
        }
        let declared = ret.clone().map(TyV::Ty);
        let t = t.and_then(|_| {
            let t = self.expr(body, declared.as_ref())?;
            match &declared {
                Some(d) if t != TyV::Never => self.unify(d, &t, body.span),
                _ => Ok(t),
            }
        });
        self.scopes = scopes;
        self.loop_labels = labels;
        let t = t?;
        self.closures[idx].ret = Some(t.clone());
        Ok(t)
    }
}

/// A name as a closure sees it: a variable it captures is read-only (its
/// value at the closure's creation).
fn captured(b: &Binding) -> Binding {
    match b.kind {
        NameKind::Local | NameKind::Param => Binding {
            mutable: false,
            kind: NameKind::Captured,
            ..b.clone()
        },
        _ => b.clone(),
    }
}
