//! Patterns: a `match` arm's and a `let`'s.

use super::{Parser, Result, err};
use crate::ast::{Expr, LetPat, Loc, Pat};

impl Parser {
    /// A `match` arm's pattern on an integer or a `bool`.
    pub(super) fn pattern(&mut self, p: &syn::Pat) -> Result<Pat> {
        let bound = |parser: &mut Parser, e: &syn::Expr| -> Result<Box<Expr>> { Ok(Box::new(parser.expr(e)?)) };
        match p {
            syn::Pat::Wild(_) => Ok(Pat::Wild),
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                let name = pi.ident.to_string();
                // Rust compares with a constant of that name, if one is in
                // scope; an upper-case name not bound here is taken to be a
                // `#[device] const` (bindings are lower-case).
                if !self.is_local(&name) && name.starts_with(char::is_uppercase) {
                    let e = syn::Expr::Path(syn::ExprPath {
                        attrs: Vec::new(),
                        qself: None,
                        path: pi.ident.clone().into(),
                    });
                    return Ok(Pat::Lit(self.expr(&e)?));
                }
                Ok(Pat::Ident(name, Loc::of(&pi.ident)))
            }
            syn::Pat::Lit(l) => Ok(Pat::Lit(self.expr(&syn::Expr::Lit(l.clone()))?)),
            syn::Pat::Path(path) => Ok(Pat::Lit(self.expr(&syn::Expr::Path(path.clone()))?)),
            syn::Pat::Range(r) => Ok(Pat::Range {
                lo: r.start.as_deref().map(|e| bound(self, e)).transpose()?,
                hi: r.end.as_deref().map(|e| bound(self, e)).transpose()?,
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
            }),
            syn::Pat::Or(o) => Ok(Pat::Or(o.cases.iter().map(|c| self.pattern(c)).collect::<Result<_>>()?)),
            syn::Pat::Tuple(t) => Ok(Pat::Tuple(
                t.elems.iter().map(|q| self.pattern(q)).collect::<Result<_>>()?,
                Loc::of(t),
            )),
            syn::Pat::Paren(p) => self.pattern(&p.pat),
            // A negative literal pattern (`-1`) is an expression pattern.
            syn::Pat::Verbatim(_) | syn::Pat::Const(_) => err(Loc::of(p), "write the pattern as a literal or a range"),
            other => err(
                Loc::of(&other),
                "`match` in kernels takes integer and `bool` patterns: literals, constants, ranges (`a..=b`), `|`, `_`, a name, and tuples of them; other patterns are not supported",
            ),
        }
    }
}

/// A `let` pattern: a name, `_`, or a tuple or an array of patterns.
pub(super) fn let_pattern(p: &syn::Pat) -> Result<LetPat> {
    match p {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Ok(LetPat::Name {
            name: pi.ident.to_string(),
            span: Loc::of(&pi.ident),
            mutable: pi.mutability.is_some(),
        }),
        syn::Pat::Wild(_) => Ok(LetPat::Wild),
        syn::Pat::Tuple(t) => Ok(LetPat::Tuple(
            t.elems.iter().map(let_pattern).collect::<Result<Vec<_>>>()?,
            Loc::of(t),
        )),
        syn::Pat::Slice(s) => Ok(LetPat::Array(
            s.elems.iter().map(let_pattern).collect::<Result<Vec<_>>>()?,
            Loc::of(s),
        )),
        syn::Pat::Paren(p) => let_pattern(&p.pat),
        other => err(
            Loc::of(&other),
            "a `let` in a kernel binds a name, `_`, or a tuple or an array of them (`let (a, mut b) = ..`, `let [x, y] = ..`); other patterns are not supported",
        ),
    }
}
