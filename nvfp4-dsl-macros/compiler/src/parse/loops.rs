//! Loops: `while`, `loop`, `for` over a range, and element loops
//! (`for v in x.iter()` ...), which become `for` loops over the indices.

use super::{Parser, Result, err, reject_attrs};
use crate::ast::{ExprKind, ForLoop, Loc};
use proc_macro2::Span;

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
            Some((indexed, element_ref)) => {
                let refs = self.element_refs.len();
                self.element_refs.extend(element_ref);
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
        let var = match &*f.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                pi.ident.to_string()
            }
            syn::Pat::Wild(_) => "_".to_string(),
            other => {
                return err(Loc::of(&other), "a `for` loop binds one plain name (`for i in 0..n`)");
            }
        };
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
                    "a `for` loop iterates over a range (`a..b`, `a..=b`, `(a..b).step_by(s)`, `(a..b).rev()`, `(a..b).rev().step_by(s)`) or over the elements of a slice, a local array or an array literal (`x.iter()`, `x.iter_mut()`, `.enumerate()` and `.rev()` after them, `x`, `[a, b, c]`); other iterators are not supported",
                );
            }
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return err(Loc::of(&range), "a `for` range needs both bounds: `a..b` or `a..=b`");
        };
        Ok(ForLoop {
            var,
            start: Box::new(self.expr(start)?),
            end: Box::new(self.expr(end)?),
            inclusive: matches!(range.limits, syn::RangeLimits::Closed(_)),
            step: match step {
                Some(s) => Some(Box::new(self.expr(s)?)),
                None => None,
            },
            body: self.block(&f.body)?,
            unroll,
            label: label_name(&f.label),
            rev,
        })
    }
}

/// `for v in x.iter()`, `for v in x` or `&x`, `for (i, v) in
/// x.iter().enumerate()` (also `&v` for `v`, `_` for either; `iter_mut()`
/// for `iter()`; `.rev()` after `iter()` or `enumerate()`) over a slice: the
/// same loop over `0..x.len()` (reversed) that starts with `let v = x[i];`
/// (through `iter_mut`, `*v` stands for `x[i]` instead). An array literal
/// (`for s in [16, 8, 4]`, `[a, b].iter()`) is evaluated once, into a
/// local array before the loop (a block of the two): the loop over it is
/// unrolled, so an element that is a constant stays one. Also the name
/// bound to a reference in Rust (`v` without `&`), and what its `*v` is
/// here. `None` for any other loop.
fn element_loop(f: &syn::ExprForLoop) -> Result<Option<(syn::Expr, Option<ElementRef>)>> {
    use syn::Expr as E;
    let unparen = |e: &syn::Expr| self::unparen(e).clone();
    // `.rev()` last: the same elements (and indices) from the end.
    let (iterated, rev) = match unparen(&f.expr) {
        E::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
            let inner = unparen(&m.receiver);
            match &inner {
                E::MethodCall(it) if it.method == "iter" || it.method == "iter_mut" || it.method == "enumerate" => {
                    (inner, true)
                }
                _ => return Ok(None),
            }
        }
        other => (other, false),
    };
    let iterates = |e: &syn::ExprMethodCall| e.args.is_empty() && (e.method == "iter" || e.method == "iter_mut");
    let (over, enumerate, mutable) = match iterated {
        E::MethodCall(m) if m.method == "enumerate" && m.args.is_empty() => match unparen(&m.receiver) {
            E::MethodCall(it) if iterates(&it) => (*it.receiver, true, it.method == "iter_mut"),
            _ => return Ok(None),
        },
        E::MethodCall(m) if iterates(&m) => (*m.receiver.clone(), false, m.method == "iter_mut"),
        E::Reference(r) if r.mutability.is_none() && !rev => (*r.expr, false, false),
        p @ (E::Path(_) | E::Array(_) | E::Repeat(_)) if !rev => (p, false, false),
        _ => return Ok(None),
    };
    let span = syn::spanned::Spanned::span(&f.expr);
    // An array literal becomes a local the loop indexes.
    let (over, temporary) = match unparen(&over) {
        E::Array(_) | E::Repeat(_) => {
            let name = syn::Ident::new("__nvfp4_array", span);
            (syn::parse_quote_spanned!(span=> #name), Some((name, over)))
        }
        _ => (over, None),
    };
    let (index, element) = if enumerate {
        match &*f.pat {
            syn::Pat::Tuple(t) if t.elems.len() == 2 => (Some(&t.elems[0]), &t.elems[1]),
            other => {
                return err(
                    Loc::of(other),
                    "`.enumerate()` gives (index, element) pairs: `for (i, v) in x.iter().enumerate()`",
                );
            }
        }
    } else {
        (None, &*f.pat)
    };
    let index = match index {
        Some(syn::Pat::Ident(pi)) => pi.ident.clone(),
        _ => syn::Ident::new("__nvfp4_element_index", Span::call_site()),
    };
    let (element, element_ref) = match element {
        syn::Pat::Reference(r) if r.mutability.is_none() && !mutable => ((*r.pat).clone(), None),
        syn::Pat::Ident(pi) if pi.mutability.is_none() || !mutable => {
            let place = mutable.then(|| syn::parse_quote_spanned!(span=> #over[#index]));
            let name = pi.ident.to_string();
            (element.clone(), Some(ElementRef { name, place }))
        }
        syn::Pat::Wild(_) => (element.clone(), None),
        other if mutable => {
            return err(
                Loc::of(other),
                "an element of `iter_mut` binds one name, read and written as `*v`: `for v in x.iter_mut()`",
            );
        }
        other => (other.clone(), None),
    };
    let (attrs, label, stmts) = (&f.attrs, &f.label, &f.body.stmts);
    // Through `iter_mut`, `*v` is the element itself: nothing is copied.
    let binding = if mutable {
        quote::quote!()
    } else {
        quote::quote_spanned!(span=> let #element = #over[#index];)
    };
    let indices = if rev {
        quote::quote_spanned!(span=> (0usize..#over.len()).rev())
    } else {
        quote::quote_spanned!(span=> 0usize..#over.len())
    };
    let indexed: syn::Expr = syn::parse_quote_spanned! {span=>
        #(#attrs)* #label for #index in #indices {
            #binding
            #(#stmts)*
        }
    };
    let indexed = match temporary {
        Some((name, array)) => {
            let mutability = mutable.then(|| quote::quote!(mut));
            syn::parse_quote_spanned! {span=>
                {
                    let #mutability #name = #array;
                    #indexed
                }
            }
        }
        None => indexed,
    };
    Ok(Some((indexed, element_ref)))
}

/// `e` without the parentheses around it.
fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => &p.expr,
        other => other,
    }
}

/// A name an element loop binds where Rust binds a reference.
#[derive(Clone)]
pub(super) struct ElementRef {
    name: String,
    /// Through `iter_mut`: the element (`x[i]`) that `*name` stands for.
    /// `None` through `iter()`: `name` holds a copy.
    pub(super) place: Option<syn::Expr>,
}

/// A loop's label (`'outer`, quote included).
fn label_name(label: &Option<syn::Label>) -> Option<String> {
    label.as_ref().map(|l| format!("'{}", l.name.ident))
}
