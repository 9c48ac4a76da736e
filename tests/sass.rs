//! The Blackwell GEMM's machine code holds the block-scaled tensor-core
//! MMA: each GEMM snapshot is assembled for sm_100a with ptxas and
//! disassembled with nvdisasm. Skipped locally without the tools, fails in
//! CI (`CI=true`).

use nvfp4_tests::{find_nvdisasm, find_ptxas, in_ci, snapshot_body, snapshot_dir};
use std::process::Command;

#[test]
fn the_gemm_sass_holds_block_scaled_tensor_core_mma() {
    let (Some(ptxas), Some(nvdisasm)) = (find_ptxas(), find_nvdisasm()) else {
        assert!(
            !in_ci(),
            "ptxas and nvdisasm are required in CI; the test script installs them into .tools/"
        );
        eprintln!("ptxas or nvdisasm not found: skipping");
        return;
    };
    let dir = std::env::temp_dir().join(format!("nvfp4-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut checked = 0;
    for entry in std::fs::read_dir(snapshot_dir()).expect("snapshots/") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !name.starts_with("gemm_nvfp4__") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("snapshot");
        let ptx = dir.join("gemm.ptx");
        let cubin = dir.join("gemm.cubin");
        std::fs::write(&ptx, snapshot_body(&text).expect("insta snapshot")).expect("write");
        let status = Command::new(&ptxas)
            .arg("-arch=sm_100a")
            .arg(&ptx)
            .arg("-o")
            .arg(&cubin)
            .status()
            .expect("ptxas runs");
        assert!(status.success(), "{name}: ptxas failed");
        let out = Command::new(&nvdisasm)
            .arg("-c")
            .arg(&cubin)
            .output()
            .expect("nvdisasm runs");
        assert!(out.status.success(), "{name}: nvdisasm failed");
        let sass = String::from_utf8_lossy(&out.stdout);
        for needle in ["UTCOMMA", "UTCCP", "UTMALDG", "UBLKCP", "LDTM"] {
            assert!(sass.contains(needle), "{name}: the SASS has no {needle}");
        }
        let mma = sass.matches("UTCOMMA").count();
        assert!(mma >= 4, "{name}: {mma} UTCOMMA; four per 256-wide K step expected");
        checked += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 1, "no GEMM snapshot found");
}
