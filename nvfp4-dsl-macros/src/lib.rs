//! The `#[kernel]` attribute of nvfp4-dsl. See the `nvfp4-dsl` crate for the
//! documentation of the DSL; this crate holds the compiler (`compiler/`).

mod compiler;

use proc_macro::TokenStream;

/// Compiles a Rust function to PTX at build time. See `nvfp4_dsl::kernel`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
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
    let opts = compiler::Options {
        line_info: line_info_file(&func),
    };
    match compiler::compile(attr.into(), &func, &opts) {
        Ok(c) => compiler::expand::expand(&c, &func).into(),
        Err(e) => compiler::expand::on_error(e, &func).into(),
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
