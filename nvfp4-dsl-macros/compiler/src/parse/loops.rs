//! Loops: `while`, `loop`, `for` over a range, and element loops
//! (`for v in x.iter()` ...), which `elements` turns into `for` loops over
//! the indices.

use super::elements::{ElementRef, element_loop, unparen};
use super::{Parser, Result, err, reject_attrs};
use crate::ast::{ExprKind, ForLoop, Loc};

impl Parser {
    /// `while cond { .. }`.
    pub(super) fn while_expr(&mut self, w: &syn::ExprWhile) -> Result<ExprKind> {
        use syn::Expr as E;
        reject_attrs(&w.attrs)?;
        if let E::Let(l) = &*w.cond {
            return err(
                Loc::of(&l),
                "`while let` is not supported in kernels; use `while` with a condition",
            );
        }
        Ok(ExprKind::While {
            cond: Box::new(self.expr(&w.cond)?),
            body: self.block(&w.body)?,
            label: label_name(&w.label),
        })
    }

    /// `loop { .. }`.
    pub(super) fn loop_expr(&mut self, l: &syn::ExprLoop) -> Result<ExprKind> {
        reject_attrs(&l.attrs)?;
        Ok(ExprKind::Loop(self.block(&l.body)?, label_name(&l.label)))
    }

    /// A `for` loop: over a range, or over elements as the loop over their
    /// indices.
    pub(super) fn for_expr(&mut self, f: &syn::ExprForLoop) -> Result<ExprKind> {
        Ok(match element_loop(f)? {
            Some((indexed, element_refs)) => {
                let refs = self.element_refs.len();
                self.element_refs.extend(element_refs);
                let parsed = match &indexed {
                    syn::Expr::ForLoop(l) => self.for_loop(l).map(ExprKind::For),
                    syn::Expr::Block(b) => self.block(&b.block).map(ExprKind::Block),
                    other => unreachable!("an element loop is a loop or a block, not {other:?}"),
                };
                self.element_refs.truncate(refs);
                parsed?
            }
            None => ExprKind::For(self.for_loop(f)?),
        })
    }

    /// The element reference a path names, if it is one (the innermost).
    pub(super) fn element_ref(&self, p: &syn::ExprPath) -> Option<&ElementRef> {
        let ident = p.path.get_ident()?;
        self.element_refs.iter().rev().find(|r| *ident == r.name)
    }

    /// `x.iter()` binds a copy of the element: writing through `*v` would
    /// not reach the slice, so it is an error (`iter_mut` writes).
    pub(super) fn reject_element_write(&self, target: &syn::Expr) -> Result<()> {
        if let syn::Expr::Unary(u) = target
            && let (syn::UnOp::Deref(_), syn::Expr::Path(p)) = (&u.op, &*u.expr)
            && let Some(ElementRef { place: None, .. }) = self.element_ref(p)
        {
            return err(
                Loc::of(&u),
                "`iter()` reads the elements; write to them with `x.iter_mut()` or by index: `x[i] = ..`",
            );
        }
        Ok(())
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<ForLoop> {
        let mut unroll = false;
        for a in &f.attrs {
            if a.path().is_ident("unroll") {
                if !matches!(a.meta, syn::Meta::Path(_)) {
                    return err(Loc::of(&a), "`#[unroll]` takes no arguments");
                }
                unroll = true;
            } else {
                return err(Loc::of(&a), "the only attribute a loop can take is `#[unroll]`");
            }
        }
        // `a..b`, `(a..b).step_by(s)`, `(a..b).rev()`, `(a..b).rev().step_by(s)`.
        let (counted, step) = match unparen(&f.expr) {
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (unparen(&m.receiver), Some(&m.args[0]))
            }
            other => (other, None),
        };
        let (ranged, rev) = match counted {
            syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
                let inner = unparen(&m.receiver);
                if let syn::Expr::MethodCall(s) = inner
                    && s.method == "step_by"
                {
                    return err(
                        Loc::of(&m),
                        "`.step_by(s).rev()` is not supported; `(a..b).rev().step_by(s)` counts down from `b - 1` by `s`",
                    );
                }
                (inner, true)
            }
            other => (other, false),
        };
        let range = match ranged {
            syn::Expr::Range(r) => r,
            _ if step.is_some() || rev => {
                return err(
                    Loc::of(&ranged),
                    "`step_by` and `rev` must be called on a range: `(a..b).step_by(s)`, `(a..b).rev()`",
                );
            }
            other => {
                return err(
                    Loc::of(&other),
                    "a `for` loop iterates over a range (`a..b`, `a..=b`, `(a..b).step_by(s)`, `(a..b).rev()`, `(a..b).rev().step_by(s)`) or over the elements of slices, local arrays or array literals (`x.iter()`, `x.iter_mut()`, `&x`, `x`, `[a, b, c]`, `x.iter().zip(y.iter())`, with `.enumerate()` and `.rev()` after them); other iterators are not supported (for `.skip(a)` and `.take(n)`, iterate over a sub-slice: `x[a..].iter()`, `x[..n].iter()`)",
                );
            }
        };
        // The iterator first: a pattern of an unsupported iterator (a
        // tuple of a `zip` that is not) is not the problem.
        let var = match &*f.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                pi.ident.to_string()
            }
            syn::Pat::Wild(_) => "_".to_string(),
            other => {
                return err(
                    Loc::of(&other),
                    "a `for` loop over a range binds one plain name (`for i in 0..n`)",
                );
            }
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return err(Loc::of(&range), "a `for` range needs both bounds: `a..b` or `a..=b`");
        };
        let start = Box::new(self.expr(start)?);
        let end = Box::new(self.expr(end)?);
        let step = match step {
            Some(s) => Some(Box::new(self.expr(s)?)),
            None => None,
        };
        self.locals.push(vec![var.clone()]);
        let body = self.block(&f.body);
        self.locals.pop();
        Ok(ForLoop {
            var,
            start,
            end,
            inclusive: matches!(range.limits, syn::RangeLimits::Closed(_)),
            step,
            body: body?,
            unroll,
            label: label_name(&f.label),
            rev,
        })
    }
}

/// A loop's label (`'outer`, quote included).
fn label_name(label: &Option<syn::Label>) -> Option<String> {
    label.as_ref().map(|l| format!("'{}", l.name.ident))
}
