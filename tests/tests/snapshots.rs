//! Pins the full PTX of every kernel x specialisation x target in
//! `snapshots/` (review changes with `cargo insta review`).

use nvfp4_kernels::registry::all_variants;
use nvfp4_tests::{snapshot_dir, snapshot_name};
use std::collections::BTreeSet;

#[test]
fn every_variant_matches_its_snapshot() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshot_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        for v in all_variants() {
            for (target, ptx) in v.ptx {
                insta::assert_snapshot!(snapshot_name(v, *target), ptx);
            }
        }
    });
}

#[test]
fn no_snapshot_is_orphaned() {
    let expected: BTreeSet<String> = all_variants()
        .iter()
        .flat_map(|v| v.ptx.iter().map(move |(t, _)| format!("{}.snap", snapshot_name(v, *t))))
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
