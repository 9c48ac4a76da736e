//! Pins the full PTX of every kernel x specialisation x target in
//! `snapshots/` (review changes with `cargo insta review`): a kernel whose
//! debug build differs (`debug_assert!`s, 2-D column checks) has its
//! release build's PTX beside it as `<name>__release`, whichever profile
//! the test runs in.

use nvfp4_dsl::{Target, Variant};
use nvfp4_kernels::registry::all_variants;
use nvfp4_tests::{snapshot_dir, snapshot_name};
use std::collections::BTreeSet;

/// Every snapshot of `v`: its name and PTX.
fn snapshots(v: &Variant) -> Vec<(String, &'static str)> {
    let named = |ptx: &'static [(Target, &'static str)], suffix: &str| {
        ptx.iter()
            .map(|(t, text)| (format!("{}{suffix}", snapshot_name(v, *t)), *text))
            .collect::<Vec<_>>()
    };
    match v.builds {
        Some((debug, release)) => [named(debug, ""), named(release, "__release")].concat(),
        None => named(v.ptx, ""),
    }
}

#[test]
fn every_variant_matches_its_snapshot() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshot_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        for v in all_variants() {
            for (name, ptx) in snapshots(v) {
                insta::assert_snapshot!(name, ptx);
            }
        }
    });
}

#[test]
fn no_snapshot_is_orphaned() {
    let expected: BTreeSet<String> = all_variants()
        .iter()
        .flat_map(|v| snapshots(v).into_iter().map(|(name, _)| format!("{name}.snap")))
        .collect();
    let present: BTreeSet<String> = std::fs::read_dir(snapshot_dir())
        .expect("snapshots/ exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".snap"))
        .collect();
    let orphans: Vec<_> = present.difference(&expected).collect();
    assert!(
        orphans.is_empty(),
        "snapshots without a kernel variant (delete them): {orphans:?}"
    );
}
