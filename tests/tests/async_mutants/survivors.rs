//! The mutants that survive, each with the reason it is benign or the
//! subject whose run kills it.

use super::Mutant;

/// Why a mutant survives.
#[derive(Clone, Copy, Debug)]
pub(super) enum Why {
    /// The mutant is still a correct program (an equivalent mutant, left
    /// out of the killed share).
    Equivalent(&'static str),
    /// Code this subject's run does not reach; the named subject's run
    /// reaches it and kills the same mutant there.
    Elsewhere(&'static str),
}

/// One or more listed survivors: the mutants `change` of the occurrences
/// `occurrences` (ranges of them) of instruction `text` in `subject`.
pub(super) struct Survivor {
    pub(super) subjects: &'static [&'static str],
    pub(super) text: &'static str,
    pub(super) occurrences: &'static [std::ops::Range<usize>],
    pub(super) change: &'static str,
    why: Why,
}

/// Where the mutants of the swap's mbarrier are killed.
const SWAP_MBARRIER: &str = "gemm sm_90a: the swap's mbarrier, on which the other block of a cluster of two's half of the sums lands (its asynchronous stores' bytes), where K is split over that cluster";

/// Every mutant that survives, with the reason.
#[allow(clippy::single_range_in_vec_init)] // a list of ranges, often of one
pub(super) const SURVIVORS: &[Survivor] = &[
    Survivor {
        subjects: &["gemm sm_100a"],
        text: "tcgen05.fence::after_thread_sync;",
        occurrences: &[0..1],
        change: "removed",
        why: Why::Equivalent(
            "the fence after the first bar.sync: every warp's next tcgen05 instruction comes after a later mbarrier wait and the tcgen05.fence::after_thread_sync that follows it",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "bar.warp.sync -1;",
        occurrences: &[1..2],
        change: "removed",
        why: Why::Equivalent(
            "the producer warpgroup's reconvergence before the cluster barriers, which a split through global memory skips: the warp's lanes only exit after it (no .aligned instruction, collective or shared access follows), so they need not be converged (in the clustered run, where the cluster barriers follow it, removing it is killed)",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a"],
        text: "barrier.cluster.wait.acquire.aligned;",
        occurrences: &[0..1],
        change: "removed",
        why: Why::Equivalent(
            "the producer warpgroup's one cluster wait where the blocks swap halves of their sums: it reads and writes nothing after it (it exits), its block stays alive while the consumers wait for the other block's half on the swap's mbarrier, and the consumers' own wait at that phase is what orders their pushes after the other block's start",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a"],
        text: "barrier.cluster.wait.acquire.aligned;",
        occurrences: &[1..2],
        change: "removed",
        why: Why::Equivalent(
            "the producer warpgroup's second cluster phase, which a split of 2 never takes: where its blocks are clustered they swap halves of their sums (one phase), and a split through global memory takes no cluster barrier (the same code serves the splits of 4 over a cluster of four)",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a"],
        text: "barrier.cluster.arrive.relaxed.aligned;",
        occurrences: &[1..2],
        change: "removed",
        why: Why::Equivalent(
            "the producer warpgroup's second cluster phase, which a split of 2 never takes: where its blocks are clustered they swap halves of their sums (one phase), and a split through global memory takes no cluster barrier (the same code serves the splits of 4 over a cluster of four)",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a", "gemm sm_90a global split", "gemm sm_90a stream-K"],
        text: "wgmma.commit_group.sync.aligned;",
        occurrences: &[0..7, 10..15, 18..23, 26..31],
        change: "removed",
        why: Why::Equivalent(
            "the step's wgmma joins the next step's group inside one stage of the chain (4 stages of 8 steps, unrolled): the next waits still cover it before the stage's slot is released, the wgmma.wait_group 0 at the chain's end before its accumulator is read, and nothing touches its registers or operands before then; removing the last step's commit of a stage, or the first two steps' of the next, lets the slot go early and is killed",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a", "gemm sm_90a global split", "gemm sm_90a stream-K"],
        text: "wgmma.wait_group.sync.aligned 2;",
        occurrences: &[0..9, 10..17, 18..25, 26..32],
        change: "removed",
        why: Why::Equivalent(
            "the waits inside a chain only bound the wgmmas in flight: each step's A fragment has registers of its own (the next chain reuses them after its wgmma.wait_group 0) and the accumulator is read after wgmma.wait_group 0; the waits that do guard something, at the second step of the chain's second, third and fourth stage (the previous stage's slot is released after them), are killed",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a", "gemm sm_90a global split", "gemm sm_90a stream-K"],
        text: "wgmma.wait_group.sync.aligned 2;",
        occurrences: &[0..9, 10..17, 18..25, 26..32],
        change: "waits for one group fewer",
        why: Why::Equivalent(
            "as for the removed wait: one more wgmma in flight changes nothing the step reads or writes",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a stream-K"],
        text: "bar.sync 1, 256;",
        occurrences: &[2..3],
        change: "removed",
        why: Why::Equivalent(
            "the first barrier of the C store of a block's first tile, summed at the end: the barrier with the releaser just before (its verdicts) already puts every consumer's reads of the staging area before it, and the ring's MMAs are done",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a"],
        text: "bar.sync 1, 256;",
        occurrences: &[0..1, 3..4],
        change: "removed",
        why: Why::Elsewhere(
            "gemm sm_90a global split: the barriers before a block writes its partial tile over the ring and before it reads the tile back, where K is not split over a cluster (in a cluster of two the blocks swap halves of their accumulators instead)",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "bar.sync 1, 256;",
        occurrences: &[1..3],
        change: "removed",
        why: Why::Elsewhere(
            "gemm sm_90a: the barriers before C's rows are staged over the ring (both warpgroups' MMAs done) and between staging them and storing them, where the blocks of a cluster swap halves of their accumulators",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [gemm_nvfp4_sm90__blocks_1_split_2_smem0+64], 32768;",
        occurrences: &[0..1],
        change: "arrive removed",
        why: Why::Elsewhere(SWAP_MBARRIER),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [gemm_nvfp4_sm90__blocks_1_split_2_smem0+64], 32768;",
        occurrences: &[0..1],
        change: "expect_tx 16 bytes short",
        why: Why::Elsewhere(SWAP_MBARRIER),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [gemm_nvfp4_sm90__blocks_1_split_2_smem0+64], 32768;",
        occurrences: &[0..1],
        change: "expect_tx 16 bytes over",
        why: Why::Elsewhere(SWAP_MBARRIER),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "mbarrier.try_wait.parity.shared::cta.b64 %p94, [gemm_nvfp4_sm90__blocks_1_split_2_smem0+64], 0;",
        occurrences: &[0..1],
        change: "wait skipped",
        why: Why::Elsewhere(SWAP_MBARRIER),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "mbarrier.try_wait.parity.shared::cta.b64 %p94, [gemm_nvfp4_sm90__blocks_1_split_2_smem0+64], 0;",
        occurrences: &[0..1],
        change: "parity flipped",
        why: Why::Elsewhere(SWAP_MBARRIER),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "barrier.cluster.wait.acquire.aligned;",
        occurrences: &[0..3],
        change: "removed",
        why: Why::Elsewhere("gemm sm_90a: the cluster barriers of the reduction in distributed shared memory"),
    },
    Survivor {
        subjects: &["gemm sm_90a global split"],
        text: "barrier.cluster.arrive.relaxed.aligned;",
        occurrences: &[0..2],
        change: "removed",
        why: Why::Elsewhere("gemm sm_90a: the cluster barriers of the reduction in distributed shared memory"),
    },
    // Item 5 of issue 24: programmatic dependent launch, memory order.
    Survivor {
        subjects: &["gemm sm_90a pairs"],
        text: "barrier.cluster.arrive.release.aligned;",
        occurrences: &[0..1],
        change: "made relaxed",
        why: Why::Elsewhere(
            "gemm sm_90a cluster of 4: the cluster barrier before the blocks of a cluster of four sum their partial tiles",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a decode"],
        text: "griddepcontrol.wait;",
        occurrences: &[0..1],
        change: "removed",
        why: Why::Elsewhere(
            "gemm sm_90a decode after a quantizer: a single call's decode kernel has no kernel before it",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a decode"],
        text: "griddepcontrol.wait;",
        occurrences: &[1..2],
        change: "removed",
        why: Why::Elsewhere("gemm sm_90a decode, twice: a single call's decode kernel has no kernel before it"),
    },
    Survivor {
        subjects: &["gemm sm_90a decode, twice"],
        text: "griddepcontrol.wait;",
        occurrences: &[0..1],
        change: "removed",
        why: Why::Elsewhere(
            "gemm sm_90a decode after a quantizer: the wait before A is requested is taken only after a kernel that may write A",
        ),
    },
    Survivor {
        subjects: &["gemm sm_90a decode after a quantizer"],
        text: "griddepcontrol.wait;",
        occurrences: &[1..2],
        change: "removed",
        why: Why::Elsewhere(
            "gemm sm_90a decode, twice: after a quantizer the decode kernel has already waited before it requests A",
        ),
    },
    Survivor {
        subjects: &["linear sm_90a after a layer"],
        text: "griddepcontrol.wait;",
        occurrences: &[0..1],
        change: "removed",
        why: Why::Elsewhere(
            "linear sm_90a, twice: the quantizer's first-block wait keeps the GEMM before it (which writes the same output) ordered before the GEMM after it; here the second layer's quantizer is no programmatic launch (its activations are not ready), so it starts only once everything before it is complete",
        ),
    },
    Survivor {
        subjects: &["gemv"],
        text: "griddepcontrol.wait;",
        occurrences: &[0..1],
        change: "removed",
        why: Why::Elsewhere("gemv, twice: a single call has no kernel before it"),
    },
    Survivor {
        subjects: &["gemm sm_90a pairs"],
        text: "fence.acq_rel.gpu;",
        occurrences: &[0..2],
        change: "removed",
        why: Why::Equivalent(
            "either fence around the counter: the sums' stores precede the named barrier before thread 0's atom.acq_rel.gpu, and a release is cumulative over what happens before it (the barrier's CTA-scope order), as is its acquire over the loads after the barrier that follows it (CUTLASS's split-K semaphore: a barrier, then one thread's release); the atom made relaxed instead is killed (the global-memory race check: each thread's fence before the barrier releases its own sums alone)",
        ),
    },
];

/// The listed reason for a mutant, if it is one.
pub(super) fn listed(subject: &str, m: &Mutant) -> Option<(usize, Why)> {
    SURVIVORS
        .iter()
        .position(|e| {
            e.subjects.contains(&subject)
                && e.text == m.text
                && e.change == m.change
                && e.occurrences.iter().any(|r| r.contains(&m.occurrence))
        })
        .map(|k| (k, SURVIVORS[k].why))
}
