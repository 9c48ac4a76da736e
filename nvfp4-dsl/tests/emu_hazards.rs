//! Every hazard class of the emulator's adversarial mode on a focused,
//! hand-written sm_100a kernel that has exactly that bug, next to its twin
//! with the synchronisation in place. A bug must be reported under every
//! seed of the adversarial schedule (and the sequential one), naming the
//! kernel, the block, the thread, both PTX lines and the operation (a
//! racing read that runs before the write is a read of unwritten shared
//! memory, at the read); its
//! twin must pass under all of them with the right output. Then the
//! schedule itself: the same seed gives the same run, seeds give
//! different orders, a copy's destination holds poison until it lands.

use nvfp4_dsl::emu::{EmuError, Launch, Memory, Module, Options, ParamValue};

mod common;
use common::{download_u32, le_bytes, line_of, upload};

const HEAD: &str = ".version 8.7\n.target sm_100a\n.address_size 64\n";

/// Every kernel here: `k(.param .u64 in, .param .u64 out)`, `%r1` its
/// thread index, `%rd1`/`%rd2` the pointers, `%p1` true for thread 0.
fn kernel(shared: &str, body: &str) -> String {
    format!(
        "{HEAD}{shared}.visible .entry k(.param .u64 in, .param .u64 out)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<32>;\n\t.reg .b32 %v<8>;\n\tld.param.u64 %rd1, [in];\n\tld.param.u64 %rd2, [out];\n\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n{body}\tret;\n}}\n"
    )
}

/// The words of `in`: 1000 + i.
const INPUT: usize = 256;

/// Runs `src` on one block of `threads` threads under `options`: the 1024
/// words of `out`, which start as all ones.
fn run(src: &str, threads: u32, options: &Options) -> Result<Vec<u32>, EmuError> {
    let module = Module::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut mem = Memory::new();
    let input: Vec<u32> = (0..INPUT as u32).map(|i| 1000 + i).collect();
    let inp = upload(&mut mem, &le_bytes(&input), false);
    let out = upload(&mut mem, &[0xFF; 4096], true);
    let launch = Launch::new((1, 1, 1), (threads, 1, 1), 0);
    module.launch_with(
        "k",
        &launch,
        &[ParamValue::U64(inp), ParamValue::U64(out)],
        &mut mem,
        options,
    )?;
    Ok(download_u32(&mem, out, 1024))
}

/// Eight seeds of the adversarial schedule, four of the priority one, and
/// the sequential one.
fn schedules() -> impl Iterator<Item = Options> {
    (0..8)
        .map(Options::adversarial)
        .chain((0..4).map(Options::priority))
        .chain([Options::sequential()])
}

/// Checks that `src` fails under every schedule in kernel `k`, block
/// (0,0,0), naming every line of `lines` (the first line containing each
/// needle: the error's own line, or the other line its message names),
/// with a text containing every one of `words`.
fn fails(src: &str, threads: u32, lines: &[&str], words: &[&str]) {
    for options in schedules() {
        let e = match run(src, threads, &options) {
            Ok(_) => panic!("{options:?}: the kernel ran without an error:\n{src}"),
            Err(e) => e,
        };
        let text = e.to_string();
        assert_eq!((e.kernel(), e.block()), (Some("k"), Some((0, 0, 0))), "{text}");
        assert!(e.thread().is_some(), "{text}");
        for needle in lines {
            let line = line_of(src, needle);
            assert!(
                e.line() == Some(line) || e.message().contains(&format!("line {line}")),
                "{options:?}: expected line {line} (`{needle}`) in: {text}"
            );
        }
        for w in words {
            assert!(text.contains(w), "{options:?}: expected `{w}` in: {text}");
        }
    }
}

/// Checks that `src` passes under every schedule with the output `want`
/// gives for each word of `out` it writes (the others stay all ones).
fn passes(src: &str, threads: u32, want: impl Fn(usize) -> Option<u32>) {
    for options in schedules() {
        let got = run(src, threads, &options).unwrap_or_else(|e| panic!("{options:?}: {e}\n{src}"));
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, want(i).unwrap_or(u32::MAX), "{options:?}: out[{i}]");
        }
    }
}

/// `body` with the marker line `// @name` replaced by `text` (the twin)
/// or removed (the bug).
fn with(body: &str, name: &str, text: &str) -> String {
    body.replace(&format!("\t// @{name}\n"), text)
}

// ----- asynchronous copies -----

const COPY_SHARED: &str = ".shared .align 8 .b8 bar[24];\n.shared .align 128 .b8 buf[256];\n";

/// Thread 0 copies 64 words into `buf`; then 32 threads each store one
/// word of it to `out`.
const COPY: &str = "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
\t@%p1 fence.mbarrier_init.release.cluster;
\tbar.sync 0;
\tmov.u32 %r2, buf;
\tmov.u32 %r3, bar;
\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
\t@%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 256, [%r3];
\t// @wait
\tshl.b32 %r4, %r1, 2;
\tadd.u32 %r5, %r2, %r4;
\tld.shared.u32 %r6, [%r5];
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.s64 %rd4, %rd2, %rd3;
\tst.global.u32 [%rd4], %r6;
";

const WAIT_BAR0: &str = "$L_w:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;\n\t@!%p2 bra $L_w;\n";

#[test]
fn reading_a_copy_before_its_mbarrier_wait_is_reported() {
    let bug = kernel(COPY_SHARED, &with(COPY, "wait", ""));
    fails(&bug, 32, &["cp.async.bulk", "ld.shared.u32 %r6"], &["cp.async.bulk"]);
    let twin = kernel(COPY_SHARED, &with(COPY, "wait", WAIT_BAR0));
    passes(&twin, 32, |i| (i < 32).then_some(1000 + i as u32));
}

/// Thread 0 fills `buf` twice (words 0..64, then 64..128), completing on
/// the mbarriers at `bar` and `bar + 8`; warp 1 reads each fill and
/// releases `buf` on the `empty` mbarrier at `bar + 16`.
const REFILL: &str = "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
\t@%p1 mbarrier.init.shared::cta.b64 [bar+8], 1;
\t@%p1 mbarrier.init.shared::cta.b64 [bar+16], 32;
\t@%p1 fence.mbarrier_init.release.cluster;
\tbar.sync 0;
\tmov.u32 %r2, buf;
\tmov.u32 %r3, bar;
\tsetp.lt.u32 %p3, %r1, 32;
\t@%p3 bra $L_producer;
\tand.b32 %r4, %r1, 31;
\tshl.b32 %r5, %r4, 2;
\tadd.u32 %r6, %r2, %r5;
\tmul.wide.u32 %rd3, %r4, 4;
\tadd.s64 %rd4, %rd2, %rd3;
$L_w0:
\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
\t@!%p2 bra $L_w0;
\tld.shared.u32 %r7, [%r6];
\tst.global.u32 [%rd4], %r7;
\tmbarrier.arrive.shared::cta.b64 _, [bar+16];
$L_w1:
\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar+8], 0;
\t@!%p2 bra $L_w1;
\tld.shared.u32 %r8, [%r6];
\tst.global.u32 [%rd4+128], %r8;
\tret;
$L_producer:
\t@!%p1 ret;
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 256, [%r3];
\t// @empty
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [bar+8], 256;
\tadd.u32 %r9, %r3, 8;
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1+256], 256, [%r9];
$L_w2:
\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar+8], 0;
\t@!%p2 bra $L_w2;
";

#[test]
fn refilling_a_stage_before_its_readers_release_it_is_reported() {
    let bug = kernel(COPY_SHARED, &with(REFILL, "empty", ""));
    fails(&bug, 64, &[], &["cp.async.bulk", "shared memory"]);
    let empty = "$L_e:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p4, [bar+16], 0;\n\t@!%p4 bra $L_e;\n";
    let twin = kernel(COPY_SHARED, &with(REFILL, "empty", empty));
    passes(&twin, 64, |i| match i {
        0..32 => Some(1000 + i as u32),
        32..64 => Some(1064 + i as u32 - 32),
        _ => None,
    });
}

/// 32 threads store a word each into `buf`; after a barrier thread 0
/// copies `buf` to `out` with a bulk copy (the async proxy reads it).
const STORE_OUT: &str = "\tshl.b32 %r4, %r1, 2;
\tmov.u32 %r2, buf;
\tadd.u32 %r5, %r2, %r4;
\tadd.u32 %r6, %r1, 7;
\tst.shared.u32 [%r5], %r6;
\t// @fence
\tbar.sync 0;
\t// @late
\t@%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 128;
\t@%p1 cp.async.bulk.commit_group;
\t@%p1 cp.async.bulk.wait_group.read 0;
";

#[test]
fn an_async_read_of_generic_stores_needs_an_ordered_proxy_fence() {
    let fence = "\tfence.proxy.async.shared::cta;\n";
    let bug = kernel(COPY_SHARED, &with(&with(STORE_OUT, "fence", ""), "late", ""));
    fails(
        &bug,
        32,
        &["cp.async.bulk.global", "st.shared.u32"],
        &["missing fence.proxy.async"],
    );
    // A fence after the barrier is no better: nothing orders it before
    // the copy.
    let late = kernel(COPY_SHARED, &with(&with(STORE_OUT, "fence", ""), "late", fence));
    fails(&late, 32, &["cp.async.bulk.global"], &["fence.proxy.async"]);
    let twin = kernel(COPY_SHARED, &with(&with(STORE_OUT, "fence", fence), "late", ""));
    passes(&twin, 32, |i| (i < 32).then_some(i as u32 + 7));
}

// ----- mbarriers -----

#[test]
fn mbarrier_misuse_is_reported() {
    // More arrivals than the phase expects: thread 0 arrives twice while
    // the phase still waits for 16 bytes.
    let over = "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;\n\t@%p1 fence.mbarrier_init.release.cluster;\n\t@%p1 mbarrier.expect_tx.shared::cta.b64 [bar], 16;\n\t@%p1 mbarrier.arrive.shared::cta.b64 _, [bar];\n\t// @second\n";
    let second = "\t@%p1 mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];\n";
    fails(
        &kernel(COPY_SHARED, &with(over, "second", second)),
        32,
        &["mbarrier.arrive.release"],
        &["more than are pending"],
    );
    passes(&kernel(COPY_SHARED, &with(over, "second", "")), 32, |_| None);
    // More bytes than expected: 256 bytes land on an expect_tx of 128.
    let bytes = COPY.replace("[bar], 256;", "[bar], 128;");
    fails(
        &kernel(COPY_SHARED, &with(&bytes, "wait", WAIT_BAR0)),
        32,
        &["cp.async.bulk"],
        &["128 more transaction bytes than expected in phase 0"],
    );
    // A wait that can never complete (two arrivals expected, one comes)
    // is a deadlock naming where every warp is.
    let deadlock = COPY.replace(
        "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;",
        "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 2;",
    );
    fails(
        &kernel(COPY_SHARED, &with(&deadlock, "wait", WAIT_BAR0)),
        64,
        &["mbarrier.try_wait"],
        &[
            "mbarrier wait can never complete",
            "Where the warps are: warp 0: lanes 0-31 wait at the mbarrier at 0x400 for parity 0",
            "warp 1: lanes 0-31 wait at",
        ],
    );
    // Invalidated in the middle of a phase; initialised twice.
    let inval = "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 2;\n\t@%p1 fence.mbarrier_init.release.cluster;\n\t@%p1 mbarrier.arrive.shared::cta.b64 _, [bar];\n\t// @second\n\t@%p1 mbarrier.inval.shared::cta.b64 [bar];\n";
    fails(
        &kernel(COPY_SHARED, &with(inval, "second", "")),
        32,
        &["mbarrier.inval"],
        &["while it is in use", "phase 0 is under way"],
    );
    let second = "\t@%p1 mbarrier.arrive.shared::cta.b64 _, [bar];\n";
    passes(&kernel(COPY_SHARED, &with(inval, "second", second)), 32, |_| None);
    let twice = "\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;\n\t@%p1 fence.mbarrier_init.release.cluster;\n\t// @inval\n\t@%p1 mbarrier.init.shared::cta.b64 [bar], 3;\n\t@%p1 fence.mbarrier_init.release.cluster;\n";
    fails(
        &kernel(COPY_SHARED, &with(twice, "inval", "")),
        32,
        &["[bar], 3;"],
        &["invalidate it first"],
    );
    let inval = "\t@%p1 mbarrier.inval.shared::cta.b64 [bar];\n";
    passes(&kernel(COPY_SHARED, &with(twice, "inval", inval)), 32, |_| None);
}

// ----- data races -----

/// Thread 0 (of warp 0) writes a slot that every thread then reads.
const BROADCAST: &str = "\tmov.u32 %r2, buf;
\t@%p1 st.shared.u32 [%r2], 42;
\t// @sync
\tld.shared.u32 %r3, [%r2];
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.s64 %rd4, %rd2, %rd3;
\tst.global.u32 [%rd4], %r3;
";

/// Checks that `src`, whose threads read the slot `BROADCAST` writes with
/// nothing ordering the two, fails under every schedule: as a race naming
/// both lines or, where a reader runs before the write, as a read of
/// unwritten shared memory at the read that says to order the write before
/// it. Returns how many schedules gave each.
fn fails_as_race_or_unwritten(src: &str, threads: u32) -> (usize, usize) {
    let (mut races, mut unwritten) = (0, 0);
    for options in schedules() {
        let e = run(src, threads, &options).expect_err("the missing barrier");
        let text = e.to_string();
        if e.message().starts_with("read of unwritten shared memory") {
            assert_eq!(e.line(), Some(line_of(src, "ld.shared.u32 %r3")), "{text}");
            assert!(text.contains("order that before this read (sync_threads()"), "{text}");
            unwritten += 1;
            continue;
        }
        for needle in ["st.shared.u32 [%r2], 42", "ld.shared.u32 %r3"] {
            let line = line_of(src, needle);
            assert!(
                e.line() == Some(line) || e.message().contains(&format!("line {line}")),
                "{options:?}: expected line {line} in: {text}"
            );
        }
        assert!(text.contains("shared-memory data race: this thread reads"), "{text}");
        races += 1;
    }
    (races, unwritten)
}

#[test]
fn a_slot_one_thread_writes_and_every_warp_reads_without_a_barrier_is_a_race() {
    let bug = kernel(COPY_SHARED, &with(BROADCAST, "sync", ""));
    let (races, unwritten) = fails_as_race_or_unwritten(&bug, 128);
    assert!(races > 0 && unwritten > 0, "{races} races, {unwritten} unwritten reads");
    // Within one warp, bar.warp.sync is the barrier.
    let warp = kernel(COPY_SHARED, &with(BROADCAST, "sync", "\tbar.warp.sync -1;\n"));
    passes(&warp, 32, |i| (i < 32).then_some(42));
    fails_as_race_or_unwritten(&warp, 64);
    let twin = kernel(COPY_SHARED, &with(BROADCAST, "sync", "\tbar.sync 0;\n"));
    passes(&twin, 128, |i| (i < 128).then_some(42));
}

// ----- tensor memory -----

const TC_SHARED: &str =
    ".shared .align 8 .b8 bar[8];\n.shared .align 4 .b8 slot[4];\n.shared .align 1024 .b8 sm[8192];\n";

/// Four warps: warp 0 allocates 32 columns; every thread zeroes its 64
/// bytes of the operands (then `fence.proxy.async`: the MMA reads them
/// through the async proxy); every warp puts scale
/// factors 1.0 in its lane quarter (columns 16..20 for A, 20 for B) and
/// zeros in D;
/// thread 0 issues one MMA (N = 8, A and B all zeros in shared memory)
/// into columns 0..8 and commits; every warp loads its 32 rows of D and
/// stores them; warp 0 frees the columns.
const MMA: &str = "\tshr.u32 %r2, %r1, 5;
\tsetp.eq.u32 %p2, %r2, 0;
\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
\t@%p1 fence.mbarrier_init.release.cluster;
\t@%p2 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
\t@%p2 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
\tfence.mbarrier_init.release.cluster;
\tmov.u32 %r40, sm;
\tmad.lo.u32 %r41, %r1, 64, %r40;
\tmov.u32 %r42, 0;
\tst.shared.v4.u32 [%r41], {%r42, %r42, %r42, %r42};
\tst.shared.v4.u32 [%r41+16], {%r42, %r42, %r42, %r42};
\tst.shared.v4.u32 [%r41+32], {%r42, %r42, %r42, %r42};
\tst.shared.v4.u32 [%r41+48], {%r42, %r42, %r42, %r42};
\tfence.proxy.async.shared::cta;
\ttcgen05.fence::before_thread_sync;
\tbar.sync 0;
\ttcgen05.fence::after_thread_sync;
\tld.shared.u32 %r10, [slot];
\tshl.b32 %r11, %r2, 21;
\tadd.u32 %r12, %r10, %r11;
\tmov.u32 %r13, 0x38383838;
\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r12+16], {%r13, %r13, %r13, %r13};
\ttcgen05.st.sync.aligned.32x32b.x1.b32 [%r12+20], {%r13};
\tmov.u32 %r14, 0;
\ttcgen05.st.sync.aligned.32x32b.x8.b32 [%r12], {%r14, %r14, %r14, %r14, %r14, %r14, %r14, %r14};
\ttcgen05.wait::st.sync.aligned;
\ttcgen05.fence::before_thread_sync;
\tbar.sync 0;
\ttcgen05.fence::after_thread_sync;
\t@!%p1 bra $L_issued;
\tmov.u32 %r20, sm;
\tshr.u32 %r21, %r20, 4;
\tcvt.u64.u32 %rd10, %r21;
\tor.b64 %rd10, %rd10, 0x0000401000080000;
\tadd.u64 %rd11, %rd10, 256;
\tadd.u32 %r22, %r10, 16;
\tadd.u32 %r23, %r10, 20;
\tmov.u32 %r24, 0x08020480;
\tsetp.ne.u32 %p3, %r1, 0;
\ttcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%r10], %rd10, %rd11, %r24, [%r22], [%r23], %p3;
\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];
$L_issued:
\t// @wait
\t// @after
\ttcgen05.ld.sync.aligned.32x32b.x8.b32 {%v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7}, [%r12];
\t// @wait_ld
\tmul.wide.u32 %rd3, %r1, 32;
\tadd.s64 %rd4, %rd2, %rd3;
\tst.global.v4.u32 [%rd4], {%v0, %v1, %v2, %v3};
\tst.global.v4.u32 [%rd4+16], {%v4, %v5, %v6, %v7};
\t// @before
\tbar.sync 0; // the last barrier
\t@!%p2 bra $L_end;
\ttcgen05.fence::after_thread_sync;
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r10, 32;
$L_end:
";

const WAIT_MMA: &str = "$L_wm:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p4, [bar], 0;\n\t@!%p4 bra $L_wm;\n";
const AFTER: &str = "\ttcgen05.fence::after_thread_sync;\n";
const WAIT_LD: &str = "\ttcgen05.wait::ld.sync.aligned;\n";
const BEFORE: &str = "\ttcgen05.fence::before_thread_sync;\n";

/// The MMA kernel with the markers in `present` filled in and the others
/// left out.
fn mma_kernel(present: &[&str]) -> String {
    let mut body = MMA.to_string();
    for (name, text) in [
        ("wait", WAIT_MMA),
        ("after", AFTER),
        ("wait_ld", WAIT_LD),
        ("before", BEFORE),
    ] {
        body = with(&body, name, if present.contains(&name) { text } else { "" });
    }
    kernel(TC_SHARED, &body)
}

#[test]
fn tensor_memory_hazards_are_reported() {
    let all = ["wait", "after", "wait_ld", "before"];
    // The twin: every row of D is 0 (zero operands).
    passes(&mma_kernel(&all), 128, |_| Some(0));
    // Loading D before the MMA's commit has been waited for.
    fails(
        &mma_kernel(&["after", "wait_ld", "before"]),
        128,
        &["tcgen05.ld", "tcgen05.mma"],
        &["tcgen05.mma"],
    );
    // Using a loaded register before tcgen05.wait::ld.
    fails(
        &mma_kernel(&["wait", "after", "before"]),
        128,
        &["st.global.v4.u32 [%rd4],", "tcgen05.ld"],
        &["before the tcgen05.wait::ld that completes it"],
    );
    // A tcgen05.ld right after the mbarrier wait, no fence between.
    fails(
        &mma_kernel(&["wait", "wait_ld", "before"]),
        128,
        &["tcgen05.ld", "mbarrier.try_wait.parity.shared::cta.b64 %p4"],
        &["no tcgen05.fence::after_thread_sync"],
    );
    // The barrier before the dealloc, no tcgen05.fence::before_thread_sync
    // after the loads.
    fails(
        &mma_kernel(&["wait", "after", "wait_ld"]),
        128,
        &["the last barrier", "tcgen05.ld"],
        &["tcgen05.fence::before_thread_sync is missing"],
    );
}

#[test]
fn freeing_tensor_memory_under_an_mma_and_not_freeing_it_are_reported() {
    // Nobody waits for the MMA: warp 0 frees its columns after the barrier.
    let no_loads = |wait: &str| {
        let body = MMA
            .split("\t// @wait\n")
            .next()
            .expect("the part before the wait")
            .to_string()
            + wait
            + "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\t@!%p2 bra $L_end;\n\ttcgen05.fence::after_thread_sync;\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r10, 32;\n$L_end:\n";
        kernel(TC_SHARED, &body)
    };
    fails(
        &no_loads(""),
        128,
        &["tcgen05.dealloc", "tcgen05.mma"],
        &["tcgen05.dealloc"],
    );
    passes(&no_loads(WAIT_MMA), 128, |_| None);
    // A block that exits with its columns allocated.
    let leak = mma_kernel(&["wait", "after", "wait_ld", "before"])
        .replace("\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r10, 32;\n", "");
    fails(&leak, 128, &["tcgen05.alloc"], &["tensor memory not freed"]);
}

// ----- the schedule -----

/// Every thread takes a ticket from a global counter: the tickets are the
/// order in which the threads ran.
const TICKETS: &str = "\tatom.global.add.u32 %r2, [%rd2+4092], 1;
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.s64 %rd4, %rd2, %rd3;
\tst.global.u32 [%rd4], %r2;
";

#[test]
fn the_order_of_the_warps_is_a_function_of_the_seed() {
    let src = kernel("", TICKETS);
    // The counter starts at all ones: ticket t is t - 1.
    let order = |options: Options| run(&src, 256, &options).unwrap_or_else(|e| panic!("{e}"))[..256].to_vec();
    let warps = |tickets: &[u32]| {
        let mut first: Vec<(u32, usize)> = (0..8).map(|w| (tickets[32 * w].wrapping_add(1), w)).collect();
        first.sort_unstable();
        first.into_iter().map(|(_, w)| w).collect::<Vec<_>>()
    };
    assert_eq!(warps(&order(Options::sequential())), (0..8).collect::<Vec<_>>());
    let runs: Vec<Vec<u32>> = (0..6).map(|seed| order(Options::adversarial(seed))).collect();
    for (seed, tickets) in runs.iter().enumerate() {
        assert_eq!(*tickets, order(Options::adversarial(seed as u64)), "seed {seed} twice");
    }
    let distinct: std::collections::HashSet<Vec<usize>> = runs.iter().map(|t| warps(t)).collect();
    assert!(
        distinct.len() > 3,
        "the seeds ran the warps in only {} orders",
        distinct.len()
    );
}

/// Thread 0 copies 128 bytes of shared memory to `out` with a bulk copy
/// and reads them back from global memory, before or after waiting for it.
const STORE_READBACK: &str = "\tmov.u32 %r2, buf;
\tshl.b32 %r4, %r1, 2;
\tadd.u32 %r5, %r2, %r4;
\tadd.u32 %r6, %r1, 7;
\tst.shared.u32 [%r5], %r6;
\tfence.proxy.async.shared::cta;
\tbar.sync 0;
\t@!%p1 ret;
\tcp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 128;
\tcp.async.bulk.commit_group;
\t// @wait
\tld.global.u32 %r7, [%rd2+64];
\tst.global.u32 [%rd2+256], %r7;
\tcp.async.bulk.wait_group.read 0;
";

#[test]
fn a_copy_destination_holds_poison_until_the_copy_completes() {
    let wait = "\tcp.async.bulk.wait_group 0;\n";
    let twin = kernel(COPY_SHARED, &with(STORE_READBACK, "wait", wait));
    passes(&twin, 32, |i| match i {
        0..32 => Some(i as u32 + 7),
        64 => Some(16 + 7),
        _ => None,
    });
    // Read early, word 16 is the copy's value if it has landed, else
    // NaN bits; the latest completion point of some seed leaves it NaN.
    let early = kernel(COPY_SHARED, &with(STORE_READBACK, "wait", ""));
    let seen: Vec<u32> = schedules()
        .map(|o| run(&early, 32, &o).unwrap_or_else(|e| panic!("{e}"))[64])
        .collect();
    assert!(seen.iter().all(|&v| v == 23 || v == u32::MAX), "{seen:?}");
    assert!(seen.contains(&u32::MAX) && seen.contains(&23), "{seen:?}");
}
