//! Element loops: `for` over the elements of slices, local arrays and
//! array literals (`x.iter()`, `x.iter_mut()`, `&x`, `&mut x`, `x`,
//! `[a, b]`), zipped (`a.iter().zip(b.iter())`, nested for more), with
//! `.enumerate()` and `.rev()` after them. Each becomes the `for` loop over
//! the indices that Rust's iterators walk, binding the elements first.

use super::{Result, err};
use crate::ast::Loc;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Expr as E;

/// A name an element loop binds where Rust binds a reference.
#[derive(Clone)]
pub(super) struct ElementRef {
    pub(super) name: String,
    /// Through `iter_mut`: the element (`x[i]`) that `*name` stands for.
    /// `None` through `iter()`: `name` holds a copy.
    pub(super) place: Option<syn::Expr>,
}

/// What an element loop walks.
enum Elements {
    /// The elements of `over` (a slice, a local array or an array
    /// literal), through `iter_mut` (`&mut x`) when `mutable`.
    Of { over: Box<syn::Expr>, mutable: bool },
    /// `a.zip(b)`: pairs, as far as the shorter of the two goes.
    Zip(Box<Elements>, Box<Elements>),
}

/// `for v in x.iter()`, `for v in x` or `&x`, `for (i, v) in
/// x.iter().enumerate()`, `for (a, b) in x.iter().zip(y.iter())` (also `&v`
/// for `v`, `_` for any; `iter_mut()` for `iter()`; `.enumerate()` after a
/// `zip`, `.rev()` last): the loop over `0..x.len()` (`x.len().min(y.len())`
/// for a `zip`, reversed for `.rev()`, as Rust's `Zip` walks back from the
/// end of the shorter) that starts with `let v = x[i];` (through
/// `iter_mut`, `*v` stands for `x[i]` instead). An array literal (`for s in
/// [16, 8, 4]`) is evaluated once, into a local array before the loop (a
/// block of the two): the loop over it is unrolled, so an element that is
/// a constant stays one. Also the names bound to a reference in Rust (`v`
/// without `&`), and what their `*v` is here. `None` for any other loop.
pub(super) fn element_loop(f: &syn::ExprForLoop) -> Result<Option<(syn::Expr, Vec<ElementRef>)>> {
    let mut iterated = unparen(&f.expr);
    let rev = strip_call(&mut iterated, "rev");
    let enumerate = strip_call(&mut iterated, "enumerate");
    // A slice or an array is not an iterator: `.rev()` and `.enumerate()`
    // come after `.iter()`.
    let Some(elements) = elements(iterated, !rev && !enumerate)? else {
        return Ok(None);
    };
    let (index, pat) = if enumerate {
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
    let span = syn::spanned::Spanned::span(&f.expr);
    let mut b = Bindings {
        span,
        index,
        temporaries: TokenStream::new(),
        lens: Vec::new(),
        bindings: TokenStream::new(),
        refs: Vec::new(),
    };
    b.bind(&elements, pat)?;
    let Bindings {
        index,
        temporaries,
        lens,
        bindings,
        refs,
        ..
    } = b;
    let (first, rest) = lens.split_first().expect("an element loop walks something");
    let end = quote_spanned!(span=> #first.len() #(.min(#rest.len()))*);
    let indices = if rev {
        quote_spanned!(span=> (0usize..#end).rev())
    } else {
        quote_spanned!(span=> 0usize..#end)
    };
    let (attrs, label, stmts) = (&f.attrs, &f.label, &f.body.stmts);
    let indexed: syn::Expr = syn::parse_quote_spanned! {span=>
        #(#attrs)* #label for #index in #indices {
            #bindings
            #(#stmts)*
        }
    };
    let indexed = if temporaries.is_empty() {
        indexed
    } else {
        syn::parse_quote_spanned!(span=> { #temporaries #indexed })
    };
    Ok(Some((indexed, refs)))
}

/// The elements `e` yields, where `e` is an iterator (`x.iter()`,
/// `x.iter_mut()`, a `zip`) or, with `into` (`for v in e`, `zip(e)`),
/// anything Rust iterates (`&x`, `&mut x`, `x`, `[a, b]`). `None`: not an
/// element loop.
fn elements(e: &syn::Expr, into: bool) -> Result<Option<Elements>> {
    Ok(match unparen(e) {
        E::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => {
            match (elements(&m.receiver, false)?, elements(&m.args[0], true)?) {
                (Some(a), Some(b)) => Some(Elements::Zip(Box::new(a), Box::new(b))),
                _ => None,
            }
        }
        E::MethodCall(m) if m.args.is_empty() && (m.method == "iter" || m.method == "iter_mut") => Some(Elements::Of {
            over: m.receiver.clone(),
            mutable: m.method == "iter_mut",
        }),
        E::MethodCall(m)
            if m.args.is_empty()
                && (m.method == "rev" || m.method == "enumerate")
                && elements(&m.receiver, false)?.is_some() =>
        {
            return err(
                Loc::of(m),
                format!(
                    "`.{}()` goes last, after `.iter()` or `.zip(..)` (and `.rev()` after `.enumerate()`): `for (i, (a, b)) in x.iter().zip(y.iter()).enumerate()`",
                    m.method
                ),
            );
        }
        E::Reference(r) if into => Some(Elements::Of {
            over: r.expr.clone(),
            mutable: r.mutability.is_some(),
        }),
        p @ (E::Path(_) | E::Array(_) | E::Repeat(_)) if into => Some(Elements::Of {
            over: Box::new(p.clone()),
            mutable: false,
        }),
        _ => None,
    })
}

/// The pieces of an element loop, gathered from its elements and pattern.
struct Bindings {
    span: Span,
    index: syn::Ident,
    /// `let __nvfp4_array0 = [..];` for each array literal.
    temporaries: TokenStream,
    /// What each part of the loop walks, whose lengths bound it.
    lens: Vec<syn::Expr>,
    /// `let v = x[i];` for each element bound by copy.
    bindings: TokenStream,
    refs: Vec<ElementRef>,
}

impl Bindings {
    /// Binds `pat` to the elements `el` yields at the index.
    fn bind(&mut self, el: &Elements, pat: &syn::Pat) -> Result<()> {
        let (over, mutable) = match el {
            Elements::Zip(a, b) => {
                return match pat {
                    syn::Pat::Tuple(t) if t.elems.len() == 2 => {
                        self.bind(a, &t.elems[0])?;
                        self.bind(b, &t.elems[1])
                    }
                    syn::Pat::Wild(_) => {
                        self.bind(a, pat)?;
                        self.bind(b, pat)
                    }
                    syn::Pat::Paren(p) => self.bind(el, &p.pat),
                    other => err(
                        Loc::of(other),
                        "`zip` gives pairs: `for (a, b) in x.iter().zip(y.iter())` (with `.enumerate()`, `for (i, (a, b)) in ..`)",
                    ),
                };
            }
            Elements::Of { over, mutable } => (over, *mutable),
        };
        let span = self.span;
        let over = match unparen(over) {
            E::Array(_) | E::Repeat(_) => {
                let name = format_ident!("__nvfp4_array{}", self.lens.len(), span = span);
                let mutability = mutable.then(|| quote!(mut));
                self.temporaries
                    .extend(quote_spanned!(span=> let #mutability #name = #over;));
                syn::parse_quote_spanned!(span=> #name)
            }
            // `x[start..].iter()`, `zip(&x[start..])`: the sub-slice, bound once.
            E::Index(ix) if matches!(unparen(&ix.index), E::Range(_)) => {
                let name = format_ident!("__nvfp4_view{}", self.lens.len(), span = span);
                let reference = if mutable { quote!(&mut) } else { quote!(&) };
                self.temporaries
                    .extend(quote_spanned!(span=> let #name = #reference #over;));
                syn::parse_quote_spanned!(span=> #name)
            }
            _ => (**over).clone(),
        };
        self.lens.push(over.clone());
        let index = &self.index;
        let element = match pat {
            syn::Pat::Reference(r) if r.mutability.is_none() && !mutable => (*r.pat).clone(),
            syn::Pat::Ident(pi) if pi.mutability.is_none() || !mutable => {
                let place = mutable.then(|| syn::parse_quote_spanned!(span=> #over[#index]));
                self.refs.push(ElementRef {
                    name: pi.ident.to_string(),
                    place,
                });
                pat.clone()
            }
            syn::Pat::Wild(_) => return Ok(()),
            other if mutable => {
                return err(
                    Loc::of(other),
                    "an element of `iter_mut` binds one name, read and written as `*v`: `for v in x.iter_mut()`",
                );
            }
            other => other.clone(),
        };
        // Through `iter_mut`, `*v` is the element itself: nothing is copied.
        if !mutable {
            self.bindings
                .extend(quote_spanned!(span=> let #element = #over[#index];));
        }
        Ok(())
    }
}

/// Takes the call `.name()` off the end of `e`, if it is there.
fn strip_call(e: &mut &syn::Expr, name: &str) -> bool {
    match e {
        E::MethodCall(m) if m.method == name && m.args.is_empty() => {
            *e = unparen(&m.receiver);
            true
        }
        _ => false,
    }
}

/// `e` without the parentheses around it.
pub(super) fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        E::Paren(p) => &p.expr,
        other => other,
    }
}
