//! Where an expression is, read from its syntax: its first and last tokens.

use crate::ast::Loc;
use proc_macro2::Span;

/// Where an expression is: its first and last tokens, found from the
/// syntax (printing the expression to tokens, as `Loc::of` does, costs
/// time proportional to its size at every level of nesting).
pub(super) fn expr_loc(e: &syn::Expr) -> Loc {
    Loc {
        start: first_span(e),
        end: last_span(e),
    }
}

fn first_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    let attrs = match e {
        E::ForLoop(f) => &f.attrs,
        E::While(w) => &w.attrs,
        E::Loop(l) => &l.attrs,
        E::Block(b) => &b.attrs,
        _ => &Vec::new(),
    };
    if let Some(a) = attrs.first() {
        return a.pound_token.span;
    }
    match e {
        E::Binary(b) => first_span(&b.left),
        E::Assign(a) => first_span(&a.left),
        E::Cast(c) => first_span(&c.expr),
        E::Index(i) => first_span(&i.expr),
        E::MethodCall(m) => first_span(&m.receiver),
        E::Field(f) => first_span(&f.base),
        E::Call(c) => first_span(&c.func),
        E::Try(t) => first_span(&t.expr),
        E::Await(a) => first_span(&a.base),
        E::Unary(u) => match u.op {
            syn::UnOp::Deref(t) => t.span,
            syn::UnOp::Not(t) => t.span,
            syn::UnOp::Neg(t) => t.span,
            _ => Loc::of(e).start,
        },
        E::Paren(p) => p.paren_token.span.open(),
        E::Tuple(t) => t.paren_token.span.open(),
        E::Array(a) => a.bracket_token.span.open(),
        E::Repeat(r) => r.bracket_token.span.open(),
        E::Lit(l) => l.lit.span(),
        E::Path(p) if p.qself.is_none() => match &p.path.leading_colon {
            Some(c) => c.spans[0],
            None => p
                .path
                .segments
                .first()
                .map_or_else(|| Loc::of(e).start, |s| s.ident.span()),
        },
        E::If(i) => i.if_token.span,
        E::While(w) => w.label.as_ref().map_or(w.while_token.span, |l| l.name.apostrophe),
        E::ForLoop(f) => f.label.as_ref().map_or(f.for_token.span, |l| l.name.apostrophe),
        E::Loop(l) => l.label.as_ref().map_or(l.loop_token.span, |x| x.name.apostrophe),
        E::Block(b) => b
            .label
            .as_ref()
            .map_or(b.block.brace_token.span.open(), |l| l.name.apostrophe),
        E::Match(m) => m.match_token.span,
        E::Return(r) => r.return_token.span,
        E::Break(b) => b.break_token.span,
        E::Continue(c) => c.continue_token.span,
        E::Reference(r) => r.and_token.span,
        E::Struct(s) if s.qself.is_none() => s
            .path
            .segments
            .first()
            .map_or_else(|| Loc::of(e).start, |x| x.ident.span()),
        E::Macro(m) => m
            .mac
            .path
            .segments
            .first()
            .map_or_else(|| Loc::of(e).start, |x| x.ident.span()),
        _ => Loc::of(e).start,
    }
}

fn last_span(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) => last_span(&b.right),
        E::Assign(a) => last_span(&a.right),
        E::Cast(c) => Loc::of(&c.ty).end,
        E::Index(i) => i.bracket_token.span.close(),
        E::MethodCall(m) => m.paren_token.span.close(),
        E::Field(f) => match &f.member {
            syn::Member::Named(n) => n.span(),
            syn::Member::Unnamed(i) => i.span,
        },
        E::Call(c) => c.paren_token.span.close(),
        E::Unary(u) => last_span(&u.expr),
        E::Paren(p) => p.paren_token.span.close(),
        E::Tuple(t) => t.paren_token.span.close(),
        E::Array(a) => a.bracket_token.span.close(),
        E::Repeat(r) => r.bracket_token.span.close(),
        E::Lit(l) => l.lit.span(),
        E::Path(p) if p.qself.is_none() => match p.path.segments.last() {
            Some(s) => match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => a.gt_token.span,
                syn::PathArguments::Parenthesized(_) => Loc::of(e).end,
                syn::PathArguments::None => s.ident.span(),
            },
            None => Loc::of(e).end,
        },
        E::If(i) => match &i.else_branch {
            Some((_, els)) => last_span(els),
            None => i.then_branch.brace_token.span.close(),
        },
        E::While(w) => w.body.brace_token.span.close(),
        E::ForLoop(f) => f.body.brace_token.span.close(),
        E::Loop(l) => l.body.brace_token.span.close(),
        E::Block(b) => b.block.brace_token.span.close(),
        E::Match(m) => m.brace_token.span.close(),
        E::Return(r) => r.expr.as_deref().map_or(r.return_token.span, last_span),
        E::Break(b) => match (&b.expr, &b.label) {
            (Some(x), _) => last_span(x),
            (None, Some(l)) => l.ident.span(),
            (None, None) => b.break_token.span,
        },
        E::Continue(c) => c.label.as_ref().map_or(c.continue_token.span, |l| l.ident.span()),
        E::Reference(r) => last_span(&r.expr),
        E::Struct(s) => s.brace_token.span.close(),
        E::Macro(m) => m.mac.delimiter.span().close(),
        _ => Loc::of(e).end,
    }
}
