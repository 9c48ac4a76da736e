//! The driver: [`compile`] runs the stages over a kernel and its device
//! functions for every specialisation and target ([`crate::devices`] tells
//! the proc macro which device functions to fetch first).

use crate::attr::SpecValue;
use crate::check::Checked;
use crate::generics::{self, Instance, TypeParam};
use crate::spec::{launch_bounds, spec_name, specialisations};
use crate::target::Target;
use crate::typed::Types;
use crate::types::{self, Scalar};
use crate::{ast, attr, check, coalesce, lower, parse, ptx};
use proc_macro2::{Span, TokenStream};

/// Compiler options that do not come from the attribute.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Emit `.file`/`.loc` line information, naming this source file.
    pub line_info: Option<String>,
    /// The stages whose results go to [`Compiled::dump`].
    pub dump: Option<Dump>,
}

/// A stage whose result the compiler can show (`NVFP4_DSL_DUMP`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stage {
    /// The subset's syntax tree, after `parse`.
    Ast,
    /// The typed IR of each specialisation and target, after `lower`.
    Ir,
    /// The PTX of each specialisation and target.
    Ptx,
}

/// What to show: some stages, of every kernel or of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dump {
    pub stages: Vec<Stage>,
    pub kernel: Option<String>,
}

impl Dump {
    /// The name of the environment variable the proc macro reads.
    pub const VAR: &'static str = "NVFP4_DSL_DUMP";

    /// Parses `ast`, `ir`, `ptx`, or several separated by commas,
    /// optionally followed by `:kernel_name` (`ir,ptx:saxpy`).
    pub fn parse(value: &str) -> Result<Dump, String> {
        let (stages, kernel) = match value.split_once(':') {
            Some((s, k)) if !k.trim().is_empty() => (s, Some(k.trim().to_string())),
            _ => (value, None),
        };
        let mut out = Vec::new();
        for stage in stages.split(',').map(str::trim) {
            out.push(match stage {
                "ast" => Stage::Ast,
                "ir" => Stage::Ir,
                "ptx" => Stage::Ptx,
                other => {
                    return Err(format!(
                        "{}={value}: `{other}` is not a stage; write `ast`, `ir` or `ptx` (several separated by commas), optionally followed by `:kernel_name`",
                        Dump::VAR
                    ));
                }
            });
        }
        Ok(Dump { stages: out, kernel })
    }

    fn wants(&self, stage: Stage, kernel: &str) -> bool {
        self.stages.contains(&stage) && self.kernel.as_deref().is_none_or(|k| k == kernel)
    }
}

/// The PTX of one specialisation for every target.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Human-readable specialisation name (`small_k_true`, or `default`).
    pub spec_name: String,
    pub spec: Vec<(String, SpecValue)>,
    pub entry: String,
    /// The PTX per target, with the kernel's `debug_assert!`s and 2-D
    /// column checks.
    pub ptx: Vec<(Target, String)>,
    /// Where the kernel has such checks: the PTX per target without them,
    /// which the expansion takes where the user's crate builds without
    /// `debug_assertions` (`cargo build --release`).
    pub release_ptx: Option<Vec<String>>,
    /// Waits for the previous grid before touching its results: may be
    /// launched with programmatic stream serialization.
    pub programmatic: bool,
    /// May let the next kernel launch before its own wait returned
    /// ([`crate::ir::Function::may_trigger_before_wait`]).
    pub triggers_early: bool,
}

/// A function whose statements the PTX's comments name (`// 12: stmt` for
/// the kernel's, `// name:3: stmt` for an inlined device function's, lines
/// relative to the `fn`), so that the emulator can name the Rust line.
#[derive(Debug, Clone)]
pub struct SourceFn {
    /// The name the comments give it; empty for the kernel.
    pub name: String,
    /// Its file relative to the crate being compiled (`src/gemv.rs`), or as
    /// rustc names it when it is another crate's; `None` outside a proc
    /// macro.
    pub file: Option<String>,
    /// The line of its `fn` token.
    pub fn_line: usize,
}

/// The file of `span` relative to the crate being compiled, else as rustc
/// names it. Never part of the PTX: snapshots stay free of the build
/// machine's paths.
fn crate_file(span: Span) -> Option<String> {
    let file = span.local_file()?;
    let relative = std::env::var_os("CARGO_MANIFEST_DIR").and_then(|dir| {
        let absolute = std::env::current_dir().ok()?.join(&file);
        absolute.strip_prefix(dir).ok().map(std::path::Path::to_path_buf)
    });
    let shown = relative.unwrap_or(file);
    Some(shown.display().to_string().replace('\\', "/"))
}

/// A kernel parameter of a `#[device]` struct, with the C layout the
/// kernel reads it in (which the launcher's module asserts is rustc's).
#[derive(Debug, Clone)]
pub struct StructParam {
    pub param: String,
    /// Each field's name and byte offset.
    pub fields: Vec<(String, u64)>,
    pub size: u64,
    pub align: u64,
}

#[derive(Debug)]
pub struct Compiled {
    pub kernel: String,
    pub variants: Vec<Variant>,
    /// The functions whose statements the PTX comments name: the kernel
    /// first, then its device functions (see [`SourceFn`]).
    pub sources: Vec<SourceFn>,
    pub struct_params: Vec<StructParam>,
    /// The stages [`Options::dump`] asked for, as text (empty otherwise).
    pub dump: String,
}

/// Compiles `#[kernel(attr)] item`, with the device functions it calls
/// (each with the path it is called by).
pub fn compile(
    attr: TokenStream,
    item: &syn::ItemFn,
    devices: &[(String, syn::Item)],
    opts: &Options,
) -> syn::Result<Compiled> {
    let attr = attr::parse(attr)?;
    let type_params = generics::type_params(&item.sig.generics, "a kernel")?;
    let consts = parse::kernel_consts(&first_instance(item, &type_params)?.sig)?;
    // The kernel parsed and checked for each combination of types; a
    // kernel without type parameters first, so that its errors come before
    // those of its `specialize` lists.
    let mut instances: Vec<(Vec<Scalar>, ast::Kernel, Types)> = Vec::new();
    if type_params.is_empty() {
        let (kernel, checked) = instantiate(item, &[], &[], devices)?;
        instances.push((Vec::new(), kernel, checked));
    }
    let specs = specialisations(&attr, item, &type_params, &consts, devices)?;
    let name = item.sig.ident.to_string();
    let wants = |stage| opts.dump.as_ref().is_some_and(|d| d.wants(stage, &name));
    let mut dump = String::new();
    let launch_bounds = launch_bounds(&attr, devices)?;
    let mut variants = Vec::with_capacity(specs.len());
    for spec in specs {
        let spec_name = spec_name(&spec);
        let types: Vec<Scalar> = spec
            .iter()
            .filter_map(|(_, v)| match v {
                SpecValue::Ty(t) => Some(*t),
                _ => None,
            })
            .collect();
        let at = match instances.iter().position(|(t, _, _)| *t == types) {
            Some(at) => at,
            None => {
                let (kernel, checked) = instantiate(item, &type_params, &types, devices)
                    .map_err(|e| in_types(e, &name, &type_params, &types))?;
                instances.push((types, kernel, checked));
                instances.len() - 1
            }
        };
        let (_, kernel, types) = &instances[at];
        let mut debug_checks = false;
        let entry = if spec.is_empty() {
            kernel.name.clone()
        } else {
            format!("{}__{spec_name}", kernel.name)
        };
        let mut ptx = Vec::with_capacity(attr.targets.len());
        let mut release_ptx = Vec::new();
        let mut programmatic = false;
        let mut triggers_early = false;
        for (target, _) in &attr.targets {
            let lower_with = |debug_assertions| {
                lower::lower(
                    kernel,
                    types,
                    lower::LowerOptions {
                        target: *target,
                        spec: &spec,
                        entry: entry.clone(),
                        spec_name: spec_name.clone(),
                        launch_bounds,
                        line_info: opts.line_info.clone(),
                        debug_assertions,
                    },
                )
                .map(|mut func| {
                    coalesce::coalesce(&mut func.body);
                    func
                })
                .map_err(|e| in_spec(e, &kernel.name, &spec_name, *target, spec.is_empty()))
            };
            let func = lower_with(true)?;
            if func.ptx_version > types::MAX_PTX {
                return Err(kernel.name_span.error(format!(
                    "this kernel needs PTX ISA {}.{} for {}, above the {}.{} the supported drivers accept",
                    func.ptx_version / 10,
                    func.ptx_version % 10,
                    target.name(),
                    types::MAX_PTX / 10,
                    types::MAX_PTX % 10
                )));
            }
            programmatic |= func.programmatic;
            triggers_early |= func.may_trigger_before_wait();
            let text = ptx::emit(&func);
            let what = format!(
                "kernel `{}`, specialisation `{spec_name}`, target {}",
                kernel.name,
                target.name()
            );
            if wants(Stage::Ir) {
                dump += &format!("=== {} ir: {what} ===\n{func:#?}\n", Dump::VAR);
            }
            if wants(Stage::Ptx) {
                dump += &format!("=== {} ptx: {what} ===\n{text}\n", Dump::VAR);
            }
            ptx.push((*target, text));
            if func.debug_checks {
                debug_checks = true;
                release_ptx.push(ptx::emit(&lower_with(false)?));
            }
        }
        variants.push(Variant {
            spec_name,
            spec,
            entry,
            ptx,
            release_ptx: debug_checks.then_some(release_ptx),
            programmatic,
            triggers_early,
        });
    }
    if wants(Stage::Ast) {
        let asts: String = instances
            .iter()
            .map(|(_, kernel, _)| format!("=== {} ast: kernel `{name}` ===\n{kernel:#?}\n", Dump::VAR))
            .collect();
        dump = asts + &dump;
    }
    let first = instances.first().map(|(_, k, _)| k);
    let struct_params = first.map(struct_params).unwrap_or_default();
    let sources = source_fns(instances.iter().map(|(_, k, _)| k));
    Ok(Compiled {
        kernel: name,
        variants,
        sources,
        struct_params,
        dump,
    })
}

/// The launcher of a kernel that did not compile: its specialisations
/// without PTX, so that the host code naming `kernel::Kernel::launch`
/// still resolves and the one error shown is the kernel's own (rustc would
/// add "cannot find module" at every use). `None` where the attribute or
/// the signature has the error: then there is nothing to launch with.
pub fn launcher_only(attr: TokenStream, item: &syn::ItemFn, devices: &[(String, syn::Item)]) -> Option<Compiled> {
    let attr = attr::parse(attr).ok()?;
    let type_params = generics::type_params(&item.sig.generics, "a kernel").ok()?;
    let first = first_instance(item, &type_params).ok()?;
    parse::kernel_signature(&first.sig, devices).ok()?;
    let consts = parse::kernel_consts(&first.sig).ok()?;
    let specs = specialisations(&attr, item, &type_params, &consts, devices).ok()?;
    let kernel = item.sig.ident.to_string();
    let variants = specs
        .into_iter()
        .map(|spec| Variant {
            spec_name: spec_name(&spec),
            entry: kernel.clone(),
            spec,
            ptx: Vec::new(),
            release_ptx: None,
            programmatic: false,
            triggers_early: false,
        })
        .collect();
    Some(Compiled {
        kernel,
        variants,
        sources: Vec::new(),
        struct_params: Vec::new(),
        dump: String::new(),
    })
}

/// The layouts of `kernel`'s struct parameters (the same in every
/// instance: they do not depend on the types).
fn struct_params(kernel: &ast::Kernel) -> Vec<StructParam> {
    kernel
        .params
        .iter()
        .filter_map(|p| match &p.ty {
            types::Ty::Struct(st) => st.repr_c().ok().map(|layout| StructParam {
                param: p.name.clone(),
                fields: st.fields.iter().map(|(f, _)| f.clone()).zip(layout.offsets).collect(),
                size: layout.size,
                align: layout.align,
            }),
            _ => None,
        })
        .collect()
}

/// The source functions of the kernel's instances: the kernel's (the same
/// in every instance) and each device function's, a generic one's
/// instances listed once.
fn source_fns<'a>(instances: impl Iterator<Item = &'a ast::Kernel>) -> Vec<SourceFn> {
    let mut sources: Vec<SourceFn> = Vec::new();
    for (i, kernel) in instances.enumerate() {
        if i == 0 {
            sources.push(SourceFn {
                name: String::new(),
                file: crate_file(kernel.name_span.start),
                fn_line: kernel.fn_line,
            });
        }
        for d in &kernel.devices {
            if !sources.iter().any(|s| s.name == d.name) {
                sources.push(SourceFn {
                    name: d.name.clone(),
                    file: crate_file(d.name_span.start),
                    fn_line: d.fn_line,
                });
            }
        }
    }
    sources
}

/// The kernel for the first type of each type parameter's bound: what
/// finding its device functions and const generics reads (they do not
/// depend on the types).
pub(crate) fn first_instance(item: &syn::ItemFn, params: &[TypeParam]) -> syn::Result<syn::ItemFn> {
    let first: Vec<Scalar> = params.iter().map(|t| t.types()[0]).collect();
    generics::substitute(item, params, &first)
}

/// The kernel for the types `types` (one per type parameter), parsed and
/// checked, with the generic device functions instantiated for the types
/// its calls give them: each round of checking asks for those it has not
/// got, which the next parses (finitely many: the types are scalars).
fn instantiate(
    item: &syn::ItemFn,
    params: &[TypeParam],
    types: &[Scalar],
    devices: &[(String, syn::Item)],
) -> syn::Result<(ast::Kernel, Types)> {
    let item = generics::substitute(item, params, types)?;
    let mut instances: Vec<Instance> = Vec::new();
    loop {
        // The parse's errors first, then the check's (which goes on past
        // the statements that failed to parse).
        let (kernel, failed) = parse::parse_kernel_partial(&item, devices, &instances)?;
        let checked = check::check(&kernel);
        if let Ok(Checked::Instantiate(more)) = checked {
            for m in more {
                if !instances.contains(&m) {
                    instances.push(m);
                }
            }
            continue;
        }
        if let Some(e) = ast::combine(failed.into_iter().chain(checked.as_ref().err().cloned())) {
            return Err(e);
        }
        match checked? {
            Checked::Types(t) => return Ok((kernel, t)),
            Checked::Incomplete | Checked::Instantiate(_) => {
                unreachable!("an incomplete kernel has its parse's errors; instantiations are asked for above")
            }
        }
    }
}

/// Adds which types an error arose for.
fn in_types(e: syn::Error, kernel: &str, params: &[TypeParam], types: &[Scalar]) -> syn::Error {
    let with: Vec<String> = params
        .iter()
        .zip(types)
        .map(|(p, t)| format!("{} = {}", p.name, t.rust_name()))
        .collect();
    let mut out: Option<syn::Error> = None;
    for part in e {
        let new = syn::Error::new(
            part.span(),
            format!("{part} (kernel `{kernel}` for {})", with.join(", ")),
        );
        match &mut out {
            Some(o) => o.combine(new),
            None => out = Some(new),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(Span::call_site(), "unknown error"))
}

/// Adds which specialisation and target an error arose in, when it matters.
fn in_spec(e: syn::Error, kernel: &str, spec: &str, target: Target, plain: bool) -> syn::Error {
    let mut out: Option<syn::Error> = None;
    for part in e {
        let msg = if plain {
            format!("{part} (kernel `{kernel}`, target {})", target.name())
        } else {
            format!(
                "{part} (kernel `{kernel}`, specialisation `{spec}`, target {})",
                target.name()
            )
        };
        let new = syn::Error::new(part.span(), msg);
        match &mut out {
            Some(o) => o.combine(new),
            None => out = Some(new),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(Span::call_site(), "unknown error"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile_src(attr: &str, src: &str) -> syn::Result<Compiled> {
        let item: syn::ItemFn = syn::parse_str(src).expect("test source parses");
        compile(attr.parse().expect("attr tokens"), &item, &[], &Options::default())
    }

    const SAXPY: &str = "fn saxpy(x: &[f32], y: &mut [f32], a: f32, n: u32) {
        let i = block_idx_x() * block_dim_x() + thread_idx_x();
        if i < n {
            y[i as usize] = a * x[i as usize] + y[i as usize];
        }
    }";

    #[test]
    fn compiles_every_specialisation_and_target() {
        let c = compile_src(
            "targets(sm_90, sm_100a), specialize(N = [1, 2], B = [true, false])",
            "fn k<const N: u32, const B: bool>(y: &mut [u32]) { if B { y[0] = N; } }",
        )
        .unwrap();
        let names: Vec<_> = c.variants.iter().map(|v| v.entry.as_str()).collect();
        assert_eq!(
            names,
            ["k__n_1_b_true", "k__n_1_b_false", "k__n_2_b_true", "k__n_2_b_false"]
        );
        for v in &c.variants {
            assert_eq!(v.ptx.len(), 2);
            assert!(v.ptx[0].1.contains(".target sm_90"));
            assert!(v.ptx[1].1.contains(".target sm_100a"));
        }
        // `if B` folds away: the false specialisation stores nothing.
        assert!(c.variants[0].ptx[0].1.contains("st.global.u32"));
        assert!(!c.variants[1].ptx[0].1.contains("st.global"));
    }

    #[test]
    fn same_source_gives_identical_ptx() {
        let a = compile_src("targets(sm_90)", SAXPY).unwrap();
        let b = compile_src("targets(sm_90)", SAXPY).unwrap();
        assert_eq!(a.variants[0].ptx, b.variants[0].ptx);
    }

    #[test]
    fn missing_or_foreign_specialisations_are_errors() {
        let e = compile_src("targets(sm_90)", "fn k<const N: u32>() {}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("list the values of `N`"), "{e}");
        let e = compile_src("targets(sm_90), specialize(M = [1])", "fn k() {}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a const generic or a type parameter"), "{e}");
        let e = compile_src("targets(sm_90), specialize(N = [300])", "fn k<const N: bool>() {}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit"), "{e}");
    }

    const SCALE: &str = "fn scale<T: Float>(x: &[T], y: &mut [T], a: f32) {
        let i = thread_idx_x() as usize;
        y[i] = T::from_f32(x[i].to_f32() * a);
    }";

    #[test]
    fn a_generic_kernel_is_compiled_for_each_listed_type() {
        let c = compile_src("targets(sm_90), specialize(T = [f16, bf16, f32])", SCALE).unwrap();
        let names: Vec<_> = c.variants.iter().map(|v| v.entry.as_str()).collect();
        assert_eq!(names, ["scale__t_f16", "scale__t_bf16", "scale__t_f32"]);
        let ptx = |i: usize| c.variants[i].ptx[0].1.clone();
        assert!(ptx(0).contains("cvt.f32.f16") && ptx(0).contains("cvt.rn.f16.f32"));
        assert!(ptx(1).contains("shl.b32") && ptx(1).contains("cvt.rn.bf16.f32"));
        assert!(ptx(2).contains("ld.global.f32") && !ptx(2).contains("cvt.f32") && !ptx(2).contains("cvt.rn"));
    }

    #[test]
    fn type_parameters_and_their_lists_are_checked() {
        let e = |attr: &str, src: &str| compile_src(attr, src).unwrap_err().to_string();
        assert!(e("targets(sm_90)", "fn k<T>() {}").contains("needs a bound, a trait of the prelude: `T: Float`"));
        assert!(e("targets(sm_90)", "fn k<T: Copy>() {}").contains("`Copy` is not a trait kernels compile"));
        assert!(e("targets(sm_90)", "fn k<T: Float>() {}").contains("specialize(T = [f16, bf16])"));
        let wrong = e("targets(sm_90), specialize(T = [1])", "fn k<T: Float>() {}");
        assert!(wrong.contains("`T` is a type parameter: list types"), "{wrong}");
        let int = e("targets(sm_90), specialize(T = [u32])", "fn k<T: Float>() {}");
        assert!(int.contains("`u32` is not `Float`"), "{int}");
        let item = e(
            "targets(sm_90), specialize(T = [f32])",
            "fn k<T: Float>(y: &mut [T]) { y[0] = T::sqrt(y[0]); }",
        );
        assert!(
            item.contains("which has no `sqrt`") && item.contains("`T::from_f32`"),
            "{item}"
        );
    }

    fn compile_with(attr: &str, src: &str, devices: &[&str]) -> syn::Result<Compiled> {
        let item: syn::ItemFn = syn::parse_str(src).expect("test source parses");
        let devices: Vec<(String, syn::Item)> = devices
            .iter()
            .map(|d| {
                let f: syn::ItemFn = syn::parse_str(d).expect("device source parses");
                (f.sig.ident.to_string(), syn::Item::Fn(f))
            })
            .collect();
        compile(attr.parse().expect("attr tokens"), &item, &devices, &Options::default())
    }

    const WIDEN: &str = "fn widen<T: Float>(v: T, s: f32) -> f32 { v.to_f32() * s }";

    #[test]
    fn a_generic_device_function_is_instantiated_for_each_inferred_type() {
        let c = compile_with(
            "targets(sm_90)",
            "fn k(h: &[f16], b: &[bf16], y: &mut [f32]) {
                y[0] = widen(h[0], 2.0) + widen(b[0], 2.0) + widen::<f32>(y[1], 1.0);
            }",
            &[WIDEN],
        )
        .unwrap();
        let ptx = &c.variants[0].ptx[0].1;
        assert!(ptx.contains("cvt.f32.f16") && ptx.contains("shl.b32"), "{ptx}");
        let e = compile_with(
            "targets(sm_90)",
            "fn k(y: &mut [u32]) { y[0] = widen(y[1], 2.0) as u32; }",
            &[WIDEN],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`T` of `widen` would be `u32`, which is not `Float`"), "{e}");
        // From the type the result must have, as rustc infers it.
        let c = compile_with(
            "targets(sm_90)",
            "fn k(y: &mut [bf16]) { let h: f16 = half_of(3.0); y[0] = half_of(h.to_f32()); }",
            &["fn half_of<T: Float>(v: f32) -> T { T::from_f32(v * 0.5) }"],
        )
        .unwrap();
        let ptx = &c.variants[0].ptx[0].1;
        assert!(
            ptx.contains("cvt.rn.f16.f32") && ptx.contains("cvt.rn.bf16.f32"),
            "{ptx}"
        );
        let e = compile_with(
            "targets(sm_90)",
            "fn k(y: &mut [f32]) { y[0] = zero(); }",
            &["fn zero<T: Float>() -> f32 { T::from_f32(0.0).to_f32() }"],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("cannot infer the type `T` of `zero`") && e.contains("zero::<f32>(..)"),
            "{e}"
        );
    }

    #[test]
    fn the_dump_shows_the_stages_asked_for() {
        let item: syn::ItemFn = syn::parse_str(SAXPY).expect("test source parses");
        let dump = Dump::parse("ast,ptx:saxpy").unwrap();
        let opts = Options {
            dump: Some(dump),
            ..Options::default()
        };
        let c = compile("targets(sm_90)".parse().unwrap(), &item, &[], &opts).unwrap();
        assert!(c.dump.contains("NVFP4_DSL_DUMP ast: kernel `saxpy`"), "{}", c.dump);
        assert!(
            c.dump
                .contains("NVFP4_DSL_DUMP ptx: kernel `saxpy`, specialisation `default`, target sm_90")
        );
        assert!(c.dump.contains(".entry saxpy") && !c.dump.contains(" ir: "));
        let other = Options {
            dump: Some(Dump::parse("ir:gemv").unwrap()),
            ..Options::default()
        };
        assert!(
            compile("targets(sm_90)".parse().unwrap(), &item, &[], &other)
                .unwrap()
                .dump
                .is_empty()
        );
        let ir = Options {
            dump: Some(Dump::parse("ir").unwrap()),
            ..Options::default()
        };
        let c = compile("targets(sm_90)".parse().unwrap(), &item, &[], &ir).unwrap();
        assert!(
            c.dump.contains("NVFP4_DSL_DUMP ir: kernel `saxpy`") && c.dump.contains("Inst("),
            "{}",
            c.dump
        );
        let e = Dump::parse("ast,llvm").unwrap_err();
        assert!(e.contains("`llvm` is not a stage"), "{e}");
    }

    #[test]
    fn launch_bounds_are_checked() {
        let c = compile_src("targets(sm_90), launch_bounds(128, 2)", SAXPY).unwrap();
        assert!(c.variants[0].ptx[0].1.contains(".maxntid 128, 1, 1\n.minnctapersm 2\n"));
        let e = compile_src("targets(sm_90), launch_bounds(2048)", SAXPY)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1..=1024"), "{e}");
        let e = compile_src("targets(sm_90), launch_bounds(256, 0)", SAXPY)
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive `u32`"), "{e}");
    }

    #[test]
    fn versions_follow_the_target() {
        let c = compile_src("targets(sm_90, sm_100a)", SAXPY).unwrap();
        assert!(c.variants[0].ptx[0].1.contains(".version 7.8\n"));
        assert!(c.variants[0].ptx[1].1.contains(".version 8.6\n"));
    }
}
