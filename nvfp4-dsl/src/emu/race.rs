//! Happens-before between the threads of a cluster, and the checks built
//! on it: shared-memory data races (what compute-sanitizer's racecheck
//! reports on a GPU) and missing `fence.proxy.async`.
//!
//! Every thread has a vector clock over the threads of the running
//! cluster. Its own entry goes up after each release: arriving at a CTA
//! barrier, at the cluster barrier (not `.relaxed`: that releases only
//! what the thread's last `fence.acq_rel`/`fence.sc` released) or on an
//! mbarrier, `bar.warp.sync`, a `fence.acq_rel`/`fence.sc`. A
//! barrier or mbarrier phase collects the clocks of the threads that
//! arrive (and of the asynchronous operations that complete on it); a
//! thread that gets past it (the barrier completes, an mbarrier wait
//! succeeds) takes their maximum. An access made at thread `t`'s clock `c`
//! happens before a later access by `u` when `u`'s clock holds at least
//! `c` for `t`.
//!
//! Shared memory has a shadow word per 4 bytes (FastTrack's): the last
//! write (thread, clock, instruction, which bytes) and the reads since
//! then (up to two, or a list while more threads read concurrently). An
//! access races with an earlier one by another thread on common bytes, at
//! least one of them a write, unless the earlier one happens before it.
//! An asynchronous operation is checked as the thread that issues it, at
//! its issue (a copy's write races with earlier reads its issuer has not
//! synchronised with: a stage refilled too early), and recorded when it
//! completes as its block's asynchronous unit, a clock of its own that
//! knows what the issuer knew; the unit's clock reaches threads through
//! the mbarrier the operation completes on (or the wait that completes
//! it), so reading a copy's bytes without that wait is a race whenever the
//! copy lands. Between issue and completion the in-flight check
//! (`pending`) stops every other access.
//!
//! A generic write that the async proxy then reads (`wgmma`,
//! `tcgen05.mma`/`cp`, a bulk copy to global) needs a `fence.proxy.async`
//! by the writer, after the write and ordered before the operation's
//! issue. Each shadow word keeps how many proxy fences its writer had
//! executed when it wrote; each thread keeps its clock at every fence.
//!
//! Each shadow word also keeps which of its bytes anything wrote since the
//! block started (a store, an atomic, a completed copy): a read of a byte
//! nothing wrote (a load, an atomic, an asynchronous operation's read at
//! its issue) is an error, since a block's shared memory starts undefined
//! on the GPU; the emulator's all-ones start, NaN as a float, would
//! otherwise slip past a comparison.
//!
//! An atomic (`atom`, `red`) is a read and a write that never races with
//! another atomic: it is kept among the word's reads, marked atomic, so
//! that a plain read or write that no synchronisation orders with it races
//! (and it races with such plain accesses before it), while atomics of
//! several threads pile up side by side. Atomics of shared memory order
//! nothing here (the acquire or release an atomic asks for is not
//! modelled), nor do volatile, relaxed, acquire and release `ld`/`st`,
//! which are not checked (they are not data races in the PTX memory
//! model). Global memory is checked, with its memory order, by `gorder`
//! (where the blocks may communicate through it).

use std::collections::HashMap;

/// `Access::who` of a word read concurrently by several threads: the
/// reads are in `Shadow::many`.
const MANY: u32 = u32::MAX;

/// One access of a shadow word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Access {
    /// 1 + the accessing thread's index in the cluster; 0 for none.
    who: u32,
    clock: u32,
    /// The instruction's index.
    pub pc: u32,
    /// The bytes of the word, one bit each.
    mask: u8,
    /// An asynchronous operation issued by the thread, not a generic access.
    pub asynchronous: bool,
    /// An atomic read-modify-write (kept among the reads).
    pub atomic: bool,
}

impl Access {
    /// An access by thread (or asynchronous unit) `t` at its clock now.
    pub fn now(clocks: &Clocks, t: u32, pc: u32, asynchronous: bool) -> Access {
        Access {
            who: t + 1,
            clock: clocks.own(t),
            pc,
            mask: 0xF,
            asynchronous,
            atomic: false,
        }
    }

    /// Whether there is an access here.
    pub fn some(&self) -> bool {
        self.who != 0
    }

    /// The thread's index in the cluster.
    pub fn thread(&self) -> u32 {
        self.who - 1
    }

    /// Whether it happens before an access by thread `t`, whose clock is
    /// `row` (an access by `t` itself does).
    pub fn before(&self, t: u32, row: &[u32]) -> bool {
        self.who == t + 1 || ordered(self, row)
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    generation: u32,
    write: Access,
    /// The reads since the write, in order: up to two here (a word that
    /// two threads read concurrently, a mirror or a halo, needs no list),
    /// more in `Shadow::many` (then `read.who` is `MANY`).
    read: Access,
    read2: Access,
    /// The writer's count of proxy fences at its (generic) write.
    fences: u32,
    /// Some of the reads are atomics (plain reads need not look otherwise).
    atomics: bool,
    /// The bytes written since the block started, one bit each.
    written: u8,
}

/// What an access is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    /// A read by the async proxy (needs proxy fences after generic writes).
    AsyncRead,
    AsyncWrite,
    /// An atomic read-modify-write (`atom`, `red`).
    Atomic,
}

/// How a generic access of shared memory meets the race check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// A plain load or store: checked and recorded.
    Plain,
    /// Volatile, relaxed, acquire or release `ld`/`st`, or the write of an
    /// atomic already checked as such: not checked.
    Strong,
    /// An atomic's read-modify-write (checked once, at its read).
    Atomic,
}

/// A hazard found by a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hazard {
    /// An earlier access that does not happen before this one; `write`
    /// says whether it wrote. `off` is the first common byte.
    Race { earlier: Access, write: bool, off: usize },
    /// A generic write that the async proxy reads with no
    /// `fence.proxy.async` by the writer since.
    NoProxyFence { write: Access, off: usize },
    /// The writer's `fence.proxy.async` (at instruction `fence_pc`) does
    /// not happen before the async read.
    FenceUnordered { write: Access, fence_pc: u32, off: usize },
    /// A read of a byte that nothing has written since the block started:
    /// no store, atomic or completed copy (`off`).
    Unwritten { off: usize },
}

impl Hazard {
    /// The other access's instruction, which the message names by its Rust
    /// statement (the fault cites it).
    pub(crate) fn cited_pc(&self) -> Option<u32> {
        match self {
            Hazard::Race { earlier, .. } => Some(earlier.pc),
            Hazard::NoProxyFence { write, .. } | Hazard::FenceUnordered { write, .. } => Some(write.pc),
            Hazard::Unwritten { .. } => None,
        }
    }
}

/// The vector clocks of the threads of a cluster.
#[derive(Debug, Default)]
pub(crate) struct Clocks {
    n: usize,
    vc: Vec<u32>,
    /// The rows changed since the last reset (a reset to the same size
    /// restores only those: most threads of most kernels never
    /// synchronise).
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    /// Per thread: its own clock and the instruction at each of its
    /// `fence.proxy.async`, in order.
    fences: Vec<Vec<(u32, u32)>>,
    /// Per thread: its clock at its last `fence.acq_rel` or `fence.sc`
    /// (empty before one), which a later relaxed release hands on.
    fenced: Vec<Vec<u32>>,
}

/// `into = max(into, from)` entry by entry (`into` grows to `from`'s length).
pub(crate) fn join(into: &mut Vec<u32>, from: &[u32]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a = (*a).max(*b);
    }
}

impl Clocks {
    /// `n` threads (and asynchronous units) that know nothing of each
    /// other, each at clock 1; `n == 0` turns the clocks off (the fast
    /// mode): every row is empty, releases do nothing, and the checks
    /// built on the clocks pass.
    pub fn reset(&mut self, n: usize) {
        if n == self.n {
            for t in self.dirty.drain(..) {
                let t = t as usize;
                let row = &mut self.vc[t * n..(t + 1) * n];
                row.fill(0);
                row[t] = 1;
                self.is_dirty[t] = false;
            }
        } else {
            self.n = n;
            self.vc.clear();
            self.vc.resize(n * n, 0);
            for t in 0..n {
                self.vc[t * n + t] = 1;
            }
            self.dirty.clear();
            self.is_dirty.clear();
            self.is_dirty.resize(n, false);
        }
        self.fences.resize_with(n, Vec::new);
        for f in &mut self.fences {
            f.clear();
        }
        self.fenced.resize_with(n, Vec::new);
        for f in &mut self.fenced {
            f.clear();
        }
    }

    /// How many threads (and asynchronous units) the clocks are over.
    pub fn threads(&self) -> usize {
        self.n
    }

    /// Whether the clocks are kept (the checked mode).
    #[inline]
    pub fn on(&self) -> bool {
        self.n != 0
    }

    /// Thread `t`'s own entry (0 with the clocks off).
    #[inline]
    pub fn own(&self, t: u32) -> u32 {
        self.row(t).get(t as usize).copied().unwrap_or(0)
    }

    /// Thread `t`'s vector clock (empty with the clocks off).
    #[inline]
    pub fn row(&self, t: u32) -> &[u32] {
        let t = t as usize;
        &self.vc[t * self.n..(t + 1) * self.n]
    }

    fn row_mut(&mut self, t: u32) -> &mut [u32] {
        let t = t as usize;
        if let Some(d) = self.is_dirty.get_mut(t)
            && !*d
        {
            *d = true;
            self.dirty.push(t as u32);
        }
        &mut self.vc[t * self.n..(t + 1) * self.n]
    }

    /// Thread `t` releases: `into` takes its clock, then its own entry
    /// goes up.
    pub fn release(&mut self, t: u32, into: &mut Vec<u32>) {
        join(into, self.row(t));
        self.tick(t);
    }

    /// Thread `t` executes `fence.acq_rel` or `fence.sc`: what it knows now
    /// is what a later relaxed release of it hands on (its accesses after
    /// the fence are not).
    pub fn release_fence(&mut self, t: u32) {
        if self.on() {
            self.fenced[t as usize] = self.row(t).to_vec();
            self.tick(t);
        }
    }

    /// A relaxed release by thread `t` (`barrier.cluster.arrive.relaxed`):
    /// `into` takes only what its last release fence released.
    pub fn release_fenced(&mut self, t: u32, into: &mut Vec<u32>) {
        if let Some(f) = self.fenced.get(t as usize) {
            join(into, f);
        }
    }

    /// Thread `t`'s own entry goes up (after it released its clock by
    /// other means).
    pub fn tick(&mut self, t: u32) {
        if let Some(c) = self.row_mut(t).get_mut(t as usize) {
            *c += 1;
        }
    }

    /// Thread `t` acquires everything thread (or unit) `u` knows.
    pub fn acquire_from(&mut self, t: u32, u: u32) {
        let from = self.row(u).to_vec();
        self.acquire(t, &from);
    }

    /// Thread `t` acquires what `from` collected.
    pub fn acquire(&mut self, t: u32, from: &[u32]) {
        for (a, b) in self.row_mut(t).iter_mut().zip(from) {
            *a = (*a).max(*b);
        }
    }

    /// Threads `ts` synchronise with each other (`bar.warp.sync`).
    pub fn sync_group(&mut self, ts: &[u32]) {
        let mut all = Vec::new();
        for &t in ts {
            join(&mut all, self.row(t));
        }
        for &t in ts {
            self.acquire(t, &all);
            self.tick(t);
        }
    }

    /// Thread `t`'s clock as it is now (what an operation it issues
    /// releases when it completes).
    pub fn snapshot(&self, t: u32) -> Box<[u32]> {
        self.row(t).into()
    }

    /// Thread `t` executes `fence.proxy.async` at instruction `pc`.
    pub fn proxy_fence(&mut self, t: u32, pc: u32) {
        if self.on() {
            let own = self.own(t);
            self.fences[t as usize].push((own, pc));
        }
    }

    fn fence_count(&self, t: u32) -> u32 {
        self.fences[t as usize].len() as u32
    }
}

/// The shadow of one block's shared memory.
#[derive(Debug, Default)]
pub(crate) struct Shadow {
    /// Cells of another generation are empty (a fresh block).
    generation: u32,
    cells: Vec<Cell>,
    /// The reads of words that several threads read concurrently.
    many: HashMap<u32, Vec<Access>>,
}

/// Whether `a` (of another thread, on common bytes) happens before an
/// access by the thread whose clock is `row`.
#[inline]
fn ordered(a: &Access, row: &[u32]) -> bool {
    row.get((a.who - 1) as usize).is_none_or(|&c| c >= a.clock)
}

impl Shadow {
    /// A fresh block with `bytes` of shared memory: nothing accessed.
    pub fn reset(&mut self, bytes: usize) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.cells.clear();
            self.generation = 1;
        }
        self.cells.resize(bytes.div_ceil(4), Cell::default());
        self.many.clear();
    }

    /// Checks an access of bytes `off..off + len` by thread `t` at
    /// instruction `pc`, and records it if it is generic (an asynchronous
    /// operation is recorded when it completes: [`record`](Shadow::record)).
    pub fn access(
        &mut self,
        clocks: &Clocks,
        t: u32,
        pc: u32,
        off: usize,
        len: usize,
        kind: Kind,
    ) -> Result<(), Hazard> {
        if !clocks.on() {
            return Ok(());
        }
        let row = clocks.row(t);
        let me = Access {
            who: t + 1,
            clock: row[t as usize],
            pc,
            mask: 0,
            asynchronous: matches!(kind, Kind::AsyncRead | Kind::AsyncWrite),
            atomic: kind == Kind::Atomic,
        };
        let fences = clocks.fence_count(t);
        let end = off + len;
        for w in off / 4..end.div_ceil(4) {
            let lo = off.max(4 * w) - 4 * w;
            let hi = end.min(4 * w + 4) - 4 * w;
            let mask = ((1u32 << hi) - (1u32 << lo)) as u8;
            let a = Access { mask, ..me };
            let first = |m: u8| 4 * w + m.trailing_zeros() as usize;
            let cell = self.cell(w);
            let wr = cell.write;
            let common = wr.mask & mask;
            if wr.who != 0 && wr.who != me.who && common != 0 && !ordered(&wr, row) {
                return Err(Hazard::Race {
                    earlier: wr,
                    write: true,
                    off: first(common),
                });
            }
            if kind == Kind::AsyncRead && wr.who != 0 && !wr.asynchronous && common != 0 {
                let writer = wr.thread();
                let f = &clocks.fences[writer as usize];
                match f.get(cell.fences as usize) {
                    None => {
                        return Err(Hazard::NoProxyFence {
                            write: wr,
                            off: first(common),
                        });
                    }
                    Some(&(clock, fence_pc)) if row[writer as usize] < clock => {
                        return Err(Hazard::FenceUnordered {
                            write: wr,
                            fence_pc,
                            off: first(common),
                        });
                    }
                    Some(_) => {}
                }
            }
            let reads = matches!(kind, Kind::Read | Kind::AsyncRead | Kind::Atomic);
            if reads && cell.written & mask != mask {
                return Err(Hazard::Unwritten {
                    off: first(mask & !cell.written),
                });
            }
            match kind {
                Kind::Read => {
                    self.check_reads(w, &a, true, row, first)?;
                    self.read(w, a, row);
                }
                Kind::AsyncRead => self.check_reads(w, &a, true, row, first)?,
                Kind::Write => {
                    self.check_reads(w, &a, false, row, first)?;
                    self.write(w, a, fences);
                }
                Kind::AsyncWrite => self.check_reads(w, &a, false, row, first)?,
                Kind::Atomic => {
                    self.check_reads(w, &a, false, row, first)?;
                    self.read(w, a, row);
                }
            }
        }
        Ok(())
    }

    /// Records what an asynchronous operation did when it completed: it
    /// read or wrote bytes `off..off + len` as `t` (its block's
    /// asynchronous unit, or the thread that waited for it) at `t`'s
    /// clock now.
    pub fn record(&mut self, clocks: &Clocks, t: u32, pc: u32, off: usize, len: usize, write: bool) {
        if !clocks.on() {
            return;
        }
        let row = clocks.row(t);
        let end = off + len;
        for w in off / 4..end.div_ceil(4) {
            let lo = off.max(4 * w) - 4 * w;
            let hi = end.min(4 * w + 4) - 4 * w;
            let a = Access {
                who: t + 1,
                clock: row[t as usize],
                pc,
                mask: ((1u32 << hi) - (1u32 << lo)) as u8,
                asynchronous: true,
                atomic: false,
            };
            self.cell(w);
            if write {
                self.write(w, a, 0);
            } else {
                self.read(w, a, row);
            }
        }
    }

    /// A volatile, relaxed, acquire or release access of bytes `off..off +
    /// len` (or an atomic's write), which is not race-checked: a write
    /// makes its bytes written, a read must find them written.
    pub fn strong(&mut self, clocks: &Clocks, off: usize, len: usize, write: bool) -> Result<(), Hazard> {
        if !clocks.on() {
            return Ok(());
        }
        let end = off + len;
        for w in off / 4..end.div_ceil(4) {
            let lo = off.max(4 * w) - 4 * w;
            let hi = end.min(4 * w + 4) - 4 * w;
            let mask = ((1u32 << hi) - (1u32 << lo)) as u8;
            let cell = self.cell(w);
            if write {
                cell.written |= mask;
            } else if cell.written & mask != mask {
                return Err(Hazard::Unwritten {
                    off: 4 * w + (mask & !cell.written).trailing_zeros() as usize,
                });
            }
        }
        Ok(())
    }

    /// Word `w`'s cell, emptied if it is of an earlier block.
    #[inline]
    fn cell(&mut self, w: usize) -> &mut Cell {
        let cell = &mut self.cells[w];
        if cell.generation != self.generation {
            *cell = Cell {
                generation: self.generation,
                ..Cell::default()
            };
        }
        cell
    }

    /// Records write `a` of word `w` (by a writer with `fences` proxy
    /// fences so far); a write of the whole word ends the reads before it.
    fn write(&mut self, w: usize, a: Access, fences: u32) {
        let cell = &mut self.cells[w];
        cell.written |= a.mask;
        if a.mask == 0xF {
            if cell.read.who == MANY {
                self.many.remove(&(w as u32));
            }
            cell.read = Access::default();
            cell.read2 = Access::default();
            cell.atomics = false;
        }
        cell.write = a;
        cell.fences = fences;
    }

    /// Fails if a read of word `w` since its last write, by another
    /// thread on bytes `a` touches, does not happen before `a`, where one
    /// of the two writes and not both are atomics: a plain read (`reading`)
    /// meets only the atomics among them, an atomic only the plain reads.
    fn check_reads(
        &self,
        w: usize,
        a: &Access,
        reading: bool,
        row: &[u32],
        first: impl Fn(u8) -> usize,
    ) -> Result<(), Hazard> {
        if reading && !self.cells[w].atomics {
            return Ok(());
        }
        let racing = |r: &Access| {
            r.who != a.who
                && r.mask & a.mask != 0
                && (if reading { r.atomic } else { !(r.atomic && a.atomic) })
                && !ordered(r, row)
        };
        let cell = &self.cells[w];
        let found = if cell.read.who == MANY {
            self.many[&(w as u32)].iter().copied().find(racing)
        } else {
            [cell.read, cell.read2].into_iter().find(|r| r.who != 0 && racing(r))
        };
        match found {
            Some(r) => Err(Hazard::Race {
                earlier: r,
                write: r.atomic,
                off: first(r.mask & a.mask),
            }),
            None => Ok(()),
        }
    }

    /// Records read (or atomic) `a` of word `w`: it replaces reads of its
    /// kind that happen before it and cover no other bytes; reads
    /// concurrent with it, and those of the other kind, are kept.
    fn read(&mut self, w: usize, a: Access, row: &[u32]) {
        let supersedes =
            |r: &Access| r.atomic == a.atomic && (r.who == a.who || (ordered(r, row) && r.mask & !a.mask == 0));
        let cell = &mut self.cells[w];
        cell.atomics |= a.atomic;
        if cell.read.who == MANY {
            let list = self.many.get_mut(&(w as u32)).expect("a read list");
            list.retain(|r| !supersedes(r));
            list.push(a);
            return;
        }
        // The same list, kept in the cell while it holds two reads or fewer.
        let mut kept = [cell.read, cell.read2]
            .into_iter()
            .filter(|r| r.who != 0 && !supersedes(r));
        match (kept.next(), kept.next()) {
            (None, _) => (cell.read, cell.read2) = (a, Access::default()),
            (Some(r), None) => (cell.read, cell.read2) = (r, a),
            (Some(r), Some(s)) => {
                (cell.read, cell.read2) = (Access { who: MANY, ..r }, Access::default());
                self.many.insert(w as u32, vec![r, s, a]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn races_need_two_threads_common_bytes_a_write_and_no_ordering() {
        let mut c = Clocks::default();
        c.reset(3);
        let mut s = Shadow::default();
        s.reset(64);
        // Thread 0 writes bytes 0..4; thread 1 reads them unordered.
        s.access(&c, 0, 10, 0, 4, Kind::Write).unwrap();
        let e = s.access(&c, 1, 11, 2, 2, Kind::Read).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: true, off: 2, earlier } if earlier.pc == 10));
        // Other bytes of the word, and the writer itself, are fine.
        s.access(&c, 1, 12, 4, 4, Kind::Write).unwrap();
        s.access(&c, 0, 13, 0, 4, Kind::Read).unwrap();
        // A barrier: both release into it, both acquire it.
        let mut bar = Vec::new();
        c.release(0, &mut bar);
        c.release(1, &mut bar);
        c.acquire(0, &bar);
        c.acquire(1, &bar);
        s.access(&c, 1, 14, 0, 4, Kind::Read).unwrap();
        // Two concurrent readers; a write by thread 2 races (with the
        // first write, which it does not know of either), by thread 0
        // with thread 1's read only.
        s.access(&c, 0, 15, 0, 4, Kind::Read).unwrap();
        let e = s.access(&c, 2, 16, 0, 1, Kind::Write).unwrap_err();
        assert!(matches!(e, Hazard::Race { .. }));
        let e = s.access(&c, 0, 17, 3, 1, Kind::Write).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: false, off: 3, earlier } if earlier.pc == 14));
        // Thread 1 releases through an mbarrier that thread 0 acquires.
        let mut mbar = Vec::new();
        c.release(1, &mut mbar);
        c.acquire(0, &mbar);
        s.access(&c, 0, 18, 0, 4, Kind::Write).unwrap();
    }

    #[test]
    fn reads_of_bytes_nothing_wrote_are_errors() {
        let mut c = Clocks::default();
        c.reset(2);
        let mut s = Shadow::default();
        s.reset(64);
        for kind in [Kind::Read, Kind::AsyncRead, Kind::Atomic] {
            assert_eq!(s.access(&c, 0, 1, 8, 4, kind), Err(Hazard::Unwritten { off: 8 }));
        }
        // Byte 1 written: a read of the word finds byte 0 unwritten, of
        // byte 1 alone none.
        s.access(&c, 0, 2, 1, 1, Kind::Write).unwrap();
        assert_eq!(s.access(&c, 0, 3, 0, 4, Kind::Read), Err(Hazard::Unwritten { off: 0 }));
        s.access(&c, 0, 3, 1, 1, Kind::Read).unwrap();
        // A completed copy writes, as does a strong store (not race-checked);
        // a strong load must find its bytes written too.
        s.record(&c, 1, 4, 16, 16, true);
        s.access(&c, 1, 5, 16, 16, Kind::AsyncRead).unwrap();
        assert_eq!(s.strong(&c, 32, 4, false), Err(Hazard::Unwritten { off: 32 }));
        s.strong(&c, 32, 4, true).unwrap();
        s.strong(&c, 32, 4, false).unwrap();
        s.access(&c, 0, 6, 32, 4, Kind::Read).unwrap();
        // The next block starts with nothing written.
        s.reset(64);
        assert_eq!(
            s.access(&c, 0, 7, 16, 4, Kind::Read),
            Err(Hazard::Unwritten { off: 16 })
        );
        // The fast mode keeps no shadow.
        c.reset(0);
        s.access(&c, 0, 8, 40, 4, Kind::Read).unwrap();
        s.strong(&c, 40, 4, false).unwrap();
    }

    #[test]
    fn atomics_race_with_plain_accesses_but_not_with_each_other() {
        let mut c = Clocks::default();
        c.reset(3);
        let mut s = Shadow::default();
        s.reset(64);
        // Thread 0 writes the words, and a barrier orders that before the
        // rest (reading bytes nothing wrote is an error of its own).
        s.access(&c, 0, 1, 0, 16, Kind::Write).unwrap();
        let mut bar = Vec::new();
        (0..3).for_each(|t| c.release(t, &mut bar));
        (0..3).for_each(|t| c.acquire(t, &bar));
        // Three threads update word 0 atomically, unordered: no race.
        for t in 0..3 {
            s.access(&c, t, 10 + t, 0, 4, Kind::Atomic).unwrap();
        }
        // A plain read, or write, of it by one of them races with another's
        // atomic (a write).
        let e = s.access(&c, 0, 20, 0, 4, Kind::Read).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: true, earlier, .. } if earlier.atomic && earlier.thread() != 0));
        let e = s.access(&c, 1, 21, 2, 2, Kind::Write).unwrap_err();
        assert!(matches!(e, Hazard::Race { earlier, off: 2, .. } if earlier.atomic));
        // A barrier orders them all: plain accesses are fine again.
        let mut bar = Vec::new();
        (0..3).for_each(|t| c.release(t, &mut bar));
        (0..3).for_each(|t| c.acquire(t, &bar));
        s.access(&c, 2, 22, 0, 4, Kind::Read).unwrap();
        s.access(&c, 2, 23, 0, 4, Kind::Write).unwrap();
        // An atomic races with an earlier unordered plain read or write.
        s.access(&c, 1, 24, 4, 4, Kind::Read).unwrap();
        let e = s.access(&c, 2, 25, 4, 4, Kind::Atomic).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: false, earlier, .. } if earlier.pc == 24));
        s.access(&c, 0, 26, 8, 4, Kind::Write).unwrap();
        let e = s.access(&c, 1, 27, 8, 4, Kind::Atomic).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: true, earlier, .. } if earlier.pc == 26));
        // A thread's atomic and its own plain read stay apart: another
        // thread's atomic still meets the read, a plain read the atomic.
        s.access(&c, 0, 28, 12, 4, Kind::Atomic).unwrap();
        s.access(&c, 0, 29, 12, 4, Kind::Read).unwrap();
        let e = s.access(&c, 1, 30, 12, 4, Kind::Atomic).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: false, earlier, .. } if earlier.pc == 29));
        let e = s.access(&c, 2, 31, 12, 4, Kind::Read).unwrap_err();
        assert!(matches!(e, Hazard::Race { write: true, earlier, .. } if earlier.pc == 28));
    }

    #[test]
    fn the_async_proxy_needs_an_ordered_proxy_fence_after_generic_writes() {
        let mut c = Clocks::default();
        c.reset(2);
        let mut s = Shadow::default();
        s.reset(32);
        s.access(&c, 0, 1, 0, 16, Kind::Write).unwrap();
        let mut bar = Vec::new();
        c.release(0, &mut bar);
        c.acquire(1, &bar);
        // Ordered, but no fence.
        let e = s.access(&c, 1, 2, 0, 16, Kind::AsyncRead).unwrap_err();
        assert!(matches!(e, Hazard::NoProxyFence { off: 0, .. }));
        // A fence after the barrier does not help thread 1.
        c.proxy_fence(0, 3);
        let e = s.access(&c, 1, 4, 4, 4, Kind::AsyncRead).unwrap_err();
        assert!(matches!(e, Hazard::FenceUnordered { fence_pc: 3, .. }));
        // Once the fence is released to it, the read is fine; so are
        // async reads of what the async proxy wrote.
        let mut bar = Vec::new();
        c.release(0, &mut bar);
        c.acquire(1, &bar);
        s.access(&c, 1, 5, 0, 16, Kind::AsyncRead).unwrap();
        s.access(&c, 1, 6, 16, 16, Kind::AsyncWrite).unwrap();
        s.record(&c, 1, 6, 16, 16, true);
        s.access(&c, 1, 7, 16, 16, Kind::AsyncRead).unwrap();
        // Warp-level sync orders a group of threads.
        s.access(&c, 0, 8, 20, 4, Kind::Write).unwrap_err();
        c.sync_group(&[0, 1]);
        s.access(&c, 0, 8, 20, 4, Kind::Write).unwrap();
        // A fresh block forgets everything.
        s.reset(32);
        s.access(&c, 1, 9, 20, 4, Kind::Write).unwrap();
    }
}
