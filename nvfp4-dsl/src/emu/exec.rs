//! Running a launch: blocks one after another, warps of 32 lanes in
//! structure-of-arrays form, and a scheduler that reconverges divergent
//! lanes.
//!
//! Each lane has its own program counter. A warp runs the *group* of lanes
//! whose PC is the lowest among its runnable lanes (not exited, not
//! waiting at a barrier); lanes that branch elsewhere are parked until the
//! group reaches their PC and merges with them. A straight run of
//! instructions costs one comparison per instruction to know whether a
//! merge is due. Warps run in turns (until they block, exit or use up a
//! time slice) so that barriers and spinning on shared memory work: the
//! turns rotate over every warp of every block of a thread-block cluster;
//! clusters (blocks, in a launch without clusters) run one after another.

use super::decode::Entry;
use super::error::EmuError;
use super::inst::{Ext, Fault, Flow, Inst, NO_GUARD, Operand, Sreg};
use super::mbar::{Mbar, MbarWait};
use super::memory::Memory;
use super::pending::{SharedReads, WgState};
use super::tmem::Tmem;
use super::{Launch, LaunchStats, ParamValue};

/// The shared-window address of the first byte of shared memory (the first
/// KiB is reserved, as on sm_80 and later).
pub(crate) const SHARED_BASE: u32 = 0x400;
/// Generic addresses `[SHARED_WINDOW, SHARED_WINDOW + 2^32)` are shared
/// memory (`cvta.shared`, generic `ld`/`st`).
pub(crate) const SHARED_WINDOW: u64 = 0x7ff0_0000_0000;
/// Generic addresses `[PARAM_WINDOW, PARAM_WINDOW + 2^32)` are the running
/// kernel's parameter buffer (`cvta.param` of a parameter's address).
pub(crate) const PARAM_WINDOW: u64 = 0x7ffe_0000_0000;
/// Most threads in a block.
const MAX_THREADS: u64 = 1024;
/// Most shared memory per block (static plus dynamic), as on the H100.
pub(crate) const MAX_SHARED: u64 = 227 * 1024;
/// Instructions a warp runs before the next warp gets a turn.
const SLICE: u32 = 4096;
/// `bar_of` value of a lane waiting at `bar.warp.sync`.
pub(crate) const WARP_SYNC: u8 = 0xFF;
/// `bar_of` value of a lane blocked in `mbarrier.try_wait`/`test_wait`.
pub(crate) const MBAR_WAIT: u8 = 0xFE;
/// `bar_of` value of a lane waiting in `barrier.cluster.wait`.
pub(crate) const CLUSTER_WAIT: u8 = 0xFD;
/// Shared::cluster addresses hold the rank of the block they name, plus
/// one, from this bit up (0: the executing block); the bits below are the
/// shared::cta address in that block.
pub(crate) const CLUSTER_SHIFT: u32 = 24;
/// Most blocks in a cluster (the H100's non-portable limit).
const MAX_CLUSTER: u32 = 16;

/// Iterates over the set bits of a lane mask.
#[inline]
pub(crate) fn lanes(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

/// One warp's state: registers as `[register][lane]`.
pub(crate) struct Warp {
    pub regs: Vec<u64>,
    /// Lanes that have written each register.
    pub init: Vec<u32>,
    pub preds: Vec<u32>,
    pub pinit: Vec<u32>,
    pub pc: [u32; 32],
    /// The lanes running now, all at `group_pc` (their `pc` entries are
    /// stale while they are in the group).
    pub group: u32,
    pub group_pc: u32,
    /// The lowest PC among runnable lanes outside the group.
    pub parked_min: u32,
    pub exists: u32,
    pub exited: u32,
    /// Lanes waiting at a CTA barrier, `bar.warp.sync` or an mbarrier.
    pub waiting: u32,
    pub bar_of: [u8; 32],
    pub wsync_mask: [u32; 32],
    /// What each lane blocked on an mbarrier waits for.
    pub mwait: [MbarWait; 32],
    /// Lanes whose next unsuccessful `try_wait` returns false instead of
    /// blocking (the block could not make progress otherwise).
    pub timeout: u32,
    pub tid: [[u32; 32]; 3],
    pub index: u32,
    /// Lanes that have arrived at the cluster barrier and not yet waited.
    pub cl_armed: u32,
    /// The cluster-barrier phase each armed lane arrived in.
    pub cl_phase: [u32; 32],
    /// The warp's `wgmma` state, from its first `wgmma` instruction on.
    pub wg: Option<Box<WgState>>,
}

impl Warp {
    fn new(entry: &Entry, index: u32) -> Warp {
        Warp {
            regs: vec![0; entry.nregs as usize * 32],
            init: vec![0; entry.nregs as usize],
            preds: vec![0; entry.npreds as usize],
            pinit: vec![0; entry.npreds as usize],
            pc: [0; 32],
            group: 0,
            group_pc: 0,
            parked_min: u32::MAX,
            exists: 0,
            exited: 0,
            waiting: 0,
            bar_of: [0; 32],
            wsync_mask: [0; 32],
            mwait: [MbarWait::default(); 32],
            timeout: 0,
            tid: [[0; 32]; 3],
            index,
            cl_armed: 0,
            cl_phase: [0; 32],
            wg: None,
        }
    }

    fn reset(&mut self, ntid: [u32; 3]) {
        self.init.fill(0);
        self.pinit.fill(0);
        self.pc = [0; 32];
        self.exited = 0;
        self.waiting = 0;
        self.timeout = 0;
        self.exists = 0;
        self.cl_armed = 0;
        self.wg = None;
        let total = ntid[0] * ntid[1] * ntid[2];
        for l in 0..32 {
            let t = self.index * 32 + l;
            if t < total {
                self.exists |= 1 << l;
                self.tid[0][l as usize] = t % ntid[0];
                self.tid[1][l as usize] = (t / ntid[0]) % ntid[1];
                self.tid[2][l as usize] = t / (ntid[0] * ntid[1]);
            }
        }
        self.group = self.exists;
        self.group_pc = 0;
        self.parked_min = u32::MAX;
    }

    fn runnable(&self) -> u32 {
        self.exists & !self.exited & !self.waiting
    }

    fn done(&self) -> bool {
        self.exists & !self.exited == 0
    }

    /// Picks the lanes with the lowest PC among the runnable ones.
    pub(crate) fn reschedule(&mut self) {
        for l in lanes(self.group) {
            self.pc[l] = self.group_pc;
        }
        self.group = 0;
        let run = self.runnable();
        let mut min = u32::MAX;
        for l in lanes(run) {
            min = min.min(self.pc[l]);
        }
        let mut second = u32::MAX;
        let mut group = 0;
        for l in lanes(run) {
            if self.pc[l] == min {
                group |= 1 << l;
            } else {
                second = second.min(self.pc[l]);
            }
        }
        self.group = group;
        self.group_pc = min;
        self.parked_min = second;
    }
}

/// A CTA barrier.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Bar {
    pub arrived: u32,
    /// The thread count of this round, 0 for "every thread of the block
    /// that has not exited" (meaningful while `arrived > 0`).
    pub count: u32,
}

/// Per-block state shared by its warps.
pub(crate) struct Block {
    pub shared: Vec<u8>,
    pub ctaid: [u32; 3],
    /// The block's rank in its cluster.
    pub rank: u32,
    /// Every thread has exited (its shared memory no longer exists).
    pub exited: bool,
    pub bars: [Bar; 16],
    /// Barriers that completed and whose waiting lanes must be released.
    pub release: u32,
    pub threads: u32,
    /// Threads that have not exited.
    pub live: u32,
    pub clock: u64,
    /// The block's mbarriers.
    pub mbars: Vec<Mbar>,
    /// An mbarrier phase completed: blocked waiters must be looked at.
    pub mbar_done: bool,
    /// Counts mbarrier state changes (progress, for deadlock detection).
    pub epoch: u64,
    /// The epoch at which blocked waiters were last timed out.
    pub timeout_epoch: Option<u64>,
    /// Tensor memory, created by the first `tcgen05` instruction.
    pub tmem: Option<Box<Tmem>>,
    /// Shared bytes that pending `wgmma.mma_async` operations will read.
    pub reads: SharedReads,
}

impl Block {
    fn new(env: &Env<'_>, rank: u32) -> Block {
        let threads = env.ntid[0] * env.ntid[1] * env.ntid[2];
        Block {
            shared: vec![0; (env.shared_end - SHARED_BASE) as usize],
            ctaid: [0; 3],
            rank,
            exited: false,
            bars: [Bar::default(); 16],
            release: 0,
            threads,
            live: threads,
            clock: 0,
            mbars: Vec::new(),
            mbar_done: false,
            epoch: 0,
            timeout_epoch: None,
            tmem: None,
            reads: SharedReads::default(),
        }
    }

    /// A fresh block `ctaid`: zeroed shared memory, no barrier, mbarrier
    /// or allocation.
    fn reset(&mut self, ctaid: [u32; 3]) {
        self.ctaid = ctaid;
        self.exited = false;
        self.shared.fill(0);
        self.bars = [Bar::default(); 16];
        self.release = 0;
        self.live = self.threads;
        self.mbars.clear();
        self.mbar_done = false;
        self.epoch = 0;
        self.timeout_epoch = None;
        if let Some(t) = &mut self.tmem {
            t.reset();
        }
        self.reads.clear();
    }

    /// The block index, for messages: `(x,y,z)`.
    pub fn id(&self) -> String {
        format!("({},{},{})", self.ctaid[0], self.ctaid[1], self.ctaid[2])
    }

    /// Completes every "all threads" barrier that all non-exited threads
    /// have reached (after threads exited).
    fn recheck_barriers(&mut self) {
        for (id, bar) in self.bars.iter_mut().enumerate() {
            if bar.arrived > 0 && bar.count == 0 && bar.arrived >= self.live {
                bar.arrived = 0;
                self.release |= 1 << id;
            }
        }
    }

    /// The mbarrier at a shared-window address.
    pub fn mbar(&mut self, addr: u32) -> Result<&mut Mbar, String> {
        match self.mbars.iter().position(|b| b.addr == addr) {
            Some(k) => Ok(&mut self.mbars[k]),
            None => Err(format!(
                "no mbarrier at shared address {addr:#x}: it was never initialised (mbarrier.init) in this block"
            )),
        }
    }

    /// Applies `f` to the mbarrier at `addr` and notes the change (and a
    /// completed phase, when `f` returns true).
    pub fn mbar_update(
        &mut self,
        addr: u32,
        f: impl FnOnce(&mut Mbar) -> Result<bool, String>,
    ) -> Result<bool, String> {
        let done = f(self.mbar(addr)?)?;
        self.epoch += 1;
        if done {
            self.mbar_done = true;
        }
        Ok(done)
    }

    /// Whether what a blocked waiter waits for has happened.
    fn mbar_satisfied(&self, w: &MbarWait) -> bool {
        self.mbars
            .iter()
            .find(|b| b.addr == w.addr)
            .is_some_and(|b| b.done(w.want, w.parity))
    }

    /// Tensor memory, created on first use.
    pub fn tmem(&mut self) -> &mut Tmem {
        self.tmem.get_or_insert_with(|| Box::new(Tmem::new()))
    }
}

/// The cluster barrier (`barrier.cluster.arrive`/`wait`) of the running
/// cluster.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cluster {
    /// Completed phases.
    pub phase: u32,
    /// Threads that arrived in this phase and have not exited.
    pub arrived: u32,
    /// Threads of the cluster that have not exited.
    pub live: u32,
    /// A phase completed: its waiting lanes must be released.
    pub release: bool,
}

impl Cluster {
    /// Completes the phase if every thread that has not exited arrived.
    pub fn complete_if_due(&mut self) {
        if self.arrived > 0 && self.arrived == self.live {
            self.arrived = 0;
            self.phase = self.phase.wrapping_add(1);
            self.release = true;
        }
    }
}

/// The other blocks of the running cluster (those before and after the
/// executing one, in rank order).
pub(crate) struct Peers<'a> {
    pub before: &'a mut [Block],
    pub after: &'a mut [Block],
}

/// Launch-wide, read-only state.
pub(crate) struct Env<'a> {
    pub entry: &'a Entry,
    pub params: Vec<u8>,
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    /// Blocks per cluster and their product.
    pub cluster: [u32; 3],
    pub cluster_size: u32,
    /// `%is_explicit_cluster`.
    pub explicit_cluster: bool,
    /// Shared-memory regions `[start, end)` (static variables, then the
    /// dynamic block), in the shared window.
    pub regions: Vec<(u32, u32)>,
    pub shared_end: u32,
    pub dyn_bytes: u32,
}

/// What an instruction executor sees.
pub(crate) struct Ctx<'a> {
    pub w: &'a mut Warp,
    pub b: &'a mut Block,
    pub peers: Peers<'a>,
    pub cl: &'a mut Cluster,
    pub mem: &'a mut Memory,
    pub env: &'a Env<'a>,
    /// The lanes executing this instruction (group and guard).
    pub exec: u32,
    pub hint: usize,
    pub region_hint: usize,
}

impl Ctx<'_> {
    /// The values of a source operand for all lanes (inactive lanes hold
    /// whatever the register holds).
    #[inline]
    pub fn src(&self, op: &Operand) -> Result<[u64; 32], Fault> {
        match *op {
            Operand::Reg { idx, .. } => {
                let i = idx as usize;
                let init = self.w.init[i];
                if init & self.exec != self.exec {
                    return Err(self.uninit(false, idx, init));
                }
                let mut v = [0u64; 32];
                v.copy_from_slice(&self.w.regs[i * 32..i * 32 + 32]);
                Ok(v)
            }
            Operand::Imm(x) => Ok([x; 32]),
            Operand::Sreg(s) => Ok(self.sreg(s)),
            Operand::Pred { .. } => {
                let bits = self.pred(op)?;
                let mut v = [0u64; 32];
                for (l, x) in v.iter_mut().enumerate() {
                    *x = u64::from(bits >> l & 1);
                }
                Ok(v)
            }
            Operand::None | Operand::Sink => Err(Fault::new("internal error: missing source operand")),
        }
    }

    fn uninit(&self, pred: bool, idx: u32, init: u32) -> Fault {
        let lane = (self.exec & !init).trailing_zeros() as usize;
        if !pred
            && let Some(wg) = self.w.wg.as_deref()
            && let Some((m, committed)) = wg.holder(idx)
        {
            let name = &self.env.entry.reg_names[idx as usize];
            let line = self.env.entry.lines[m.pc as usize];
            let msg = if m.writes(idx) {
                format!(
                    "read of wgmma accumulator {name} before the wgmma.wait_group that completes the wgmma.mma_async at line {line}{}",
                    uncommitted(committed)
                )
            } else {
                format!(
                    "read of register {name}, an A operand of the pending wgmma.mma_async at line {line}, before the wgmma.wait_group that completes it{}",
                    uncommitted(committed)
                )
            };
            return Fault::lane(lane, msg);
        }
        let names = if pred {
            &self.env.entry.pred_names
        } else {
            &self.env.entry.reg_names
        };
        Fault::lane(lane, format!("read of uninitialised register {}", names[idx as usize]))
    }

    /// A predicate operand as a lane mask (negation applied).
    #[inline]
    pub fn pred(&self, op: &Operand) -> Result<u32, Fault> {
        match *op {
            Operand::Pred { idx, neg } => {
                let i = idx as usize;
                if self.w.pinit[i] & self.exec != self.exec {
                    return Err(self.uninit(true, idx, self.w.pinit[i]));
                }
                Ok(if neg { !self.w.preds[i] } else { self.w.preds[i] })
            }
            Operand::Imm(x) => Ok(if x != 0 { u32::MAX } else { 0 }),
            _ => {
                let v = self.src(op)?;
                let mut m = 0;
                for (l, x) in v.iter().enumerate() {
                    m |= u32::from(*x != 0) << l;
                }
                Ok(m)
            }
        }
    }

    /// Writes the executing lanes' values of a destination. Fails if a
    /// pending `wgmma.mma_async` holds the register.
    #[inline]
    pub fn write(&mut self, d: &Operand, v: &[u64; 32], ext: Ext) -> Result<(), Fault> {
        match *d {
            Operand::Reg { idx, bits } => {
                let pc = self.w.group_pc;
                if let Some(wg) = self.w.wg.as_deref_mut() {
                    if wg.is_held(idx) {
                        return Err(self.held_write(idx));
                    }
                    wg.note_write(idx, pc);
                }
                let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
                let i = idx as usize;
                let regs = &mut self.w.regs[i * 32..i * 32 + 32];
                let m = self.exec;
                let fix = |x: u64| match ext {
                    Ext::Zero => x & mask,
                    Ext::Sign(b) => {
                        let sh = 64 - u32::from(b);
                        ((((x << sh) as i64) >> sh) as u64) & mask
                    }
                };
                if m == u32::MAX {
                    for (r, x) in regs.iter_mut().zip(v) {
                        *r = fix(*x);
                    }
                } else {
                    for l in lanes(m) {
                        regs[l] = fix(v[l]);
                    }
                }
                self.w.init[i] |= m;
            }
            Operand::Pred { idx, .. } => {
                let mut bits = 0;
                for (l, x) in v.iter().enumerate() {
                    bits |= u32::from(*x != 0) << l;
                }
                self.set_pred(idx, bits);
            }
            _ => {}
        }
        Ok(())
    }

    /// The error for a write of a register that a pending
    /// `wgmma.mma_async` holds.
    #[cold]
    fn held_write(&self, idx: u32) -> Fault {
        let wg = self.w.wg.as_deref().expect("a wgmma state");
        let (m, committed) = wg.holder(idx).expect("a holder");
        let name = &self.env.entry.reg_names[idx as usize];
        let what = if m.writes(idx) {
            "the accumulator"
        } else {
            "an A operand"
        };
        Fault::new(format!(
            "register {name}, {what} of the pending wgmma.mma_async at line {}, overwritten before the wgmma.wait_group that completes it{}",
            self.env.entry.lines[m.pc as usize],
            uncommitted(committed)
        ))
    }

    /// Fails if the executing lanes exit while the warp has `wgmma.mma_async`
    /// operations that no `wgmma.wait_group` has completed.
    pub fn check_exit(&self) -> Result<(), Fault> {
        let Some((m, committed)) = self.w.wg.as_deref().and_then(|wg| wg.pending().next()) else {
            return Ok(());
        };
        Err(Fault::new(format!(
            "the warp exits with the wgmma.mma_async at line {} never waited for ({}; its registers would be written after the exit)",
            self.env.entry.lines[m.pc as usize],
            if committed {
                "committed, but no wgmma.wait_group completes it"
            } else {
                "never committed by a wgmma.commit_group, nor completed by a wgmma.wait_group"
            }
        )))
    }

    /// Writes `data` for `lane` at offset `off` of the shared buffer of the
    /// executing block (`rank` None) or of block `rank` of the cluster.
    /// Fails if a pending asynchronous operation reads any of those bytes.
    #[inline]
    pub fn shared_write(&mut self, lane: usize, rank: Option<u32>, off: usize, data: &[u8]) -> Result<(), Fault> {
        let (env, pc) = (self.env, self.w.group_pc);
        let b = match rank {
            None => &mut *self.b,
            Some(r) => self.peer(r),
        };
        if b.reads.active()
            && let Some((lo, hi, read_pc)) = b.reads.conflict(off, data.len())
        {
            let base = SHARED_BASE as usize;
            let whose = if rank.is_some() {
                format!(" of block {}", b.id())
            } else {
                String::new()
            };
            return Err(Fault::lane(
                lane,
                format!(
                    "shared memory {:#x}..{:#x}{whose} is read by the pending wgmma.mma_async at line {} and was overwritten at line {} before the wgmma.wait_group that completes it",
                    base + lo,
                    base + hi,
                    env.entry.lines[read_pc as usize],
                    env.entry.lines[pc as usize]
                ),
            ));
        }
        b.shared[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Writes a predicate for the executing lanes.
    #[inline]
    pub fn set_pred(&mut self, idx: u32, bits: u32) {
        let i = idx as usize;
        let m = self.exec;
        self.w.preds[i] = (self.w.preds[i] & !m) | (bits & m);
        self.w.pinit[i] |= m;
    }

    /// Writes a predicate destination operand (a sink writes nothing).
    #[inline]
    pub fn write_pred(&mut self, d: &Operand, bits: u32) {
        if let Operand::Pred { idx, .. } = *d {
            self.set_pred(idx, bits);
        }
    }

    pub fn sreg(&self, s: Sreg) -> [u64; 32] {
        let cdim = self.env.cluster;
        let mut v = [0u64; 32];
        for (l, x) in v.iter_mut().enumerate() {
            *x = match s {
                Sreg::Tid(d) => u64::from(self.w.tid[d as usize][l]),
                Sreg::Ntid(d) => u64::from(self.env.ntid[d as usize]),
                Sreg::Ctaid(d) => u64::from(self.b.ctaid[d as usize]),
                Sreg::Nctaid(d) => u64::from(self.env.nctaid[d as usize]),
                Sreg::LaneId => l as u64,
                Sreg::WarpId => u64::from(self.w.index),
                Sreg::NwarpId => 64,
                Sreg::SmId | Sreg::GridId => 0,
                Sreg::NsmId => 132,
                Sreg::LaneMaskEq => 1 << l,
                Sreg::LaneMaskLt => (1u64 << l) - 1,
                Sreg::LaneMaskLe => (2u64 << l) - 1,
                Sreg::LaneMaskGt => 0xFFFF_FFFF & !((2u64 << l) - 1),
                Sreg::LaneMaskGe => 0xFFFF_FFFF & !((1u64 << l) - 1),
                Sreg::Clock => self.b.clock & 0xFFFF_FFFF,
                Sreg::Clock64 => self.b.clock,
                Sreg::DynSmem => u64::from(self.env.dyn_bytes),
                Sreg::TotalSmem => u64::from(self.env.shared_end - SHARED_BASE),
                Sreg::ClusterCtaRank => u64::from(self.b.rank),
                Sreg::ClusterNctaRank => u64::from(self.env.cluster_size),
                Sreg::ClusterCtaid(d) => u64::from(self.b.ctaid[d as usize] % cdim[d as usize]),
                Sreg::ClusterNctaid(d) => u64::from(cdim[d as usize]),
                Sreg::ClusterId(d) => u64::from(self.b.ctaid[d as usize] / cdim[d as usize]),
                Sreg::NclusterId(d) => u64::from(self.env.nctaid[d as usize] / cdim[d as usize]),
                Sreg::IsExplicitCluster => u64::from(self.env.explicit_cluster),
            };
        }
        v
    }

    /// Moves `taken` lanes to `target` and the other group lanes to the
    /// next instruction.
    pub fn branch(&mut self, taken: u32, target: u32) {
        let w = &mut *self.w;
        if taken == w.group {
            w.group_pc = target;
            return;
        }
        let next = w.group_pc + 1;
        for l in lanes(w.group) {
            w.pc[l] = if taken >> l & 1 != 0 { target } else { next };
        }
        w.group = 0;
    }

    /// Ends the executing lanes; the other group lanes go on. CTA
    /// barriers wait only for threads that have not exited, so an exit may
    /// complete one.
    pub fn exit(&mut self) {
        self.b.live -= self.exec.count_ones();
        if self.b.bars.iter().any(|b| b.arrived > 0) {
            self.b.recheck_barriers();
        }
        // The cluster barrier likewise: an exit stands for the arrivals of
        // the phases to come.
        let phase = self.cl.phase;
        let armed = lanes(self.exec & self.w.cl_armed)
            .filter(|&l| self.w.cl_phase[l] == phase)
            .count() as u32;
        self.cl.live -= self.exec.count_ones();
        self.cl.arrived -= armed;
        self.cl.complete_if_due();
        let w = &mut *self.w;
        w.cl_armed &= !self.exec;
        w.exited |= self.exec;
        let next = w.group_pc + 1;
        for l in lanes(w.group & !self.exec) {
            w.pc[l] = next;
        }
        w.group = 0;
    }

    /// Parks the executing lanes at this instruction, waiting on barrier
    /// `id`; the other group lanes go on.
    pub fn wait(&mut self, id: u8) {
        self.park(self.exec, id);
    }

    /// Parks lanes `mask` of the group at this instruction, waiting on
    /// `id`; the other group lanes go on to the next instruction.
    pub fn park(&mut self, mask: u32, id: u8) {
        let w = &mut *self.w;
        let next = w.group_pc + 1;
        for l in lanes(w.group) {
            if mask >> l & 1 != 0 {
                w.pc[l] = w.group_pc;
                w.bar_of[l] = id;
            } else {
                w.pc[l] = next;
            }
        }
        w.waiting |= mask;
        w.group = 0;
    }

    /// Lanes that exist and have not exited.
    pub fn live(&self) -> u32 {
        self.w.exists & !self.w.exited
    }

    /// Thread index of a lane, for messages.
    pub fn thread_of(&self, lane: usize) -> (u32, u32, u32) {
        (self.w.tid[0][lane], self.w.tid[1][lane], self.w.tid[2][lane])
    }

    /// Reads `buf.len()` bytes of global memory for a lane.
    #[inline]
    pub fn global_read(&mut self, lane: usize, addr: u64, buf: &mut [u8], what: &str) -> Result<(), Fault> {
        let n = buf.len();
        match self.mem.locate(addr, n as u64, &mut self.hint) {
            Ok(i) => {
                buf.copy_from_slice(self.mem.bytes(i, addr, n));
                Ok(())
            }
            Err(f) => Err(Fault::lane(lane, f.describe(what, addr, n))),
        }
    }

    /// Writes bytes of global memory for a lane.
    #[inline]
    pub fn global_write(&mut self, lane: usize, addr: u64, data: &[u8], what: &str) -> Result<(), Fault> {
        let n = data.len();
        let r = self
            .mem
            .locate(addr, n as u64, &mut self.hint)
            .and_then(|i| self.mem.bytes_mut(i, addr, n));
        match r {
            Ok(dst) => {
                dst.copy_from_slice(data);
                Ok(())
            }
            Err(f) => Err(Fault::lane(lane, f.describe(what, addr, n))),
        }
    }

    /// Another block of the cluster, by rank.
    pub fn peer(&mut self, rank: u32) -> &mut Block {
        let me = self.b.rank;
        if rank < me {
            &mut self.peers.before[rank as usize]
        } else {
            &mut self.peers.after[(rank - me - 1) as usize]
        }
    }

    /// Whether `[addr, addr + len)` lies in the shared region that the
    /// last access found.
    #[inline]
    fn hint_fits(&self, addr: u64, len: u32) -> bool {
        self.env
            .regions
            .get(self.region_hint)
            .is_some_and(|&(s, e)| addr >= u64::from(s) && addr + u64::from(len) <= u64::from(e))
    }

    /// The offset in the executing block's shared buffer of `[addr, addr +
    /// len)` (a shared::cta address, or a shared::cluster address of this
    /// block), which must lie inside one shared variable (or the dynamic
    /// block).
    #[inline]
    pub fn shared_at(&mut self, lane: usize, addr: u64, len: u32, what: &str) -> Result<usize, Fault> {
        if self.hint_fits(addr, len) {
            return Ok((addr - u64::from(SHARED_BASE)) as usize);
        }
        match self.shared_find(lane, addr, len, what)? {
            (None, off) => Ok(off),
            (Some(r), _) => {
                let id = self.peer(r).id();
                Err(Fault::lane(
                    lane,
                    format!(
                        "{what} at shared::cluster address {addr:#x} is in block {id} of the cluster; the emulator reaches another block's shared memory only through ld, st, atom and red (.shared::cluster or generic)"
                    ),
                ))
            }
        }
    }

    /// Where `[addr, addr + len)` of the shared::cluster window lives:
    /// `(None, offset)` in the executing block, `(Some(rank), offset)` in
    /// the shared buffer of another block of the cluster.
    #[inline]
    pub fn cluster_shared_at(
        &mut self,
        lane: usize,
        addr: u64,
        len: u32,
        what: &str,
    ) -> Result<(Option<u32>, usize), Fault> {
        if self.hint_fits(addr, len) {
            return Ok((None, (addr - u64::from(SHARED_BASE)) as usize));
        }
        self.shared_find(lane, addr, len, what)
    }

    #[cold]
    fn shared_find(&mut self, lane: usize, addr: u64, len: u32, what: &str) -> Result<(Option<u32>, usize), Fault> {
        let tag = addr >> CLUSTER_SHIFT;
        let (rank, a) = if (1..=u64::from(self.env.cluster_size)).contains(&tag) {
            let r = tag as u32 - 1;
            let a = addr & ((1 << CLUSTER_SHIFT) - 1);
            if r == self.b.rank {
                (None, a)
            } else {
                let p = self.peer(r);
                if p.exited {
                    return Err(Fault::lane(
                        lane,
                        format!(
                            "{what} of {len} bytes at shared::cluster address {addr:#x}: block {} of the cluster has exited; its shared memory no longer exists",
                            p.id()
                        ),
                    ));
                }
                (Some(r), a)
            }
        } else {
            (None, addr)
        };
        let regions = &self.env.regions;
        let fits = |&(s, e): &(u32, u32)| a >= u64::from(s) && a + u64::from(len) <= u64::from(e);
        if let Some(k) = regions.iter().position(fits) {
            self.region_hint = k;
            return Ok((rank, (a - u64::from(SHARED_BASE)) as usize));
        }
        let names = &self.env.entry.shared_names;
        let near = regions
            .iter()
            .zip(names.iter())
            .find(|((s, e), _)| a >= u64::from(*s) && a < u64::from(*e))
            .map(|((s, e), n)| format!(" (it starts inside `{n}`, {:#x}..{e:#x})", s))
            .unwrap_or_default();
        let whose = match rank {
            Some(r) => format!(" (offset {a:#x} in block {} of the cluster)", self.peer(r).id()),
            None => String::new(),
        };
        Err(Fault::lane(
            lane,
            format!(
                "{what} of {len} bytes at shared address {addr:#x}{whose} is out of bounds{near}; shared variables: {}",
                describe_regions(&self.env.regions, &self.env.entry.shared_names)
            ),
        ))
    }
}

/// The note for a pending operation that is not committed yet.
fn uncommitted(committed: bool) -> &'static str {
    if committed {
        ""
    } else {
        " (no wgmma.commit_group has committed it yet)"
    }
}

fn describe_regions(regions: &[(u32, u32)], names: &[String]) -> String {
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

fn err_at(env: &Env<'_>, block: &Block, w: &Warp, pc: u32, lane: usize, msg: String) -> EmuError {
    let e = env.entry;
    let pc = (pc as usize).min(e.insts.len() - 1);
    EmuError {
        kernel: Some(e.name.clone()),
        block: Some((block.ctaid[0], block.ctaid[1], block.ctaid[2])),
        thread: Some((w.tid[0][lane], w.tid[1][lane], w.tid[2][lane])),
        line: Some(e.lines[pc]),
        text: Some(e.texts[pc].clone()),
        message: msg,
    }
}

/// Validates a launch and builds the parameter buffer.
fn prepare<'a>(entry: &'a Entry, launch: &Launch, params: &[ParamValue]) -> Result<Env<'a>, EmuError> {
    let fail = |m: String| Err(EmuError::new(m).in_kernel(&entry.name));
    let (g, b) = (launch.grid, launch.block);
    if g.0 == 0 || g.1 == 0 || g.2 == 0 || b.0 == 0 || b.1 == 0 || b.2 == 0 {
        return fail(format!(
            "grid {g:?} and block {b:?} must have every dimension at least 1"
        ));
    }
    let threads = u64::from(b.0) * u64::from(b.1) * u64::from(b.2);
    if threads > MAX_THREADS || b.2 > 64 {
        return fail(format!(
            "a block of {b:?} has {threads} threads; at most 1024 are allowed (and block.z at most 64)"
        ));
    }
    if g.1 > 65535 || g.2 > 65535 || g.0 > i32::MAX as u32 {
        return fail(format!("grid {g:?} exceeds the limits (2^31-1, 65535, 65535)"));
    }
    if let Some((x, y, z)) = entry.maxntid {
        let max = u64::from(x) * u64::from(y) * u64::from(z);
        if threads > max {
            return fail(format!(
                "a block of {threads} threads exceeds the kernel's .maxntid {x}, {y}, {z} ({max} threads)"
            ));
        }
    }
    if let Some(r) = entry.reqntid
        && r != b
    {
        return fail(format!("the block {b:?} differs from the kernel's .reqntid {r:?}"));
    }
    let c = launch.cluster;
    if c.0 == 0 || c.1 == 0 || c.2 == 0 {
        return fail(format!("cluster {c:?} must have every dimension at least 1"));
    }
    let cluster_size = u64::from(c.0) * u64::from(c.1) * u64::from(c.2);
    if cluster_size > u64::from(MAX_CLUSTER) {
        return fail(format!(
            "a cluster of {c:?} has {cluster_size} blocks; at most {MAX_CLUSTER} are allowed"
        ));
    }
    if g.0 % c.0 != 0 || g.1 % c.1 != 0 || g.2 % c.2 != 0 {
        return fail(format!(
            "the grid {g:?} is not a multiple of the cluster {c:?} in every dimension"
        ));
    }
    if let Some(r) = entry.reqnctapercluster
        && r != c
    {
        return fail(format!(
            "the cluster {c:?} differs from the kernel's .reqnctapercluster {r:?} (set Launch::cluster to it)"
        ));
    }
    if let Some(n) = entry.maxclusterrank
        && cluster_size > u64::from(n)
    {
        return fail(format!(
            "a cluster of {cluster_size} blocks exceeds the kernel's .maxclusterrank {n}"
        ));
    }
    let static_bytes = u64::from(entry.static_end - SHARED_BASE);
    let dyn_base = entry.dyn_base.map_or(u64::from(entry.static_end), u64::from);
    let total = dyn_base - u64::from(SHARED_BASE) + u64::from(launch.shared_bytes);
    if u64::from(launch.shared_bytes) > MAX_SHARED || total.max(static_bytes) > MAX_SHARED {
        return fail(format!(
            "{} bytes of dynamic shared memory (plus {static_bytes} static) exceed the 227 KiB (232448 bytes) per block",
            launch.shared_bytes
        ));
    }
    if params.len() != entry.params.len() {
        return fail(format!(
            "the kernel takes {} parameters ({}), {} were given",
            entry.params.len(),
            entry
                .params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            params.len()
        ));
    }
    let mut buf = vec![0u8; entry.param_bytes as usize];
    for (k, (p, v)) in entry.params.iter().zip(params).enumerate() {
        let bytes = v.bytes();
        if bytes.len() != p.bytes as usize {
            let shown = match v {
                ParamValue::Bytes(b) => format!("Bytes([..; {}])", b.len()),
                v => format!("{v:?}"),
            };
            return fail(format!(
                "parameter {k} `{}` is {} bytes, but a {}-byte value ({shown}) was given",
                p.name,
                p.bytes,
                bytes.len()
            ));
        }
        buf[p.offset as usize..(p.offset + p.bytes) as usize].copy_from_slice(&bytes);
    }
    let mut regions: Vec<(u32, u32)> = entry.regions.clone();
    let mut shared_end = entry.static_end;
    if let Some(base) = entry.dyn_base {
        regions.push((base, base + launch.shared_bytes));
        shared_end = base + launch.shared_bytes;
    }
    Ok(Env {
        entry,
        params: buf,
        ntid: [b.0, b.1, b.2],
        nctaid: [g.0, g.1, g.2],
        cluster: [c.0, c.1, c.2],
        cluster_size: cluster_size as u32,
        explicit_cluster: cluster_size > 1 || entry.explicitcluster || entry.reqnctapercluster.is_some(),
        regions,
        shared_end,
        dyn_bytes: launch.shared_bytes,
    })
}

/// Runs a whole launch.
pub(crate) fn launch(
    entry: &Entry,
    launch: &Launch,
    params: &[ParamValue],
    mem: &mut Memory,
) -> Result<LaunchStats, EmuError> {
    let env = prepare(entry, launch, params)?;
    let threads = env.ntid[0] * env.ntid[1] * env.ntid[2];
    let nwarps = threads.div_ceil(32);
    let size = env.cluster_size;
    let mut blocks: Vec<Block> = (0..size).map(|rank| Block::new(&env, rank)).collect();
    let mut warps: Vec<Vec<Warp>> = (0..size)
        .map(|_| (0..nwarps).map(|w| Warp::new(entry, w)).collect())
        .collect();
    let mut stats = LaunchStats::default();
    let [cx, cy, cz] = env.cluster;
    let (gx, gy, gz) = launch.grid;
    for z in (0..gz).step_by(cz as usize) {
        for y in (0..gy).step_by(cy as usize) {
            for x in (0..gx).step_by(cx as usize) {
                for (b, r) in blocks.iter_mut().zip(0u32..) {
                    b.reset([x + r % cx, y + r / cx % cy, z + r / (cx * cy)]);
                }
                for w in warps.iter_mut().flatten() {
                    w.reset(env.ntid);
                }
                let mut cl = Cluster {
                    live: threads * size,
                    ..Cluster::default()
                };
                run_cluster(&env, &mut blocks, &mut warps, &mut cl, mem, &mut stats)?;
                stats.blocks += u64::from(size);
            }
        }
    }
    stats.threads = stats.blocks * u64::from(threads);
    Ok(stats)
}

/// Runs the blocks of one cluster (their warps in turns) until every
/// thread has exited.
fn run_cluster(
    env: &Env<'_>,
    blocks: &mut [Block],
    warps: &mut [Vec<Warp>],
    cl: &mut Cluster,
    mem: &mut Memory,
    stats: &mut LaunchStats,
) -> Result<(), EmuError> {
    let mut hint = 0usize;
    loop {
        let mut ran = false;
        let mut done = true;
        for bi in 0..blocks.len() {
            if blocks[bi].exited {
                continue;
            }
            let (before, rest) = blocks.split_at_mut(bi);
            let (block, after) = rest.split_first_mut().expect("a block");
            for wi in 0..warps[bi].len() {
                let w = &mut warps[bi][wi];
                if w.runnable() == 0 {
                    continue;
                }
                ran = true;
                let peers = Peers {
                    before: &mut *before,
                    after: &mut *after,
                };
                run_warp(env, block, peers, cl, w, mem, stats, &mut hint)?;
                if block.release != 0 {
                    release(block, &mut warps[bi]);
                }
                if block.mbar_done {
                    release_mbar(block, &mut warps[bi]);
                }
                if cl.release {
                    release_cluster(cl, warps);
                }
            }
            // A block ends when its last thread exits, before the other
            // blocks' next turn.
            if warps[bi].iter().all(Warp::done) {
                tmem_freed(env, block)?;
                block.exited = true;
            } else {
                done = false;
            }
        }
        if done {
            return Ok(());
        }
        if !ran {
            // Nothing can run. Lanes blocked in an mbarrier wait may have
            // other work after a failed wait: let their waits fail once;
            // if that changes no mbarrier, their block is stuck for good.
            let mut timed_out = false;
            let mut stuck = None;
            for (bi, (block, ws)) in blocks.iter_mut().zip(warps.iter_mut()).enumerate() {
                if !ws.iter().any(|w| mbar_waiters(w) != 0) {
                    continue;
                }
                if block.timeout_epoch == Some(block.epoch) {
                    stuck.get_or_insert(bi);
                    continue;
                }
                block.timeout_epoch = Some(block.epoch);
                for w in ws.iter_mut() {
                    let m = mbar_waiters(w);
                    if m != 0 {
                        w.waiting &= !m;
                        w.timeout |= m;
                        w.reschedule();
                    }
                }
                timed_out = true;
            }
            if timed_out {
                continue;
            }
            if let Some(bi) = stuck {
                return Err(mbar_deadlock(env, &blocks[bi], &warps[bi]));
            }
            return Err(deadlock(env, blocks, warps, cl));
        }
    }
}

/// Lanes of `w` blocked on an mbarrier.
fn mbar_waiters(w: &Warp) -> u32 {
    lanes(w.waiting)
        .filter(|&l| w.bar_of[l] == MBAR_WAIT)
        .fold(0, |m, l| m | 1 << l)
}

/// Lets lanes blocked on an mbarrier whose phase has completed retry
/// their wait.
fn release_mbar(block: &mut Block, warps: &mut [Warp]) {
    block.mbar_done = false;
    for w in warps {
        let mut changed = false;
        for l in lanes(mbar_waiters(w)) {
            if block.mbar_satisfied(&w.mwait[l]) {
                w.waiting &= !(1 << l);
                changed = true;
            }
        }
        if changed {
            w.reschedule();
        }
    }
}

/// Reports a block that ends with tensor memory allocated.
fn tmem_freed(env: &Env<'_>, block: &Block) -> Result<(), EmuError> {
    let Some(a) = block.tmem.as_ref().and_then(|t| t.allocs.first().copied()) else {
        return Ok(());
    };
    let e = env.entry;
    let pc = (a.pc as usize).min(e.insts.len() - 1);
    Err(EmuError {
        kernel: Some(e.name.clone()),
        block: Some((block.ctaid[0], block.ctaid[1], block.ctaid[2])),
        thread: Some(a.thread),
        line: Some(e.lines[pc]),
        text: Some(e.texts[pc].clone()),
        message: format!(
            "tensor memory not freed: the block exited with columns {}..{} still allocated (allocated here; every tcgen05.alloc needs a tcgen05.dealloc before exit)",
            a.col,
            a.col + a.ncols
        ),
    })
}

/// Explains an mbarrier wait that no thread of the block can complete.
fn mbar_deadlock(env: &Env<'_>, block: &Block, warps: &[Warp]) -> EmuError {
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
            "mbarrier wait can never complete: this thread waits for {what} of the {state}; no thread of the block can make progress ({spinning} threads wait on mbarriers, {at_bar} at barriers, {exited} exited) and no copy is pending"
        ),
    )
}

/// Lets every lane waiting at a completed barrier go on.
fn release(block: &mut Block, warps: &mut [Warp]) {
    let done = block.release;
    block.release = 0;
    for w in warps {
        for l in lanes(w.waiting) {
            let id = w.bar_of[l];
            if id < 16 && done >> id & 1 != 0 {
                w.waiting &= !(1 << l);
                w.pc[l] += 1;
            }
        }
        w.reschedule();
    }
}

/// Lets the lanes waiting in `barrier.cluster.wait` for a phase that has
/// completed go on.
fn release_cluster(cl: &mut Cluster, warps: &mut [Vec<Warp>]) {
    cl.release = false;
    for w in warps.iter_mut().flatten() {
        let done = lanes(w.waiting)
            .filter(|&l| w.bar_of[l] == CLUSTER_WAIT && w.cl_phase[l] != cl.phase)
            .fold(0u32, |m, l| m | 1 << l);
        if done != 0 {
            for l in lanes(done) {
                w.pc[l] += 1;
            }
            w.waiting &= !done;
            w.cl_armed &= !done;
            w.reschedule();
        }
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
        MBAR_WAIT => "an mbarrier".to_string(),
        CLUSTER_WAIT => "barrier.cluster.wait".to_string(),
        b => format!("barrier {b}"),
    };
    format!("{what} (line {})", env.entry.lines[w.pc[l] as usize])
}

/// Explains why no thread of the cluster can run: the first waiting
/// thread, in rank and warp order, names what it waits for.
fn deadlock(env: &Env<'_>, blocks: &[Block], warps: &[Vec<Warp>], cl: &Cluster) -> EmuError {
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
            "barrier.cluster.wait can never complete: {} of the {} threads of the cluster that have not exited arrived in phase {}; {}",
            cl.arrived,
            cl.live,
            cl.phase,
            missing.unwrap_or_else(|| "the missing threads can never arrive".into())
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
    if id == WARP_SYNC {
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
            format!("bar.warp.sync with member mask {mask:#010x} can never complete: {why}"),
        );
    }
    let bar = block.bars[id as usize];
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
            "barrier {id} can never complete: {} of {expected} threads arrived; {why}",
            bar.arrived
        ),
    )
}

#[allow(clippy::too_many_arguments)]
fn run_warp(
    env: &Env<'_>,
    block: &mut Block,
    peers: Peers<'_>,
    cl: &mut Cluster,
    w: &mut Warp,
    mem: &mut Memory,
    stats: &mut LaunchStats,
    hint: &mut usize,
) -> Result<(), EmuError> {
    let insts: &[Inst] = &env.entry.insts;
    let mut ctx = Ctx {
        w,
        b: block,
        peers,
        cl,
        mem,
        env,
        exec: 0,
        hint: *hint,
        region_hint: 0,
    };
    let mut budget = SLICE;
    let mut thread_insts = 0u64;
    let mut warp_insts = 0u64;
    let result = loop {
        if ctx.w.group == 0 {
            ctx.w.reschedule();
            if ctx.w.group == 0 {
                break Ok(());
            }
        }
        let pc = ctx.w.group_pc;
        let inst = &insts[pc as usize];
        let group = ctx.w.group;
        thread_insts += u64::from(group.count_ones());
        warp_insts += 1;
        let exec = if inst.guard == NO_GUARD {
            group
        } else {
            let g = inst.guard as usize;
            if ctx.w.pinit[g] & group != group {
                let lane = (group & !ctx.w.pinit[g]).trailing_zeros() as usize;
                let msg = format!("read of uninitialised register {}", env.entry.pred_names[g]);
                break Err(err_at(env, ctx.b, ctx.w, pc, lane, msg));
            }
            let p = ctx.w.preds[g];
            group & if inst.guard_neg { !p } else { p }
        };
        let flow = if exec == 0 {
            Ok(Flow::Next)
        } else {
            ctx.exec = exec;
            (inst.exec)(&mut ctx, inst)
        };
        match flow {
            Ok(Flow::Next) => {
                let w = &mut *ctx.w;
                w.group_pc += 1;
                if w.group_pc >= w.parked_min {
                    w.reschedule();
                }
            }
            Ok(Flow::Jump) => {
                let w = &mut *ctx.w;
                if w.group == 0 || w.group_pc >= w.parked_min {
                    w.reschedule();
                }
            }
            Ok(Flow::Yield) => {
                ctx.w.reschedule();
                break Ok(());
            }
            Err(f) => {
                let lane = f.lane.map_or(exec.trailing_zeros() as usize, |l| l as usize);
                break Err(err_at(env, ctx.b, ctx.w, pc, lane, f.msg));
            }
        }
        budget -= 1;
        if budget == 0 {
            break Ok(());
        }
    };
    ctx.b.clock += warp_insts;
    *hint = ctx.hint;
    stats.thread_instructions += thread_insts;
    stats.warp_instructions += warp_insts;
    result
}
