//! Every error of the asynchronous model of `wgmma` (register hazards,
//! operands, shared memory overwritten while read, fences and completion,
//! warps and warpgroups, descriptors, unsupported forms) with its kernel,
//! block, thread and line.

use super::*;

/// The kernel of `c` with `text` inserted at marker `at`, and the error it
/// must produce.
fn fail_at(c: &Cfg, at: &str, text: &str) -> (EmuError, String) {
    let marker = format!("\t// @{at}\n");
    let src = kernel(c).replace(&marker, &format!("{text}{marker}"));
    (fail_src(c, &src, c.desc_hi(c.m()), c.desc_hi(c.n), 128), src)
}

/// The error of `src`, run in the sequential schedule: most of these
/// errors are met by every warp, and the tests name the one that meets it
/// first when warp 0 runs first.
fn fail_src(c: &Cfg, src: &str, a_hi: u64, b_hi: u64, threads: u32) -> EmuError {
    match run_opts(
        c,
        &Data::random(c, 1),
        src,
        (a_hi, b_hi),
        threads,
        &Options::sequential(),
    ) {
        Ok(_) => panic!("the kernel ran:\n{src}"),
        Err(e) => e,
    }
}

/// The line of the `k`-th `wgmma.mma_async` (0-based).
fn mma_line(src: &str, k: usize) -> u32 {
    src.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("wgmma.mma_async"))
        .nth(k)
        .expect("an mma")
        .0 as u32
        + 1
}

const MMA: &str = "wgmma.mma_async";

#[test]
fn register_hazards_are_reported() {
    let c = Cfg::new(8, Kind::F16, false, 128, 2);
    // The accumulator read before the wait: named with the last wgmma
    // that writes it.
    let (e, src) = fail_at(&c, "before_wait", "\tmov.b32 %r300, %f1;\n");
    assert_error(
        &e,
        &src,
        "mov.b32 %r300, %f1",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "read of wgmma accumulator %f1 before the wgmma.wait_group that completes the wgmma.mma_async at line {}",
            mma_line(&src, 1)
        ),
    );
    // ... before it is even committed.
    let (e, src) = fail_at(&c, "after_mma", "\tst.global.f32 [%rd12], %f3;\n");
    assert_error(
        &e,
        &src,
        "st.global.f32 [%rd12], %f3",
        (0, 0, 0),
        (0, 0, 0),
        "no wgmma.commit_group has committed it yet",
    );
    // An A register overwritten.
    let (e, src) = fail_at(&c, "before_wait", "\tmov.b32 %a2, 0;\n");
    assert_error(
        &e,
        &src,
        "mov.b32 %a2, 0",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "register %a2, an A operand of the pending wgmma.mma_async at line {}, overwritten before the wgmma.wait_group that completes it",
            mma_line(&src, 0)
        ),
    );
    // ... and read.
    let (e, src) = fail_at(&c, "before_wait", "\tadd.u32 %r300, %a5, 1;\n");
    assert_error(
        &e,
        &src,
        "add.u32 %r300",
        (0, 0, 0),
        (0, 0, 0),
        "read of register %a5, an A operand of the pending wgmma.mma_async",
    );
    // The accumulator overwritten.
    let (e, src) = fail_at(&c, "before_wait", "\tmov.f32 %f2, 0f3F800000;\n");
    assert_error(
        &e,
        &src,
        "mov.f32 %f2",
        (0, 0, 0),
        (0, 0, 0),
        "register %f2, the accumulator of the pending wgmma.mma_async",
    );
    // Three steps in two groups: after wait_group 1 the first group
    // (steps 0 and 1) is complete, the second (step 2) is not.
    let c3 = Cfg::new(8, Kind::F16, false, 128, 3);
    let (e, src) = fail_at(
        &c3,
        "before_wait",
        "\twgmma.wait_group.sync.aligned 1;\n\tmov.b32 %a1, 0;\n\tmov.b32 %a5, 0;\n\tmov.b32 %a9, 0;\n",
    );
    assert_error(
        &e,
        &src,
        "mov.b32 %a9, 0",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "register %a9, an A operand of the pending wgmma.mma_async at line {}",
            mma_line(&src, 2)
        ),
    );
}

#[test]
fn operand_errors_are_reported() {
    let c = Cfg::new(8, Kind::F16, false, 128, 1);
    let g = "\t.reg .f32 %g<4>;\n\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 ";
    // A pending accumulator as A, a pending A operand as D.
    let (e, src) = fail_at(
        &c,
        "after_mma",
        &format!("{g}{{%g0, %g1, %g2, %g3}}, {{%f0, %f1, %f2, %f3}}, %rd31, 0, 1, 1, 0;\n"),
    );
    assert_error(
        &e,
        &src,
        "{%g0",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "A operand %f0 is the accumulator of the pending wgmma.mma_async at line {}",
            mma_line(&src, 0)
        ),
    );
    let (e, src) = fail_at(
        &c,
        "after_mma",
        &format!("{g}{{%a0, %a1, %g2, %g3}}, {{%a0, %a1, %a2, %a3}}, %rd31, 0, 1, 1, 0;\n"),
    );
    assert_error(
        &e,
        &src,
        "{%a0, %a1, %g2",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "register %a0, an A operand of the pending wgmma.mma_async at line {}, is this wgmma.mma_async's accumulator",
            mma_line(&src, 0)
        ),
    );
    // An A register never written.
    let src = kernel(&c).replace("\tld.global.u32 %a2, ", "\t// ld.global.u32 %a2, ");
    let e = fail_src(&c, &src, c.desc_hi(64), c.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        "read of uninitialised register %a2 (an A operand)",
    );
    // scale-d and the descriptors must be the same in every lane.
    let mut p = c;
    p.pred = true;
    let src = kernel(&p).replace("setp.eq.u32 %p2, %r2, 100000;", "setp.lt.u32 %p2, %r2, 5;");
    let e = fail_src(&p, &src, p.desc_hi(64), p.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        "scale-d differs between the lanes of the warp (0x0000001f)",
    );
    let src = kernel(&c).replacen(
        "\twgmma.mma_async",
        "\tcvt.u64.u32 %rd40, %r13;\n\tadd.s64 %rd31, %rd31, %rd40;\n\twgmma.mma_async",
        1,
    );
    let e = fail_src(&c, &src, c.desc_hi(64), c.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (1, 0, 0),
        "the B descriptor differs between lanes 0",
    );
}

#[test]
fn shared_memory_overwritten_while_read_is_reported() {
    let c = Cfg::new(8, Kind::F16, false, 128, 2);
    let b = DYN + c.b_region();
    // Thread 37 alone (warp 1, whose wgmmas are pending; warp 0's are
    // complete by then) stores into B.
    let (e, src) = fail_at(
        &c,
        "before_wait",
        "\tsetp.eq.u32 %p7, %r2, 37;\n\t@%p7 st.shared.u32 [%r21+4], %r2;\n",
    );
    assert_error(
        &e,
        &src,
        "st.shared.u32 [%r21+4]",
        (0, 0, 0),
        (37, 0, 0),
        &format!(
            "shared memory {:#x}..{:#x} is read by the pending wgmma.mma_async at line {} and was overwritten at line {} before the wgmma.wait_group that completes it",
            b + 4,
            b + 8,
            mma_line(&src, 0),
            line_of(&src, "st.shared.u32 [%r21+4]")
        ),
    );
    // A bulk copy into B's second step (32 bytes in).
    let copy = "\tsetp.eq.u32 %p7, %r2, 0;\n\t@%p7 mbarrier.init.shared::cta.b64 [mbar], 1;\n\t@%p7 fence.mbarrier_init.release.cluster;\n\t@%p7 mbarrier.arrive.expect_tx.shared::cta.b64 _, [mbar], 16;\n\tadd.u32 %r40, %r21, 32;\n\tmov.u32 %r41, mbar;\n\t@%p7 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r40], [%rd1], 16, [%r41];\n";
    let (e, src) = fail_at(&c, "before_wait", copy);
    assert_error(
        &e,
        &src,
        "cp.async.bulk",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "shared memory {:#x}..{:#x} is read by the pending wgmma.mma_async at line {} and was overwritten at line {}",
            b + 32,
            b + 48,
            mma_line(&src, 1),
            line_of(&src, "cp.async.bulk")
        ),
    );
    // After every warp's wait (and a barrier, or the store would race
    // with the wgmmas of the warps still waiting), a store is fine.
    let src = kernel(&c).replace(
        "\t// @after_wait\n",
        "\tbar.sync 0;\n\tsetp.eq.u32 %p7, %r2, 37;\n\t@%p7 st.shared.u32 [%r21+4], %r2;\n\t// @after_wait\n",
    );
    run_with(&c, &Data::random(&c, 1), &src, c.desc_hi(64), c.desc_hi(8), 128).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_store_from_another_block_of_the_cluster_is_reported() {
    // Both blocks pass the cluster barrier once at the start (both have
    // started, so the other's shared memory may be reached); then rank 0
    // issues the wgmma and waits at the cluster barrier, and rank 1 stores
    // into rank 0's B before arriving.
    let c = Cfg::new(8, Kind::F16, true, 64, 1);
    let src = kernel(&c)
        .replace(
            "\t// @start\n",
            "\tbarrier.cluster.arrive.relaxed;\n\tbarrier.cluster.wait;\n\t// @start\n",
        )
        .replace(
            "\t// @before_fence\n",
            "\tmov.u32 %r50, %cluster_ctarank;\n\tsetp.ne.u32 %p5, %r50, 0;\n\t@%p5 bra $L_remote;\n\t// @before_fence\n",
        )
        .replace(
            "\t// @before_wait\n",
            "\tbarrier.cluster.arrive;\n\tbarrier.cluster.wait;\n\t// @before_wait\n",
        )
        .replace(
            "\tret;\n}\n",
            "\tret;\n$L_remote:\n\tmapa.shared::cluster.u32 %r51, %r21, 0;\n\tst.shared::cluster.u32 [%r51+16], %r2;\n\tbarrier.cluster.arrive;\n\tbarrier.cluster.wait;\n\tret;\n}\n",
        );
    let d = Data::random(&c, 2);
    let module = Module::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut mem = Memory::new();
    let img = d.image(&c);
    let img_at = upload(&mut mem, &img, false);
    let out = mem.alloc(4 * 64 * 8, true);
    let params = [
        ParamValue::U64(img_at),
        ParamValue::U32(img.len() as u32),
        ParamValue::U64(img_at),
        ParamValue::U64(img_at),
        ParamValue::U64(out),
        ParamValue::U64(c.desc_hi(64)),
        ParamValue::U64(c.desc_hi(8)),
    ];
    let launch = Launch {
        cluster: (2, 1, 1),
        ..Launch::new((2, 1, 1), (128, 1, 1), img.len() as u32)
    };
    // Sequential: rank 0 issues its wgmma before rank 1 stores (with rank
    // 1 first, the store races with rank 0's own stores, also an error).
    let e = module
        .launch_with("k", &launch, &params, &mut mem, &Options::sequential())
        .unwrap_err();
    let b = DYN + c.b_region();
    assert_error(
        &e,
        &src,
        "st.shared::cluster",
        (1, 0, 0),
        (0, 0, 0),
        &format!(
            "shared memory {:#x}..{:#x} of block (0,0,0) is read by the pending wgmma.mma_async at line {}",
            b + 16,
            b + 20,
            mma_line(&src, 0)
        ),
    );
}

#[test]
fn fence_and_completion_errors_are_reported() {
    let c = Cfg::new(8, Kind::F16, false, 32, 2);
    // A write of D after the fence.
    let (e, src) = fail_at(&c, "after_fence", "\tmov.f32 %f3, 0f00000000;\n");
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "missing wgmma.fence: %f3 was written at line {} after the last wgmma.fence at line {}, before this wgmma.mma_async: call wgmma_fence()",
            line_of(&src, "mov.f32 %f3"),
            line_of(&src, "wgmma.fence")
        ),
    );
    // ... of A.
    let (e, src) = fail_at(&c, "after_fence", "\tld.global.u32 %a1, [%rd9];\n");
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        "missing wgmma.fence: %a1 was written at line",
    );
    // No fence at all.
    let src = kernel(&c).replace("\twgmma.fence.sync.aligned;\n", "");
    let e = fail_src(&c, &src, c.desc_hi(64), c.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        "no wgmma.fence before its first wgmma.mma_async",
    );
    // Exit with the operations pending (committed or not).
    let (e, src) = fail_at(&c, "before_wait", "\tret;\n");
    assert_error(
        &e,
        &src,
        "ret;",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "the warp exits with the wgmma.mma_async at line {} never waited for",
            mma_line(&src, 0)
        ),
    );
    let (e, src) = fail_at(&c, "after_mma", "\tret;\n");
    assert_error(&e, &src, "ret;", (0, 0, 0), (0, 0, 0), "never waited for");
    // scale-d true with D never written.
    let mut acc = c;
    acc.acc = true;
    let src = kernel(&acc).replace("\tld.global.f32 %f2, ", "\t// ld.global.f32 %f2, ");
    let e = fail_src(&acc, &src, acc.desc_hi(64), acc.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        "read of uninitialised register %f2: wgmma.mma_async accumulates into it (scale-d is true)",
    );
}

#[test]
fn warp_and_warpgroup_errors_are_reported() {
    let c = Cfg::new(8, Kind::F16, true, 128, 1);
    // A diverged warp.
    let src = kernel(&c).replace(
        "\twgmma.fence.sync.aligned;\n",
        "\tsetp.lt.u32 %p6, %r13, 16;\n\t@%p6 wgmma.fence.sync.aligned;\n",
    );
    let e = fail_src(&c, &src, c.desc_hi(64), c.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        "wgmma.fence",
        (0, 0, 0),
        (0, 0, 0),
        "divergent warp: this .aligned instruction is executed by lanes 0x0000ffff of the warp, and lane 16 is at it with its guard predicate false",
    );
    let src = kernel(&c).replace("\tsetmaxnreg.inc", "\tsetp.lt.u32 %p6, %r2, 8;\n\t@%p6 setmaxnreg.inc");
    let e = fail_src(&c, &src, c.desc_hi(64), c.desc_hi(8), 128);
    assert_error(
        &e,
        &src,
        "setmaxnreg",
        (0, 0, 0),
        (0, 0, 0),
        "divergent warp: this .aligned instruction is executed by lanes 0x000000ff",
    );
    // Half a warpgroup.
    let e = fail_src(&c, &kernel(&c), c.desc_hi(64), c.desc_hi(8), 64);
    assert_error(
        &e,
        &kernel(&c),
        MMA,
        (0, 0, 0),
        (0, 0, 0),
        "wgmma.mma_async needs a whole warpgroup: warp 0 belongs to warps 0..4, but the block has 64 threads",
    );
}

#[test]
fn bad_descriptors_are_reported() {
    let c = Cfg::new(8, Kind::F16, true, 64, 1);
    let src = kernel(&c);
    let (a_hi, b_hi) = (c.desc_hi(64), c.desc_hi(8));
    for (a, b, msg) in [
        (a_hi, b_hi | 1 << 46, "wgmma.mma_async B shared-memory descriptor"),
        (
            a_hi,
            b_hi | 1 << 46,
            "reserved bits 46..49 are set (0b001 at bits 46..49 is the sm_100 tcgen05 encoding",
        ),
        (a_hi | 3 << 49, b_hi, "wgmma.mma_async A shared-memory descriptor"),
        (
            a_hi | 3 << 49,
            b_hi,
            "matrix base offset 3 (bits 49..52) is not supported (only 0)",
        ),
        (a_hi, b_hi | 1 << 61, "reserved bits 52..62 are set"),
        (a_hi | 1 << 30, b_hi, "reserved bits 30..32 are set"),
        // An SBO that puts A's second 8-row group far outside shared
        // memory: row 8 at 0x800 + 0x3fff0, its first chunk swizzled.
        (
            a_hi | 0x3FFF << 32,
            b_hi,
            "wgmma.mma_async A operand read of 16 bytes at shared address 0x407c0",
        ),
        (a_hi | 0x3FFF << 32, b_hi, "is out of bounds"),
    ] {
        let e = fail_src(&c, &src, a, b, 128);
        assert_error(&e, &src, MMA, (0, 0, 0), (0, 0, 0), msg);
    }
}

#[test]
fn unsupported_forms_are_rejected_when_parsed() {
    let c = Cfg::new(8, Kind::F16, false, 128, 1);
    let good = kernel(&c);
    let mma = |src: &str| src.lines().find(|l| l.contains(MMA)).unwrap().to_string();
    let rejects = |src: String, needle: &str, msg: &str| {
        let e = Module::parse(&src).unwrap_err();
        assert_eq!(e.kernel(), Some("k"), "{e}");
        assert_eq!(e.line(), Some(line_of(&src, needle)), "{e}");
        assert!(e.message().contains(msg), "expected `{msg}` in: {e}");
    };
    let line = mma(&good);
    rejects(
        good.replace(&line, &line.replace(", 1, 1, 0;", ", 1, 1, 1;")),
        MMA,
        "imm-trans-b = 1 (a transposed, MN-major operand) is not supported by the emulator; only K-major operands (0)",
    );
    rejects(
        good.replace(&line, &line.replace(".f32.f16.f16", ".f16.f16.f16")),
        MMA,
        "`.f16` accumulators are not supported by the emulator (only .f32)",
    );
    rejects(
        good.replace(&line, &line.replace(".f32.f16.f16", ".f32.e4m3.e4m3")),
        MMA,
        "A and B types `.e4m3.e4m3` are not supported by the emulator",
    );
    rejects(
        good.replace(&line, &line.replace("m64n8k16", "m64n12k16")),
        MMA,
        "shape `.m64n12k16` is not supported",
    );
    rejects(
        good.replace(&line, &line.replace(", 1, 1, 0;", ", 2, 1, 0;")),
        MMA,
        "imm-scale-a must be 1 or -1, found 2",
    );
    rejects(
        good.replace(&line, &line.replace(", 0, 1, 1, 0;", ", 2, 1, 1, 0;")),
        MMA,
        "scale-d must be a predicate or 0 or 1, found 2",
    );
    rejects(
        good.replace(&line, &line.replace(", 1, 1, 0;", ", 1, %r2, 0;")),
        MMA,
        "imm-scale-b must be 1 or -1, found a non-constant operand",
    );
    rejects(
        good.replace("wait_group.sync.aligned 1;", "wait_group.sync.aligned %r2;"),
        "wait_group.sync.aligned %r2",
        "must be an immediate in 0..=7",
    );
    rejects(
        good.replace("wait_group.sync.aligned 1;", "wait_group.sync.aligned 8;"),
        "wait_group.sync.aligned 8",
        "found 8",
    );
    rejects(
        good.replace("wgmma.fence.sync.aligned;", "wgmma.fence.aligned;"),
        "wgmma.fence",
        "needs `.sync.aligned`",
    );
    for bad in ["20", "244", "264", "%r2"] {
        let src = good.replace(
            "setmaxnreg.inc.sync.aligned.u32 240;",
            &format!("setmaxnreg.dec.sync.aligned.u32 {bad};"),
        );
        rejects(
            src,
            "setmaxnreg",
            "the register count of setmaxnreg must be an immediate multiple of 8 in 24..=256",
        );
    }
    let ss = Cfg::new(8, Kind::F16, true, 128, 1);
    let good = kernel(&ss);
    let line = mma(&good);
    rejects(
        good.replace(&line, &line.replace(", 1, 1, 0, 0;", ", 1, 1, 1, 0;")),
        MMA,
        "imm-trans-a = 1",
    );
}
