//! Running a launch: clusters (blocks) on as many threads as asked, each
//! thread taking the next in grid order; warps of 32 lanes in
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
//! each cluster (block, in a launch without clusters) runs on one thread,
//! under a schedule of its own drawn from the seed and its index.
//!
//! In the checked mode every synchronisation also moves the threads'
//! vector clocks (`race`): each generic shared access is checked against
//! the earlier ones it is not ordered after. The fast mode keeps no
//! clocks.
//!
//! A launch is checked and its `Env` built in `prepare`; the state it runs
//! on is in `state`, what an executor sees in `ctx`, the error texts in
//! `diag`.

use super::ctx::{Ctx, Peers, Side};
use super::deadlock::{deadlock, mbar_deadlock};
use super::decode::Entry;
use super::diag::{cite, completed_by, err_at, op_error, op_name, tmem_freed};
use super::error::EmuError;
use super::gorder::GlobalOrder;
use super::inst::{Flow, Inst, NO_GUARD};
use super::launch::{Launch, LaunchStats, ParamValue};
use super::memory::{Memory, View};
use super::pdl::{Footprint, Overlap, Touched};
use super::pending::{AsyncOp, Work};
use super::prepare::prepare;
use super::race::Clocks;
use super::schedule::{Options, Sched, cluster_order};
use super::state::{Block, CLUSTER_WAIT, Cluster, Env, Warp, lanes, mbar_waiters};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Runs a whole launch: its clusters (blocks, without clusters) on
/// `options.threads` threads, each taking the next cluster in grid order
/// until none is left, or one after another, in the order
/// [`cluster_order`] draws, where the kernel's blocks may communicate
/// through global memory (`Entry::inter_block`).
pub(crate) fn launch(
    entry: &Entry,
    launch: &Launch,
    params: &[ParamValue],
    mem: &mut Memory,
    options: &Options,
) -> Result<LaunchStats, EmuError> {
    let env = prepare(entry, launch, params)?;
    let [cx, cy, cz] = env.cluster;
    let (gx, gy, gz) = launch.grid;
    let mut origins = Vec::new();
    for z in (0..gz).step_by(cz as usize) {
        for y in (0..gy).step_by(cy as usize) {
            for x in (0..gx).step_by(cx as usize) {
                origins.push([x, y, z]);
            }
        }
    }
    let threads = if entry.inter_block {
        let order = cluster_order(options, origins.len());
        origins = order.into_iter().map(|i| origins[i]).collect();
        1
    } else {
        options.threads.unwrap_or_else(cores).clamp(1, origins.len().max(1))
    };
    let queue = Queue {
        origins,
        next: AtomicUsize::new(0),
        failed: AtomicUsize::new(usize::MAX),
    };
    let mut view = mem.view();
    view.pdl.on = options.race_check;
    view.order = GlobalOrder::new(entry.inter_block && options.race_check);
    view.order
        .set_predecessor(mem.predecessor.as_ref().and_then(|p| p.order.clone()));
    let mut done: Vec<Done> = if threads == 1 {
        vec![Worker::new(&env, view).run(&queue, options)]
    } else {
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let worker = Worker::new(&env, view.clone());
                    let queue = &queue;
                    s.spawn(move || worker.run(queue, options))
                })
                .collect();
            workers
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut stats = LaunchStats::default();
    let mut first: Option<(usize, EmuError)> = None;
    let mut footprint = Footprint::new(&entry.name);
    let mut early = true;
    let mut waited = false;
    let mut order = None;
    for d in done.iter_mut() {
        if threads == 1 {
            order = std::mem::take(&mut d.order).finish().map(Arc::new);
        }
        early &= d.early;
        waited |= d.waited;
        for (i, t) in d.touched.iter().enumerate() {
            footprint.add(mem.base_of(i), t);
        }
    }
    // A dependent whose blocks all let its own dependents start before
    // its predecessor was complete passes the predecessor on; one none of
    // whose threads waited may be complete before its predecessor is, so
    // the launches after it may overlap that one even after their waits.
    let mut unfinished = None;
    if let Some(before) = mem.predecessor.take() {
        unfinished = before.unfinished;
        if early {
            footprint.union(&before.before_wait);
        }
        if !waited {
            unfinished
                .get_or_insert_with(Footprint::default)
                .union(&before.before_wait);
        }
    }
    mem.footprint = Some(Overlap {
        before_wait: footprint,
        unfinished,
        order,
    });
    for d in done {
        stats.thread_instructions += d.stats.thread_instructions;
        stats.warp_instructions += d.stats.warp_instructions;
        stats.blocks += d.stats.blocks;
        if let Some((c, e)) = d.error
            && first.as_ref().is_none_or(|(f, _)| c < *f)
        {
            first = Some((c, e));
        }
    }
    if let Some((_, e)) = first {
        return Err(e);
    }
    stats.threads = stats.blocks * u64::from(env.ntid[0] * env.ntid[1] * env.ntid[2]);
    Ok(stats)
}

/// The cores the process may use (asked once: the answer reads files).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// The clusters of a launch, handed out in order (grid order, but for
/// [`cluster_order`]).
struct Queue {
    /// Each cluster's first block, in the order they run.
    origins: Vec<[u32; 3]>,
    /// The next cluster to run.
    next: AtomicUsize,
    /// The first cluster (in that order) that failed so far: the clusters
    /// after it need not run.
    failed: AtomicUsize,
}

/// What one thread of a launch did: the stats of the clusters it ran, and
/// the cluster (its index in the queue) that failed, if one did; the
/// global memory its blocks touched, by allocation, and whether each of
/// them may have let the launch's dependents start before its predecessor
/// was complete (see `pdl`).
struct Done {
    stats: LaunchStats,
    error: Option<(usize, EmuError)>,
    touched: Vec<Touched>,
    early: bool,
    /// Whether a thread of its blocks executed `griddepcontrol.wait`.
    waited: bool,
    /// Its happens-before over global memory (kept where the launch's
    /// clusters run on one thread).
    order: GlobalOrder,
}

/// The state of one thread that runs clusters: a cluster's blocks and
/// warps, reset for each.
struct Worker<'a, 'e> {
    env: &'a Env<'e>,
    blocks: Vec<Block>,
    warps: Vec<Vec<Warp>>,
    cl: Cluster,
    mem: View,
}

impl<'a, 'e> Worker<'a, 'e> {
    fn new(env: &'a Env<'e>, mem: View) -> Self {
        let nwarps = (env.ntid[0] * env.ntid[1] * env.ntid[2]).div_ceil(32);
        Worker {
            env,
            blocks: (0..env.cluster_size).map(|rank| Block::new(env, rank)).collect(),
            warps: (0..env.cluster_size)
                .map(|_| (0..nwarps).map(|w| Warp::new(env.entry, w)).collect())
                .collect(),
            cl: Cluster::default(),
            mem,
        }
    }

    /// Runs the next cluster of the queue until none is left or one
    /// fails (or one before the next has failed).
    fn run(mut self, queue: &Queue, options: &Options) -> Done {
        let env = self.env;
        let [cx, cy, _] = env.cluster;
        let threads = env.ntid[0] * env.ntid[1] * env.ntid[2];
        let mut stats = LaunchStats::default();
        let mut hint = 0;
        let (mut early, mut waited) = (true, false);
        loop {
            let c = queue.next.fetch_add(1, Ordering::Relaxed);
            if c >= queue.origins.len() || c > queue.failed.load(Ordering::Relaxed) {
                return Done {
                    stats,
                    error: None,
                    touched: std::mem::take(&mut self.mem.pdl.now),
                    early,
                    waited,
                    order: std::mem::take(&mut self.mem.order),
                };
            }
            let [x, y, z] = queue.origins[c];
            for (b, r) in self.blocks.iter_mut().zip(0u32..) {
                b.reset([x + r % cx, y + r / cx % cy, z + r / (cx * cy)]);
            }
            let size = env.cluster_size;
            self.cl.reset(size, threads, options.race_check);
            self.mem.order.start([x, y, z], self.cl.clocks.threads());
            let mut sched = Sched::new(options, c as u64);
            for w in self.warps.iter_mut().flatten() {
                w.reset(env.ntid, env.start_registers.unwrap_or(0), sched.warp_seed());
            }
            sched.start_cluster(self.warps.iter().map(Vec::len).sum());
            let mut run = Run {
                env,
                blocks: &mut self.blocks,
                warps: &mut self.warps,
                cl: &mut self.cl,
                mem: &mut self.mem,
                stats: &mut stats,
                sched: &mut sched,
                limit: options.max_warp_instructions,
                hint,
            };
            let result = run.cluster();
            hint = run.hint;
            if let Err(e) = result {
                queue.failed.fetch_min(c, Ordering::Relaxed);
                return Done {
                    stats,
                    error: Some((c, e)),
                    touched: Vec::new(),
                    early,
                    waited,
                    order: GlobalOrder::default(),
                };
            }
            early &= self.blocks.iter().all(|b| b.trigger.early());
            waited |= self.blocks.iter().any(|b| b.trigger.waited);
            stats.blocks += u64::from(size);
        }
    }
}

/// One cluster being run.
struct Run<'a, 'e> {
    env: &'a Env<'e>,
    blocks: &'a mut [Block],
    warps: &'a mut [Vec<Warp>],
    cl: &'a mut Cluster,
    mem: &'a mut View,
    stats: &'a mut LaunchStats,
    sched: &'a mut Sched,
    /// Most warp instructions of the cluster.
    limit: Option<u64>,
    hint: usize,
}

impl Run<'_, '_> {
    /// Runs the blocks of the cluster (their warps in turns, asynchronous
    /// operations completing between turns) until every thread has
    /// exited.
    fn cluster(&mut self) -> Result<(), EmuError> {
        let mut turns: Vec<(usize, usize)> = Vec::new();
        let start = self.stats.warp_instructions;
        loop {
            turns.clear();
            // A block that can do nothing but wait for its own asynchronous
            // operations, if one is.
            let mut idle = None;
            for (bi, ws) in self.warps.iter().enumerate() {
                if !self.blocks[bi].exited {
                    let before = turns.len();
                    turns.extend(
                        ws.iter()
                            .enumerate()
                            .filter(|(_, w)| w.runnable() != 0)
                            .map(|(wi, _)| (bi, wi)),
                    );
                    if turns.len() == before && !self.blocks[bi].ops.is_empty() {
                        idle.get_or_insert(bi);
                    }
                }
            }
            if turns.is_empty() {
                if self.blocks.iter().all(|b| b.exited) {
                    return Ok(());
                }
                self.stuck()?;
                continue;
            }
            // Such a block gets one of its operations completed even while
            // another block of the cluster runs: that block may be spinning
            // on a flag this one sets afterwards, and a multiprocessor's
            // copies do not wait for another's warps.
            if let Some(bi) = idle {
                self.complete_one(Some(bi))?;
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
                && self.stats.warp_instructions - start > limit
            {
                return Err(EmuError::new(format!(
                    "a cluster (or block) ran more than {limit} warp instructions without finishing (Options::max_warp_instructions): a hang on a GPU?"
                ))
                .in_kernel(&self.env.entry.name));
            }
        }
    }

    /// Warp `wi` of block `bi` takes a turn; then whatever it completed is
    /// released, and the block ends if that was its last thread.
    fn turn(&mut self, bi: usize, wi: usize) -> Result<(), EmuError> {
        let slice = if self.sched.starved(bi, wi, self.warps[bi].len()) {
            1
        } else {
            self.sched.slice()
        };
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
        if block.registers_freed {
            super::ops::release_registers(block, &mut self.warps[bi]);
        }
        // (A copy into another block of the cluster may have completed on
        // that block's mbarrier.)
        for (b, ws) in self.blocks.iter_mut().zip(self.warps.iter_mut()) {
            if b.mbar_done {
                release_mbar(b, ws);
            }
        }
        if self.cl.release {
            release_cluster(self.cl, self.warps);
        }
        // A block ends when its last thread exits, before any other turn:
        // its stores into the cluster that read nothing of it land first.
        if self.warps[bi].iter().all(Warp::done) {
            while let Some(k) = self.blocks[bi].ops.iter().position(AsyncOp::outlives_issuer) {
                self.complete(bi, k)?;
            }
            let block = &mut self.blocks[bi];
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
        // A copy into another block's shared memory completes on that
        // block's mbarrier.
        let peer = match &self.blocks[bi].ops[k].work {
            Work::PeerCopy(copy) => copy.rank.map(|r| r as usize),
            _ => None,
        };
        let (block, peer_block) = match peer {
            Some(r) if r < bi => {
                let (low, high) = self.blocks.split_at_mut(bi);
                (&mut high[0], Some(&mut low[r]))
            }
            Some(r) => {
                let (low, high) = self.blocks.split_at_mut(r);
                (&mut low[bi], Some(&mut high[0]))
            }
            None => (&mut self.blocks[bi], None),
        };
        complete_op(self.env, block, peer_block, self.mem, &mut self.cl.clocks, k)?;
        for b in [Some(bi), peer].into_iter().flatten() {
            if self.blocks[b].mbar_done {
                release_mbar(&mut self.blocks[b], &mut self.warps[b]);
            }
        }
        Ok(())
    }

    /// Completes one pending asynchronous operation that may complete now
    /// (of block `only`, or of any block; an in-order one only if it is its
    /// block's first), picked by the seed under the adversarial schedules;
    /// false if there is none.
    fn complete_one(&mut self, only: Option<usize>) -> Result<bool, EmuError> {
        let mut ready = Vec::new();
        for (bi, b) in self.blocks.iter().enumerate() {
            if only.is_some_and(|o| o != bi) {
                continue;
            }
            let first_tc = b.ops.iter().position(AsyncOp::in_order);
            ready.extend(
                (0..b.ops.len())
                    .filter(|&k| !b.ops[k].in_order() || Some(k) == first_tc)
                    .map(|k| (bi, k)),
            );
        }
        if ready.is_empty() {
            return Ok(false);
        }
        let pick = if self.sched.adversarial() {
            self.sched.below(ready.len())
        } else {
            0
        };
        let (bi, k) = ready[pick];
        self.complete(bi, k)?;
        Ok(true)
    }

    /// Nothing can run. An operation in flight completes (this is the
    /// latest point at which it may); with none left, lanes blocked in an
    /// mbarrier wait (which may have other work after a failed wait) see
    /// their waits fail once; if that changes no mbarrier, the cluster is
    /// stuck for good.
    fn stuck(&mut self) -> Result<(), EmuError> {
        if self.complete_one(None)? {
            return Ok(());
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
    peer: Option<&mut Block>,
    mem: &mut View,
    clocks: &mut Clocks,
    k: usize,
) -> Result<(), EmuError> {
    let op = block.take_op(k);
    let mut side = Side {
        env,
        b: block,
        peer,
        mem,
        clocks,
    };
    super::ops::complete(&mut side, &op).map_err(|f| {
        let f = *f.0;
        cite(env, op_error(env, block, &op, f.msg), f.cite)
    })
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
        let mut released = 0u32;
        for l in lanes(w.waiting) {
            let id = w.bar_of[l];
            if id < 16 && done >> id & 1 != 0 {
                w.waiting &= !(1 << l);
                clocks.acquire(block.thread_index(w.index, l), &block.bars[id as usize].done);
                w.tc_synced[l] = w.pc[l] + 1;
                w.pc[l] += 1;
                released |= 1 << l;
            }
        }
        // The lanes of a warp that leave one barrier instruction together
        // go on as one group.
        while released != 0 {
            let pc = w.pc[released.trailing_zeros() as usize];
            let at = lanes(released).filter(|&l| w.pc[l] == pc).fold(0u32, |m, l| m | 1 << l);
            w.converge(at);
            released &= !at;
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
            w.cl_waited |= done;
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
    mem: &mut View,
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
        made: [[0; 32]; 3],
    };
    let mut budget = slice;
    // In the priority schedule a turn ends where it lets other warps run
    // (a barrier or mbarrier phase completes), so the highest-priority
    // warp that can run is the next to.
    let preemptive = ctx.sched.prioritised();
    let (starving, ops) = (ctx.sched.starving(), ctx.b.ops.len());
    let mut thread_insts = 0u64;
    let mut warp_insts = 0u64;
    // The last group and its lane count: a count of bits is a dozen
    // instructions without `popcnt` (not in the baseline x86-64), and a
    // straight run keeps its group.
    let (mut counted, mut count) = (0u32, 0u64);
    // Under independent thread scheduling each turn may start with
    // another of the warp's groups.
    if ctx.w.its.is_some() {
        ctx.w.reschedule();
    }
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
        if group != counted {
            (counted, count) = (group, u64::from(group.count_ones()));
        }
        thread_insts += count;
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
                let f = *f.0;
                let lane = f.lane.map_or(exec.trailing_zeros() as usize, |l| l as usize);
                break Err(cite(env, err_at(env, ctx.b, ctx.w, pc, lane, f.msg), f.cite));
            }
        }
        budget -= 1;
        if budget == 0
            || (preemptive && (ctx.b.release != 0 || ctx.b.mbar_done || ctx.b.registers_freed || ctx.cl.release))
            || (starving && ctx.b.ops.len() > ops)
        {
            break Ok(());
        }
    };
    ctx.b.clock += warp_insts;
    *hint = ctx.hint;
    stats.thread_instructions += thread_insts;
    stats.warp_instructions += warp_insts;
    result
}
