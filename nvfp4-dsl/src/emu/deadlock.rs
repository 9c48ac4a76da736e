//! Deadlock reports: why no thread of a block or cluster can run, and
//! where every warp is, each place by its Rust statement (resolved to
//! `file:line` with the error's own) and its PTX line.

use super::diag::{cite, err_at};
use super::error::EmuError;
use super::mbar::{IN_BYTES, Mbar};
use super::state::{
    Block, CLUSTER_WAIT, COLLECTIVE_WAIT, Cluster, Env, MBAR_WAIT, REG_WAIT, WARP_SYNC, Warp, lanes, mbar_waiters,
    register_waiters,
};

/// The instructions a report names, whose Rust statements the error
/// resolves.
struct Sites<'a, 'e> {
    env: &'a Env<'e>,
    cited: Vec<u32>,
}

impl<'a, 'e> Sites<'a, 'e> {
    fn new(env: &'a Env<'e>) -> Self {
        Sites { env, cited: Vec::new() }
    }

    /// Instruction `pc`: `file:line: `statement`, line N`, or `line N`
    /// where the PTX names no statement.
    fn at(&mut self, pc: u32) -> String {
        let line = self.env.entry.lines[pc as usize];
        let places = self.env.entry.source.of(pc as usize);
        if places.is_empty() {
            return format!("line {line}");
        }
        if !self.cited.contains(&pc) {
            self.cited.push(pc);
        }
        let names: Vec<String> = places.iter().map(ToString::to_string).collect();
        format!("{}, line {line}", names.join(", "))
    }

    /// What lane `l` of `w` waits at, and where: `barrier 0 (file:line:
    /// `sync_threads();`, line 40)`.
    fn waits_at(&mut self, w: &Warp, l: usize) -> String {
        let what = match w.bar_of[l] {
            WARP_SYNC => "bar.warp.sync".to_string(),
            MBAR_WAIT => {
                let mw = w.mwait[l];
                let phase = if mw.parity { "parity" } else { "phase" };
                format!("the mbarrier at {:#x} for {phase} {}", mw.addr, mw.want)
            }
            CLUSTER_WAIT => "barrier.cluster.wait".to_string(),
            COLLECTIVE_WAIT => "a .sync warp collective".to_string(),
            REG_WAIT => format!(
                "setmaxnreg.inc for {} registers a thread (it holds {})",
                w.registers_wanted, w.registers
            ),
            b => format!("barrier {b}"),
        };
        format!("{what} ({})", self.at(w.pc[l]))
    }

    /// Where every warp of a block is: its lanes grouped by what they
    /// wait for.
    fn positions(&mut self, warps: &[Warp]) -> String {
        let mut parts = Vec::new();
        for w in warps {
            let mut groups: Vec<(String, u32)> = Vec::new();
            for l in lanes(w.exists) {
                let what = if w.exited >> l & 1 != 0 {
                    "exited".to_string()
                } else if w.waiting >> l & 1 != 0 {
                    format!("wait at {}", self.waits_at(w, l))
                } else {
                    format!("are at {}", self.at(w.pc[l]))
                };
                match groups.iter_mut().find(|g| g.0 == what) {
                    Some(g) => g.1 |= 1 << l,
                    None => groups.push((what, 1 << l)),
                }
            }
            let lanes = groups
                .iter()
                .map(|(what, m)| format!("{} {what}", lane_set(*m)))
                .collect::<Vec<_>>()
                .join(", ");
            parts.push(format!("warp {}: {lanes}", w.index));
        }
        parts.join("; ")
    }

    /// The error at lane `lane` of `w`, with the statements it names.
    fn error(self, block: &Block, w: &Warp, lane: usize, msg: String) -> EmuError {
        cite(self.env, err_at(self.env, block, w, w.pc[lane], lane, msg), self.cited)
    }
}

/// A set of lanes, for messages: `lane 3`, `lanes 0-15`, `lanes 0x00ff00ff`.
fn lane_set(m: u32) -> String {
    let (lo, n) = (m.trailing_zeros(), m.count_ones());
    let run = if n == 32 { u32::MAX } else { (1 << n) - 1 };
    if n == 1 {
        format!("lane {lo}")
    } else if m >> lo == run {
        format!("lanes {lo}-{}", lo + n - 1)
    } else {
        format!("lanes {m:#010x}")
    }
}

/// Thread index of lane `l` of `w`, for messages.
fn tid_of(w: &Warp, l: usize) -> String {
    format!("({},{},{})", w.tid[0][l], w.tid[1][l], w.tid[2][l])
}

/// For a block where threads wait at barrier 0 without a thread count
/// (`sync_threads()`) while others wait on an mbarrier: what the first
/// usually meant.
fn subset_advice(block: &Block, warps: &[Warp]) -> &'static str {
    let at_zero = warps.iter().any(|w| lanes(w.waiting).any(|l| w.bar_of[l] == 0));
    let on_mbar = warps.iter().any(|w| mbar_waiters(w) != 0);
    if at_zero && on_mbar && block.bars[0].count == 0 {
        ". The threads at barrier 0 (`sync_threads()`) wait for every thread of the block that has not exited, those waiting on the mbarrier too: threads that synchronise a subset of the block among themselves (the consumer warps of a pipeline, say) need `named_barrier_sync(id, threads)` instead, with a barrier id from 1 to 15 and the subset's thread count (a multiple of 32)"
    } else {
        ""
    }
}

/// For a block where warps wait in `setmaxnreg.inc`: why they may, and
/// what to write instead.
fn register_advice(env: &Env<'_>, block: &Block, warps: &[Warp]) -> String {
    let waiting = warps.iter().filter(|w| register_waiters(w) != 0).count();
    if waiting == 0 {
        return String::new();
    }
    let warps_wait = if waiting == 1 {
        "1 warp waits".to_string()
    } else {
        format!("{waiting} warps wait")
    };
    format!(
        ". {warps_wait} in setmaxnreg.inc for registers of the block's pool, which holds {}: registers enter it only when a warp gives them up with setmaxnreg.dec. A warpgroup that gives registers up must call `setmaxnreg_dec` before it waits for anything the warpgroups that take them do (an mbarrier, a barrier, `grid_dependency_wait`), and the increases must fit in what the decreases give (each thread of this kernel starts with {} registers, from `launch_bounds`' threads and blocks per multiprocessor)",
        block.register_pool,
        env.start_registers.unwrap_or(0)
    )
}

/// Explains an mbarrier wait that no thread of the block can complete.
pub(super) fn mbar_deadlock(env: &Env<'_>, block: &Block, warps: &[Warp]) -> EmuError {
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
    let bar = block.mbars.iter().find(|b| b.addr == mw.addr);
    let state = bar.map_or_else(
        || format!("mbarrier at shared address {:#x} (invalidated)", mw.addr),
        Mbar::state,
    );
    let mut sites = Sites::new(env);
    // Bytes announced that no copy will bring: a wrong expect_tx count.
    let bytes = match bar.filter(|b| b.tx > 0) {
        Some(b) => format!(
            ": {}, so {} bytes will never land; {IN_BYTES}",
            b.bytes_note(&mut |pc| sites.at(pc)).0,
            b.tx
        ),
        None => String::new(),
    };
    let what = if mw.parity {
        format!("the phase of parity {}", mw.want & 1)
    } else {
        format!("phase {}", mw.want)
    };
    let (mut spinning, mut at_bar, mut in_regs, mut exited) = (0u32, 0u32, 0u32, 0u32);
    for w2 in warps {
        spinning += mbar_waiters(w2).count_ones();
        in_regs += register_waiters(w2).count_ones();
        at_bar += (w2.waiting & !mbar_waiters(w2) & !register_waiters(w2)).count_ones();
        exited += (w2.exists & w2.exited).count_ones();
    }
    let regs = if in_regs > 0 {
        format!(", {in_regs} in setmaxnreg.inc")
    } else {
        String::new()
    };
    let msg = format!(
        "mbarrier wait can never complete: this thread waits for {what} of the {state}; no thread of the block can make progress ({spinning} threads wait on mbarriers, {at_bar} at barriers{regs}, {exited} exited) and no copy is pending{bytes}. Where the warps are: {}{}{}",
        sites.positions(warps),
        subset_advice(block, warps),
        register_advice(env, block, warps)
    );
    sites.error(block, w, lane, msg)
}

/// Explains why no thread of the cluster can run: the first waiting
/// thread, in rank and warp order, names what it waits for.
pub(super) fn deadlock(env: &Env<'_>, blocks: &[Block], warps: &[Vec<Warp>], cl: &Cluster) -> EmuError {
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
    let mut sites = Sites::new(env);
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
                        sites.waits_at(w2, l)
                    )
                })
        })
    });
    let msg = format!(
        "barrier.cluster.wait can never complete: {} of the {} threads of the cluster that have not exited arrived in phase {}; {}. Where the warps of block {} are: {}",
        cl.arrived,
        cl.live,
        cl.phase,
        missing.unwrap_or_else(|| "the missing threads can never arrive".into()),
        blocks[bi].id(),
        sites.positions(&warps[bi])
    );
    sites.error(&blocks[bi], w, lane, msg)
}

/// Explains why no thread of the block can run.
fn block_deadlock(env: &Env<'_>, block: &Block, warps: &[Warp]) -> EmuError {
    let (wi, lane) = warps
        .iter()
        .enumerate()
        .find_map(|(i, w)| (w.waiting != 0).then(|| (i, w.waiting.trailing_zeros() as usize)))
        .expect("a blocked block has a waiting lane");
    let w = &warps[wi];
    let id = w.bar_of[lane];
    let mut sites = Sites::new(env);
    if id == WARP_SYNC || id == COLLECTIVE_WAIT {
        let what = if id == WARP_SYNC {
            "bar.warp.sync"
        } else {
            "this warp collective"
        };
        let mask = w.wsync_mask[lane];
        let missing = mask & w.exists & !(w.waiting & mask);
        let why = lanes(missing)
            .next()
            .map(|l| {
                if w.exited >> l & 1 != 0 {
                    format!("lane {l} (thread {}) exited", tid_of(w, l))
                } else {
                    format!("lane {l} (thread {}) waits at {}", tid_of(w, l), sites.at(w.pc[l]))
                }
            })
            .unwrap_or_else(|| "its lanes wait with different masks".into());
        let msg = format!(
            "{what} with member mask {mask:#010x} can never complete: {why}. Where the warps are: {}",
            sites.positions(warps)
        );
        return sites.error(block, w, lane, msg);
    }
    if id == REG_WAIT {
        let msg = format!(
            "setmaxnreg.inc can never complete: this warp asks for {} registers a thread where it holds {}, {} more for its 32 threads, and no warp of the block can run to give them up. Where the warps are: {}{}",
            w.registers_wanted,
            w.registers,
            (w.registers_wanted - w.registers) * 32,
            sites.positions(warps),
            register_advice(env, block, warps)
        );
        return sites.error(block, w, lane, msg);
    }
    let bar = &block.bars[id as usize];
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
                why = format!("thread {} waits at {}", tid_of(w2, l), sites.waits_at(w2, l));
                break 'find;
            }
        }
    }
    if why.is_empty() {
        why = "the missing threads can never arrive".into();
    }
    let msg = format!(
        "barrier {id} can never complete: {} of {expected} threads arrived; {why}. Where the warps are: {}{}{}",
        bar.arrived,
        sites.positions(warps),
        subset_advice(block, warps),
        register_advice(env, block, warps)
    );
    sites.error(block, w, lane, msg)
}
