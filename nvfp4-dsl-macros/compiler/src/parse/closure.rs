//! Closures: `let f = |x: f32| x * x;` and the calls `f(a)` of one.

use super::pat::let_pattern;
use super::{Parser, Result, err};
use crate::ast::{Expr, ExprKind, Loc};

impl Parser {
    /// `|a: T, b| body` (`move` too, and `-> T { .. }`), the value of a
    /// `let`.
    pub(super) fn closure(&mut self, c: &syn::ExprClosure) -> Result<Expr> {
        if let Some(a) = c.attrs.first() {
            return err(Loc::of(a), "attributes are not supported on closures");
        }
        if let Some(a) = &c.asyncness {
            return err(Loc::of(a), "`async` closures are not supported in kernels");
        }
        if let Some(l) = &c.lifetimes {
            return err(Loc::of(l), "a closure in a kernel takes no `for<..>` lifetimes");
        }
        let mut params = Vec::with_capacity(c.inputs.len());
        for p in &c.inputs {
            params.push(match p {
                syn::Pat::Type(pt) => (let_pattern(&pt.pat)?, Some(self.parse_ty(&pt.ty)?)),
                other => (let_pattern(other)?, None),
            });
        }
        let ret = match &c.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, t) => Some(self.parse_ty(t)?),
        };
        // The parameters shadow the names around inside the body.
        let names: Vec<String> = params.iter().flat_map(|(p, _)| p.names()).map(str::to_string).collect();
        self.locals.push(names);
        self.in_closure += 1;
        let body = self.expr(&c.body);
        self.in_closure -= 1;
        self.locals.pop();
        let kind = ExprKind::Closure {
            params,
            ret,
            body: Box::new(body?),
        };
        Ok(self.expr_node(kind, Loc::of(c)))
    }

    /// `f(args)`, `f` a local: the call of a closure.
    pub(super) fn closure_call(&mut self, p: &syn::ExprPath, c: &syn::ExprCall) -> Option<Result<ExprKind>> {
        let name = p.path.get_ident()?.to_string();
        if p.qself.is_some() || !self.is_local(&name) {
            return None;
        }
        let args = c.args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>();
        Some(args.map(|args| ExprKind::ClosureCall { name, args }))
    }
}
