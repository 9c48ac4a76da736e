//! The arguments of `#[kernel(...)]`:
//!
//! ```text
//! #[kernel(
//!     targets(sm_90, sm_100a),                       // required, at least one
//!     specialize(SMALL_K = [true, false], ROWS = [4, 8]),  // every const generic
//!     launch_bounds(256, 2),                          // optional: max threads, min blocks/SM
//! )]
//! ```
//!
//! `specialize` lists the values of each const generic and the types of
//! each type parameter (`T = [f16, bf16]`); the kernel is compiled
//! for every combination (a proc macro cannot see the call sites). The values
//! and the bounds may be constant expressions of `#[device] const`s: they
//! stay expressions here, and `driver` evaluates them once the consts are
//! fetched.

use super::target::Target;
use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Token, bracketed, parenthesized};

#[derive(Debug, Default)]
pub struct KernelAttr {
    pub targets: Vec<(Target, Span)>,
    pub specialize: Vec<SpecList>,
    pub launch_bounds: Option<LaunchBounds>,
}

/// `launch_bounds(MAX_THREADS)` or `launch_bounds(MAX_THREADS,
/// MIN_BLOCKS)`: literals or constant expressions of `#[device] const`s
/// (`driver` evaluates them once they are fetched).
#[derive(Debug, Clone)]
pub struct LaunchBounds {
    pub max_threads: syn::Expr,
    pub min_blocks: Option<syn::Expr>,
}

/// `NAME = [v1, v2, ...]`: each value a literal or a constant expression
/// of `#[device] const`s (`driver` evaluates them once they are fetched).
#[derive(Debug)]
pub struct SpecList {
    pub name: String,
    pub span: Span,
    pub values: Vec<syn::Expr>,
}

/// A value a const generic is specialised to, or a type parameter's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecValue {
    Bool(bool),
    Int(i128),
    Ty(crate::types::Scalar),
}

impl SpecValue {
    /// The value as it appears in entry and snapshot names (`m1` for -1).
    pub fn name_part(self) -> String {
        match self {
            SpecValue::Bool(b) => b.to_string(),
            SpecValue::Int(i) if i < 0 => format!("m{}", -i),
            SpecValue::Int(i) => i.to_string(),
            SpecValue::Ty(t) => t.rust_name().to_string(),
        }
    }
}

/// The targets of a kernel that lists none: the Hopper and Blackwell GPUs'
/// base targets (a kernel with `sm_90a` or `sm_100a` intrinsics lists its
/// own; the error of such an intrinsic says which).
pub const DEFAULT_TARGETS: [Target; 2] = [Target::Sm90, Target::Sm100a];

pub fn parse(tokens: TokenStream) -> syn::Result<KernelAttr> {
    let mut attr: KernelAttr = syn::parse2(tokens)?;
    if attr.targets.is_empty() {
        attr.targets = DEFAULT_TARGETS.iter().map(|t| (*t, Span::call_site())).collect();
    }
    Ok(attr)
}

impl Parse for KernelAttr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut attr = KernelAttr::default();
        let mut seen_targets = false;
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            let content;
            parenthesized!(content in input);
            match key.to_string().as_str() {
                "targets" => {
                    if seen_targets {
                        return Err(syn::Error::new(
                            key.span(),
                            "`targets` is given twice; list all targets in one `targets(...)`",
                        ));
                    }
                    seen_targets = true;
                    let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
                    for name in names {
                        let Some(target) = Target::from_name(&name.to_string()) else {
                            return Err(syn::Error::new(
                                name.span(),
                                format!(
                                    "unknown target `{name}`; the targets are {}",
                                    Target::ALL.map(Target::name).join(", ")
                                ),
                            ));
                        };
                        if attr.targets.iter().any(|(t, _)| *t == target) {
                            return Err(syn::Error::new(name.span(), format!("target `{name}` is listed twice")));
                        }
                        attr.targets.push((target, name.span()));
                    }
                }
                "specialize" => {
                    let lists = Punctuated::<SpecList, Token![,]>::parse_terminated(&content)?;
                    for list in lists {
                        if attr.specialize.iter().any(|l| l.name == list.name) {
                            return Err(syn::Error::new(
                                list.span,
                                format!("`{}` is specialised twice; give one list", list.name),
                            ));
                        }
                        attr.specialize.push(list);
                    }
                }
                "launch_bounds" => {
                    let mut values = Punctuated::<syn::Expr, Token![,]>::parse_terminated(&content)?.into_iter();
                    let bounds = match (values.next(), values.next(), values.next()) {
                        (Some(max_threads), min_blocks, None) => LaunchBounds {
                            max_threads,
                            min_blocks,
                        },
                        _ => {
                            return Err(syn::Error::new(
                                key.span(),
                                "write `launch_bounds(MAX_THREADS)` or `launch_bounds(MAX_THREADS, MIN_BLOCKS_PER_SM)`",
                            ));
                        }
                    };
                    attr.launch_bounds = Some(bounds);
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown kernel option `{other}`; the options are `targets(..)`, `specialize(..)` and `launch_bounds(..)`"
                        ),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(attr)
    }
}

impl Parse for SpecList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let content;
        bracketed!(content in input);
        let values = Punctuated::<syn::Expr, Token![,]>::parse_terminated(&content)?;
        let values: Vec<syn::Expr> = values.into_iter().collect();
        if values.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                format!("list at least one value for `{name}`"),
            ));
        }
        Ok(SpecList {
            name: name.to_string(),
            span: name.span(),
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_targets_specialisations_and_bounds() {
        let attr = parse(quote!(
            targets(sm_90, sm_100a),
            specialize(SMALL_K = [true, false], N = [4, -1]),
            launch_bounds(256, 2)
        ))
        .unwrap();
        let targets: Vec<_> = attr.targets.iter().map(|(t, _)| *t).collect();
        assert_eq!(targets, [Target::Sm90, Target::Sm100a]);
        assert_eq!(attr.specialize.len(), 2);
        assert_eq!(attr.specialize[0].name, "SMALL_K");
        let n: Vec<_> = attr.specialize[1]
            .values
            .iter()
            .map(|v| quote!(#v).to_string())
            .collect();
        assert_eq!(n, ["4", "- 1"]);
        let bounds = attr.launch_bounds.unwrap();
        let (max, min) = (bounds.max_threads, bounds.min_blocks);
        assert_eq!(
            (quote!(#max).to_string(), quote!(#min).to_string()),
            ("256".into(), "2".into())
        );
    }

    #[test]
    fn defaults_missing_targets_and_rejects_unknown_ones() {
        let targets: Vec<Target> = parse(quote!())
            .expect("no targets")
            .targets
            .iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(targets, DEFAULT_TARGETS);
        let err = parse(quote!(targets(sm_75))).unwrap_err().to_string();
        assert!(err.contains("unknown target `sm_75`"), "{err}");
        let err = parse(quote!(targets(sm_90, sm_90))).unwrap_err().to_string();
        assert!(err.contains("listed twice"), "{err}");
    }

    #[test]
    fn rejects_bad_options() {
        let err = parse(quote!(targets(sm_90), threads(4))).unwrap_err().to_string();
        assert!(err.contains("unknown kernel option `threads`"), "{err}");
        let err = parse(quote!(targets(sm_90), specialize(N = [])))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least one value"), "{err}");
        let err = parse(quote!(targets(sm_90), launch_bounds(1, 2, 3)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("write `launch_bounds(MAX_THREADS)`"), "{err}");
    }

    #[test]
    fn value_names_are_identifier_safe() {
        assert_eq!(SpecValue::Int(-3).name_part(), "m3");
        assert_eq!(SpecValue::Bool(true).name_part(), "true");
    }
}
