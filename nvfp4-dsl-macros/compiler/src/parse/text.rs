//! The one-line source text of a statement, for the comment placed before
//! its PTX.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

/// One line of source text for a statement, for the comment placed before
/// its PTX. Blocks are elided so a loop's comment is its header.
pub(super) fn statement_text(s: &syn::Stmt) -> String {
    let mut out = String::new();
    print_tokens(s.to_token_stream(), &mut out);
    const MAX: usize = 100;
    if out.chars().count() > MAX {
        let cut: String = out.chars().take(MAX - 3).collect();
        format!("{}...", cut.trim_end())
    } else {
        out
    }
}

/// A macro call's source on one line, whole, in ASCII (others escaped
/// as `\u{..}`): an assertion's text, for the comment on its `trap`.
pub(super) fn macro_text(m: &syn::Macro) -> String {
    let mut out = String::new();
    print_tokens(m.to_token_stream(), &mut out);
    out.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c.to_string()
            } else {
                c.escape_unicode().to_string()
            }
        })
        .collect()
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "in" | "if" | "while" | "for" | "return" | "let" | "mut" | "as" | "else" | "loop" | "break" | "match"
    )
}

enum Atom {
    Word(String),
    Op(String),
    Group(proc_macro2::Group),
}

fn print_tokens(ts: TokenStream, out: &mut String) {
    // Glue joint punctuation into operators (`+=`, `::`, `..`) first.
    let mut atoms = Vec::new();
    let mut op = String::new();
    for tt in ts {
        match tt {
            TokenTree::Punct(p) => {
                op.push(p.as_char());
                if p.spacing() == proc_macro2::Spacing::Alone {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
            }
            TokenTree::Group(g) => {
                if !op.is_empty() {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
                atoms.push(Atom::Group(g));
            }
            other => {
                if !op.is_empty() {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
                atoms.push(Atom::Word(other.to_string()));
            }
        }
    }
    if !op.is_empty() {
        atoms.push(Atom::Op(op));
    }
    // An operator is unary when nothing that ends an operand precedes it.
    let unary = |i: usize| i == 0 || matches!(atoms[i - 1], Atom::Op(_));
    // Inside a turbofish `::<..>` the angle brackets are brackets.
    let mut generic_depth = 0usize;
    let is_op = |a: &Atom, s: &str| matches!(a, Atom::Op(o) if o == s);
    for (i, atom) in atoms.iter().enumerate() {
        let next_is_group = matches!(atoms.get(i + 1), Some(Atom::Group(_)));
        let opens_generic = is_op(atom, "<") && i > 0 && is_op(&atoms[i - 1], "::");
        let closes_generic = generic_depth > 0 && is_op(atom, ">");
        let after_open = i > 0 && is_op(&atoms[i - 1], "<") && generic_depth > 0;
        let after_close = i > 0 && is_op(&atoms[i - 1], ">") && matches!(atom, Atom::Group(_) | Atom::Op(_));
        let space = if i == 0
            || opens_generic
            || closes_generic
            || after_open
            || (after_close && generic_depth == 0 && !matches!(atom, Atom::Word(_)))
        {
            false
        } else {
            match (&atoms[i - 1], atom) {
                (Atom::Op(p), _) if matches!(p.as_str(), "::" | "." | ".." | "..=" | "#") => false,
                (Atom::Op(p), _) if p == "!" && (unary(i - 1) || next_is_group || matches!(atom, Atom::Group(_))) => {
                    false
                }
                (Atom::Op(p), _) if matches!(p.as_str(), "&" | "-" | "*") && unary(i - 1) => false,
                (_, Atom::Op(o)) if matches!(o.as_str(), "::" | "." | "," | ";" | ":" | "?" | ".." | "..=") => false,
                (Atom::Word(_), Atom::Op(o)) if o == "!" && next_is_group => false,
                (Atom::Word(w), Atom::Group(g)) if !is_keyword(w) => {
                    !matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::Bracket)
                }
                (Atom::Group(_), Atom::Group(g)) => {
                    !matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::Bracket)
                }
                _ => true,
            }
        };
        if opens_generic {
            generic_depth += 1;
        } else if closes_generic {
            generic_depth -= 1;
        }
        if space {
            out.push(' ');
        }
        match atom {
            Atom::Word(w) | Atom::Op(w) => out.push_str(w),
            Atom::Group(g) => match g.delimiter() {
                Delimiter::Brace => out.push_str("{ ... }"),
                Delimiter::Parenthesis => {
                    out.push('(');
                    print_tokens(g.stream(), out);
                    out.push(')');
                }
                Delimiter::Bracket => {
                    out.push('[');
                    print_tokens(g.stream(), out);
                    out.push(']');
                }
                Delimiter::None => print_tokens(g.stream(), out),
            },
        }
    }
}
