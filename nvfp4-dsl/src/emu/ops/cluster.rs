//! Thread-block clusters (sm_90): `mapa` and the cluster barrier
//! (`barrier.cluster.arrive`/`wait`). Loads and stores through mapped
//! addresses are `ld`/`st.shared::cluster` (in `mem`).
//!
//! A shared::cluster address names the block whose shared memory it is in
//! its bits 24 and up (the rank plus one; 0 for the executing block) and
//! the shared::cta address in that block below; see `layout::CLUSTER_SHIFT`.
//!
//! The cluster barrier completes a phase when every thread of the cluster
//! that has not exited has arrived (an exit counts as the arrivals of the
//! phases to come, as for `bar.sync`); `barrier.cluster.wait` waits for the
//! phase of the thread's last `barrier.cluster.arrive`. Arriving twice
//! without waiting, and waiting without arriving, are errors.
//!
//! For the race check an arrive releases the thread's clock (the default
//! `.release`) and the wait acquires what the phase's arrivals released;
//! `.relaxed` releases nothing, but what the thread's last
//! `fence.acq_rel`/`fence.sc` of cluster scope or wider released (a fence
//! and a relaxed arrive are a release pattern in the PTX memory model).

use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Space, Ty};
use crate::emu::layout::{CLUSTER_SHIFT, SHARED_WINDOW};
use crate::emu::state::{CLUSTER_WAIT, lanes};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

/// `mapa{.shared::cluster}.u32/.u64 d, a, rank`.
pub(super) fn mapa(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let space = if m.take("shared::cluster") {
        Space::Shared
    } else {
        Space::Generic
    };
    let ty = m.ty()?;
    if !matches!(ty, Ty::U32 | Ty::U64) {
        return Err("`mapa` needs .u32 or .u64".into());
    }
    if space == Space::Generic && ty != Ty::U64 {
        return Err("generic `mapa` needs .u64 (generic addresses are 64-bit)".into());
    }
    d.count(3)?;
    let mut i = Inst::new(exec_mapa);
    i.space = space;
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, Ty::U32)?;
    Ok(i)
}

fn exec_mapa(c: &mut Ctx<'_>, i: &Inst) -> X {
    let a = c.src(&i.s[0])?;
    let rank = c.src(&i.s[1])?;
    let size = c.env.cluster_size;
    let low = (1u64 << CLUSTER_SHIFT) - 1;
    let mut d = [0u64; 32];
    for l in lanes(c.exec) {
        let r = rank[l] & 0xFFFF_FFFF;
        if r >= u64::from(size) {
            return Err(Fault::lane(
                l,
                format!("mapa to rank {r}: the cluster has {size} blocks (ranks 0..{size})"),
            ));
        }
        let tag = (r + 1) << CLUSTER_SHIFT;
        d[l] = if i.space == Space::Generic {
            if !(SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&a[l]) {
                return Err(Fault::lane(
                    l,
                    format!("mapa: generic address {:#x} is not in shared memory", a[l]),
                ));
            }
            SHARED_WINDOW + (tag | ((a[l] - SHARED_WINDOW) & low))
        } else {
            tag | (a[l] & low)
        };
    }
    c.write(&i.d[0], &d, Ext::Zero)?;
    Ok(Flow::Next)
}

const ARRIVE: u8 = 0;
const WAIT: u8 = 1;
const ARRIVE_RELAXED: u8 = 2;

/// `barrier.cluster.arrive{.release|.relaxed}{.aligned}`,
/// `barrier.cluster.wait{.acquire}{.aligned}`.
pub(super) fn barrier_cluster(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let mut i = Inst::new(exec_barrier_cluster);
    if m.take("arrive") {
        i.sub = if m.take_any(&["release", "relaxed"]) == Some(1) {
            ARRIVE_RELAXED
        } else {
            ARRIVE
        };
    } else if m.take("wait") {
        i.sub = WAIT;
        m.take("acquire");
    } else {
        return Err("expected `barrier.cluster.arrive` or `barrier.cluster.wait`".into());
    }
    // `.aligned` is checked for every instruction (`synccheck`).
    m.take("aligned");
    d.count(0)?;
    Ok(i)
}

fn exec_barrier_cluster(c: &mut Ctx<'_>, i: &Inst) -> X {
    let phase = c.cl.phase;
    if i.sub != WAIT {
        if let Some(l) = lanes(c.exec & c.w.cl_armed).next() {
            return Err(Fault::lane(
                l,
                "barrier.cluster.arrive twice without a barrier.cluster.wait in between",
            ));
        }
        for l in lanes(c.exec) {
            c.tc_release_check(l)?;
            c.w.cl_phase[l] = phase;
            let t = c.thread_index(l);
            for b in
                c.b.mbars
                    .iter_mut()
                    .filter(|b| b.init_thread == t && b.published.is_some())
            {
                b.cluster_published.get_or_insert(phase);
            }
            let cl = &mut *c.cl;
            if i.sub == ARRIVE {
                cl.clocks.release(t, &mut cl.arrivals);
            } else {
                cl.clocks.release_fenced(t, &mut cl.arrivals);
            }
        }
        c.w.cl_armed |= c.exec;
        c.cl.arrived += c.exec.count_ones();
        c.cl.complete_if_due();
        return Ok(Flow::Next);
    }
    if let Some(l) = lanes(c.exec & !c.w.cl_armed).next() {
        return Err(Fault::lane(
            l,
            "barrier.cluster.wait without a preceding barrier.cluster.arrive",
        ));
    }
    let blocked = lanes(c.exec)
        .filter(|&l| c.w.cl_phase[l] == phase)
        .fold(0u32, |m, l| m | 1 << l);
    let pc = c.w.group_pc;
    for l in lanes(c.exec & !blocked) {
        let t = c.thread_index(l);
        let cl = &mut *c.cl;
        cl.clocks.acquire(t, &cl.done);
        c.w.tc_synced[l] = pc + 1;
    }
    c.w.cl_armed &= !(c.exec & !blocked);
    c.w.cl_waited |= c.exec & !blocked;
    if blocked == 0 {
        return Ok(Flow::Next);
    }
    c.park(blocked, CLUSTER_WAIT);
    Ok(Flow::Yield)
}
