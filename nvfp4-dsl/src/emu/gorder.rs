//! Happens-before over global memory, and its data races, for a launch
//! whose blocks may communicate through global memory
//! (`Entry::inter_block`) in the checked mode. Its clusters run one after
//! another on one thread, so one shadow of global memory serves the whole
//! launch and the outcome is deterministic.
//!
//! Within the running cluster the threads' vector clocks (`race`) order
//! accesses. A finished cluster's accesses are ordered before a thread of
//! the running one only by release/acquire of gpu scope (the PTX memory
//! model's synchronisation between blocks): an atomic, `st` or `red` with
//! `.release` or `.acq_rel` (or a relaxed one after the thread's
//! `fence.acq_rel`/`fence.sc`, the release pattern) hands its thread's
//! clock, and everything that thread knew of earlier clusters, to the
//! location; an atomic or `ld` with `.acquire`/`.acq_rel` (or a relaxed
//! one that a fence then follows, the acquire pattern) of the location
//! takes it. A release is cumulative: it hands on what happens before it,
//! other threads' writes ordered before it by a barrier included. A
//! thread's acquire of earlier clusters is an event (thread, own clock,
//! what it acquired) that every thread whose clock reaches it knows of
//! (through barriers, or any release of the running cluster), so the
//! barrier code needs no hook. Release and acquire of cta or cluster
//! scope order only within the cluster (cta scope is taken as cluster
//! scope there).
//!
//! The shadow keeps per 4-byte word the last plain write, one plain read
//! and one atomic (atom, red, and strong `st`: relaxed, release or
//! volatile), each with its cluster, thread, clock, instruction and bytes.
//! A plain access races with an unordered earlier write or atomic (a
//! write also with an unordered read), an atomic with an unordered plain
//! write or read, and a strong `ld` with an unordered plain write;
//! atomics and strong accesses never race with each other. Only one read
//! and one atomic are kept per word (the first of several unordered
//! ones): a race with a dropped one can go unreported, never a false one.
//! A bulk copy's global read counts as its issuing thread's plain read at
//! the issue (`Ctx::global_check`); bulk copies' writes are not checked, nor
//! accesses of two launches (`pdl` checks those). The async proxy reads
//! such a copy's source: a plain write of the launch that it reads must be
//! followed by a `fence.proxy.async` (`.global`, or without a state
//! space) of the writing thread, ordered before the copy's issue as the
//! write is ([`GlobalOrder::proxy_check`]; the shared-memory check,
//! `race`, asks the same of the writer). A finished launch leaves
//! its shadow and its gpu-scope releases (`PredOrder`) to its programmatic
//! dependent: a dependent thread's acquire of a word that launch released
//! (and the dependent has not written) is ordered after the accesses that
//! happen before those releases, which `pdl`'s check then allows.

use super::inst::Mods;
use super::race::{Clocks, join};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The scope of a memory-order operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    /// `.cta` or `.cluster`: within the cluster.
    Cluster,
    /// `.gpu` or `.sys`: every block of the launch.
    Gpu,
}

/// The memory order of a strong access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sem {
    pub acquire: bool,
    pub release: bool,
    pub scope: Scope,
}

/// `Inst::flags` bits of `ld`/`st`/`atom`/`red` (beside `ops::mem`'s bit
/// 1, a strong `ld`/`st`): the memory order's acquire, release, and a
/// scope narrower than `.gpu` (`.cta`, `.cluster`).
const F_ACQUIRE: u32 = 2;
const F_RELEASE: u32 = 4;
const F_NARROW: u32 = 8;

/// The memory-order bits of an access's qualifiers.
pub(crate) fn order_flags(m: &Mods<'_>) -> u32 {
    m.rest()
        .iter()
        .map(|p| match *p {
            "acquire" => F_ACQUIRE,
            "release" => F_RELEASE,
            "acq_rel" => F_ACQUIRE | F_RELEASE,
            "cta" | "cluster" => F_NARROW,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

/// How the race check sees an access with memory-order bits `flags`
/// (`strong`: an atomic, or a strong `ld`/`st`).
pub(crate) fn order_kind(flags: u32, strong: bool, write: bool) -> Kind {
    let sem = Sem {
        acquire: flags & F_ACQUIRE != 0,
        release: flags & F_RELEASE != 0,
        scope: if flags & F_NARROW != 0 {
            Scope::Cluster
        } else {
            Scope::Gpu
        },
    };
    match (strong, write) {
        (false, false) => Kind::Read,
        (false, true) => Kind::Write,
        (true, false) => Kind::StrongRead(sem),
        (true, true) => Kind::Atomic(sem),
    }
}

/// What a global access is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    /// `ld.relaxed`/`.acquire`/`.volatile`.
    StrongRead(Sem),
    /// `atom`, `red`, `st.relaxed`/`.release`/`.volatile`.
    Atomic(Sem),
}

/// One access of a shadow word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Access {
    /// 1 + the cluster's index in the launch's order; 0 for none.
    pub cluster: u32,
    /// The thread's index in its cluster.
    pub thread: u32,
    clock: u32,
    /// The instruction's index.
    pub pc: u32,
    /// The bytes of the word, one bit each.
    mask: u8,
    /// How many proxy fences of global memory the thread had executed
    /// (what [`GlobalOrder::proxy_check`] asks of a plain write).
    fences: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    write: Access,
    read: Access,
    atomic: Access,
}

/// A race: the earlier access, what it was, and the first common byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Race {
    pub earlier: Access,
    pub earlier_kind: Kind,
    pub addr: u64,
}

/// An async-proxy read of global memory at `addr` that a plain write
/// ordered before it (`write`) was not fenced for: its thread executed no
/// `fence.proxy.async` of global memory after it (`fence_pc` none), or
/// the first one it did, at `fence_pc`, is not ordered before the read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unfenced {
    pub write: Access,
    pub fence_pc: Option<u32>,
    pub addr: u64,
}

/// What threads of earlier clusters are known to have done: a vector
/// clock over each such cluster's threads.
#[derive(Clone, Debug, Default)]
struct Know(Vec<(u32, Vec<u32>)>);

impl Know {
    fn add(&mut self, cluster: u32, row: &[u32]) {
        match self.0.iter_mut().find(|(c, _)| *c == cluster) {
            Some((_, r)) => join(r, row),
            None => self.0.push((cluster, row.to_vec())),
        }
    }

    fn add_all(&mut self, other: &Know) {
        for (c, r) in &other.0 {
            self.add(*c, r);
        }
    }

    fn covers(&self, a: &Access) -> bool {
        self.0
            .iter()
            .any(|(c, r)| *c == a.cluster && r.get(a.thread as usize).is_some_and(|&k| k >= a.clock))
    }
}

/// What releases into a location handed on: the running cluster's
/// clocks (`local`, of cluster `cluster`), and, at gpu scope, every
/// cluster's (`gpu`).
#[derive(Clone, Debug, Default)]
struct Released {
    cluster: u32,
    local: Vec<u32>,
    gpu: Know,
}

/// A thread's acquire of earlier clusters' accesses.
#[derive(Clone, Debug)]
struct Event {
    thread: u32,
    clock: u32,
    know: Know,
}

/// The shadow of global memory and the release/acquire state of a launch
/// (off, and empty, outside the checked mode or where the blocks do not
/// communicate through global memory).
#[derive(Clone, Debug, Default)]
pub(crate) struct GlobalOrder {
    on: bool,
    /// 1 + the running cluster's index.
    cluster: u32,
    /// Each cluster's first block, in the order they ran.
    origins: Vec<[u32; 3]>,
    cells: HashMap<u64, Cell>,
    released: HashMap<u64, Released>,
    events: Vec<Event>,
    /// Per thread of the running cluster: its clock at its last release
    /// fence and the fence's scope (what a later relaxed release hands on).
    fenced: Vec<Option<(Scope, Vec<u32>)>>,
    /// Per thread: what its relaxed reads of released locations saw since
    /// its last fence (the acquire pattern's fence acquires it).
    pending: Vec<Option<Released>>,
    /// The launch before this one in the stream, when this one is its
    /// programmatic dependent and both are checked here.
    pred: Option<Arc<PredOrder>>,
    /// Per thread of the running cluster: what it acquired of `pred`'s
    /// releases (a flag that launch set after its writes).
    pred_know: Vec<Option<Know>>,
    /// Words that bulk copies to global memory wrote (the async proxy's
    /// writes, which the shadow does not order).
    async_written: HashSet<u64>,
    /// Each thread's proxy fences of global memory, by (cluster, thread):
    /// its clock and the instruction at each, in order.
    proxy_fences: HashMap<(u32, u32), Vec<(u32, u32)>>,
}

/// What a finished launch leaves for its programmatic dependent: its
/// shadow of global memory and what its releases of gpu scope handed on,
/// by word.
#[derive(Debug, Default)]
pub(crate) struct PredOrder {
    cells: HashMap<u64, Cell>,
    released: HashMap<u64, Know>,
    async_written: HashSet<u64>,
}

impl GlobalOrder {
    /// A launch's state, kept if `on`.
    pub fn new(on: bool) -> GlobalOrder {
        GlobalOrder {
            on,
            ..GlobalOrder::default()
        }
    }

    /// Whether accesses are checked.
    #[inline]
    pub fn on(&self) -> bool {
        self.on
    }

    /// What this finished launch leaves for a dependent (`None` when it
    /// was not checked here).
    pub fn finish(self) -> Option<PredOrder> {
        self.on.then(|| PredOrder {
            cells: self.cells,
            released: self
                .released
                .into_iter()
                .filter(|(_, r)| !r.gpu.0.is_empty())
                .map(|(w, r)| (w, r.gpu))
                .collect(),
            async_written: self.async_written,
        })
    }

    /// A bulk copy wrote `len` bytes of global memory at `addr`.
    pub fn async_write(&mut self, addr: u64, len: usize) {
        if self.on {
            self.async_written.extend(addr / 4..(addr + len as u64).div_ceil(4));
        }
    }

    /// The launch before this one, whose releases this one's acquires
    /// may read.
    pub fn set_predecessor(&mut self, pred: Option<Arc<PredOrder>>) {
        if self.on {
            self.pred = pred;
        }
    }

    /// Whether thread `t` acquired, through a flag the launch before
    /// released, that launch's accesses of `word` that an access of it
    /// conflicts with (`over_read`: this access writes what that launch
    /// read): its plain writes and atomics there happen before a release
    /// the thread's acquire read. A word that launch also wrote by a bulk
    /// copy (the async proxy, outside the shadow) is never covered; nor is
    /// a write over what it read, unless it only ever touched the word
    /// with atomics (a flag): the reads of its bulk copies are in the
    /// shadow only at their issue, though they go on until the copy
    /// completes, so those need the wait.
    pub fn predecessor_covers(&self, t: u32, word: u64, over_read: bool) -> bool {
        let (Some(p), Some(Some(know))) = (&self.pred, self.pred_know.get(t as usize)) else {
            return false;
        };
        let Some(cell) = p.cells.get(&word) else {
            return false;
        };
        let covered = |a: &Access| a.cluster == 0 || know.covers(a);
        let only_atomics = cell.atomic.cluster != 0 && cell.write.cluster == 0 && cell.read.cluster == 0;
        (cell.write.cluster != 0 || cell.atomic.cluster != 0)
            && (!over_read || only_atomics)
            && !p.async_written.contains(&word)
            && covered(&cell.write)
            && covered(&cell.atomic)
    }

    /// The next cluster, whose first block is `origin`, starts with
    /// `threads` threads (and asynchronous units).
    pub fn start(&mut self, origin: [u32; 3], threads: usize) {
        if !self.on {
            return;
        }
        self.origins.push(origin);
        self.cluster = self.origins.len() as u32;
        self.events.clear();
        self.fenced.clear();
        self.fenced.resize(threads, None);
        self.pending.clear();
        self.pending.resize(threads, None);
        self.pred_know.clear();
        self.pred_know.resize(threads, None);
    }

    /// The first block of the cluster of `a`.
    pub fn origin(&self, a: &Access) -> [u32; 3] {
        self.origins[(a.cluster - 1) as usize]
    }

    /// Whether `a` is of the running cluster.
    pub fn running(&self, a: &Access) -> bool {
        a.cluster == self.cluster
    }

    /// What the thread whose clock is `row` knows of earlier clusters.
    fn know_of(&self, row: &[u32]) -> Know {
        let mut k = Know::default();
        for e in self.events.iter().filter(|e| row[e.thread as usize] >= e.clock) {
            k.add_all(&e.know);
        }
        k
    }

    /// Whether `a` happens before an access by thread `t`, whose clock is
    /// `row`.
    fn ordered(&self, a: &Access, t: u32, row: &[u32]) -> bool {
        if a.cluster == self.cluster {
            a.thread == t || row[a.thread as usize] >= a.clock
        } else {
            self.events
                .iter()
                .any(|e| row[e.thread as usize] >= e.clock && e.know.covers(a))
        }
    }

    /// Checks and records the access of bytes `addr..addr + len` by thread
    /// `t` at instruction `pc`, then does what its memory order asks:
    /// acquire (`.acquire`, or a relaxed read noted for the next fence),
    /// then release (`.release`, or a relaxed write after a release fence).
    pub fn access(
        &mut self,
        clocks: &mut Clocks,
        t: u32,
        pc: u32,
        addr: u64,
        len: usize,
        kind: Kind,
    ) -> Result<(), Race> {
        let word = addr / 4;
        // A location this launch has not written holds what the launch
        // before left there.
        let theirs = self.pred.is_some()
            && self
                .cells
                .get(&word)
                .is_none_or(|c| c.write.cluster == 0 && c.atomic.cluster == 0);
        self.check(clocks.row(t), t, pc, addr, len, kind)?;
        let (sem, writes) = match kind {
            Kind::Read | Kind::Write => return Ok(()),
            Kind::StrongRead(sem) => (sem, false),
            Kind::Atomic(sem) => (sem, true),
        };
        if theirs
            && sem.acquire
            && sem.scope == Scope::Gpu
            && let Some(know) = self.pred.as_ref().and_then(|p| p.released.get(&word))
        {
            self.pred_know[t as usize]
                .get_or_insert_with(Know::default)
                .add_all(know);
        }
        if let Some(r) = self.released.get(&word) {
            if sem.acquire {
                let r = r.clone();
                self.acquire(clocks, t, &r, sem.scope);
            } else {
                let p = self.pending[t as usize].get_or_insert_with(Released::default);
                if r.cluster == self.cluster {
                    join(&mut p.local, &r.local);
                }
                if sem.scope == Scope::Gpu {
                    p.gpu.add_all(&r.gpu);
                }
            }
        }
        if writes {
            if sem.release {
                let row = clocks.row(t).to_vec();
                self.release(word, &row, sem.scope);
                clocks.tick(t);
            } else if let Some((scope, row)) = self.fenced[t as usize].clone() {
                self.release(word, &row, scope.min(sem.scope));
            }
        }
        Ok(())
    }

    /// Thread `t` executes `fence.acq_rel` or `fence.sc` of `scope`: what
    /// it knows now is what its later relaxed writes release, and it
    /// acquires what its relaxed reads since its last fence saw. Called
    /// before the fence's own entry goes up.
    pub fn fence(&mut self, clocks: &mut Clocks, t: u32, scope: Scope) {
        if !self.on {
            return;
        }
        self.fenced[t as usize] = Some((scope, clocks.row(t).to_vec()));
        if let Some(p) = self.pending[t as usize].take() {
            self.acquire(clocks, t, &p, scope);
        }
    }

    /// Thread `t` executes a `fence.proxy.async` of global memory at
    /// instruction `pc`: its plain writes so far may be read by the async
    /// proxy once the fence is ordered before the read.
    pub fn proxy_fence(&mut self, clocks: &Clocks, t: u32, pc: u32) {
        if self.on {
            self.proxy_fences
                .entry((self.cluster, t))
                .or_default()
                .push((clocks.own(t), pc));
        }
    }

    /// How many proxy fences of global memory thread `t` of the running
    /// cluster has executed.
    fn fence_count(&self, t: u32) -> u32 {
        self.proxy_fences.get(&(self.cluster, t)).map_or(0, |f| f.len() as u32)
    }

    /// Checks that the async proxy may read bytes `addr..addr + len` at
    /// thread `t`'s issue of a bulk copy (after [`GlobalOrder::access`]
    /// found no race, so every plain write of them is ordered before it):
    /// each such write of this launch was followed by its thread's
    /// `fence.proxy.async` of global memory, ordered before the issue.
    /// Writes of an earlier launch are visible to every proxy once it
    /// completed.
    pub fn proxy_check(&self, clocks: &Clocks, t: u32, addr: u64, len: usize) -> Result<(), Unfenced> {
        if !self.on {
            return Ok(());
        }
        let row = clocks.row(t);
        let end = addr + len as u64;
        for w in addr / 4..end.div_ceil(4) {
            let mask = word_mask(addr, end, w);
            let Some(write) = self.cells.get(&w).map(|c| c.write) else {
                continue;
            };
            if write.cluster == 0 || write.mask & mask == 0 {
                continue;
            }
            let fence = self
                .proxy_fences
                .get(&(write.cluster, write.thread))
                .and_then(|f| f.get(write.fences as usize));
            let fenced = fence.is_some_and(|&(clock, _)| {
                let at = Access { clock, ..write };
                self.ordered(&at, t, row)
            });
            if !fenced {
                return Err(Unfenced {
                    write,
                    fence_pc: fence.map(|&(_, pc)| pc),
                    addr: 4 * w + u64::from((write.mask & mask).trailing_zeros()),
                });
            }
        }
        Ok(())
    }

    fn acquire(&mut self, clocks: &mut Clocks, t: u32, r: &Released, scope: Scope) {
        if r.cluster == self.cluster {
            clocks.acquire(t, &r.local);
        }
        if scope == Scope::Gpu {
            let mut know = Know::default();
            for (c, row) in r.gpu.0.iter().filter(|(c, _)| *c != self.cluster) {
                know.add(*c, row);
            }
            if !know.0.is_empty() {
                self.events.push(Event {
                    thread: t,
                    clock: clocks.own(t),
                    know,
                });
            }
        }
    }

    fn release(&mut self, word: u64, row: &[u32], scope: Scope) {
        let know = if scope == Scope::Gpu {
            self.know_of(row)
        } else {
            Know::default()
        };
        let r = self.released.entry(word).or_default();
        if r.cluster != self.cluster {
            r.cluster = self.cluster;
            r.local.clear();
        }
        join(&mut r.local, row);
        if scope == Scope::Gpu {
            r.gpu.add(self.cluster, row);
            r.gpu.add_all(&know);
        }
    }

    /// The race check and the shadow's record of an access.
    fn check(&mut self, row: &[u32], t: u32, pc: u32, addr: u64, len: usize, kind: Kind) -> Result<(), Race> {
        // The earlier accesses it may race with: write, read, atomic.
        let (write, read, atomic) = match kind {
            Kind::Read => (true, false, true),
            Kind::Write => (true, true, true),
            Kind::StrongRead(_) => (true, false, false),
            Kind::Atomic(_) => (true, true, false),
        };
        let end = addr + len as u64;
        let fences = self.fence_count(t);
        for w in addr / 4..end.div_ceil(4) {
            let a = Access {
                cluster: self.cluster,
                thread: t,
                clock: row[t as usize],
                pc,
                mask: word_mask(addr, end, w),
                fences,
            };
            let mut cell = self.cells.get(&w).copied().unwrap_or_default();
            let racing = |e: &Access| e.cluster != 0 && e.mask & a.mask != 0 && !self.ordered(e, t, row);
            let found = [
                (write, cell.write, Kind::Write),
                (read, cell.read, Kind::Read),
                (atomic, cell.atomic, Kind::Atomic(RELAXED)),
            ]
            .into_iter()
            .find(|(on, e, _)| *on && racing(e));
            if let Some((_, e, k)) = found {
                return Err(Race {
                    earlier: e,
                    earlier_kind: k,
                    addr: 4 * w + u64::from((e.mask & a.mask).trailing_zeros()),
                });
            }
            // One read and one atomic are kept: a later one replaces one
            // that happens before it.
            let replaces = |e: &Access| e.cluster == 0 || self.ordered(e, t, row);
            match kind {
                Kind::Read if replaces(&cell.read) => cell.read = a,
                Kind::Atomic(_) if replaces(&cell.atomic) => cell.atomic = a,
                Kind::Write => {
                    // A write of the whole word is ordered after every
                    // access of it kept (or it raced).
                    if a.mask == 0xF {
                        cell = Cell::default();
                    }
                    cell.write = a;
                }
                _ => continue,
            }
            self.cells.insert(w, cell);
        }
        Ok(())
    }
}

/// The bytes of word `w` (one bit each) that the bytes `addr..end` cover.
fn word_mask(addr: u64, end: u64, w: u64) -> u8 {
    let lo = addr.max(4 * w) - 4 * w;
    let hi = end.min(4 * w + 4) - 4 * w;
    ((1u32 << hi) - (1u32 << lo)) as u8
}

/// A relaxed atomic of gpu scope (how a race names an earlier atomic).
const RELAXED: Sem = Sem {
    acquire: false,
    release: false,
    scope: Scope::Gpu,
};

#[cfg(test)]
mod tests;
