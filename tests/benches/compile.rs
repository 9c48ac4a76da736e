//! The macro's own cost: time to compile each kernel of the project from
//! tokens to PTX (all specialisations and targets), median of repeats.
//!
//! `cargo bench -p nvfp4-tests --bench compile`

#[allow(dead_code, unused_imports)]
#[path = "../../nvfp4-dsl-macros/src/compiler/mod.rs"]
mod compiler;

use std::time::Instant;

const SOURCES: &[&str] = &[
    "nvfp4-kernels/src/samples.rs",
    "nvfp4-kernels/src/decode.rs",
    "nvfp4-kernels/src/gemv.rs",
    "nvfp4-kernels/src/gemm.rs",
];
const REPEATS: usize = 30;

fn main() {
    println!(
        "{:<16} {:>9} {:>11} {:>12}",
        "kernel", "variants", "PTX bytes", "median ms"
    );
    for src in SOURCES {
        let path = nvfp4_tests::repo_root().join(src);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = syn::parse_file(&text).expect("parses");
        for item in file.items {
            let syn::Item::Fn(mut f) = item else { continue };
            let Some(pos) = f.attrs.iter().position(|a| a.path().is_ident("kernel")) else {
                continue;
            };
            let attr = f.attrs.remove(pos);
            let syn::Meta::List(list) = attr.meta else { continue };
            // Time from tokens, as the macro receives them: parse included.
            let tokens = quote::quote!(#f);
            let mut times = Vec::with_capacity(REPEATS);
            let mut last = None;
            for _ in 0..REPEATS {
                let start = Instant::now();
                let item: syn::ItemFn = syn::parse2(tokens.clone()).expect("parses");
                let out = compiler::compile(list.tokens.clone(), &item, &[], &compiler::Options::default())
                    .expect("compiles");
                times.push(start.elapsed().as_secs_f64() * 1e3);
                last = Some(out);
            }
            times.sort_by(f64::total_cmp);
            let out = last.expect("ran at least once");
            let variants: usize = out.variants.iter().map(|v| v.ptx.len()).sum();
            let bytes: usize = out
                .variants
                .iter()
                .flat_map(|v| v.ptx.iter().map(|(_, p)| p.len()))
                .sum();
            println!(
                "{:<16} {:>9} {:>11} {:>12.3}",
                out.kernel,
                variants,
                bytes,
                times[REPEATS / 2]
            );
        }
    }
}
