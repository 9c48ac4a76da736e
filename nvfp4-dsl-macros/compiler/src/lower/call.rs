//! Calls: intrinsics (through their row's lowering function, after the
//! arguments are lowered), inline PTX templates, and device functions,
//! inlined at each call with their `return`s as jumps.

use super::emit::{Call, ClosureVal, Lower, Return, Val};
use super::fold::{Const, Result, err};
use crate::ast::*;
use crate::intrinsics;
use crate::ir::*;
use crate::target::Target;
use crate::types::{Len, RegClass, Ty};
use std::collections::HashSet;

/// The pieces of a `ptx!` template, checked against the result (`{d}`)
/// and the number of inputs (`{0}`, `{1}`, ...); `{{` and `}}` are
/// literal braces, as in `format!`.
fn template_pieces(t: &str, has_dest: bool, inputs: usize, span: Loc) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = t;
    while let Some(at) = rest.find(['{', '}']) {
        text.push_str(&rest[..at]);
        let brace = &rest[at..at + 1];
        let after = &rest[at + 1..];
        if let Some(more) = after.strip_prefix(brace) {
            text.push_str(brace);
            rest = more;
            continue;
        }
        if brace == "}" {
            return err(
                span,
                "a `}` that closes no placeholder in the `ptx!` template; write `}}` for a literal brace",
            );
        }
        let Some(close) = after.find('}') else {
            return err(
                span,
                "unclosed `{` in the `ptx!` template; write `{{` for a literal brace",
            );
        };
        let piece = match &after[..close] {
            "d" if has_dest => Piece::Dest,
            "d" => return err(span, "`{d}` names the result, but this `ptx!` returns `()`"),
            n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => match n.parse::<usize>() {
                Ok(i) if i < inputs => Piece::Input(i),
                _ => return err(span, format!("`{{{n}}}` names input {n}, but only {inputs} are given")),
            },
            n => {
                return err(
                    span,
                    format!(
                        "unknown placeholder `{{{n}}}`; use `{{d}}` for the result, `{{0}}`, `{{1}}`... for the inputs, and `{{{{` and `}}}}` for literal braces (a PTX block: `{{{{ .reg .b32 t; .. }}}}`)"
                    ),
                );
            }
        };
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(piece);
        rest = &after[close + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

impl Lower<'_> {
    pub(super) fn call(
        &mut self,
        e: &Expr,
        receiver: Option<&Expr>,
        args: &[Expr],
        generics: &[GenericArg],
    ) -> Result<Val> {
        if let Some(&idx) = self.types.devices.get(&e.id) {
            let all: Vec<&Expr> = receiver.into_iter().chain(args).collect();
            return self.inline_device(e, idx, &all, generics);
        }
        let intr = intrinsics::get(*self.types.calls.get(&e.id).expect("checked: every call resolved"));
        if !self.target.has(intr.min_target) {
            let needs = match intr.min_target {
                Target::Sm90a | Target::Sm100a => format!("exists only on target {}", intr.min_target.name()),
                t => format!("needs target {} or newer", t.name()),
            };
            return err(
                e.span,
                format!(
                    "`{}` {needs}, but this kernel also compiles for {}; remove {} from `targets(..)` (a kernel without them compiles for sm_90 and sm_100a: list its own, `#[kernel(targets({}))]`)",
                    intr.display_name(),
                    self.target.name(),
                    self.target.name(),
                    intr.min_target.name()
                ),
            );
        }
        let discarded = self.discarded == Some(e.id);
        let mut vals = Vec::with_capacity(args.len() + 1);
        let mut arg_spans = Vec::with_capacity(args.len() + 1);
        for a in receiver.into_iter().chain(args) {
            let v = self.expr(a)?;
            vals.push((v, self.ty(a)));
            arg_spans.push(a.span);
        }
        let mut generic_ty = None;
        let mut generic_len = None;
        for g in generics {
            match g {
                GenericArg::Type(t, _) => generic_ty = Some(t.clone()),
                GenericArg::Len(l, _) => generic_len = Some(self.len_value(l)),
                GenericArg::Expr(..) => unreachable!("checked: intrinsics take lengths"),
            }
        }
        let call = Call {
            args: vals,
            arg_spans,
            span: e.span,
            discarded,
            generic_ty,
            generic_len,
        };
        if let (Some(fold), Some(Ty::Scalar(s))) = (intr.fold, call.args.first().map(|a| &a.1))
            && let Some(k) = call.constants().and_then(|a| fold(&a, *s))
        {
            return Ok(Val::Const(k));
        }
        (intr.lower)(self, &call)
    }

    /// A device function's or method's body in place of its call: its
    /// parameters bound to the arguments' values (a method's receiver
    /// first) in a scope of its own: a `mut` one to a copy, the others to
    /// the caller's registers (so `&mut self` and `&mut [T; N]` write the
    /// caller's). A body without `return` is lowered as a block whose value
    /// is the call's; with `return`, inside a block that `return` exits,
    /// its value going through registers.
    pub(super) fn inline_device(
        &mut self,
        e: &Expr,
        idx: usize,
        args: &[&Expr],
        generics: &[GenericArg],
    ) -> Result<Val> {
        let kernel = self.kernel;
        let d = &kernel.devices[idx];
        let mut consts = Vec::with_capacity(d.consts.len());
        if let Some(lens) = self.types.device_lens.get(&e.id) {
            for (name, len) in lens {
                let v = match len {
                    Len::Lit(n) => Val::Const(Const::Int(i128::from(*n))),
                    Len::Param(p) => self.lookup(p).cloned().unwrap_or(Val::Unit),
                };
                consts.push((name.clone(), v));
            }
        }
        for (g, c) in generics.iter().zip(&d.consts) {
            let v = match g {
                GenericArg::Len(l, _) => match l {
                    Len::Lit(n) => Val::Const(Const::Int(i128::from(*n))),
                    Len::Param(p) => self.lookup(p).cloned().unwrap_or(Val::Unit),
                },
                GenericArg::Expr(x, _) => self.expr(x)?,
                GenericArg::Type(..) => unreachable!("checked: const generics take values"),
            };
            let Val::Const(k) = v else {
                return err(
                    e.span,
                    format!("the const generic `{}` needs a value known at compile time", c.name),
                );
            };
            consts.push((c.name.clone(), Val::Const(k)));
        }
        let mut params = Vec::with_capacity(args.len());
        for (a, p) in args.iter().zip(&d.params) {
            let v = self.expr(a)?;
            let v = if p.mutable {
                let t = self.ty(a);
                let fresh = self.fresh(&t)?;
                self.assign_regs(&fresh, &v, &t);
                self.mark_var(&fresh);
                fresh
            } else {
                v
            };
            params.push((p.name.clone(), v));
        }
        const MAX_DEPTH: usize = 64;
        if self.returns.len() >= MAX_DEPTH {
            return err(e.span, "device functions nest more than 64 calls deep here");
        }
        let scopes = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        let loops = std::mem::take(&mut self.loops);
        for (name, v) in consts.into_iter().chain(params) {
            self.bind(&name, v);
        }
        let ty = self.ty(e);
        let mut has_return = false;
        walk_exprs(&d.body, &mut |x| has_return |= matches!(x.kind, ExprKind::Return(_)));
        let block = self.label();
        let result = if has_return && ty != Ty::Unit {
            self.fresh(&ty)?
        } else {
            Val::Unit
        };
        self.returns.push(Return {
            block,
            result: result.clone(),
            ty: ty.clone(),
            name: d.name.clone(),
            fn_line: d.fn_line,
        });
        let lowered = if has_return {
            self.nested(|l| {
                let v = l.block_stmts(&d.body)?;
                l.assign_regs(&result, &v, &ty);
                Ok(())
            })
            .map(|(body, ())| {
                self.push(Node::Block { id: block, body });
                result
            })
        } else {
            self.block_stmts(&d.body)
        };
        self.returns.pop();
        self.scopes = scopes;
        self.loops = loops;
        lowered
    }

    /// A closure's value: the names in scope, those its body uses that are
    /// variables copied (a later assignment does not reach the closure:
    /// it captured the value).
    pub(super) fn closure(&mut self, e: &Expr, body: &Expr) -> Val {
        let mut used = HashSet::new();
        walk_expr(body, &mut |x| {
            if let ExprKind::Var(name) = &x.kind {
                used.insert(name.as_str());
            }
        });
        let mut scopes = self.scopes.clone();
        for b in scopes.iter_mut().flatten() {
            let mut regs = Vec::new();
            b.val.regs(&mut regs);
            if used.contains(b.name.as_str()) && regs.iter().any(|r| self.var_regs.contains(r)) {
                b.val = self.copy_val(&b.val);
            }
        }
        Val::Closure(Box::new(ClosureVal { id: e.id, scopes }))
    }

    /// `name(args)` of a closure: its body in place of the call, in the
    /// scope it was created in, its parameters bound to the arguments.
    pub(super) fn closure_call(&mut self, name: &str, args: &[Expr]) -> Result<Val> {
        let Some(Val::Closure(c)) = self.lookup(name).cloned() else {
            unreachable!("checked: `{name}` is a closure")
        };
        let kernel = self.kernel;
        let Some(ExprKind::Closure { params, body, .. }) = find_expr(kernel, c.id).map(|d| &d.kind) else {
            unreachable!("a closure's id names its expression")
        };
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            let t = self.ty(a);
            let v = self.expr(a)?;
            values.push((self.copy_if_var(v, &t)?, t));
        }
        let scopes = std::mem::replace(&mut self.scopes, c.scopes);
        let loops = std::mem::take(&mut self.loops);
        self.scopes.push(Vec::new());
        let mut result = Ok(Val::Unit);
        for ((pat, _), (v, t)) in params.iter().zip(values) {
            result = result.and_then(|_| self.bind_let(pat, v, &t).map(|()| Val::Unit));
        }
        let result = result.and_then(|_| self.expr(body));
        self.scopes = scopes;
        self.loops = loops;
        result
    }

    /// `return`: from the kernel, or a jump out of the inlined device function.
    pub(super) fn return_expr(&mut self, value: Option<&Expr>) -> Result<Val> {
        let Some(ret) = self.returns.last() else {
            self.push(Node::Return);
            return Ok(Val::Unit);
        };
        let (block, result, ty) = (ret.block, ret.result.clone(), ret.ty.clone());
        if let Some(v) = value {
            let v = self.expr(v)?;
            self.assign_regs(&result, &v, &ty);
        }
        self.push(Node::ExitBlock(block));
        Ok(Val::Unit)
    }

    /// `ptx!(..)`: the template checked, its inputs lowered to operands.
    pub(super) fn inline_ptx(&mut self, ret: &Ty, template: &str, args: &[Expr], e: &Expr) -> Result<Val> {
        let mut inputs = Vec::new();
        for a in args {
            let t = self.ty(a);
            let v = self.expr(a)?;
            let op = match &t {
                Ty::Scalar(s) => self.operand(&v, *s),
                _ => Operand::Reg(self.bits_reg(&v, RegClass::B32)),
            };
            inputs.push(op);
        }
        let (dest, val) = match ret {
            Ty::Unit => (None, Val::Unit),
            t => {
                let r = self.reg(self.class_of(t));
                (Some(Operand::Reg(r)), Val::Reg(r))
            }
        };
        let template = template_pieces(template, dest.is_some(), inputs.len(), e.span)?;
        self.push(Node::Raw { template, dest, inputs });
        Ok(val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_checked() {
        let s = Loc::from(proc_macro2::Span::call_site());
        let pieces = |t: &str| template_pieces(t, true, 2, s).map_err(|e| e.to_string());
        assert_eq!(
            pieces("add.u32 {d}, {0}, {1};").unwrap(),
            [
                Piece::Text("add.u32 ".into()),
                Piece::Dest,
                Piece::Text(", ".into()),
                Piece::Input(0),
                Piece::Text(", ".into()),
                Piece::Input(1),
                Piece::Text(";".into()),
            ]
        );
        assert!(pieces("add.u32 {d}, {0}, {2};").unwrap_err().contains("names input 2"));
        assert!(template_pieces("membar.gl; {d}", false, 0, s).is_err());
        assert!(pieces("x {y}").unwrap_err().contains("unknown placeholder `{y}`"));
        assert!(pieces("x {+1}").unwrap_err().contains("unknown placeholder"));
    }

    #[test]
    fn doubled_braces_are_literal_braces() {
        let s = Loc::from(proc_macro2::Span::call_site());
        let pieces = |t: &str| template_pieces(t, true, 2, s).map_err(|e| e.to_string());
        assert_eq!(
            pieces("{{ .reg .b8 t; cvt.u32.u8 {d}, t; }}").unwrap(),
            [
                Piece::Text("{ .reg .b8 t; cvt.u32.u8 ".into()),
                Piece::Dest,
                Piece::Text(", t; }".into()),
            ]
        );
        assert_eq!(
            pieces("mov.b32 {d}, {{{0}, {1}}};").unwrap()[2..],
            [
                Piece::Text(", {".into()),
                Piece::Input(0),
                Piece::Text(", ".into()),
                Piece::Input(1),
                Piece::Text("};".into()),
            ]
        );
        assert_eq!(pieces("{{0}}").unwrap(), [Piece::Text("{0}".into())]);
        let e = pieces("{ .reg .b8 t; }").unwrap_err();
        assert!(
            e.contains("unknown placeholder") && e.contains("`{{ .reg .b32 t; .. }}`"),
            "{e}"
        );
        assert!(pieces("mov.b32 {d}, 1; }").unwrap_err().contains("write `}}`"));
        assert!(pieces("mov.b32 {d").unwrap_err().contains("write `{{`"));
    }
}
