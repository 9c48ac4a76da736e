//! Error texts: what a race or an access of bytes in flight ran into, what
//! a block leaves behind at its end, and the instruction and thread an
//! error is located at (deadlocks are in `deadlock`).

use super::error::{Cited, EmuError};
use super::gorder::{self, GlobalOrder, Race, Unfenced};
use super::layout::SHARED_BASE;
use super::pending::{AsyncOp, Busy};
use super::race::{Hazard, Kind};
use super::state::{Block, Env, Warp};

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
    } else if text.starts_with("cp.async.bulk.shared::cluster.shared::cta") {
        "the receiving block's wait on the mbarrier it completes on (and, for the issuing block, a cluster barrier the receiver arrives at after that wait)"
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
        "shared memory {:#x}..{:#x}{whose} is {how} by the pending {name} at {}{issuer} and was {} at {} before {}",
        base + busy.lo,
        base + busy.hi,
        statement_of(env, busy.pc),
        if write { "overwritten" } else { "read" },
        statement_of(env, pc),
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
        text: Some(instruction_text(&e.texts[pc]).into()),
        source: e.source.of(pc).into(),
        message: msg,
        cited: None,
    }
}

/// A PTX line as an error shows it: without its comment (a failed
/// check's `trap` carries its message there, which the error states).
fn instruction_text(line: &str) -> &str {
    line.split_once("//").map_or(line, |(code, _)| code.trim_end())
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

/// `e` with the statements of instructions `pcs` (named in its message
/// by [`statement_of`]) to resolve.
pub(super) fn cite(env: &Env<'_>, e: EmuError, pcs: impl IntoIterator<Item = u32>) -> EmuError {
    let places: Vec<_> = pcs
        .into_iter()
        .flat_map(|pc| env.entry.source.of(pc as usize).iter().cloned())
        .collect();
    if places.is_empty() {
        return e;
    }
    EmuError {
        cited: Some(Box::new(Cited(places))),
        ..e
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
        Hazard::Unwritten { off } => unwritten_message(env, pc, kind, off, &whose),
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

/// Explains a read (of `kind`, at `pc`) of byte `off` of a block's shared
/// memory (`whose`: another block's) that nothing wrote.
fn unwritten_message(env: &Env<'_>, pc: u32, kind: Kind, off: usize, whose: &str) -> String {
    let addr = SHARED_BASE as usize + off;
    let this = match kind {
        Kind::Atomic => "atomically updates".to_string(),
        Kind::AsyncRead | Kind::AsyncWrite => format!("issues {} reading", op_name(&env.entry.texts[pc as usize])),
        Kind::Read | Kind::Write => "reads".to_string(),
    };
    let array = env
        .regions
        .iter()
        .zip(&env.entry.shared_names)
        .find(|((s, e), _)| (*s as usize..*e as usize).contains(&addr))
        .map_or(String::new(), |((s, _), n)| {
            format!(" (byte {} of `{n}`)", addr - *s as usize)
        });
    format!(
        "read of unwritten shared memory: this thread {this} shared memory {addr:#x}{array}{whose}, which no thread of the block has written and no copy has filled since the block started; a block's shared memory starts undefined on the GPU (here all ones, NaN as a float). Write it before reading it (set a histogram's bins or a sum's accumulator first, then sync_threads()); if a thread or a copy writes it later, order that before this read (sync_threads(), or the mbarrier wait of the copy)"
    )
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
    let who = global_thread(env, order, e);
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

/// The thread of the launch that made global access `e`, as
/// "thread (x,y,z) of block (x,y,z)".
fn global_thread(env: &Env<'_>, order: &GlobalOrder, e: &gorder::Access) -> String {
    let [nx, ny, _] = env.ntid;
    let per_block = env.ntid[0] * env.ntid[1] * env.ntid[2];
    let (rank, local) = (e.thread / per_block, e.thread % per_block);
    let [cx, cy, _] = env.cluster;
    let [x, y, z] = order.origin(e);
    format!(
        "thread ({},{},{}) of block ({},{},{})",
        local % nx,
        local / nx % ny,
        local / (nx * ny),
        x + rank % cx,
        y + rank / cx % cy,
        z + rank / (cx * cy)
    )
}

/// An async-proxy read (`what`: a bulk or tensor copy's source) of global
/// memory that a plain write reached without an ordered proxy fence.
pub(crate) fn global_unfenced_message(env: &Env<'_>, order: &GlobalOrder, u: &Unfenced, what: &str) -> String {
    let who = global_thread(env, order, &u.write);
    let wrote = statement_of(env, u.write.pc);
    match u.fence_pc {
        None => format!(
            "missing fence_proxy_async_global(): the {what} of global memory {:#x} goes through the async proxy, and {who} wrote those bytes with a plain store at {wrote} and no `fence.proxy.async` of global memory since; the writing thread must call fence_proxy_async_global() after its stores and before the barrier or release that orders them before the copy",
            u.addr
        ),
        Some(pc) => format!(
            "the {what} of global memory {:#x} goes through the async proxy, and the fence_proxy_async_global() at {} of {who}, after its plain store there at {wrote}, is not ordered before the copy; call it before the barrier or release that orders the store before the copy, not after",
            u.addr,
            statement_of(env, pc)
        ),
    }
}

/// A programmatic dependent launch's access `(addr, len, write)` of bytes
/// that launches which may still run (`entries`) accessed: before its
/// thread's `griddepcontrol.wait` (its predecessors), or at any time (an
/// unfinished launch, see `pdl`).
pub(crate) fn pdl_message(
    what: &str,
    (addr, len, write): (u64, usize, bool),
    c: &super::memory::PdlConflict,
    entries: &[String],
) -> String {
    let kernels = match (entries.len(), c.unfinished) {
        (1, false) => format!("the kernel before it in the stream (`{}`)", entries[0]),
        (_, false) => format!("the kernels before it in the stream (`{}`)", entries.join("`, `")),
        (1, true) => format!("an earlier kernel in the stream (`{}`)", entries[0]),
        (_, true) => format!("earlier kernels in the stream (`{}`)", entries.join("`, `")),
    };
    let access = format!(
        "{what} of {len} bytes at {addr:#x} {} byte {:#x}, which {kernels} {}",
        if write { "writes" } else { "reads" },
        c.at,
        if c.wrote { "writes" } else { "reads" },
    );
    if c.unfinished {
        format!(
            "{access}, and which may still run after this thread's `griddepcontrol.wait`: a programmatic kernel between them in the stream ended without any of its threads calling `grid_dependency_wait()`, so its completion does not make the kernels before it complete; have at least one block of it call `grid_dependency_wait()` before it ends"
        )
    } else {
        format!(
            "{access}, before this thread's `griddepcontrol.wait`: a kernel that calls `grid_dependency_wait()` is a programmatic dependent launch and may run while its predecessor still runs; call `grid_dependency_wait()` before this access"
        )
    }
}
