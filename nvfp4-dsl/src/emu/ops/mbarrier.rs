//! mbarriers (`mbarrier.*`): init, arrives (with expected and completed
//! transaction bytes), waits (a failing `try_wait`/`test_wait` blocks its
//! lane until the phase completes) and the checks of their init fence and
//! phase overruns. They take part in the race check: an arrive releases
//! the thread's clock into the current phase, and a successful wait
//! acquires every completed phase.

use super::bulk::{drop_sem, shared_operand, shared_space};
use super::mem::address_values;
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::diag::statement_of;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Ty};
use crate::emu::mbar::{MBAR_MAX, Mbar, MbarWait, Misuse};
use crate::emu::pending::Work;
use crate::emu::state::{Env, MBAR_WAIT, lanes};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

const INIT: u8 = 0;
const INVAL: u8 = 1;
const ARRIVE: u8 = 2;
const ARRIVE_DROP: u8 = 3;
const EXPECT_TX: u8 = 4;
const COMPLETE_TX: u8 = 5;
const WAIT: u8 = 6;

/// `flags` bits.
const F_EXPECT: u32 = 1;
const F_PARITY: u32 = 2;
/// `.shared::cluster`: an arrive may reach another block's barrier.
const F_CLUSTER: u32 = 4;

pub(super) fn mbarrier(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    drop_sem(m);
    let op = match m.take_any(&[
        "init",
        "inval",
        "arrive",
        "arrive_drop",
        "expect_tx",
        "complete_tx",
        "try_wait",
        "test_wait",
    ]) {
        Some(k) => [INIT, INVAL, ARRIVE, ARRIVE_DROP, EXPECT_TX, COMPLETE_TX, WAIT, WAIT][k],
        None => return Err("unsupported mbarrier operation".into()),
    };
    let mut i = Inst::new(exec_mbar);
    i.sub = op;
    if op == ARRIVE && m.take("expect_tx") {
        i.flags |= F_EXPECT;
    }
    if op == WAIT && m.take("parity") {
        i.flags |= F_PARITY;
    }
    if m.rest().contains(&"shared::cluster") {
        i.flags |= F_CLUSTER;
    }
    i.space = shared_space(m);
    if m.ty()? != Ty::B64 {
        return Err("mbarrier objects are .b64".into());
    }
    match op {
        INIT => {
            d.count(2)?;
            i.addr = d.addr(0, false)?;
            i.s[0] = d.src(1, Ty::U32)?;
        }
        INVAL => {
            d.count(1)?;
            i.addr = d.addr(0, false)?;
        }
        ARRIVE | ARRIVE_DROP => {
            let expect = i.flags & F_EXPECT != 0;
            if expect {
                d.count(3)?;
            } else {
                d.count_in(2, 3)?;
            }
            i.d[0] = d.reg_dst(0)?;
            if i.flags & F_CLUSTER != 0 && i.d[0] != Operand::Sink {
                return Err(
                    "an mbarrier.arrive on a `.shared::cluster` address returns no state: its destination must be `_`"
                        .into(),
                );
            }
            i.addr = d.addr(1, false)?;
            if d.args.len() == 3 {
                i.s[usize::from(expect)] = d.src(2, Ty::U32)?;
            }
        }
        EXPECT_TX | COMPLETE_TX => {
            d.count(2)?;
            i.addr = d.addr(0, false)?;
            i.s[1] = d.src(1, Ty::U32)?;
        }
        _ => {
            d.count_in(3, 4)?;
            i.d[0] = d.pred_dst_arg(d.arg(0)?)?;
            i.addr = d.addr(1, false)?;
            i.s[0] = d.src(2, if i.flags & F_PARITY != 0 { Ty::U32 } else { Ty::B64 })?;
            if d.args.len() == 4 {
                i.s[1] = d.src(3, Ty::U32)?;
            }
        }
    }
    Ok(i)
}

/// The mbarrier address of a lane (8-byte aligned, in shared memory).
fn mbar_at(c: &mut Ctx<'_>, i: &Inst, lane: usize, v: u64) -> Result<u32, Fault> {
    Ok(shared_operand(c, lane, v, i.space, 8, 8, "mbarrier")?.0)
}

/// The block (None: the executing one; else its rank in the cluster) and
/// shared address of the mbarrier an arrive of a lane reaches: another
/// block's only through a `.shared::cluster` address.
fn arrive_target(c: &mut Ctx<'_>, i: &Inst, lane: usize, v: u64) -> Result<(Option<u32>, u32), Fault> {
    if i.flags & F_CLUSTER == 0 {
        return Ok((None, mbar_at(c, i, lane, v)?));
    }
    if !v.is_multiple_of(8) {
        return Err(Fault::lane(
            lane,
            format!("mbarrier address {v:#x} is not 8-byte aligned"),
        ));
    }
    let (rank, off) = c.cluster_shared_at(lane, v, 8, "mbarrier")?;
    Ok((rank, off as u32 + crate::emu::layout::SHARED_BASE))
}

/// Applies `f` to the mbarrier of a lane (in the executing block, `rank`
/// None, or in block `rank` of the cluster), reporting errors at that
/// lane.
fn update(
    c: &mut Ctx<'_>,
    lane: usize,
    rank: Option<u32>,
    addr: u32,
    f: impl FnOnce(&mut Mbar) -> Result<bool, Misuse>,
) -> Result<bool, Fault> {
    let env = c.env;
    let (b, _) = c.block_and_clocks(rank);
    b.mbar_update(env, addr, f).map_err(|f| f.on_lane(lane))
}

/// Lane `lane` releases its clock into the current phase of the
/// mbarrier at `addr` (of block `rank`, as for [`update`]; an arrive, a
/// thread's `complete_tx`), after the `tcgen05` ordering check that every
/// release makes.
fn release_into(c: &mut Ctx<'_>, lane: usize, rank: Option<u32>, addr: u32) -> Result<(), Fault> {
    c.tc_release_check(lane)?;
    let t = c.thread_index(lane);
    let (b, clocks) = c.block_and_clocks(rank);
    b.mbar(addr).map_err(|m| Fault::lane(lane, m))?.collect(clocks.row(t));
    clocks.tick(t);
    Ok(())
}

/// Fails unless the mbarrier at `addr`, which an asynchronous operation
/// that lane `lane` issues now completes on, was published to the async
/// proxy: the PTX ISA orders an `mbarrier.init` (a generic-proxy write)
/// before the async proxy's updates of the barrier (a bulk copy's
/// `complete_tx`, the arrive of a `tcgen05.commit`) only through a fence
/// (`fence.mbarrier_init.release.cluster`, or `fence.proxy.async`, or a
/// release fence of cluster scope) after the init and a synchronisation
/// that orders that fence before the issue. Needs the clocks (checked
/// mode).
pub(super) fn check_published(c: &mut Ctx<'_>, lane: usize, rank: Option<u32>, addr: u32) -> Result<(), Fault> {
    let t = c.thread_index(lane);
    let block = match rank {
        None => &mut *c.b,
        Some(r) => c.peer(r),
    };
    let b = block.mbar(addr).map_err(|m| Fault::lane(lane, m))?;
    let (init_pc, by, published, through_cluster) = (b.init_pc, b.init_thread, b.published, b.cluster_published);
    let clocks = &c.cl.clocks;
    if !clocks.on() {
        return Ok(());
    }
    // The last phase of the cluster barrier this lane waited for (each
    // live thread arrives once a phase, and waits before it arrives again).
    let waited = (c.w.cl_waited & 1 << lane != 0).then(|| {
        let armed = c.w.cl_armed & 1 << lane != 0;
        c.w.cl_phase[lane] + u32::from(!armed)
    });
    let why = match published {
        Some((k, _)) if by == t || clocks.row(t)[by as usize] >= k => return Ok(()),
        Some(_) if through_cluster.is_some_and(|p| waited.is_some_and(|w| w > p)) => return Ok(()),
        Some((_, fence)) => format!(
            "the fence at line {} `{}` that publishes it is not ordered before this issue (no barrier, such as sync_threads() or cluster_sync(), between the fence and it)",
            c.env.entry.lines[fence as usize], c.env.entry.texts[fence as usize]
        ),
        None => {
            "and the thread that initialised it executed no fence.mbarrier_init (or stronger fence) since".to_string()
        }
    };
    let pc = c.w.group_pc;
    Err(Fault::lane(
        lane,
        format!(
            "mbarrier init not published to the async proxy: this {} completes on the mbarrier initialised at {}, {why}; the initialising thread must execute fence_mbarrier_init() (`fence.mbarrier_init.release.cluster`) after its mbarrier inits and before the barrier that orders them before the barrier's first use",
            crate::emu::diag::op_name(&c.env.entry.texts[pc as usize]),
            statement_of(c.env, init_pc),
        ),
    )
    .citing(init_pc))
}

/// What a lane's `mbarrier.inval` would cut short: an operation in
/// flight that completes on the mbarrier, or a phase under way.
fn in_use(c: &Ctx<'_>, addr: u32) -> Option<String> {
    let line = |pc: u32| c.env.entry.lines[pc as usize];
    let on_it = c.b.ops.iter().find(|op| match &op.work {
        Work::Copy(copy) => copy.mbar == addr,
        Work::Tc(crate::emu::pending::TcOp::Arrive { mbar }) => *mbar == addr,
        _ => false,
    });
    if let Some(op) = on_it {
        return Some(format!(
            "the {} at line {} will still complete on it",
            crate::emu::diag::op_name(&c.env.entry.texts[op.pc as usize]),
            line(op.pc)
        ));
    }
    let b = c.b.mbars.iter().find(|b| b.addr == addr)?;
    (!b.idle()).then(|| format!("its phase {} is under way ({})", b.phase, b.state()))
}

fn exec_mbar(c: &mut Ctx<'_>, i: &Inst) -> X {
    let addr = address_values(c, &i.addr)?;
    let s0 = match i.s[0] {
        Operand::None => [1; 32],
        op => c.src(&op)?,
    };
    let s1 = match i.s[1] {
        Operand::None => [0; 32],
        op => c.src(&op)?,
    };
    let exec = c.exec;
    let pc = c.w.group_pc;
    match i.sub {
        INIT => {
            for l in lanes(exec) {
                let a = mbar_at(c, i, l, addr[l])?;
                let n = s0[l] & 0xFFFF_FFFF;
                if n == 0 || n > MBAR_MAX {
                    return Err(Fault::lane(
                        l,
                        format!("mbarrier.init with an expected count of {n}: it must be in 1..=2^20-1"),
                    ));
                }
                if let Some(old) = c.b.mbars.iter().find(|m| m.addr == a) {
                    return Err(Fault::lane(
                        l,
                        format!(
                            "mbarrier.init of the mbarrier at shared address {a:#x}, which the mbarrier.init at {} initialised: invalidate it first (mbarrier.inval, once nothing uses it)",
                            statement_of(c.env, old.init_pc)
                        ),
                    )
                    .citing(old.init_pc));
                }
                let t = c.thread_index(l);
                let b = &mut *c.b;
                b.mbars.push(Mbar::new(a, n as u32, pc, t));
                b.epoch += 1;
            }
            Ok(Flow::Next)
        }
        INVAL => {
            for l in lanes(exec) {
                let a = mbar_at(c, i, l, addr[l])?;
                c.b.mbar(a).map_err(|m| Fault::lane(l, m))?;
                if let Some(why) = in_use(c, a) {
                    return Err(Fault::lane(
                        l,
                        format!("mbarrier.inval of the mbarrier at shared address {a:#x} while it is in use: {why}"),
                    ));
                }
                c.b.mbars.retain(|m| m.addr != a);
                c.b.epoch += 1;
            }
            Ok(Flow::Next)
        }
        ARRIVE | ARRIVE_DROP => {
            let mut state = [0u64; 32];
            for l in lanes(exec) {
                let (rank, a) = arrive_target(c, i, l, addr[l])?;
                let count = s0[l] & 0xFFFF_FFFF;
                let expect = (i.flags & F_EXPECT != 0).then_some(s1[l] & 0xFFFF_FFFF);
                if expect.is_none() && (count == 0 || count > MBAR_MAX) {
                    return Err(Fault::lane(
                        l,
                        format!("mbarrier.arrive count {count} must be in 1..=2^20-1"),
                    ));
                }
                state[l] = u64::from(c.block_and_clocks(rank).0.mbar(a).map_err(|m| Fault::lane(l, m))?.phase);
                release_into(c, l, rank, a)?;
                let drop = i.sub == ARRIVE_DROP;
                update(c, l, rank, a, |b| {
                    if let Some(bytes) = expect {
                        // Refused before its bytes count: the message shows
                        // the phase as the arrive found it.
                        if b.pending == 0 {
                            return Err(if drop { Misuse::Drop } else { Misuse::Arrivals(1) });
                        }
                        b.expect_tx(bytes, pc)?;
                    }
                    if !drop {
                        return b.arrive(if expect.is_some() { 1 } else { count as u32 });
                    }
                    let mut done = false;
                    for _ in 0..count {
                        done |= b.arrive_drop()?;
                    }
                    Ok(done)
                })?;
            }
            c.write(&i.d[0], &state, Ext::Zero)?;
            Ok(Flow::Next)
        }
        EXPECT_TX | COMPLETE_TX => {
            for l in lanes(exec) {
                let a = mbar_at(c, i, l, addr[l])?;
                let bytes = s1[l] & 0xFFFF_FFFF;
                if i.sub == EXPECT_TX {
                    update(c, l, None, a, |b| b.expect_tx(bytes, pc).map(|()| false))?;
                } else {
                    release_into(c, l, None, a)?;
                    update(c, l, None, a, |b| b.complete_tx(bytes))?;
                }
            }
            Ok(Flow::Next)
        }
        _ => exec_wait(c, i, &addr, &s0),
    }
}

/// `try_wait`/`test_wait`: lanes whose phase has completed get true (and
/// acquire the clocks of every completed phase); the others block until
/// it does (or, once the block cannot progress, get false).
fn exec_wait(c: &mut Ctx<'_>, i: &Inst, addr: &[u64; 32], want: &[u64; 32]) -> X {
    let parity = i.flags & F_PARITY != 0;
    let exec = c.exec;
    let pc = c.w.group_pc;
    let (mut ok, mut fail) = (0u32, 0u32);
    for l in lanes(exec) {
        let a = mbar_at(c, i, l, addr[l])?;
        let w = if parity {
            let p = want[l] & 0xFFFF_FFFF;
            if p > 1 {
                return Err(Fault::lane(
                    l,
                    format!("mbarrier.try_wait.parity with parity {p} (must be 0 or 1)"),
                ));
            }
            p as u32
        } else {
            want[l] as u32
        };
        let t = c.thread_index(l);
        let local = c.w.index as usize * 32 + l;
        let b = c.b.mbar(a).map_err(|m| Fault::lane(l, m))?;
        if b.done(w, parity) {
            ok |= 1 << l;
            b.observed(local);
            c.cl.clocks.acquire(t, &b.released);
            c.w.tc_synced[l] = pc + 1;
        } else {
            if let Some(seen) = b.overrun(local).filter(|_| parity) {
                let (init_pc, phase) = (b.init_pc, b.phase);
                let msg = overrun_message(c.env, init_pc, phase, seen, w);
                return Err(Fault::lane(l, msg).citing(init_pc));
            }
            fail |= 1 << l;
            c.w.mwait[l] = MbarWait {
                addr: a,
                want: w,
                parity,
            };
        }
    }
    let block = fail & !c.w.timeout;
    c.w.timeout &= !exec;
    c.exec = exec & !block;
    if c.exec != 0 {
        c.write_pred(&i.d[0], ok);
    }
    c.exec = exec;
    if block == 0 {
        return Ok(Flow::Next);
    }
    c.park(block, MBAR_WAIT);
    Ok(Flow::Jump)
}

/// A parity wait for parity `want` of the mbarrier initialised at
/// `init_pc`, which completed phases `seen..phase` since the thread last
/// saw one complete.
#[cold]
fn overrun_message(env: &Env<'_>, init_pc: u32, phase: u32, seen: u32, want: u32) -> String {
    let last = if seen == 0 {
        "since its initialisation".to_string()
    } else {
        format!("since it last saw one complete (phase {})", seen - 1)
    };
    format!(
        "mbarrier phase overrun: the mbarrier initialised at {} completed phases {seen} to {} {last}, without this thread seeing phase {seen} complete; this wait for parity {want} now waits for phase {} instead (on the GPU, forever, if it meant phase {seen}): an arrive or tcgen05.commit on the wrong stage's barrier? (a parity wait tells only the parity of the last completed phase: a thread waiting on an mbarrier may let at most one of its phases complete unseen)",
        statement_of(env, init_pc),
        phase - 1,
        phase,
    )
}
