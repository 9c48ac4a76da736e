//! The `#[kernel]` and `#[device]` attributes of nvfp4-dsl. See the
//! `nvfp4-dsl` crate for the documentation of the DSL; the compiler
//! itself is the library crate `nvfp4-dsl-compiler` (`compiler/`).
//!
//! A proc macro sees only the item it is attached to, so a kernel gets the
//! source of the device functions it calls through macros: `#[device] fn f`
//! also defines a `macro_rules!` named `f` (in the macro namespace, next to
//! the function) that hands its own tokens to a callback. `#[kernel]` finds
//! the calls that are neither intrinsics nor device functions it already
//! has (and the names of `#[device] const`s it lacks) and expands to
//! `path::f! { callback .. }` with the path the call wrote; the callback,
//! `__kernel_with_devices!`, repeats that until every device item (of
//! device functions and consts too) is there, then compiles. A
//! `#[device(methods)]` struct's macro is defined by its `#[device] impl`
//! block (through a helper the struct leaves next to it) and hands over
//! both, so the methods come wherever the struct does.

use nvfp4_dsl_compiler as compiler;
use nvfp4_dsl_compiler::expand;
use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;

/// Compiles a Rust function to PTX at build time. See `nvfp4_dsl::kernel`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = Tokens::from(item);
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let mut out = syn::Error::new(
                e.span(),
                "#[kernel] applies to a function: `#[kernel(targets(sm_90))] fn name(..) { .. }`",
            )
            .to_compile_error();
            out.extend(item);
            return out.into();
        }
    };
    kernel_with(attr.into(), func, Vec::new()).into()
}

/// Marks a function that kernels and other device functions can call, a
/// struct of values they can use (`#[device] #[derive(Clone, Copy)]
/// struct Pair { lo: u32, hi: f32 }`, kept in registers, built with a
/// struct literal, read and written by field), a struct's methods, or a
/// constant they can name (below).
///
/// ```ignore
/// #[device]
/// pub fn scaled<const N: usize>(x: &[f32], start: usize, s: f32) -> [f32; N] {
///     let mut out = [0.0f32; N];
///     #[unroll]
///     for i in 0..N {
///         out[i] = x[start + i] * s;
///     }
///     out
/// }
///
/// #[kernel(targets(sm_90))]
/// fn k(x: &[f32], y: &mut [f32]) {
///     let v = scaled::<4>(x, 0, 0.5);
///     y[0] = v[3];
/// }
/// ```
///
/// The body follows the kernel subset; parameters are slices, numbers,
/// vectors and arrays (`mut` ones are copies), the result a value, and
/// const generics are given with a turbofish. Each call is inlined (the
/// PTX keeps one function per kernel), so recursion is a compile error
/// naming the cycle; errors in the body point at it and name the kernel.
/// The function stays an ordinary Rust function too. A kernel reaches it
/// by any path that reaches the function (`helper(..)`, `decode::helper(..)`,
/// `other_crate::decode::helper(..)` for a `pub` one). The device functions
/// a device function calls are fetched from the kernel's module through
/// the path the kernel used for the caller: `g(..)` inside `decode::f` is
/// `decode::g` (and `super::`, `self::`, `crate::` work as in Rust); when
/// the kernel imported `f` with `use`, import what `f` calls too. A call of
/// a function that is not `#[device]` fails with rustc's "cannot find macro
/// `f`": mark it `#[device]`.
///
/// A device function also takes a struct as `&Pair` (reads the caller's)
/// or `&mut Pair` (the caller's own, written in place, as `&mut [T; N]`).
/// A struct is `#[repr(C)]` (added when absent; another `repr` is an
/// error). One of numbers, vectors, descriptors and arrays of them (at
/// most 128 bytes) is a kernel parameter: the launcher takes the struct
/// (`From<Pair> for KernelArg`), the kernel reads its fields at their
/// `#[repr(C)]` offsets from one `.param .align A .b8 name[size]`, and it
/// is `cudarc::driver::DeviceRepr` for cudarc's own launches.
///
/// Methods: `#[device(methods)]` on the struct and `#[device]` on its
/// `impl` block, in the struct's module:
///
/// ```ignore
/// #[device(methods)]
/// #[derive(Clone, Copy)]
/// pub struct Acc { pub sum: f32, pub count: u32 }
///
/// #[device]
/// impl Acc {
///     pub fn new() -> Self { Acc { sum: 0.0, count: 0 } }
///     pub fn push(&mut self, v: f32) { self.sum += v; self.count += 1; }
///     pub fn mean(&self) -> f32 { self.sum / self.count as f32 }
/// }
///
/// #[kernel(targets(sm_90))]
/// fn k(x: &[f32], y: &mut [f32]) {
///     let mut acc = Acc::new();
///     acc.push(x[0]);
///     Acc::push(&mut acc, x[1]);
///     y[0] = acc.mean();
/// }
/// ```
///
/// Methods take `self`, `mut self` (a copy), `&self`, `&mut self` (the
/// caller's struct, a `let mut` local or a field or element of one,
/// written in place) or nothing, are called with method or path syntax
/// and inlined like device functions. The struct's macro hands the impl
/// block over with the struct, so a `use` of the struct brings the
/// methods; every method of the block is compiled for a kernel that uses
/// the struct (host-only methods go in another impl block). `#[device]` on
/// a method itself is an error saying to put it on the impl block.
///
/// # Constants
///
/// ```ignore
/// #[device]
/// pub const TILE: u32 = 32;
/// #[device]
/// pub const PADDED: usize = (TILE * (TILE + 1)) as usize;
/// #[device]
/// pub const LUT: [f32; 4] = [0.0, 0.5, 1.0, 1.5];
///
/// #[kernel(targets(sm_90), specialize(W = [TILE, 2 * TILE]))]
/// fn k<const W: u32>(codes: &[u8], y: &mut [f32]) {
///     let tile = shared_array::<f32, PADDED>();
///     let i = thread_idx_x();
///     if TILE > 16 {
///         tile[i] = LUT[(codes[i as usize] % 4) as usize];
///     }
/// }
/// ```
///
/// A `#[device] const` is a number or a `bool` (the primitive types; keep an
/// `f16` as its bits in a `u16`), or an array of numbers, and it is reached
/// like a device function (any path that reaches it; a `pub` one from
/// other crates; the consts its initializer names are fetched through the
/// path the kernel used for it). Its initializer is a constant expression
/// of literals, other `#[device] const`s, operators, `as` casts, array
/// literals, `[x; N]` and indexing; anything else (a call, a method) is an
/// error at the const. A number is its value wherever a literal may be:
/// in expressions (`if TILE > 16` folds away), `match` patterns, array
/// lengths (`[0f32; N * 2]`), a turbofish's length
/// (`shared_array::<f32, { TILE as usize * 2 }>()`), `#[unroll]` bounds and
/// the values of `#[kernel(specialize(..), launch_bounds(..))]`. An array indexed by a
/// constant is the element; indexed at run time it becomes `.const` data in
/// the kernel's PTX, read with `ld.const` (the emulator reports an index
/// past the table, naming it). A name in a `match` pattern that starts
/// with a capital and is not a local is taken to be a `#[device] const`, as
/// Rust compares with a constant there. A const used in a kernel but not
/// marked `#[device]` fails with rustc's "cannot find macro `TILE`": mark
/// it `#[device]`.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = Tokens::from(item);
    let attr = Tokens::from(attr);
    let fail = |span: proc_macro2::Span, msg: &str| {
        let mut out = syn::Error::new(span, msg).to_compile_error();
        out.extend(item.clone());
        out.into()
    };
    let mut parsed: syn::Item = match syn::parse2(item.clone()) {
        Ok(i @ (syn::Item::Fn(_) | syn::Item::Struct(_) | syn::Item::Impl(_) | syn::Item::Const(_))) => i,
        Ok(_) | Err(_) => {
            return fail(
                proc_macro2::Span::call_site(),
                "#[device] applies to a function, a struct, a struct's impl block or a const: `#[device] fn name(..) { .. }`, `#[device] #[derive(Clone, Copy)] struct Name { .. }`, `#[device] impl Name { .. }`, `#[device] const NAME: u32 = 32;`",
            );
        }
    };
    if let syn::Item::Fn(f) = &parsed
        && let Some(s) = method_marker(&f.sig)
    {
        return fail(
            s,
            "a method is a device function through its impl block: write `#[device] impl Name { .. }` (not `#[device]` on the method), and mark the struct `#[device(methods)]`",
        );
    }
    if let Some(t) = attr.clone().into_iter().next() {
        let methods: Option<syn::Ident> = syn::parse2(attr.clone()).ok().filter(|i: &syn::Ident| i == "methods");
        match (&mut parsed, methods) {
            // Put back for `expand::device`: the struct's macro is then
            // defined by its impl block, handing over both.
            (syn::Item::Struct(s), Some(m)) => s.attrs.push(syn::parse_quote!(#[device(#m)])),
            _ => {
                return fail(
                    t.span(),
                    "#[device] takes no arguments, except `#[device(methods)]` on a struct whose `#[device] impl` block kernels call",
                );
            }
        }
    }
    expand::device(&parsed).into()
}

/// The receiver or the `Self` of a method's signature, if it has one.
fn method_marker(sig: &syn::Signature) -> Option<proc_macro2::Span> {
    if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first() {
        return Some(r.self_token.span);
    }
    fn find(tokens: Tokens) -> Option<proc_macro2::Span> {
        tokens.into_iter().find_map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if i == "Self" => Some(i.span()),
            proc_macro2::TokenTree::Group(g) => find(g.stream()),
            _ => None,
        })
    }
    find(quote::quote!(#sig))
}

/// The callback of a device function's macro: `(attr) { kernel } { [path]
/// device_fn ... }`. Not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __kernel_with_devices(input: TokenStream) -> TokenStream {
    match expand::parse_callback(input.into()) {
        Ok((attr, func, devices)) => kernel_with(attr, func, devices).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Fetches the next missing device function, or compiles the kernel when
/// none is missing.
fn kernel_with(attr: Tokens, func: syn::ItemFn, devices: Vec<(String, syn::Item)>) -> Tokens {
    let failed = |e| {
        expand::on_kernel_error(
            e,
            &func,
            compiler::launcher_only(attr.clone(), &func, &devices).as_ref(),
        )
    };
    match compiler::missing_devices(attr.clone(), &func, &devices) {
        Err(e) => return failed(e),
        Ok(missing) => {
            if let Some((key, span)) = missing.into_iter().next() {
                return expand::fetch_device(&attr, &func, &devices, &key, span);
            }
        }
    }
    let dump = match std::env::var(compiler::Dump::VAR) {
        Ok(value) => match compiler::Dump::parse(&value) {
            Ok(d) => Some(d),
            Err(msg) => return failed(syn::Error::new(func.sig.ident.span(), msg)),
        },
        Err(_) => None,
    };
    let opts = compiler::Options {
        line_info: line_info_file(&func),
        dump,
    };
    match compiler::compile(attr.clone(), &func, &devices, &opts) {
        Ok(c) => {
            // The stages `NVFP4_DSL_DUMP` asked for, on rustc's stderr
            // (which cargo shows for the crate being compiled).
            eprint!("{}", c.dump);
            expand::expand(&c, &func)
        }
        Err(e) => failed(e),
    }
}

/// The kernel's source file, when the `line-info` feature asks for `.loc`.
fn line_info_file(func: &syn::ItemFn) -> Option<String> {
    if !cfg!(feature = "line-info") {
        return None;
    }
    let file = func.sig.ident.span().local_file()?;
    let file = if file.is_relative() {
        std::env::current_dir().ok()?.join(file)
    } else {
        file
    };
    Some(file.display().to_string())
}
