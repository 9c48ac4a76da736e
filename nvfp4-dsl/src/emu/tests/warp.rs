//! Warp-level operations (shuffles, votes, reductions) and barriers.

use super::*;

/// PTX's shfl.sync source-lane computation.
fn shfl_src(mode: &str, lane: u32, b: u32, c: u32) -> (u32, bool) {
    let (bval, cval, seg) = (i64::from(b & 31), i64::from(c & 31), i64::from((c >> 8) & 31));
    let l = i64::from(lane);
    let max = (l & seg) | (cval & !seg);
    let min = l & seg;
    let (j, ok) = match mode {
        "up" => (l - bval, l - bval >= max),
        "down" => (l + bval, l + bval <= max),
        "bfly" => (l ^ bval, (l ^ bval) <= max),
        _ => {
            let j = min | (bval & !seg);
            (j, j <= max)
        }
    };
    (if ok { j as u32 } else { lane }, ok)
}

#[test]
fn shuffles_in_every_mode() {
    let ins = inputs(64, 22, &[]);
    for mode in ["up", "down", "bfly", "idx"] {
        for c in [0x1f_u32, 0x0, 0x181f, 0x1c1f, 0x1800] {
            let body = format!(
                "\tand.b32 %r12, %r2, 31;\n\tshfl.sync.{mode}.b32 %r10|%p1, %r1, %r12, {c}, 0xffffffff;\n\tselp.u32 %r11, 1, 0, %p1;\n"
            );
            let got = run(&body, &ins);
            for (t, g) in got.iter().enumerate() {
                let (lane, base) = (t as u32 % 32, t - t % 32);
                let (j, ok) = shfl_src(mode, lane, ins[t][1] & 31, c);
                assert_eq!(
                    *g,
                    [ins[base + j as usize][0], u32::from(ok)],
                    "{mode} c={c:#x} thread {t}"
                );
            }
        }
    }
    // Immediate lane operands, as warp_reduce_sum writes them.
    let body = "\tshfl.sync.down.b32 %r10, %r1, 3, 0x1f, -1;\n\tshfl.sync.up.b32 %r11, %r1, 5, 0, -1;\n";
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let (lane, base) = (t % 32, t - t % 32);
        let down = if lane + 3 < 32 {
            ins[base + lane + 3][0]
        } else {
            ins[t][0]
        };
        let up = if lane >= 5 { ins[t - 5][0] } else { ins[t][0] };
        assert_eq!(*g, [down, up], "thread {t}");
    }
}

#[test]
fn shuffle_from_an_absent_lane_is_an_error() {
    // 40 threads: the second warp has 8 lanes; bfly 16 reads lanes 16..23
    // of a warp whose lanes 8..31 do not exist.
    let e = try_run(
        "\tmov.u32 %r11, 0;\n\tshfl.sync.bfly.b32 %r10, %r1, 16, 0x1f, -1;\n",
        &inputs(40, 23, &[]),
    )
    .unwrap_err();
    assert!(e.message().contains("reads lane"), "{e}");
    assert_eq!(e.thread(), Some((32, 0, 0)));
    // A partial mask that matches the executing lanes is fine.
    let body = "\tmov.u32 %r11, 0;\n\tsetp.lt.u32 %p1, %r30, 16;\n\t@!%p1 bra $L_x;\n\tshfl.sync.bfly.b32 %r11, %r1, 1, 0x1f, 0xffff;\n$L_x:\n\tmov.u32 %r10, 0;\n";
    let ins = inputs(32, 24, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[1], if t < 16 { ins[t ^ 1][0] } else { 0 });
    }
}

#[test]
fn elect_vote_activemask_redux() {
    let body = "
\tmov.u32 %r10, 0;
\tmov.u32 %r11, 0;
\tand.b32 %r12, %r30, 1;
\tsetp.eq.u32 %p1, %r12, 1;
\t@!%p1 bra $L_even;
\telect.sync %r13|%p2, 0xaaaaaaaa;
\tselp.u32 %r14, 0x100, 0, %p2;
\tactivemask.b32 %r15;
\tadd.u32 %r10, %r13, %r14;
\txor.b32 %r10, %r10, %r15;
$L_even:
\tsetp.gt.u32 %p3, %r1, 0x80000000;
\tvote.sync.ballot.b32 %r16, %p3, -1;
\tvote.sync.any.pred %p4, %p3, -1;
\tvote.sync.all.pred %p5, !%p3, -1;
\tselp.u32 %r17, 1, 0, %p4;
\tselp.u32 %r18, 2, 0, %p5;
\tredux.sync.add.u32 %r19, %r30, -1;
\tredux.sync.max.s32 %r20, %r1, -1;
\txor.b32 %r11, %r16, %r17;
\txor.b32 %r11, %r11, %r18;
\txor.b32 %r11, %r11, %r19;
\txor.b32 %r11, %r11, %r20;
";
    let ins = inputs(64, 25, &[0xFFFF_FFFF, 0x8000_0001]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let base = t - t % 32;
        let warp = &ins[base..base + 32];
        let ballot = warp
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, x)| m | (u32::from(x[0] > 0x8000_0000) << l));
        let any = u32::from(ballot != 0);
        let all_not = if ballot == 0 { 2 } else { 0 };
        let sum = (base as u32..base as u32 + 32).sum::<u32>();
        let max = warp.iter().map(|x| x[0] as i32).max().unwrap() as u32;
        let r10 = if t % 2 == 1 {
            let leader = 1u32;
            (leader + if t % 32 == 1 { 0x100 } else { 0 }) ^ 0xAAAA_AAAA
        } else {
            0
        };
        assert_eq!(*g, [r10, ballot ^ any ^ all_not ^ sum ^ max], "thread {t}");
    }
}

// ----- barriers -----

#[test]
fn bar_sync_orders_warps() {
    // Each thread publishes, the barrier waits for all 4 warps, then each
    // reads a neighbour from another warp.
    let body = "
\tshl.b32 %r12, %r30, 2;
\tmov.u32 %r13, sm;
\tadd.u32 %r14, %r13, %r12;
\tst.shared.u32 [%r14], %r1;
\tbar.sync 0;
\tadd.u32 %r15, %r30, 37;
\trem.u32 %r15, %r15, 128;
\tshl.b32 %r16, %r15, 2;
\tadd.u32 %r17, %r13, %r16;
\tld.shared.u32 %r10, [%r17];
\tbarrier.sync.aligned 0;
\tst.shared.u32 [%r14], %r2;
\tbarrier.sync 0;
\tld.shared.u32 %r11, [%r17];
";
    let ins = inputs(128, 26, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let n = (t + 37) % 128;
        assert_eq!(*g, [ins[n][0], ins[n][1]], "thread {t}");
    }
}

#[test]
fn named_barriers_with_counts_and_arrive() {
    // Warp 0 produces into shared memory and arrives on barrier 1; warp 1
    // waits there (64 threads), then reads. Warps 2 and 3 never touch it.
    let body = "
\tmov.u32 %r10, 0;
\tmov.u32 %r11, 0;
\tshr.u32 %r12, %r30, 5;
\tsetp.eq.u32 %p1, %r12, 0;
\tsetp.eq.u32 %p2, %r12, 1;
\tmov.u32 %r13, sm;
\tshl.b32 %r14, %r30, 2;
\tadd.u32 %r15, %r13, %r14;
\t@!%p1 bra $L_consumer;
\tst.shared.u32 [%r15], %r1;
\tbar.arrive 1, 64;
\tbra $L_end;
$L_consumer:
\t@!%p2 bra $L_end;
\tbar.sync 1, 64;
\tsub.u32 %r16, %r15, 128;
\tld.shared.u32 %r10, [%r16];
$L_end:
";
    let ins = inputs(128, 27, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let want = if (32..64).contains(&t) { ins[t - 32][0] } else { 0 };
        assert_eq!(g[0], want, "thread {t}");
    }
    // A count that disagrees with the barrier's current round (when warp
    // 0 arrives first, as in the sequential schedule; warps 1 to 3 first
    // would complete a round of 96 on their own).
    let body = "\tmov.u32 %r10, 0;\n\tmov.u32 %r11, 0;\n\tshr.u32 %r12, %r30, 5;\n\tsetp.eq.u32 %p1, %r12, 0;\n\t@%p1 bar.arrive 2, 64;\n\t@!%p1 bar.sync 2, 96;\n";
    let e = try_run_with(body, &inputs(128, 28, &[]), &Options::sequential()).unwrap_err();
    assert!(e.message().contains("barrier 2"), "{e}");
}

/// Each thread stores its input to shared memory, the two halves of the
/// warp reconverge at `bar.warp.sync` on either side of a branch, and each
/// thread reads the value of the thread 16 away into `%r10`.
const SWAP_AFTER_WARP_SYNC: &str = "
\tmov.u32 %r13, sm;
\tshl.b32 %r14, %r30, 2;
\tadd.u32 %r15, %r13, %r14;
\tst.shared.u32 [%r15], %r1;
\tmov.u32 %r16, %laneid;
\tsetp.lt.u32 %p1, %r16, 16;
\t@%p1 bra $L_low;
\tbar.warp.sync -1;
\tbra $L_join;
$L_low:
\tbar.warp.sync -1;
$L_join:
\txor.b32 %r17, %r14, 64;
\tadd.u32 %r18, %r13, %r17;
\tld.shared.u32 %r10, [%r18];
";

#[test]
fn bar_warp_sync_in_divergent_code() {
    let body = format!("{SWAP_AFTER_WARP_SYNC}\tmov.u32 %r11, 0;\n");
    let ins = inputs(64, 29, &[]);
    let got = run(&body, &ins);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[0], ins[t ^ 16][0], "thread {t}");
    }
}

#[test]
fn stats_count_threads_and_instructions() {
    let (_, stats) = try_run("\tmov.u32 %r10, 1;\n\tmov.u32 %r11, 2;\n", &inputs(40, 30, &[])).unwrap();
    // Header (7) + body (2) + footer (4) instructions, 40 threads, 2 warps.
    assert_eq!(stats.thread_instructions, 13 * 40);
    assert_eq!(stats.warp_instructions, 13 * 2);
    assert_eq!((stats.blocks, stats.threads), (1, 40));
}

#[test]
fn warp_collectives_under_independent_thread_scheduling() {
    let its = |seed| Options::adversarial(seed).with_independent_threads();
    // Each half of the warp shuffles at its own instruction: the hardware
    // may pair them, the emulator runs a collective at one instruction.
    let body = "
\tmov.u32 %r11, 0;
\tmov.u32 %r16, %laneid;
\tsetp.lt.u32 %p1, %r16, 16;
\t@%p1 bra $L_low;
\tshfl.sync.bfly.b32 %r10, %r1, 16, 0x1f, -1;
\tbra $L_join;
$L_low:
\tshfl.sync.bfly.b32 %r10, %r1, 16, 0x1f, -1;
$L_join:
";
    for seed in 0..4 {
        let e = try_run_with(body, &inputs(32, 31, &[]), &its(seed)).unwrap_err();
        assert!(e.message().contains("waits at another warp collective"), "{e}");
    }
    // Lane 5 branches past the vote and exits: the vote waits only for
    // lanes that have not exited, whichever side runs first.
    let body = "
\tmov.u32 %r10, 0;
\tmov.u32 %r11, 0;
\tmov.u32 %r16, %laneid;
\tsetp.eq.u32 %p1, %r16, 5;
\tsetp.ne.u32 %p2, %r16, 9;
\t@%p1 bra $L_skip;
\tvote.sync.ballot.b32 %r10, %p2, -1;
$L_skip:
";
    for seed in 0..8 {
        let (got, _) = try_run_with(body, &inputs(32, 32, &[]), &its(seed)).unwrap();
        for (t, g) in got.iter().enumerate() {
            let want = if t == 5 { 0 } else { !(1u32 << 5 | 1 << 9) };
            assert_eq!(g[0], want, "seed {seed}, thread {t}");
        }
    }
    // Reconverged by bar.warp.sync on both sides: the same results.
    let body = format!("{SWAP_AFTER_WARP_SYNC}\tvote.sync.ballot.b32 %r11, %p1, -1;\n");
    let ins = inputs(64, 33, &[]);
    for seed in 0..4 {
        let (got, _) = try_run_with(&body, &ins, &its(seed)).unwrap();
        for (t, g) in got.iter().enumerate() {
            assert_eq!(*g, [ins[t ^ 16][0], 0xffff], "thread {t}");
        }
    }
}
