//! The Rust tokens `#[kernel]` outputs.
//!
//! For `#[kernel(..)] pub fn saxpy(..)` the user gets `pub mod saxpy` with:
//! - `VARIANTS`: every specialisation with its entry name and PTX per target;
//! - `Kernel<..generics..>`: one `impl` per listed specialisation holding its
//!   `VARIANT` and a typed, `unsafe` `launch` (`Kernel::<2>::launch`); an
//!   unlisted specialisation has no `launch`, so using it is a Rust compile
//!   error. A kernel generic over types alone has one generic `impl`
//!   instead, for the types that implement its module's `Specialized`
//!   (the listed ones): `Kernel::<f16>::launch` takes `f16` views where the
//!   kernel takes `&[T]`, and host code generic over `T: Specialized` can
//!   call it;
//! - the original function, private and never called, so rustc type-checks
//!   the body against the intrinsic declarations (and the IDE sees it).
//!
//! `#[device]` functions, structs and consts expand to themselves and a
//! macro that hands their source to a kernel ([`device`], [`fetch_device`],
//! [`parse_callback`]); structs and impl blocks get more on the host
//! (`structs`).

mod structs;

use super::attr::SpecValue;
use super::target::Target;
use super::types::Scalar;
use super::{Compiled, Variant};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// The expansion of a kernel that compiled.
pub fn expand(c: &Compiled, item: &syn::ItemFn) -> TokenStream {
    let name = &item.sig.ident;
    let vis = &item.vis;
    let docs: Vec<&syn::Attribute> = item.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let kernel = c.kernel.as_str();
    let sources = c.sources.iter().map(|s| {
        let (name, file, line) = (&s.name, s.file.as_deref().unwrap_or(""), s.fn_line as u32);
        quote!(::nvfp4_dsl::SourceFn { name: #name, file: #file, fn_line: #line })
    });
    let sources = quote!(&[#(#sources),*]);

    let variants = c.variants.iter().map(|v| variant_tokens(kernel, &sources, v));

    let generic_params: Vec<TokenStream> = item
        .sig
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Const(c) => {
                let (id, ty) = (&c.ident, &c.ty);
                Some(quote!(const #id: #ty))
            }
            syn::GenericParam::Type(t) => {
                let id = &t.ident;
                Some(quote!(#id))
            }
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect();
    let type_params: Vec<&syn::Ident> = item.sig.generics.type_params().map(|t| &t.ident).collect();
    let struct_generics = if generic_params.is_empty() {
        quote!()
    } else {
        quote!(<#(#generic_params),*>)
    };
    // A type parameter is used by a field, as Rust requires.
    let struct_body = if type_params.is_empty() {
        quote!(;)
    } else {
        quote!((::core::marker::PhantomData<fn() -> (#(#type_params,)*)>);)
    };

    // A kernel generic over one type alone gets one generic `launch` (host
    // code generic over `T` can call it); others get an `impl` per
    // specialisation.
    let only_types = type_params.len() == 1 && generic_params.len() == 1;
    let generic_launch = if only_types {
        generic_impl(c, item, type_params[0])
    } else {
        quote!()
    };
    let impls = c.variants.iter().enumerate().filter(|_| !only_types).map(|(i, v)| {
        let launcher = launcher_params(&instance(item, &v.spec), None);
        let args = if v.spec.is_empty() {
            quote!()
        } else {
            let vals = v.spec.iter().map(|(_, val)| spec_tokens(*val));
            quote!(<#(#vals),*>)
        };
        let doc = format!(
            "Launches entry `{}` (PTX for {}).",
            v.entry,
            v.ptx.iter().map(|(t, _)| t.name()).collect::<Vec<_>>().join(", ")
        );
        let launch = launcher.launch_fn(name, &doc);
        quote! {
            impl Kernel #args {
                /// This specialisation: entry name and PTX per target.
                pub const VARIANT: &'static ::nvfp4_dsl::Variant = &VARIANTS[#i];

                #launch
            }
        }
    });

    let check_copy = type_check_copy(item);
    let layouts = structs::layout_asserts(c, item);
    let struct_doc = format!(
        "The kernel `{kernel}`; `launch` exists for each specialisation listed in `#[kernel(specialize(..))]`."
    );
    quote! {
        #(#docs)*
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            /// Every compiled specialisation of this kernel.
            pub static VARIANTS: &[::nvfp4_dsl::Variant] = &[#(#variants),*];

            #[doc = #struct_doc]
            #[derive(Debug, Clone, Copy)]
            pub struct Kernel #struct_generics #struct_body

            #(#impls)*
            #generic_launch

            #check_copy
            #layouts
        }
    }
}

/// The launch of a kernel generic over one type `t` alone: a
/// `Specialized` trait implemented for each listed type and one
/// `impl<T: Specialized> Kernel<T>` whose `VARIANT` and `launch` pick the
/// type's entry.
fn generic_impl(c: &Compiled, item: &syn::ItemFn, t: &syn::Ident) -> TokenStream {
    let name = &item.sig.ident;
    let types = c.variants.iter().map(|v| {
        let ts = v.spec.iter().map(|(_, val)| spec_tokens(*val));
        quote!(#(#ts)*)
    });
    let index = 0..c.variants.len();
    let launch = launcher_params(item, Some(t)).launch_fn(name, "Launches the specialisation for `T`.");
    let doc = format!(
        "The types `{name}` is compiled for (`specialize(..)`): `Kernel::<T>::launch` exists where `T` implements this, also in host code generic over `T: {name}::Specialized`."
    );
    quote! {
        #[doc = #doc]
        pub trait Specialized: ::nvfp4_dsl::ScalarArg {
            /// The specialisation's index in [`VARIANTS`].
            #[doc(hidden)]
            const INDEX: usize;
        }

        #(impl Specialized for #types { const INDEX: usize = #index; })*

        impl<#t: Specialized> Kernel<#t> {
            /// This specialisation: entry name and PTX per target.
            pub const VARIANT: &'static ::nvfp4_dsl::Variant = &VARIANTS[<#t as Specialized>::INDEX];

            #launch
        }
    }
}

/// One `::nvfp4_dsl::Variant` of the kernel `kernel`: its PTX for this
/// build (picked by the user crate's `cfg!(debug_assertions)`) and, where
/// the builds differ, both.
fn variant_tokens(kernel: &str, sources: &TokenStream, v: &Variant) -> TokenStream {
    let entry = &v.entry;
    let spec = &v.spec_name;
    let programmatic = v.programmatic;
    let triggers_early = v.triggers_early;
    // `(Target::X, text)` of a PTX list.
    let entry_of = |t: Target, text: TokenStream| {
        let t = target_tokens(t);
        quote!((#t, #text))
    };
    let ptx = v.ptx.iter().enumerate().map(|(i, (t, text))| {
        // `debug_assert!`s where the user's crate has debug assertions,
        // as Rust's: `cfg!` in the expansion is the user's.
        match &v.release_ptx {
            Some(release) => {
                let release = &release[i];
                entry_of(*t, quote!(if cfg!(debug_assertions) { #text } else { #release }))
            }
            None => entry_of(*t, quote!(#text)),
        }
    });
    let builds = match &v.release_ptx {
        Some(release) => {
            let debug = v.ptx.iter().map(|(t, text)| entry_of(*t, quote!(#text)));
            let release = v
                .ptx
                .iter()
                .zip(release)
                .map(|((t, _), text)| entry_of(*t, quote!(#text)));
            quote!(::core::option::Option::Some((&[#(#debug),*], &[#(#release),*])))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::nvfp4_dsl::Variant {
            kernel: #kernel,
            spec: #spec,
            entry: #entry,
            ptx: &[#(#ptx),*],
            sources: #sources,
            programmatic: #programmatic,
            triggers_early: #triggers_early,
            builds: #builds,
        }
    }
}

/// `compile_error!` with the span of the problem, plus the function itself
/// so the IDE and rustc keep checking it.
pub fn on_error(e: syn::Error, item: &syn::ItemFn) -> TokenStream {
    let mut out = e.to_compile_error();
    out.extend(type_check_copy(item));
    out
}

/// [`on_error`] for a kernel with its launcher module (from
/// [`crate::launcher_only`]) where there is one: host code that launches
/// the kernel then meets no second error of its own.
pub fn on_kernel_error(e: syn::Error, item: &syn::ItemFn, launcher: Option<&Compiled>) -> TokenStream {
    match launcher {
        Some(c) => {
            let mut out = e.to_compile_error();
            out.extend(expand(c, item));
            out
        }
        None => on_error(e, item),
    }
}

/// `#[device] fn name`, `#[device] struct Name` or `#[device] const NAME`:
/// the item (for rustc and host code), and a `macro_rules!` that appends
/// its source to a kernel's callback, reachable as `name!` wherever the
/// item is (a `use` of the item imports both). A `pub` item's macro is
/// `#[macro_export]`ed (under a hidden unique name at the crate root) so
/// other crates reach it by the same path as the item. A const is checked
/// here (its type, its initializer a constant expression of the subset).
pub fn device(item: &syn::Item) -> TokenStream {
    let (name, vis, rust) = match item {
        syn::Item::Fn(f) => {
            let rust = strip_unroll(f);
            (&f.sig.ident, &f.vis, quote!(#[allow(dead_code)] #rust))
        }
        syn::Item::Struct(s) if structs::has_methods(s) => return structs::struct_with_methods(s),
        syn::Item::Struct(s) => (&s.ident, &s.vis, structs::struct_without_methods(s)),
        syn::Item::Impl(i) => return structs::device_impl(i),
        syn::Item::Const(c) => {
            let checked = match super::parse::check_device_const(c) {
                Ok(()) => quote!(),
                Err(e) => e.to_compile_error(),
            };
            (&c.ident, &c.vis, quote!(#checked #[allow(dead_code)] #c))
        }
        other => unreachable!("the attribute checked: a function, a struct, an impl block or a const, not {other:?}"),
    };
    let hidden = format_ident!("__nvfp4_device_{}_{:016x}", name, device_hash(name, item));
    let export = if matches!(vis, syn::Visibility::Public(_)) {
        quote!(#[macro_export])
    } else {
        quote!()
    };
    quote! {
        #rust

        #[doc(hidden)]
        #export
        macro_rules! #hidden {
            ([$($callback:tt)*] ($($attr:tt)*) {$($kernel:tt)*} {$($devices:tt)*}) => {
                $($callback)*! { ($($attr)*) {$($kernel)*} {$($devices)* #item} }
            };
        }

        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #hidden as #name;
    }
}

/// A name for a device item's macro that no other device item of the
/// crate has: FNV-1a of its source and position, its file included (two
/// modules may hold the same item at the same line and column, and the
/// exported macros share the crate root).
fn device_hash(name: &syn::Ident, item: &syn::Item) -> u64 {
    let span = name.span();
    let start = span.start();
    let text = format!("{}:{}:{}:{}", span.file(), start.line, start.column, quote!(#item));
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Expands to the macro of the device function at `key`, which calls the
/// kernel callback back with its source appended.
pub fn fetch_device(
    attr: &TokenStream,
    item: &syn::ItemFn,
    devices: &[(String, syn::Item)],
    key: &str,
    span: Span,
) -> TokenStream {
    let tokens = || -> syn::Result<TokenStream> {
        let path = path_tokens(key, span)?;
        let mut have = Vec::with_capacity(devices.len());
        for (k, f) in devices {
            let k = path_tokens(k, span)?;
            have.push(quote!([#k] #f));
        }
        Ok(quote_spanned! {span=>
            #path! {
                [::nvfp4_dsl::__kernel_with_devices]
                (#attr)
                {#item}
                {#(#have)* [#path]}
            }
        })
    };
    tokens().unwrap_or_else(|e| on_error(e, item))
}

/// `a::b::c` as path tokens, each spanned at `span`; an error for a path
/// that is not plain identifiers (`$crate::f` from a macro).
fn path_tokens(key: &str, span: Span) -> syn::Result<TokenStream> {
    let (leading, rest) = match key.strip_prefix("::") {
        Some(r) => (quote_spanned!(span=> ::), r),
        None => (quote!(), key),
    };
    let mut segments = Vec::new();
    for s in rest.split("::") {
        // `crate`, `self` and `super` are path segments too.
        let any = <syn::Ident as syn::ext::IdentExt>::parse_any;
        let mut ident = syn::parse::Parser::parse_str(any, s).map_err(|_| {
            syn::Error::new(
                span,
                format!(
                    "call `{key}` by a path of plain names (a `#[device]` function is fetched by the path of the call)"
                ),
            )
        })?;
        ident.set_span(span);
        segments.push(ident);
    }
    Ok(quote!(#leading #(#segments)::*))
}

/// The callback's input: the kernel's attribute tokens, the kernel, and
/// the device functions fetched so far with their paths.
pub type Callback = (TokenStream, syn::ItemFn, Vec<(String, syn::Item)>);

/// Reads the callback's input: `(attr) { kernel } { [path] device_fn ... }`
/// (a struct with methods: `[path] struct .. impl ..`).
pub fn parse_callback(input: TokenStream) -> syn::Result<Callback> {
    use syn::parse::Parser;
    let parser = |stream: syn::parse::ParseStream| {
        let attr;
        syn::parenthesized!(attr in stream);
        let attr: TokenStream = attr.parse()?;
        let kernel;
        syn::braced!(kernel in stream);
        let kernel: syn::ItemFn = kernel.parse()?;
        let list;
        syn::braced!(list in stream);
        let mut devices = Vec::new();
        while !list.is_empty() {
            let key;
            syn::bracketed!(key in list);
            let path: syn::Path = key.parse()?;
            let key = super::parse::path_key(&path);
            // A struct with methods comes with its impl block.
            while !list.is_empty() && !list.peek(syn::token::Bracket) {
                devices.push((key.clone(), list.parse()?));
            }
        }
        Ok((attr, kernel, devices))
    };
    parser.parse2(input)
}

fn target_tokens(t: Target) -> TokenStream {
    let v = format_ident!("{}", t.variant());
    quote!(::nvfp4_dsl::Target::#v)
}

fn spec_tokens(v: SpecValue) -> TokenStream {
    match v {
        SpecValue::Bool(b) => quote!(#b),
        SpecValue::Ty(t) => scalar_tokens(t),
        SpecValue::Int(i) => {
            let lit = proc_macro2::Literal::i128_unsuffixed(i.abs());
            if i < 0 { quote!({ -#lit }) } else { quote!(#lit) }
        }
    }
}

/// A DSL scalar type as a path that resolves anywhere.
fn scalar_tokens(t: Scalar) -> TokenStream {
    let id = format_ident!("{}", t.rust_name());
    match t {
        Scalar::F16 | Scalar::Bf16 => quote!(::nvfp4_dsl::#id),
        _ => quote!(#id),
    }
}

/// The kernel's signature for a specialisation: each type parameter
/// replaced by its type, so that the launcher takes that type's views.
fn instance(item: &syn::ItemFn, spec: &[(String, SpecValue)]) -> syn::ItemFn {
    struct Types<'a>(&'a [(String, SpecValue)]);
    impl VisitMut for Types<'_> {
        fn visit_type_mut(&mut self, t: &mut syn::Type) {
            if let syn::Type::Path(p) = t
                && p.qself.is_none()
                && let Some(id) = p.path.get_ident()
                && let Some((_, SpecValue::Ty(s))) = self.0.iter().find(|(n, _)| id == n)
            {
                let tokens = scalar_tokens(*s);
                *t = syn::parse_quote!(#tokens);
                return;
            }
            syn::visit_mut::visit_type_mut(self, t);
        }
    }
    let mut f = item.clone();
    Types(spec).visit_signature_mut(&mut f.sig);
    f
}

/// The pieces of a typed launcher.
struct Launcher {
    /// One lifetime per slice parameter.
    lifetimes: Vec<syn::Lifetime>,
    /// `impl Into<DeviceView<'l, T>>` for `&[T]`, `DeviceViewMut` for
    /// `&mut [T]`, scalars as they are.
    params: Vec<TokenStream>,
    /// The writable views, converted.
    conversions: Vec<TokenStream>,
    /// The argument list. Writable views are reborrowed, so that views of
    /// different lifetimes (`DeviceViewMut` is invariant) meet in one array.
    args: Vec<TokenStream>,
}

impl Launcher {
    /// The typed, `unsafe` `launch` of `Self::VARIANT`, documented `doc`.
    /// It carries the kernel's (`name`'s) span, and each parameter its
    /// type's: rustc's notes on a wrong argument ("defined here", "required
    /// by a bound") point at the kernel's signature. Tokens made here would
    /// have the span of the macro call, which for a kernel using `#[device]`
    /// items is a device item's (its callback macro expands the kernel).
    fn launch_fn(&self, name: &syn::Ident, doc: &str) -> TokenStream {
        let Launcher {
            lifetimes,
            params,
            conversions,
            args,
        } = self;
        let launch = syn::Ident::new("launch", name.span());
        quote! {
            #[doc = #doc]
            ///
            /// Picks the PTX for the device's compute capability, loads the
            /// module once, and launches on the device's stream. Slices are
            /// anything that converts into a `DeviceView` (`&mut [T]`:
            /// `DeviceViewMut`): `&DeviceBuffer<T>`, a view of one (by value,
            /// or `&view` and `&mut view`, reborrowed for the launch), or
            /// cudarc's `&CudaSlice<T>`, `&CudaView<T>` (`&mut CudaViewMut<T>`).
            ///
            /// # Safety
            ///
            /// Kernels access memory without bounds checks: the launch
            /// configuration and the arguments must keep every access of the
            /// kernel inside its buffers.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn #launch<#(#lifetimes),*>(
                device: &::nvfp4_dsl::Device,
                config: ::nvfp4_dsl::LaunchConfig,
                #(#params),*
            ) -> ::core::result::Result<(), ::nvfp4_dsl::Error> {
                #(#conversions)*
                let mut args = [#(#args),*];
                // SAFETY: the caller upholds the contract above.
                unsafe { ::nvfp4_dsl::launch(device, Self::VARIANT, config, &mut args) }
            }
        }
    }
}

/// `generic`: the kernel's type parameter, when the launcher is generic
/// over it (a parameter of that type is passed through `ScalarArg`).
fn launcher_params(item: &syn::ItemFn, generic: Option<&syn::Ident>) -> Launcher {
    let mut lifetimes = Vec::new();
    let mut params = Vec::new();
    let mut conversions = Vec::new();
    let mut args = Vec::new();
    for input in &item.sig.inputs {
        let syn::FnArg::Typed(pt) = input else { continue };
        let syn::Pat::Ident(pi) = &*pt.pat else { continue };
        let id = &pi.ident;
        let mut span = pt.ty.span();
        match &*pt.ty {
            syn::Type::Reference(r) => {
                let syn::Type::Slice(s) = &*r.elem else { continue };
                let elem = &s.elem;
                // The bound is on the element type (a span cannot cover
                // `&[f16]` whole on stable Rust: it would be `&` alone).
                span = elem.span();
                let lifetime = syn::Lifetime::new(&format!("'__view{}", lifetimes.len()), span);
                lifetimes.push(lifetime.clone());
                if r.mutability.is_some() {
                    let view = quote_spanned!(span=> ::nvfp4_dsl::DeviceViewMut<#lifetime, #elem>);
                    params.push(quote_spanned!(span=> #id: impl ::core::convert::Into<#view>));
                    conversions.push(quote!(let mut #id = ::core::convert::Into::<#view>::into(#id);));
                    args.push(quote!(::nvfp4_dsl::KernelArg::from(#id.reborrow())));
                } else {
                    let view = quote_spanned!(span=> ::nvfp4_dsl::DeviceView<#lifetime, #elem>);
                    params.push(quote_spanned!(span=> #id: impl ::core::convert::Into<#view>));
                    args.push(quote!(::nvfp4_dsl::KernelArg::from(::core::convert::Into::<#view>::into(#id))));
                }
            }
            ty => {
                params.push(quote_spanned!(span=> #id: #ty));
                let of_generic = matches!((ty, generic), (syn::Type::Path(p), Some(t)) if p.path.is_ident(t));
                if of_generic {
                    args.push(quote!(::nvfp4_dsl::ScalarArg::kernel_arg(#id)));
                } else {
                    args.push(quote!(::nvfp4_dsl::KernelArg::from(#id)));
                }
            }
        }
    }
    Launcher {
        lifetimes,
        params,
        conversions,
        args,
    }
}

/// The user's function as rustc should see it: `#[unroll]` removed (it is
/// ours), private, allowed to be unused.
fn type_check_copy(item: &syn::ItemFn) -> TokenStream {
    let mut f = strip_unroll(item);
    f.vis = syn::Visibility::Inherited;
    f.attrs.retain(|a| !a.path().is_ident("doc"));
    let span = Span::call_site();
    let allow = quote_spanned!(span=> #[allow(dead_code, clippy::all)]);
    quote!(#allow #f)
}

/// The function without our `#[unroll]` attributes, as rustc should see it.
fn strip_unroll(item: &syn::ItemFn) -> syn::ItemFn {
    let mut f = item.clone();
    StripUnroll.visit_item_fn_mut(&mut f);
    f
}

struct StripUnroll;

impl VisitMut for StripUnroll {
    fn visit_expr_for_loop_mut(&mut self, e: &mut syn::ExprForLoop) {
        e.attrs.retain(|a| !a.path().is_ident("unroll"));
        syn::visit_mut::visit_expr_for_loop_mut(self, e);
    }
}
