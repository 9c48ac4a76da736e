//! What an instruction executor sees (`Ctx`) and what an asynchronous
//! operation sees when it completes (`Side`). `Ctx` reads and writes
//! registers, predicates and special registers, moves lanes (branch, exit,
//! wait at a barrier), checks the ordering of `tcgen05` instructions and
//! issues asynchronous operations; its memory accesses are in `access`.

use super::diag::{op_name, statement_of, uncommitted};
use super::inst::{Ext, Fault, Operand, Sreg};
use super::layout::SHARED_BASE;
use super::memory::View;
use super::pending::{AsyncOp, Work};
use super::race::Clocks;
use super::schedule::Sched;
use super::state::{Block, COLLECTIVE_WAIT, Cluster, Env, Warp, lanes};

mod access;

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
    pub mem: &'a mut View,
    pub env: &'a Env<'a>,
    pub sched: &'a mut Sched,
    /// The lanes executing this instruction (group and guard).
    pub exec: u32,
    pub hint: usize,
    pub region_hint: usize,
    /// The values [`srcs`](Ctx::srcs) makes for source operands that are
    /// not registers (immediates, special registers, predicates).
    pub made: [[u64; 32]; 3],
}

/// Writes `f` of lane `l`'s value into `regs[l]` for the lanes of mask
/// `m`, without a branch per lane (the compiler makes a blend of masks a
/// branch that the lanes of a diverged warp mispredict).
#[inline(always)]
fn blend(regs: &mut [u64; 32], m: u32, v: &[u64; 32], f: impl Fn(u64) -> u64) {
    for (l, (r, x)) in regs.iter_mut().zip(v).enumerate() {
        *r = std::hint::select_unpredictable(m >> l & 1 != 0, f(*x), *r);
    }
}

/// The lanes of destination `d` for an executor that makes its values one
/// lane at a time (a load), to write in place: through a 32-lane value,
/// the vector loads of [`Ctx::write`] would wait for its per-lane stores.
/// Only where all 32 lanes execute (`exec`), no register is held and `d`
/// is a register zero-extended; marks it written and gives its mask.
#[inline(always)]
pub(crate) fn dest_lanes<'r>(w: &'r mut Warp, exec: u32, d: &Operand, ext: Ext) -> Option<(&'r mut [u64], u64)> {
    let Operand::Reg { idx, bits } = *d else {
        return None;
    };
    if exec != u32::MAX || w.held.is_some() || ext != Ext::Zero {
        return None;
    }
    let i = idx as usize;
    w.init[i] = u32::MAX;
    let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    Some((&mut w.regs[i * 32..i * 32 + 32], mask))
}

/// What an asynchronous operation sees when it completes: its block,
/// global memory and the vector clocks (it completes as its block's
/// asynchronous unit).
pub(crate) struct Side<'a> {
    pub env: &'a Env<'a>,
    pub b: &'a mut Block,
    /// The block of the cluster a copy into another block's shared memory
    /// writes (`None` for every other operation).
    pub peer: Option<&'a mut Block>,
    pub mem: &'a mut View,
    pub clocks: &'a mut Clocks,
}

/// A source operand's values for all lanes: a register's, read where it
/// lies (a copy of its 32 lanes cost more than most instructions), or
/// values made for the instruction (immediates, special registers,
/// predicates). The values are inline: boxing them would allocate for
/// every immediate read.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Src<'a> {
    Reg(&'a [u64; 32]),
    Val([u64; 32]),
}

impl std::ops::Deref for Src<'_> {
    type Target = [u64; 32];
    #[inline(always)]
    fn deref(&self) -> &[u64; 32] {
        match self {
            Src::Reg(r) => r,
            Src::Val(v) => v,
        }
    }
}

impl Ctx<'_> {
    /// The values of a source operand for all lanes (inactive lanes hold
    /// whatever the register holds), copied; [`src_ref`](Ctx::src_ref)
    /// reads a register in place.
    #[inline]
    pub fn src(&self, op: &Operand) -> Result<[u64; 32], Fault> {
        // Values made here go straight out, without a copy through `Src`.
        match *op {
            Operand::Imm(x) => Ok([x; 32]),
            Operand::Sreg(s) => Ok(self.sreg(s)),
            Operand::Reg { idx, .. } => self.reg(idx).copied(),
            _ => self.src_ref(op).map(|v| *v),
        }
    }

    /// Register `idx`'s values for all lanes, in place; fails if an
    /// executing lane never wrote it.
    #[inline(always)]
    pub fn reg(&self, idx: u32) -> Result<&[u64; 32], Fault> {
        let i = idx as usize;
        let init = self.w.init[i];
        if init & self.exec != self.exec {
            return Err(self.uninit(false, idx, init));
        }
        Ok(self.w.regs[i * 32..i * 32 + 32].try_into().expect("32 lanes"))
    }

    /// The values of a source operand for all lanes, a register's read in
    /// place.
    #[inline(always)]
    pub fn src_ref(&self, op: &Operand) -> Result<Src<'_>, Fault> {
        match *op {
            Operand::Reg { idx, .. } => self.reg(idx).map(Src::Reg),
            Operand::Imm(x) => Ok(Src::Val([x; 32])),
            Operand::Sreg(s) => Ok(Src::Val(self.sreg(s))),
            Operand::Pred { .. } => {
                let bits = self.pred(op)?;
                let mut v = [0u64; 32];
                for (l, x) in v.iter_mut().enumerate() {
                    *x = u64::from(bits >> l & 1);
                }
                Ok(Src::Val(v))
            }
            Operand::None | Operand::Sink => Err(Fault::new("internal error: missing source operand")),
        }
    }

    #[cold]
    fn uninit(&self, pred: bool, idx: u32, init: u32) -> Fault {
        let lane = (self.exec & !init).trailing_zeros() as usize;
        if !pred
            && let Some(held) = self.w.held.as_deref()
            && let Some(ld) = held.load_of(idx)
        {
            return Fault::lane(
                lane,
                format!(
                    "read of register {}, loaded by the tcgen05.ld at {}, before the tcgen05.wait::ld that completes it",
                    self.env.entry.reg_names[idx as usize],
                    statement_of(self.env, ld.pc)
                ),
            )
            .citing(ld.pc);
        }
        if !pred
            && let Some(wg) = self.w.held.as_deref()
            && let Some((m, committed)) = wg.holder(idx)
        {
            let name = &self.env.entry.reg_names[idx as usize];
            let line = statement_of(self.env, m.pc);
            let msg = if m.writes(idx) {
                format!(
                    "read of wgmma accumulator {name} before the wgmma.wait_group that completes the wgmma.mma_async at {line}{}",
                    uncommitted(committed)
                )
            } else {
                format!(
                    "read of register {name}, an A operand of the pending wgmma.mma_async at {line}, before the wgmma.wait_group that completes it{}",
                    uncommitted(committed)
                )
            };
            return Fault::lane(lane, msg).citing(m.pc);
        }
        let names = if pred {
            &self.env.entry.pred_names
        } else {
            &self.env.entry.reg_names
        };
        Fault::lane(lane, format!("read of uninitialised register {}", names[idx as usize]))
    }

    /// The values of source operands `ops` for all lanes, by reference:
    /// a register's where it lies, the others made in `made` (one slot per
    /// operand). Unlike [`src_ref`](Ctx::src_ref) no 32-lane value goes
    /// through an enum, which the compiler splits into scalars and spills.
    #[inline(always)]
    pub fn srcs<const N: usize>(&mut self, ops: [&Operand; N]) -> Result<[&[u64; 32]; N], Fault> {
        for (k, op) in ops.iter().enumerate() {
            match **op {
                Operand::Reg { idx, .. } => {
                    self.reg(idx)?;
                }
                // Filled in place: through `src`'s result, a copy.
                Operand::Imm(x) => self.made[k] = [x; 32],
                _ => self.made[k] = self.src(op)?,
            }
        }
        let (regs, made) = (&self.w.regs, &self.made);
        Ok(std::array::from_fn(|k| match *ops[k] {
            Operand::Reg { idx, .. } => {
                let i = idx as usize * 32;
                regs[i..i + 32].try_into().expect("32 lanes")
            }
            _ => &made[k],
        }))
    }

    /// A source operand's values by reference, as [`srcs`](Ctx::srcs)
    /// gives them, with global memory (where a store puts them).
    #[inline(always)]
    pub fn src_mem(&mut self, op: &Operand) -> Result<(&[u64; 32], &mut View), Fault> {
        self.srcs([op])?;
        let v = match *op {
            Operand::Reg { idx, .. } => {
                let i = idx as usize * 32;
                self.w.regs[i..i + 32].try_into().expect("32 lanes")
            }
            _ => &self.made[0],
        };
        Ok((v, &mut *self.mem))
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
                let v = self.src_ref(op)?;
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
    #[inline(always)]
    pub fn write(&mut self, d: &Operand, v: &[u64; 32], ext: Ext) -> Result<(), Fault> {
        let Operand::Reg { idx, bits } = *d else {
            self.write_pred_lanes(d, v);
            return Ok(());
        };
        if self.w.held.is_some() {
            self.note_held_write(idx)?;
        }
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let i = idx as usize;
        let regs: &mut [u64; 32] = (&mut self.w.regs[i * 32..i * 32 + 32]).try_into().expect("32 lanes");
        let m = self.exec;
        // One loop per extension and mask: no choice per lane. A partial
        // mask (a diverged warp) blends without branches: a loop over the
        // set bits is a chain of dependent steps.
        match (ext, m == u32::MAX) {
            (Ext::Zero, true) => {
                for (r, x) in regs.iter_mut().zip(v) {
                    *r = x & mask;
                }
            }
            (Ext::Zero, false) => blend(regs, m, v, |x| x & mask),
            (Ext::Sign(b), full) => {
                let sh = 64 - u32::from(b);
                let fix = |x: u64| ((((x << sh) as i64) >> sh) as u64) & mask;
                if full {
                    for (r, x) in regs.iter_mut().zip(v) {
                        *r = fix(*x);
                    }
                } else {
                    blend(regs, m, v, fix);
                }
            }
        }
        self.w.init[i] |= m;
        Ok(())
    }

    /// Copies register `from` into register `to`, declared `bits` wide,
    /// for the executing lanes (`mov` of a register): what
    /// [`reg`](Ctx::reg) and [`write`](Ctx::write) do, in place, with no
    /// 32-lane value between them (a copy is a call to `memmove`).
    #[inline(always)]
    pub fn copy_reg(&mut self, from: u32, to: u32, bits: u8) -> Result<(), Fault> {
        self.reg(from)?;
        if self.w.held.is_some() {
            self.note_held_write(to)?;
        }
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let (f, t, m) = (from as usize * 32, to as usize * 32, self.exec);
        let regs = &mut self.w.regs[..];
        // Both in range once, not per lane.
        let _ = (&regs[f..f + 32], &regs[t..t + 32]);
        if m == u32::MAX {
            for l in 0..32 {
                regs[t + l] = regs[f + l] & mask;
            }
        } else {
            for l in 0..32 {
                regs[t + l] = std::hint::select_unpredictable(m >> l & 1 != 0, regs[f + l] & mask, regs[t + l]);
            }
        }
        self.w.init[to as usize] |= m;
        Ok(())
    }

    /// A write of a predicate destination (a sink writes nothing) from
    /// lane values.
    #[inline(never)]
    fn write_pred_lanes(&mut self, d: &Operand, v: &[u64; 32]) {
        if let Operand::Pred { idx, .. } = *d {
            let mut bits = 0;
            for (l, x) in v.iter().enumerate() {
                bits |= u32::from(*x != 0) << l;
            }
            self.set_pred(idx, bits);
        }
    }

    /// Fails if a pending `wgmma.mma_async` or `tcgen05.ld` holds register
    /// `idx`; notes the write otherwise.
    #[inline(never)]
    fn note_held_write(&mut self, idx: u32) -> Result<(), Fault> {
        let pc = self.w.group_pc;
        if let Some(held) = self.w.held.as_deref_mut() {
            if held.is_held(idx) {
                return Err(self.held_write(idx));
            }
            held.note_write(idx, pc);
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
                "register {name}, loaded by the tcgen05.ld at {}, overwritten before the tcgen05.wait::ld that completes it",
                statement_of(self.env, ld.pc)
            ))
            .citing(ld.pc);
        }
        let (m, committed) = held.holder(idx).expect("a holder");
        let what = if m.writes(idx) {
            "the accumulator"
        } else {
            "an A operand"
        };
        Fault::new(format!(
            "register {name}, {what} of the pending wgmma.mma_async at {}, overwritten before the wgmma.wait_group that completes it{}",
            statement_of(self.env, m.pc),
            uncommitted(committed)
        ))
        .citing(m.pc)
    }

    /// Fails if the executing lanes exit while the warp has `wgmma.mma_async`
    /// operations that no `wgmma.wait_group` has completed.
    pub fn check_exit(&self) -> Result<(), Fault> {
        let Some((m, committed)) = self.w.held.as_deref().and_then(|wg| wg.pending().next()) else {
            return Ok(());
        };
        Err(Fault::new(format!(
            "the warp exits with the wgmma.mma_async at {} never waited for ({}; its registers would be written after the exit)",
            statement_of(self.env, m.pc),
            if committed {
                "committed, but no wgmma.wait_group completes it"
            } else {
                "never committed by a wgmma.commit_group, nor completed by a wgmma.wait_group"
            }
        ))
        .citing(m.pc))
    }

    /// The index in the cluster of lane `l` of the executing warp.
    #[inline]
    pub fn thread_index(&self, l: usize) -> u32 {
        self.b.thread_index(self.w.index, l)
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
        let me = self.b.rank;
        let mut side = Side {
            env: self.env,
            b: &mut *self.b,
            peer: match &op.work {
                Work::PeerCopy(copy) => copy.rank.map(|r| access::peer_in(&mut self.peers, me, r)),
                _ => None,
            },
            mem: &mut *self.mem,
            clocks: &mut self.cl.clocks,
        };
        super::ops::complete(&mut side, &op).map_err(|mut f| {
            if op.pc != self.w.group_pc {
                f.0.msg = format!(
                    "{} (completing the {} at line {})",
                    f.0.msg,
                    op_name(&self.env.entry.texts[op.pc as usize]),
                    self.env.entry.lines[op.pc as usize]
                );
            }
            if op.warp == self.w.index {
                f.on_lane(op.lane as usize)
            } else {
                f
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

    /// A special register's values for all lanes: the match once, not per
    /// lane.
    pub fn sreg(&self, s: Sreg) -> [u64; 32] {
        let cdim = self.env.cluster;
        let per_lane = |f: fn(u64) -> u64| std::array::from_fn(|l| f(l as u64));
        let x = match s {
            Sreg::Tid(d) => return self.w.tid[d as usize].map(u64::from),
            Sreg::LaneId => return per_lane(|l| l),
            Sreg::LaneMaskEq => return per_lane(|l| 1 << l),
            Sreg::LaneMaskLt => return per_lane(|l| (1 << l) - 1),
            Sreg::LaneMaskLe => return per_lane(|l| (2 << l) - 1),
            Sreg::LaneMaskGt => return per_lane(|l| 0xFFFF_FFFF & !((2 << l) - 1)),
            Sreg::LaneMaskGe => return per_lane(|l| 0xFFFF_FFFF & !((1 << l) - 1)),
            Sreg::Ntid(d) => u64::from(self.env.ntid[d as usize]),
            Sreg::Ctaid(d) => u64::from(self.b.ctaid[d as usize]),
            Sreg::Nctaid(d) => u64::from(self.env.nctaid[d as usize]),
            Sreg::WarpId => u64::from(self.w.index),
            Sreg::NwarpId => 64,
            Sreg::SmId | Sreg::GridId => 0,
            Sreg::NsmId => 132,
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
        [x; 32]
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
        w.diverge(w.group & !taken);
        // Without independent thread scheduling the lanes at the lower of
        // the two PCs run next, as `reschedule` would pick them, unless
        // parked lanes are there too (a merge): no pass over the warp, and
        // only the lanes parked now get their PC (a group's are stale).
        let (lo, at_lo, hi) = if target < next {
            (target, taken & w.group, next)
        } else {
            (next, w.group & !taken, target)
        };
        if w.its.is_none() && lo < w.parked_min && at_lo != 0 {
            for l in lanes(w.group & !at_lo) {
                w.pc[l] = hi;
            }
            w.group = at_lo;
            w.group_pc = lo;
            w.parked_min = w.parked_min.min(hi);
            return;
        }
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
        if self.cl.clocks.on() {
            for l in lanes(self.exec) {
                let t = self.thread_index(l);
                self.b.exits.push(t);
                self.cl.exits.push(t);
            }
        }
        if self.b.bars.iter().any(|b| b.arrived > 0) {
            self.b.recheck_barriers(&self.cl.clocks);
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
        // A `.sync` warp collective waits only for lanes that have not
        // exited: the lanes waiting at one run it again.
        if w.its.is_some() {
            let collective = lanes(w.waiting)
                .filter(|&l| w.bar_of[l] == COLLECTIVE_WAIT)
                .fold(0u32, |m, l| m | 1 << l);
            w.waiting &= !collective;
        }
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
        w.diverge(w.group & !mask);
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
}
