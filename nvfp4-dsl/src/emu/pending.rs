//! Asynchronous work in flight: per warp, the `wgmma.mma_async`
//! operations issued and not yet completed, the registers they hold and
//! the `wgmma.fence` state; per block, the shared bytes that pending
//! operations will read.
//!
//! A pending operation keeps everything it needs to complete (its
//! registers, the shared offsets it reads, its modifiers), so it can be
//! completed whenever it is legal to; today that is when the
//! `wgmma.wait_group` that retires its group executes (`ops::wgmma`).
//!
//! While an operation is pending, its registers are *held*: their written
//! bits (`Warp::init`) are cleared, so that any read by another instruction
//! takes `Ctx::src`'s slow path, which reports it; a write is caught by
//! `Ctx::write`'s check of the warp's `WgState`, which exists only once the
//! warp has executed a `wgmma` instruction. Completing the last operation
//! that holds a register gives its written bits back.

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
    /// Its entry in the block's [`SharedReads`].
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

/// A warp's `wgmma` state, created by its first `wgmma` instruction.
#[derive(Debug)]
pub(crate) struct WgState {
    /// Issued operations not yet committed, in issue order.
    pub open: Vec<Mma>,
    /// Committed groups, oldest first.
    pub groups: VecDeque<Vec<Mma>>,
    /// Per register: how many pending operations hold it.
    holds: Vec<u16>,
    /// Per held register: its written bits when it was first held.
    held_init: Vec<u32>,
    /// Per register: 1 + the index of the last instruction other than a
    /// `wgmma` that wrote it since the last `wgmma.fence` (0: none).
    written: Vec<u32>,
    /// The index of the warp's last `wgmma.fence`.
    pub fence: Option<u32>,
}

impl WgState {
    pub fn new(nregs: usize) -> WgState {
        WgState {
            open: Vec::new(),
            groups: VecDeque::new(),
            holds: vec![0; nregs],
            held_init: vec![0; nregs],
            written: vec![0; nregs],
            fence: None,
        }
    }

    /// `wgmma.fence` at instruction `pc`.
    pub fn fence(&mut self, pc: u32) {
        self.fence = Some(pc);
        self.written.fill(0);
    }

    /// A write of register `r` by the instruction at `pc` (not a wgmma).
    #[inline]
    pub fn note_write(&mut self, r: u32, pc: u32) {
        self.written[r as usize] = pc + 1;
    }

    /// The instruction that wrote `r` since the last `wgmma.fence`.
    pub fn written_since_fence(&self, r: u32) -> Option<u32> {
        self.written[r as usize].checked_sub(1)
    }

    #[inline]
    pub fn is_held(&self, r: u32) -> bool {
        self.holds[r as usize] != 0
    }

    /// The written bits of `r`, held or not.
    pub fn init_of(&self, init: &[u32], r: u32) -> u32 {
        if self.is_held(r) {
            self.held_init[r as usize]
        } else {
            init[r as usize]
        }
    }

    /// A pending operation holds `r` (once more).
    pub fn hold(&mut self, init: &mut [u32], r: u32) {
        let i = r as usize;
        if self.holds[i] == 0 {
            self.held_init[i] = init[i];
            init[i] = 0;
        }
        self.holds[i] += 1;
    }

    /// A pending operation completed and lets go of `r`; `written` says
    /// it wrote `r` (for every lane).
    pub fn release(&mut self, init: &mut [u32], r: u32, written: bool) {
        let i = r as usize;
        if written {
            self.held_init[i] = u32::MAX;
        }
        self.holds[i] -= 1;
        if self.holds[i] == 0 {
            init[i] = self.held_init[i];
        }
    }

    /// Pending operations in issue order, each with whether it has been
    /// committed.
    pub fn pending(&self) -> impl Iterator<Item = (&Mma, bool)> {
        self.groups
            .iter()
            .flatten()
            .map(|m| (m, true))
            .chain(self.open.iter().map(|m| (m, false)))
    }

    /// The last issued pending operation that holds `r`, and whether it
    /// has been committed.
    pub fn holder(&self, r: u32) -> Option<(&Mma, bool)> {
        self.pending().filter(|(m, _)| m.holds(r)).last()
    }
}

/// A block's shared bytes that pending asynchronous operations will read,
/// in 16-byte granules.
#[derive(Debug, Default)]
pub(crate) struct SharedReads {
    /// Per granule of the block's shared buffer, how many pending reads
    /// cover it (empty until the first).
    count: Vec<u16>,
    /// Pending reads: id, instruction index and granules.
    reads: Vec<(u64, u32, Box<[u32]>)>,
    next: u64,
}

impl SharedReads {
    /// Whether any read is pending.
    #[inline]
    pub fn active(&self) -> bool {
        !self.reads.is_empty()
    }

    /// Registers a read by the instruction at `pc` of the 16-byte chunks at
    /// shared-buffer offsets `chunks` (multiples of 16) of a buffer of
    /// `size` bytes; returns its id.
    pub fn add(&mut self, pc: u32, chunks: &[u32], size: usize) -> u64 {
        if self.count.is_empty() {
            self.count = vec![0; size.div_ceil(16)];
        }
        let granules: Box<[u32]> = chunks.iter().map(|c| c / 16).collect();
        for &g in granules.iter() {
            self.count[g as usize] += 1;
        }
        let id = self.next;
        self.next += 1;
        self.reads.push((id, pc, granules));
        id
    }

    /// The read `id` completed.
    pub fn remove(&mut self, id: u64) {
        if let Some(k) = self.reads.iter().position(|r| r.0 == id) {
            let (_, _, granules) = self.reads.swap_remove(k);
            for g in granules.iter() {
                self.count[*g as usize] -= 1;
            }
        }
    }

    /// The first pending read that covers bytes `off..off + len`: the
    /// bytes it shares with them and its instruction index.
    pub fn conflict(&self, off: usize, len: usize) -> Option<(usize, usize, u32)> {
        let g = (off / 16..(off + len).div_ceil(16)).find(|&g| self.count[g] != 0)?;
        let (_, pc, _) = self.reads.iter().find(|r| r.2.contains(&(g as u32)))?;
        Some((off.max(16 * g), (off + len).min(16 * g + 16), *pc))
    }

    /// A fresh block: nothing pending.
    pub fn clear(&mut self) {
        self.count.clear();
        self.reads.clear();
    }
}
