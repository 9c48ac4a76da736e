//! Asynchronous work in flight.
//!
//! Per warp ([`AsyncRegs`]): the `wgmma.mma_async` operations issued and
//! not yet completed, the `tcgen05.ld` results not yet waited for, the
//! registers they hold and the `wgmma.fence` state. Per block
//! ([`Inflight`]): the queue of asynchronous operations that have not
//! completed (bulk and tensor copies, `tcgen05.cp`/`mma`/`commit`), and
//! the shared bytes that operations in flight read or write
//! ([`InflightShared`]), which no other access may touch until then.
//!
//! A pending operation keeps everything it needs to complete, so it can
//! be completed whenever it is legal to; the scheduler (`run`) decides
//! when: a `wgmma.mma_async` at the `wgmma.wait_group` that retires its
//! group, a copy or a `tcgen05` operation when the seeded schedule says
//! so or when nothing else can run (`tcgen05` operations of a block in
//! issue order, as its tensor core executes them).
//!
//! While an operation is pending, its registers are *held*: their written
//! bits (`Warp::init`) are cleared, so that any read by another instruction
//! takes `Ctx::src`'s slow path, which reports it; a write is caught by
//! `Ctx::write`'s check of the warp's `AsyncRegs`, which exists only once
//! the warp has executed a `wgmma` or `tcgen05.ld`. Completing the last
//! operation that holds a register gives its written bits back.

use std::collections::VecDeque;

/// One issued `wgmma.mma_async`, until a `wgmma.wait_group` completes it.
#[derive(Clone, Debug)]
pub(crate) struct Mma {
    /// The instruction's index (for its line).
    pub pc: u32,
    /// N: D is 64 x N, this warp's part 16 x N.
    pub n: u32,
    /// The accumulator registers (N / 2), in fragment order.
    pub d: Box<[u32]>,
    /// The four A fragment registers, or none when A is in shared memory.
    pub a: Box<[u32]>,
    /// Shared-buffer offsets of the 16-byte chunks A is read from (A in
    /// shared memory: this warp's 16 rows, 2 chunks each), then B's (N
    /// rows, 2 chunks each).
    pub chunks: Box<[u32]>,
    /// `.bf16` operands (else `.f16`).
    pub bf16: bool,
    /// imm-scale-a / imm-scale-b of -1.
    pub neg_a: bool,
    pub neg_b: bool,
    /// scale-d: accumulate into D (else overwrite it).
    pub scale_d: bool,
    /// Its entry in the block's [`InflightShared`].
    pub read: u64,
}

impl Mma {
    /// Whether register `r` is one of its accumulators.
    pub fn writes(&self, r: u32) -> bool {
        self.d.contains(&r)
    }

    fn holds(&self, r: u32) -> bool {
        self.writes(r) || self.a.contains(&r)
    }
}

/// A `tcgen05.ld` whose registers wait for `tcgen05.wait::ld`.
#[derive(Clone, Debug)]
pub(crate) struct TcLoad {
    /// The instruction's index.
    pub pc: u32,
    pub regs: Box<[u32]>,
}

/// What a warp's pending asynchronous operations do to one register.
#[derive(Clone, Copy, Debug, Default)]
struct RegHold {
    /// The fence count when an instruction other than a `wgmma` last
    /// wrote it, and that instruction's index (a fence bumps the count
    /// instead of clearing every register).
    written: u64,
    written_pc: u32,
    /// Its written bits when it was first held.
    init: u32,
    /// How many pending operations hold it.
    holds: u16,
    /// How many pending `wgmma.mma_async` accumulate into it, and how
    /// many read it as an A operand (the checks of an issue search the
    /// pending operations only where these say it may fail).
    acc: u16,
    reads: u16,
}

/// A warp's registers that asynchronous operations hold, created by its
/// first `wgmma` or `tcgen05.ld` instruction.
#[derive(Debug)]
pub(crate) struct AsyncRegs {
    /// Issued `wgmma.mma_async` operations not yet committed, in issue
    /// order.
    pub open: Vec<Mma>,
    /// Committed groups, oldest first.
    pub groups: VecDeque<Vec<Mma>>,
    /// `tcgen05.ld` results not yet waited for.
    pub loads: Vec<TcLoad>,
    /// Per register, what the pending operations do to it (one entry: a
    /// write or an issue touches one place per register).
    regs: Vec<RegHold>,
    /// `wgmma.fence`s executed, plus one.
    fences: u64,
    /// The index of the warp's last `wgmma.fence`.
    pub fence: Option<u32>,
    /// The accumulators of the last completed `wgmma.mma_async` whose D
    /// stayed in `carried_rows` because a later pending one holds the
    /// same registers (empty: none).
    pub carried: Vec<u32>,
    pub carried_rows: Vec<u32>,
}

impl AsyncRegs {
    pub fn new(nregs: usize) -> AsyncRegs {
        AsyncRegs {
            open: Vec::new(),
            groups: VecDeque::new(),
            loads: Vec::new(),
            regs: vec![RegHold::default(); nregs],
            fences: 1,
            fence: None,
            carried: Vec::new(),
            carried_rows: Vec::new(),
        }
    }

    /// `wgmma.fence` at instruction `pc`.
    pub fn fence(&mut self, pc: u32) {
        self.fence = Some(pc);
        self.fences += 1;
    }

    /// A write of register `r` by the instruction at `pc` (not a wgmma).
    #[inline]
    pub fn note_write(&mut self, r: u32, pc: u32) {
        let e = &mut self.regs[r as usize];
        (e.written, e.written_pc) = (self.fences, pc);
    }

    /// The instruction that wrote `r` since the last `wgmma.fence`.
    pub fn written_since_fence(&self, r: u32) -> Option<u32> {
        let e = &self.regs[r as usize];
        (e.written == self.fences).then_some(e.written_pc)
    }

    #[inline]
    pub fn is_held(&self, r: u32) -> bool {
        self.regs[r as usize].holds != 0
    }

    /// The written bits of `r`, held or not.
    pub fn init_of(&self, init: &[u32], r: u32) -> u32 {
        if self.is_held(r) {
            self.regs[r as usize].init
        } else {
            init[r as usize]
        }
    }

    /// A pending operation holds `r` (once more).
    pub fn hold(&mut self, init: &mut [u32], r: u32) {
        hold(&mut self.regs[r as usize], &mut init[r as usize]);
    }

    /// A pending operation completed and lets go of `r`; `written` says
    /// it wrote `r` (for every lane).
    pub fn release(&mut self, init: &mut [u32], r: u32, written: bool) {
        release(&mut self.regs[r as usize], &mut init[r as usize], written);
    }

    /// A `wgmma.mma_async` with accumulators `d` and A registers `a` is
    /// issued: it holds them.
    pub fn hold_mma(&mut self, init: &mut [u32], d: &[u32], a: &[u32]) {
        for &r in d {
            let e = &mut self.regs[r as usize];
            hold(e, &mut init[r as usize]);
            e.acc += 1;
        }
        for &r in a {
            let e = &mut self.regs[r as usize];
            hold(e, &mut init[r as usize]);
            e.reads += 1;
        }
    }

    /// The pending `m` completed, writing its accumulators: it lets go of
    /// its registers.
    pub fn release_mma(&mut self, init: &mut [u32], m: &Mma) {
        for &r in m.d.iter() {
            let e = &mut self.regs[r as usize];
            release(e, &mut init[r as usize], true);
            e.acc -= 1;
        }
        for &r in m.a.iter() {
            let e = &mut self.regs[r as usize];
            release(e, &mut init[r as usize], false);
            e.reads -= 1;
        }
    }

    /// Whether a pending `wgmma.mma_async` accumulates into `r`.
    pub fn pending_acc(&self, r: u32) -> bool {
        self.regs[r as usize].acc != 0
    }

    /// Whether a pending `wgmma.mma_async` reads `r` as an A operand.
    pub fn pending_read(&self, r: u32) -> bool {
        self.regs[r as usize].reads != 0
    }

    /// Pending operations in issue order, each with whether it has been
    /// committed.
    pub fn pending(&self) -> impl DoubleEndedIterator<Item = (&Mma, bool)> {
        self.groups
            .iter()
            .flatten()
            .map(|m| (m, true))
            .chain(self.open.iter().map(|m| (m, false)))
    }

    /// The last issued pending operation that holds `r`, and whether it
    /// has been committed.
    pub fn holder(&self, r: u32) -> Option<(&Mma, bool)> {
        // A register no operation holds needs no search.
        if !self.is_held(r) {
            return None;
        }
        self.pending().rev().find(|(m, _)| m.holds(r))
    }

    /// The `tcgen05.ld` not yet waited for that loads `r`.
    pub fn load_of(&self, r: u32) -> Option<&TcLoad> {
        self.loads.iter().find(|l| l.regs.contains(&r))
    }
}

/// A pending operation holds the register of `e` (once more): the first
/// hold keeps its written bits `init` and clears them.
#[inline]
fn hold(e: &mut RegHold, init: &mut u32) {
    if e.holds == 0 {
        e.init = *init;
        *init = 0;
    }
    e.holds += 1;
}

/// A pending operation lets go of the register of `e`; `written` says it
/// wrote it (for every lane). The last gives its written bits back.
#[inline]
fn release(e: &mut RegHold, init: &mut u32, written: bool) {
    if written {
        e.init = u32::MAX;
    }
    e.holds -= 1;
    if e.holds == 0 {
        *init = e.init;
    }
}

/// One operation's access of shared memory while it is in flight.
#[derive(Debug)]
struct Span {
    id: u64,
    /// The instruction's index and the issuing thread.
    pc: u32,
    thread: (u32, u32, u32),
    write: bool,
    /// Whether its granules are counted in `InflightShared::readers` (a
    /// write's always are).
    counted: bool,
    granules: Vec<u32>,
    /// The lowest granule and one past the highest.
    lo: u32,
    hi: u32,
}

/// What an in-flight operation does to the bytes another access wants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Busy {
    /// The common bytes (offsets in the block's shared buffer).
    pub lo: usize,
    pub hi: usize,
    pub pc: u32,
    pub thread: (u32, u32, u32),
    /// The operation writes them (else it reads them).
    pub write: bool,
}

/// A block's shared bytes that asynchronous operations in flight read or
/// write, in 16-byte granules.
#[derive(Debug, Default)]
pub(crate) struct InflightShared {
    /// Per granule, how many operations in flight read it and write it
    /// (empty until the first); reads added by
    /// [`InflightShared::add_wide_read`] are not counted.
    readers: Vec<u16>,
    writers: Vec<u16>,
    spans: Vec<Span>,
    next: u64,
    /// The granule lists of finished spans, reused: an operation
    /// allocates nothing.
    free: Vec<Vec<u32>>,
}

impl InflightShared {
    /// Whether any operation is in flight.
    #[inline]
    pub fn active(&self) -> bool {
        !self.spans.is_empty()
    }

    /// Registers the access of the granules holding shared-buffer offsets
    /// `offs` (of a buffer of `size` bytes) by the operation at `pc`
    /// issued by `thread`; returns its id.
    pub fn add(&mut self, pc: u32, thread: (u32, u32, u32), write: bool, offs: &[u32], size: usize) -> u64 {
        self.fit(size);
        // A granule listed twice is counted twice and released twice.
        let granules = self.granules_of(offs);
        let counts = if write { &mut self.writers } else { &mut self.readers };
        // One pass over the counts: their updates bound it, the bounds
        // come free.
        let (mut lo, mut hi) = (u32::MAX, 0);
        for &g in &granules {
            counts[g as usize] += 1;
            lo = lo.min(g);
            hi = hi.max(g + 1);
        }
        self.push(Span {
            id: 0,
            pc,
            thread,
            write,
            counted: true,
            granules,
            lo,
            hi,
        })
    }

    /// [`InflightShared::add`] for a read of the offsets `offs`, which lie
    /// in bytes `lo..hi`, that is not counted per granule: a write's check
    /// finds it through its bounds, then its granules. For the many
    /// granules of a wgmma's operands, which writes in flight rarely come
    /// near (the counts' updates cost more than those checks).
    pub fn add_wide_read(
        &mut self,
        pc: u32,
        thread: (u32, u32, u32),
        offs: &[u32],
        (lo, hi): (usize, usize),
        size: usize,
    ) -> u64 {
        self.fit(size);
        let granules = self.granules_of(offs);
        self.push(Span {
            id: 0,
            pc,
            thread,
            write: false,
            counted: false,
            granules,
            lo: (lo / 16) as u32,
            hi: hi.div_ceil(16) as u32,
        })
    }

    /// Keeps `span` under the next id, which it returns.
    fn push(&mut self, span: Span) -> u64 {
        let id = self.next;
        self.next += 1;
        self.spans.push(Span { id, ..span });
        id
    }

    /// The granules of the offsets `offs`, in a finished span's list.
    fn granules_of(&mut self, offs: &[u32]) -> Vec<u32> {
        let mut granules = self.free.pop().unwrap_or_default();
        granules.extend(offs.iter().map(|&o| o / 16));
        granules
    }

    /// The counts for a shared buffer of `size` bytes.
    fn fit(&mut self, size: usize) {
        if self.readers.is_empty() {
            self.readers = vec![0; size.div_ceil(16)];
            self.writers = vec![0; size.div_ceil(16)];
        }
    }

    /// Whether an operation in flight reads granule `g` (not inlined:
    /// the accesses' checks that call it are hot code that a scan of the
    /// spans would crowd).
    #[inline(never)]
    fn read(&self, g: usize) -> bool {
        self.readers[g] != 0 || {
            let g = g as u32;
            self.spans
                .iter()
                .any(|s| !s.counted && s.lo <= g && g < s.hi && s.granules.contains(&g))
        }
    }

    /// The access `id` is over.
    pub fn remove(&mut self, id: u64) {
        if let Some(k) = self.spans.iter().position(|s| s.id == id) {
            let s = self.spans.swap_remove(k);
            let counts = if s.write { &mut self.writers } else { &mut self.readers };
            if s.counted {
                for &g in &s.granules {
                    counts[g as usize] -= 1;
                }
            }
            self.recycle(s);
        }
    }

    fn recycle(&mut self, s: Span) {
        let mut granules = s.granules;
        granules.clear();
        self.free.push(granules);
    }

    /// Whether no operation in flight may conflict with an access of
    /// shared bytes `lo..hi` (`write`: a write): none that it may not
    /// overlap (a write for any access, a read for a write) spans a
    /// granule of them. Where this holds, every per-access check
    /// ([`InflightShared::conflict`]) of those bytes finds nothing.
    #[inline]
    pub fn quiet(&self, lo: usize, hi: usize, write: bool) -> bool {
        let (glo, ghi) = (lo / 16, hi.div_ceil(16));
        self.spans
            .iter()
            .all(|s| !(s.write || write) || s.hi as usize <= glo || s.lo as usize >= ghi)
    }

    /// Whether an access of the 16 bytes at each of `offs` may overlap an
    /// in-flight access it may not ([`InflightShared::conflict`] names it).
    /// A caller that knows the bytes' bounds asks [`InflightShared::quiet`]
    /// first.
    pub fn any_busy(&self, offs: &[u32], write: bool) -> bool {
        let busy = |g: usize| self.writers[g] != 0 || (write && self.read(g));
        // Reading, only a write in flight may conflict.
        self.spans.iter().any(|s| s.write || write)
            && offs.iter().any(|&o| {
                let g = o as usize / 16;
                // An unaligned access spans two granules.
                busy(g) || (o % 16 != 0 && busy(g + 1))
            })
    }

    /// The first in-flight access that bytes `off..off + len` may not
    /// overlap: a write for any access, a read for a write.
    pub fn conflict(&self, off: usize, len: usize, write: bool) -> Option<Busy> {
        let busy = |g: usize| self.writers[g] != 0 || (write && self.read(g));
        let g = (off / 16..(off + len).div_ceil(16)).find(|&g| busy(g))?;
        let s = self
            .spans
            .iter()
            .find(|s| (s.write || write) && s.granules.contains(&(g as u32)))?;
        Some(Busy {
            lo: off.max(16 * g),
            hi: (off + len).min(16 * g + 16),
            pc: s.pc,
            thread: s.thread,
            write: s.write,
        })
    }

    /// A fresh block: nothing in flight.
    pub fn clear(&mut self) {
        self.readers.clear();
        self.writers.clear();
        while let Some(s) = self.spans.pop() {
            self.recycle(s);
        }
    }
}

/// An asynchronous copy, `tcgen05` operation or `tcgen05.commit` in
/// flight in a block (`Block::ops`).
#[derive(Debug)]
pub(crate) struct AsyncOp {
    /// Its id in the block (for its tensor-memory columns).
    pub id: u64,
    /// The issuing instruction and thread (lane `lane` of warp `warp`).
    pub pc: u32,
    pub thread: (u32, u32, u32),
    pub warp: u32,
    pub lane: u32,
    /// The issuer's vector clock at the issue, for operations that
    /// complete on an mbarrier (they release it there); empty otherwise.
    pub clock: Box<[u32]>,
    /// The scheduler turn at which it completes by itself (`None`: only
    /// when it must).
    pub due: Option<u64>,
    /// Its accesses of shared memory in flight ([`InflightShared`] ids).
    pub spans: Vec<u64>,
    pub work: Work,
}

impl AsyncOp {
    /// Whether it completes in issue order with the block's other such
    /// operations (the `tcgen05` pipeline).
    pub fn in_order(&self) -> bool {
        matches!(self.work, Work::Tc(_))
    }

    /// Whether it reads nothing of its issuing block, which may then exit
    /// before it completes (an `st.async`: the values left with it).
    pub fn outlives_issuer(&self) -> bool {
        matches!(
            &self.work,
            Work::PeerCopy(PeerCopy {
                src: PeerSource::Values(_),
                ..
            })
        )
    }
}

/// What an operation in flight does when it completes.
#[derive(Debug)]
pub(crate) enum Work {
    /// A bulk or tensor copy from global to shared memory.
    Copy(Copy),
    /// A bulk copy from shared to global memory.
    Store(Store),
    /// A bulk copy into another block of the cluster.
    PeerCopy(PeerCopy),
    /// A `tcgen05` operation.
    Tc(TcOp),
}

/// A bulk copy of `len` bytes from the issuing block's shared buffer (or
/// an `st.async` of 16 bytes from registers) to offset `dst` of block
/// `rank`'s (`None`: the issuing block's own), completing `len`
/// transaction bytes on that block's mbarrier at `mbar`; `dst_span` is its
/// write in flight in another block (the issuing block's `spans` hold the
/// read of its source, and the write into its own buffer).
#[derive(Debug)]
pub(crate) struct PeerCopy {
    pub rank: Option<u32>,
    pub src: PeerSource,
    pub dst: usize,
    pub len: usize,
    pub mbar: u32,
    pub dst_span: Option<u64>,
}

/// Where the bytes of a [`PeerCopy`] come from.
#[derive(Debug)]
pub(crate) enum PeerSource {
    /// Offset of the issuing block's shared buffer (a bulk copy).
    Shared(usize),
    /// The values an `st.async` stored: its issuer need not outlive it.
    Values([u8; 16]),
}

/// 16 bytes of a copy into shared memory: bytes `at..at + len` come from
/// global memory at `src`, the others are zeros (outside the tensor).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    /// The offset in the block's shared buffer.
    pub off: u32,
    pub src: u64,
    pub at: u8,
    pub len: u8,
}

/// A copy into shared memory, completing `bytes` transaction bytes on the
/// mbarrier at `mbar` (a shared-window address).
#[derive(Debug)]
pub(crate) struct Copy {
    pub chunks: Vec<Chunk>,
    pub mbar: u32,
    pub bytes: u64,
}

/// A bulk copy of `len` shared bytes at offset `src` to global address
/// `dst`, in bulk async-group `group` of its thread (`None` until a
/// `cp.async.bulk.commit_group`).
#[derive(Debug)]
pub(crate) struct Store {
    pub src: usize,
    pub dst: u64,
    pub len: usize,
    pub group: Option<u64>,
}

/// A `tcgen05` operation (`.cta_group::1`).
#[derive(Debug)]
pub(crate) enum TcOp {
    /// `tcgen05.cp.32x128b.warpx4`: 32 rows of 16 bytes (shared-buffer
    /// offsets) into columns `col..col + 4` of all 128 lanes.
    Cp { rows: Box<[u32; 32]>, col: u32 },
    /// `tcgen05.mma.kind::mxf4nvf4`: D at column `d` (N columns), scale
    /// factors at `sfa` and `sfb`, A's 128 and B's N rows as pairs of
    /// 16-byte chunks (shared-buffer offsets).
    Mma {
        d: u32,
        sfa: u32,
        sfb: u32,
        n: u32,
        a: Box<[u32]>,
        b: Box<[u32]>,
        accumulate: bool,
    },
    /// `tcgen05.commit`'s arrive on the mbarrier at `mbar`.
    Arrive { mbar: u32 },
}
