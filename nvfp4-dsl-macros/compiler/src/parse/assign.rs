//! Destructuring assignment, `(a, b) = (b, a + b);` (nested tuples and `_`
//! too), and `std::mem::swap(&mut a, &mut b)`: a block that binds the value
//! to temporaries, then assigns each place from its temporary, so every
//! place gets a value computed before any is written, as in Rust.

use super::text::statement_text;
use super::{Parser, Result, err};
use crate::ast::{Block, Expr, ExprKind, LetPat, Loc, Stmt, StmtKind};

impl Parser {
    /// `(p0, p1, ..) = value`.
    pub(super) fn tuple_assign(&mut self, a: &syn::ExprAssign, places: &syn::ExprTuple) -> Result<Expr> {
        let text = statement_text(&syn::Stmt::Expr(syn::Expr::Assign(a.clone()), None));
        let value = self.expr(&a.right)?;
        let places: Vec<&syn::Expr> = places.elems.iter().collect();
        self.assign_parts(&places, value, Loc::of(a), &text)
    }

    /// `std::mem::swap(&mut a, &mut b)` (also `core::mem::swap`, `mem::swap`)
    /// as `(a, b) = (b, a)`; `None` for any other call.
    pub(super) fn mem_swap(&mut self, c: &syn::ExprCall) -> Option<Result<Expr>> {
        let syn::Expr::Path(p) = &*c.func else { return None };
        let names: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        if !matches!(names[..], ["std" | "core", "mem", "swap"] | ["mem", "swap"]) {
            return None;
        }
        let places: Vec<&syn::Expr> = c
            .args
            .iter()
            .filter_map(|arg| match arg {
                syn::Expr::Reference(r) if r.mutability.is_some() => Some(&*r.expr),
                _ => None,
            })
            .collect();
        let [a, b] = places[..] else {
            return Some(err(
                Loc::of(&c.args),
                "`mem::swap` takes two places borrowed mutably: `std::mem::swap(&mut a, &mut b)`",
            ));
        };
        let text = statement_text(&syn::Stmt::Expr(syn::Expr::Call(c.clone()), None));
        Some((|| {
            let value = ExprKind::Tuple(vec![self.expr(b)?, self.expr(a)?]);
            let value = self.expr_node(value, Loc::of(&c.args));
            self.assign_parts(&[a, b], value, Loc::of(c), &text)
        })())
    }

    fn assign_parts(&mut self, places: &[&syn::Expr], value: Expr, span: Loc, text: &str) -> Result<Expr> {
        let mut pats = Vec::with_capacity(places.len());
        let mut assigns = Vec::with_capacity(places.len());
        for (i, place) in places.iter().enumerate() {
            let place = strip_parens(place);
            if let syn::Expr::Infer(_) = place {
                pats.push(LetPat::Wild);
                continue;
            }
            // Not an identifier, so it cannot name (or hide) a user's variable.
            let name = format!("({}.{i})", value.id);
            let loc = Loc::of(place);
            pats.push(LetPat::Name {
                name: name.clone(),
                span: loc,
                mutable: false,
            });
            let part = self.expr_node(ExprKind::Var(name), loc);
            let assign = match place {
                syn::Expr::Tuple(inner) => {
                    let inner: Vec<&syn::Expr> = inner.elems.iter().collect();
                    self.assign_parts(&inner, part, loc, text)?
                }
                _ => {
                    self.reject_element_write(place)?;
                    let target = self.expr(place)?;
                    self.expr_node(ExprKind::Assign(Box::new(target), Box::new(part)), loc)
                }
            };
            assigns.push(assign);
        }
        let (line, col) = span.line_col();
        let stmt = |kind| Stmt {
            kind,
            span,
            line,
            col,
            text: text.to_string(),
        };
        let mut stmts = vec![stmt(StmtKind::Let {
            pat: LetPat::Tuple(pats, span),
            ty: None,
            init: value,
        })];
        stmts.extend(assigns.into_iter().map(|a| stmt(StmtKind::Expr(a, true))));
        Ok(self.expr_node(
            ExprKind::Block(Block {
                stmts,
                span,
                failed: Vec::new(),
            }),
            span,
        ))
    }
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}
