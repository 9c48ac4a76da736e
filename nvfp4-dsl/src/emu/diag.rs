//! Error texts: what a race or an access of bytes in flight ran into, why
//! no thread can run (deadlocks), what a block leaves behind at its end,
//! and the instruction and thread an error is located at.

use super::error::{Cited, EmuError};
use super::gorder::{self, GlobalOrder, Race};
use super::layout::SHARED_BASE;
use super::mbar::Mbar;
use super::pending::{AsyncOp, Busy};
use super::race::{Hazard, Kind};
use super::state::{
    Block, CLUSTER_WAIT, COLLECTIVE_WAIT, Cluster, Env, MBAR_WAIT, WARP_SYNC, Warp, lanes, mbar_waiters,
};

/// An instruction's text without its guard predicate.
fn unguarded(text: &str) -> &str {
    match text.split_once(' ') {
        Some((g, rest)) if g.starts_with('@') => rest,
        _ => text,
    }
}

/// The name of an asynchronous operation, from its instruction's text.
pub(crate) fn op_name(text: &str) -> &'static str {
    let text = unguarded(text);
    const NAMES: [&str; 6] = [
        "wgmma.mma_async",
        "cp.async.bulk.tensor",
        "cp.async.bulk",
        "tcgen05.mma",
        "tcgen05.cp",
        "tcgen05.commit",
    ];
    NAMES
        .into_iter()
        .find(|n| text.starts_with(n))
        .unwrap_or("asynchronous operation")
}

/// The wait that completes an asynchronous operation, for messages.
pub(super) fn completed_by(text: &str) -> &'static str {
    let text = unguarded(text);
    if text.starts_with("wgmma") {
        "the wgmma.wait_group that completes it"
    } else if text.starts_with("cp.async.bulk.global") {
        "the cp.async.bulk.wait_group that covers it"
    } else if text.starts_with("cp.async.bulk") {
        "an mbarrier wait that covers it"
    } else {
        "a wait on the mbarrier that a later tcgen05.commit arrives on"
    }
}

/// A thread of the cluster, by its index, seen from the block of rank
/// `me`: `thread (x,y,z)` (and its block's rank when it is another's).
fn thread_name(env: &Env<'_>, t: u32, me: u32) -> String {
    let [nx, ny, nz] = env.ntid;
    let per_block = nx * ny * nz;
    let (rank, local) = (t / per_block, t % per_block);
    let xyz = (local % nx, local / nx % ny, local / (nx * ny));
    let block = if rank == me {
        String::new()
    } else {
        format!(" of the block of cluster rank {rank}")
    };
    format!("thread ({},{},{}){block}", xyz.0, xyz.1, xyz.2)
}

/// Explains an access at `pc` (a write or a read) of bytes that an
/// asynchronous operation in flight writes or reads.
pub(super) fn busy_message(env: &Env<'_>, busy: &Busy, pc: u32, write: bool, whose: Option<String>) -> String {
    let base = SHARED_BASE as usize;
    let whose = whose.map_or(String::new(), |b| format!(" of block {b}"));
    let text = &env.entry.texts[busy.pc as usize];
    let name = op_name(text);
    let issuer = if name == "wgmma.mma_async" {
        String::new()
    } else {
        let (x, y, z) = busy.thread;
        format!(" (issued by thread ({x},{y},{z}))")
    };
    let how = if busy.write { "written" } else { "read" };
    format!(
        "shared memory {:#x}..{:#x}{whose} is {how} by the pending {name} at line {}{issuer} and was {} at line {} before {}",
        base + busy.lo,
        base + busy.hi,
        env.entry.lines[busy.pc as usize],
        if write { "overwritten" } else { "read" },
        env.entry.lines[pc as usize],
        completed_by(text)
    )
}

/// The note for a pending operation that is not committed yet.
pub(super) fn uncommitted(committed: bool) -> &'static str {
    if committed {
        ""
    } else {
        " (no wgmma.commit_group has committed it yet)"
    }
}

pub(super) fn describe_regions(regions: &[(u32, u32)], names: &[String]) -> String {
    if regions.is_empty() {
        return "none".into();
    }
    regions
        .iter()
        .zip(names)
        .map(|((s, e), n)| format!("`{n}` {s:#x}..{e:#x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn err_at(env: &Env<'_>, block: &Block, w: &Warp, pc: u32, lane: usize, msg: String) -> EmuError {
    let e = env.entry;
    let pc = (pc as usize).min(e.insts.len() - 1);
    EmuError {
        kernel: Some(e.name.as_str().into()),
        block: Some((block.ctaid[0], block.ctaid[1], block.ctaid[2])),
        thread: Some((w.tid[0][lane], w.tid[1][lane], w.tid[2][lane])),
        line: Some(e.lines[pc]),
        text: Some(e.texts[pc].as_str().into()),
        source: e.source.of(pc).into(),
        message: msg,
        cited: None,
    }
}

/// Instruction `pc` for a message: its Rust statements (as the error's
/// `cited` resolves them to files) and its PTX line.
pub(super) fn statement_of(env: &Env<'_>, pc: u32) -> String {
    let places = env.entry.source.of(pc as usize);
    let line = env.entry.lines[pc as usize];
    if places.is_empty() {
        format!("line {line}")
    } else {
        let names: Vec<String> = places.iter().map(ToString::to_string).collect();
        format!("{} (line {line})", names.join(", "))
    }
}

/// `e` with the statements of instruction `pc` (named in its message by
/// [`statement_of`]) to resolve.
pub(super) fn cite(env: &Env<'_>, e: EmuError, pc: Option<u32>) -> EmuError {
    match pc {
        Some(pc) => EmuError {
            cited: Some(Box::new(Cited(env.entry.source.of(pc as usize).to_vec()))),
            ..e
        },
        None => e,
    }
}

/// An error of an asynchronous operation, located at its issue.
pub(super) fn op_error(env: &Env<'_>, block: &Block, op: &AsyncOp, msg: String) -> EmuError {
    let e = env.entry;
    EmuError {
        kernel: Some(e.name.as_str().into()),
        block: Some((block.ctaid[0], block.ctaid[1], block.ctaid[2])),
        thread: Some(op.thread),
        line: Some(e.lines[op.pc as usize]),
        text: Some(e.texts[op.pc as usize].as_str().into()),
        source: e.source.of(op.pc as usize).into(),
        message: msg,
        cited: None,
    }
}

/// Explains a hazard that the access at `pc` of kind `kind`, by a thread
/// of the block of rank `me`, ran into; the fault that carries it cites
/// [`Hazard::cited_pc`], whose Rust statement it names.
#[cold]
pub(super) fn hazard_message(env: &Env<'_>, me: u32, h: &Hazard, pc: u32, kind: Kind, whose: Option<String>) -> String {
    let at = |pc: u32| {
        format!(
            "line {} `{}`",
            env.entry.lines[pc as usize], env.entry.texts[pc as usize]
        )
    };
    // The other access (the one the fault cites: `Hazard::cited_pc`) by its
    // Rust statement too.
    let cited = |pc: u32| format!("{} `{}`", statement_of(env, pc), env.entry.texts[pc as usize]);
    let whose = whose.map_or(String::new(), |b| format!(" of block {b}"));
    let base = SHARED_BASE as usize;
    let who = |t: u32| thread_name(env, t, me);
    let threads = env.ntid[0] * env.ntid[1] * env.ntid[2] * env.cluster_size;
    match *h {
        Hazard::Race { earlier, write, off } => {
            let this = match kind {
                Kind::Read => "reads".to_string(),
                Kind::Write => "writes".to_string(),
                Kind::AsyncRead => format!("issues {} reading", op_name(&env.entry.texts[pc as usize])),
                Kind::AsyncWrite => format!("issues {} writing", op_name(&env.entry.texts[pc as usize])),
                Kind::Atomic => "atomically updates".to_string(),
            };
            let verb = match (earlier.atomic, write) {
                (true, _) => "updated atomically",
                (false, true) => "wrote",
                (false, false) => "read",
            };
            let other = if earlier.asynchronous && earlier.thread() >= threads {
                format!(
                    "that the {} at {} {verb} (this thread does not wait for its completion: no mbarrier wait that covers it)",
                    op_name(&env.entry.texts[earlier.pc as usize]),
                    cited(earlier.pc)
                )
            } else if earlier.asynchronous {
                format!(
                    "that the {} at {} waited for by {} {verb}",
                    op_name(&env.entry.texts[earlier.pc as usize]),
                    cited(earlier.pc),
                    who(earlier.thread())
                )
            } else {
                format!("that {} {verb} at {}", who(earlier.thread()), cited(earlier.pc))
            };
            let per_block = threads / env.cluster_size;
            let other_block = earlier.thread() < threads && earlier.thread() / per_block != me;
            format!(
                "shared-memory data race: this thread {this} shared memory {:#x}{whose} {other}, and nothing orders the two accesses (no bar.sync or barrier between them, no mbarrier arrive and wait, no bar.warp.sync for threads of one warp){}{}",
                base + off,
                if kind == Kind::Atomic || earlier.atomic {
                    "; atomics race with plain loads and stores of their address (read it with an atomic too, e.g. `atom.or` of 0, or order the two with a barrier)"
                } else {
                    ""
                },
                if other_block {
                    "; between blocks of a cluster only a release orders them: `barrier.cluster.arrive` (release, the default) then `barrier.cluster.wait`, or a `fence.acq_rel` of cluster scope or wider before a relaxed arrive (`barrier.cluster.arrive.relaxed` alone releases nothing)"
                } else {
                    ""
                }
            )
        }
        Hazard::NoProxyFence { write, off } => format!(
            "missing fence.proxy.async: this {} reads shared memory {:#x} through the async proxy, which {} wrote with a generic store at {} and no fence.proxy.async since (the writer must execute fence.proxy.async.shared::cta after its stores and before the synchronisation that orders them before this operation)",
            op_name(&env.entry.texts[pc as usize]),
            base + off,
            who(write.thread()),
            cited(write.pc)
        ),
        Hazard::FenceUnordered { write, fence_pc, off } => format!(
            "the fence.proxy.async at {} of {}, after its store to shared memory {:#x} at {}, is not ordered before this {} (no barrier or mbarrier arrive and wait between the fence and it)",
            at(fence_pc),
            who(write.thread()),
            base + off,
            cited(write.pc),
            op_name(&env.entry.texts[pc as usize])
        ),
    }
}

/// Reports a block that ends with tensor memory allocated.
pub(super) fn tmem_freed(env: &Env<'_>, block: &Block) -> Result<(), EmuError> {
    let Some(a) = block.tmem.as_ref().and_then(|t| t.allocs.first().copied()) else {
        return Ok(());
    };
    let e = env.entry;
    let pc = (a.pc as usize).min(e.insts.len() - 1);
    Err(EmuError {
        kernel: Some(e.name.as_str().into()),
        block: Some((block.ctaid[0], block.ctaid[1], block.ctaid[2])),
        thread: Some(a.thread),
        line: Some(e.lines[pc]),
        text: Some(e.texts[pc].as_str().into()),
        source: e.source.of(pc).into(),
        cited: None,
        message: format!(
            "tensor memory not freed: the block exited with columns {}..{} still allocated (allocated here; every tcgen05.alloc needs a tcgen05.dealloc before exit)",
            a.col,
            a.col + a.ncols
        ),
    })
}

/// Explains an mbarrier wait that no thread of the block can complete.
pub(super) fn mbar_deadlock(env: &Env<'_>, block: &Block, warps: &[Warp]) -> EmuError {
    let (wi, lane) = warps
        .iter()
        .enumerate()
        .find_map(|(i, w)| {
            let m = mbar_waiters(w);
            (m != 0).then(|| (i, m.trailing_zeros() as usize))
        })
        .expect("an mbarrier waiter");
    let w = &warps[wi];
    let mw = w.mwait[lane];
    let state = block.mbars.iter().find(|b| b.addr == mw.addr).map_or_else(
        || format!("mbarrier at shared address {:#x} (invalidated)", mw.addr),
        Mbar::state,
    );
    let what = if mw.parity {
        format!("the phase of parity {}", mw.want & 1)
    } else {
        format!("phase {}", mw.want)
    };
    let (mut spinning, mut at_bar, mut exited) = (0u32, 0u32, 0u32);
    for w2 in warps {
        spinning += mbar_waiters(w2).count_ones();
        at_bar += (w2.waiting & !mbar_waiters(w2)).count_ones();
        exited += (w2.exists & w2.exited).count_ones();
    }
    err_at(
        env,
        block,
        w,
        w.pc[lane],
        lane,
        format!(
            "mbarrier wait can never complete: this thread waits for {what} of the {state}; no thread of the block can make progress ({spinning} threads wait on mbarriers, {at_bar} at barriers, {exited} exited) and no copy is pending. Where the warps are: {}",
            positions(env, warps)
        ),
    )
}

/// Where every warp of a block is, for deadlock reports: its lanes
/// grouped by what they wait for.
fn positions(env: &Env<'_>, warps: &[Warp]) -> String {
    let mut parts = Vec::new();
    for w in warps {
        let mut groups: Vec<(String, u32)> = Vec::new();
        for l in lanes(w.exists) {
            let what = if w.exited >> l & 1 != 0 {
                "exited".to_string()
            } else if w.waiting >> l & 1 != 0 {
                format!("wait at {}", waits_at(env, w, l))
            } else {
                format!("are at line {}", env.entry.lines[w.pc[l] as usize])
            };
            match groups.iter_mut().find(|g| g.0 == what) {
                Some(g) => g.1 |= 1 << l,
                None => groups.push((what, 1 << l)),
            }
        }
        let lanes = groups
            .iter()
            .map(|(what, m)| format!("{} {what}", lane_set(*m)))
            .collect::<Vec<_>>()
            .join(", ");
        parts.push(format!("warp {}: {lanes}", w.index));
    }
    parts.join("; ")
}

/// A set of lanes, for messages: `lane 3`, `lanes 0-15`, `lanes 0x00ff00ff`.
fn lane_set(m: u32) -> String {
    let (lo, n) = (m.trailing_zeros(), m.count_ones());
    let run = if n == 32 { u32::MAX } else { (1 << n) - 1 };
    if n == 1 {
        format!("lane {lo}")
    } else if m >> lo == run {
        format!("lanes {lo}-{}", lo + n - 1)
    } else {
        format!("lanes {m:#010x}")
    }
}

/// Thread index of lane `l` of `w`, for messages.
fn tid_of(w: &Warp, l: usize) -> String {
    format!("({},{},{})", w.tid[0][l], w.tid[1][l], w.tid[2][l])
}

/// What a waiting lane waits at, for messages.
fn waits_at(env: &Env<'_>, w: &Warp, l: usize) -> String {
    let what = match w.bar_of[l] {
        WARP_SYNC => "bar.warp.sync".to_string(),
        MBAR_WAIT => {
            let mw = w.mwait[l];
            let phase = if mw.parity { "parity" } else { "phase" };
            format!("the mbarrier at {:#x} for {phase} {}", mw.addr, mw.want)
        }
        CLUSTER_WAIT => "barrier.cluster.wait".to_string(),
        COLLECTIVE_WAIT => "a .sync warp collective".to_string(),
        b => format!("barrier {b}"),
    };
    format!("{what} (line {})", env.entry.lines[w.pc[l] as usize])
}

/// Explains why no thread of the cluster can run: the first waiting
/// thread, in rank and warp order, names what it waits for.
pub(super) fn deadlock(env: &Env<'_>, blocks: &[Block], warps: &[Vec<Warp>], cl: &Cluster) -> EmuError {
    let (bi, wi, lane) = blocks
        .iter()
        .zip(warps)
        .enumerate()
        .filter(|(_, (b, _))| !b.exited)
        .find_map(|(bi, (_, ws))| {
            ws.iter()
                .enumerate()
                .find_map(|(wi, w)| (w.waiting != 0).then(|| (bi, wi, w.waiting.trailing_zeros() as usize)))
        })
        .expect("a blocked cluster has a waiting lane");
    let w = &warps[bi][wi];
    if w.bar_of[lane] != CLUSTER_WAIT {
        return block_deadlock(env, &blocks[bi], &warps[bi]);
    }
    // A thread that has not arrived in this phase, and where it waits.
    let missing = blocks.iter().zip(warps).filter(|(b, _)| !b.exited).find_map(|(b, ws)| {
        ws.iter().find_map(|w2| {
            lanes(w2.exists & !w2.exited)
                .find(|&l| w2.cl_armed >> l & 1 == 0 || w2.cl_phase[l] != cl.phase)
                .map(|l| {
                    format!(
                        "thread {} of block {} has not arrived: it waits at {}",
                        tid_of(w2, l),
                        b.id(),
                        waits_at(env, w2, l)
                    )
                })
        })
    });
    err_at(
        env,
        &blocks[bi],
        w,
        w.pc[lane],
        lane,
        format!(
            "barrier.cluster.wait can never complete: {} of the {} threads of the cluster that have not exited arrived in phase {}; {}. Where the warps of block {} are: {}",
            cl.arrived,
            cl.live,
            cl.phase,
            missing.unwrap_or_else(|| "the missing threads can never arrive".into()),
            blocks[bi].id(),
            positions(env, &warps[bi])
        ),
    )
}

/// Explains why no thread of the block can run.
fn block_deadlock(env: &Env<'_>, block: &Block, warps: &[Warp]) -> EmuError {
    let (wi, lane) = warps
        .iter()
        .enumerate()
        .find_map(|(i, w)| (w.waiting != 0).then(|| (i, w.waiting.trailing_zeros() as usize)))
        .expect("a blocked block has a waiting lane");
    let w = &warps[wi];
    let pc = w.pc[lane];
    let id = w.bar_of[lane];
    let line_of = |pc: u32| env.entry.lines[pc as usize];
    if id == WARP_SYNC || id == COLLECTIVE_WAIT {
        let what = if id == WARP_SYNC {
            "bar.warp.sync"
        } else {
            "this warp collective"
        };
        let mask = w.wsync_mask[lane];
        let missing = mask & w.exists & !(w.waiting & mask);
        let why = lanes(missing)
            .next()
            .map(|l| {
                if w.exited >> l & 1 != 0 {
                    format!("lane {l} (thread {}) exited", tid_of(w, l))
                } else {
                    format!("lane {l} (thread {}) waits at line {}", tid_of(w, l), line_of(w.pc[l]))
                }
            })
            .unwrap_or_else(|| "its lanes wait with different masks".into());
        return err_at(
            env,
            block,
            w,
            pc,
            lane,
            format!(
                "{what} with member mask {mask:#010x} can never complete: {why}. Where the warps are: {}",
                positions(env, warps)
            ),
        );
    }
    let bar = &block.bars[id as usize];
    let expected = if bar.count == 0 { block.live } else { bar.count };
    // Someone who will never arrive: one waiting elsewhere, or (for a
    // barrier with a thread count) an exited thread.
    let mut why = String::new();
    'find: for w2 in warps {
        for l in lanes(w2.exists) {
            if w2.exited >> l & 1 != 0 {
                if bar.count != 0 {
                    why = format!("thread {} exited", tid_of(w2, l));
                    break 'find;
                }
                continue;
            }
            if w2.waiting >> l & 1 != 0 && w2.bar_of[l] != id {
                why = format!("thread {} waits at {}", tid_of(w2, l), waits_at(env, w2, l));
                break 'find;
            }
        }
    }
    if why.is_empty() {
        why = "the missing threads can never arrive".into();
    }
    err_at(
        env,
        block,
        w,
        pc,
        lane,
        format!(
            "barrier {id} can never complete: {} of {expected} threads arrived; {why}. Where the warps are: {}",
            bar.arrived,
            positions(env, warps)
        ),
    )
}

/// Explains a race of global memory between this access, of `kind`, and
/// an earlier one of another thread of the launch (`gorder`).
#[cold]
pub(crate) fn global_race_message(env: &Env<'_>, order: &GlobalOrder, race: &Race, kind: gorder::Kind) -> String {
    use gorder::Kind as K;
    let this = match kind {
        K::Read | K::StrongRead(_) => "reads",
        K::Write => "writes",
        K::Atomic(_) => "atomically updates",
    };
    let e = &race.earlier;
    let verb = match race.earlier_kind {
        K::Write => "wrote",
        K::Read | K::StrongRead(_) => "read",
        K::Atomic(_) => "updated atomically",
    };
    let [nx, ny, _] = env.ntid;
    let per_block = env.ntid[0] * env.ntid[1] * env.ntid[2];
    let (rank, local) = (e.thread / per_block, e.thread % per_block);
    let [cx, cy, _] = env.cluster;
    let [x, y, z] = order.origin(e);
    let who = format!(
        "thread ({},{},{}) of block ({},{},{})",
        local % nx,
        local / nx % ny,
        local / (nx * ny),
        x + rank % cx,
        y + rank / cx % cy,
        z + rank / (cx * cy)
    );
    let atomics = if matches!(kind, K::Atomic(_)) || matches!(race.earlier_kind, K::Atomic(_)) {
        "; atomics race with plain loads and stores of their address that nothing orders with them"
    } else {
        ""
    };
    let how = if order.running(e) {
        "within a block a barrier (sync_threads()) orders them, between the blocks of a cluster cluster_sync()"
    } else {
        "blocks (of different clusters) are ordered only by a release and an acquire of gpu scope: after the writes (and a barrier that orders every writing thread's before it), an atomic with Order::Release or Order::AcqRel and Scope::Gpu (a relaxed one releases only what its own thread's fence_acq_rel_gpu() before it released: a fence before the barrier covers that thread's writes alone), and the reading block's atomic with Order::Acquire or Order::AcqRel (or a relaxed one followed by fence_acq_rel_gpu()) that reads its value, before a barrier and the reads"
    };
    format!(
        "global-memory data race: this thread {this} global memory {:#x}, which {who} {verb} at {}, and nothing orders the two accesses{atomics}; {how}",
        race.addr,
        statement_of(env, e.pc)
    )
}

/// A programmatic dependent launch's access, before its thread's
/// `griddepcontrol.wait`, of bytes its predecessors (`entries`) accessed:
/// the first common byte `at`, which they wrote (`wrote`) or read.
pub(crate) fn pdl_message(
    what: &str,
    addr: u64,
    len: usize,
    write: bool,
    at: u64,
    wrote: bool,
    entries: &[String],
) -> String {
    let kernels = if entries.len() == 1 {
        format!("the kernel before it in the stream (`{}`)", entries[0])
    } else {
        format!("the kernels before it in the stream (`{}`)", entries.join("`, `"))
    };
    format!(
        "{what} of {len} bytes at {addr:#x} {} byte {at:#x}, which {kernels} {}, before this thread's `griddepcontrol.wait`: a kernel that calls `grid_dependency_wait()` is a programmatic dependent launch and may run while its predecessor still runs; call `grid_dependency_wait()` before this access",
        if write { "writes" } else { "reads" },
        if wrote { "writes" } else { "reads" },
    )
}
