//! The GEMMs' machine code holds their tensor-core MMAs: each GEMM snapshot
//! is assembled with ptxas for its target and disassembled with nvdisasm.
//! The Hopper GEMM's ptxas report must also be clean: no spills, no local
//! memory, and none of the wgmma diagnostics that mean a serialised or
//! fenced-by-the-compiler pipeline. Skipped locally without the tools,
//! fails in CI (`CI=true`).

use nvfp4_tests::{find_nvdisasm, find_ptxas, in_ci, sign_bit_or_kernel, snapshot_body, snapshot_dir, snapshot_target};
use std::path::{Path, PathBuf};
use std::process::Command;

/// ptxas's verbose report and the SASS of one snapshot.
struct Assembled {
    report: String,
    sass: String,
    ptx: String,
}

/// Assembles every snapshot whose name starts with `prefix` for its target
/// (the name's suffix); `None` when the tools are missing outside CI.
fn assemble(prefix: &str) -> Option<Vec<(String, Assembled)>> {
    let (Some(ptxas), Some(nvdisasm)) = (find_ptxas(), find_nvdisasm()) else {
        assert!(
            !in_ci(),
            "ptxas and nvdisasm are required in CI; the test script installs them into .tools/"
        );
        eprintln!("ptxas or nvdisasm not found: skipping");
        return None;
    };
    let dir = std::env::temp_dir().join(format!("nvfp4-sass-{prefix}-{}", std::process::id()));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(snapshot_dir())
        .expect("snapshots/")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let target = snapshot_target(&name).to_string();
        let text = std::fs::read_to_string(&path).expect("snapshot");
        let ptx = snapshot_body(&text).expect("insta snapshot").to_string();
        let assembled = assemble_ptx(&ptxas, &nvdisasm, &dir, &name, &target, ptx);
        out.push((name, assembled));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Some(out)
}

/// Assembles `ptx` for `target` in `dir` and disassembles it.
fn assemble_ptx(ptxas: &Path, nvdisasm: &Path, dir: &Path, name: &str, target: &str, ptx: String) -> Assembled {
    std::fs::create_dir_all(dir).expect("temp dir");
    let ptx_file = dir.join("kernel.ptx");
    let cubin = dir.join("kernel.cubin");
    std::fs::write(&ptx_file, &ptx).expect("write");
    let asm = Command::new(ptxas)
        .arg(format!("-arch={target}"))
        .arg("-v")
        .arg(&ptx_file)
        .arg("-o")
        .arg(&cubin)
        .output()
        .expect("ptxas runs");
    assert!(asm.status.success(), "{name}: ptxas failed");
    let dis = Command::new(nvdisasm)
        .arg("-c")
        .arg(&cubin)
        .output()
        .expect("nvdisasm runs");
    assert!(dis.status.success(), "{name}: nvdisasm failed");
    Assembled {
        report: String::from_utf8_lossy(&asm.stderr).into_owned() + &String::from_utf8_lossy(&asm.stdout),
        sass: String::from_utf8_lossy(&dis.stdout).into_owned(),
        ptx,
    }
}

#[test]
fn the_blackwell_gemm_sass_holds_block_scaled_tensor_core_mma() {
    let Some(all) = assemble("gemm_nvfp4__") else { return };
    assert!(!all.is_empty(), "no sm_100a GEMM snapshot found");
    for (name, a) in &all {
        for needle in ["UTCOMMA", "UTCCP", "UTMALDG", "UBLKCP", "LDTM"] {
            assert!(a.sass.contains(needle), "{name}: the SASS has no {needle}");
        }
        let mma = a.sass.matches("UTCOMMA").count();
        assert!(mma >= 4, "{name}: {mma} UTCOMMA; four per 256-wide K step expected");
    }
}

#[test]
fn the_hopper_gemm_sass_holds_wgmma_with_a_clean_register_report() {
    let Some(all) = assemble("gemm_nvfp4_sm90__") else {
        return;
    };
    assert!(!all.is_empty(), "no sm_90a GEMM snapshot found");
    for (name, a) in &all {
        // One m64n128k16 per K step of 16 and m64 block: 8 per stage and block.
        let blocks: usize = if name.contains("blocks_2") { 2 } else { 1 };
        let mma = a.sass.matches("HGMMA.64x128x16.F32").count();
        assert!(
            mma >= 8 * blocks,
            "{name}: {mma} HGMMA.64x128x16.F32; 8 per stage and block expected"
        );
        for needle in ["UBLKCP", "SYNCS"] {
            assert!(a.sass.contains(needle), "{name}: the SASS has no {needle}");
        }
        for bad in ["LDL", "STL"] {
            assert!(!a.sass.contains(bad), "{name}: the SASS uses local memory ({bad})");
        }
        assert!(!a.ptx.contains(".local"), "{name}: the PTX declares local memory");
        assert!(
            a.report.contains("0 bytes spill stores, 0 bytes spill loads"),
            "{name}: ptxas spills registers:\n{}",
            a.report
        );
        // C7508: setmaxnreg ignored; C7511/C7515: wgmma serialised (too few
        // registers, accumulators touched in flight); C7519: ptxas had to
        // insert a warpgroup fence the PTX lacks.
        for code in ["C7508", "C7511", "C7515", "C7519"] {
            assert!(!a.report.contains(code), "{name}: ptxas reports {code}:\n{}", a.report);
        }
    }
}

#[test]
fn the_hopper_gemm_decodes_a_k_step_of_pre_arranged_weights_in_twelve_instructions() {
    let Some(all) = assemble("gemm_nvfp4_sm90__blocks_1_") else {
        return;
    };
    for (name, a) in &all {
        // The opcodes from the main loop's first HGMMA to its last (4 stages
        // of 8 K steps, unrolled): per K step, the decode of the step's
        // pre-arranged word (LOP3, SHF, PRMT), the scale multiplies (HMUL2)
        // and a quarter of a scale conversion (F2FP). Measured at the
        // commit that pinned it (CUDA 13.0 ptxas): 11.7-12.0 decode
        // instructions and 20.8 in all per step, against about 25 in all
        // with the plain layout's per-pair decode.
        let ops: Vec<&str> = a
            .sass
            .lines()
            .filter_map(|l| {
                let after = l.split("*/").nth(1)?.trim_start();
                let after = if after.starts_with('@') {
                    after.split_whitespace().nth(1)?
                } else {
                    after
                };
                after.split(|c: char| c == '.' || c.is_whitespace()).next()
            })
            .filter(|op| !op.is_empty())
            .collect();
        let mma: Vec<usize> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| **o == "HGMMA")
            .map(|(i, _)| i)
            .collect();
        assert!(mma.len() >= 32, "{name}: {} HGMMA", mma.len());
        let steps = mma.len() as f64;
        let span = &ops[mma[0]..=mma[mma.len() - 1]];
        let count = |names: &[&str]| span.iter().filter(|o| names.contains(o)).count() as f64;
        let decode = count(&["LOP3", "SHF", "PRMT", "HMUL2", "F2FP"]) / steps;
        let multiplies = count(&["HMUL2"]) / steps;
        let all = span.len() as f64 / steps;
        assert!(
            decode <= 12.5,
            "{name}: {decode:.2} decode instructions per K step of 16"
        );
        assert!(multiplies <= 4.0, "{name}: {multiplies:.2} HMUL2 per K step of 16");
        assert!(all <= 21.5, "{name}: {all:.2} instructions per K step of 16");
    }
}

/// GPU fuzz seed 6003704: the H100 gave `0x441631cb` where Rust and the
/// emulator give `0xc41631cb` for `i32::MIN | ((C | x) >> 1)`, C negative.
/// Our PTX is `or.b32`, `shr.s32`, `or.b32`; ptxas 13.0.88 knows the
/// shifted value is negative and still writes the outer `or` as an add
/// (`LEA.HI.SX32 R, R, 0x80000000, 0x1f`), which carries the sign bit
/// out. `tests/gpu/generated.rs` lists the seed as a known driver difference and
/// `ptxas_adds_where_an_or_of_the_sign_bit_is_written` runs this kernel on
/// the GPU. When this test fails, ptxas writes the `or` again: take the
/// seed off the list.
#[test]
fn ptxas_writes_an_or_of_a_known_negative_shift_and_the_sign_bit_as_an_add() {
    let (Some(ptxas), Some(nvdisasm)) = (find_ptxas(), find_nvdisasm()) else {
        assert!(!in_ci(), "ptxas and nvdisasm are required in CI");
        return;
    };
    let dir = std::env::temp_dir().join(format!("nvfp4-sass-or-{}", std::process::id()));
    let a = assemble_ptx(&ptxas, &nvdisasm, &dir, "sign-bit or", "sm_90", sign_bit_or_kernel());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        a.sass.contains("LEA.HI.SX32") && a.sass.contains("0x80000000, 0x1f"),
        "ptxas no longer adds the sign bit:\n{}",
        a.sass
    );
}
