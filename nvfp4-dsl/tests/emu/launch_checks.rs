//! One test per launch check on a small hand-written kernel: each error
//! names its kernel, block, thread and line.

use super::*;

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// A one-entry module `k` with the given parameters and body, plus the
/// 1-based line of the first body line.
fn module(params: &str, body: &str) -> (Module, String) {
    let src = format!("{HEAD}.visible .entry k({params})\n{{\n{body}}}\n");
    (Module::parse(&src).unwrap(), src)
}

/// [`assert_located`], and that the text names the kernel, block, thread
/// and line.
fn assert_names(e: &EmuError, src: &str, needle: &str, block: (u32, u32, u32), thread: (u32, u32, u32)) {
    assert_located(e, src, needle, block, thread);
    let text = e.to_string();
    assert!(text.contains("kernel `k`"), "{text}");
    assert!(
        text.contains(&format!("block ({},{},{})", block.0, block.1, block.2)),
        "{text}"
    );
    assert!(
        text.contains(&format!("thread ({},{},{})", thread.0, thread.1, thread.2)),
        "{text}"
    );
    assert!(text.contains(&format!("line {}", line_of(src, needle))), "{text}");
}

const OUT: &str = ".param .u64 out";

/// Regs shared by the check kernels.
const REGS: &str = "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\t.reg .f32 %f<4>;\n";

fn one_block(threads: u32) -> Launch {
    linear(1, threads, 0)
}

#[test]
fn global_out_of_bounds_is_reported() {
    let body = format!(
        "{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let out = mem.alloc(4 * 40, true);
    let l = linear(2, 64, 0);
    let e = m.launch("k", &l, &[ParamValue::U64(out)], &mut mem).unwrap_err();
    assert_names(&e, &src, "st.global.u32", (0, 0, 0), (40, 0, 0));
    assert!(e.message().contains("out of bounds"), "{e}");
    // The first 40 threads' stores happened.
    assert_eq!(download_u32(&mem, out + 4 * 39, 1), vec![39]);
}

#[test]
fn misaligned_global_access_is_reported() {
    let body = format!(
        "{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %tid.x;\n\tcvt.u64.u32 %rd2, %r1;\n\tshl.b64 %rd2, %rd2, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tadd.s64 %rd3, %rd3, 8;\n\tld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd3];\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let out = mem.alloc(1024, true);
    let e = m
        .launch("k", &one_block(4), &[ParamValue::U64(out)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "ld.global.v4.u32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("misaligned") && e.message().contains("16"), "{e}");
}

#[test]
fn shared_out_of_bounds_and_misaligned_are_reported() {
    let params = OUT;
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 2;\n\tmov.u32 %r3, smem;\n\tadd.s32 %r4, %r3, %r2;\n\tst.shared.u32 [%r4], %r1;\n\tst.shared.u32 [%r4+2], %r1;\n\tret;\n"
    );
    let src = format!("{HEAD}.shared .align 4 .b8 smem[64];\n.visible .entry k({params})\n{{\n{body}}}\n");
    let m = Module::parse(&src).unwrap();
    let mut mem = Memory::new();
    // 17 threads: thread 16 stores past the 64-byte array.
    let e = m
        .launch("k", &one_block(17), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "st.shared.u32 [%r4], %r1", (0, 0, 0), (16, 0, 0));
    assert!(
        e.message().contains("out of bounds") && e.message().contains("smem"),
        "{e}"
    );
    let e = m
        .launch("k", &one_block(16), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "[%r4+2]", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("misaligned"), "{e}");
}

#[test]
fn param_out_of_bounds_is_reported() {
    let body = format!("{REGS}\tld.param.u64 %rd1, [out+4];\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "ld.param.u64", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("outside the parameter"), "{e}");
}

#[test]
fn misaligned_param_access_is_reported() {
    let body = format!("{REGS}\tld.param.u32 %r1, [out+2];\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "ld.param.u32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("misaligned"), "{e}");
}

#[test]
fn warp_sync_with_an_exited_lane_and_inconsistent_elect_are_reported() {
    let body = format!(
        "{REGS}\tmov.u32 %r1, %laneid;\n\tsetp.eq.u32 %p1, %r1, 5;\n\t@%p1 ret;\n\tbar.warp.sync -1;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let l = Launch::new((1, 1, 2), (32, 1, 1), 0);
    let e = m.launch("k", &l, &[ParamValue::U64(0)], &mut mem).unwrap_err();
    assert_names(&e, &src, "bar.warp.sync", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("lane 5 has exited"), "{e}");
    let body = format!(
        "{REGS}\tmov.u32 %r1, %laneid;\n\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 elect.sync %r2|%p2, 0xffff;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "elect.sync", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("inconsistent elect.sync mask"), "{e}");
}

#[test]
fn store_to_read_only_allocation_is_reported() {
    let body =
        format!("{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %ctaid.x;\n\tst.global.u32 [%rd1], %r1;\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let ro = mem.alloc(16, false);
    let l = Launch::new((1, 2, 1), (2, 3, 1), 0);
    let e = m.launch("k", &l, &[ParamValue::U64(ro)], &mut mem).unwrap_err();
    assert_names(&e, &src, "st.global.u32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("read-only"), "{e}");
}

/// As on the H100: a CTA barrier waits only for threads that have not
/// exited, whether they exit before the others arrive or after.
#[test]
fn barrier_waits_only_for_threads_that_have_not_exited() {
    let store = "\tld.param.u64 %rd1, [out];\n\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;\n\tret;\n";
    // Thread 37 exits first.
    let body =
        format!("{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 37;\n\t@%p1 ret;\n\tbar.sync 0;\n{store}");
    let (m, _) = module(OUT, &body);
    let mut mem = Memory::new();
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    let got = download_u32(&mem, out, 64);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(*g, if t == 37 { 0 } else { t as u32 }, "thread {t}");
    }
    // Thread 37 exits after the others arrived (its path is at a higher
    // PC, so they reach the barrier first): the exit completes it. With
    // `barrier.sync` (not `.aligned`): `bar.sync` is `.aligned`, and its
    // warp is diverged, which synccheck reports.
    let late = |bar: &str| {
        format!(
            "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 37;\n\t@%p1 bra $L_late;\n\t{bar} 0;\n{store}$L_late:\n\tadd.u32 %r2, %r1, 1;\n\tret;\n"
        )
    };
    let (m, _) = module(OUT, &late("barrier.sync"));
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    assert_eq!(download_u32(&mem, out + 4 * 63, 1), vec![63]);
    let (m, src) = module(OUT, &late("bar.sync"));
    let e = m
        .launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "bar.sync 0;", (0, 0, 0), (32, 0, 0));
    assert!(
        e.message().contains("divergent warp") && e.message().contains("lane 5 (thread (37,0,0))"),
        "{e}"
    );
    // A whole warp exits, the other synchronises alone.
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 ret;\n\tbar.sync 0;\n\tbarrier.sync.aligned 1;\n{store}"
    );
    let (m, _) = module(OUT, &body);
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    assert_eq!(download_u32(&mem, out + 4 * 40, 1), vec![40]);
}

/// A barrier with a thread count still needs that many arrivals.
#[test]
fn counted_barrier_with_an_exited_thread_is_reported() {
    let body =
        format!("{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 37;\n\t@%p1 ret;\n\tbar.sync 0, 64;\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(64), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "bar.sync 0, 64", (0, 0, 0), (0, 0, 0));
    assert!(
        e.message().contains("barrier 0 can never complete") && e.message().contains("thread (37,0,0) exited"),
        "{e}"
    );
}

#[test]
fn barrier_waiting_on_another_barrier_is_reported() {
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra $L_a;\n\tbar.sync 1;\n\tret;\n$L_a:\n\tbar.sync 0;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let l = linear(3, 64, 0);
    let e = m.launch("k", &l, &[ParamValue::U64(0)], &mut mem).unwrap_err();
    assert_names(&e, &src, "bar.sync 0", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("waits at barrier 1"), "{e}");
}

#[test]
fn inconsistent_shuffle_mask_is_reported() {
    // Lanes 0..15 shuffle with a full mask; the others skipped it.
    let body = format!(
        "{REGS}\tmov.u32 %r1, %laneid;\n\tsetp.ge.u32 %p1, %r1, 16;\n\t@%p1 bra $L_end;\n\tshfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, -1;\n$L_end:\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "shfl.sync.bfly.b32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("inconsistent shuffle mask"), "{e}");
}

#[test]
fn running_past_the_end_is_reported() {
    let body = format!("{REGS}\tmov.u32 %r1, %tid.x;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(8), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_eq!(e.kernel(), Some("k"));
    assert_eq!(e.block(), Some((0, 0, 0)));
    assert_eq!(e.thread(), Some((0, 0, 0)));
    assert_eq!(e.line(), Some(src.lines().count() as u32));
    assert_eq!(e.instruction(), Some("}"));
    let shown = format!(
        "kernel `k`, block (0,0,0), thread (0,0,0), line {} `}}`",
        src.lines().count()
    );
    assert!(e.to_string().contains(&shown), "{e}");
    assert!(e.message().contains("past the end"), "{e}");
}

#[test]
fn uninitialised_register_read_is_reported() {
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n\t@!%p1 mov.u32 %r5, 7;\n\tadd.u32 %r2, %r5, 1;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(8), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "add.u32 %r2", (0, 0, 0), (3, 0, 0));
    assert!(e.message().contains("read of uninitialised register %r5"), "{e}");
}

#[test]
fn launch_limits_and_parameters_are_checked() {
    let body = format!("{REGS}\tret;\n");
    let src = format!("{HEAD}.visible .entry k({OUT}, .param .f32 a)\n.maxntid 128, 1, 1\n{{\n{body}}}\n");
    let m = Module::parse(&src).unwrap();
    let mut mem = Memory::new();
    let p = [ParamValue::U64(0), ParamValue::F32(1.0)];
    let e = m.launch("k", &one_block(256), &p, &mut mem).unwrap_err();
    assert!(e.message().contains(".maxntid"), "{e}");
    assert_eq!(e.kernel(), Some("k"));
    let e = m.launch("k", &one_block(2048), &p, &mut mem).unwrap_err();
    assert!(e.message().contains("1024"), "{e}");
    let e = m.launch("k", &linear(1, 32, 228 * 1024), &p, &mut mem).unwrap_err();
    assert!(e.message().contains("227 KiB"), "{e}");
    let e = m.launch("k", &one_block(32), &p[..1], &mut mem).unwrap_err();
    assert!(e.message().contains("2 parameters"), "{e}");
    let e = m
        .launch(
            "k",
            &one_block(32),
            &[ParamValue::U32(0), ParamValue::F32(1.0)],
            &mut mem,
        )
        .unwrap_err();
    assert!(e.message().contains("parameter 0 `out` is 8 bytes"), "{e}");
    let e = m.launch("nope", &one_block(32), &p, &mut mem).unwrap_err();
    assert!(e.message().contains("no kernel entry `nope`"), "{e}");
    m.launch("k", &one_block(128), &p, &mut mem).unwrap();
}

#[test]
fn parse_errors_name_the_line() {
    let src = format!("{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n\tfrobnicate.u32 %r1;\n\tret;\n}}\n");
    let e = Module::parse(&src).unwrap_err();
    assert_eq!(e.line(), Some(7));
    assert!(e.to_string().contains("line 7 `frobnicate.u32 %r1;`"), "{e}");
    assert!(e.message().contains("unknown or unsupported instruction"), "{e}");
    let src = format!("{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n\tadd.u32 %r1, %r9, 1;\n\tret;\n}}\n");
    let e = Module::parse(&src).unwrap_err();
    assert_eq!(e.line(), Some(7));
    assert!(e.message().contains("unknown register or symbol `%r9`"), "{e}");
    let src = format!("{HEAD}.visible .entry k()\n{{\n\tbra $L_nowhere;\n}}\n");
    let e = Module::parse(&src).unwrap_err();
    assert!(e.message().contains("unknown label"), "{e}");
}
