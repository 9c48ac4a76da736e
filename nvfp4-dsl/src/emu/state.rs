//! The state a launch runs on: launch-wide (`Env`), per warp (registers,
//! program counters, what its lanes wait for), per block (shared memory,
//! barriers, mbarriers, tensor memory, asynchronous operations in flight)
//! and per cluster (its barrier, the threads' vector clocks).

use super::decode::Entry;
use super::inst::Fault;
use super::layout::{POISON, SHARED_BASE};
use super::mbar::{Mbar, MbarWait, Misuse};
use super::pdl::BlockTrigger;
use super::pending::{AsyncOp, AsyncRegs, InflightShared};
use super::race::{Clocks, Shadow, join};
use super::tmem::Tmem;

/// `bar_of` value of a lane waiting at `bar.warp.sync`.
pub(crate) const WARP_SYNC: u8 = 0xFF;
/// `bar_of` value of a lane blocked in `mbarrier.try_wait`/`test_wait`.
pub(crate) const MBAR_WAIT: u8 = 0xFE;
/// `bar_of` value of a lane waiting in `barrier.cluster.wait`.
pub(crate) const CLUSTER_WAIT: u8 = 0xFD;
/// `bar_of` value of a lane waiting, under independent thread scheduling,
/// at a `.sync` warp collective (`shfl.sync`, `vote.sync`, ...) for the
/// other lanes of its member mask.
pub(crate) const COLLECTIVE_WAIT: u8 = 0xFC;
/// `bar_of` value of a lane blocked in `setmaxnreg.inc` until the block's
/// pool holds the registers it asks for.
pub(crate) const REG_WAIT: u8 = 0xFB;

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
    /// The lowest PC among runnable lanes outside the group (under
    /// independent thread scheduling: the PC at which the warp next picks
    /// a group, `u32::MAX` while it has one).
    pub parked_min: u32,
    /// Independent thread scheduling (`Options::independent_threads`):
    /// the state of the seeded choices of which group of lanes runs
    /// (SplitMix64); `None` for the lowest-PC rule.
    pub its: Option<u64>,
    /// Under independent thread scheduling, each lane's convergence set:
    /// lanes run together only if they have the same set and PC. A branch
    /// that splits a group splits its set; `bar.warp.sync`, `.sync` warp
    /// collectives and CTA barriers join sets (`converge`).
    pub cid: [u8; 32],
    pub exists: u32,
    pub exited: u32,
    /// Lanes waiting at a CTA barrier, `bar.warp.sync`, an mbarrier or in
    /// `setmaxnreg.inc`.
    pub waiting: u32,
    /// The registers each thread of the warp holds (`setmaxnreg` moves
    /// them), and what a blocked `setmaxnreg.inc` asks for.
    pub registers: u32,
    pub registers_wanted: u32,
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
    /// Lanes that have come out of a `barrier.cluster.wait`: every block
    /// of the cluster had started by then, so they may reach another
    /// block's shared memory.
    pub cl_waited: u32,
    /// Lanes that have executed `griddepcontrol.wait` (see `pdl`).
    pub pdl_waited: u32,
    /// Registers held by `wgmma.mma_async` and `tcgen05.ld`, from the
    /// warp's first such instruction on.
    pub held: Option<Box<AsyncRegs>>,
    /// Per lane, 1 + the index of a synchronisation the lane got past
    /// since its last `tcgen05.fence::after_thread_sync` (0: none).
    pub tc_synced: [u32; 32],
    /// Per lane, 1 + the index of a `tcgen05.alloc`, `dealloc`, `ld` or
    /// `st` since its last `tcgen05.fence::before_thread_sync` (0: none).
    pub tc_unfenced: [u32; 32],
    /// Per lane, 1 + the index of a `tcgen05.cp` or `mma` since its last
    /// `tcgen05.commit` or `tcgen05.fence::before_thread_sync` (0: none).
    pub tc_uncommitted: [u32; 32],
}

impl Warp {
    pub(super) fn new(entry: &Entry, index: u32) -> Warp {
        Warp {
            regs: vec![0; entry.nregs as usize * 32],
            init: vec![0; entry.nregs as usize],
            preds: vec![0; entry.npreds as usize],
            pinit: vec![0; entry.npreds as usize],
            pc: [0; 32],
            group: 0,
            group_pc: 0,
            parked_min: u32::MAX,
            its: None,
            cid: [0; 32],
            exists: 0,
            exited: 0,
            waiting: 0,
            registers: 0,
            registers_wanted: 0,
            bar_of: [0; 32],
            wsync_mask: [0; 32],
            mwait: [MbarWait::default(); 32],
            timeout: 0,
            tid: [[0; 32]; 3],
            index,
            cl_armed: 0,
            cl_phase: [0; 32],
            cl_waited: 0,
            pdl_waited: 0,
            held: None,
            tc_synced: [0; 32],
            tc_unfenced: [0; 32],
            tc_uncommitted: [0; 32],
        }
    }

    /// A fresh warp of a block of `ntid` threads, each holding `registers`
    /// registers; `its`: the seed of its choices under independent thread
    /// scheduling.
    pub(super) fn reset(&mut self, ntid: [u32; 3], registers: u32, its: Option<u64>) {
        self.init.fill(0);
        self.registers = registers;
        self.registers_wanted = 0;
        self.its = its;
        self.cid = [0; 32];
        self.pinit.fill(0);
        self.pc = [0; 32];
        self.exited = 0;
        self.waiting = 0;
        self.timeout = 0;
        self.exists = 0;
        self.cl_armed = 0;
        self.cl_waited = 0;
        self.pdl_waited = 0;
        self.held = None;
        self.tc_synced = [0; 32];
        self.tc_unfenced = [0; 32];
        self.tc_uncommitted = [0; 32];
        // The lanes' thread indices counted up from the first's (a warp
        // reset per block: divisions per lane showed in profiles).
        let first = self.index * 32;
        let n = (ntid[0] * ntid[1] * ntid[2]).saturating_sub(first).min(32);
        let (mut x, mut y, mut z) = (first % ntid[0], first / ntid[0] % ntid[1], first / (ntid[0] * ntid[1]));
        for l in 0..n as usize {
            self.exists |= 1 << l;
            (self.tid[0][l], self.tid[1][l], self.tid[2][l]) = (x, y, z);
            x += 1;
            if x == ntid[0] {
                x = 0;
                y += 1;
                if y == ntid[1] {
                    y = 0;
                    z += 1;
                }
            }
        }
        self.group = self.exists;
        self.group_pc = 0;
        self.parked_min = u32::MAX;
    }

    pub(super) fn runnable(&self) -> u32 {
        self.exists & !self.exited & !self.waiting
    }

    pub(super) fn done(&self) -> bool {
        self.exists & !self.exited == 0
    }

    /// Picks the lanes with the lowest PC among the runnable ones (under
    /// independent thread scheduling: a group the seed picks).
    pub(crate) fn reschedule(&mut self) {
        for l in lanes(self.group) {
            self.pc[l] = self.group_pc;
        }
        self.group = 0;
        if self.its.is_some() {
            self.pick_group();
            return;
        }
        // Over all 32 lanes without branches (a non-runnable lane counts as
        // PC u32::MAX): loops the compiler vectorises.
        let run = self.runnable();
        let pcs: [u32; 32] = std::array::from_fn(|l| if run >> l & 1 != 0 { self.pc[l] } else { u32::MAX });
        let min = pcs.iter().fold(u32::MAX, |m, &p| m.min(p));
        let mut second = u32::MAX;
        let mut group = 0;
        for (l, &p) in pcs.iter().enumerate() {
            group |= u32::from(p == min) << l;
            second = second.min(if p == min { u32::MAX } else { p });
        }
        self.group = group & run;
        self.group_pc = min;
        self.parked_min = second;
    }

    /// Independent thread scheduling: the runnable lanes fall into groups
    /// (one convergence set at one PC each); a random one runs. While the
    /// warp is diverged it picks again after a few instructions, so that
    /// its groups interleave at every granularity (and a lane spinning on
    /// another's store does not starve it).
    fn pick_group(&mut self) {
        let mut groups = [0u32; 32];
        let mut n = 0;
        let mut left = self.runnable();
        while left != 0 {
            let first = left.trailing_zeros() as usize;
            let (pc, cid) = (self.pc[first], self.cid[first]);
            let g = lanes(left)
                .filter(|&l| self.pc[l] == pc && self.cid[l] == cid)
                .fold(0u32, |m, l| m | 1 << l);
            groups[n] = g;
            n += 1;
            left &= !g;
        }
        self.parked_min = u32::MAX;
        if n == 0 {
            return;
        }
        let k = if n == 1 { 0 } else { self.its_below(n) };
        self.group = groups[k];
        self.group_pc = self.pc[self.group.trailing_zeros() as usize];
        if n > 1 {
            self.parked_min = self.group_pc + 1 + self.its_below(16) as u32;
        }
    }

    /// A random index in `0..n` from the warp's own stream.
    fn its_below(&mut self, n: usize) -> usize {
        let s = self.its.as_mut().expect("independent thread scheduling");
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        (((super::schedule::finalise(*s) >> 32) * n as u64) >> 32) as usize
    }

    /// Lanes `split` leave the convergence set of the rest of the group
    /// (a branch or a wait sent them elsewhere): under independent thread
    /// scheduling they meet again only where the program reconverges them.
    pub(crate) fn diverge(&mut self, split: u32) {
        if self.its.is_some() && split != 0 {
            let cid = self.fresh_cid();
            for l in lanes(split) {
                self.cid[l] = cid;
            }
        }
    }

    /// Lanes `mask` reconverge (one convergence set).
    pub(crate) fn converge(&mut self, mask: u32) {
        self.diverge(mask);
    }

    /// A convergence set no live lane is in.
    fn fresh_cid(&self) -> u8 {
        let used = lanes(self.exists & !self.exited).fold(0u64, |m, l| m | 1 << self.cid[l]);
        (!used).trailing_zeros() as u8
    }
}

/// A CTA barrier.
#[derive(Clone, Default, Debug)]
pub(crate) struct Bar {
    pub arrived: u32,
    /// The thread count of this round, 0 for "every thread of the block
    /// that has not exited" (meaningful while `arrived > 0`).
    pub count: u32,
    /// The instruction the round's first thread arrived at.
    pub pc: u32,
    /// The clocks of the threads that arrived in this round.
    pub clocks: Vec<u32>,
    /// What the threads released by the last completed round acquire.
    pub done: Vec<u32>,
}

/// Per-block state shared by its warps.
pub(crate) struct Block {
    pub shared: Vec<u8>,
    pub ctaid: [u32; 3],
    /// The block's rank in its cluster.
    pub rank: u32,
    /// The index (for the vector clocks) of the block's asynchronous
    /// unit, which completes its copies and `tcgen05` operations.
    pub agent: u32,
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
    /// Shared bytes that asynchronous operations in flight read or write.
    pub inflight: InflightShared,
    /// Asynchronous copies and `tcgen05` operations in flight, in issue
    /// order.
    pub ops: Vec<AsyncOp>,
    /// The race check's shadow of the shared memory.
    pub shadow: Shadow,
    /// The clocks of the threads that exited (what every later CTA
    /// barrier releases: exits count as arrivals).
    pub exited_clocks: Vec<u32>,
    /// Threads that exited whose clocks (which no longer change) are not
    /// yet in `exited_clocks`: joined when a barrier completes, not at
    /// every exit.
    pub exits: Vec<u32>,
    /// Numbers the async-groups of bulk copies to global memory.
    pub next_group: u64,
    /// When the block lets the launch's dependents start (see `pdl`).
    pub trigger: BlockTrigger,
    /// Registers in the block's pool: what warps gave up with
    /// `setmaxnreg.dec` and no `setmaxnreg.inc` took yet.
    pub register_pool: u32,
    /// A `setmaxnreg.dec` added to the pool: blocked increases must be
    /// looked at.
    pub registers_freed: bool,
    /// Numbers asynchronous operations.
    op_ids: u64,
}

impl Block {
    pub(super) fn new(env: &Env<'_>, rank: u32) -> Block {
        let threads = env.ntid[0] * env.ntid[1] * env.ntid[2];
        Block {
            shared: vec![POISON; (env.shared_end - SHARED_BASE) as usize],
            ctaid: [0; 3],
            rank,
            agent: env.cluster_size * threads + rank,
            exited: false,
            bars: std::array::from_fn(|_| Bar::default()),
            release: 0,
            threads,
            live: threads,
            clock: 0,
            mbars: Vec::new(),
            mbar_done: false,
            epoch: 0,
            timeout_epoch: None,
            tmem: None,
            inflight: InflightShared::default(),
            ops: Vec::new(),
            shadow: Shadow::default(),
            exited_clocks: Vec::new(),
            exits: Vec::new(),
            next_group: 0,
            trigger: BlockTrigger::default(),
            register_pool: 0,
            registers_freed: false,
            op_ids: 0,
        }
    }

    /// A fresh block `ctaid`: shared memory all [`POISON`] (a GPU's starts
    /// as whatever the last block left: a kernel that reads what it never
    /// wrote gets NaNs and all-ones integers, not zeros that may pass a
    /// check), no barrier, mbarrier or allocation.
    pub(super) fn reset(&mut self, ctaid: [u32; 3]) {
        self.ctaid = ctaid;
        self.exited = false;
        self.clock = 0;
        self.shared.fill(POISON);
        self.bars = std::array::from_fn(|_| Bar::default());
        self.release = 0;
        self.live = self.threads;
        self.mbars.clear();
        self.mbar_done = false;
        self.epoch = 0;
        self.timeout_epoch = None;
        if let Some(t) = &mut self.tmem {
            t.reset();
        }
        self.inflight.clear();
        self.ops.clear();
        self.shadow.reset(self.shared.len());
        self.exited_clocks.clear();
        self.exits.clear();
        self.next_group = 0;
        self.trigger = BlockTrigger::default();
        self.register_pool = 0;
        self.registers_freed = false;
    }

    /// The block index, for messages: `(x,y,z)`.
    pub fn id(&self) -> String {
        format!("({},{},{})", self.ctaid[0], self.ctaid[1], self.ctaid[2])
    }

    /// Completes every "all threads" barrier that all non-exited threads
    /// have reached (after threads exited).
    pub(super) fn recheck_barriers(&mut self, clocks: &Clocks) {
        for id in 0..self.bars.len() {
            let bar = &self.bars[id];
            if bar.arrived > 0 && bar.count == 0 && bar.arrived >= self.live {
                self.complete_barrier(id, clocks);
            }
        }
    }

    /// Barrier `id` completes: its waiting lanes will be released with
    /// the clocks of every thread that arrived or exited.
    pub fn complete_barrier(&mut self, id: usize, clocks: &Clocks) {
        for t in self.exits.drain(..) {
            join(&mut self.exited_clocks, clocks.row(t));
        }
        let bar = &mut self.bars[id];
        bar.arrived = 0;
        bar.done = std::mem::take(&mut bar.clocks);
        join(&mut bar.done, &self.exited_clocks);
        self.release |= 1 << id;
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
    /// completed phase, when `f` returns true); a misuse is explained
    /// with the kernel's statements (`env`).
    pub fn mbar_update(
        &mut self,
        env: &Env<'_>,
        addr: u32,
        f: impl FnOnce(&mut Mbar) -> Result<bool, Misuse>,
    ) -> Result<bool, Fault> {
        let b = self.mbar(addr)?;
        let done = f(b).map_err(|m| b.explain(env, m))?;
        self.epoch += 1;
        if done {
            self.mbar_done = true;
        }
        Ok(done)
    }

    /// Whether what a blocked waiter waits for has happened.
    pub(super) fn mbar_satisfied(&self, w: &MbarWait) -> bool {
        self.mbars
            .iter()
            .find(|b| b.addr == w.addr)
            .is_some_and(|b| b.done(w.want, w.parity))
    }

    /// Tensor memory, created on first use.
    pub fn tmem(&mut self) -> &mut Tmem {
        self.tmem.get_or_insert_with(|| Box::new(Tmem::new()))
    }

    /// The index in the cluster (for the vector clocks) of lane `l` of
    /// warp `w`.
    #[inline]
    pub fn thread_index(&self, w: u32, l: usize) -> u32 {
        self.rank * self.threads + w * 32 + l as u32
    }

    /// A fresh id for an asynchronous operation.
    pub fn next_op(&mut self) -> u64 {
        self.op_ids += 1;
        self.op_ids
    }

    /// Takes operation `k` out of the queue and frees what it held in
    /// flight (its shared bytes, its tensor-memory columns).
    pub fn take_op(&mut self, k: usize) -> AsyncOp {
        let op = self.ops.remove(k);
        for &id in &op.spans {
            self.inflight.remove(id);
        }
        if let Some(t) = self.tmem.as_deref_mut() {
            t.finish(op.id);
        }
        op
    }
}

/// The state of the running cluster: its barrier
/// (`barrier.cluster.arrive`/`wait`) and its threads' vector clocks.
#[derive(Debug, Default)]
pub(crate) struct Cluster {
    /// Completed phases.
    pub phase: u32,
    /// Threads that arrived in this phase and have not exited.
    pub arrived: u32,
    /// Threads of the cluster that have not exited.
    pub live: u32,
    /// Threads per block.
    pub block_threads: u32,
    /// A phase completed: its waiting lanes must be released.
    pub release: bool,
    /// The vector clocks of every thread of the cluster.
    pub clocks: Clocks,
    /// The clocks of the threads that arrived in this phase, and of those
    /// that exited (exits count as the arrivals of the phases to come).
    pub arrivals: Vec<u32>,
    pub exited: Vec<u32>,
    /// Threads that exited whose clocks are not yet in `exited` (as
    /// `Block::exits`).
    pub exits: Vec<u32>,
    /// What a thread past the barrier acquires: every completed phase's
    /// arrivals.
    pub done: Vec<u32>,
    /// Each `griddepcontrol.wait` so far: the thread and its own clock
    /// there (a thread whose clock holds that is ordered after the wait).
    pub pdl_waits: Vec<(u32, u32)>,
}

impl Cluster {
    /// A fresh cluster of `blocks` blocks of `threads` threads, with the
    /// vector clocks kept if `race_check`.
    pub(super) fn reset(&mut self, blocks: u32, threads: u32, race_check: bool) {
        self.phase = 0;
        self.arrived = 0;
        self.live = blocks * threads;
        self.block_threads = threads;
        self.release = false;
        // The threads, then one asynchronous unit per block.
        self.clocks
            .reset(if race_check { (self.live + blocks) as usize } else { 0 });
        self.arrivals.clear();
        self.exited.clear();
        self.exits.clear();
        self.done.clear();
        self.pdl_waits.clear();
    }

    /// Whether thread `t` is ordered after a `griddepcontrol.wait` of the
    /// cluster (its own, or another thread's it synchronised with since).
    pub fn after_pdl_wait(&self, t: u32) -> bool {
        let row = self.clocks.row(t);
        self.pdl_waits
            .iter()
            .any(|&(p, c)| row.get(p as usize).is_some_and(|&r| r >= c))
    }

    /// Completes the phase if every thread that has not exited arrived.
    pub fn complete_if_due(&mut self) {
        if self.arrived > 0 && self.arrived == self.live {
            self.arrived = 0;
            self.phase = self.phase.wrapping_add(1);
            self.release = true;
            for t in self.exits.drain(..) {
                join(&mut self.exited, self.clocks.row(t));
            }
            join(&mut self.done, &self.arrivals);
            join(&mut self.done, &self.exited);
            self.arrivals.clear();
        }
    }
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
    /// The registers each thread starts with (`setmaxnreg`'s accounting;
    /// `None`: not modelled, the kernel gives no bound).
    pub start_registers: Option<u32>,
}

/// Lanes of `w` waiting at `id` (a `bar_of` value).
fn waiting_at(w: &Warp, id: u8) -> u32 {
    lanes(w.waiting)
        .filter(|&l| w.bar_of[l] == id)
        .fold(0, |m, l| m | 1 << l)
}

/// Lanes of `w` blocked on an mbarrier.
pub(super) fn mbar_waiters(w: &Warp) -> u32 {
    waiting_at(w, MBAR_WAIT)
}

/// Lanes of `w` blocked in `setmaxnreg.inc`.
pub(super) fn register_waiters(w: &Warp) -> u32 {
    waiting_at(w, REG_WAIT)
}
