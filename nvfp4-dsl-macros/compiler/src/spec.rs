//! The values of the kernel attribute's lists, once the `#[device]
//! const`s they name are fetched: every specialisation (the values of the
//! const generics and the types of the type parameters, combined) and the
//! launch bounds.

use crate::attr::{KernelAttr, SpecValue};
use crate::generics::TypeParam;
use crate::lower::fold::Const;
use crate::types::Scalar;
use crate::{ast, parse};

/// `small_k_true_rows_8`: lower-case name and value of each const generic.
pub(crate) fn spec_name(spec: &[(String, SpecValue)]) -> String {
    if spec.is_empty() {
        return "default".to_string();
    }
    spec.iter()
        .map(|(n, v)| format!("{}_{}", n.to_lowercase(), v.name_part()))
        .collect::<Vec<_>>()
        .join("_")
}

/// The values of `launch_bounds(..)`: at most 1024 threads, at least one
/// block.
pub(crate) fn launch_bounds(
    attr: &KernelAttr,
    devices: &[(String, syn::Item)],
) -> syn::Result<Option<(u32, Option<u32>)>> {
    let Some(b) = &attr.launch_bounds else {
        return Ok(None);
    };
    let value = |e: &syn::Expr, range: std::ops::RangeInclusive<i128>, what: &str| match parse::constant(
        e,
        devices,
        Scalar::U32,
    )? {
        Const::Int(v) if range.contains(&v) => Ok(v as u32),
        _ => Err(ast::Loc::of(e).error(what)),
    };
    let max = value(
        &b.max_threads,
        1..=1024,
        "the maximum number of threads per block must be in 1..=1024",
    )?;
    let min = match &b.min_blocks {
        Some(e) => Some(value(
            e,
            1..=i128::from(u32::MAX),
            "the minimum number of blocks per multiprocessor is a positive `u32`",
        )?),
        None => None,
    };
    Ok(Some((max, min)))
}

/// Every combination of the listed values and types, in the order the
/// generics are declared.
pub(crate) fn specialisations(
    attr: &KernelAttr,
    item: &syn::ItemFn,
    type_params: &[TypeParam],
    consts: &[ast::ConstParam],
    devices: &[(String, syn::Item)],
) -> syn::Result<Vec<Vec<(String, SpecValue)>>> {
    let name = &item.sig.ident;
    for list in &attr.specialize {
        if !consts.iter().any(|c| c.name == list.name) && !type_params.iter().any(|t| t.name == list.name) {
            return Err(syn::Error::new(
                list.span,
                format!("`{}` is not a const generic or a type parameter of `{name}`", list.name),
            ));
        }
    }
    let mut combos: Vec<Vec<(String, SpecValue)>> = vec![Vec::new()];
    for p in &item.sig.generics.params {
        let (pname, values) = match p {
            syn::GenericParam::Type(t) => match type_params.iter().find(|p| t.ident == p.name) {
                Some(p) => (&p.name, type_values(attr, p)?),
                None => continue,
            },
            syn::GenericParam::Const(c) => match consts.iter().find(|p| c.ident == p.name) {
                Some(c) => (&c.name, const_values(attr, c, devices)?),
                None => continue,
            },
            syn::GenericParam::Lifetime(_) => continue,
        };
        let mut next = Vec::new();
        for combo in &combos {
            for v in &values {
                let mut c2 = combo.clone();
                c2.push((pname.clone(), *v));
                next.push(c2);
            }
        }
        combos = next;
    }
    Ok(combos)
}

/// The types `specialize(T = [..])` lists for a type parameter: DSL types
/// of its bound.
fn type_values(attr: &KernelAttr, p: &TypeParam) -> syn::Result<Vec<SpecValue>> {
    let Some(list) = attr.specialize.iter().find(|l| l.name == p.name) else {
        let first: Vec<&str> = p.types().iter().take(2).map(|t| t.rust_name()).collect();
        return Err(p.span.error(format!(
            "list the types of `{}` to compile: #[kernel(specialize({} = [{}]))] (a proc macro cannot see the call sites)",
            p.name,
            p.name,
            first.join(", ")
        )));
    };
    let mut values = Vec::with_capacity(list.values.len());
    for e in &list.values {
        let loc = ast::Loc::of(e);
        let ty = match e {
            syn::Expr::Path(path) if path.qself.is_none() => path
                .path
                .get_ident()
                .and_then(|i| Scalar::from_rust_name(&i.to_string())),
            _ => None,
        };
        let Some(ty) = ty else {
            return Err(loc.error(format!(
                "`{}` is a type parameter: list types of {}, e.g. `specialize({} = [{}])`",
                p.name,
                p.describe(),
                p.name,
                p.types()[0].rust_name(),
            )));
        };
        if !p.types().contains(&ty) {
            return Err(loc.error(format!(
                "`{}` is not `{}`: list types of {}",
                ty.rust_name(),
                p.bound_name(),
                p.describe()
            )));
        }
        if values.contains(&SpecValue::Ty(ty)) {
            return Err(loc.error(format!("type listed twice for `{}`", p.name)));
        }
        values.push(SpecValue::Ty(ty));
    }
    Ok(values)
}

/// The values `specialize(N = [..])` lists for a const generic.
fn const_values(
    attr: &KernelAttr,
    c: &ast::ConstParam,
    devices: &[(String, syn::Item)],
) -> syn::Result<Vec<SpecValue>> {
    let Some(list) = attr.specialize.iter().find(|l| l.name == c.name) else {
        return Err(c.span.error(format!(
            "list the values of `{}` to compile: #[kernel(specialize({} = [..]))] (a proc macro cannot see the call sites)",
            c.name, c.name
        )));
    };
    let mut values: Vec<SpecValue> = Vec::with_capacity(list.values.len());
    for e in &list.values {
        let loc = ast::Loc::of(e);
        let v = match parse::constant(e, devices, c.ty)? {
            Const::Bool(b) => SpecValue::Bool(b),
            Const::Int(i) => SpecValue::Int(i),
            Const::F32(_) | Const::F64(_) => {
                return Err(loc.error("a specialisation value is a `bool` or an integer"));
            }
        };
        let ok = match (c.ty, v) {
            (Scalar::Bool, SpecValue::Bool(_)) => true,
            (t, SpecValue::Int(i)) if t.is_int() => {
                let (min, max) = t.int_range();
                (min..=max).contains(&i)
            }
            _ => false,
        };
        if !ok {
            return Err(loc.error(format!("this value does not fit `{}: {}`", c.name, c.ty.rust_name())));
        }
        if values.contains(&v) {
            return Err(loc.error(format!("value listed twice for `{}`", c.name)));
        }
        values.push(v);
    }
    Ok(values)
}
