//! Calls of generic device functions: the type of each type parameter
//! from a turbofish or read off the arguments' types (then the type the
//! context expects of the result), as rustc infers it;
//! the call is then a call of that instantiation, which the kernel has when
//! an earlier round of checking asked for it (`Checker::wanted`).

use super::*;
use crate::generics::{GenericFn, instance_key};

impl<'k> Checker<'k> {
    /// The generic device function a call names, if it is one.
    pub(super) fn generic_of(&self, path: &CallPath) -> Option<&'k GenericFn> {
        let key = resolve_device(self.scope(), &path.full);
        let kernel: &'k Kernel = self.kernel;
        kernel.generics.iter().find(|g| g.key == key)
    }

    pub(super) fn generic_call(
        &mut self,
        e: &Expr,
        g: &GenericFn,
        generics: &[GenericArg],
        args: &[Expr],
        hint: Option<&TyV>,
    ) -> Result<TyV> {
        let mut types: Vec<Option<Ty>> = vec![None; g.type_params.len()];
        let mut consts = Vec::new();
        if !generics.is_empty() {
            if generics.len() != g.order.len() {
                return err(
                    e.span,
                    format!(
                        "write every generic argument of `{}` in the turbofish, or none (to infer them): `{}`",
                        g.name,
                        g.signature()
                    ),
                );
            }
            for (arg, slot) in generics.iter().zip(&g.order) {
                match (slot, arg) {
                    (Some(i), GenericArg::Type(t, _)) => types[*i] = Some(t.clone()),
                    (Some(i), other) => {
                        let name = &g.type_params[*i].name;
                        return err(
                            generic_loc(other),
                            format!(
                                "`{name}` is a type parameter of `{}`; write a type: `{}`",
                                g.name,
                                g.signature()
                            ),
                        );
                    }
                    (None, arg) => consts.push(arg),
                }
            }
        } else {
            for (a, shape) in args.iter().zip(&g.params) {
                if !shape.mentions_params() {
                    continue;
                }
                let inner = match &a.kind {
                    ExprKind::Ref(x) | ExprKind::RefMut(x) => x,
                    _ => a,
                };
                let t = self.expr(inner, None)?;
                let t = match self.shallow(&t) {
                    TyV::Var(v) => Ty::Scalar(match self.vars[v as usize].kind {
                        VarKind::Int => Scalar::I32,
                        VarKind::Float => Scalar::F64,
                    }),
                    _ => self.known(&t, a.span)?,
                };
                shape.infer(&t, &mut types);
            }
            if types.iter().any(Option::is_none)
                && let Some(TyV::Ty(t)) = hint.map(|h| self.shallow(h))
            {
                g.ret.infer(&t, &mut types);
            }
        }
        let mut concrete = Vec::with_capacity(types.len());
        for (t, p) in types.iter().zip(&g.type_params) {
            let Some(t) = t else {
                return err(
                    e.span,
                    format!(
                        "cannot infer the type `{}` of `{}` from its arguments or its result; write it with a turbofish, `{}::<f32>(..)`: `{}`",
                        p.name,
                        g.name,
                        g.name,
                        g.signature()
                    ),
                );
            };
            match t {
                Ty::Scalar(s) if p.types().contains(s) => concrete.push(*s),
                _ => {
                    return err(
                        e.span,
                        format!(
                            "`{}` of `{}` would be `{t}`, which is not {}: `{}`",
                            p.name,
                            g.name,
                            p.describe(),
                            g.signature()
                        ),
                    );
                }
            }
        }
        let key = instance_key(&g.key, &concrete);
        match self.kernel.devices.iter().position(|d| d.key == key) {
            Some(idx) => self.device_call(e, idx, &consts, None, args, hint),
            None => {
                self.wanted.push((g.key.clone(), concrete));
                err(e.span, format!("`{key}` is instantiated in the next round"))
            }
        }
    }
}

fn generic_loc(arg: &GenericArg) -> Loc {
    match arg {
        GenericArg::Type(_, l) | GenericArg::Len(_, l) | GenericArg::Expr(_, l) => *l,
    }
}
