//! `#[device] impl` blocks: the methods of a `#[device(methods)]` struct,
//! each a device function whose first parameter may be its receiver
//! (`self`, `mut self`, `&self`, `&mut self`) and in which `Self` is the
//! struct.

use super::{Parser, Result, err};
use crate::ast::{DeviceFn, Loc};

impl Parser {
    /// The methods of the impl block that came with the struct at `key`:
    /// each keyed by the struct's path and its name (`shapes::Span::end`),
    /// its paths resolved from the struct's module (`key`'s).
    pub(super) fn device_impl(&mut self, key: &str, imp: &syn::ItemImpl) -> Result<Vec<DeviceFn>> {
        if let Some((_, path, _)) = &imp.trait_ {
            return err(
                Loc::of(path),
                "traits cannot be lowered to PTX; a `#[device]` impl block holds the struct's own methods: `#[device] impl Pair { .. }`",
            );
        }
        if !imp.generics.params.is_empty() {
            return err(Loc::of(&imp.generics), "a `#[device]` impl block takes no generics");
        }
        let name = match &*imp.self_ty {
            syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => p.path.segments[0].ident.clone(),
            other => {
                return err(
                    Loc::of(other),
                    "name the struct as it is named in its module: `#[device] impl Pair { .. }`",
                );
            }
        };
        let Some(st) = self.structs.iter().find(|(k, _)| k == key).map(|(_, t)| t.clone()) else {
            return err(Loc::of(&name), format!("`{name}` is not a `#[device]` struct"));
        };
        if name != st.name {
            return err(
                Loc::of(&name),
                format!("this impl block came with `{}`: write `impl {}`", st.name, st.name),
            );
        }
        let mut methods = Vec::with_capacity(imp.items.len());
        for item in &imp.items {
            let syn::ImplItem::Fn(f) = item else {
                return err(
                    Loc::of(item),
                    "a `#[device]` impl block holds methods only (`fn`); move this out of it",
                );
            };
            let method = f.sig.ident.to_string();
            self.self_ty = Some(st.clone());
            let parsed = self.device_fn(
                format!("{key}::{method}"),
                key,
                &f.sig,
                &f.block,
                format!("{}::{method}", st.name),
                Some((st.clone(), method)),
            );
            self.self_ty = None;
            methods.push(parsed?);
        }
        Ok(methods)
    }
}
