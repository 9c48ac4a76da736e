//! Type inference: the type variables of unsuffixed literals, unification,
//! and the final types (`finish` resolves them and range-checks literals).

use super::*;

/// A type during inference: known, a literal's type variable, or `!`.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum TyV {
    Ty(Ty),
    Var(u32),
    /// A local array whose element type may still be a literal's variable.
    Array(Box<TyV>, Len),
    /// A tuple whose element types may still be literals' variables.
    Tuple(Vec<TyV>),
    Never,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum VarKind {
    Int,
    Float,
}

#[derive(Debug)]
pub(super) struct Var {
    pub(super) kind: VarKind,
    parent: u32,
    resolved: Option<Scalar>,
    /// A failed statement may have fixed it (see `recover`).
    pub(super) poisoned: bool,
}

impl Checker<'_> {
    pub(super) fn new_var(&mut self, kind: VarKind) -> TyV {
        let id = self.vars.len() as u32;
        self.vars.push(Var {
            kind,
            parent: id,
            resolved: None,
            poisoned: false,
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
    pub(super) fn shallow(&mut self, t: &TyV) -> TyV {
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

    pub(super) fn describe(&mut self, t: &TyV) -> String {
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
    pub(super) fn unify(&mut self, a: &TyV, b: &TyV, span: Loc) -> Result<TyV> {
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
                self.vars[*x as usize].poisoned |= self.vars[*y as usize].poisoned;
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

    pub(super) fn record(&mut self, e: &Expr, t: TyV) -> TyV {
        self.expr[e.id as usize] = Some(t.clone());
        t
    }

    pub(super) fn finish(mut self) -> Result<Types> {
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

    pub(super) fn known(&mut self, t: &TyV, span: Loc) -> Result<Ty> {
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
}
