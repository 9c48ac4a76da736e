//! Macros in kernels: `ptx!` (inline PTX) and the assertions (`assert!`,
//! `assert_eq!`, `assert_ne!`, their `debug_` forms), which trap.

use super::text::macro_text;
use super::{Parser, Result, err};
use crate::ast::{BinOp, Expr, ExprKind, Loc};
use crate::types::Ty;

/// Which assertion a macro is.
#[derive(Clone, Copy)]
struct AssertKind {
    /// `assert_eq!`/`assert_ne!`: the comparison of its two operands.
    compare: Option<BinOp>,
    /// `debug_assert*!`: compiled where the user's crate builds with
    /// `debug_assertions`, as Rust's.
    debug: bool,
}

impl AssertKind {
    fn named(name: &str) -> Option<AssertKind> {
        let (debug, base) = match name.strip_prefix("debug_") {
            Some(base) => (true, base),
            None => (false, name),
        };
        let compare = match base {
            "assert" => None,
            "assert_eq" => Some(BinOp::Eq),
            "assert_ne" => Some(BinOp::Ne),
            _ => return None,
        };
        Some(AssertKind { compare, debug })
    }
}

impl Parser {
    /// `ptx!(..)` and the assertions.
    pub(super) fn macro_expr(&mut self, mac: &syn::Macro) -> Result<Expr> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let span = Loc::of(&mac);
        if let Some(kind) = AssertKind::named(&name) {
            return self.assert_macro(mac, kind, span);
        }
        if name != "ptx" {
            let instead = match name.as_str() {
                "matches" => "; write a `match` (`match v { 1 | 2 => true, _ => false }`) or comparisons",
                "panic" | "unreachable" | "todo" | "unimplemented" => {
                    "; `assert!(false, \"...\")` traps with its message where the code must not go (a `match` arm that needs a value gives one after it)"
                }
                _ => "",
            };
            return err(
                Loc::of(&mac.path),
                format!(
                    "macro `{name}!` cannot be used in a kernel; the macros are `ptx!` (inline PTX), `assert!`, `assert_eq!`, `assert_ne!` and their `debug_` forms{instead}"
                ),
            );
        }
        let (ty, template, args) = mac.parse_body_with(|input: syn::parse::ParseStream| {
            let ty: syn::Type = input.parse()?;
            input.parse::<syn::Token![,]>()?;
            let template: syn::LitStr = input.parse()?;
            let mut args = Vec::new();
            while !input.is_empty() {
                input.parse::<syn::Token![,]>()?;
                if input.is_empty() {
                    break;
                }
                args.push(input.parse::<syn::Expr>()?);
            }
            Ok((ty, template, args))
        })?;
        let ret = self.parse_ty(&ty)?;
        if !matches!(ret, Ty::Unit | Ty::Scalar(_) | Ty::F16x2) {
            return err(
                Loc::of(&ty),
                "`ptx!` returns `()`, a scalar or `f16x2`; write several `ptx!` for more results",
            );
        }
        let args = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?;
        Ok(self.expr_node(
            ExprKind::InlinePtx {
                ret,
                template: template.value(),
                args,
            },
            span,
        ))
    }

    /// `assert!(cond)`, `assert!(cond, "message", args..)`, `assert_eq!(a,
    /// b, ..)`, `assert_ne!(a, b, ..)`: a trap where the condition is false.
    /// The message is not formatted (a kernel has no formatter): the
    /// trap's PTX comment carries the assertion's source, message included.
    fn assert_macro(&mut self, mac: &syn::Macro, kind: AssertKind, span: Loc) -> Result<Expr> {
        let operands = if kind.compare.is_some() { 2 } else { 1 };
        let args = mac.parse_body_with(|input: syn::parse::ParseStream| {
            let mut args = Vec::new();
            while args.len() < operands && !input.is_empty() {
                args.push(input.parse::<syn::Expr>()?);
                if !input.is_empty() {
                    input.parse::<syn::Token![,]>()?;
                }
            }
            // The message and its arguments, kept only as text.
            input.parse::<proc_macro2::TokenStream>()?;
            Ok(args)
        })?;
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if args.len() < operands {
            let usage = if operands == 2 {
                format!("`{name}!(a, b)` or `{name}!(a, b, \"message\")`")
            } else {
                format!("`{name}!(condition)` or `{name}!(condition, \"message\")`")
            };
            return err(
                span,
                format!(
                    "`{name}!` needs {operands} operand{}: {usage}",
                    if operands == 1 { "" } else { "s" }
                ),
            );
        }
        let mut operands = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?;
        let cond = match kind.compare {
            Some(op) => {
                let b = operands.pop().expect("two operands");
                let a = operands.pop().expect("two operands");
                let kind = ExprKind::Binary(op, Box::new(a), Box::new(b));
                self.expr_node(kind, span)
            }
            None => operands.pop().expect("one operand"),
        };
        Ok(self.expr_node(
            ExprKind::Assert {
                cond: Box::new(cond),
                text: macro_text(mac),
                debug: kind.debug,
            },
            span,
        ))
    }
}
