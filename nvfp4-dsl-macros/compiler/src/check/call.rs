//! Calls: free and associated functions (`f(..)`, `T::f(..)`) and methods
//! (`x.f(..)`), matched against the signatures of the intrinsics' table; a
//! call that names no intrinsic may name a device function or a method of
//! a `#[device]` struct (see `device`).

use super::instead::{float_method_result, unsupported_method};
use super::*;
use crate::intrinsics::{self, ArgTy, Form, Generics, Intrinsic, RetTy};

impl Checker<'_> {
    pub(super) fn call(
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
            if let Some(g) = self.generic_of(path) {
                return self.generic_call(e, g, generics, args, hint);
            }
            if let Some(idx) = self.device_of(path) {
                let generics: Vec<&GenericArg> = generics.iter().collect();
                return self.device_call(e, idx, &generics, None, args, hint);
            }
            if let Some(st) = self.struct_of(path) {
                return err(e.span, self.no_method(st, &path.name));
            }
            if let Some(ty) = path.qualifier.as_deref().and_then(Ty::named)
                && intrinsics::all().any(|i| i.name == path.name && i.form == Form::Method)
            {
                return self.path_method_call(e, path, ty, generics, args);
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

    pub(super) fn method_call(&mut self, e: &Expr, receiver: &Expr, method: &str, args: &[Expr]) -> Result<TyV> {
        let rt = self.expr(receiver, None)?;
        let rt = match self.shallow(&rt) {
            // A local array's length is its type's, whatever its elements.
            TyV::Array(..) if method == "len" && args.is_empty() => {
                return Ok(TyV::Ty(Ty::Scalar(Scalar::Usize)));
            }
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
        if let Ty::Struct(st) = &rty {
            return self.struct_method(e, st, (receiver, rt), method, args);
        }
        // A local or static shared array's length is its type's.
        if method == "len" && args.is_empty() && matches!(rty, Ty::Array { .. } | Ty::SharedArray { .. }) {
            return Ok(TyV::Ty(Ty::Scalar(Scalar::Usize)));
        }
        self.method_of(e, receiver, rty, method, args, None)
    }

    /// `T::method(x, args)`, Rust's path form of `x.method(args)`: the
    /// first argument is the receiver, of type `T`; the same intrinsic.
    fn path_method_call(
        &mut self,
        e: &Expr,
        path: &CallPath,
        ty: Ty,
        generics: &[GenericArg],
        args: &[Expr],
    ) -> Result<TyV> {
        let display = path.display();
        if let Some(g) = generics.first() {
            let (GenericArg::Type(_, s) | GenericArg::Len(_, s) | GenericArg::Expr(_, s)) = g;
            return err(*s, format!("`{display}` takes no generic arguments"));
        }
        let Some((receiver, rest)) = args.split_first() else {
            return err(
                e.span,
                format!(
                    "`{display}(x, ..)` is `x.{}(..)`: give the `{ty}` it is called on as the first argument",
                    path.name
                ),
            );
        };
        let want = TyV::Ty(ty.clone());
        let t = self.expr(receiver, Some(&want))?;
        self.unify(&want, &t, receiver.span).map_err(|_| {
            let found = self.describe(&t);
            receiver.span.error(format!(
                "the first argument of `{display}` is the `self` of `.{}()`, so it must be `{ty}`, found {found}",
                path.name
            ))
        })?;
        self.method_of(e, receiver, ty, &path.name, rest, Some(&display))
    }

    /// The intrinsic method `method` of a receiver of type `rty`, checked
    /// against the arguments. `path`: how a path call `T::method` wrote it.
    fn method_of(
        &mut self,
        e: &Expr,
        receiver: &Expr,
        rty: Ty,
        method: &str,
        args: &[Expr],
        path: Option<&str>,
    ) -> Result<TyV> {
        let candidates: Vec<&'static Intrinsic> = intrinsics::all()
            .filter(|i| i.name == method && i.form == Form::Method)
            .filter(|i| i.params.first().is_some_and(|p| p.matches(&rty, i)))
            .collect();
        if candidates.is_empty() {
            if let Some(msg) = unsupported_method(method, &rty) {
                if let Some(t) = float_method_result(method, &rty) {
                    // Rust's type of the result: checking goes on, so that
                    // one build shows this and the errors after it.
                    for a in args {
                        self.expr(a, Some(&TyV::Ty(rty.clone())))?;
                    }
                    self.errors.push(e.span.error(msg));
                    return Ok(t);
                }
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
        let display = path.map_or_else(|| format!(".{method}"), str::to_string);
        self.match_intrinsic(e, &candidates, Some((receiver, rty)), &[], args, None, &display)
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
            // `x.f(a)` counts `a`; the path form `T::f(x, a)` counts `x` too.
            let by_path = intr.form == Form::Method && !display.starts_with('.');
            let skip = usize::from(intr.form == Form::Method && !by_path);
            let given = if by_path { given } else { args.len() };
            return err(
                e.span,
                format!(
                    "`{display}` takes {} argument{}, {} given: `{}`",
                    intr.params.len() - skip,
                    if intr.params.len() - skip == 1 { "" } else { "s" },
                    given,
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
                if !t.shared_elem_ok() {
                    return err(
                        *s,
                        format!(
                            "`{t}` cannot live in shared memory; write a number or vector type (`f32`), or a row of them for a 2-D array (`shared_array::<[f32; 33], 32>()`)"
                        ),
                    );
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
            (Generics::TypeLen | Generics::Len(_), [.., GenericArg::Expr(_, s)]) => {
                return err(
                    *s,
                    format!(
                        "`{display}` takes a constant length: an integer literal, a `usize` const generic alone, or an expression of literals and `#[device] const`s (`{{ TILE * (TILE + 1) }}`), not an expression of a const generic (Rust does not take one either): `{}`",
                        intr.signature()
                    ),
                );
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

    /// `&mut acc`, `acc` a mutable local `[f32; N]`, or `acc`, a device
    /// function's `acc: &mut [f32; N]` parameter (the caller's local):
    /// records the types of the argument and the variable (both the array
    /// type).
    fn accumulator_arg(&mut self, intr: &Intrinsic, i: usize, a: &Expr) -> Result<()> {
        let usage = || {
            format!(
                "argument {} of `{}` is the accumulator: write `&mut acc` with `let mut acc = [0.0f32; N];`, or pass a device function's `acc: &mut [f32; N]` parameter as `acc` (`{}`)",
                i + 1,
                intr.display_name(),
                intr.signature()
            )
        };
        let var = match &a.kind {
            ExprKind::RefMut(var) => var,
            ExprKind::Var(name) if self.lookup(name).is_some_and(|b| b.kind == NameKind::ByRef) => a,
            _ => return err(a.span, usage()),
        };
        let ExprKind::Var(name) = &var.kind else {
            return err(a.span, usage());
        };
        let Some(b) = self.lookup(name).cloned() else {
            return err(var.span, format!("cannot find value `{name}` in this scope"));
        };
        match b.kind {
            // A `&mut` parameter: the caller's mutable local.
            NameKind::ByRef if var.id == a.id => {}
            NameKind::ByRef => {
                return err(
                    var.span,
                    format!("`{name}` is a `&mut` reference already: pass `{name}`"),
                );
            }
            NameKind::Local if b.mutable => {}
            _ => {
                return err(
                    var.span,
                    format!("the accumulator `{name}` must be a local declared `let mut {name} = [0.0f32; N];`"),
                );
            }
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
                        return err(a.span, wrong_t(intr, &k));
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
                    let k = self.memory_arg(intr, i, p, a)?;
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
                ArgTy::SharedOf(elem) => self.shared_of_arg(intr, i, elem, a)?,
                ArgTy::Shared => {
                    let k = self.shared_arg(intr, i, a)?;
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
                ArgTy::OrderConst => {
                    let t = self.expr(a, None)?;
                    if !matches!(a.kind, ExprKind::Order(_)) || self.shallow(&t) != TyV::Ty(Ty::Order) {
                        return err(a.span, "write the memory order as a constant, e.g. `Order::Relaxed`");
                    }
                }
                ArgTy::ScopeConst => {
                    let t = self.expr(a, None)?;
                    if !matches!(a.kind, ExprKind::Scope(_)) || self.shallow(&t) != TyV::Ty(Ty::Scope) {
                        return err(a.span, "write the scope as a constant, e.g. `Scope::Cta`");
                    }
                }
                ArgTy::AtomicMem => {
                    let k = self.atomic_mem_arg(intr, a)?;
                    mem_elem = k.elem().cloned();
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

    /// A memory argument (`Mem`, `MemMut` or `Global`): its type.
    fn memory_arg(&mut self, intr: &Intrinsic, i: usize, p: &ArgTy, a: &Expr) -> Result<Ty> {
        let t = self.expr(a, None)?;
        let k = self.known(&t, a.span)?;
        flat_memory(intr, &k, a.span)?;
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
        Ok(k)
    }

    /// The memory an atomic updates: global or shared memory of one of the
    /// intrinsic's element types.
    fn atomic_mem_arg(&mut self, intr: &Intrinsic, a: &Expr) -> Result<Ty> {
        let not_memory = |what: &str| {
            a.span.error(format!(
                "`{}` works on global memory (a `&mut [T]` parameter) or shared memory (`shared_array`, `dynamic_shared`), not on {what}: a local is one thread's own and needs no atomic; write `x += v`, or put the values in shared memory (`{}`)",
                intr.display_name(),
                intr.signature()
            ))
        };
        if matches!(&a.kind, ExprKind::RefMut(v) if matches!(v.kind, ExprKind::Var(_))) {
            return Err(not_memory("a local"));
        }
        let t = self.expr(a, None)?;
        let k = self.known(&t, a.span)?;
        flat_memory(intr, &k, a.span)?;
        let types = || {
            intr.t_set
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let elem = match &k {
            Ty::Slice { elem, mutable: true } | Ty::SharedArray { elem, .. } | Ty::SharedSlice { elem } => elem,
            Ty::Slice { mutable: false, .. } => {
                return err(
                    a.span,
                    format!(
                        "`{}` writes memory, and `{k}` is read-only: declare the parameter `&mut [T]`",
                        intr.display_name()
                    ),
                );
            }
            _ => return Err(not_memory(&format!("`{k}`"))),
        };
        if !intr.t_set.contains(elem) {
            return err(
                a.span,
                format!(
                    "`{}` works on memory of {}, not of `{elem}`{}",
                    intr.display_name(),
                    types(),
                    if elem.scalar().is_some_and(Scalar::is_float) {
                        "; for a float, loop on `atomic_cas` over its bits in a `u32` or `u64` buffer"
                    } else {
                        ""
                    }
                ),
            );
        }
        Ok(k)
    }

    /// An argument that must be shared memory of `elem`.
    fn shared_of_arg(&mut self, intr: &Intrinsic, i: usize, elem: &Ty, a: &Expr) -> Result<()> {
        let t = self.expr(a, None)?;
        let k = self.known(&t, a.span)?;
        flat_memory(intr, &k, a.span)?;
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
        Ok(())
    }

    /// An argument that must be shared memory (any element type): its type.
    fn shared_arg(&mut self, intr: &Intrinsic, i: usize, a: &Expr) -> Result<Ty> {
        let t = self.expr(a, None)?;
        let k = self.known(&t, a.span)?;
        flat_memory(intr, &k, a.span)?;
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
        Ok(k)
    }
}

/// Intrinsics take memory of elements: a 2-D shared array is reached by
/// element only.
fn flat_memory(intr: &Intrinsic, k: &Ty, span: Loc) -> Result<()> {
    match k.shared_rows() {
        Some((elem, cols)) => err(
            span,
            format!(
                "`{}` takes memory of elements, not the 2-D shared array `{k}`, which is read and written by element (`tile[r][c]`); for `{}`, declare it 1-D, `shared_array::<{elem}, {{ ROWS * {cols} }}>()`, and index it `r * {cols} + c`",
                intr.display_name(),
                intr.display_name()
            ),
        ),
        None => Ok(()),
    }
}

/// Why a method that Rust has is missing on `ty` in kernels, and what to
/// write instead, for the methods people reach for.
/// An intrinsic's `T` argument of a type outside its set.
fn wrong_t(intr: &Intrinsic, k: &Ty) -> String {
    let name = intr.display_name();
    let set: Vec<String> = intr.t_set.iter().map(|t| format!("`{t}`")).collect();
    // A pair such as an argmax's (value, index) goes through one call per
    // element, as in CUDA.
    let hint = match k {
        Ty::Tuple(_) => format!("; call it on each element: `({name}(t.0, ..), {name}(t.1, ..))`"),
        _ => String::new(),
    };
    format!("`{name}` works on {}, not `{k}`{hint}", set.join(", "))
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
