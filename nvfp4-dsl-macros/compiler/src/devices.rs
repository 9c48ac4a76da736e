//! Which `#[device]` items a kernel needs that the proc macro has not
//! handed over yet ([`missing_devices`]): the calls, struct uses and
//! consts of the kernel and of its device functions, resolved from the
//! kernel's module.

use crate::driver::first_instance;
use crate::{ast, attr, generics, intrinsics, parse};
use proc_macro2::{Span, TokenStream};

/// The `#[device]` functions, structs and consts a kernel or its device
/// functions use (the consts: also its `specialize` values, in `attr`)
/// that are not among `devices` yet: each as the path to fetch it by
/// (resolved from the kernel's module) and the span of a use. Structs come
/// first: the kernel cannot be parsed without them. A `#[device(methods)]`
/// struct comes with its impl block, by the same path.
pub fn missing_devices(
    attr: TokenStream,
    item: &syn::ItemFn,
    devices: &[(String, syn::Item)],
) -> syn::Result<Vec<(String, Span)>> {
    let mut missing: Vec<(String, Span)> = Vec::new();
    struct_uses(item, "", &mut |key, span| {
        push_missing(&mut missing, devices, key, span)
    });
    for (key, d) in devices {
        if let syn::Item::Fn(f) = d {
            struct_uses(f, key, &mut |k, span| push_missing(&mut missing, devices, k, span));
        }
        // A method's paths resolve from its struct's module, as its key's.
        for f in methods(d) {
            struct_uses(&f, key, &mut |k, span| push_missing(&mut missing, devices, k, span));
        }
    }
    if !missing.is_empty() {
        return Ok(missing);
    }
    let attr = attr::parse(attr)?;
    let type_params = generics::type_params(&item.sig.generics, "a kernel")?;
    let item = &first_instance(item, &type_params)?;
    let mut values: Vec<syn::Expr> = attr
        .specialize
        .into_iter()
        .filter(|l| !type_params.iter().any(|t| t.name == l.name))
        .flat_map(|l| l.values)
        .collect();
    if let Some(b) = attr.launch_bounds {
        values.extend([b.max_threads].into_iter().chain(b.min_blocks));
    }
    let (kernel, consts) = parse::collect_consts(item, devices, &values);
    for (key, span) in consts {
        push_missing(&mut missing, devices, key, span);
    }
    let (kernel, failed) = match kernel {
        // The error may come from a stand-in for a const not fetched yet.
        Err(_) if !missing.is_empty() => return Ok(missing),
        Err(e) => return Err(e),
        Ok(_) if !missing.is_empty() => return Ok(missing),
        Ok(parsed) => parsed,
    };
    let mut visit = |caller: &str, body: &ast::Block| {
        ast::walk_calls(body, &mut |e, path| {
            let is_intrinsic = intrinsics::all().any(|i| {
                i.name == path.name
                    && match (&path.qualifier, i.form) {
                        (None, intrinsics::Form::Free) => true,
                        (Some(q), intrinsics::Form::Assoc(a)) => a == q,
                        _ => false,
                    }
            });
            // The kernel calling itself, and `Vec::new()`, `f32::sqrt(x)` and
            // the like, are reported by `check`, as are the associated
            // functions of `#[device]` structs (which came with them).
            let is_kernel = path.qualifier.is_none() && path.name == kernel.name;
            let on_builtin_type = path.qualifier.as_deref().is_some_and(parse::is_builtin_type);
            let on_struct = path.full.rsplit_once("::").is_some_and(|(q, _)| {
                let key = ast::resolve_device(caller, q);
                kernel.structs.iter().any(|(k, _)| *k == key)
            });
            if !is_intrinsic && !is_kernel && !on_builtin_type && !on_struct {
                push_missing(
                    &mut missing,
                    devices,
                    ast::resolve_device(caller, &path.full),
                    e.span.start,
                );
            }
        });
    };
    visit("", &kernel.body);
    for d in &kernel.devices {
        visit(&d.scope, &d.body);
    }
    // With statements that failed to parse, a call may be of what one of
    // them declares (a nested `fn`): their errors, not a fetch that fails.
    // Without a call to fetch, `compile` reports them with the check's.
    match ast::combine(failed) {
        Some(e) if !missing.is_empty() => Err(e),
        _ => Ok(missing),
    }
}

/// The methods of an impl block, as functions.
fn methods(item: &syn::Item) -> Vec<syn::ItemFn> {
    let syn::Item::Impl(i) = item else { return Vec::new() };
    i.items
        .iter()
        .filter_map(|m| match m {
            syn::ImplItem::Fn(f) => Some(syn::ItemFn {
                attrs: f.attrs.clone(),
                vis: syn::Visibility::Inherited,
                sig: f.sig.clone(),
                block: Box::new(f.block.clone()),
            }),
            _ => None,
        })
        .collect()
}

fn push_missing(missing: &mut Vec<(String, Span)>, devices: &[(String, syn::Item)], key: String, span: Span) {
    if !devices.iter().any(|(k, _)| *k == key) && !missing.iter().any(|(k, _)| *k == key) {
        missing.push((key, span));
    }
}

/// Calls `found` with the key and span of every type, struct literal or
/// associated function call (`Pair::new(..)`) in `f` that names a type the
/// DSL does not know: a `#[device]` struct (or, in a turbofish, a
/// `#[device] const`: Rust's syntax does not tell them apart; the fetched
/// item says which it is).
fn struct_uses(f: &syn::ItemFn, caller: &str, found: &mut dyn FnMut(String, Span)) {
    use syn::visit::Visit;
    struct Uses<'a> {
        caller: &'a str,
        /// The const generics and local `const`s, which a turbofish may name.
        generics: Vec<String>,
        found: &'a mut dyn FnMut(String, Span),
    }
    impl Uses<'_> {
        fn path(&mut self, p: &syn::Path) {
            let Some(last) = p.segments.last() else { return };
            let name = last.ident.to_string();
            if parse::is_builtin_type(&name) || (p.segments.len() == 1 && self.generics.contains(&name)) {
                return;
            }
            (self.found)(ast::resolve_device(self.caller, &parse::path_key(p)), last.ident.span());
        }
    }
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
            if t.qself.is_none() {
                self.path(&t.path);
            }
            syn::visit::visit_type_path(self, t);
        }
        fn visit_expr_struct(&mut self, e: &'ast syn::ExprStruct) {
            self.path(&e.path);
            syn::visit::visit_expr_struct(self, e);
        }
        /// `Pair::new(..)`: a struct named as types are (UpperCamelCase,
        /// which rustc's lints ask of types and not of modules).
        fn visit_expr_call(&mut self, e: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*e.func
                && p.qself.is_none()
                && p.path.segments.len() >= 2
            {
                let mut qualifier = p.path.clone();
                qualifier.segments.pop();
                qualifier.segments.pop_punct();
                if qualifier
                    .segments
                    .last()
                    .is_some_and(|s| s.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase()))
                {
                    self.path(&qualifier);
                }
            }
            syn::visit::visit_expr_call(self, e);
        }
    }
    struct LocalConsts(Vec<String>);
    impl<'ast> Visit<'ast> for LocalConsts {
        fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
            self.0.push(c.ident.to_string());
        }
    }
    let mut locals = LocalConsts(Vec::new());
    locals.visit_block(&f.block);
    let generics = f
        .sig
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(t.ident.to_string()),
            syn::GenericParam::Const(c) => Some(c.ident.to_string()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .chain(locals.0)
        .collect();
    Uses {
        caller,
        generics,
        found,
    }
    .visit_item_fn(f);
}
