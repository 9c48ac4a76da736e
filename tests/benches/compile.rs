//! The macro's own cost: time to compile each kernel of the project from
//! tokens to PTX (all specialisations and targets), median of repeats.
//!
//! `cargo bench -p nvfp4-tests --bench compile`

use nvfp4_dsl_compiler as compiler;

use std::time::Instant;

const REPEATS: usize = 30;

fn main() {
    println!(
        "{:<16} {:>9} {:>11} {:>12}",
        "kernel", "variants", "PTX bytes", "median ms"
    );
    let all_devices = nvfp4_tests::device_items();
    for source in nvfp4_kernels::registry::SOURCES {
        for item in nvfp4_tests::source_items(&source.file()) {
            let syn::Item::Fn(mut f) = item else { continue };
            let Some(pos) = f.attrs.iter().position(|a| a.path().is_ident("kernel")) else {
                continue;
            };
            let attr = f.attrs.remove(pos);
            let syn::Meta::List(list) = attr.meta else { continue };
            // The device items it uses, found by name.
            let mut devices: Vec<(String, syn::Item)> = Vec::new();
            while let Some((key, _)) = compiler::missing_devices(list.tokens.clone(), &f, &devices)
                .expect("parses")
                .into_iter()
                .next()
            {
                let item = nvfp4_tests::device_item(&all_devices, &key);
                devices.push((key, item));
            }
            // Time from tokens, as the macro receives them: parse included.
            let tokens = quote::quote!(#f);
            let mut times = Vec::with_capacity(REPEATS);
            let mut last = None;
            for _ in 0..REPEATS {
                let start = Instant::now();
                let item: syn::ItemFn = syn::parse2(tokens.clone()).expect("parses");
                let out = compiler::compile(list.tokens.clone(), &item, &devices, &compiler::Options::default())
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
