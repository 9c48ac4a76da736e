//! Assembles every PTX snapshot with ptxas for its target. Without ptxas the
//! test is skipped locally and fails in CI (`CI=true`).

use nvfp4_tests::{find_ptxas, in_ci, snapshot_body, snapshot_dir, snapshot_target};
use std::process::Command;

#[test]
fn every_snapshot_assembles_for_its_target() {
    let Some(ptxas) = find_ptxas() else {
        assert!(
            !in_ci(),
            "ptxas is required in CI; the test script installs it into .tools/"
        );
        eprintln!("ptxas not found: skipping (run the README's test command to install it)");
        return;
    };
    let dir = snapshot_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("snapshots/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "snap"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no snapshots in {}", dir.display());
    let out_dir = std::env::temp_dir().join(format!("nvfp4-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).expect("temp dir");
    let mut failures = Vec::new();
    for file in &files {
        let name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 name")
            .to_string();
        let target = snapshot_target(&name).to_string();
        let text = std::fs::read_to_string(file).expect("readable snapshot");
        let body = snapshot_body(&text).unwrap_or_else(|| panic!("{name}: not an insta snapshot"));
        let ptx = out_dir.join(format!("{name}.ptx"));
        std::fs::write(&ptx, body).expect("write ptx");
        let out = Command::new(&ptxas)
            .arg(format!("-arch={target}"))
            .arg(&ptx)
            .arg("-o")
            .arg(out_dir.join(format!("{name}.cubin")))
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", ptxas.display()));
        if !out.status.success() {
            failures.push(format!("{name}:\n{}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(failures.is_empty(), "ptxas rejected:\n{}", failures.join("\n"));
    eprintln!("{} snapshots assembled with {}", files.len(), ptxas.display());
}
