//! Helpers shared by the workspace tests: the sources of the kernels that
//! [`nvfp4_kernels::registry`] lists, the snapshot files, and the ptxas to
//! assemble them with. The tests are this package's `tests/*.rs` (cargo
//! finds them; `cargo test -p nvfp4-tests --test <name>` runs one), its
//! trybuild cases `ui/*.rs`, its compile-time bench `benches/compile.rs`.

pub mod approx;
pub mod atomic_kernels;
pub mod atomics;
pub mod bulk_store;
pub mod cluster_copy;
pub mod div_ceil;
pub mod flag_spin;
pub mod generic_ops;
pub mod program;
pub mod shuffle64;
pub mod store_async;
pub mod struct_params;

use nvfp4_dsl::{Target, Variant};
use nvfp4_kernels::registry;
use std::path::{Path, PathBuf};

/// Four emulator schedules a small kernel's test runs under: the
/// sequential one, two adversarial ones (one starving a warp), a priority
/// one.
pub fn four_schedules() -> [nvfp4_dsl::emu::Options; 4] {
    use nvfp4_dsl::emu::Options;
    [
        Options::sequential(),
        Options::adversarial(1),
        Options::adversarial(2).with_starvation(),
        Options::priority(3),
    ]
}

/// The items of a source file.
pub fn source_items(path: &Path) -> Vec<syn::Item> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    syn::parse_file(&text).expect("the source parses").items
}

/// Every `#[device]` item (function, struct, const) of the kernel sources
/// (their names are unique, so a kernel's uses find them by name).
pub fn device_items() -> Vec<syn::Item> {
    registry::SOURCES
        .iter()
        .flat_map(|source| source_items(&source.file()))
        .filter(|item| {
            let attrs = match item {
                syn::Item::Fn(f) => &f.attrs,
                syn::Item::Struct(s) => &s.attrs,
                syn::Item::Const(c) => &c.attrs,
                _ => return false,
            };
            attrs.iter().any(|a| a.path().is_ident("device"))
        })
        .collect()
}

/// The `#[device]` item named `name`, for the key a kernel fetches it by.
pub fn device_item(items: &[syn::Item], key: &str) -> syn::Item {
    let name = key.rsplit("::").next().expect("a name");
    items
        .iter()
        .find(|item| match item {
            syn::Item::Fn(f) => f.sig.ident == name,
            syn::Item::Struct(s) => s.ident == name,
            syn::Item::Const(c) => c.ident == name,
            _ => false,
        })
        .unwrap_or_else(|| panic!("no #[device] item `{name}`"))
        .clone()
}

/// The snapshot name of one kernel x specialisation x target.
pub fn snapshot_name(v: &Variant, target: Target) -> String {
    format!("{}__{}__{}", v.kernel, v.spec, target.name())
}

/// The target a snapshot's file stem names: `<kernel>__<spec>__<target>`,
/// with `__release` after it for a release build's PTX (see
/// `tests/tests/snapshots.rs`).
pub fn snapshot_target(stem: &str) -> &str {
    let stem = stem.strip_suffix("__release").unwrap_or(stem);
    stem.rsplit("__").next().unwrap_or(stem)
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The folder of reviewed PTX snapshots.
pub fn snapshot_dir() -> PathBuf {
    repo_root().join("snapshots")
}

/// The text an insta snapshot file holds (after its header).
pub fn snapshot_body(file: &str) -> Option<&str> {
    let rest = file.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(&rest[end + 5..])
}

/// The ptxas to assemble with: `$PTXAS`, the one the test script installs
/// in `.tools/`, or one on the `PATH`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let local = repo_root().join(".tools/cuda/bin/ptxas");
    if local.is_file() {
        return Some(local);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file())
}

/// The nvdisasm to read SASS with: `$NVDISASM`, the one the test script
/// installs in `.tools/`, or one on the `PATH`.
pub fn find_nvdisasm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVDISASM") {
        return Some(PathBuf::from(p));
    }
    let local = repo_root().join(".tools/cuda/bin/nvdisasm");
    if local.is_file() {
        return Some(local);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvdisasm"))
        .find(|p| p.is_file())
}

/// Whether this run is CI's (where a missing tool is a failure, not a skip).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Assembles `ptx` for `target` (`sm_90`, ...) with `ptxas`; the error is
/// ptxas's message.
pub fn assemble(ptxas: &Path, ptx: &str, target: &str) -> Result<(), String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "nvfp4-assemble-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("k.ptx");
    std::fs::write(&file, ptx).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={target}"))
        .arg(&file)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The sm_90 kernel of GPU fuzz seed 6003704, reduced: thread i stores
/// `i32::MIN | ((0x882c6397 | inp[i]) >> 1)` (an arithmetic shift) to
/// `out[i]`; Rust's result always has the sign bit set. Parameters as the
/// fuzzer's kernels: `inp`, its length, `out`, its length.
pub fn sign_bit_or_kernel() -> String {
    ".version 7.8\n.target sm_90\n.address_size 64\n\
     .visible .entry fuzz(.param .u64 inp, .param .u64 inp_len, .param .u64 out, .param .u64 out_len)\n{\n\
     .reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n\
     ld.param.u64 %rd1, [inp];\ncvta.to.global.u64 %rd2, %rd1;\n\
     ld.param.u64 %rd3, [out];\ncvta.to.global.u64 %rd4, %rd3;\n\
     mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r4, %r2, %r3, %r1;\n\
     mul.wide.u32 %rd5, %r4, 4;\nadd.s64 %rd6, %rd2, %rd5;\nld.global.u32 %r5, [%rd6];\n\
     or.b32 %r6, -2010356841, %r5;\nshr.s32 %r6, %r6, 1;\nor.b32 %r7, -2147483648, %r6;\n\
     add.s64 %rd7, %rd4, %rd5;\nst.global.u32 [%rd7], %r7;\nret;\n}\n"
        .to_string()
}
