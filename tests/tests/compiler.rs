//! The compiler as a library (the `nvfp4-dsl-compiler` crate the proc macro uses):
//! determinism, agreement with what the macro embedded, and the intrinsics
//! table against the declarations users see.

use nvfp4_dsl_compiler as compiler;

use compiler::intrinsics::{Form, all};
use nvfp4_kernels::registry;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `#[kernel]` function of a source file, with its attribute tokens.
fn kernels_in(path: &Path) -> Vec<(proc_macro2::TokenStream, syn::ItemFn)> {
    nvfp4_tests::source_items(path)
        .into_iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => {
                let attr = f.attrs.iter().find(|a| a.path().is_ident("kernel"))?;
                let tokens = match &attr.meta {
                    syn::Meta::List(l) => l.tokens.clone(),
                    _ => proc_macro2::TokenStream::new(),
                };
                let mut f = f.clone();
                f.attrs.retain(|a| !a.path().is_ident("kernel"));
                Some((tokens, f))
            }
            _ => None,
        })
        .collect()
}

/// The device items `kernel` (with its attribute `attr`) uses, found by
/// name as the macro finds them by path (the names are unique among the
/// kernel sources).
fn devices_of(attr: &proc_macro2::TokenStream, kernel: &syn::ItemFn) -> Vec<(String, syn::Item)> {
    let all = nvfp4_tests::device_items();
    let mut devices = Vec::new();
    loop {
        let missing = compiler::missing_devices(attr.clone(), kernel, &devices).expect("parses");
        let Some((key, _)) = missing.into_iter().next() else {
            return devices;
        };
        let item = nvfp4_tests::device_item(&all, &key);
        devices.push((key, item));
    }
}

#[test]
fn compiling_twice_gives_identical_ptx_equal_to_the_embedded_ptx() {
    for source in registry::SOURCES {
        let embedded: BTreeMap<(String, &str), &str> = source
            .kernels
            .iter()
            .copied()
            .flatten()
            .flat_map(|v| v.ptx.iter().map(move |(t, p)| ((v.entry.to_string(), t.name()), *p)))
            .collect();
        let mut compared = 0;
        for (attr, item) in kernels_in(&source.file()) {
            let devices = devices_of(&attr, &item);
            let a = compiler::compile(attr.clone(), &item, &devices, &compiler::Options::default()).expect("compiles");
            let b = compiler::compile(attr, &item, &devices, &compiler::Options::default()).expect("compiles");
            for (va, vb) in a.variants.iter().zip(&b.variants) {
                for ((ta, pa), (_, pb)) in va.ptx.iter().zip(&vb.ptx) {
                    assert_eq!(pa, pb, "{} {}: two compilations differ", va.entry, ta.name());
                    let key = (va.entry.clone(), ta.name());
                    let emb = embedded
                        .get(&key)
                        .unwrap_or_else(|| panic!("{key:?} is not in the registry under {}", source.path));
                    assert_eq!(pa, emb, "{key:?}: the library and the macro disagree");
                    compared += 1;
                }
            }
        }
        assert_eq!(
            compared,
            embedded.len(),
            "{}: every variant the registry lists under it was recompiled from it",
            source.path
        );
    }
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn every_file_that_defines_a_kernel_is_in_the_registry() {
    let canonical = |path: PathBuf| {
        path.canonicalize()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let listed: BTreeSet<PathBuf> = registry::SOURCES
        .iter()
        .filter(|s| !s.kernels.is_empty())
        .map(|s| canonical(s.file()))
        .collect();
    let defining: BTreeSet<PathBuf> = rust_files(&nvfp4_tests::repo_root().join("nvfp4-kernels/src"))
        .into_iter()
        .filter(|path| !kernels_in(path).is_empty())
        .map(canonical)
        .collect();
    assert_eq!(
        listed, defining,
        "the registry's sources with kernels and the files that define kernels"
    );
    // A source listed without kernels holds device items that kernels of
    // another file call.
    for source in registry::SOURCES.iter().filter(|s| s.kernels.is_empty()) {
        let file = source.file();
        assert!(
            kernels_in(&file).is_empty(),
            "{}: its kernels are not listed",
            source.path
        );
        let device = nvfp4_tests::source_items(&file).iter().any(|item| match item {
            syn::Item::Fn(f) => f.attrs.iter().any(|a| a.path().is_ident("device")),
            _ => false,
        });
        assert!(
            device,
            "{}: listed without kernels, but defines no #[device] fn",
            source.path
        );
    }
}

/// Free functions declared in `nvfp4-dsl/src/intrinsics/` (one file per
/// family, as the table): name and parameter count (the special
/// registers come from a macro table).
fn declared_intrinsics() -> BTreeMap<String, (usize, String)> {
    let dir = nvfp4_tests::repo_root().join("nvfp4-dsl/src/intrinsics");
    let mut items = Vec::new();
    for entry in std::fs::read_dir(dir).expect("nvfp4-dsl/src/intrinsics/") {
        let text = std::fs::read_to_string(entry.expect("a file").path()).expect("a family's declarations");
        items.extend(syn::parse_file(&text).expect("parses").items);
    }
    let mut out = BTreeMap::new();
    for item in items {
        match item {
            syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                let docs: String = f
                    .attrs
                    .iter()
                    .filter(|a| a.path().is_ident("doc"))
                    .map(|a| quote::quote!(#a).to_string())
                    .collect();
                out.insert(f.sig.ident.to_string(), (f.sig.inputs.len(), docs));
            }
            syn::Item::Macro(m) if m.mac.path.is_ident("special_register") => {
                let body = m.mac.tokens.to_string();
                for part in body.split(';') {
                    if let Some((left, reg)) = part.split_once("=>") {
                        let name = left.split_whitespace().last().expect("a name").to_string();
                        out.insert(name, (0, format!("PTX: mov.u32 d, {};", reg.trim())));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn every_free_intrinsic_is_declared_with_docs_and_vice_versa() {
    let declared = declared_intrinsics();
    for row in all().filter(|r| r.form == Form::Free) {
        let (arity, docs) = declared.get(row.name).unwrap_or_else(|| {
            panic!(
                "`{}` is in the table but not declared in nvfp4_dsl::intrinsics (nvfp4-dsl/src/intrinsics/)",
                row.name
            )
        });
        assert_eq!(
            *arity,
            row.params.len(),
            "`{}`: the declaration and the table disagree on arity",
            row.name
        );
        assert!(docs.contains("PTX"), "`{}`: its docs must name its PTX", row.name);
    }
    for name in declared.keys() {
        if name == "inline_ptx_result" {
            continue;
        }
        assert!(
            all().any(|r| r.form == Form::Free && r.name == name),
            "`{name}` is declared but the compiler does not know it"
        );
    }
}

#[test]
fn every_method_intrinsic_is_in_the_documented_table() {
    let path = nvfp4_tests::repo_root().join("nvfp4-dsl/src/intrinsics/mod.rs");
    let text = std::fs::read_to_string(path).expect("intrinsics/mod.rs");
    let table: String = text
        .lines()
        .filter(|l| l.starts_with("//! |"))
        .collect::<Vec<_>>()
        .join("\n");
    for row in all().filter(|r| r.form != Form::Free) {
        let needle = match row.form {
            Form::Assoc(q) => format!("{q}::{}(", row.name),
            _ => format!(".{}(", row.name),
        };
        assert!(
            table.contains(&needle),
            "`{needle}` is an intrinsic but the method table of nvfp4_dsl::intrinsics does not list it"
        );
    }
}

#[test]
fn line_info_names_the_file_and_every_statement() {
    let (attr, item) = kernels_in(&nvfp4_tests::repo_root().join("nvfp4-kernels/src/samples.rs"))
        .into_iter()
        .next()
        .expect("a kernel");
    let opts = compiler::Options {
        line_info: Some("/src/samples.rs".into()),
        ..compiler::Options::default()
    };
    let devices = devices_of(&attr, &item);
    let out = compiler::compile(attr, &item, &devices, &opts).expect("compiles");
    let ptx = &out.variants[0].ptx[0].1;
    assert!(ptx.contains(".file 1 \"/src/samples.rs\"\n"), "{ptx}");
    let is_statement_comment = |l: &str| {
        let rest = l.trim_start().strip_prefix("// ").unwrap_or("");
        rest.split_once(':')
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let comments = ptx.lines().filter(|l| is_statement_comment(l)).count();
    let locs = ptx.lines().filter(|l| l.trim_start().starts_with(".loc 1 ")).count();
    assert!(
        locs > 0 && locs == comments,
        "one .loc per statement: {locs} vs {comments}\n{ptx}"
    );
    if let Some(ptxas) = nvfp4_tests::find_ptxas() {
        let dir = std::env::temp_dir().join(format!("nvfp4-lineinfo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("k.ptx");
        std::fs::write(&file, ptx).expect("write");
        let status = std::process::Command::new(ptxas)
            .args(["-arch=sm_90", "-lineinfo"])
            .arg(&file)
            .arg("-o")
            .arg(dir.join("k.cubin"))
            .status()
            .expect("ptxas runs");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(status.success(), "ptxas rejects the line info");
    }
}
