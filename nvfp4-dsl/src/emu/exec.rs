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
//! turns go to the warps of every block of a thread-block cluster, in
//! rotation or in the seeded order of the adversarial or priority schedule
//! (`schedule`), and between turns asynchronous operations complete;
//! clusters (blocks, in a launch without clusters) run one after another.
//!
//! Every synchronisation also moves the threads' vector clocks (`race`):
//! each generic shared access is checked against the earlier ones it is
//! not ordered after.

use super::decode::Entry;
use super::diag::{
    busy_message, completed_by, deadlock, describe_regions, err_at, hazard_message, mbar_deadlock, op_error, op_name,
    tmem_freed, uncommitted,
};
use super::error::EmuError;
use super::inst::{Ext, Fault, Flow, Inst, NO_GUARD, Operand, Sreg};
use super::layout::{CLUSTER_SHIFT, SHARED_BASE};
use super::memory::Memory;
use super::pending::{AsyncOp, Work};
use super::race::{Clocks, Kind, join};
use super::schedule::{Options, Sched};
use super::state::{Block, CLUSTER_WAIT, Cluster, Env, Warp, lanes, mbar_waiters};
use super::{Launch, LaunchStats, ParamValue};
/// Most threads in a block.
const MAX_THREADS: u64 = 1024;
/// Most shared memory per block (static plus dynamic), as on the H100.
pub(crate) const MAX_SHARED: u64 = 227 * 1024;
/// Most blocks in a cluster (the H100's non-portable limit).
const MAX_CLUSTER: u32 = 16;

/// The other blocks of the running cluster (those before and after the
/// executing one, in rank order).
pub(crate) struct Peers<'a> {
    pub before: &'a mut [Block],
    pub after: &'a mut [Block],
}

/// What an instruction executor sees.
pub(crate) struct Ctx<'a> {
    pub w: &'a mut Warp,
    pub b: &'a mut Block,
    pub peers: Peers<'a>,
    pub cl: &'a mut Cluster,
    pub mem: &'a mut Memory,
    pub env: &'a Env<'a>,
    pub sched: &'a mut Sched,
    /// The lanes executing this instruction (group and guard).
    pub exec: u32,
    pub hint: usize,
    pub region_hint: usize,
}

/// What an asynchronous operation sees when it completes: its block,
/// global memory and the vector clocks (it completes as its block's
/// asynchronous unit).
pub(crate) struct Side<'a> {
    pub b: &'a mut Block,
    pub mem: &'a mut Memory,
    pub clocks: &'a mut Clocks,
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
            && let Some(held) = self.w.held.as_deref()
            && let Some(ld) = held.load_of(idx)
        {
            return Fault::lane(
                lane,
                format!(
                    "read of register {}, loaded by the tcgen05.ld at line {}, before the tcgen05.wait::ld that completes it",
                    self.env.entry.reg_names[idx as usize], self.env.entry.lines[ld.pc as usize]
                ),
            );
        }
        if !pred
            && let Some(wg) = self.w.held.as_deref()
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
                if let Some(held) = self.w.held.as_deref_mut() {
                    if held.is_held(idx) {
                        return Err(self.held_write(idx));
                    }
                    held.note_write(idx, pc);
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
    /// `wgmma.mma_async` or `tcgen05.ld` holds.
    #[cold]
    fn held_write(&self, idx: u32) -> Fault {
        let held = self.w.held.as_deref().expect("held registers");
        let name = &self.env.entry.reg_names[idx as usize];
        if let Some(ld) = held.load_of(idx) {
            return Fault::new(format!(
                "register {name}, loaded by the tcgen05.ld at line {}, overwritten before the tcgen05.wait::ld that completes it",
                self.env.entry.lines[ld.pc as usize]
            ));
        }
        let (m, committed) = held.holder(idx).expect("a holder");
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
        let Some((m, committed)) = self.w.held.as_deref().and_then(|wg| wg.pending().next()) else {
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

    /// The index in the cluster of lane `l` of the executing warp.
    #[inline]
    pub fn thread_index(&self, l: usize) -> u32 {
        self.b.thread_index(self.w.index, l)
    }

    /// Checks a generic access of bytes `off..off + len` by `lane` of the
    /// shared memory of the executing block (`rank` None) or of block
    /// `rank` of the cluster: it may not touch bytes an asynchronous
    /// operation in flight writes (or, writing, reads), and unless it is
    /// `strong` (atomic, volatile, relaxed, acquire or release) it may not
    /// race with another thread's access.
    #[inline]
    fn check_shared(
        &mut self,
        lane: usize,
        rank: Option<u32>,
        off: usize,
        len: usize,
        write: bool,
        strong: bool,
    ) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let pc = self.w.group_pc;
        let me = self.b.rank;
        let b = match rank {
            None => &mut *self.b,
            Some(r) => peer_in(&mut self.peers, me, r),
        };
        if b.inflight.active()
            && let Some(busy) = b.inflight.conflict(off, len, write)
        {
            let whose = rank.map(|_| b.id());
            return Err(Fault::lane(lane, busy_message(self.env, &busy, pc, write, whose)));
        }
        if strong {
            return Ok(());
        }
        let kind = if write { Kind::Write } else { Kind::Read };
        match b.shadow.access(&self.cl.clocks, t, pc, off, len, kind) {
            Ok(()) => Ok(()),
            Err(h) => {
                let whose = rank.map(|_| b.id());
                Err(Fault::lane(lane, hazard_message(self.env, me, &h, pc, kind, whose)))
            }
        }
    }

    /// Reads `buf.len()` bytes at offset `off` of the shared buffer of the
    /// executing block (`rank` None) or of block `rank` of the cluster,
    /// for `lane`, after [`check_shared`](Ctx::check_shared).
    #[inline]
    pub fn shared_read(
        &mut self,
        lane: usize,
        rank: Option<u32>,
        off: usize,
        buf: &mut [u8],
        strong: bool,
    ) -> Result<(), Fault> {
        self.check_shared(lane, rank, off, buf.len(), false, strong)?;
        let me = self.b.rank;
        let b = match rank {
            None => &*self.b,
            Some(r) => &*peer_in(&mut self.peers, me, r),
        };
        buf.copy_from_slice(&b.shared[off..off + buf.len()]);
        Ok(())
    }

    /// Writes `data` for `lane` at offset `off` of the shared buffer of the
    /// executing block (`rank` None) or of block `rank` of the cluster,
    /// after [`check_shared`](Ctx::check_shared).
    #[inline]
    pub fn shared_write(
        &mut self,
        lane: usize,
        rank: Option<u32>,
        off: usize,
        data: &[u8],
        strong: bool,
    ) -> Result<(), Fault> {
        self.check_shared(lane, rank, off, data.len(), true, strong)?;
        let me = self.b.rank;
        let b = match rank {
            None => &mut *self.b,
            Some(r) => peer_in(&mut self.peers, me, r),
        };
        b.shared[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Checks an asynchronous operation's access, at its issue by `lane`,
    /// of the executing block's shared bytes at offsets `offs` (16 bytes
    /// each): no operation in flight may write them (or, for a write,
    /// read them), and the issuing thread must be ordered after every
    /// earlier access (and, reading, after a `fence.proxy.async` that
    /// follows every generic write of them).
    pub fn check_async(&mut self, lane: usize, offs: &[u32], write: bool) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let pc = self.w.group_pc;
        let kind = if write { Kind::AsyncWrite } else { Kind::AsyncRead };
        for &off in offs {
            let off = off as usize;
            if self.b.inflight.active()
                && let Some(busy) = self.b.inflight.conflict(off, 16, write)
            {
                return Err(Fault::lane(lane, busy_message(self.env, &busy, pc, write, None)));
            }
            if let Err(h) = self.b.shadow.access(&self.cl.clocks, t, pc, off, 16, kind) {
                return Err(Fault::lane(
                    lane,
                    hazard_message(self.env, self.b.rank, &h, pc, kind, None),
                ));
            }
        }
        Ok(())
    }

    /// Fails if `lane` releases (arrives at a barrier or on an mbarrier)
    /// after a `tcgen05` instruction that nothing orders before the
    /// release: `tcgen05.fence::before_thread_sync` (or, for `cp` and
    /// `mma`, a `tcgen05.commit`) must come between them.
    pub fn tc_release_check(&self, lane: usize) -> Result<(), Fault> {
        let (unfenced, uncommitted) = (self.w.tc_unfenced[lane], self.w.tc_uncommitted[lane]);
        let (pc, or_commit) = match (unfenced, uncommitted) {
            (0, 0) => return Ok(()),
            (0, u) => (u - 1, " (or a tcgen05.commit)"),
            (f, _) => (f - 1, ""),
        };
        let e = self.env.entry;
        Err(Fault::lane(
            lane,
            format!(
                "the tcgen05 instruction at line {} `{}` is not ordered before this synchronisation: tcgen05.fence::before_thread_sync{or_commit} is missing between them",
                e.lines[pc as usize], e.texts[pc as usize]
            ),
        ))
    }

    /// Fails if `lane` issues a `tcgen05` instruction after getting past a
    /// synchronisation (a barrier, an mbarrier wait) with no
    /// `tcgen05.fence::after_thread_sync` between them.
    pub fn tc_after_check(&self, lane: usize) -> Result<(), Fault> {
        let synced = self.w.tc_synced[lane];
        if synced == 0 {
            return Ok(());
        }
        let e = self.env.entry;
        let pc = (synced - 1) as usize;
        Err(Fault::lane(
            lane,
            format!(
                "this tcgen05 instruction follows the synchronisation at line {} `{}` with no tcgen05.fence::after_thread_sync between them: it may run before the synchronisation",
                e.lines[pc], e.texts[pc]
            ),
        ))
    }

    /// Queues asynchronous operation `id`, issued by `lane`, whose shared
    /// accesses in flight (`spans`) and tensor-memory columns are already
    /// registered. `releases`: it completes on an mbarrier, releasing the
    /// issuer's clock of now. The sequential schedule completes it at
    /// once; the adversarial one when its seed says or when it must.
    pub fn issue(&mut self, lane: usize, id: u64, spans: Vec<u64>, work: Work, releases: bool) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let op = AsyncOp {
            id,
            pc: self.w.group_pc,
            thread: self.thread_of(lane),
            warp: self.w.index,
            lane: lane as u32,
            clock: if releases {
                let clock = self.cl.clocks.snapshot(t);
                self.cl.clocks.tick(t);
                clock
            } else {
                Box::default()
            },
            due: if self.sched.adversarial() {
                self.sched.due()
            } else {
                None
            },
            spans,
            work,
        };
        self.b.ops.push(op);
        if !self.sched.adversarial() {
            self.complete_op(self.b.ops.len() - 1)?;
        }
        Ok(())
    }

    /// Completes operation `k` of the block's queue now: at its issue in
    /// the sequential schedule, or at a wait that needs it.
    pub fn complete_op(&mut self, k: usize) -> Result<(), Fault> {
        let op = self.b.take_op(k);
        let mut side = Side {
            b: &mut *self.b,
            mem: &mut *self.mem,
            clocks: &mut self.cl.clocks,
        };
        super::ops::complete(&mut side, &op).map_err(|m| {
            let msg = if op.pc == self.w.group_pc {
                m
            } else {
                format!(
                    "{m} (completing the {} at line {})",
                    op_name(&self.env.entry.texts[op.pc as usize]),
                    self.env.entry.lines[op.pc as usize]
                )
            };
            if op.warp == self.w.index {
                Fault::lane(op.lane as usize, msg)
            } else {
                Fault::new(msg)
            }
        })
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
                Sreg::Clock64 | Sreg::GlobalTimer => self.b.clock,
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
        // What the exiting threads did happens before whatever later
        // completes a barrier they no longer wait for.
        for l in lanes(self.exec) {
            let t = self.thread_index(l);
            join(&mut self.b.exited_clocks, self.cl.clocks.row(t));
            join(&mut self.cl.exited, self.cl.clocks.row(t));
        }
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

    /// Checks that `len` bytes of global memory at `addr`, which an
    /// asynchronous operation of `lane` will access later, are inside one
    /// live allocation (and writable, if `write`).
    pub fn global_check(&mut self, lane: usize, addr: u64, len: usize, write: bool, what: &str) -> Result<(), Fault> {
        let r = self.mem.locate(addr, len as u64, &mut self.hint).and_then(|i| {
            if write {
                self.mem.bytes_mut(i, addr, len).map(drop)
            } else {
                Ok(())
            }
        });
        r.map_err(|f| Fault::lane(lane, f.describe(what, addr, len)))
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
        peer_in(&mut self.peers, self.b.rank, rank)
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

/// Block `rank` of the cluster, seen from block `me` (another one).
fn peer_in<'p>(peers: &'p mut Peers<'_>, me: u32, rank: u32) -> &'p mut Block {
    if rank < me {
        &mut peers.before[rank as usize]
    } else {
        &mut peers.after[(rank - me - 1) as usize]
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
    options: &Options,
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
    let mut sched = Sched::new(options);
    let mut cl = Cluster::default();
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
                cl.reset(size, threads);
                sched.start_cluster(warps.iter().map(Vec::len).sum());
                let mut run = Run {
                    env: &env,
                    blocks: &mut blocks,
                    warps: &mut warps,
                    cl: &mut cl,
                    mem,
                    stats: &mut stats,
                    sched: &mut sched,
                    limit: options.max_warp_instructions,
                    hint: 0,
                };
                run.cluster()?;
                stats.blocks += u64::from(size);
            }
        }
    }
    stats.threads = stats.blocks * u64::from(threads);
    Ok(stats)
}

/// One cluster being run.
struct Run<'a, 'e> {
    env: &'a Env<'e>,
    blocks: &'a mut [Block],
    warps: &'a mut [Vec<Warp>],
    cl: &'a mut Cluster,
    mem: &'a mut Memory,
    stats: &'a mut LaunchStats,
    sched: &'a mut Sched,
    /// Most warp instructions of the launch.
    limit: Option<u64>,
    hint: usize,
}

impl Run<'_, '_> {
    /// Runs the blocks of the cluster (their warps in turns, asynchronous
    /// operations completing between turns) until every thread has
    /// exited.
    fn cluster(&mut self) -> Result<(), EmuError> {
        let mut turns: Vec<(usize, usize)> = Vec::new();
        loop {
            turns.clear();
            for (bi, ws) in self.warps.iter().enumerate() {
                if !self.blocks[bi].exited {
                    turns.extend(
                        ws.iter()
                            .enumerate()
                            .filter(|(_, w)| w.runnable() != 0)
                            .map(|(wi, _)| (bi, wi)),
                    );
                }
            }
            if turns.is_empty() {
                if self.blocks.iter().all(|b| b.exited) {
                    return Ok(());
                }
                self.stuck()?;
                continue;
            }
            if self.sched.adversarial() {
                let per_block = self.warps[0].len();
                let (bi, wi) = self.sched.pick(&turns, per_block);
                self.turn(bi, wi)?;
                self.sched.ran(bi, wi, per_block);
                self.complete_due()?;
            } else {
                for &(bi, wi) in &turns {
                    if !self.blocks[bi].exited && self.warps[bi][wi].runnable() != 0 {
                        self.turn(bi, wi)?;
                    }
                }
            }
            self.sched.turn += 1;
            if let Some(limit) = self.limit
                && self.stats.warp_instructions > limit
            {
                return Err(EmuError::new(format!(
                    "the launch ran more than {limit} warp instructions without finishing (Options::max_warp_instructions): a hang on a GPU?"
                ))
                .in_kernel(&self.env.entry.name));
            }
        }
    }

    /// Warp `wi` of block `bi` takes a turn; then whatever it completed is
    /// released, and the block ends if that was its last thread.
    fn turn(&mut self, bi: usize, wi: usize) -> Result<(), EmuError> {
        let slice = self.sched.slice();
        let (before, rest) = self.blocks.split_at_mut(bi);
        let (block, after) = rest.split_first_mut().expect("a block");
        let peers = Peers { before, after };
        let w = &mut self.warps[bi][wi];
        run_warp(
            self.env,
            block,
            peers,
            self.cl,
            w,
            self.mem,
            self.stats,
            &mut self.hint,
            self.sched,
            slice,
        )?;
        if block.release != 0 {
            release(block, &mut self.warps[bi], &mut self.cl.clocks);
        }
        if block.mbar_done {
            release_mbar(block, &mut self.warps[bi]);
        }
        if self.cl.release {
            release_cluster(self.cl, self.warps);
        }
        // A block ends when its last thread exits, before any other turn.
        if self.warps[bi].iter().all(Warp::done) {
            block_ends(self.env, block)?;
            block.exited = true;
        }
        Ok(())
    }

    /// Completes the asynchronous operations whose turn has come.
    fn complete_due(&mut self) -> Result<(), EmuError> {
        let now = self.sched.turn;
        for bi in 0..self.blocks.len() {
            let mut k = 0;
            let mut tc_waits = false;
            while k < self.blocks[bi].ops.len() {
                let op = &self.blocks[bi].ops[k];
                let in_order = op.in_order();
                if op.due.is_some_and(|d| d <= now) && !(in_order && tc_waits) {
                    self.complete(bi, k)?;
                } else {
                    tc_waits |= in_order;
                    k += 1;
                }
            }
        }
        Ok(())
    }

    /// Completes operation `k` of block `bi` and releases what that
    /// completed.
    fn complete(&mut self, bi: usize, k: usize) -> Result<(), EmuError> {
        let block = &mut self.blocks[bi];
        complete_op(self.env, block, self.mem, &mut self.cl.clocks, k)?;
        if block.mbar_done {
            release_mbar(block, &mut self.warps[bi]);
        }
        Ok(())
    }

    /// Nothing can run. An operation in flight completes (this is the
    /// latest point at which it may); with none left, lanes blocked in an
    /// mbarrier wait (which may have other work after a failed wait) see
    /// their waits fail once; if that changes no mbarrier, the cluster is
    /// stuck for good.
    fn stuck(&mut self) -> Result<(), EmuError> {
        let mut ready = Vec::new();
        for (bi, b) in self.blocks.iter().enumerate() {
            let first_tc = b.ops.iter().position(AsyncOp::in_order);
            ready.extend(
                (0..b.ops.len())
                    .filter(|&k| !b.ops[k].in_order() || Some(k) == first_tc)
                    .map(|k| (bi, k)),
            );
        }
        if !ready.is_empty() {
            let pick = if self.sched.adversarial() {
                self.sched.below(ready.len())
            } else {
                0
            };
            let (bi, k) = ready[pick];
            return self.complete(bi, k);
        }
        let mut timed_out = false;
        let mut stuck = None;
        for (bi, (block, ws)) in self.blocks.iter_mut().zip(self.warps.iter_mut()).enumerate() {
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
            return Ok(());
        }
        if let Some(bi) = stuck {
            return Err(mbar_deadlock(self.env, &self.blocks[bi], &self.warps[bi]));
        }
        Err(deadlock(self.env, self.blocks, self.warps, self.cl))
    }
}

/// Completes operation `k` of `block`, which leaves the queue.
fn complete_op(
    env: &Env<'_>,
    block: &mut Block,
    mem: &mut Memory,
    clocks: &mut Clocks,
    k: usize,
) -> Result<(), EmuError> {
    let op = block.take_op(k);
    let mut side = Side { b: block, mem, clocks };
    super::ops::complete(&mut side, &op).map_err(|m| op_error(env, block, &op, m))
}

/// Checks a block whose last thread exited: nothing may be in flight, no
/// tensor memory allocated.
fn block_ends(env: &Env<'_>, block: &Block) -> Result<(), EmuError> {
    if let Some(op) = block.ops.first() {
        let text = &env.entry.texts[op.pc as usize];
        return Err(op_error(
            env,
            block,
            op,
            format!(
                "the block exited with this {} still in flight (it would write memory the block no longer owns): no thread waited for it ({})",
                op_name(text),
                completed_by(text)
            ),
        ));
    }
    tmem_freed(env, block)
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

/// Lets every lane waiting at a completed barrier go on, with the clocks
/// of the threads that arrived.
fn release(block: &mut Block, warps: &mut [Warp], clocks: &mut Clocks) {
    let done = block.release;
    block.release = 0;
    for w in warps {
        for l in lanes(w.waiting) {
            let id = w.bar_of[l];
            if id < 16 && done >> id & 1 != 0 {
                w.waiting &= !(1 << l);
                clocks.acquire(block.thread_index(w.index, l), &block.bars[id as usize].done);
                w.tc_synced[l] = w.pc[l] + 1;
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
    let threads = cl.block_threads;
    for (rank, ws) in warps.iter_mut().enumerate() {
        for w in ws.iter_mut() {
            let done = lanes(w.waiting)
                .filter(|&l| w.bar_of[l] == CLUSTER_WAIT && w.cl_phase[l] != cl.phase)
                .fold(0u32, |m, l| m | 1 << l);
            if done == 0 {
                continue;
            }
            for l in lanes(done) {
                let t = rank as u32 * threads + w.index * 32 + l as u32;
                cl.clocks.acquire(t, &cl.done);
                w.tc_synced[l] = w.pc[l] + 1;
                w.pc[l] += 1;
            }
            w.waiting &= !done;
            w.cl_armed &= !done;
            w.reschedule();
        }
    }
}

/// Runs warp `w` for at most `slice` instructions (less if it blocks or
/// exits).
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
    sched: &mut Sched,
    slice: u32,
) -> Result<(), EmuError> {
    let insts: &[Inst] = &env.entry.insts;
    let mut ctx = Ctx {
        w,
        b: block,
        peers,
        cl,
        mem,
        env,
        sched,
        exec: 0,
        hint: *hint,
        region_hint: 0,
    };
    let mut budget = slice;
    // In the priority schedule a turn ends where it lets other warps run
    // (a barrier or mbarrier phase completes), so the highest-priority
    // warp that can run is the next to.
    let preemptive = ctx.sched.prioritised();
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
        if budget == 0 || (preemptive && (ctx.b.release != 0 || ctx.b.mbar_done || ctx.cl.release)) {
            break Ok(());
        }
    };
    ctx.b.clock += warp_insts;
    *hint = ctx.hint;
    stats.thread_instructions += thread_insts;
    stats.warp_instructions += warp_insts;
    result
}
