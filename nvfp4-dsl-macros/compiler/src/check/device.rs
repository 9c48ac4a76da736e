//! Device functions: calls to them (their const generics from a turbofish
//! or read off the arguments' types), their bodies (checked once, in their
//! own scope), and the rejection of recursion.

use super::*;

/// Names the device function or method an error is in and the kernel it
/// was compiled for (the span already points at its source). Every method
/// of an impl block a kernel uses is compiled, called or not.
pub(super) fn in_device(e: syn::Error, d: &DeviceFn, kernel: &str) -> syn::Error {
    let within = if d.method_of.is_some() {
        format!("in method `{}`, compiled for kernel `{kernel}`", d.name)
    } else {
        format!("in device function `{}`, called from kernel `{kernel}`", d.name)
    };
    let mut out: Option<syn::Error> = None;
    for part in e {
        let new = syn::Error::new(part.span(), format!("{part} ({within})"));
        match &mut out {
            Some(o) => o.combine(new),
            None => out = Some(new),
        }
    }
    out.unwrap_or_else(|| d.name_span.error("unknown error"))
}

/// `fn name<consts>(params)`, as errors show a device function or method.
fn signature(d: &DeviceFn) -> String {
    let consts = if d.consts.is_empty() {
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
    };
    let params = d.params.iter().map(|p| {
        let reference = match p.pass {
            Pass::Value => "",
            Pass::Ref => "&",
            Pass::RefMut => "&mut ",
        };
        match (p.name.as_str(), p.mutable) {
            ("self", true) => "mut self".to_string(),
            ("self", false) => format!("{reference}self"),
            (name, _) => format!("{name}: {reference}{}", p.ty),
        }
    });
    format!("fn {}{consts}({})", d.name, params.collect::<Vec<_>>().join(", "))
}

/// The variable a place is part of: `x` of `x`, `x.f`, `x[i]`, `x.0[i]`.
fn place_root(mut e: &Expr) -> &Expr {
    while let ExprKind::Field(base, _) | ExprKind::TupleField(base, _) | ExprKind::Index(base, _) = &e.kind {
        e = base;
    }
    e
}

/// Whether `t` has an array length that is one of `d`'s const generics.
fn mentions_consts(t: &Ty, d: &DeviceFn) -> bool {
    match t {
        Ty::Array { elem, len } => {
            matches!(len, Len::Param(p) if d.consts.iter().any(|c| c.name == *p)) || mentions_consts(elem, d)
        }
        Ty::SharedArray { elem, len } => {
            matches!(len, Len::Param(p) if d.consts.iter().any(|c| c.name == *p)) || mentions_consts(elem, d)
        }
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
        (Ty::SharedArray { elem, len }, Ty::SharedArray { elem: a, len: l }) => {
            if let Len::Param(p) = len
                && !lens.iter().any(|(n, _)| n == p)
            {
                lens.push((p.clone(), l.clone()));
            }
            infer_lens(elem, a, lens);
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
            elem: Box::new(substitute(elem, lens)),
            len: len_of(len),
        },
        other => other.clone(),
    }
}

impl<'k> Checker<'k> {
    /// Checks a device function's body once, in its own scope: its const
    /// generics and parameters, and its return type.
    pub(super) fn device_body(&mut self, i: usize, d: &DeviceFn) -> Result<()> {
        let saved = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        for cp in &d.consts {
            self.bind(&cp.name, TyV::Ty(Ty::Scalar(cp.ty)), false, NameKind::ConstGeneric);
        }
        for p in &d.params {
            let by_ref = p.pass == Pass::RefMut;
            let kind = if by_ref { NameKind::ByRef } else { NameKind::Param };
            self.bind(&p.name, TyV::Ty(p.ty.clone()), p.mutable || by_ref, kind);
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

    /// The scope that paths in the code being checked resolve from.
    pub(super) fn scope(&self) -> &str {
        self.current.map_or("", |i| self.kernel.devices[i].scope.as_str())
    }

    /// The device function or method a call names, if it is one.
    pub(super) fn device_of(&self, path: &CallPath) -> Option<usize> {
        let key = resolve_device(self.scope(), &path.full);
        self.kernel.devices.iter().position(|d| d.key == key)
    }

    /// The `#[device]` struct that the qualifier of `Pair::f(..)` names.
    pub(super) fn struct_of(&self, path: &CallPath) -> Option<&'k StructTy> {
        let (qualifier, _) = path.full.rsplit_once("::")?;
        let key = resolve_device(self.scope(), qualifier);
        let kernel: &'k Kernel = self.kernel;
        kernel.structs.iter().find(|(k, _)| *k == key).map(|(_, t)| t)
    }

    /// Why `Pair` has no method or associated function `name` in kernels.
    pub(super) fn no_method(&self, st: &StructTy, name: &str) -> String {
        if !st.methods {
            return format!(
                "`{0}` has no methods in kernels: write them in a `#[device] impl {0} {{ .. }}` block in the struct's module, and mark the struct `#[device(methods)]`",
                st.name
            );
        }
        let mut names: Vec<String> = self
            .kernel
            .devices
            .iter()
            .filter_map(|d| match &d.method_of {
                Some((s, m)) if s.id == st.id => Some(format!("`{m}`")),
                _ => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        let list = if names.is_empty() {
            "it has none".to_string()
        } else {
            format!("its `#[device] impl` block has {}", names.join(", "))
        };
        format!("`{}` has no method `{name}` in kernels; {list}", st.name)
    }

    /// `x.name(..)` on a `#[device]` struct: a method of its impl block,
    /// `x` its receiver (already checked, of type `rt`).
    pub(super) fn struct_method(
        &mut self,
        e: &Expr,
        st: &StructTy,
        receiver: (&Expr, TyV),
        name: &str,
        args: &[Expr],
    ) -> Result<TyV> {
        let found = self
            .kernel
            .devices
            .iter()
            .position(|d| matches!(&d.method_of, Some((s, m)) if s.id == st.id && m == name));
        let Some(idx) = found else {
            return err(e.span, self.no_method(st, name));
        };
        if self.kernel.devices[idx].params.first().is_none_or(|p| p.name != "self") {
            return err(
                e.span,
                format!("`{0}::{name}` takes no `self`: call it as `{0}::{name}(..)`", st.name),
            );
        }
        self.device_call(e, idx, &[], Some(receiver), args, None)
    }

    /// The receiver of a `&mut self` method called as `x.m(..)`: a mutable
    /// place (a `let mut` local, a `mut` or `&mut` parameter, or a field or
    /// element of one), which the method changes in place.
    fn mutable_receiver(&self, r: &Expr, callee: &str) -> Result<()> {
        let root = place_root(r);
        let ExprKind::Var(name) = &root.kind else {
            return err(
                r.span,
                format!("`{callee}` takes `&mut self`: call it on a variable declared `let mut`"),
            );
        };
        match self.lookup(name) {
            Some(b) if b.mutable => Ok(()),
            _ if name == "self" => err(
                root.span,
                format!("`{callee}` takes `&mut self`, and this method's `self` is not mutable: take `&mut self`"),
            ),
            _ => err(
                root.span,
                format!("`{callee}` takes `&mut self`, and `{name}` is not mutable: declare it `let mut {name}`"),
            ),
        }
    }

    /// The argument of a `&mut` parameter (`&mut [T; N]`, `&mut Pair`,
    /// `&mut self` called as `Pair::m(&mut x)`): `&mut` of a mutable local
    /// (or `mut` parameter) or of a field or element of one, or the name of
    /// such a parameter of the calling device function (passed on, as Rust
    /// reborrows it); the callee reads and writes it in place.
    fn by_reference(&mut self, a: &Expr, p: &Param, callee: &str) -> Result<TyV> {
        let (what, init) = match &p.ty {
            Ty::Struct(st) => ("struct", format!("{} {{ .. }}", st.name)),
            _ => ("array", "[..]".to_string()),
        };
        let usage = || {
            format!(
                "parameter `{}` of `{callee}` is `&mut {}`: pass a local {what} as `&mut name` (declared `let mut name = {init};`)",
                p.name, p.ty
            )
        };
        let place = match &a.kind {
            ExprKind::Var(name) if self.lookup(name).is_some_and(|b| b.kind == NameKind::ByRef) => {
                return self.expr(a, None);
            }
            ExprKind::RefMut(place) => place,
            _ => return err(a.span, usage()),
        };
        let root = place_root(place);
        let ExprKind::Var(name) = &root.kind else {
            return err(a.span, usage());
        };
        let Some(b) = self.lookup(name).cloned() else {
            return err(root.span, format!("cannot find value `{name}` in this scope"));
        };
        match b.kind {
            NameKind::ByRef if root.id == place.id => {
                return err(a.span, format!("`{name}` is a `&mut` reference already: pass `{name}`"));
            }
            NameKind::ByRef => {}
            NameKind::Local | NameKind::Param if b.mutable => {}
            _ => {
                return err(
                    root.span,
                    format!("`{name}` is not mutable: declare it `let mut {name} = {init};`"),
                );
            }
        }
        let t = self.expr(place, None)?;
        let t = self.known(&t, place.span)?;
        if !matches!(
            (&t, &p.ty),
            (Ty::Array { .. }, Ty::Array { .. }) | (Ty::Struct(_), Ty::Struct(_))
        ) {
            return err(place.span, format!("{}, found `{t}`", usage()));
        }
        Ok(self.record(a, TyV::Ty(t)))
    }

    /// An argument of a parameter that reads the caller's value (`&[T; N]`,
    /// `&Pair`, `&self` called as `Pair::m(&x)`): `&x`, or (as Rust
    /// accepts a reference there) any expression of the type.
    fn shared_reference(&mut self, a: &Expr, hint: Option<&TyV>) -> Result<TyV> {
        let ExprKind::Ref(inner) = &a.kind else {
            return self.expr(a, hint);
        };
        let t = self.expr(inner, hint)?;
        Ok(self.record(a, t))
    }

    /// A call of a device function or method: `f(args)`, `Pair::m(args)`,
    /// or `x.m(args)` with `receiver` `x` (already checked, of its type).
    pub(super) fn device_call(
        &mut self,
        e: &Expr,
        idx: usize,
        generics: &[&GenericArg],
        receiver: Option<(&Expr, TyV)>,
        args: &[Expr],
        hint: Option<&TyV>,
    ) -> Result<TyV> {
        let k = self.kernel;
        let d = &k.devices[idx];
        self.device_calls.insert(e.id, idx);
        self.edges.push((self.current, idx, e.span));
        let signature = signature(d);
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
        // `x.m(..)`: the receiver is the first parameter, not counted.
        let skip = usize::from(receiver.is_some());
        if args.len() + skip != d.params.len() {
            let n = d.params.len() - skip;
            return err(
                e.span,
                format!(
                    "`{}` takes {n} argument{}, {} given: `{signature}`",
                    d.name,
                    if n == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        let all: Vec<&Expr> = receiver.as_ref().map(|(r, _)| *r).into_iter().chain(args).collect();
        // Without a turbofish, array lengths in the arguments' types (or in
        // the type the context expects) give the const generics, as in Rust.
        let mut arg_types = Vec::with_capacity(all.len());
        for (i, (a, p)) in all.iter().zip(&d.params).enumerate() {
            let want = substitute(&p.ty, &lens);
            let hint = (!inferring || !mentions_consts(&want, d)).then(|| TyV::Ty(want.clone()));
            let t = match (&receiver, p.pass) {
                (Some((r, rt)), pass) if i == 0 => {
                    if pass == Pass::RefMut {
                        self.mutable_receiver(r, &d.name)?;
                    }
                    rt.clone()
                }
                (_, Pass::Value) => self.expr(a, hint.as_ref())?,
                (_, Pass::Ref) => self.shared_reference(a, hint.as_ref())?,
                (_, Pass::RefMut) => self.by_reference(a, p, &d.name)?,
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
        for ((a, p), t) in all.iter().zip(&d.params).zip(arg_types) {
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
