//! The Hopper/Blackwell asynchronous model: mbarriers (`mbarrier.*`) and
//! bulk copies (`cp.async.bulk`, `cp.async.bulk.tensor.2d` through an
//! emulator [`TensorMap2d`](crate::emu::TensorMap2d)).
//!
//! A copy is checked when it is issued (sizes, alignment, bounds, the
//! mbarrier) and put in flight (`pending::Copy`): its destination holds
//! poison (`layout::POISON`) and no other access may touch it until it
//! completes, at a point the schedule picks; then it reads its source,
//! writes its destination and completes its transaction bytes on the
//! mbarrier. A bulk copy to global memory reads its shared source when it
//! completes: at the `cp.async.bulk.wait_group` that covers it at the
//! latest; until then its source may not be written. A lane whose
//! `mbarrier.try_wait`/`test_wait` would fail blocks (the warp's other
//! lanes and the block's other warps run) until the phase completes; see
//! `run::Run::stuck` for a block that cannot progress.
//!
//! mbarriers take part in the race check: an arrive releases the thread's
//! clock into the current phase, a completed copy its issuer's clock at
//! the issue, and a successful wait acquires every completed phase.

use crate::emu::ctx::{Ctx, Side};
use crate::emu::decode::Dec;
use crate::emu::diag::statement_of;
use crate::emu::inst::{Addr, Ext, Fault, Flow, Inst, Mods, Operand, Space, Ty};
use crate::emu::layout::{POISON, SHARED_BASE, SHARED_WINDOW};
use crate::emu::mbar::{MBAR_MAX, Mbar, MbarWait};
use crate::emu::pending::{AsyncOp, Chunk, Copy, Store, Work};
use crate::emu::race::Check;
use crate::emu::state::{Env, MBAR_WAIT, lanes};
use crate::emu::tensormap::{TensorMap2d, swizzle};

use super::mem::address_values;

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

/// The shared::cta address and the offset in the block's shared buffer of
/// `[v, v + len)`, given as a `.shared` address (`space` Shared; a
/// shared::cluster address of the executing block is one too) or a
/// generic one; checks alignment and bounds.
pub(super) fn shared_operand(
    c: &mut Ctx<'_>,
    lane: usize,
    v: u64,
    space: Space,
    len: u32,
    align: u32,
    what: &str,
) -> Result<(u32, usize), Fault> {
    let a = if space == Space::Generic {
        if !(SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&v) {
            return Err(Fault::lane(
                lane,
                format!("{what}: generic address {v:#x} is not in shared memory"),
            ));
        }
        v - SHARED_WINDOW
    } else {
        v & 0xFFFF_FFFF
    };
    if !a.is_multiple_of(u64::from(align)) {
        return Err(Fault::lane(
            lane,
            format!("{what}: shared address {a:#x} is not {align}-byte aligned"),
        ));
    }
    let off = c.shared_at(lane, a, len, what)?;
    Ok((off as u32 + SHARED_BASE, off))
}

/// Removes memory-order and scope qualifiers (nothing to order here).
fn drop_sem(m: &mut Mods<'_>) {
    m.drop_where(|p| matches!(p, "release" | "acquire" | "relaxed" | "cta" | "cluster"));
}

/// `.shared`, `.shared::cta`, `.shared::cluster` (a CTA's own shared
/// addresses are valid cluster addresses in a launch without clusters) or
/// generic.
fn shared_space(m: &mut Mods<'_>) -> Space {
    if m.take("shared") || m.take("shared::cta") || m.take("shared::cluster") {
        Space::Shared
    } else {
        Space::Generic
    }
}

// ----- mbarrier -----

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

/// Applies `f` to the mbarrier of a lane, reporting errors at that lane.
fn update(
    c: &mut Ctx<'_>,
    lane: usize,
    addr: u32,
    f: impl FnOnce(&mut Mbar) -> Result<bool, String>,
) -> Result<bool, Fault> {
    c.b.mbar_update(addr, f).map_err(|m| Fault::lane(lane, m))
}

/// Lane `lane` releases its clock into the current phase of the
/// mbarrier at `addr` (an arrive, a thread's `complete_tx`), after the
/// `tcgen05` ordering check that every release makes.
fn release_into(c: &mut Ctx<'_>, lane: usize, addr: u32) -> Result<(), Fault> {
    c.tc_release_check(lane)?;
    let t = c.thread_index(lane);
    let row = c.cl.clocks.row(t);
    c.b.mbar(addr).map_err(|m| Fault::lane(lane, m))?.collect(row);
    c.cl.clocks.tick(t);
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
pub(super) fn check_published(c: &mut Ctx<'_>, lane: usize, addr: u32) -> Result<(), Fault> {
    let t = c.thread_index(lane);
    let b = c.b.mbar(addr).map_err(|m| Fault::lane(lane, m))?;
    let clocks = &c.cl.clocks;
    if !clocks.on() {
        return Ok(());
    }
    let (init_pc, by) = (b.init_pc, b.init_thread);
    let why = match b.published {
        Some((k, _)) if by == t || clocks.row(t)[by as usize] >= k => return Ok(()),
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
                            "mbarrier.init of the mbarrier at shared address {a:#x}, which the mbarrier.init at line {} initialised: invalidate it first (mbarrier.inval, once nothing uses it)",
                            c.env.entry.lines[old.init_pc as usize]
                        ),
                    ));
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
                let a = mbar_at(c, i, l, addr[l])?;
                let count = s0[l] & 0xFFFF_FFFF;
                if i.flags & F_EXPECT != 0 {
                    update(c, l, a, |b| b.expect_tx(s1[l] & 0xFFFF_FFFF).map(|()| false))?;
                } else if count == 0 || count > MBAR_MAX {
                    return Err(Fault::lane(
                        l,
                        format!("mbarrier.arrive count {count} must be in 1..=2^20-1"),
                    ));
                }
                state[l] = u64::from(c.b.mbar(a).map_err(|m| Fault::lane(l, m))?.phase);
                release_into(c, l, a)?;
                if i.sub == ARRIVE_DROP {
                    update(c, l, a, |b| {
                        let mut done = false;
                        for _ in 0..count {
                            done |= b.arrive_drop()?;
                        }
                        Ok(done)
                    })?;
                } else {
                    let n = if i.flags & F_EXPECT != 0 { 1 } else { count as u32 };
                    update(c, l, a, |b| b.arrive(n))?;
                }
            }
            c.write(&i.d[0], &state, Ext::Zero)?;
            Ok(Flow::Next)
        }
        EXPECT_TX | COMPLETE_TX => {
            for l in lanes(exec) {
                let a = mbar_at(c, i, l, addr[l])?;
                let bytes = s1[l] & 0xFFFF_FFFF;
                if i.sub == EXPECT_TX {
                    update(c, l, a, |b| b.expect_tx(bytes).map(|()| false))?;
                } else {
                    release_into(c, l, a)?;
                    update(c, l, a, |b| b.complete_tx(bytes))?;
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

// ----- cp.async.bulk -----

/// `sub` values.
const G2S: u8 = 0;
const S2G: u8 = 1;
const TENSOR_G2S: u8 = 2;

pub(super) fn cp(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if !m.take("async") {
        return Err("only the `cp.async.bulk` forms are supported by the emulator".into());
    }
    if !m.take("bulk") {
        return Err("only the `cp.async.bulk` forms are supported by the emulator (not sm_80 `cp.async`)".into());
    }
    if m.take("commit_group") {
        d.count(0)?;
        return Ok(Inst::new(exec_commit_group));
    }
    if m.take("wait_group") {
        m.take("read");
        d.count(1)?;
        let mut i = Inst::new(exec_wait_group);
        i.imm = match d.arg(0)? {
            crate::emu::parse::Arg::Lit(crate::emu::parse::Lit::Int(n)) if (0..=63).contains(n) => *n as u64,
            _ => return Err("the group count of cp.async.bulk.wait_group must be an immediate in 0..=63".into()),
        };
        return Ok(i);
    }
    let tensor = m.take("tensor");
    if tensor {
        match m.take_any(&["1d", "2d", "3d", "4d", "5d"]) {
            Some(1) => {}
            Some(_) => {
                return Err(
                    "only 2-D tensor copies are supported by the emulator (its tensor maps are TensorMap2d)".into(),
                );
            }
            None => return Err("missing the tensor dimension (`.2d`)".into()),
        }
    }
    let spaces: Vec<&str> = m.rest().iter().take(2).copied().collect();
    let is_shared = |p: &str| matches!(p, "shared::cluster" | "shared::cta");
    let g2s = spaces.len() == 2 && is_shared(spaces[0]) && spaces[1] == "global";
    let s2g = spaces.len() == 2 && spaces[0] == "global" && spaces[1] == "shared::cta";
    let supported = g2s || (s2g && !tensor);
    if !supported {
        return Err(format!(
            "unsupported direction `.{}`: the emulator supports global to shared{}",
            spaces.join("."),
            if tensor { "" } else { " and shared::cta to global" }
        ));
    }
    m.take(spaces[0]);
    m.take(spaces[1]);
    if m.take("multicast::cluster") {
        return Err("`.multicast::cluster` is not supported (the emulator has no clusters)".into());
    }
    let hint = m.take("L2::cache_hint");
    let mut i;
    if g2s {
        if tensor {
            if m.take_any(&["im2col", "im2col::w", "im2col::w::128", "tile::gather4"])
                .is_some()
            {
                return Err("only the `.tile` load mode is supported".into());
            }
            m.take("tile");
        }
        if !m.take("mbarrier::complete_tx::bytes") {
            return Err("expected `.mbarrier::complete_tx::bytes`".into());
        }
        d.count(3 + usize::from(!tensor) + usize::from(hint))?;
        if tensor {
            i = Inst::new(exec_tensor);
            i.sub = TENSOR_G2S;
            let (map, coords) = d.tensor_addr(1)?;
            if coords.len() != 2 {
                return Err(format!("a 2-D tensor copy takes 2 coordinates, found {}", coords.len()));
            }
            i.addrs = vec![d.addr(0, false)?, map, d.addr(2, false)?].into_boxed_slice();
            i.v = coords.into_boxed_slice();
            if hint {
                d.reg_src(3)?;
            }
        } else {
            i = Inst::new(exec_bulk);
            i.sub = G2S;
            i.addrs = vec![d.addr(0, false)?, d.addr(1, false)?, d.addr(3, false)?].into_boxed_slice();
            i.s[0] = d.src(2, Ty::U32)?;
            if hint {
                d.reg_src(4)?;
            }
        }
    } else {
        if !m.take("bulk_group") {
            return Err("expected `.bulk_group`".into());
        }
        d.count(3 + usize::from(hint))?;
        i = Inst::new(exec_bulk);
        i.sub = S2G;
        i.addrs = vec![d.addr(0, false)?, d.addr(1, false)?].into_boxed_slice();
        i.s[0] = d.src(2, Ty::U32)?;
        if hint {
            d.reg_src(3)?;
        }
    }
    Ok(i)
}

/// Whether `op` is a bulk copy to global memory by lane `lane` of warp `w`.
fn store_of(op: &AsyncOp, w: u32, lane: usize) -> Option<&Store> {
    match &op.work {
        Work::Store(st) if op.warp == w && op.lane as usize == lane => Some(st),
        _ => None,
    }
}

/// `cp.async.bulk.commit_group`: each lane's bulk copies to global memory
/// not yet in a group form a new one.
fn exec_commit_group(c: &mut Ctx<'_>, _: &Inst) -> X {
    let w = c.w.index;
    for l in lanes(c.exec) {
        let group = c.b.next_group;
        c.b.next_group += 1;
        for op in &mut c.b.ops {
            if let Work::Store(st) = &mut op.work
                && op.warp == w
                && op.lane as usize == l
                && st.group.is_none()
            {
                st.group = Some(group);
            }
        }
    }
    Ok(Flow::Next)
}

/// `cp.async.bulk.wait_group{.read} N`: each lane's oldest groups complete
/// until at most N are pending; the lane then knows what the block's
/// asynchronous unit did.
fn exec_wait_group(c: &mut Ctx<'_>, i: &Inst) -> X {
    let w = c.w.index;
    for l in lanes(c.exec) {
        let mut groups: Vec<u64> =
            c.b.ops
                .iter()
                .filter_map(|op| store_of(op, w, l).and_then(|st| st.group))
                .collect();
        groups.sort_unstable();
        groups.dedup();
        let over = groups.len().saturating_sub(i.imm as usize);
        for &g in &groups[..over] {
            while let Some(k) =
                c.b.ops
                    .iter()
                    .position(|op| store_of(op, w, l).is_some_and(|st| st.group == Some(g)))
            {
                c.complete_op(k)?;
            }
        }
        let t = c.thread_index(l);
        c.cl.clocks.acquire_from(t, c.b.agent);
    }
    Ok(Flow::Next)
}

fn values(c: &Ctx<'_>, a: &Addr) -> Result<[u64; 32], Fault> {
    address_values(c, a)
}

/// Puts lane `lane`'s copy into shared memory in flight: its destination
/// is checked (nothing in flight touches it, the issuing thread is
/// ordered after its earlier accesses) and poisoned.
fn copy_in(c: &mut Ctx<'_>, lane: usize, chunks: Vec<Chunk>, mbar: u32, bytes: u64) -> Result<(), Fault> {
    check_published(c, lane, mbar)?;
    let offs: Vec<u32> = chunks.iter().map(|ch| ch.off).collect();
    c.check_async(lane, &offs, true)?;
    for &off in &offs {
        c.b.shared[off as usize..off as usize + 16].fill(POISON);
    }
    let id = c.b.next_op();
    let size = c.b.shared.len();
    let span = c.b.inflight.add(c.w.group_pc, c.thread_of(lane), true, &offs, size);
    c.issue(lane, id, vec![span], Work::Copy(Copy { chunks, mbar, bytes }), true)
}

/// Completes a copy into shared memory: its bytes land (written by the
/// block's asynchronous unit, which knows what the issuer knew at the
/// issue), then its transaction bytes and the unit's clock reach the
/// mbarrier.
pub(super) fn complete_copy(s: &mut Side<'_>, op: &AsyncOp, copy: &Copy) -> Result<(), String> {
    let agent = s.b.agent;
    s.clocks.acquire(agent, &op.clock);
    let mut hint = 0;
    for ch in &copy.chunks {
        // Sixteen bytes straight into shared memory: copies of a constant
        // length, not calls to memmove.
        let mut buf = [0u8; 16];
        if ch.len > 0 {
            let (at, len) = (usize::from(ch.at), usize::from(ch.len));
            let k = s
                .mem
                .locate(ch.src, len as u64, &mut hint)
                .map_err(|f| f.describe("asynchronous copy source read", ch.src, len))?;
            let src = s.mem.bytes(k, ch.src, len);
            match <&[u8; 16]>::try_from(src) {
                Ok(whole) => buf = *whole,
                Err(_) => buf[at..at + len].copy_from_slice(src),
            }
        }
        let off = ch.off as usize;
        let dst: &mut [u8; 16] = (&mut s.b.shared[off..off + 16]).try_into().expect("16 bytes");
        *dst = buf;
        s.b.shadow.record(s.clocks, agent, op.pc, off, 16, true);
    }
    let row = s.clocks.row(agent);
    let done = s.b.mbar_update(copy.mbar, |m| {
        m.collect(row);
        m.complete_tx(copy.bytes)
    });
    s.clocks.tick(agent);
    done.map(drop)
}

/// Completes a bulk copy to global memory: reads its shared source now,
/// as the block's asynchronous unit.
pub(super) fn complete_store(s: &mut Side<'_>, op: &AsyncOp, st: &Store) -> Result<(), String> {
    let agent = s.b.agent;
    s.b.shadow.record(s.clocks, agent, op.pc, st.src, st.len, false);
    s.clocks.tick(agent);
    let mut hint = 0;
    let k = s
        .mem
        .locate(st.dst, st.len as u64, &mut hint)
        .map_err(|f| f.describe("cp.async.bulk destination write", st.dst, st.len))?;
    let dst = s
        .mem
        .bytes_mut(k, st.dst, st.len)
        .map_err(|f| f.describe("cp.async.bulk destination write", st.dst, st.len))?;
    dst.copy_from_slice(&s.b.shared[st.src..st.src + st.len]);
    Ok(())
}

/// Non-tensor bulk copies, one per executing lane.
fn exec_bulk(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dst = values(c, &i.addrs[0])?;
    let src = values(c, &i.addrs[1])?;
    let size = c.src(&i.s[0])?;
    let bar = if i.sub == G2S { values(c, &i.addrs[2])? } else { [0; 32] };
    for l in lanes(c.exec) {
        let n = (size[l] & 0xFFFF_FFFF) as u32;
        if !n.is_multiple_of(16) {
            return Err(Fault::lane(
                l,
                format!("cp.async.bulk size {n} is not a multiple of 16"),
            ));
        }
        if i.sub == G2S {
            if !src[l].is_multiple_of(16) {
                return Err(Fault::lane(
                    l,
                    format!("cp.async.bulk source {:#x} is not 16-byte aligned", src[l]),
                ));
            }
            let (_, off) = shared_operand(c, l, dst[l], Space::Shared, n, 16, "cp.async.bulk destination")?;
            c.global_check(l, src[l], n as usize, false, "cp.async.bulk source read")?;
            let b = mbar_at_shared(c, l, bar[l])?;
            let chunks = (0..n / 16)
                .map(|k| Chunk {
                    off: (off as u32) + 16 * k,
                    src: src[l] + u64::from(16 * k),
                    at: 0,
                    len: 16,
                })
                .collect();
            copy_in(c, l, chunks, b, u64::from(n))?;
        } else {
            if !dst[l].is_multiple_of(16) {
                return Err(Fault::lane(
                    l,
                    format!("cp.async.bulk destination {:#x} is not 16-byte aligned", dst[l]),
                ));
            }
            let (_, off) = shared_operand(c, l, src[l], Space::Shared, n, 16, "cp.async.bulk source")?;
            c.global_check(l, dst[l], n as usize, true, "cp.async.bulk destination write")?;
            c.global_write(l, dst[l], &vec![POISON; n as usize], "cp.async.bulk destination write")?;
            let offs: Vec<u32> = (0..n / 16).map(|k| off as u32 + 16 * k).collect();
            c.check_async(l, &offs, false)?;
            let id = c.b.next_op();
            let size = c.b.shared.len();
            let span = c.b.inflight.add(c.w.group_pc, c.thread_of(l), false, &offs, size);
            let store = Store {
                src: off,
                dst: dst[l],
                len: n as usize,
                group: None,
            };
            c.issue(l, id, vec![span], Work::Store(store), false)?;
        }
    }
    Ok(Flow::Next)
}

fn mbar_at_shared(c: &mut Ctx<'_>, lane: usize, v: u64) -> Result<u32, Fault> {
    Ok(shared_operand(c, lane, v, Space::Shared, 8, 8, "mbarrier")?.0)
}

/// Reads the tensor map at a generic address (parameter space, global
/// memory or shared memory).
fn read_map(c: &mut Ctx<'_>, lane: usize, addr: u64) -> Result<TensorMap2d, Fault> {
    if !addr.is_multiple_of(64) {
        return Err(Fault::lane(
            lane,
            format!("the tensor map address {addr:#x} is not 64-byte aligned"),
        ));
    }
    let mut bytes = [0u8; 128];
    for half in 0..2 {
        let a = addr + 64 * half as u64;
        let loc = super::mem::locate(c, Space::Generic, lane, a, 64, "tensor map read")?;
        super::mem::read(
            c,
            lane,
            loc,
            &mut bytes[64 * half..64 * half + 64],
            Check::Plain,
            "tensor map read",
        )?;
    }
    let map = TensorMap2d::decode(&bytes).ok_or_else(|| {
        Fault::lane(
            lane,
            format!(
                "the 128 bytes at {addr:#x} are not an emulator tensor map (build it with nvfp4_dsl::emu::TensorMap2d::encode)"
            ),
        )
    })?;
    map.validate().map_err(|m| Fault::lane(lane, m))?;
    Ok(map)
}

/// `cp.async.bulk.tensor.2d` global -> shared, one copy per executing
/// lane: the box at `{c0, c1}` with out-of-bounds bytes zero, written with
/// the map's swizzle, then `complete_tx` of the full box on the mbarrier.
fn exec_tensor(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dst = values(c, &i.addrs[0])?;
    let map_at = values(c, &i.addrs[1])?;
    let bar = values(c, &i.addrs[2])?;
    let c0 = c.src(&i.v[0])?;
    let c1 = c.src(&i.v[1])?;
    for l in lanes(c.exec) {
        let map = read_map(c, l, map_at[l])?;
        let (x0, y0) = (i64::from(c0[l] as u32 as i32), i64::from(c1[l] as u32 as i32));
        let (bw, bh) = (map.box_bytes, map.box_rows);
        let total = bw * bh;
        let align = if map.swizzle == 128 { 1024 } else { 128 };
        let d = (dst[l] & 0xFFFF_FFFF) as u32;
        if !d.is_multiple_of(align) {
            return Err(Fault::lane(
                l,
                format!(
                    "tensor copy destination {d:#x} is not {align}-byte aligned{}",
                    if align == 1024 { " (128-byte swizzle)" } else { "" }
                ),
            ));
        }
        let mut chunks = Vec::with_capacity((total / 16) as usize);
        for r in 0..bh {
            let y = y0 + i64::from(r);
            for chunk in 0..bw / 16 {
                let lin = d + r * bw + chunk * 16;
                let a = swizzle(lin, u32::from(map.swizzle));
                let off = c.shared_at(l, u64::from(a), 16, "tensor copy write")? as u32;
                let x = x0 + i64::from(chunk * 16);
                let (lo, hi) = (x.max(0), (x + 16).min(map.row_bytes as i64));
                let mut ch = Chunk {
                    off,
                    src: 0,
                    at: 0,
                    len: 0,
                };
                if (0..map.rows as i64).contains(&y) && lo < hi {
                    ch.src = map.base + y as u64 * map.row_stride + lo as u64;
                    ch.at = (lo - x) as u8;
                    ch.len = (hi - lo) as u8;
                    c.global_check(l, ch.src, usize::from(ch.len), false, "tensor copy read")?;
                }
                chunks.push(ch);
            }
        }
        let b = mbar_at_shared(c, l, bar[l])?;
        copy_in(c, l, chunks, b, u64::from(total))?;
    }
    Ok(Flow::Next)
}
