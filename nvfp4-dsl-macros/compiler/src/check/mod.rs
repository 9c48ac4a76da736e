//! Types and names: gives every expression a type before lowering.
//!
//! Inference follows Rust where the subset needs it: unsuffixed literals take
//! their type from context (`let x: u32 = 0`, `a[0]`, `x + 1`) through
//! integer/float type variables, which default to `i32`/`f64` as in rustc.
//! The checks reject what rustc would accept but the DSL cannot lower (and
//! the basic errors rustc would report too, so no later stage sees ill-typed
//! input).

use super::ast::*;
use super::intrinsics::{self, ArgTy, Form, Generics, Intrinsic, RetTy};
use super::typed::{IntrinsicId, Types};
use super::types::{Len, Scalar, Ty};
use std::collections::HashMap;

type Result<T> = syn::Result<T>;

fn err<T>(loc: impl Into<Loc>, msg: impl std::fmt::Display) -> Result<T> {
    Err(loc.into().error(msg))
}

/// A type during inference: known, a literal's type variable, or `!`.
#[derive(Clone, Debug, PartialEq)]
enum TyV {
    Ty(Ty),
    Var(u32),
    /// A local array whose element type may still be a literal's variable.
    Array(Box<TyV>, Len),
    /// A tuple whose element types may still be literals' variables.
    Tuple(Vec<TyV>),
    Never,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum VarKind {
    Int,
    Float,
}

#[derive(Debug)]
struct Var {
    kind: VarKind,
    parent: u32,
    resolved: Option<Scalar>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NameKind {
    Local,
    Param,
    ConstGeneric,
    LocalConst,
}

#[derive(Clone, Debug)]
struct Binding {
    name: String,
    ty: TyV,
    mutable: bool,
    kind: NameKind,
}

struct Checker<'k> {
    kernel: &'k Kernel,
    /// The device function being checked (`None`: the kernel).
    current: Option<usize>,
    /// A device function's return type, for `return value`.
    ret: Option<TyV>,
    device_calls: HashMap<ExprId, usize>,
    device_lens: HashMap<ExprId, Vec<(String, Len)>>,
    /// Who calls which device function, and where: (caller, callee, call).
    edges: Vec<(Option<usize>, usize, Loc)>,
    vars: Vec<Var>,
    scopes: Vec<Vec<Binding>>,
    expr: Vec<Option<TyV>>,
    calls: HashMap<ExprId, IntrinsicId>,
    /// The labels of the loops around the expression being checked
    /// (innermost last; `None` for an unlabeled loop).
    loop_labels: Vec<Option<String>>,
    /// Integer literals to range-check once their types are known:
    /// (id, magnitude, negated, span).
    int_lits: Vec<(ExprId, u128, bool, Loc)>,
    /// Values negated with unary `-`, which must not be unsigned.
    negated: Vec<(ExprId, Loc)>,
    kernel_name: String,
}

pub fn check(k: &Kernel) -> Result<Types> {
    let mut c = Checker {
        kernel: k,
        current: None,
        ret: None,
        device_calls: HashMap::new(),
        device_lens: HashMap::new(),
        edges: Vec::new(),
        vars: Vec::new(),
        scopes: vec![Vec::new()],
        expr: vec![None; k.expr_count as usize],
        calls: HashMap::new(),
        loop_labels: Vec::new(),
        int_lits: Vec::new(),
        negated: Vec::new(),
        kernel_name: k.name.clone(),
    };
    for cp in &k.consts {
        c.bind(&cp.name, TyV::Ty(Ty::Scalar(cp.ty)), false, NameKind::ConstGeneric);
    }
    for p in &k.params {
        c.bind(&p.name, TyV::Ty(p.ty.clone()), p.mutable, NameKind::Param);
    }
    let body_ty = c.block(&k.body, None)?;
    if let TyV::Ty(t) = &body_ty
        && *t != Ty::Unit
    {
        let span = k.body.stmts.last().map(|s| s.span).unwrap_or(k.body.span);
        return err(
            span,
            "a kernel returns nothing; end the last statement with `;` and store results through a `&mut [T]` parameter",
        );
    }
    for (i, d) in k.devices.iter().enumerate() {
        c.device_body(i, d).map_err(|e| in_device(e, d, &k.name))?;
    }
    c.reject_recursion()?;
    c.finish()
}

/// Names the device function an error is in and the kernel it was
/// compiled for (the span already points at the device function's source).
fn in_device(e: syn::Error, d: &DeviceFn, kernel: &str) -> syn::Error {
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
    match t {
        Ty::Array { elem, len } => Ty::Array {
            elem: Box::new(substitute(elem, lens)),
            len: match len {
                Len::Param(p) => lens
                    .iter()
                    .find(|(n, _)| n == p)
                    .map_or_else(|| len.clone(), |(_, l)| l.clone()),
                l => l.clone(),
            },
        },
        other => other.clone(),
    }
}

impl Checker<'_> {
    /// Checks a device function's body once, in its own scope: its const
    /// generics and parameters, and its return type.
    fn device_body(&mut self, i: usize, d: &DeviceFn) -> Result<()> {
        let saved = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        for cp in &d.consts {
            self.bind(&cp.name, TyV::Ty(Ty::Scalar(cp.ty)), false, NameKind::ConstGeneric);
        }
        for p in &d.params {
            self.bind(&p.name, TyV::Ty(p.ty.clone()), p.mutable, NameKind::Param);
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
    fn reject_recursion(&self) -> Result<()> {
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
    fn device_of(&self, path: &CallPath) -> Option<usize> {
        let caller = self.current.map_or("", |i| self.kernel.devices[i].key.as_str());
        let key = resolve_device(caller, &path.full);
        self.kernel.devices.iter().position(|d| d.key == key)
    }

    fn device_call(
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
                .map(|p| format!("{}: {}", p.name, p.ty))
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
            let t = self.expr(a, hint.as_ref())?;
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

    fn bind(&mut self, name: &str, ty: TyV, mutable: bool, kind: NameKind) {
        if name == "_" {
            return;
        }
        self.scopes.last_mut().expect("a scope is always open").push(Binding {
            name: name.to_string(),
            ty,
            mutable,
            kind,
        });
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|b| b.name == name)
    }

    fn new_var(&mut self, kind: VarKind) -> TyV {
        let id = self.vars.len() as u32;
        self.vars.push(Var {
            kind,
            parent: id,
            resolved: None,
        });
        TyV::Var(id)
    }

    fn root(&mut self, mut v: u32) -> u32 {
        while self.vars[v as usize].parent != v {
            let p = self.vars[v as usize].parent;
            self.vars[v as usize].parent = self.vars[p as usize].parent;
            v = p;
        }
        v
    }

    /// Resolves variables as far as they are known.
    fn shallow(&mut self, t: &TyV) -> TyV {
        match t {
            TyV::Var(v) => {
                let r = self.root(*v);
                match self.vars[r as usize].resolved {
                    Some(s) => TyV::Ty(Ty::Scalar(s)),
                    None => TyV::Var(r),
                }
            }
            other => other.clone(),
        }
    }

    fn describe(&mut self, t: &TyV) -> String {
        match self.shallow(t) {
            TyV::Ty(t) => format!("`{t}`"),
            TyV::Var(v) => match self.vars[v as usize].kind {
                VarKind::Int => "an integer".to_string(),
                VarKind::Float => "a float".to_string(),
            },
            TyV::Array(e, l) => {
                let inner = self.describe(&e);
                format!("an array of {l} {inner}")
            }
            TyV::Never => "`!`".to_string(),
            TyV::Tuple(parts) => {
                let inner: Vec<String> = parts.iter().map(|p| self.describe(p)).collect();
                format!("a tuple ({})", inner.join(", "))
            }
        }
    }

    /// Makes two types equal or reports a mismatch at `span`.
    fn unify(&mut self, a: &TyV, b: &TyV, span: Loc) -> Result<TyV> {
        let (a, b) = (self.shallow(a), self.shallow(b));
        match (&a, &b) {
            (TyV::Never, _) => Ok(b),
            (_, TyV::Never) => Ok(a),
            (TyV::Array(x, lx), TyV::Array(y, ly)) if lx == ly => {
                let e = self.unify(x, y, span)?;
                Ok(TyV::Array(Box::new(e), lx.clone()))
            }
            (TyV::Array(x, lx), TyV::Ty(Ty::Array { elem, len }))
            | (TyV::Ty(Ty::Array { elem, len }), TyV::Array(x, lx))
                if lx == len =>
            {
                self.unify(x, &TyV::Ty((**elem).clone()), span)?;
                Ok(TyV::Ty(Ty::Array {
                    elem: elem.clone(),
                    len: len.clone(),
                }))
            }
            (TyV::Tuple(x), TyV::Tuple(y)) if x.len() == y.len() => {
                let mut parts = Vec::with_capacity(x.len());
                for (p, q) in x.iter().zip(y) {
                    parts.push(self.unify(p, q, span)?);
                }
                Ok(TyV::Tuple(parts))
            }
            (TyV::Tuple(x), TyV::Ty(Ty::Tuple(y))) | (TyV::Ty(Ty::Tuple(y)), TyV::Tuple(x)) if x.len() == y.len() => {
                for (p, q) in x.iter().zip(y) {
                    self.unify(p, &TyV::Ty(q.clone()), span)?;
                }
                Ok(TyV::Ty(Ty::Tuple(y.clone())))
            }
            (TyV::Array(..) | TyV::Tuple(_), _) | (_, TyV::Array(..) | TyV::Tuple(_)) => {
                let (da, db) = (self.describe(&a), self.describe(&b));
                err(span, format!("mismatched types: expected {da}, found {db}"))
            }
            (TyV::Ty(x), TyV::Ty(y)) if x == y => Ok(a),
            (TyV::Var(x), TyV::Var(y)) => {
                if x == y {
                    return Ok(a);
                }
                if self.vars[*x as usize].kind != self.vars[*y as usize].kind {
                    return err(span, "mismatched types: an integer and a float");
                }
                self.vars[*y as usize].parent = *x;
                Ok(a)
            }
            (TyV::Var(v), TyV::Ty(t)) | (TyV::Ty(t), TyV::Var(v)) => {
                let kind = self.vars[*v as usize].kind;
                let fits = match (kind, t.scalar()) {
                    (VarKind::Int, Some(s)) => s.is_int(),
                    (VarKind::Float, Some(s)) => s.is_prim_float(),
                    _ => false,
                };
                if !fits {
                    let what = if kind == VarKind::Int { "an integer" } else { "a float" };
                    let hint = match (kind, t.scalar()) {
                        (VarKind::Int, Some(s)) if s.is_prim_float() => "; write a float literal such as `1.0`",
                        (_, Some(Scalar::F16 | Scalar::Bf16)) => {
                            "; half-precision values have no literals: convert, e.g. `f16::from_f32(1.0)`"
                        }
                        _ => "",
                    };
                    return err(span, format!("mismatched types: expected `{t}`, found {what}{hint}"));
                }
                let s = t.scalar().expect("checked above");
                self.vars[*v as usize].resolved = Some(s);
                Ok(TyV::Ty(t.clone()))
            }
            (TyV::Ty(x), TyV::Ty(y)) => err(
                span,
                format!("mismatched types: expected `{x}`, found `{y}`; convert explicitly (`as`, `.to_f32()`, ...)"),
            ),
        }
    }

    fn record(&mut self, e: &Expr, t: TyV) -> TyV {
        self.expr[e.id as usize] = Some(t.clone());
        t
    }

    fn finish(mut self) -> Result<Types> {
        let mut out = Vec::with_capacity(self.expr.len());
        for i in 0..self.expr.len() {
            let t = self.expr[i].clone().unwrap_or(TyV::Ty(Ty::Unit));
            out.push(self.resolve(&t));
        }
        for (id, mag, neg, span) in std::mem::take(&mut self.int_lits) {
            let Some(s) = out[id as usize].scalar() else { continue };
            let (min, max) = s.int_range();
            let v = mag as i128;
            let ok = if neg { -v >= min } else { mag <= max as u128 };
            if !ok {
                return err(span, format!("literal out of range for `{}`", s.rust_name()));
            }
        }
        for (id, span) in std::mem::take(&mut self.negated) {
            if let Some(s) = out[id as usize].scalar()
                && s.is_int()
                && !s.is_signed()
            {
                return err(
                    span,
                    format!(
                        "cannot apply unary `-` to type `{}`; unsigned values cannot be negated",
                        s.rust_name()
                    ),
                );
            }
        }
        Ok(Types {
            expr: out,
            calls: self.calls,
            devices: self.device_calls,
            device_lens: self.device_lens,
        })
    }

    fn resolve(&mut self, t: &TyV) -> Ty {
        match self.shallow(t) {
            TyV::Ty(t) => t,
            TyV::Array(e, len) => Ty::Array {
                elem: Box::new(self.resolve(&e)),
                len,
            },
            TyV::Never => Ty::Unit,
            TyV::Tuple(parts) => Ty::Tuple(parts.iter().map(|p| self.resolve(p)).collect()),
            TyV::Var(v) => {
                let s = match self.vars[v as usize].kind {
                    VarKind::Int => Scalar::I32,
                    VarKind::Float => Scalar::F64,
                };
                self.vars[v as usize].resolved = Some(s);
                Ty::Scalar(s)
            }
        }
    }

    fn block(&mut self, b: &Block, hint: Option<&TyV>) -> Result<TyV> {
        self.scopes.push(Vec::new());
        let mut result = TyV::Ty(Ty::Unit);
        let n = b.stmts.len();
        for (i, s) in b.stmts.iter().enumerate() {
            let last = i + 1 == n;
            result = TyV::Ty(Ty::Unit);
            match &s.kind {
                StmtKind::Let { pat, ty, init } => {
                    let declared = ty.clone().map(TyV::Ty);
                    let t = self.expr(init, declared.as_ref())?;
                    let t = match &declared {
                        Some(d) => self.unify(d, &t, init.span)?,
                        None => t,
                    };
                    self.bind_let(pat, t)?;
                }
                StmtKind::Const { name, ty, init } => {
                    let t = TyV::Ty(Ty::Scalar(*ty));
                    let it = self.expr(init, Some(&t))?;
                    self.unify(&t, &it, init.span)?;
                    self.bind(name, t, false, NameKind::LocalConst);
                }
                StmtKind::Expr(e, semi) => {
                    let t = self.expr(e, if last && !semi { hint } else { None })?;
                    if last && !semi {
                        result = t;
                    } else if *semi && t == TyV::Never {
                        result = TyV::Never;
                    } else if !semi {
                        let t = self.shallow(&t);
                        if t != TyV::Ty(Ty::Unit) && t != TyV::Never {
                            return err(e.span, "expected `()`; add `;` after this expression");
                        }
                    }
                }
            }
        }
        self.scopes.pop();
        Ok(result)
    }

    /// Binds the names of a `let` pattern to the parts of a value of type `t`.
    fn bind_let(&mut self, pat: &LetPat, t: TyV) -> Result<()> {
        match pat {
            LetPat::Wild => Ok(()),
            LetPat::Name { name, span, mutable } => {
                let shown = self.shallow(&t);
                if let TyV::Ty(ty) = &shown
                    && matches!(ty, Ty::Unit | Ty::Cache | Ty::Target | Ty::Swizzle | Ty::TensorMap)
                {
                    return err(
                        *span,
                        format!(
                            "cannot bind a value of type `{ty}` to a name; pass it directly to the intrinsic that takes it"
                        ),
                    );
                }
                if *mutable
                    && let TyV::Ty(ty) = &shown
                    && ty.is_memory()
                {
                    return err(*span, "memory views cannot be `mut`; bind a new name for another view");
                }
                self.bind(name, t, *mutable, NameKind::Local);
                Ok(())
            }
            LetPat::Tuple(pats, span) => {
                let parts = self.tuple_parts(&t);
                match parts {
                    Some(parts) if parts.len() == pats.len() => {
                        for (p, t) in pats.iter().zip(parts) {
                            self.bind_let(p, t)?;
                        }
                        Ok(())
                    }
                    _ => {
                        let d = self.describe(&t);
                        err(
                            *span,
                            format!("this pattern takes a tuple of {} values, found {d}", pats.len()),
                        )
                    }
                }
            }
        }
    }

    /// The element types of a tuple type.
    fn tuple_parts(&mut self, t: &TyV) -> Option<Vec<TyV>> {
        match self.shallow(t) {
            TyV::Tuple(parts) => Some(parts),
            TyV::Ty(Ty::Tuple(parts)) => Some(parts.into_iter().map(TyV::Ty).collect()),
            _ => None,
        }
    }

    /// `match` on an integer or a `bool`: each arm's pattern typed as the
    /// scrutinee, its bindings in a scope of the arm, a `bool` guard, and
    /// the arms' values unified as `if`/`else` branches are.
    fn match_expr(&mut self, e: &Expr, scrutinee: &Expr, arms: &[Arm], hint: Option<&TyV>) -> Result<TyV> {
        let st = self.expr(scrutinee, None)?;
        let ok = match self.shallow(&st) {
            TyV::Ty(t) => t.is_int() || t == Ty::Scalar(Scalar::Bool),
            TyV::Var(v) => self.vars[v as usize].kind == VarKind::Int,
            _ => false,
        };
        if !ok {
            let d = self.describe(&st);
            return err(
                scrutinee.span,
                format!("`match` in kernels is on integers and `bool`s, not {d}; use `if`/`else`"),
            );
        }
        // The context's type is a hint only (as for `if`/`else`): the arms'
        // own types decide.
        let mut result: Option<TyV> = None;
        let mut all_diverge = true;
        for arm in arms {
            self.scopes.push(Vec::new());
            self.pattern(&arm.pat, &st)?;
            if let Some(g) = &arm.guard {
                self.expect_bool(g)?;
            }
            let t = self.expr(&arm.body, result.as_ref().or(hint))?;
            self.scopes.pop();
            if t == TyV::Never {
                continue;
            }
            all_diverge = false;
            result = Some(match result {
                Some(r) => self.unify(&r, &t, arm.body.span)?,
                None => t,
            });
        }
        if arms.is_empty() {
            return err(e.span, "a `match` needs at least one arm");
        }
        if all_diverge {
            return Ok(TyV::Never);
        }
        Ok(result.unwrap_or(TyV::Ty(Ty::Unit)))
    }

    fn pattern(&mut self, p: &Pat, st: &TyV) -> Result<()> {
        match p {
            Pat::Wild => Ok(()),
            Pat::Ident(name, span) => {
                if let Some(b) = self.lookup(name)
                    && matches!(b.kind, NameKind::LocalConst | NameKind::ConstGeneric)
                {
                    return err(
                        *span,
                        format!(
                            "compare with the constant in a guard: `v if v == {name} =>` (constants are not patterns in kernels)"
                        ),
                    );
                }
                self.bind(name, st.clone(), false, NameKind::Local);
                Ok(())
            }
            Pat::Lit(x) => {
                let t = self.expr(x, Some(st))?;
                self.unify(st, &t, x.span)?;
                Ok(())
            }
            Pat::Range { lo, hi, .. } => {
                let bool_t = TyV::Ty(Ty::Scalar(Scalar::Bool));
                for b in [lo, hi].into_iter().flatten() {
                    let t = self.expr(b, Some(st))?;
                    if self.shallow(&t) == bool_t {
                        return err(b.span, "ranges of `bool` are not patterns; write `true` or `false`");
                    }
                    self.unify(st, &t, b.span)?;
                }
                Ok(())
            }
            Pat::Or(ps) => {
                for q in ps {
                    if let Pat::Ident(name, span) = q {
                        return err(*span, format!("`{name}` would bind in one alternative only; use `_`"));
                    }
                    self.pattern(q, st)?;
                }
                Ok(())
            }
        }
    }

    fn expr(&mut self, e: &Expr, hint: Option<&TyV>) -> Result<TyV> {
        let t = self.expr_inner(e, hint)?;
        Ok(self.record(e, t))
    }

    fn expect_bool(&mut self, e: &Expr) -> Result<()> {
        let t = self.expr(e, Some(&TyV::Ty(Ty::Scalar(Scalar::Bool))))?;
        self.unify(&TyV::Ty(Ty::Scalar(Scalar::Bool)), &t, e.span)?;
        Ok(())
    }

    fn known(&mut self, t: &TyV, span: Loc) -> Result<Ty> {
        match self.shallow(t) {
            TyV::Ty(t) => Ok(t),
            TyV::Never => Ok(Ty::Unit),
            TyV::Array(e, len) => Ok(Ty::Array {
                elem: Box::new(self.known(&e, span)?),
                len,
            }),
            TyV::Tuple(parts) => Ok(Ty::Tuple(
                parts.iter().map(|p| self.known(p, span)).collect::<Result<Vec<_>>>()?,
            )),
            TyV::Var(_) => err(
                span,
                "type annotations needed: give this value a type (a literal suffix such as `1u32` or `1.0f32`, or `let x: T`)",
            ),
        }
    }

    fn expr_inner(&mut self, e: &Expr, hint: Option<&TyV>) -> Result<TyV> {
        let hint = hint.map(|h| self.shallow(h));
        match &e.kind {
            ExprKind::Lit(Lit::Bool(_)) => Ok(TyV::Ty(Ty::Scalar(Scalar::Bool))),
            ExprKind::Lit(Lit::Int(v, suffix)) => {
                self.int_lits.push((e.id, *v, false, e.span));
                Ok(match suffix {
                    Some(s) => TyV::Ty(Ty::Scalar(*s)),
                    None => match hint {
                        Some(TyV::Ty(t)) if t.is_int() => TyV::Ty(t),
                        Some(TyV::Var(v)) if self.vars[v as usize].kind == VarKind::Int => TyV::Var(v),
                        _ => self.new_var(VarKind::Int),
                    },
                })
            }
            ExprKind::Lit(Lit::Float(_, suffix)) => Ok(match suffix {
                Some(s) => TyV::Ty(Ty::Scalar(*s)),
                None => match hint {
                    Some(TyV::Ty(Ty::Scalar(s))) if s.is_prim_float() => TyV::Ty(Ty::Scalar(s)),
                    Some(TyV::Var(v)) if self.vars[v as usize].kind == VarKind::Float => TyV::Var(v),
                    _ => self.new_var(VarKind::Float),
                },
            }),
            ExprKind::Var(name) => match self.lookup(name) {
                Some(b) => Ok(b.ty.clone()),
                None => err(
                    e.span,
                    format!(
                        "unknown name `{name}`; a kernel sees its parameters, its const generics, its locals and local `const`s (not items outside the kernel)"
                    ),
                ),
            },
            ExprKind::CacheHint(_) => Ok(TyV::Ty(Ty::Cache)),
            ExprKind::Target(_) => Ok(TyV::Ty(Ty::Target)),
            ExprKind::Swizzle(_) => Ok(TyV::Ty(Ty::Swizzle)),
            ExprKind::Unary(op, inner) => {
                if let (UnOp::Neg, ExprKind::Lit(Lit::Int(..))) = (op, &inner.kind) {
                    let t = self.expr(inner, hint.as_ref())?;
                    if let Some(l) = self.int_lits.last_mut() {
                        l.2 = true;
                    }
                    self.negated.push((inner.id, e.span));
                    return Ok(t);
                }
                let t = self.expr(inner, hint.as_ref())?;
                let shown = self.shallow(&t);
                match (op, &shown) {
                    (UnOp::Neg, TyV::Var(_)) => {
                        self.negated.push((inner.id, e.span));
                        Ok(t)
                    }
                    (UnOp::Neg, TyV::Ty(Ty::Scalar(s))) if s.is_float() || s.is_signed() => Ok(t),
                    (UnOp::Neg, TyV::Ty(Ty::Scalar(s))) if s.is_int() => err(
                        e.span,
                        format!(
                            "cannot apply unary `-` to type `{}`; unsigned values cannot be negated",
                            s.rust_name()
                        ),
                    ),
                    (UnOp::Not, TyV::Ty(Ty::Scalar(s))) if s.is_int() || *s == Scalar::Bool => Ok(t),
                    (UnOp::Not, TyV::Var(v)) if self.vars[*v as usize].kind == VarKind::Int => Ok(t),
                    _ => {
                        let d = self.describe(&t);
                        err(
                            e.span,
                            format!(
                                "cannot apply unary `{}` to {d}",
                                if *op == UnOp::Neg { "-" } else { "!" }
                            ),
                        )
                    }
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, e.span, hint.as_ref()),
            ExprKind::Assign(place, value) => {
                let pt = self.place(place)?;
                let vt = self.expr(value, Some(&pt))?;
                self.unify(&pt, &vt, value.span)?;
                Ok(TyV::Ty(Ty::Unit))
            }
            ExprKind::AssignOp(op, place, value) => {
                if op.is_lazy() || op.is_comparison() {
                    return err(e.span, "invalid compound assignment");
                }
                let pt = self.place(place)?;
                let pk = self.known(&pt, place.span)?;
                if op.is_shift() {
                    let vt = self.expr(value, None)?;
                    self.shift_rhs(&vt, value.span)?;
                    if !pk.is_int() {
                        return err(e.span, format!("cannot shift a value of type `{pk}`"));
                    }
                } else {
                    let vt = self.expr(value, Some(&pt))?;
                    self.unify(&pt, &vt, value.span)?;
                    self.arith_operand(*op, &pk, e.span)?;
                }
                Ok(TyV::Ty(Ty::Unit))
            }
            ExprKind::Cast(inner, to) => {
                let t = self.expr(inner, Some(&TyV::Ty(to.clone())))?;
                let from = match self.shallow(&t) {
                    TyV::Var(v) => match self.vars[v as usize].kind {
                        VarKind::Int => Ty::Scalar(Scalar::I32),
                        VarKind::Float => Ty::Scalar(Scalar::F64),
                    },
                    TyV::Ty(t) => t,
                    TyV::Array(..) | TyV::Tuple(_) => return err(e.span, "cannot cast an array or a tuple"),
                    TyV::Never => return Ok(TyV::Ty(to.clone())),
                };
                let ok = match (from.scalar(), to.scalar()) {
                    (Some(f), Some(t)) => {
                        let prim = |s: Scalar| s.is_int() || s.is_prim_float();
                        (prim(f) || f == Scalar::Bool) && prim(t)
                    }
                    _ => false,
                };
                if !ok {
                    let hint = match (from.scalar(), to.scalar()) {
                        (Some(Scalar::F16 | Scalar::Bf16), _) => {
                            "; `as` does not convert half-precision values: use `.to_f32()`"
                        }
                        (_, Some(Scalar::F16 | Scalar::Bf16)) => {
                            "; `as` does not convert to half precision: use `f16::from_f32(x)`"
                        }
                        (_, Some(Scalar::Bool)) => "; compare instead, e.g. `x != 0`",
                        _ => "",
                    };
                    return err(e.span, format!("cannot cast `{from}` as `{to}`{hint}"));
                }
                Ok(TyV::Ty(to.clone()))
            }
            ExprKind::Index(base, index) => {
                let bt = self.expr(base, None)?;
                if let TyV::Array(elem, _) = self.shallow(&bt) {
                    self.index_type(
                        &Ty::Array {
                            elem: Box::new(Ty::Unit),
                            len: Len::Lit(0),
                        },
                        index,
                    )?;
                    return Ok(*elem);
                }
                let bt = self.known(&bt, base.span)?;
                self.index_type(&bt, index)?;
                match bt.elem() {
                    Some(elem) => Ok(TyV::Ty(elem.clone())),
                    None => err(
                        base.span,
                        format!("cannot index a value of type `{bt}`; index slices, shared memory or local arrays"),
                    ),
                }
            }
            ExprKind::SliceFrom { base, start, mutable } => {
                let bt = self.expr(base, None)?;
                let bt = self.known(&bt, base.span)?;
                let Ty::Slice {
                    elem,
                    mutable: base_mut,
                } = &bt
                else {
                    return err(
                        base.span,
                        format!("`&x[start..]` takes a view of a global slice, not of `{bt}`"),
                    );
                };
                if *mutable && !base_mut {
                    return err(
                        e.span,
                        "cannot take a mutable view of a `&[T]`; declare the parameter `&mut [T]`",
                    );
                }
                let usize_t = TyV::Ty(Ty::Scalar(Scalar::Usize));
                let st = self.expr(start, Some(&usize_t))?;
                self.unify(&usize_t, &st, start.span)?;
                Ok(TyV::Ty(Ty::Slice {
                    elem: elem.clone(),
                    mutable: *mutable,
                }))
            }
            ExprKind::RefMut(_) => err(
                e.span,
                "`&mut x` of a local is only the accumulator argument of a `wgmma_*` intrinsic; elsewhere use the value, or `&mut a[start..]` for a view of a slice",
            ),
            ExprKind::Field(base, field) => {
                let bt = self.expr(base, None)?;
                let bt = self.known(&bt, base.span)?;
                if let Ty::Struct(st) = &bt {
                    return match st.fields.iter().find(|(n, _)| n == field) {
                        Some((_, t)) => Ok(TyV::Ty(t.clone())),
                        None => err(e.span, format!("`{}` has no field `{field}`", st.name)),
                    };
                }
                match (&bt, field.as_str()) {
                    (Ty::U32x4, "x" | "y" | "z" | "w") => Ok(TyV::Ty(Ty::Scalar(Scalar::U32))),
                    (Ty::U32x4, _) => err(
                        e.span,
                        format!("`u32x4` has the fields `x`, `y`, `z`, `w`, not `{field}`"),
                    ),
                    _ => err(
                        e.span,
                        format!("`{bt}` has no field `{field}`; only `u32x4` has fields (`x`, `y`, `z`, `w`)"),
                    ),
                }
            }
            ExprKind::Call { path, generics, args } => self.call(e, path, generics, args, hint.as_ref()),
            ExprKind::MethodCall { receiver, method, args } => self.method_call(e, receiver, method, args),
            ExprKind::If { cond, then, els } => {
                self.expect_bool(cond)?;
                let tt = self.block(then, hint.as_ref())?;
                match els {
                    None => {
                        let shown = self.shallow(&tt);
                        if shown != TyV::Ty(Ty::Unit) && shown != TyV::Never {
                            return err(
                                e.span,
                                "an `if` without `else` has type `()`; add an `else` branch to use it as a value",
                            );
                        }
                        Ok(TyV::Ty(Ty::Unit))
                    }
                    Some(els) => {
                        let et = self.expr(els, Some(&tt))?;
                        self.unify(&tt, &et, els.span)
                    }
                }
            }
            ExprKind::While { cond, body, label } => {
                self.expect_bool(cond)?;
                self.loop_body(body, label)?;
                Ok(TyV::Ty(Ty::Unit))
            }
            ExprKind::Loop(body, label) => {
                self.loop_body(body, label)?;
                Ok(TyV::Ty(Ty::Unit))
            }
            ExprKind::For(f) => {
                let st = self.expr(&f.start, None)?;
                let et = self.expr(&f.end, Some(&st))?;
                let vt = self.unify(&st, &et, f.end.span)?;
                let ok = match self.shallow(&vt) {
                    TyV::Ty(t) => t.is_int(),
                    TyV::Var(v) => self.vars[v as usize].kind == VarKind::Int,
                    TyV::Never | TyV::Array(..) | TyV::Tuple(_) => false,
                };
                if !ok {
                    return err(f.start.span, "a `for` range must be over integers");
                }
                if let Some(step) = &f.step {
                    let usize_t = TyV::Ty(Ty::Scalar(Scalar::Usize));
                    let s = self.expr(step, Some(&usize_t))?;
                    self.unify(&usize_t, &s, step.span)?;
                    if f.inclusive {
                        return err(
                            step.span,
                            "`step_by` on an inclusive range is not supported; use `(a..b + 1).step_by(s)`",
                        );
                    }
                }
                self.scopes.push(Vec::new());
                self.bind(&f.var, vt, false, NameKind::Local);
                self.loop_body(&f.body, &f.label)?;
                self.scopes.pop();
                Ok(TyV::Ty(Ty::Unit))
            }
            ExprKind::Break(label) | ExprKind::Continue(label) => {
                if self.loop_labels.is_empty() {
                    return err(e.span, "`break` and `continue` are only allowed inside a loop");
                }
                if let Some(l) = label
                    && !self.loop_labels.iter().any(|x| x.as_ref() == Some(l))
                {
                    return err(
                        e.span,
                        format!(
                            "no enclosing loop is labeled `{l}`: `break {l}` and `continue {l}` name a loop around them in the same function"
                        ),
                    );
                }
                Ok(TyV::Never)
            }
            ExprKind::Return(value) => match (&self.ret, value) {
                (None, _) => Ok(TyV::Never),
                (Some(ret), None) => {
                    let ret = ret.clone();
                    self.unify(&ret, &TyV::Ty(Ty::Unit), e.span).map_err(|_| {
                        e.span
                            .error("this device function returns a value: write `return value;`")
                    })?;
                    Ok(TyV::Never)
                }
                (Some(ret), Some(v)) => {
                    let ret = ret.clone();
                    let t = self.expr(v, Some(&ret))?;
                    self.unify(&ret, &t, v.span)?;
                    Ok(TyV::Never)
                }
            },
            ExprKind::Block(b) => self.block(b, hint.as_ref()),
            ExprKind::Array(items) => {
                let Some(first) = items.first() else {
                    return err(e.span, "an empty array has no use in a kernel");
                };
                let elem_hint = self.array_elem_hint(hint.as_ref());
                let mut t = self.expr(first, elem_hint.as_ref())?;
                for item in &items[1..] {
                    let it = self.expr(item, Some(&t))?;
                    t = self.unify(&t, &it, item.span)?;
                }
                self.array_elem_ok(&t, first.span)?;
                Ok(TyV::Array(Box::new(t), Len::Lit(items.len() as u64)))
            }
            ExprKind::Repeat(item, len) => {
                let elem_hint = self.array_elem_hint(hint.as_ref());
                let t = self.expr(item, elem_hint.as_ref())?;
                self.array_elem_ok(&t, item.span)?;
                self.check_len(len, e.span)?;
                Ok(TyV::Array(Box::new(t), len.clone()))
            }
            ExprKind::Match { scrutinee, arms } => self.match_expr(e, scrutinee, arms, hint.as_ref()),
            ExprKind::Tuple(items) => {
                let hints = match hint.as_ref().and_then(|h| self.tuple_parts(h)) {
                    Some(h) if h.len() == items.len() => h.into_iter().map(Some).collect(),
                    _ => vec![None; items.len()],
                };
                let mut parts = Vec::with_capacity(items.len());
                for (item, h) in items.iter().zip(hints) {
                    let t = self.expr(item, h.as_ref())?;
                    self.tuple_elem_ok(&t, item.span)?;
                    parts.push(t);
                }
                Ok(TyV::Tuple(parts))
            }
            ExprKind::TupleField(base, i) => {
                let bt = self.expr(base, None)?;
                self.tuple_field(&bt, *i, e.span)
            }
            ExprKind::StructLit { ty, fields } => {
                for (name, value, span) in fields {
                    let Some((_, want)) = ty.fields.iter().find(|(n, _)| n == name) else {
                        return err(*span, format!("`{}` has no field `{name}`", ty.name));
                    };
                    if fields.iter().filter(|(n, ..)| n == name).count() > 1 {
                        return err(*span, format!("the field `{name}` is given twice"));
                    }
                    let want = TyV::Ty(want.clone());
                    let t = self.expr(value, Some(&want))?;
                    self.unify(&want, &t, value.span)?;
                }
                if let Some((name, _)) = ty.fields.iter().find(|(n, _)| !fields.iter().any(|(f, ..)| f == n)) {
                    return err(e.span, format!("missing field `{name}` of `{}`", ty.name));
                }
                Ok(TyV::Ty(Ty::Struct(ty.clone())))
            }
            ExprKind::InlinePtx { ret, args, .. } => {
                for a in args {
                    let t = self.expr(a, None)?;
                    let t = self.known(&t, a.span)?;
                    if !matches!(t, Ty::Scalar(_) | Ty::F16x2) {
                        return err(
                            a.span,
                            format!("a `ptx!` operand must be a scalar or `f16x2`, not `{t}`"),
                        );
                    }
                }
                Ok(TyV::Ty(ret.clone()))
            }
        }
    }

    fn tuple_elem_ok(&mut self, t: &TyV, span: Loc) -> Result<()> {
        match self.shallow(t) {
            TyV::Var(_) | TyV::Array(..) | TyV::Tuple(_) => Ok(()),
            TyV::Ty(t) if t.is_value() => Ok(()),
            other => {
                let d = self.describe(&other);
                err(
                    span,
                    format!("a tuple holds values (numbers, vectors, arrays), not {d}"),
                )
            }
        }
    }

    fn tuple_field(&mut self, t: &TyV, i: usize, span: Loc) -> Result<TyV> {
        match self.tuple_parts(t) {
            Some(parts) if i < parts.len() => Ok(parts[i].clone()),
            Some(parts) => err(
                span,
                format!("this tuple has {} fields, `.{i}` is not one", parts.len()),
            ),
            None => {
                let d = self.describe(t);
                err(span, format!("`.{i}` is a tuple field, and this is {d}"))
            }
        }
    }

    fn array_elem_hint(&mut self, hint: Option<&TyV>) -> Option<TyV> {
        match hint {
            Some(TyV::Ty(Ty::Array { elem, .. })) => Some(TyV::Ty((**elem).clone())),
            Some(TyV::Array(elem, _)) => Some((**elem).clone()),
            _ => None,
        }
    }

    fn array_elem_ok(&mut self, t: &TyV, span: Loc) -> Result<()> {
        match self.shallow(t) {
            TyV::Var(_) => Ok(()),
            TyV::Array(e, _) => self.array_elem_ok(&e, span),
            TyV::Ty(elem) if elem.is_value() => Ok(()),
            other => {
                let d = self.describe(&other);
                err(span, format!("an array cannot hold {d}"))
            }
        }
    }

    fn check_len(&mut self, len: &Len, span: Loc) -> Result<()> {
        if let Len::Param(p) = len {
            match self.lookup(p) {
                Some(b) if b.kind == NameKind::ConstGeneric && b.ty == TyV::Ty(Ty::Scalar(Scalar::Usize)) => {}
                _ => {
                    return err(
                        span,
                        format!("an array length must be a literal or a `usize` const generic, and `{p}` is not one"),
                    );
                }
            }
        }
        Ok(())
    }

    fn loop_body(&mut self, body: &Block, label: &Option<String>) -> Result<()> {
        self.loop_labels.push(label.clone());
        let t = self.block(body, None);
        self.loop_labels.pop();
        let t = t?;
        let t = self.shallow(&t);
        if t != TyV::Ty(Ty::Unit) && t != TyV::Never {
            return err(body.span, "a loop body has type `()`; end its last statement with `;`");
        }
        Ok(())
    }

    fn shift_rhs(&mut self, t: &TyV, span: Loc) -> Result<()> {
        match self.shallow(t) {
            TyV::Ty(t) if t.is_int() => Ok(()),
            TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => Ok(()),
            _ => err(span, "a shift amount must be an integer"),
        }
    }

    fn arith_operand(&mut self, op: BinOp, t: &Ty, span: Loc) -> Result<()> {
        let s = t.scalar();
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => s.is_some_and(|s| s != Scalar::Bool),
            BinOp::Rem => s.is_some_and(|s| s.is_int()),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => s.is_some_and(|s| s.is_int() || s == Scalar::Bool),
            _ => true,
        };
        if ok {
            return Ok(());
        }
        let hint = if op == BinOp::Rem && s.is_some_and(|s| s.is_float()) {
            "; the float remainder is not supported in kernels"
        } else if matches!(t, Ty::F16x2) {
            "; use the half2 intrinsics `hadd2`, `hmul2`, `hfma2`"
        } else {
            ""
        };
        err(span, format!("cannot apply `{}` to `{t}`{hint}", op.symbol()))
    }

    fn binary(&mut self, op: BinOp, l: &Expr, r: &Expr, span: Loc, hint: Option<&TyV>) -> Result<TyV> {
        let bool_t = TyV::Ty(Ty::Scalar(Scalar::Bool));
        if op.is_lazy() {
            self.expect_bool(l)?;
            self.expect_bool(r)?;
            return Ok(bool_t);
        }
        if op.is_shift() {
            let lt = self.expr(l, hint)?;
            let rt = self.expr(r, None)?;
            self.shift_rhs(&rt, r.span)?;
            match self.shallow(&lt) {
                TyV::Ty(t) if t.is_int() => {}
                TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => {}
                _ => return err(l.span, "only integers can be shifted"),
            }
            return Ok(lt);
        }
        // The operands' own types win over the context (`(32 * n) as usize`
        // with `n: u32` multiplies u32s); the context only types what is
        // still a bare literal afterwards (`let x: u64 = 1 + 2`).
        let lt = self.expr(l, None)?;
        let rt = self.expr(r, Some(&lt))?;
        let mut t = self.unify(&lt, &rt, span)?;
        if !op.is_comparison()
            && let (TyV::Var(_), Some(h)) = (self.shallow(&t), hint)
            && let Ok(u) = self.unify(&t, h, span)
        {
            t = u;
        }
        if let TyV::Ty(ty) = self.shallow(&t) {
            if op.is_comparison() {
                if ty.scalar().is_none() {
                    return err(span, format!("cannot compare values of type `{ty}`"));
                }
                if matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge) && ty == Ty::Scalar(Scalar::Bool) {
                    return err(span, "ordering comparisons on `bool` are not supported");
                }
            } else {
                self.arith_operand(op, &ty, span)?;
            }
        } else if let TyV::Var(v) = self.shallow(&t)
            && !op.is_comparison()
            && self.vars[v as usize].kind == VarKind::Float
            && matches!(op, BinOp::Rem | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
        {
            return err(span, format!("cannot apply `{}` to a float", op.symbol()));
        }
        Ok(if op.is_comparison() { bool_t } else { t })
    }

    /// Types an assignment target and checks that it is writable.
    fn place(&mut self, p: &Expr) -> Result<TyV> {
        match &p.kind {
            ExprKind::Var(name) => {
                let Some(b) = self.lookup(name).cloned() else {
                    return err(p.span, format!("unknown name `{name}`"));
                };
                if !b.mutable {
                    let why = match b.kind {
                        NameKind::ConstGeneric | NameKind::LocalConst => {
                            format!("`{name}` is a constant and cannot be assigned")
                        }
                        NameKind::Param => {
                            format!("cannot assign to the parameter `{name}`; declare it `mut {name}: ...`")
                        }
                        NameKind::Local => {
                            format!("cannot assign twice to immutable variable `{name}`; declare it `let mut {name}`")
                        }
                    };
                    return err(p.span, why);
                }
                let t = b.ty.clone();
                if let TyV::Ty(ty) = self.shallow(&t)
                    && ty.is_memory()
                {
                    return err(p.span, "memory views cannot be reassigned; bind a new name");
                }
                Ok(self.record(p, t))
            }
            ExprKind::Index(base, index) => {
                let bt = match &base.kind {
                    ExprKind::Var(_) | ExprKind::Field(..) | ExprKind::Index(..) => {
                        if let ExprKind::Var(n) = &base.kind
                            && let Some(b) = self.lookup(n).cloned()
                            && matches!(self.shallow(&b.ty), TyV::Ty(Ty::Array { .. }) | TyV::Array(..))
                        {
                            self.place(base)?
                        } else if let ExprKind::Index(..) = &base.kind {
                            self.place(base)?
                        } else {
                            self.expr(base, None)?
                        }
                    }
                    _ => self.expr(base, None)?,
                };
                if let TyV::Array(elem, _) = self.shallow(&bt) {
                    self.index_type(
                        &Ty::Array {
                            elem: Box::new(Ty::Unit),
                            len: Len::Lit(0),
                        },
                        index,
                    )?;
                    return Ok(self.record(p, *elem));
                }
                let bt = self.known(&bt, base.span)?;
                if let Ty::Slice { mutable: false, .. } = bt {
                    return err(
                        p.span,
                        "cannot assign through a `&[T]`; declare the parameter `&mut [T]`",
                    );
                }
                self.index_type(&bt, index)?;
                match bt.elem() {
                    Some(elem) => {
                        let t = TyV::Ty(elem.clone());
                        Ok(self.record(p, t))
                    }
                    None => err(base.span, format!("cannot index a value of type `{bt}`")),
                }
            }
            ExprKind::TupleField(base, i) => {
                let bt = self.place(base)?;
                let t = self.tuple_field(&bt, *i, p.span)?;
                Ok(self.record(p, t))
            }
            ExprKind::Field(base, field) => {
                let bt = self.place(base)?;
                let bt = self.known(&bt, base.span)?;
                if let Ty::Struct(st) = &bt
                    && let Some((_, t)) = st.fields.iter().find(|(n, _)| n == field)
                {
                    let t = TyV::Ty(t.clone());
                    return Ok(self.record(p, t));
                }
                match (&bt, field.as_str()) {
                    (Ty::U32x4, "x" | "y" | "z" | "w") => {
                        let t = TyV::Ty(Ty::Scalar(Scalar::U32));
                        Ok(self.record(p, t))
                    }
                    _ => err(p.span, format!("`{bt}` has no field `{field}`")),
                }
            }
            _ => err(
                p.span,
                "invalid assignment target; assign to a `let mut` variable, `a[i]`, or a vector field",
            ),
        }
    }

    fn index_type(&mut self, base: &Ty, index: &Expr) -> Result<()> {
        let usize_t = TyV::Ty(Ty::Scalar(Scalar::Usize));
        match base {
            Ty::Slice { .. } | Ty::Array { .. } => {
                let it = self.expr(index, Some(&usize_t))?;
                self.unify(&usize_t, &it, index.span).map_err(|_| {
                    index
                        .span
                        .error("slices and arrays are indexed by `usize` (as in Rust); convert with `as usize`")
                })?;
                Ok(())
            }
            Ty::SharedArray { .. } | Ty::SharedSlice { .. } => {
                let it = self.expr(index, None)?;
                match self.shallow(&it) {
                    TyV::Ty(Ty::Scalar(Scalar::U32 | Scalar::I32 | Scalar::Usize)) => Ok(()),
                    TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => Ok(()),
                    _ => err(index.span, "shared memory is indexed by `u32`, `i32` or `usize`"),
                }
            }
            other => err(index.span, format!("cannot index a value of type `{other}`")),
        }
    }

    fn call(
        &mut self,
        e: &Expr,
        path: &CallPath,
        generics: &[GenericArg],
        args: &[Expr],
        hint: Option<&TyV>,
    ) -> Result<TyV> {
        let form = match &path.qualifier {
            Some(q) => Form::Assoc(leak_name(q)),
            None => Form::Free,
        };
        let candidates: Vec<&'static Intrinsic> = intrinsics::all()
            .filter(|i| i.name == path.name && i.form == form)
            .collect();
        if candidates.is_empty() {
            if let Some(idx) = self.device_of(path) {
                return self.device_call(e, idx, generics, args, hint);
            }
            let display = path.display();
            if path.qualifier.is_none() && path.name == self.kernel_name {
                return err(
                    e.span,
                    format!("`{display}` calls itself: recursion is not supported in kernels; write a loop"),
                );
            }
            if let Some(q) = &path.qualifier
                && matches!(q.as_str(), "Vec" | "Box" | "String" | "Rc" | "Arc")
            {
                return err(
                    e.span,
                    format!(
                        "`{q}` allocates on the heap, which kernels cannot do; use a fixed-size array `[T; N]` or shared memory"
                    ),
                );
            }
            if let Some(q) = &path.qualifier
                && intrinsics::all().any(|i| i.name == path.name && i.form == Form::Free)
            {
                return err(
                    e.span,
                    format!(
                        "`{display}` is not an intrinsic; did you mean `{}` (without `{q}::`)?",
                        path.name
                    ),
                );
            }
            return err(
                e.span,
                format!(
                    "`{display}` is not an intrinsic or a `#[device]` function; a kernel can call the intrinsics of `nvfp4_dsl::prelude` and functions marked `#[device]` (kernels themselves cannot be called from a kernel)"
                ),
            );
        }
        self.match_intrinsic(e, &candidates, None, generics, args, hint, &path.display())
    }

    fn method_call(&mut self, e: &Expr, receiver: &Expr, method: &str, args: &[Expr]) -> Result<TyV> {
        let rt = self.expr(receiver, None)?;
        let rt = match self.shallow(&rt) {
            TyV::Var(_) => {
                return err(
                    receiver.span,
                    format!(
                        "type annotations needed to call `.{method}()`: give the value a type, e.g. with a literal suffix"
                    ),
                );
            }
            other => other,
        };
        let rty = self.known(&rt, receiver.span)?;
        // A local array's length is its type's.
        if method == "len" && args.is_empty() && matches!(rty, Ty::Array { .. }) {
            return Ok(TyV::Ty(Ty::Scalar(Scalar::Usize)));
        }
        let candidates: Vec<&'static Intrinsic> = intrinsics::all()
            .filter(|i| i.name == method && i.form == Form::Method)
            .filter(|i| i.params.first().is_some_and(|p| p.matches(&rty, i)))
            .collect();
        if candidates.is_empty() {
            if let Some(msg) = unsupported_method(method, &rty) {
                return err(e.span, msg);
            }
            let known: Vec<&str> = intrinsics::all()
                .filter(|i| i.form == Form::Method && i.params.first().is_some_and(|p| p.matches(&rty, i)))
                .map(|i| i.name)
                .collect();
            let list = if known.is_empty() {
                "it has no methods in kernels".to_string()
            } else {
                let mut k = known;
                k.sort_unstable();
                k.dedup();
                format!(
                    "its methods in kernels are {}",
                    k.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
                )
            };
            return err(e.span, format!("no method `{method}` on `{rty}` in kernels; {list}"));
        }
        self.match_intrinsic(
            e,
            &candidates,
            Some((receiver, rty)),
            &[],
            args,
            None,
            &format!(".{method}"),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn match_intrinsic(
        &mut self,
        e: &Expr,
        candidates: &[&'static Intrinsic],
        receiver: Option<(&Expr, Ty)>,
        generics: &[GenericArg],
        args: &[Expr],
        hint: Option<&TyV>,
        display: &str,
    ) -> Result<TyV> {
        let intr = candidates[0];
        let given = args.len() + usize::from(receiver.is_some());
        if given != intr.params.len() {
            let skip = usize::from(intr.form == Form::Method);
            return err(
                e.span,
                format!(
                    "`{display}` takes {} argument{}, {} given: `{}`",
                    intr.params.len() - skip,
                    if intr.params.len() - skip == 1 { "" } else { "s" },
                    args.len(),
                    intr.signature()
                ),
            );
        }
        // Generic parameters written with a turbofish.
        let mut generic_len: Option<Len> = None;
        let generic_ty = match (intr.generics, generics) {
            (Generics::None, []) => None,
            (Generics::None, [g, ..]) => {
                let span = match g {
                    GenericArg::Type(_, s) | GenericArg::Len(_, s) | GenericArg::Expr(_, s) => *s,
                };
                return err(span, format!("`{display}` takes no generic arguments"));
            }
            (Generics::Type, [GenericArg::Type(t, s)]) => {
                if t.mem_layout().is_none() {
                    return err(*s, format!("`{t}` cannot live in shared memory"));
                }
                Some((t.clone(), None))
            }
            (Generics::TypeLen, [GenericArg::Type(t, s), GenericArg::Len(l, ls)]) => {
                if t.mem_layout().is_none() {
                    return err(*s, format!("`{t}` cannot live in shared memory"));
                }
                self.check_len_generic(l, *ls)?;
                Some((t.clone(), Some(l.clone())))
            }
            (Generics::Len(allowed), [GenericArg::Len(l, ls)]) => {
                if let Len::Lit(n) = l
                    && !allowed.contains(n)
                {
                    return err(*ls, format!("`{display}` takes one of the lengths {allowed:?}"));
                }
                self.check_len_generic(l, *ls)?;
                generic_len = Some(l.clone());
                None
            }
            (Generics::Len(allowed), _) => {
                return err(
                    e.span,
                    format!(
                        "write the length with a turbofish, one of {allowed:?}: `{}`",
                        intr.signature()
                    ),
                );
            }
            (Generics::Type, _) | (Generics::TypeLen, _) => {
                return err(
                    e.span,
                    format!(
                        "write the element type{} with a turbofish: `{}`",
                        if intr.generics == Generics::TypeLen {
                            " and length"
                        } else {
                            ""
                        },
                        intr.signature()
                    ),
                );
            }
        };

        // Try candidates in order; report the first one's error if none fits.
        let mut first_err = None;
        for cand in candidates {
            match self.try_signature(cand, receiver.as_ref(), args, hint) {
                Ok(ret) => {
                    self.calls.insert(e.id, intrinsics::id(cand));
                    return Ok(match cand.ret {
                        RetTy::SharedArray => {
                            let (t, l) = generic_ty.clone().expect("checked with the generics");
                            TyV::Ty(Ty::SharedArray {
                                elem: Box::new(t),
                                len: l.expect("TypeLen has a length"),
                            })
                        }
                        RetTy::SharedSlice => {
                            let (t, _) = generic_ty.clone().expect("checked with the generics");
                            TyV::Ty(Ty::SharedSlice { elem: Box::new(t) })
                        }
                        RetTy::ArrayOfGenericLen(ref elem) => TyV::Ty(Ty::Array {
                            elem: Box::new(elem.clone()),
                            len: generic_len.clone().expect("checked with the generics"),
                        }),
                        _ => ret,
                    });
                }
                Err(err) => {
                    first_err.get_or_insert(err);
                }
            }
        }
        Err(first_err.expect("at least one candidate"))
    }

    /// `&mut acc`, `acc` a mutable local `[f32; N]`: records the types of
    /// the reference and the variable (both the array type).
    fn accumulator_arg(&mut self, intr: &Intrinsic, i: usize, a: &Expr) -> Result<()> {
        let usage = || {
            format!(
                "argument {} of `{}` is the accumulator: write `&mut acc` with `let mut acc = [0.0f32; N];` (`{}`)",
                i + 1,
                intr.display_name(),
                intr.signature()
            )
        };
        let ExprKind::RefMut(var) = &a.kind else {
            return err(a.span, usage());
        };
        let ExprKind::Var(name) = &var.kind else {
            return err(a.span, usage());
        };
        let Some(b) = self.lookup(name).cloned() else {
            return err(var.span, format!("cannot find value `{name}` in this scope"));
        };
        if b.kind != NameKind::Local || !b.mutable {
            return err(
                var.span,
                format!("the accumulator `{name}` must be a local declared `let mut {name} = [0.0f32; N];`"),
            );
        }
        let t = self.known(&b.ty, var.span)?;
        if !matches!(&t, Ty::Array { elem, .. } if **elem == Ty::Scalar(Scalar::F32)) {
            return err(
                var.span,
                format!("the accumulator `{name}` must be an `[f32; N]` array, found `{t}`"),
            );
        }
        self.record(var, TyV::Ty(t.clone()));
        self.record(a, TyV::Ty(t));
        Ok(())
    }

    fn check_len_generic(&mut self, l: &Len, span: Loc) -> Result<()> {
        if let Len::Param(p) = l {
            match self.lookup(p) {
                Some(b) if b.kind == NameKind::ConstGeneric && b.ty == TyV::Ty(Ty::Scalar(Scalar::Usize)) => Ok(()),
                _ => err(
                    span,
                    format!("a length must be a literal or a `usize` const generic, and `{p}` is not one"),
                ),
            }
        } else {
            Ok(())
        }
    }

    fn try_signature(
        &mut self,
        intr: &'static Intrinsic,
        receiver: Option<&(&Expr, Ty)>,
        args: &[Expr],
        hint: Option<&TyV>,
    ) -> Result<TyV> {
        let mut t_var: Option<TyV> = None;
        let skip = usize::from(receiver.is_some());
        if let Some((_, rty)) = receiver
            && intr.params[0] == ArgTy::T
        {
            t_var = Some(TyV::Ty(rty.clone()));
        }
        let mut mem_elem: Option<Ty> = None;
        if let Some((_, rty)) = receiver
            && let Some(el) = rty.elem()
        {
            mem_elem = Some(el.clone());
        }
        for (i, a) in args.iter().enumerate() {
            let p = &intr.params[i + skip];
            match p {
                ArgTy::Is(_) | ArgTy::ArrayOf(..) => {
                    let want = match p {
                        ArgTy::ArrayOf(elem, n) => TyV::Ty(intrinsics::array_of(elem, *n)),
                        ArgTy::Is(t) => TyV::Ty(t.clone()),
                        _ => unreachable!("matched above"),
                    };
                    let t = self.expr(a, Some(&want))?;
                    self.unify(&want, &t, a.span).map_err(|_| {
                        let found = self.describe(&t);
                        a.span.error(format!(
                            "argument {} of `{}` must be `{}`, found {found}: `{}`",
                            i + 1,
                            intr.display_name(),
                            want_display(&want),
                            intr.signature()
                        ))
                    })?;
                }
                ArgTy::T => {
                    let h = t_var.clone().or_else(|| match (&intr.ret, hint) {
                        (RetTy::T, Some(h)) => Some(h.clone()),
                        _ => None,
                    });
                    let t = self.expr(a, h.as_ref())?;
                    let t = match &t_var {
                        Some(tv) => self.unify(tv, &t, a.span)?,
                        None => t,
                    };
                    let k = self.known(&t, a.span)?;
                    if !intr.t_set.contains(&k) {
                        return err(
                            a.span,
                            format!(
                                "`{}` works on {}, not `{k}`",
                                intr.display_name(),
                                intr.t_set
                                    .iter()
                                    .map(|t| format!("`{t}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                    }
                    t_var = Some(TyV::Ty(k));
                }
                ArgTy::Index => {
                    let t = self.expr(a, None)?;
                    match self.shallow(&t) {
                        TyV::Ty(Ty::Scalar(Scalar::U32 | Scalar::I32 | Scalar::Usize)) => {}
                        TyV::Var(v) if self.vars[v as usize].kind == VarKind::Int => {}
                        _ => {
                            let found = self.describe(&t);
                            return err(
                                a.span,
                                format!("an index must be `u32`, `i32` or `usize`, found {found}"),
                            );
                        }
                    }
                }
                ArgTy::Mem | ArgTy::MemMut | ArgTy::Global => {
                    let t = self.expr(a, None)?;
                    let k = self.known(&t, a.span)?;
                    let ok = match p {
                        ArgTy::Mem => k.is_memory(),
                        ArgTy::MemMut => matches!(
                            k,
                            Ty::Slice { mutable: true, .. } | Ty::SharedArray { .. } | Ty::SharedSlice { .. }
                        ),
                        _ => matches!(k, Ty::Slice { .. }),
                    };
                    if !ok {
                        let want = match p {
                            ArgTy::Mem => "a slice or shared memory",
                            ArgTy::MemMut => "a `&mut [T]` slice or shared memory",
                            _ => "a global-memory slice",
                        };
                        return err(
                            a.span,
                            format!(
                                "argument {} of `{}` must be {want}, found `{k}`",
                                i + 1,
                                intr.display_name()
                            ),
                        );
                    }
                    mem_elem = k.elem().cloned();
                }
                ArgTy::Elem => {
                    let Some(want) = mem_elem.clone() else {
                        unreachable!("the memory argument comes first")
                    };
                    let want = TyV::Ty(want);
                    let t = self.expr(a, Some(&want))?;
                    self.unify(&want, &t, a.span)?;
                }
                ArgTy::SwizzleConst => {
                    let t = self.expr(a, None)?;
                    if !matches!(a.kind, ExprKind::Swizzle(_)) || self.shallow(&t) != TyV::Ty(Ty::Swizzle) {
                        return err(a.span, "write the swizzle as a constant, e.g. `Swizzle::B128`");
                    }
                }
                ArgTy::ConstU32 => {
                    let want = TyV::Ty(Ty::Scalar(Scalar::U32));
                    let t = self.expr(a, Some(&want))?;
                    self.unify(&want, &t, a.span)?;
                }
                ArgTy::SharedOf(elem) => {
                    let t = self.expr(a, None)?;
                    let k = self.known(&t, a.span)?;
                    let ok = match &k {
                        Ty::SharedArray { elem: e, .. } | Ty::SharedSlice { elem: e } => **e == *elem,
                        _ => false,
                    };
                    if !ok {
                        return err(
                            a.span,
                            format!(
                                "argument {} of `{}` must be shared memory of `{elem}`, found `{k}`",
                                i + 1,
                                intr.display_name()
                            ),
                        );
                    }
                }
                ArgTy::Shared => {
                    let t = self.expr(a, None)?;
                    let k = self.known(&t, a.span)?;
                    if !matches!(k, Ty::SharedArray { .. } | Ty::SharedSlice { .. }) {
                        return err(
                            a.span,
                            format!(
                                "argument {} of `{}` must be shared memory, found `{k}`",
                                i + 1,
                                intr.display_name()
                            ),
                        );
                    }
                    mem_elem = k.elem().cloned();
                }
                ArgTy::AccumMut => self.accumulator_arg(intr, i, a)?,
                ArgTy::TargetConst => {
                    let t = self.expr(a, None)?;
                    if !matches!(a.kind, ExprKind::Target(_)) || self.shallow(&t) != TyV::Ty(Ty::Target) {
                        return err(a.span, "write the target as a constant, e.g. `Target::Sm100a`");
                    }
                }
                ArgTy::Hint => {
                    let t = self.expr(a, None)?;
                    if !matches!(a.kind, ExprKind::CacheHint(_)) || self.shallow(&t) != TyV::Ty(Ty::Cache) {
                        return err(a.span, "write the cache hint as a constant, e.g. `Cache::Streaming`");
                    }
                }
            }
        }
        Ok(match intr.ret {
            RetTy::Unit => TyV::Ty(Ty::Unit),
            RetTy::Is(ref t) => TyV::Ty(t.clone()),
            RetTy::T => t_var.unwrap_or(TyV::Ty(Ty::Unit)),
            RetTy::Elem => TyV::Ty(mem_elem.unwrap_or(Ty::Unit)),
            RetTy::SharedArray | RetTy::SharedSlice => TyV::Ty(Ty::Unit),
            RetTy::Array(ref t, n) => TyV::Ty(Ty::Array {
                elem: Box::new(t.clone()),
                len: Len::Lit(n),
            }),
            RetTy::ArrayOfGenericLen(_) => TyV::Ty(Ty::Unit),
        })
    }
}

/// Why a method that Rust has is missing on `ty` in kernels, and what to
/// write instead, for the methods people reach for.
fn unsupported_method(method: &str, ty: &Ty) -> Option<String> {
    let int = ty.is_int();
    if int && (method.starts_with("checked_") || method.starts_with("overflowing_")) {
        let op = method.split_once('_').map_or(method, |(_, op)| op);
        let instead = ["wrapping_", "saturating_"]
            .iter()
            .map(|p| format!("{p}{op}"))
            .filter(|m| intrinsics::all().any(|i| i.name == m && i.form == Form::Method))
            .map(|m| format!("`.{m}()`"))
            .collect::<Vec<_>>();
        let what = if method.starts_with("checked_") {
            "returns an `Option`"
        } else {
            "returns a `(value, overflowed)` tuple"
        };
        let hint = if instead.is_empty() {
            "compute the condition explicitly with a comparison".to_string()
        } else {
            format!("use {}, or compare explicitly", instead.join(" or "))
        };
        return Some(format!(
            "`.{method}()` {what}, which kernels cannot lower (a kernel has no way to panic or unwrap); {hint}"
        ));
    }
    let rows: Vec<&Intrinsic> = intrinsics::all()
        .filter(|i| i.name == method && i.form == Form::Method)
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut types: Vec<String> = rows
        .iter()
        .flat_map(|i| i.t_set.iter().map(|t| format!("`{t}`")))
        .collect();
    types.dedup();
    if types.is_empty() {
        return None;
    }
    let hint = if intrinsics::APPROXIMATE.contains(&method) && *ty == Ty::Scalar(Scalar::F64) {
        format!("; PTX approximates it in `f32` only: write `(x as f32).{method}()`")
    } else {
        String::new()
    };
    Some(format!(
        "`.{method}()` is available in kernels on {}, not on `{ty}`{hint}",
        types.join(", ")
    ))
}

fn want_display(t: &TyV) -> String {
    match t {
        TyV::Ty(t) => t.to_string(),
        _ => "?".to_string(),
    }
}

/// Type names used as qualifiers are few and fixed; map them to the table's
/// static names so `Form` can compare by value.
fn leak_name(q: &str) -> &'static str {
    intrinsics::all()
        .find_map(|i| match i.form {
            Form::Assoc(n) if n == q => Some(n),
            _ => None,
        })
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_kernel;

    fn check_src(src: &str) -> Result<(Kernel, Types)> {
        let item: syn::ItemFn = syn::parse_str(src).expect("test source parses");
        let k = parse_kernel(&item, &[])?;
        let t = check(&k)?;
        Ok((k, t))
    }

    fn err_of(src: &str) -> String {
        match check_src(src) {
            Ok(_) => panic!("expected an error for {src}"),
            Err(e) => e.to_string(),
        }
    }

    fn let_ty(k: &Kernel, t: &Types, name: &str) -> Ty {
        for s in &k.body.stmts {
            if let StmtKind::Let {
                pat: LetPat::Name { name: n, .. },
                init,
                ..
            } = &s.kind
                && n == name
            {
                return t.of(init).clone();
            }
        }
        panic!("no let {name}");
    }

    /// Found by the differential fuzzer: the arms of a `match` were unified
    /// with the context's type hint (a cast's target), rejecting valid code.
    #[test]
    fn regression_match_arms_take_their_type_from_the_arms_not_the_context() {
        let (k, t) = check_src("fn k(v: u32) { let x = (match v { 0 => 5i32, _ => -3 }) as u64; }").unwrap();
        assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::U64));
    }

    #[test]
    fn literals_take_their_type_from_context() {
        let (k, t) = check_src(
            "fn k(a: &mut [f32], n: u32) { let i = 1 + n; let x = 2.0; a[0] = x; let j = 3; let m = 4; let q = m + 1u64; }",
        )
        .unwrap();
        assert_eq!(let_ty(&k, &t, "i"), Ty::Scalar(Scalar::U32));
        assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::F32));
        assert_eq!(let_ty(&k, &t, "j"), Ty::Scalar(Scalar::I32));
        assert_eq!(let_ty(&k, &t, "m"), Ty::Scalar(Scalar::U64));
        let _ = let_ty(&k, &t, "q");
    }

    #[test]
    fn operand_types_win_over_the_context() {
        let (k, t) = check_src("fn k(n: u32) { let a = (32 * n) as usize; let b: u64 = 1 + 2; }").unwrap();
        assert_eq!(let_ty(&k, &t, "a"), Ty::Scalar(Scalar::Usize));
        assert_eq!(let_ty(&k, &t, "b"), Ty::Scalar(Scalar::U64));
    }

    #[test]
    fn float_literals_default_to_f64() {
        let (k, t) = check_src("fn k() { let x = 1.5; }").unwrap();
        assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::F64));
    }

    #[test]
    fn index_types_follow_rust() {
        let e = err_of("fn k(a: &[f32], i: u32) { let x = a[i]; }");
        assert!(e.contains("indexed by `usize`"), "{e}");
        check_src("fn k(a: &[f32], i: u32) { let x = a[i as usize]; }").unwrap();
    }

    #[test]
    fn mismatches_and_mutability_are_errors() {
        let e = err_of("fn k(n: u32, m: i32) { let x = n + m; }");
        assert!(e.contains("mismatched types"), "{e}");
        let e = err_of("fn k(n: u32) { let x = n; x = 3; }");
        assert!(e.contains("let mut x"), "{e}");
        let e = err_of("fn k(a: &[f32]) { a[0] = 1.0; }");
        assert!(e.contains("&mut [T]"), "{e}");
        let e = err_of("fn k(n: u32) { let x = -n; }");
        assert!(e.contains("cannot be negated"), "{e}");
        let e = err_of("fn k() { let x: u8 = 300; }");
        assert!(e.contains("out of range"), "{e}");
        let e = err_of("fn k() { let x: f32 = 1; }");
        assert!(e.contains("float literal"), "{e}");
    }

    #[test]
    fn negative_literal_minimum_is_in_range() {
        check_src("fn k() { let x: i32 = -2147483648; }").unwrap();
    }

    #[test]
    fn unknown_names_and_calls_are_errors() {
        let e = err_of("fn k() { let x = y; }");
        assert!(e.contains("unknown name `y`"), "{e}");
        let e = err_of("fn k() { helper(); }");
        assert!(e.contains("not an intrinsic"), "{e}");
        let e = err_of("fn k() { let t = thread_idx_x(1u32); }");
        assert!(e.contains("takes 0 arguments"), "{e}");
    }

    #[test]
    fn intrinsic_calls_resolve() {
        let (k, t) =
            check_src("fn k(a: &[f32]) { let v = shfl_down(a[0], 1); let s = warp_reduce_sum(v); let l = lane_id(); }")
                .unwrap();
        assert_eq!(let_ty(&k, &t, "s"), Ty::Scalar(Scalar::F32));
        assert_eq!(let_ty(&k, &t, "l"), Ty::Scalar(Scalar::U32));
        assert_eq!(t.calls.len(), 3);
    }

    #[test]
    fn if_else_as_value_and_never() {
        let (k, t) = check_src(
            "fn k(n: u32) { let x = if n > 2 { 1u32 } else { 2 }; let y = if n > 3 { 5u64 } else { return; }; }",
        )
        .unwrap();
        assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::U32));
        assert_eq!(let_ty(&k, &t, "y"), Ty::Scalar(Scalar::U64));
        let e = err_of("fn k(n: u32) { let x = if n > 2 { 1u32 }; }");
        assert!(e.contains("without `else`"), "{e}");
    }

    #[test]
    fn casts_follow_rust() {
        check_src("fn k(x: f32, b: bool) { let i = x as i32; let j = b as u32; let f = 3 as f32; }").unwrap();
        let e = err_of("fn k(x: f16) { let y = x as f32; }");
        assert!(e.contains(".to_f32()"), "{e}");
        let e = err_of("fn k(x: u32) { let y = x as bool; }");
        assert!(e.contains("compare instead"), "{e}");
    }

    #[test]
    fn loops_bind_their_variable() {
        let (_, t) =
            check_src("fn k(a: &mut [f32], n: u32) { for i in (0..n).step_by(32) { a[i as usize] = 0.0; } }").unwrap();
        assert!(t.expr.contains(&Ty::Scalar(Scalar::U32)));
        let e = err_of("fn k() { break; }");
        assert!(e.contains("inside a loop"), "{e}");
    }

    #[test]
    fn arrays_infer_from_use() {
        let (k, t) = check_src("fn k(a: &mut [f32]) { let mut acc = [0.0; 4]; acc[1] = a[0]; }").unwrap();
        assert_eq!(
            let_ty(&k, &t, "acc"),
            Ty::Array {
                elem: Box::new(Ty::Scalar(Scalar::F32)),
                len: Len::Lit(4)
            }
        );
        let (k, t) = check_src("fn k(a: &mut [f32]) { let mut acc = [0.0f32; 4]; acc[1] = a[0]; }").unwrap();
        assert_eq!(
            let_ty(&k, &t, "acc"),
            Ty::Array {
                elem: Box::new(Ty::Scalar(Scalar::F32)),
                len: Len::Lit(4)
            }
        );
    }
}
