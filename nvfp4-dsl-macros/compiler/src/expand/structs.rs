//! `#[device]` structs and `#[device] impl` blocks on the host.
//!
//! A struct is `#[repr(C)]` (added when absent), so that a kernel taking it
//! as a parameter reads its fields where rustc puts them; one of numbers,
//! vectors, descriptors and arrays of them converts into a launch argument
//! (`From<Pair> for KernelArg`, field by field, padding zeroed) and is
//! `cudarc::driver::DeviceRepr` (for cudarc's own launches).
//!
//! A kernel fetches a struct through the macro of the struct's name, which
//! a `use` of the struct imports too. A `#[device(methods)]` struct's
//! macro must hand over its impl block as well, which only the impl's
//! attribute sees: so the struct defines no macro of its name, but a
//! helper (`__nvfp4_methods_Pair`, in its module) that the impl block's
//! expansion calls with the impl's tokens, and that defines the macro of
//! the struct's name appending both (with the struct's visibility).

use super::{StripUnroll, device_hash};
use crate::Compiled;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::visit_mut::VisitMut;

/// Whether an attribute is `#[device(methods)]` (which the attribute puts
/// back on the struct it was given).
fn is_device_methods(a: &syn::Attribute) -> bool {
    a.path().is_ident("device") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "methods")
}

/// Whether a struct is marked `#[device(methods)]`.
pub(super) fn has_methods(s: &syn::ItemStruct) -> bool {
    s.attrs.iter().any(is_device_methods)
}

/// The helper next to a `#[device]` struct that an impl block's expansion
/// calls (which does nothing unless the struct is `#[device(methods)]`).
fn methods_helper(name: &syn::Ident) -> syn::Ident {
    format_ident!("__nvfp4_methods_{}", name)
}

/// What rustc gets of a `#[device]` struct: the struct (`#[repr(C)]`,
/// without our `#[device(methods)]`) and its conversions into launch
/// arguments.
fn device_struct(s: &syn::ItemStruct) -> TokenStream {
    let mut s = s.clone();
    s.attrs.retain(|a| !is_device_methods(a));
    let reprs: Vec<&syn::Attribute> = s.attrs.iter().filter(|a| a.path().is_ident("repr")).collect();
    let repr_error = match reprs.as_slice() {
        [] => None,
        [a] if a.parse_args::<syn::Ident>().is_ok_and(|i| i == "C") => None,
        [a, ..] => Some(
            syn::Error::new_spanned(
                a,
                "a `#[device]` struct is `#[repr(C)]`, the layout a kernel reads a struct parameter in (added when absent); remove this `#[repr(..)]`",
            )
            .to_compile_error(),
        ),
    };
    if reprs.is_empty() {
        s.attrs.push(syn::parse_quote!(#[repr(C)]));
    }
    let host = if repr_error.is_none() {
        launch_argument(&s)
    } else {
        quote!()
    };
    quote! {
        #repr_error
        #s
        #host
    }
}

/// What rustc gets of a `#[device]` struct without methods: the struct,
/// and a helper that does nothing when a `#[device] impl` block calls it
/// (whose check that the struct is marked `#[device(methods)]` fails).
pub(super) fn struct_without_methods(s: &syn::ItemStruct) -> TokenStream {
    let rust = device_struct(s);
    let name = &s.ident;
    let hidden = format_ident!(
        "__nvfp4_device_{}_{:016x}_unmarked",
        name,
        device_hash(name, &syn::Item::Struct(s.clone()))
    );
    let helper = methods_helper(name);
    quote! {
        #rust

        #[doc(hidden)]
        macro_rules! #hidden {
            (@methods $d:tt [$($impl:tt)*]) => {};
        }

        #[doc(hidden)]
        #[allow(unused_imports)]
        use #hidden as #helper;
    }
}

/// `const _` that fails, at `span`, unless `ty` implements the hidden
/// trait `check` (whose diagnostic says what to write).
fn trait_check(check: &str, ty: &syn::Ident, span: proc_macro2::Span) -> TokenStream {
    let check = format_ident!("{check}");
    let ty = syn::Ident::new(&ty.to_string(), span);
    quote_spanned! {span=>
        const _: () = {
            const fn check<T: ::nvfp4_dsl::#check>() {}
            check::<#ty>();
        };
    }
}

/// `#[device(methods)] struct Pair`: the struct for rustc, and the helper
/// that the impl block's expansion calls (`@methods $ [impl tokens]`,
/// the `$` for the macro it defines) to define the macro `Pair`, which
/// appends the struct and the impl block to a kernel's callback. The
/// struct and the impl block each implement a hidden trait that the other
/// checks, so that either without the other is an error saying what to
/// write.
pub(super) fn struct_with_methods(s: &syn::ItemStruct) -> TokenStream {
    let rust = device_struct(s);
    let name = &s.ident;
    let vis = &s.vis;
    let mut handed = s.clone();
    handed.attrs.retain(|a| !is_device_methods(a));
    let item = syn::Item::Struct(handed.clone());
    let hidden = format_ident!("__nvfp4_device_{}_{:016x}", name, device_hash(name, &item));
    let with_methods = format_ident!("{hidden}_methods");
    let helper = methods_helper(name);
    let export = if matches!(vis, syn::Visibility::Public(_)) {
        quote!(#[macro_export])
    } else {
        quote!()
    };
    let check_span = s
        .attrs
        .iter()
        .find_map(|a| a.parse_args::<syn::Ident>().ok().filter(|i| i == "methods"))
        .map_or(name.span(), |m| m.span());
    let check = trait_check("__HasDeviceImpl", name, check_span);
    quote! {
        #rust

        #[doc(hidden)]
        macro_rules! #hidden {
            (@methods $d:tt [$($impl:tt)*]) => {
                #[doc(hidden)]
                #export
                macro_rules! #with_methods {
                    ([$d($d callback:tt)*] ($d($d attr:tt)*) {$d($d kernel:tt)*} {$d($d devices:tt)*}) => {
                        $d($d callback)*! { ($d($d attr)*) {$d($d kernel)*} {$d($d devices)* #handed $($impl)*} }
                    };
                }

                #[doc(hidden)]
                #[allow(unused_imports)]
                #vis use #with_methods as #name;

            };
        }

        #[doc(hidden)]
        #[allow(unused_imports)]
        use #hidden as #helper;

        impl ::nvfp4_dsl::__MarkedDeviceMethods for #name {}
        #check
    }
}

/// `From<Pair> for KernelArg` and `DeviceRepr`, for a struct whose fields
/// are named, not generic, and not tuples (whose layout Rust does not fix).
fn launch_argument(s: &syn::ItemStruct) -> TokenStream {
    let syn::Fields::Named(fields) = &s.fields else {
        return quote!();
    };
    if !s.generics.params.is_empty() || fields.named.iter().any(|f| has_tuple(&f.ty)) {
        return quote!();
    }
    let name = &s.ident;
    // Spanned at the field's type: a type that is no field is an error there.
    let writes = fields
        .named
        .iter()
        .filter_map(|f| Some((f.ident.as_ref()?, &f.ty)))
        .map(|(f, ty)| {
            let span = syn::spanned::Spanned::span(ty);
            quote_spanned! {span=>
                arg.__field(::core::mem::offset_of!(#name, #f), &value.#f);
            }
        });
    quote! {
        impl ::core::convert::From<#name> for ::nvfp4_dsl::KernelArg<'_> {
            fn from(value: #name) -> Self {
                let mut arg = ::nvfp4_dsl::KernelArg::__struct(::core::mem::size_of::<#name>());
                #(#writes)*
                arg
            }
        }

        // SAFETY: `#[repr(C)]` (which `#[device]` checks or adds) puts each
        // field where a kernel's `.param` reads it (the compiler's C layout;
        // a kernel that takes the struct asserts it against rustc's); the
        // fields are numbers, vectors and arrays of them, bits a kernel may
        // read; the padding is copied too and never read.
        unsafe impl ::nvfp4_dsl::__DeviceRepr for #name {}
    }
}

/// Whether a field's type is or holds a tuple.
fn has_tuple(t: &syn::Type) -> bool {
    match t {
        syn::Type::Tuple(_) => true,
        syn::Type::Array(a) => has_tuple(&a.elem),
        syn::Type::Paren(p) => has_tuple(&p.elem),
        syn::Type::Group(g) => has_tuple(&g.elem),
        _ => false,
    }
}

/// `#[device] impl Pair { .. }`: the impl block (for rustc and host code),
/// and the call of the struct's helper that defines the macro `Pair`
/// handing both to kernels.
pub(super) fn device_impl(imp: &syn::ItemImpl) -> TokenStream {
    let name = match &*imp.self_ty {
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => &p.path.segments[0].ident,
        other => {
            let mut out = syn::Error::new_spanned(
                other,
                "name the struct as it is named in its module, where the impl block is: `#[device] impl Pair { .. }`",
            )
            .to_compile_error();
            out.extend(quote!(#imp));
            return out;
        }
    };
    let mut rust = imp.clone();
    StripUnroll.visit_item_impl_mut(&mut rust);
    let helper = methods_helper(name);
    let helper = quote_spanned!(name.span()=> #helper);
    let check = trait_check("__MarkedDeviceMethods", name, name.span());
    quote! {
        #[allow(dead_code)]
        #rust

        #helper! { @methods $ [#imp] }
        impl ::nvfp4_dsl::__HasDeviceImpl for #name {}
        #check
    }
}

/// For each struct parameter of a kernel: assertions, evaluated by rustc,
/// that its `#[repr(C)]` layout is the one the kernel reads.
pub(super) fn layout_asserts(c: &Compiled, item: &syn::ItemFn) -> TokenStream {
    let mut out = TokenStream::new();
    for sp in &c.struct_params {
        let ty = item.sig.inputs.iter().find_map(|input| match input {
            syn::FnArg::Typed(pt) if matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.ident == sp.param) => Some(&pt.ty),
            _ => None,
        });
        let Some(ty) = ty else { continue };
        let lit = |n: u64| proc_macro2::Literal::u64_unsuffixed(n);
        let msg = format!(
            "kernel `{}` reads parameter `{}` in another layout than rustc's `#[repr(C)]`",
            c.kernel, sp.param
        );
        let (size, align) = (lit(sp.size), lit(sp.align));
        let fields = sp.fields.iter().map(|(f, at)| {
            let f = format_ident!("{f}");
            let at = lit(*at);
            quote!(assert!(::core::mem::offset_of!(#ty, #f) == #at, #msg);)
        });
        out.extend(quote! {
            const _: () = {
                assert!(::core::mem::size_of::<#ty>() == #size && ::core::mem::align_of::<#ty>() == #align, #msg);
                #(#fields)*
            };
        });
    }
    out
}
