//! Thread-block clusters on hand-written sm_90 kernels: the cluster special
//! registers, distributed shared memory (`mapa`, `ld`/`st`/`atom
//! .shared::cluster`, generic accesses) around the cluster barrier, and
//! every error: launch shapes, `.reqnctapercluster`, a missing barrier (a
//! read of a block that has exited, a deadlock), barrier misuse and bad
//! cluster addresses, with kernel, block, thread and line.

use nvfp4_dsl::emu::{EmuError, Launch, Memory, Module, Options, ParamValue};

mod common;
use common::{assert_error, download_u32};

const HEAD: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// Registers every kernel here declares.
const REGS: &str = "\t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<32>;\n";

/// A module with entry directives `dirs`, a 2 KiB shared array `buf` and
/// one entry `k(.param .u64 out)` whose body starts with `%rd1` = out,
/// `%r1` = %tid.x.
fn module(dirs: &str, body: &str) -> (Module, String) {
    let src = format!(
        "{HEAD}.shared .align 16 .b8 buf[2048];\n.shared .align 8 .b8 bar[8];\n.visible .entry k(.param .u64 out){dirs}\n{{\n{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %tid.x;\n{body}}}\n"
    );
    match Module::parse(&src) {
        Ok(m) => (m, src),
        Err(e) => panic!("{e}\n{src}"),
    }
}

/// Runs `k` with a 64 KiB output buffer: the output words, or the error.
fn run(m: &Module, launch: &Launch) -> Result<Vec<u32>, EmuError> {
    run_with(m, launch, &Options::default())
}

/// [`run`] under `options`.
fn run_with(m: &Module, launch: &Launch, options: &Options) -> Result<Vec<u32>, EmuError> {
    let mut mem = Memory::new();
    let out = mem.alloc(1 << 16, true);
    m.launch_with("k", launch, &[ParamValue::U64(out)], &mut mem, options)?;
    Ok(download_u32(&mem, out, 1 << 14))
}

/// The error of a launch that must fail, run in the sequential schedule:
/// these errors are ones that every block (or warp) would meet, and the
/// tests name the one that meets it first when block 0 runs first.
fn fail(m: &Module, launch: &Launch) -> EmuError {
    let mut mem = Memory::new();
    let out = mem.alloc(1 << 16, true);
    match m.launch_with("k", launch, &[ParamValue::U64(out)], &mut mem, &Options::sequential()) {
        Ok(_) => panic!("the launch {launch:?} succeeded"),
        Err(e) => e,
    }
}

fn clustered(grid: (u32, u32, u32), threads: u32, cluster: (u32, u32, u32)) -> Launch {
    Launch {
        cluster,
        ..Launch::new(grid, (threads, 1, 1), 0)
    }
}

// ----- special registers -----

/// Thread 0 of every block stores 16 special registers at
/// `out[16 * linear block index]`.
const SREGS: &str = "\tsetp.ne.u32 %p1, %r1, 0;
\t@%p1 ret;
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ctaid.y;
\tmov.u32 %r4, %ctaid.z;
\tmov.u32 %r5, %nctaid.x;
\tmov.u32 %r6, %nctaid.y;
\tmad.lo.u32 %r7, %r4, %r6, %r3;
\tmad.lo.u32 %r7, %r7, %r5, %r2;
\tmul.wide.u32 %rd2, %r7, 64;
\tadd.s64 %rd3, %rd1, %rd2;
\tmov.u32 %r10, %cluster_ctarank;
\tmov.u32 %r11, %cluster_nctarank;
\tmov.u32 %r12, %cluster_ctaid.x;
\tmov.u32 %r13, %cluster_ctaid.y;
\tmov.u32 %r14, %cluster_ctaid.z;
\tmov.u32 %r15, %cluster_nctaid.x;
\tmov.u32 %r16, %cluster_nctaid.y;
\tmov.u32 %r17, %cluster_nctaid.z;
\tmov.u32 %r18, %clusterid.x;
\tmov.u32 %r19, %clusterid.y;
\tmov.u32 %r20, %clusterid.z;
\tmov.u32 %r21, %nclusterid.x;
\tmov.u32 %r22, %nclusterid.y;
\tmov.u32 %r23, %nclusterid.z;
\tmov.pred %p2, %is_explicit_cluster;
\tselp.u32 %r24, 1, 0, %p2;
\tst.global.v4.u32 [%rd3], {%r10, %r11, %r12, %r13};
\tst.global.v4.u32 [%rd3+16], {%r14, %r15, %r16, %r17};
\tst.global.v4.u32 [%rd3+32], {%r18, %r19, %r20, %r21};
\tst.global.v4.u32 [%rd3+48], {%r22, %r23, %r24, %r7};
\tret;
";

/// The 16 words [`SREGS`] stores for block `(x, y, z)`.
fn sregs_of(b: (u32, u32, u32), grid: (u32, u32, u32), c: (u32, u32, u32), explicit: bool) -> Vec<u32> {
    let (x, y, z) = b;
    let rank = x % c.0 + (y % c.1) * c.0 + (z % c.2) * c.0 * c.1;
    vec![
        rank,
        c.0 * c.1 * c.2,
        x % c.0,
        y % c.1,
        z % c.2,
        c.0,
        c.1,
        c.2,
        x / c.0,
        y / c.1,
        z / c.2,
        grid.0 / c.0,
        grid.1 / c.1,
        grid.2 / c.2,
        u32::from(explicit),
        (z * grid.1 + y) * grid.0 + x,
    ]
}

#[test]
fn cluster_special_registers() {
    let (m, _) = module("", SREGS);
    let (mx, _) = module("\n.explicitcluster", SREGS);
    for (grid, c, module, explicit) in [
        ((4, 4, 2), (2, 2, 1), &m, true),
        ((6, 2, 2), (3, 1, 2), &m, true),
        ((3, 2, 1), (1, 1, 1), &m, false),
        ((3, 2, 1), (1, 1, 1), &mx, true),
    ] {
        let got = run(module, &clustered(grid, 32, c)).unwrap_or_else(|e| panic!("{e}"));
        for z in 0..grid.2 {
            for y in 0..grid.1 {
                for x in 0..grid.0 {
                    let i = ((z * grid.1 + y) * grid.0 + x) as usize;
                    assert_eq!(
                        got[16 * i..16 * i + 16],
                        sregs_of((x, y, z), grid, c, explicit)[..],
                        "grid {grid:?} cluster {c:?} block ({x},{y},{z})"
                    );
                }
            }
        }
    }
}

// ----- distributed shared memory -----

/// Every block of a cluster of `n` (in x, 128 threads) fills `buf` with
/// words `ctaid.x * 1000 + 3 * tid + seed`; after a cluster barrier each
/// thread reads word `tid` of its right neighbour (rank + 1) with
/// `ld.shared::cluster`, four words of its left neighbour with a generic
/// `ld.v4` through `mapa.u64`, and adds 1 to word `tid + 256` of rank 0
/// with `atom.shared::cluster` (every block zeroed those words first); it
/// stores `tid + 5` into word `tid + 128`
/// of the right neighbour. After a second barrier it reads back its own
/// word `tid + 128` and rank 0's word `tid + 256`. A third barrier keeps every block
/// alive until the others are done with its shared memory.
fn dsmem_body(seed: u32, n: u32, trailing_barrier: bool) -> String {
    let mut s = format!(
        "\tmov.u32 %r2, %ctaid.x;
\tmul.lo.u32 %r3, %r2, 1000;
\tmad.lo.u32 %r3, %r1, 3, %r3;
\tadd.u32 %r3, %r3, {seed};
\tshl.b32 %r4, %r1, 2;
\tmov.u32 %r5, buf;
\tadd.u32 %r6, %r5, %r4;
\tst.shared.u32 [%r6], %r3;
\tmov.u32 %r23, 0;
\tst.shared.u32 [%r6+1024], %r23;
\tbarrier.cluster.arrive.release.aligned;
\tbarrier.cluster.wait.acquire.aligned;
\tmov.u32 %r7, %cluster_ctarank;
\tadd.u32 %r8, %r7, 1;
\trem.u32 %r8, %r8, {n};
\tadd.u32 %r9, %r7, {};
\trem.u32 %r9, %r9, {n};
\tmapa.shared::cluster.u32 %r10, %r6, %r8;
\tld.shared::cluster.u32 %r11, [%r10];
\tcvt.u64.u32 %rd6, %r6;
\tcvta.shared.u64 %rd2, %rd6;
\tand.b64 %rd2, %rd2, -16;
\tmapa.u64 %rd3, %rd2, %r9;
\tld.v4.u32 {{%r12, %r13, %r14, %r15}}, [%rd3];
\tmapa.shared::cluster.u32 %r16, %r6, 0;
\tatom.shared::cluster.add.u32 %r17, [%r16+1024], 1;
\tadd.u32 %r18, %r1, 5;
\tst.shared::cluster.u32 [%r10+512], %r18;
\tbarrier.cluster.arrive.aligned;
\tbarrier.cluster.wait.aligned;
\tld.shared.u32 %r19, [%r6+512];
\tld.shared::cluster.u32 %r20, [%r16+1024];
\tmov.u32 %r21, %ctaid.x;
\tmad.lo.u32 %r22, %r21, 128, %r1;
\tmul.wide.u32 %rd4, %r22, 32;
\tadd.s64 %rd5, %rd1, %rd4;
\tst.global.v4.u32 [%rd5], {{%r11, %r12, %r13, %r14}};
\tst.global.v4.u32 [%rd5+16], {{%r15, %r17, %r19, %r20}};
",
        n - 1
    );
    if trailing_barrier {
        s += "\tbarrier.cluster.arrive.relaxed;\n\tbarrier.cluster.wait;\n";
    }
    s + "\tret;\n"
}

#[test]
fn distributed_shared_memory_round_trip() {
    for (n, seed) in [(2u32, 11u32), (4, 29), (8, 3)] {
        let (m, _) = module("", &dsmem_body(seed, n, true));
        let grid = 2 * n;
        let got = run(&m, &clustered((grid, 1, 1), 128, (n, 1, 1))).unwrap_or_else(|e| panic!("{e}"));
        let word = |cta: u32, t: u32| cta * 1000 + 3 * t + seed;
        for cta in 0..grid {
            let (base, rank) = (cta - cta % n, cta % n);
            let right = base + (rank + 1) % n;
            let left = base + (rank + n - 1) % n;
            for t in 0..128u32 {
                let q = t & !3;
                let o = ((cta * 128 + t) * 8) as usize;
                let want = [
                    word(right, t),
                    word(left, q),
                    word(left, q + 1),
                    word(left, q + 2),
                    word(left, q + 3),
                    got[o + 5],
                    t + 5,
                    n,
                ];
                assert_eq!(got[o..o + 8], want[..], "cluster of {n}, block {cta}, thread {t}");
            }
        }
        // The atomics on rank 0's word t + 256 saw 0, 1, ..., n - 1
        // increments, one block each.
        for base in (0..grid).step_by(n as usize) {
            for t in 0..128u32 {
                let mut seen: Vec<u32> = (base..base + n)
                    .map(|cta| got[((cta * 128 + t) * 8 + 5) as usize])
                    .collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "cluster at {base}, thread {t}");
            }
        }
    }
}

#[test]
fn reading_a_block_that_has_exited_is_reported() {
    // Without a barrier after the reads, block 1 (whose arrival completes
    // the phase) reads block 0's word and exits before block 0 reads its.
    let body = "\tshl.b32 %r4, %r1, 2;
\tmov.u32 %r5, buf;
\tadd.u32 %r6, %r5, %r4;
\tst.shared.u32 [%r6], %r1;
\tbarrier.cluster.arrive;
\tbarrier.cluster.wait;
\tmov.u32 %r7, %cluster_ctarank;
\txor.b32 %r8, %r7, 1;
\tmapa.shared::cluster.u32 %r10, %r6, %r8;
\tld.shared::cluster.u32 %r11, [%r10];
\tmul.wide.u32 %rd2, %r1, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r11;
\tret;
";
    let (m, src) = module("", body);
    let e = fail(&m, &clustered((2, 1, 1), 32, (2, 1, 1)));
    assert_error(
        &e,
        &src,
        "ld.shared::cluster.u32",
        (0, 0, 0),
        (0, 0, 0),
        "block (1,0,0) of the cluster has exited; its shared memory no longer exists",
    );
    // The round trip's trailing barrier is what keeps the blocks alive:
    // without it, block 1 reads rank 0's word after block 0 has ended.
    let (m, src) = module("", &dsmem_body(7, 2, false));
    let e = fail(&m, &clustered((2, 1, 1), 32, (2, 1, 1)));
    assert_error(
        &e,
        &src,
        "ld.shared::cluster.u32 %r20",
        (1, 0, 0),
        (0, 0, 0),
        "block (0,0,0) of the cluster has exited",
    );
}

/// Each of 128 threads per block stores a word, passes the cluster barrier,
/// reads its word of the other block of the pair, counts to 256 and stores
/// the word to `out`; with `trailing_barrier`, a cluster barrier before it
/// exits.
fn late_read_body(trailing_barrier: bool) -> String {
    let mut s = "\tshl.b32 %r4, %r1, 2;
\tmov.u32 %r5, buf;
\tadd.u32 %r6, %r5, %r4;
\tmov.u32 %r7, %cluster_ctarank;
\tmad.lo.u32 %r2, %r7, 1000, %r1;
\tst.shared.u32 [%r6], %r2;
\tbarrier.cluster.arrive;
\tbarrier.cluster.wait;
\txor.b32 %r8, %r7, 1;
\tmapa.shared::cluster.u32 %r10, %r6, %r8;
\tld.shared::cluster.u32 %r11, [%r10];
\tmov.u32 %r20, 0;
$L_count:
\tadd.u32 %r20, %r20, 1;
\tsetp.lt.u32 %p2, %r20, 256;
\t@%p2 bra $L_count;
\tmad.lo.u32 %r12, %r7, 128, %r1;
\tmul.wide.u32 %rd2, %r12, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r11;
"
    .to_string();
    if trailing_barrier {
        s += "\tbarrier.cluster.arrive;\n\tbarrier.cluster.wait;\n";
    }
    s + "\tret;\n"
}

#[test]
fn the_priority_schedule_runs_a_block_to_its_exit_before_its_peer_reads() {
    // Without a barrier after the reads, a block can do all its work and
    // exit while a warp of the other block has still to make the read
    // that follows the cluster barrier: the priority schedule runs one
    // block that far ahead under every seed (the lowest-priority warp runs
    // last, and each turn ends where a barrier lets others run), where
    // uniform random turns almost never do.
    let launch = clustered((2, 1, 1), 128, (2, 1, 1));
    let (m, _) = module("", &late_read_body(false));
    let caught = |options: fn(u64) -> Options| {
        (0..50)
            .filter(|&seed| {
                let mut mem = Memory::new();
                let out = mem.alloc(1 << 16, true);
                match m.launch_with("k", &launch, &[ParamValue::U64(out)], &mut mem, &options(seed)) {
                    Ok(_) => false,
                    Err(e) if e.to_string().contains("of the cluster has exited") => true,
                    Err(e) => panic!("seed {seed}: {e}"),
                }
            })
            .count()
    };
    // A change point that drops a warp of the block running ahead lets
    // the late reader run earlier: a few seeds miss (5 of these 50).
    let (priority, adversarial) = (caught(Options::priority), caught(Options::adversarial));
    assert!(
        priority >= 40,
        "the priority schedule reports the read in {priority} of 50 seeds"
    );
    println!("reported under {priority} of 50 priority seeds, {adversarial} of 50 adversarial ones");
    // With the barrier, every seed of both schedules runs it right.
    let (m, _) = module("", &late_read_body(true));
    for options in (0..8).flat_map(|seed| [Options::priority(seed), Options::adversarial(seed)]) {
        let mut mem = Memory::new();
        let out = mem.alloc(1 << 16, true);
        m.launch_with("k", &launch, &[ParamValue::U64(out)], &mut mem, &options)
            .unwrap_or_else(|e| panic!("{options:?}: {e}"));
        let got = download_u32(&mem, out, 256);
        for (i, &g) in got.iter().enumerate() {
            let (rank, t) = (i as u32 / 128, i as u32 % 128);
            assert_eq!(g, (rank ^ 1) * 1000 + t, "{options:?}: block {rank}, thread {t}");
        }
    }
}

// ----- the cluster barrier -----

#[test]
fn cluster_barrier_deadlock_names_who_has_not_arrived() {
    // Warp 0 of each block waits on the cluster barrier before bar.sync 0;
    // warp 1 waits at bar.sync 0 before arriving: neither can go on.
    let body = "\tshr.u32 %r2, %r1, 5;
\tsetp.ne.u32 %p1, %r2, 0;
\t@%p1 bra $L_w1;
\tbarrier.cluster.arrive;
\tbarrier.cluster.wait;
\tbar.sync 0;
\tret;
$L_w1:
\tbarrier.sync 0;
\tbarrier.cluster.arrive.relaxed;
\tbarrier.cluster.wait.acquire;
\tret;
";
    let (m, src) = module("", body);
    let e = fail(&m, &clustered((2, 1, 1), 64, (2, 1, 1)));
    let line = common::line_of(&src, "barrier.sync 0");
    assert_error(
        &e,
        &src,
        "barrier.cluster.wait;",
        (0, 0, 0),
        (0, 0, 0),
        &format!(
            "barrier.cluster.wait can never complete: 64 of the 128 threads of the cluster that have not exited arrived in phase 0; thread (32,0,0) of block (0,0,0) has not arrived: it waits at barrier 0 (line {line})"
        ),
    );
}

#[test]
fn exits_count_as_cluster_barrier_arrivals() {
    // Block 1's odd warps exit at once; the rest meet twice at the
    // cluster barrier and count how often they passed it.
    let body = "\tmov.u32 %r2, %ctaid.x;
\tshr.u32 %r3, %r1, 5;
\tand.b32 %r4, %r3, 1;
\tand.b32 %r4, %r4, %r2;
\tsetp.ne.u32 %p1, %r4, 0;
\t@%p1 ret;
\tbarrier.cluster.arrive;
\tbarrier.cluster.wait;
\tbarrier.cluster.arrive;
\tbarrier.cluster.wait;
\tmad.lo.u32 %r5, %r2, 128, %r1;
\tmul.wide.u32 %rd2, %r5, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], 2;
\tret;
";
    let (m, _) = module("", body);
    let got = run(&m, &clustered((2, 1, 1), 128, (2, 1, 1))).unwrap_or_else(|e| panic!("{e}"));
    for cta in 0..2usize {
        for t in 0..128usize {
            let exited = cta == 1 && (t / 32) % 2 == 1;
            assert_eq!(
                got[cta * 128 + t],
                if exited { 0 } else { 2 },
                "block {cta}, thread {t}"
            );
        }
    }
}

#[test]
fn cluster_barrier_misuse_is_reported() {
    let fail = |body: &str| {
        let (m, src) = module("", body);
        (fail(&m, &clustered((2, 1, 1), 64, (2, 1, 1))), src)
    };
    let (e, src) = fail("\tbarrier.cluster.wait;\n\tret;\n");
    assert_error(
        &e,
        &src,
        "barrier.cluster.wait",
        (0, 0, 0),
        (0, 0, 0),
        "without a preceding barrier.cluster.arrive",
    );
    let (e, src) = fail("\tbarrier.cluster.arrive;\n\tbarrier.cluster.arrive.relaxed;\n\tret;\n");
    assert_error(
        &e,
        &src,
        "barrier.cluster.arrive.relaxed",
        (0, 0, 0),
        (0, 0, 0),
        "twice without a barrier.cluster.wait",
    );
    let (e, src) = fail("\tsetp.lt.u32 %p1, %r1, 5;\n\t@%p1 barrier.cluster.arrive.aligned;\n\tret;\n");
    assert_error(
        &e,
        &src,
        "barrier.cluster.arrive.aligned",
        (0, 0, 0),
        (0, 0, 0),
        "must execute it together",
    );
}

// ----- cluster addresses -----

#[test]
fn bad_cluster_addresses_are_reported() {
    let fail = |body: &str| {
        let (m, src) = module(
            "",
            &format!("\tmov.u32 %r2, buf;\n\tmov.u32 %r3, %cluster_ctarank;\n\txor.b32 %r4, %r3, 1;\n{body}"),
        );
        (fail(&m, &clustered((4, 1, 1), 32, (2, 1, 1))), src)
    };
    let (e, src) = fail("\tmapa.shared::cluster.u32 %r5, %r2, 2;\n\tret;\n");
    assert_error(
        &e,
        &src,
        "mapa",
        (0, 0, 0),
        (0, 0, 0),
        "mapa to rank 2: the cluster has 2 blocks",
    );
    let (e, src) = fail(
        "\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n\tmapa.shared::cluster.u32 %r5, %r2, %r4;\n\tld.shared::cluster.u32 %r6, [%r5+4096];\n\tret;\n",
    );
    assert_error(
        &e,
        &src,
        "ld.shared::cluster",
        (1, 0, 0),
        (0, 0, 0),
        "at shared address 0x1001400 (offset 0x1400 in block (0,0,0) of the cluster) is out of bounds",
    );
    // A .shared::cta access reaches only the executing block.
    let (e, src) = fail(
        "\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n\tmapa.shared::cluster.u32 %r5, %r2, %r4;\n\tld.shared.u32 %r6, [%r5];\n\tret;\n",
    );
    assert_error(
        &e,
        &src,
        "ld.shared.u32",
        (1, 0, 0),
        (0, 0, 0),
        "is in block (0,0,0) of the cluster",
    );
    // An arrive on another block's mbarrier that was never initialised.
    let (e, src) = fail(
        "\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n\tmov.u32 %r7, bar;\n\tmapa.shared::cluster.u32 %r5, %r7, %r4;\n\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];\n\tret;\n",
    );
    assert_error(&e, &src, "mbarrier.arrive", (1, 0, 0), (0, 0, 0), "no mbarrier");
    // An arrive through a cluster address returns no state.
    let src = format!(
        "{HEAD}.shared .align 8 .b8 bar[8];\n.visible .entry k()\n{{\n{REGS}\tmov.u32 %r1, bar;\n\tmbarrier.arrive.release.cluster.shared::cluster.b64 %rd1, [%r1];\n\tret;\n}}\n"
    );
    let e = Module::parse(&src).expect_err("a state from a cluster arrive");
    assert!(e.to_string().contains("its destination must be `_`"), "{e}");
    // Other mbarrier operations reach the executing block's only.
    let (e, src) = fail(
        "\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n\tmov.u32 %r7, bar;\n\tmapa.shared::cluster.u32 %r5, %r7, %r4;\n\tmbarrier.complete_tx.shared::cluster.b64 [%r5], 16;\n\tret;\n",
    );
    assert_error(
        &e,
        &src,
        "mbarrier.complete_tx",
        (1, 0, 0),
        (0, 0, 0),
        "mbarrier.arrive.shared::cluster",
    );
    // The own block's mbarrier through a cluster address works.
    let (m, _) = module(
        "",
        "\tmov.u32 %r7, bar;\n\tmov.u32 %r3, %cluster_ctarank;\n\tmapa.shared::cluster.u32 %r5, %r7, %r3;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 mbarrier.init.shared::cta.b64 [bar], 32;\n\tbar.sync 0;\n\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];\n$L_w:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;\n\t@!%p2 bra $L_w;\n\tret;\n",
    );
    run(&m, &clustered((4, 1, 1), 32, (2, 1, 1))).unwrap_or_else(|e| panic!("{e}"));
}

// ----- bulk copies into another block -----

/// What [`peer_copy_body`] leaves out or does wrong.
#[derive(Clone, Copy, PartialEq)]
enum PeerCopyFault {
    None,
    /// Thread 0 issues without `fence.proxy.async` after the stores.
    NoProxyFence,
    /// Not a fault: the copy goes into the issuing block itself (through
    /// its own cluster address), completing on its own mbarrier.
    ToItself,
    /// The mbarrier is the issuing block's, the destination the other's.
    BarrierElsewhere,
    /// The mbarrier's init is not fenced for the async proxy.
    NoInitFence,
    /// The threads read the destination without waiting on the mbarrier.
    NoWait,
    /// Thread 0 overwrites the source right after the issue.
    SourceWritten,
    /// No cluster barrier after the reads: a block may exit before its own
    /// copy has read its source.
    NoLastBarrier,
}

/// Each block of a cluster of 2 (32 threads) fills 512 bytes at `buf`
/// (thread t's 16 bytes: words 1000 ctaid + 4 t + j) and thread 0 copies
/// them with one bulk copy to `buf + 1024` of the other block, completing
/// on that block's mbarrier (512 transaction bytes expected; its init
/// published by `fence.mbarrier_init` and a relaxed cluster arrive, as the
/// PTX ISA's example does, the stores by `fence.proxy.async` and a block
/// barrier before it); every thread
/// waits on its own block's mbarrier, stores the 16 bytes it received at
/// `out[16 (32 ctaid + t)]`, then the blocks meet at a cluster barrier
/// (the copies they issued have completed) before they exit.
fn peer_copy_body(fault: PeerCopyFault) -> String {
    use PeerCopyFault::*;
    // The text, unless the fault is `f`.
    let unless = |f: PeerCopyFault, text: &'static str| if fault == f { "" } else { text };
    let fence = unless(NoProxyFence, "\tfence.proxy.async.shared::cta;\n");
    let init_fence = unless(NoInitFence, "\t@%p1 fence.mbarrier_init.release.cluster;\n");
    let dst_rank = if fault == ToItself { "%r3" } else { "%r4" };
    let bar_rank = if fault == BarrierElsewhere { "%r3" } else { dst_rank };
    let overwrite = if fault == SourceWritten {
        "\t@%p1 st.shared.u32 [%r2], %r1;\n"
    } else {
        ""
    };
    let wait = unless(
        NoWait,
        "$L_w:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;\n\t@!%p2 bra $L_w;\n",
    );
    let last = unless(
        NoLastBarrier,
        "\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n",
    );
    format!(
        "\tmov.u32 %r2, buf;
\tmov.u32 %r3, %cluster_ctarank;
\txor.b32 %r4, %r3, 1;
\tmov.u32 %r5, bar;
\tsetp.eq.u32 %p1, %r1, 0;
\tmov.u32 %r6, %ctaid.x;
\tmul.lo.u32 %r7, %r6, 1000;
\tmad.lo.u32 %r7, %r1, 4, %r7;
\tadd.u32 %r8, %r7, 1;
\tadd.u32 %r9, %r7, 2;
\tadd.u32 %r10, %r7, 3;
\tmad.lo.u32 %r11, %r1, 16, %r2;
\tst.shared.v4.u32 [%r11], {{%r7, %r8, %r9, %r10}};
{fence}\tbar.sync 0;
\t@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
{init_fence}\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 512;
\tbarrier.cluster.arrive.relaxed.aligned;
\tbarrier.cluster.wait.aligned;
\tadd.u32 %r12, %r2, 1024;
\tmapa.shared::cluster.u32 %r13, %r12, {dst_rank};
\tmapa.shared::cluster.u32 %r14, %r5, {bar_rank};
\t@%p1 cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r13], [%r2], 512, [%r14];
{overwrite}{wait}\tld.shared.v4.u32 {{%r15, %r16, %r17, %r18}}, [%r11+1024];
\tmad.lo.u32 %r19, %r6, 32, %r1;
\tmul.wide.u32 %rd2, %r19, 16;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.v4.u32 [%rd3], {{%r15, %r16, %r17, %r18}};
{last}\tret;
"
    )
}

#[test]
fn a_bulk_copy_into_a_block_of_the_cluster_lands_on_its_mbarrier() {
    for (fault, other) in [(PeerCopyFault::None, 1), (PeerCopyFault::ToItself, 0)] {
        copy_lands(fault, other);
    }
}

/// [`peer_copy_body`] with `fault` (one that is none) gives each block the
/// data of block `ctaid ^ other`, under the default schedule and six
/// adversarial ones.
fn copy_lands(fault: PeerCopyFault, other: u32) {
    let (m, _) = module("", &peer_copy_body(fault));
    let launch = clustered((4, 1, 1), 32, (2, 1, 1));
    let check = |got: &[u32]| {
        for cta in 0..4u32 {
            let from = cta ^ other;
            for t in 0..32u32 {
                let o = ((32 * cta + t) * 4) as usize;
                let want: Vec<u32> = (0..4).map(|j| 1000 * from + 4 * t + j).collect();
                assert_eq!(got[o..o + 4], want[..], "block {cta}, thread {t}");
            }
        }
    };
    check(&run(&m, &launch).unwrap_or_else(|e| panic!("{e}")));
    for seed in 1..=6 {
        check(&run_with(&m, &launch, &Options::adversarial(seed)).unwrap_or_else(|e| panic!("seed {seed}: {e}")));
    }
}

#[test]
fn bulk_copies_into_another_block_report_their_misuse() {
    use PeerCopyFault::*;
    let launch = clustered((2, 1, 1), 32, (2, 1, 1));
    let needle = "cp.async.bulk.shared::cluster.shared::cta";
    for (fault, msg) in [
        (NoProxyFence, "missing fence.proxy.async"),
        (NoInitFence, "mbarrier init not published"),
        (BarrierElsewhere, "must be in the destination's block"),
    ] {
        let (m, src) = module("", &peer_copy_body(fault));
        // (The sequential schedule runs block 1 to the copy first.)
        assert_error(&fail(&m, &launch), &src, needle, (1, 0, 0), (0, 0, 0), msg);
    }
    // What the copy writes or reads while in flight, on some schedule: the
    // destination read before the wait (before the copy was issued, or
    // while it is in flight), the source written after the issue, the
    // block gone before its copy read its source.
    for (fault, needle, msgs) in [
        (
            NoWait,
            "ld.shared.v4.u32",
            &["in flight", "unwritten shared memory"][..],
        ),
        (
            SourceWritten,
            "st.shared.u32 [%r2]",
            &["read by the pending cp.async.bulk"],
        ),
        (NoLastBarrier, needle, &["exited with this"]),
    ] {
        let (m, src) = module("", &peer_copy_body(fault));
        let errors: Vec<EmuError> = (1..=16)
            .filter_map(|seed| run_with(&m, &launch, &Options::adversarial(seed)).err())
            .collect();
        assert!(!errors.is_empty(), "no schedule of 16 caught {needle}");
        for e in &errors {
            assert_eq!(e.line(), Some(common::line_of(&src, needle)), "{e}");
            assert!(
                msgs.iter().any(|m| e.message().contains(m)),
                "expected {msgs:?} in: {e}"
            );
        }
    }
}

// ----- launch shapes -----

#[test]
fn cluster_launch_shapes_are_checked() {
    let (m, _) = module("", "\tret;\n");
    let msg = |m: &Module, l: Launch| {
        let e = fail(m, &l);
        assert_eq!((e.kernel(), e.line()), (Some("k"), None), "{e}");
        e.message().to_string()
    };
    assert!(
        msg(&m, clustered((3, 2, 1), 32, (2, 1, 1)))
            .contains("the grid (3, 2, 1) is not a multiple of the cluster (2, 1, 1)")
    );
    assert!(msg(&m, clustered((8, 4, 1), 32, (8, 4, 1))).contains("32 blocks; at most 16"));
    assert!(msg(&m, clustered((2, 1, 1), 32, (0, 1, 1))).contains("at least 1"));
    run(&m, &clustered((4, 2, 2), 32, (1, 2, 2))).unwrap();
    let (m, _) = module("\n.reqnctapercluster 2, 1, 1", "\tret;\n");
    assert!(
        msg(&m, clustered((4, 1, 1), 32, (1, 1, 1))).contains("differs from the kernel's .reqnctapercluster (2, 1, 1)")
    );
    run(&m, &clustered((4, 1, 1), 32, (2, 1, 1))).unwrap();
    let (m, _) = module("\n.maxclusterrank 4", "\tret;\n");
    assert!(msg(&m, clustered((8, 1, 1), 32, (8, 1, 1))).contains(".maxclusterrank 4"));
    run(&m, &clustered((8, 1, 1), 32, (4, 1, 1))).unwrap();
}
