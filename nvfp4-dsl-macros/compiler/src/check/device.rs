//! Device functions: calls to them (their const generics from a turbofish
//! or read off the arguments' types), their bodies (checked once, in their
//! own scope), and the rejection of recursion.

use super::*;

/// Names the device function an error is in and the kernel it was
/// compiled for (the span already points at the device function's source).
pub(super) fn in_device(e: syn::Error, d: &DeviceFn, kernel: &str) -> syn::Error {
    let mut out: Option<syn::Error> = None;
    for part in e {
        let new = syn::Error::new(
            part.span(),
            format!(
                "{part} (in device function `{}`, called from kernel `{kernel}`)",
                d.name
            ),
        );
        match &mut out {
            Some(o) => o.combine(new),
            None => out = Some(new),
        }
    }
    out.unwrap_or_else(|| d.name_span.error("unknown error"))
}

/// Whether `t` has an array length that is one of `d`'s const generics.
fn mentions_consts(t: &Ty, d: &DeviceFn) -> bool {
    match t {
        Ty::Array { elem, len } => {
            matches!(len, Len::Param(p) if d.consts.iter().any(|c| c.name == *p)) || mentions_consts(elem, d)
        }
        Ty::SharedArray { len, .. } => matches!(len, Len::Param(p) if d.consts.iter().any(|c| c.name == *p)),
        Ty::Tuple(parts) => parts.iter().any(|p| mentions_consts(p, d)),
        _ => false,
    }
}

/// Reads the const generics that the array lengths of `declared` name off
/// the matching lengths of `actual`.
fn infer_lens(declared: &Ty, actual: &Ty, lens: &mut Vec<(String, Len)>) {
    match (declared, actual) {
        (Ty::Array { elem, len }, Ty::Array { elem: a, len: l }) => {
            if let Len::Param(p) = len
                && !lens.iter().any(|(n, _)| n == p)
            {
                lens.push((p.clone(), l.clone()));
            }
            infer_lens(elem, a, lens);
        }
        (Ty::SharedArray { len: Len::Param(p), .. }, Ty::SharedArray { len: l, .. })
            if !lens.iter().any(|(n, _)| n == p) =>
        {
            lens.push((p.clone(), l.clone()));
        }
        (Ty::Tuple(d), Ty::Tuple(a)) if d.len() == a.len() => {
            for (d, a) in d.iter().zip(a) {
                infer_lens(d, a, lens);
            }
        }
        _ => {}
    }
}

/// A device function's parameter types, with its const generics replaced by
/// the lengths a call gives them.
fn substitute(t: &Ty, lens: &[(String, Len)]) -> Ty {
    let len_of = |len: &Len| match len {
        Len::Param(p) => lens
            .iter()
            .find(|(n, _)| n == p)
            .map_or_else(|| len.clone(), |(_, l)| l.clone()),
        l => l.clone(),
    };
    match t {
        Ty::Array { elem, len } => Ty::Array {
            elem: Box::new(substitute(elem, lens)),
            len: len_of(len),
        },
        Ty::SharedArray { elem, len } => Ty::SharedArray {
            elem: elem.clone(),
            len: len_of(len),
        },
        other => other.clone(),
    }
}

impl Checker<'_> {
    /// Checks a device function's body once, in its own scope: its const
    /// generics and parameters, and its return type.
    pub(super) fn device_body(&mut self, i: usize, d: &DeviceFn) -> Result<()> {
        let saved = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        for cp in &d.consts {
            self.bind(&cp.name, TyV::Ty(Ty::Scalar(cp.ty)), false, NameKind::ConstGeneric);
        }
        for p in &d.params {
            let kind = if p.by_ref { NameKind::ArrayRef } else { NameKind::Param };
            self.bind(&p.name, TyV::Ty(p.ty.clone()), p.mutable || p.by_ref, kind);
        }
        self.current = Some(i);
        let ret = TyV::Ty(d.ret.clone());
        self.ret = Some(ret.clone());
        let loops = std::mem::take(&mut self.loop_labels);
        let t = self.block(&d.body, Some(&ret))?;
        if t != TyV::Never {
            let span = d.body.stmts.last().map_or(d.body.span, |s| s.span);
            self.unify(&ret, &t, span).map_err(|_| {
                let found = self.describe(&t);
                span.error(format!("`{}` returns `{}`, but its body gives {found}", d.name, d.ret))
            })?;
        }
        self.loop_labels = loops;
        self.scopes = saved;
        self.current = None;
        self.ret = None;
        Ok(())
    }

    /// Device functions are inlined: a cycle of calls is an error at the
    /// call that closes it, naming the cycle.
    pub(super) fn reject_recursion(&self) -> Result<()> {
        let names = |path: &[usize]| {
            path.iter()
                .map(|i| format!("`{}`", self.kernel.devices[*i].name))
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        // Depth-first from every device function; a call back to a function
        // on the current path closes a cycle.
        fn visit(c: &Checker<'_>, path: &mut Vec<usize>, names: &dyn Fn(&[usize]) -> String) -> Result<()> {
            let at = *path.last().expect("a non-empty path");
            for (from, to, span) in &c.edges {
                if *from != Some(at) {
                    continue;
                }
                if let Some(start) = path.iter().position(|p| p == to) {
                    let mut cycle = path[start..].to_vec();
                    cycle.push(*to);
                    return err(
                        *span,
                        format!(
                            "recursion is not supported in kernels (device functions are inlined): {}; write a loop",
                            names(&cycle)
                        ),
                    );
                }
                path.push(*to);
                visit(c, path, names)?;
                path.pop();
            }
            Ok(())
        }
        for i in 0..self.kernel.devices.len() {
            visit(self, &mut vec![i], &names)?;
        }
        Ok(())
    }

    /// The device function a call names, if it is one.
    pub(super) fn device_of(&self, path: &CallPath) -> Option<usize> {
        let caller = self.current.map_or("", |i| self.kernel.devices[i].key.as_str());
        let key = resolve_device(caller, &path.full);
        self.kernel.devices.iter().position(|d| d.key == key)
    }

    /// The argument of a `&mut [T; N]` parameter: `&mut name` of a mutable
    /// local array (or of a `mut` array parameter), or the name of such a
    /// parameter of the calling device function (passed on, as Rust
    /// reborrows it); the callee reads and writes it in place.
    fn array_reference(&mut self, a: &Expr, p: &Param, callee: &str) -> Result<TyV> {
        let usage = || {
            format!(
                "parameter `{}` of `{callee}` is `&mut {}`: pass a local array as `&mut name` (declared `let mut name = [..];`)",
                p.name, p.ty
            )
        };
        let var = match &a.kind {
            ExprKind::Var(name) if self.lookup(name).is_some_and(|b| b.kind == NameKind::ArrayRef) => {
                return self.expr(a, None);
            }
            ExprKind::RefMut(var) => var,
            _ => return err(a.span, usage()),
        };
        let ExprKind::Var(name) = &var.kind else {
            return err(a.span, usage());
        };
        let Some(b) = self.lookup(name).cloned() else {
            return err(var.span, format!("cannot find value `{name}` in this scope"));
        };
        match b.kind {
            NameKind::ArrayRef => {
                return err(a.span, format!("`{name}` is a `&mut` array already: pass `{name}`"));
            }
            NameKind::Local | NameKind::Param if b.mutable => {}
            _ => {
                return err(
                    var.span,
                    format!("`{name}` is not mutable: declare it `let mut {name} = [..];`"),
                );
            }
        }
        let t = self.known(&b.ty, var.span)?;
        if !matches!(t, Ty::Array { .. }) {
            return err(var.span, format!("{}, found `{name}: {t}`", usage()));
        }
        self.record(var, TyV::Ty(t.clone()));
        self.record(a, TyV::Ty(t.clone()));
        Ok(TyV::Ty(t))
    }

    pub(super) fn device_call(
        &mut self,
        e: &Expr,
        idx: usize,
        generics: &[GenericArg],
        args: &[Expr],
        hint: Option<&TyV>,
    ) -> Result<TyV> {
        let k = self.kernel;
        let d = &k.devices[idx];
        self.device_calls.insert(e.id, idx);
        self.edges.push((self.current, idx, e.span));
        let signature = format!(
            "fn {}{}({})",
            d.name,
            if d.consts.is_empty() {
                String::new()
            } else {
                format!(
                    "<{}>",
                    d.consts
                        .iter()
                        .map(|c| format!("const {}: {}", c.name, c.ty.rust_name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            d.params
                .iter()
                .map(|p| format!("{}: {}{}", p.name, if p.by_ref { "&mut " } else { "" }, p.ty))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let inferring = generics.is_empty() && !d.consts.is_empty();
        if generics.len() != d.consts.len() && !inferring {
            let msg = if d.consts.is_empty() {
                format!("`{}` takes no generic arguments: `{signature}`", d.name)
            } else {
                format!(
                    "write the const generics of `{}` with a turbofish, `{}::<..>(..)`: `{signature}`",
                    d.name, d.name
                )
            };
            return err(e.span, msg);
        }
        let mut lens = Vec::new();
        for (g, c) in generics.iter().zip(&d.consts) {
            let want = TyV::Ty(Ty::Scalar(c.ty));
            match g {
                GenericArg::Len(len, span) => {
                    if let Len::Param(p) = len {
                        let t = self.lookup(p).map(|b| b.ty.clone());
                        if let Some(t) = t {
                            self.unify(&want, &t, *span)?;
                        }
                    } else if c.ty == Scalar::Bool {
                        return err(*span, format!("`{}` is a `bool`; write `true` or `false`", c.name));
                    }
                    lens.push((c.name.clone(), len.clone()));
                }
                GenericArg::Expr(x, _) => {
                    let t = self.expr(x, Some(&want))?;
                    self.unify(&want, &t, x.span)?;
                }
                GenericArg::Type(_, span) => {
                    return err(*span, format!("`{}` is a const generic; write a value", c.name));
                }
            }
        }
        if args.len() != d.params.len() {
            return err(
                e.span,
                format!(
                    "`{}` takes {} argument{}, {} given: `{signature}`",
                    d.name,
                    d.params.len(),
                    if d.params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        // Without a turbofish, array lengths in the arguments' types (or in
        // the type the context expects) give the const generics, as in Rust.
        let mut arg_types = Vec::with_capacity(args.len());
        for (a, p) in args.iter().zip(&d.params) {
            let want = substitute(&p.ty, &lens);
            let hint = (!inferring || !mentions_consts(&want, d)).then(|| TyV::Ty(want.clone()));
            let t = if p.by_ref {
                self.array_reference(a, p, &d.name)?
            } else {
                self.expr(a, hint.as_ref())?
            };
            if inferring && mentions_consts(&p.ty, d) {
                let known = self.known(&t, a.span)?;
                infer_lens(&p.ty, &known, &mut lens);
            }
            arg_types.push(t);
        }
        if inferring {
            if let Some(h) = hint.map(|h| self.shallow(h))
                && let TyV::Ty(h) = h
            {
                infer_lens(&d.ret, &h, &mut lens);
            }
            if let Some(c) = d.consts.iter().find(|c| !lens.iter().any(|(n, _)| *n == c.name)) {
                return err(
                    e.span,
                    format!(
                        "cannot infer the const generic `{}` of `{}`: write it with a turbofish, `{}::<..>(..)`: `{signature}`",
                        c.name, d.name, d.name
                    ),
                );
            }
            self.device_lens.insert(e.id, lens.clone());
        }
        for ((a, p), t) in args.iter().zip(&d.params).zip(arg_types) {
            let want = substitute(&p.ty, &lens);
            // A `&mut [T]` can be passed where `&[T]` is expected.
            if let (Ty::Slice { elem, mutable: false }, TyV::Ty(Ty::Slice { elem: got, .. })) =
                (&want, self.shallow(&t))
                && *elem == got
            {
                continue;
            }
            self.unify(&TyV::Ty(want.clone()), &t, a.span).map_err(|_| {
                let found = self.describe(&t);
                a.span.error(format!(
                    "argument `{}` of `{}` must be `{want}`, found {found}: `{signature}`",
                    p.name, d.name
                ))
            })?;
        }
        Ok(TyV::Ty(substitute(&d.ret, &lens)))
    }
}
