//! The emulator's asynchronous model on small hand-written sm_100a
//! kernels: parameter-space addresses, mbarriers (phases, parity, the
//! transaction count, blocking waits), bulk and tensor copies (swizzles and
//! out-of-bounds fill checked against a layout computed here), and every
//! error they report, with its kernel, block, thread and line.

use nvfp4_dsl::emu::{EmuError, Launch, Memory, Module, ParamValue, TensorMap2d};

mod common;
use common::{assert_error, download_u32, linear, pattern, upload};

const HEAD: &str = ".version 8.7\n.target sm_100a\n.address_size 64\n";

/// Registers every kernel here declares.
const REGS: &str = "\t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<32>;\n";

/// A module with shared declarations `shared` and one entry `k`.
fn module(shared: &str, params: &str, body: &str) -> (Module, String) {
    let src = format!("{HEAD}{shared}.visible .entry k({params})\n{{\n{REGS}{body}}}\n");
    match Module::parse(&src) {
        Ok(m) => (m, src),
        Err(e) => panic!("{e}\n{src}"),
    }
}

/// One block of `n` threads.
fn threads(n: u32, shared: u32) -> Launch {
    linear(1, n, shared)
}

// ----- parameters -----

#[test]
fn parameter_addresses_are_readable_and_read_only() {
    let params = ".param .u64 out, .param .align 64 .b8 blob[128]";
    let body = "\tld.param.u64 %rd1, [out];
\tmov.b64 %rd2, blob;
\tcvta.param.u64 %rd3, %rd2;
\tld.u64 %rd4, [%rd3+8];
\tld.param.u32 %r1, [%rd2+20];
\tld.v2.u32 {%r2, %r3}, [%rd3+120];
\tst.global.u64 [%rd1], %rd4;
\tst.global.v4.u32 [%rd1+16], {%r1, %r2, %r3, %r1};
\tcvta.to.param.u64 %rd5, %rd3;
\tsetp.eq.u64 %p1, %rd5, %rd2;
\tselp.u32 %r4, 1, 0, %p1;
\tst.global.u32 [%rd1+8], %r4;
\tret;
";
    let (m, _) = module("", params, body);
    let mut mem = Memory::new();
    let out = mem.alloc(32, true);
    let blob = pattern(128, 3);
    // Launches `m` on `n` threads with `out` and the bytes `blob`.
    let launch = |m: &Module, n: u32, blob: &[u8], mem: &mut Memory| {
        m.launch(
            "k",
            &threads(n, 0),
            &[ParamValue::U64(out), ParamValue::Bytes(blob.to_vec())],
            mem,
        )
    };
    launch(&m, 32, &blob, &mut mem).unwrap();
    let w = download_u32(&mem, out, 8);
    let le = |o: usize| u32::from_le_bytes(blob[o..o + 4].try_into().unwrap());
    assert_eq!([w[0], w[1]], [le(8), le(12)], "generic load through cvta.param");
    assert_eq!(w[2], 1, "cvta.to.param undoes cvta.param");
    assert_eq!([w[4], w[5], w[6]], [le(20), le(120), le(124)]);

    // Generic stores into the parameters are refused.
    let body =
        "\tmov.b64 %rd2, blob;\n\tcvta.param.u64 %rd3, %rd2;\n\tmov.u32 %r1, 1;\n\tst.u32 [%rd3+4], %r1;\n\tret;\n";
    let (m, src) = module("", params, body);
    let e = launch(&m, 2, &blob, &mut mem).unwrap_err();
    assert_error(&e, &src, "st.u32 [%rd3+4]", (0, 0, 0), (0, 0, 0), "read-only");
    // ... and reads past them are out of bounds.
    let body = "\tmov.b64 %rd2, blob;\n\tcvta.param.u64 %rd3, %rd2;\n\tld.u32 %r1, [%rd3+128];\n\tret;\n";
    let (m, src) = module("", params, body);
    let e = launch(&m, 1, &blob, &mut mem).unwrap_err();
    assert_error(&e, &src, "ld.u32", (0, 0, 0), (0, 0, 0), "outside the kernel's");
    // Byte arrays must have the declared size.
    let e = launch(&m, 1, &[0; 64], &mut mem).unwrap_err();
    assert!(e.message().contains("parameter 1 `blob` is 128 bytes"), "{e}");
}

#[test]
fn set_writable_controls_kernel_stores() {
    let (m, src) = module(
        "",
        ".param .u64 out",
        "\tld.param.u64 %rd1, [out];\n\tst.global.u32 [%rd1], 5;\n\tret;\n",
    );
    let mut mem = Memory::new();
    let buf = mem.alloc(4, true);
    mem.set_writable(buf, false).unwrap();
    let e = m
        .launch("k", &threads(1, 0), &[ParamValue::U64(buf)], &mut mem)
        .unwrap_err();
    assert_error(&e, &src, "st.global.u32", (0, 0, 0), (0, 0, 0), "read-only");
    mem.set_writable(buf, true).unwrap();
    m.launch("k", &threads(1, 0), &[ParamValue::U64(buf)], &mut mem)
        .unwrap();
    assert_eq!(download_u32(&mem, buf, 1), vec![5]);
    assert!(mem.set_writable(buf + 4, true).is_err());
}

// ----- mbarriers -----

/// One thread walks an mbarrier through two phases. A wait that cannot
/// succeed while nothing else can run returns false (the "time limit" of
/// `try_wait`), so every outcome is observable.
#[test]
fn mbarrier_phases_parity_and_transaction_bytes() {
    let shared = ".shared .align 8 .b8 bar[8];\n.shared .align 16 .b8 buf[32];\n";
    let body = "\tld.param.u64 %rd1, [out];
\tld.param.u64 %rd2, [in];
\tmbarrier.init.shared::cta.b64 [bar], 2;
\tfence.mbarrier_init.release.cluster;
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 1;
\tselp.u32 %r0, 1, 0, %p1;
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
\tselp.u32 %r1, 1, 0, %p1;
\tmbarrier.arrive.shared::cta.b64 %rd3, [bar];
\tmbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [bar], 32;
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
\tselp.u32 %r2, 1, 0, %p1;
\tmov.u32 %r20, buf;
\tmov.u32 %r21, bar;
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r20], [%rd2], 16, [%r21];
\tmbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 0;
\tselp.u32 %r3, 1, 0, %p1;
\tcp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r20+16], [%rd2+16], 16, [%r21];
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
\tselp.u32 %r4, 1, 0, %p1;
\tmbarrier.try_wait.shared::cta.b64 %p1, [bar], %rd3;
\tselp.u32 %r5, 1, 0, %p1;
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 1;
\tselp.u32 %r6, 1, 0, %p1;
\tcvt.u32.u64 %r7, %rd3;
\tst.global.v4.u32 [%rd1], {%r0, %r1, %r2, %r3};
\tst.global.v4.u32 [%rd1+16], {%r4, %r5, %r6, %r7};
\tld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [buf+16];
\tst.global.v4.u32 [%rd1+32], {%r8, %r9, %r10, %r11};
\tret;
";
    let (m, _) = module(shared, ".param .u64 out, .param .u64 in", body);
    let mut mem = Memory::new();
    let out = mem.alloc(48, true);
    let data = pattern(32, 9);
    let inp = upload(&mut mem, &data, false);
    m.launch(
        "k",
        &threads(1, 0),
        &[ParamValue::U64(out), ParamValue::U64(inp)],
        &mut mem,
    )
    .unwrap();
    let w = download_u32(&mem, out, 12);
    assert_eq!(w[0], 1, "a fresh barrier (phase 0) reports parity 1 complete");
    assert_eq!(w[1], 0, "... and parity 0 not");
    assert_eq!(w[2], 0, "both arrivals in, 32 transaction bytes pending");
    assert_eq!(w[3], 0, "16 of 32 bytes in");
    assert_eq!(w[4], 1, "the last bytes complete phase 0");
    assert_eq!(w[5], 1, "the arrive's state names phase 0, now complete");
    assert_eq!(w[6], 0, "phase 1 (parity 1) is pending");
    assert_eq!(w[7], 0, "the state of an arrive in phase 0");
    assert_eq!(mem.read(out + 32, 16).unwrap(), &data[16..]);
}

/// Two warps hand a token back and forth through two mbarriers for
/// several rounds: waits block, the other warp runs, parities alternate.
#[test]
fn mbarrier_ping_pong_between_warps() {
    let shared = ".shared .align 8 .b8 bars[16];\n.shared .align 4 .b8 token[4];\n";
    let body = "\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tsetp.eq.u32 %p1, %r1, 0;
\t@%p1 mbarrier.init.shared::cta.b64 [bars], 32;
\t@%p1 mbarrier.init.shared::cta.b64 [bars+8], 32;
\t@%p1 fence.mbarrier_init.release.cluster;
\tmov.u32 %r3, 0;
\t@%p1 st.shared.u32 [token], %r3;
\tbar.sync 0;
$L_round:
\tand.b32 %r4, %r3, 1;
\tsetp.eq.u32 %p2, %r2, 0;
\t@%p2 bra $L_w0;
\t// warp 1: bump the token, signal bars[0], wait for bars[1]
\tld.shared.u32 %r5, [token];
\tadd.u32 %r5, %r5, 1;
\tbar.warp.sync -1;
\tmbarrier.arrive.shared::cta.b64 _, [bars];
$L_w1:
\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [bars+8], %r4;
\t@!%p3 bra $L_w1;
\tbra $L_next;
$L_w0:
\t// warp 0: wait for bars[0], double the token, signal bars[1]
$L_w0wait:
\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [bars], %r4;
\t@!%p3 bra $L_w0wait;
\tld.shared.u32 %r5, [token];
\tsetp.eq.u32 %p4, %r1, 0;
\tshl.b32 %r6, %r5, 1;
\tbar.warp.sync -1;
\t@%p4 st.shared.u32 [token], %r6;
\tbar.warp.sync -1;
\tmbarrier.arrive.shared::cta.b64 _, [bars+8];
$L_next:
\tadd.u32 %r3, %r3, 1;
\tsetp.lt.u32 %p5, %r3, 5;
\t@%p5 bra $L_round;
\tld.shared.u32 %r7, [token];
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r7;
\tret;
";
    // Warp 1 lane 0 writes token + 1 after the whole warp has read it
    // (bar.warp.sync: without it the store races with the other lanes'
    // loads).
    let body = body.replace(
        "\tadd.u32 %r5, %r5, 1;\n",
        "\tadd.u32 %r5, %r5, 1;\n\tbar.warp.sync -1;\n\tsetp.eq.u32 %p6, %r1, 32;\n\t@%p6 st.shared.u32 [token], %r5;\n",
    );
    let (m, _) = module(shared, ".param .u64 out", &body);
    let mut mem = Memory::new();
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &threads(64, 0), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    // t -> 2 (t + 1), five times from 0.
    let mut t = 0u32;
    for _ in 0..5 {
        t = 2 * (t + 1);
    }
    assert!(
        download_u32(&mem, out, 64).iter().all(|&w| w == t),
        "{:?}",
        download_u32(&mem, out, 64)
    );
}

#[test]
fn mbarrier_errors_are_reported() {
    let shared = ".shared .align 8 .b8 bar[16];\n.shared .align 16 .b8 buf[64];\n";
    let params = ".param .u64 in";
    let run = |body: &str, n: u32| {
        let (m, src) = module(shared, params, body);
        let mut mem = Memory::new();
        let inp = upload(&mut mem, &pattern(64, 1), false);
        (
            m.launch("k", &threads(n, 0), &[ParamValue::U64(inp)], &mut mem)
                .unwrap_err(),
            src,
        )
    };
    // Never initialised.
    let (e, src) = run(
        "\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar+8], 0;\n\tret;\n",
        1,
    );
    assert_error(&e, &src, "try_wait", (0, 0, 0), (0, 0, 0), "never initialised");
    // More transaction bytes than expected: 32 bytes complete, 16 expected
    // (every arrival is in).
    let (e, src) = run(
        "\tld.param.u64 %rd1, [in];\n\tmbarrier.init.shared::cta.b64 [bar], 1;\n\tfence.mbarrier_init.release.cluster;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;\n\tmov.u32 %r1, buf;\n\tmov.u32 %r2, bar;\n\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 32, [%r2];\n$L_w:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;\n\t@!%p1 bra $L_w;\n\tret;\n",
        1,
    );
    assert_error(
        &e,
        &src,
        "cp.async.bulk",
        (0, 0, 0),
        (0, 0, 0),
        "16 more transaction bytes than expected in phase 0",
    );
    // A copy that nobody waits for is still in flight when the block ends.
    let (e, src) = run(
        "\tld.param.u64 %rd1, [in];\n\tmbarrier.init.shared::cta.b64 [bar], 1;\n\tfence.mbarrier_init.release.cluster;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;\n\tmov.u32 %r1, buf;\n\tmov.u32 %r2, bar;\n\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];\n\tret;\n",
        1,
    );
    assert_error(&e, &src, "cp.async.bulk", (0, 0, 0), (0, 0, 0), "still in flight");
    // More arrivals than pending (the phase waits for 16 bytes).
    let (e, src) = run(
        "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;\n\t@%p1 fence.mbarrier_init.release.cluster;\n\t@%p1 mbarrier.expect_tx.shared::cta.b64 [bar], 16;\n\t@%p1 mbarrier.arrive.shared::cta.b64 _, [bar];\n\t@%p1 mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];\n\tret;\n",
        4,
    );
    assert_error(
        &e,
        &src,
        "mbarrier.arrive.release",
        (0, 0, 0),
        (3, 0, 0),
        "more than are pending",
    );
    // Misaligned mbarrier.
    let (e, src) = run(
        "\tmbarrier.init.shared::cta.b64 [bar+4], 1;\n\tfence.mbarrier_init.release.cluster;\n\tret;\n",
        1,
    );
    assert_error(&e, &src, "mbarrier.init", (0, 0, 0), (0, 0, 0), "8-byte aligned");
    // A wait no thread can complete: warp 1 spins, warp 0 sits at a
    // barrier it alone can never pass (warp 1 never gets there).
    let (e, src) = run(
        "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 mbarrier.init.shared::cta.b64 [bar], 2;\n\t@%p1 fence.mbarrier_init.release.cluster;\n\tbar.sync 0;\n\tsetp.lt.u32 %p2, %r1, 32;\n\t@%p2 bra $L_bar;\n\tmov.u32 %r2, 0;\n$L_spin:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], %r2;\n\t@!%p3 bra $L_spin;\n\tret;\n$L_bar:\n\t@%p1 mbarrier.arrive.shared::cta.b64 _, [bar];\n\tbar.sync 1;\n\tret;\n",
        64,
    );
    assert_error(
        &e,
        &src,
        "try_wait",
        (0, 0, 0),
        (32, 0, 0),
        "mbarrier wait can never complete",
    );
    assert!(
        e.message().contains("parity 0") && e.message().contains("1 of 2 arrivals pending"),
        "{e}"
    );
    // A spin with nothing pending on a single-thread block.
    let (e, src) = run(
        "\tmbarrier.init.shared::cta.b64 [bar], 1;\n\tfence.mbarrier_init.release.cluster;\n$L_spin:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;\n\t@!%p3 bra $L_spin;\n\tret;\n",
        1,
    );
    assert_error(
        &e,
        &src,
        "try_wait",
        (0, 0, 0),
        (0, 0, 0),
        "mbarrier wait can never complete",
    );
}

// ----- bulk copies -----

#[test]
fn bulk_copies_both_ways_and_their_errors() {
    let shared = ".shared .align 8 .b8 bar[8];\n.shared .align 16 .b8 buf[256];\n";
    let params = ".param .u64 in, .param .u64 out, .param .u32 size, .param .u32 soff";
    let body = "\tld.param.u64 %rd1, [in];
\tld.param.u64 %rd2, [out];
\tld.param.u32 %r1, [size];
\tld.param.u32 %r5, [soff];
\tcvt.u64.u32 %rd3, %r5;
\tadd.s64 %rd1, %rd1, %rd3;
\tmbarrier.init.shared::cta.b64 [bar], 1;
\tfence.mbarrier_init.release.cluster;
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %r1;
\tmov.u32 %r2, buf;
\tmov.u32 %r3, bar;
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], %r1, [%r3];
$L_wait:
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
\t@!%p1 bra $L_wait;
\tfence.proxy.async.shared::cta;
\tcp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], %r1;
\tcp.async.bulk.commit_group;
\tcp.async.bulk.wait_group.read 0;
\tret;
";
    let (m, src) = module(shared, params, body);
    let mut mem = Memory::new();
    let data = pattern(256, 5);
    let inp = upload(&mut mem, &data, false);
    let out = mem.alloc(256, true);
    let p = |size: u32, soff: u32| {
        [
            ParamValue::U64(inp),
            ParamValue::U64(out),
            ParamValue::U32(size),
            ParamValue::U32(soff),
        ]
    };
    m.launch("k", &threads(1, 0), &p(240, 16), &mut mem).unwrap();
    assert_eq!(mem.read(out, 240).unwrap(), &data[16..]);
    let needle = "cp.async.bulk.shared::cluster";
    let e = m.launch("k", &threads(1, 0), &p(40, 0), &mut mem).unwrap_err();
    assert_error(&e, &src, needle, (0, 0, 0), (0, 0, 0), "not a multiple of 16");
    let e = m.launch("k", &threads(1, 0), &p(32, 8), &mut mem).unwrap_err();
    assert_error(&e, &src, needle, (0, 0, 0), (0, 0, 0), "not 16-byte aligned");
    let e = m.launch("k", &threads(1, 0), &p(64, 208), &mut mem).unwrap_err();
    assert_error(&e, &src, needle, (0, 0, 0), (0, 0, 0), "out of bounds");
    // 272 bytes do not fit the 256-byte shared buffer.
    let e = m.launch("k", &threads(1, 0), &p(272, 0), &mut mem).unwrap_err();
    assert_error(&e, &src, needle, (0, 0, 0), (0, 0, 0), "shared address");
    // The store back goes through the writability check.
    mem.set_writable(out, false).unwrap();
    let e = m.launch("k", &threads(1, 0), &p(32, 0), &mut mem).unwrap_err();
    assert_error(&e, &src, "bulk_group", (0, 0, 0), (0, 0, 0), "read-only");
    mem.set_writable(out, true).unwrap();

    // Launched on views shorter than the allocations (as a launcher passes
    // `buffer.slice(..)`), both copies stay inside their parameter's view,
    // as plain loads and stores do, although the bytes past it exist.
    mem.set_views(vec![(inp, inp + 128), (out, out + 64)]);
    m.launch("k", &threads(1, 0), &p(64, 64), &mut mem).unwrap();
    let e = m.launch("k", &threads(1, 0), &p(64, 96), &mut mem).unwrap_err();
    assert_error(
        &e,
        &src,
        needle,
        (0, 0, 0),
        (0, 0, 0),
        "cp.async.bulk source read of 64 bytes at",
    );
    assert!(
        e.message().contains(&format!(
            "is out of bounds of the view passed as `in` ({inp:#x}..{:#x}, 128 bytes), which its address was computed from: bytes 96..160 of it, past its end",
            inp + 128
        )),
        "{e}"
    );
    let e = m.launch("k", &threads(1, 0), &p(96, 0), &mut mem).unwrap_err();
    assert_error(
        &e,
        &src,
        "bulk_group",
        (0, 0, 0),
        (0, 0, 0),
        "of the view passed as `out`",
    );
    assert!(e.message().contains("bytes 0..96 of it, past its end"), "{e}");
    mem.set_views(Vec::new());
}

// ----- tensor copies -----

/// The expected shared image of a tensor copy: box row `i`, byte `j` at
/// the swizzled `dst + i * box_bytes + j` (offsets from `base`).
fn tensor_image(map: &TensorMap2d, global: &[u8], c0: i64, c1: i64, dst: u32, base: u32, len: usize) -> Vec<u8> {
    // Outside the box: what the kernel filled the window with, all ones.
    let mut img = vec![0xFFu8; len];
    let mask = match map.swizzle {
        128 => 7,
        64 => 3,
        32 => 1,
        _ => 0,
    };
    for i in 0..map.box_rows as i64 {
        for j in 0..map.box_bytes as i64 {
            let (row, col) = (c1 + i, c0 + j);
            let inside = (0..map.rows as i64).contains(&row) && (0..map.row_bytes as i64).contains(&col);
            let v = if inside {
                global[(row as u64 * map.row_stride + col as u64) as usize]
            } else {
                0
            };
            let lin = dst + (i * i64::from(map.box_bytes) + j) as u32;
            let a = lin ^ (((lin >> 7) & mask) << 4);
            img[(a - base) as usize] = v;
        }
    }
    img
}

/// Fills dynamic shared memory (a 16 KiB window at a 1024-byte aligned
/// base) with ones, copies one box into it and dumps the window.
fn tensor_copy(
    map: &TensorMap2d,
    map_in_global: bool,
    c0: i32,
    c1: i32,
    dst_off: u32,
) -> Result<(Vec<u8>, u32), EmuError> {
    let shared = ".shared .align 8 .b8 bar[8];\n.extern .shared .align 1024 .b8 dyn[];\n";
    let params = ".param .u64 out, .param .u64 gmap, .param .align 64 .b8 pmap[128], .param .u32 c0, .param .u32 c1, .param .u32 doff, .param .u32 bytes";
    let map_src = if map_in_global {
        "\tld.param.u64 %rd8, [gmap];\n"
    } else {
        "\tmov.b64 %rd7, pmap;\n\tcvta.param.u64 %rd8, %rd7;\n"
    };
    let body = format!(
        "\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, %tid.x;
\t// every thread fills its 64 bytes of the window with ones first
\tmov.u32 %r9, dyn;
\tshl.b32 %r10, %r1, 6;
\tadd.u32 %r11, %r9, %r10;
\tmov.u32 %r20, 0xFFFFFFFF;
\tst.shared.v4.u32 [%r11], {{%r20, %r20, %r20, %r20}};
\tst.shared.v4.u32 [%r11+16], {{%r20, %r20, %r20, %r20}};
\tst.shared.v4.u32 [%r11+32], {{%r20, %r20, %r20, %r20}};
\tst.shared.v4.u32 [%r11+48], {{%r20, %r20, %r20, %r20}};
\tsetp.eq.u32 %p1, %r1, 0;
\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
\t@%p1 fence.mbarrier_init.release.cluster;
\tbar.sync 0;
\t@!%p1 bra $L_wait;
\tld.param.u32 %r2, [bytes];
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %r2;
\tld.param.u32 %r3, [c0];
\tld.param.u32 %r4, [c1];
\tld.param.u32 %r5, [doff];
\tmov.u32 %r6, dyn;
\tadd.u32 %r7, %r6, %r5;
\tmov.u32 %r8, bar;
{map_src}\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r7], [%rd8, {{%r3, %r4}}], [%r8];
$L_wait:
\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
\t@!%p2 bra $L_wait;
\t// every thread dumps 64 bytes of the 16 KiB window
\tmov.u32 %r9, dyn;
\tshl.b32 %r10, %r1, 6;
\tadd.u32 %r11, %r9, %r10;
\tmul.wide.u32 %rd2, %r1, 64;
\tadd.s64 %rd3, %rd1, %rd2;
\tmov.u32 %r12, 0;
$L_dump:
\tadd.u32 %r13, %r11, %r12;
\tld.shared.v4.u32 {{%r20, %r21, %r22, %r23}}, [%r13];
\tcvt.u64.u32 %rd4, %r12;
\tadd.s64 %rd5, %rd3, %rd4;
\tst.global.v4.u32 [%rd5], {{%r20, %r21, %r22, %r23}};
\tadd.u32 %r12, %r12, 16;
\tsetp.lt.u32 %p3, %r12, 64;
\t@%p3 bra $L_dump;
\tret;
"
    );
    let (m, _) = module(shared, params, &body);
    let mut mem = Memory::new();
    let global = pattern((map.rows * map.row_stride) as usize, 17);
    let base = upload(&mut mem, &global, false);
    let map = TensorMap2d { base, ..*map };
    let gmap = upload(&mut mem, &map.encode(), false);
    let out = mem.alloc(16384, true);
    m.launch(
        "k",
        &threads(256, 16384),
        &[
            ParamValue::U64(out),
            ParamValue::U64(gmap),
            ParamValue::Bytes(map.encode().to_vec()),
            ParamValue::U32(c0 as u32),
            ParamValue::U32(c1 as u32),
            ParamValue::U32(dst_off),
            ParamValue::U32(map.box_bytes * map.box_rows),
        ],
        &mut mem,
    )?;
    // The dynamic block starts at the first 1024-byte boundary after the
    // reserved KiB and the 8-byte barrier: 0x800.
    let dyn_base = 0x800;
    let img = tensor_image(
        &map,
        &global,
        i64::from(c0),
        i64::from(c1),
        dyn_base + dst_off,
        dyn_base,
        16384,
    );
    assert_eq!(mem.read(out, 16384).unwrap(), &img[..], "map {map:?} at ({c0}, {c1})");
    Ok((img, dyn_base))
}

#[test]
fn tensor_copy_swizzles_and_fills_out_of_bounds_with_zeros() {
    let map = |box_bytes, box_rows, swizzle| TensorMap2d {
        base: 0,
        row_bytes: 300,
        rows: 70,
        row_stride: 320,
        box_bytes,
        box_rows,
        swizzle,
    };
    // In bounds, every swizzle, parameter and global maps.
    tensor_copy(&map(128, 64, 128), false, 128, 3, 0).unwrap();
    tensor_copy(&map(128, 64, 128), true, 16, 0, 1024).unwrap();
    tensor_copy(&map(64, 32, 64), false, 64, 5, 128).unwrap();
    tensor_copy(&map(32, 40, 32), true, 32, 7, 256).unwrap();
    tensor_copy(&map(48, 30, 0), false, 0, 1, 384).unwrap();
    // Out of bounds on the right, below, and at negative coordinates: the
    // full box is still counted (or the wait would never complete).
    let (img, _) = tensor_copy(&map(128, 64, 128), false, 256, 40, 2048).unwrap();
    assert!(img.iter().filter(|&&b| b != 0).count() > 0);
    tensor_copy(&map(128, 16, 128), true, -64, -8, 0).unwrap();
    tensor_copy(&map(256, 8, 0), false, 200, 68, 0).unwrap();
    tensor_copy(&map(64, 16, 64), false, 400, 100, 0).unwrap();
}

#[test]
fn tensor_copy_errors_are_reported() {
    let map = TensorMap2d {
        base: 0,
        row_bytes: 256,
        rows: 64,
        row_stride: 256,
        box_bytes: 128,
        box_rows: 64,
        swizzle: 128,
    };
    let check = |e: EmuError, msg: &str| {
        let text = e.to_string();
        assert_eq!(e.kernel(), Some("k"), "{text}");
        assert_eq!(e.thread(), Some((0, 0, 0)), "{text}");
        assert!(e.instruction().unwrap().contains("cp.async.bulk.tensor.2d"), "{text}");
        assert!(e.message().contains(msg), "expected `{msg}` in {text}");
    };
    // The 128-byte swizzle needs a 1024-byte aligned destination.
    check(tensor_copy(&map, false, 0, 0, 512).unwrap_err(), "1024-byte aligned");
    check(
        tensor_copy(&TensorMap2d { swizzle: 0, ..map }, false, 0, 0, 64).unwrap_err(),
        "128-byte aligned",
    );
    check(
        tensor_copy(&TensorMap2d { box_bytes: 256, ..map }, false, 0, 0, 0).unwrap_err(),
        "box_bytes <= 128",
    );
    // A box that does not fit the 16 KiB window.
    check(
        tensor_copy(&TensorMap2d { box_rows: 128, ..map }, false, 0, 0, 1024).unwrap_err(),
        "out of bounds",
    );
    // Bytes that are not an emulator tensor map.
    let shared = ".shared .align 8 .b8 bar[8];\n.shared .align 1024 .b8 buf[1024];\n";
    let body = "\tmbarrier.init.shared::cta.b64 [bar], 1;\n\tfence.mbarrier_init.release.cluster;\n\tmov.b64 %rd7, pmap;\n\tcvta.param.u64 %rd8, %rd7;\n\tmov.u32 %r7, buf;\n\tmov.u32 %r8, bar;\n\tmov.u32 %r3, 0;\n\tcp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r7], [%rd8, {%r3, %r3}], [%r8];\n\tret;\n";
    let (m, src) = module(shared, ".param .align 64 .b8 pmap[128]", body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &threads(1, 0), &[ParamValue::Bytes(vec![7; 128])], &mut mem)
        .unwrap_err();
    assert_error(
        &e,
        &src,
        "cp.async.bulk.tensor",
        (0, 0, 0),
        (0, 0, 0),
        "not an emulator tensor map",
    );
}

// Item 5 of issue 24: the fence that publishes an mbarrier init.
#[test]
fn an_init_is_published_to_the_async_proxy_by_a_fence_of_cluster_scope_or_a_proxy_fence() {
    let shared = ".shared .align 8 .b8 bar[8];\n.shared .align 16 .b8 buf[64];\n";
    let run = |fence: &str| {
        let body = format!(
            "\tld.param.u64 %rd1, [in];\n\tmbarrier.init.shared::cta.b64 [bar], 1;\n{fence}\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;\n\tmov.u32 %r1, buf;\n\tmov.u32 %r2, bar;\n\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];\n$L_w:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;\n\t@!%p1 bra $L_w;\n\tret;\n"
        );
        let (m, src) = module(shared, ".param .u64 in", &body);
        let mut mem = Memory::new();
        let inp = upload(&mut mem, &pattern(64, 1), false);
        (m.launch("k", &threads(1, 0), &[ParamValue::U64(inp)], &mut mem), src)
    };
    for fence in [
        "\tfence.mbarrier_init.release.cluster;\n",
        "\tfence.proxy.async.shared::cta;\n",
        "\tfence.proxy.async;\n",
        "\tfence.acq_rel.cluster;\n",
        "\tfence.sc.gpu;\n",
        "\tmembar.gl;\n",
    ] {
        let (r, src) = run(fence);
        r.unwrap_or_else(|e| panic!("{fence}: {e}\n{src}"));
    }
    for fence in ["", "\tfence.acq_rel.cta;\n", "\tfence.proxy.async.global;\n"] {
        let (r, src) = run(fence);
        let e = r.expect_err(fence);
        let init = common::line_of(&src, "mbarrier.init");
        let want = format!(
            "mbarrier init not published to the async proxy: this cp.async.bulk completes on the mbarrier initialised at line {init},"
        );
        assert_error(&e, &src, "cp.async.bulk", (0, 0, 0), (0, 0, 0), &want);
    }
}
