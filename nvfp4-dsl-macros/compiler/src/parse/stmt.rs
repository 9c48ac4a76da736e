//! Statements and blocks: `let`, local `const`, expression statements.

use super::pat::let_pattern;
use super::text::statement_text;
use super::ty::parse_scalar_path;
use super::{Parser, Result, err};
use crate::ast::{Block, Failed, LetPat, Loc, Stmt, StmtKind};
use crate::types::Scalar;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

impl Parser {
    pub(super) fn block(&mut self, b: &syn::Block) -> Result<Block> {
        // A block's `const` items are in scope in all of it, as in Rust.
        self.locals.push(
            b.stmts
                .iter()
                .filter_map(|s| match s {
                    syn::Stmt::Item(syn::Item::Const(c)) => Some(c.ident.to_string()),
                    _ => None,
                })
                .collect(),
        );
        // A statement's error is kept and the next statement parsed (a
        // failed `let` still binds its names, so that later uses of them
        // read as locals): one build shows every such error. The check
        // goes on past it too (`Block::failed`).
        let mut stmts = Vec::with_capacity(b.stmts.len());
        let mut failed = Vec::new();
        for s in &b.stmts {
            let (saved, in_closure) = self.snapshot();
            match self.stmt(s) {
                Ok(st) => stmts.push(st),
                Err(e) => {
                    self.leave_const(saved);
                    self.in_closure = in_closure;
                    self.errors.push(e);
                    let mut binds = Vec::new();
                    match s {
                        syn::Stmt::Local(local) => bound_names(&local.pat, &mut binds),
                        syn::Stmt::Item(syn::Item::Const(c)) => binds.push(c.ident.to_string()),
                        _ => {}
                    }
                    binds.iter().for_each(|n| self.bind_local(n));
                    let mut mentions = Vec::new();
                    idents(s.to_token_stream(), &mut mentions);
                    failed.push(Failed {
                        at: stmts.len(),
                        binds,
                        mentions,
                    });
                }
            }
        }
        self.locals.pop();
        Ok(Block {
            stmts,
            span: Loc {
                start: b.brace_token.span.open(),
                end: b.brace_token.span.close(),
            },
            failed,
        })
    }

    fn stmt(&mut self, s: &syn::Stmt) -> Result<Stmt> {
        let span = Loc::of(&s);
        let (line, col) = span.line_col();
        let text = statement_text(s);
        let kind = match s {
            syn::Stmt::Local(local) => {
                if let Some(e) = &local.init
                    && let Some((_, diverge)) = &e.diverge
                {
                    return err(
                        Loc::of(&diverge),
                        "`let ... else` is not supported in kernels; write a `match` with the `else` block as its other arm (`let m = match pair { (true, m) => m, _ => return };`)",
                    );
                }
                let (pat, ty) = match &local.pat {
                    syn::Pat::Type(pt) => (&*pt.pat, Some(self.parse_ty(&pt.ty)?)),
                    p => (p, None),
                };
                let pat = let_pattern(pat)?;
                let Some(init) = &local.init else {
                    return err(
                        Loc::of(&local),
                        "a `let` in a kernel needs an initial value, e.g. `let mut x = 0u32;`",
                    );
                };
                let init = match &*init.expr {
                    syn::Expr::Closure(c) => {
                        let LetPat::Name { name, .. } = &pat else {
                            return err(
                                Loc::of(&local.pat),
                                "a closure is bound to one name: `let f = |x: f32| ..;`",
                            );
                        };
                        let closure = self.closure(c)?;
                        self.bind_local(name);
                        closure
                    }
                    other => {
                        let init = self.expr(other)?;
                        pat.names().into_iter().for_each(|n| self.bind_local(n));
                        init
                    }
                };
                StmtKind::Let { pat, ty, init }
            }
            syn::Stmt::Item(syn::Item::Const(c)) => {
                if !c.generics.params.is_empty() {
                    return err(Loc::of(&c.generics), "a local `const` takes no generics");
                }
                let ty = match parse_scalar_path(&c.ty) {
                    Some(s) if s != Scalar::F16 && s != Scalar::Bf16 => s,
                    _ => {
                        return err(
                            Loc::of(&c.ty),
                            "a local `const` must have a primitive number or `bool` type",
                        );
                    }
                };
                StmtKind::Const {
                    name: c.ident.to_string(),
                    ty,
                    init: self.expr(&c.expr)?,
                }
            }
            syn::Stmt::Item(item) => {
                return err(
                    Loc::of(&item),
                    "items (fn, struct, use, static ...) cannot be declared inside a kernel; only local `const` items can; move a function out of the kernel as a `#[device] fn` (a struct as a `#[device]` struct)",
                );
            }
            syn::Stmt::Expr(e, semi) => StmtKind::Expr(self.expr(e)?, semi.is_some()),
            syn::Stmt::Macro(m) => {
                let e = self.macro_expr(&m.mac)?;
                StmtKind::Expr(e, m.semi_token.is_some())
            }
        };
        Ok(Stmt {
            kind,
            span,
            line,
            col,
            text,
        })
    }
}

/// Every name a Rust pattern binds, whether or not kernels take the
/// pattern: what a failed `let` leaves bound for the statements after it.
fn bound_names(p: &syn::Pat, out: &mut Vec<String>) {
    match p {
        syn::Pat::Ident(pi) => {
            out.push(pi.ident.to_string());
            if let Some((_, sub)) = &pi.subpat {
                bound_names(sub, out);
            }
        }
        syn::Pat::Type(pt) => bound_names(&pt.pat, out),
        syn::Pat::Paren(pp) => bound_names(&pp.pat, out),
        syn::Pat::Reference(r) => bound_names(&r.pat, out),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| bound_names(e, out)),
        syn::Pat::Slice(s) => s.elems.iter().for_each(|e| bound_names(e, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|e| bound_names(e, out)),
        syn::Pat::Struct(st) => st.fields.iter().for_each(|f| bound_names(&f.pat, out)),
        syn::Pat::Or(o) => o.cases.iter().for_each(|c| bound_names(c, out)),
        _ => {}
    }
}

/// Every identifier in `tokens`: more than the locals a statement names
/// (methods, types, fields too), which only makes the check skip more.
fn idents(tokens: TokenStream, out: &mut Vec<String>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => idents(g.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}
