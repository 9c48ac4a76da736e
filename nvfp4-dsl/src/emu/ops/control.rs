//! Control flow and synchronisation: `bra`, `ret`/`exit`, CTA barriers
//! (`bar.sync`, `bar.arrive`, `barrier.sync`), `bar.warp.sync`, and the
//! fences. Barriers move the threads' vector clocks (`race`); of the
//! fences only `fence.proxy.async` is recorded (the race checks ask for it
//! between generic writes and async-proxy reads, of shared memory and of
//! global memory), the others order nothing in an emulator that runs one
//! instruction at a time.

use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::gorder::Scope;
use crate::emu::inst::{Fault, Flow, Inst, Mods, Operand, Ty};
use crate::emu::state::{WARP_SYNC, lanes};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

pub(super) fn bra(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    m.take("uni");
    d.count(1)?;
    let mut i = Inst::new(exec_bra);
    i.imm = u64::from(d.label(0)?);
    Ok(i)
}

fn exec_bra(c: &mut Ctx<'_>, i: &Inst) -> X {
    c.branch(c.exec, i.imm as u32);
    Ok(Flow::Jump)
}

pub(super) fn ret(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    m.take("uni");
    d.count(0)?;
    Ok(Inst::new(exec_exit))
}

fn exec_exit(c: &mut Ctx<'_>, _: &Inst) -> X {
    c.check_exit()?;
    c.exit();
    Ok(Flow::Jump)
}

const SYNC: u8 = 0;
const ARRIVE: u8 = 1;

/// `bar{.cta}.sync a{, b}`, `bar{.cta}.arrive a, b`, `bar.warp.sync m`.
pub(super) fn bar(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if m.take("warp") {
        if !m.take("sync") {
            return Err("expected `bar.warp.sync`".into());
        }
        d.count(1)?;
        let mut i = Inst::new(exec_warp_sync);
        i.s[0] = d.src(0, Ty::B32)?;
        return Ok(i);
    }
    cta_barrier(d, m)
}

/// `barrier{.cta}.sync{.aligned} a{, b}`, `barrier{.cta}.arrive{.aligned} a, b`,
/// and the cluster barrier (`barrier.cluster.*`, in `cluster`).
pub(super) fn barrier(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if m.take("cluster") {
        return super::cluster::barrier_cluster(d, m);
    }
    m.take("aligned");
    cta_barrier(d, m)
}

fn cta_barrier(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    m.take("cta");
    let kind = if m.take("sync") {
        SYNC
    } else if m.take("arrive") {
        ARRIVE
    } else if m.take("red") {
        return Err("`bar.red` is not supported by the emulator".into());
    } else {
        return Err("expected `.sync` or `.arrive`".into());
    };
    m.take("aligned");
    if kind == SYNC {
        d.count_in(1, 2)?;
    } else {
        d.count(2)?;
    }
    let mut i = Inst::new(exec_bar);
    i.sub = kind;
    i.s[0] = d.src(0, Ty::U32)?;
    if d.args.len() == 2 {
        i.s[1] = d.src(1, Ty::U32)?;
    }
    Ok(i)
}

/// The value of a per-lane operand that must agree across the executing
/// lanes.
pub(super) fn uniform(c: &Ctx<'_>, op: &Operand, what: &str) -> Result<u64, Fault> {
    let v = c.src(op)?;
    let first = c.exec.trailing_zeros() as usize;
    for l in lanes(c.exec) {
        if v[l] != v[first] {
            return Err(Fault::lane(
                l,
                format!("{what} differs between lanes {first} ({}) and {l} ({})", v[first], v[l]),
            ));
        }
    }
    Ok(v[first])
}

/// CTA barriers follow the hardware: a barrier without a thread count
/// completes when every thread of the block that has not exited has
/// arrived (an exit can complete it); one with a count when that many
/// threads have arrived.
fn exec_bar(c: &mut Ctx<'_>, i: &Inst) -> X {
    let id = uniform(c, &i.s[0], "the barrier number")?;
    if id > 15 {
        return Err(Fault::new(format!("barrier number {id} is not in 0..=15")));
    }
    let threads = c.b.threads;
    let count = if i.s[1] == Operand::None {
        0
    } else {
        let n = uniform(c, &i.s[1], "the barrier thread count")?;
        if n == 0 || n % 32 != 0 || n > u64::from(threads.div_ceil(32) * 32) {
            return Err(Fault::new(format!(
                "barrier thread count {n} must be a nonzero multiple of 32 and at most the block's {threads} threads"
            )));
        }
        n as u32
    };
    for l in lanes(c.exec) {
        c.tc_release_check(l)?;
    }
    let live = c.b.live;
    let bar = &mut c.b.bars[id as usize];
    if bar.arrived != 0 && bar.count != count {
        let say = |n: u32| {
            if n == 0 {
                "no count (all threads)".to_string()
            } else {
                format!("a count of {n} threads")
            }
        };
        return Err(Fault::new(format!(
            "barrier {id} is in use with {}, this instruction says {}",
            say(bar.count),
            say(count)
        )));
    }
    if count == 0 {
        crate::emu::synccheck::same_barrier(c, id as usize, c.w.group_pc)?;
    }
    let bar = &mut c.b.bars[id as usize];
    if bar.arrived == 0 {
        bar.pc = c.w.group_pc;
    }
    bar.count = count;
    bar.arrived += c.exec.count_ones();
    let expected = if count == 0 { live } else { count };
    if bar.arrived > expected {
        return Err(Fault::new(format!(
            "{} threads arrived at barrier {id}, more than its count of {expected}",
            bar.arrived
        )));
    }
    for l in lanes(c.exec) {
        let t = c.thread_index(l);
        c.cl.clocks.release(t, &mut c.b.bars[id as usize].clocks);
    }
    if c.b.bars[id as usize].arrived == expected {
        c.b.complete_barrier(id as usize, &c.cl.clocks);
    }
    if i.sub == SYNC {
        c.wait(id as u8);
        Ok(Flow::Yield)
    } else {
        Ok(Flow::Next)
    }
}

/// `bar.warp.sync`: the executing lanes wait until every existing lane of
/// the member mask has executed a `bar.warp.sync` with the same mask.
fn exec_warp_sync(c: &mut Ctx<'_>, i: &Inst) -> X {
    let mask = uniform(c, &i.s[0], "the bar.warp.sync member mask")? as u32;
    if c.exec & !mask != 0 {
        let l = (c.exec & !mask).trailing_zeros() as usize;
        return Err(Fault::lane(
            l,
            format!("lane {l} executes bar.warp.sync but is not in its member mask {mask:#010x}"),
        ));
    }
    let required = mask & c.w.exists;
    if required & c.w.exited != 0 {
        let l = (required & c.w.exited).trailing_zeros();
        return Err(Fault::new(format!(
            "bar.warp.sync with member mask {mask:#010x} can never complete: lane {l} has exited"
        )));
    }
    if c.exec == required {
        sync_lanes(c, required);
        return Ok(Flow::Next);
    }
    for l in lanes(c.exec) {
        c.w.wsync_mask[l] = mask;
    }
    c.wait(WARP_SYNC);
    let w = &mut *c.w;
    let arrived = lanes(w.waiting)
        .filter(|&l| w.bar_of[l] == WARP_SYNC)
        .fold(0u32, |m, l| m | 1 << l);
    if arrived & required == required {
        for l in lanes(required) {
            if w.wsync_mask[l] != mask {
                return Err(Fault::lane(
                    l,
                    format!(
                        "inconsistent bar.warp.sync masks: lane {l} waits with {:#010x}, others with {mask:#010x}",
                        w.wsync_mask[l]
                    ),
                ));
            }
            w.waiting &= !(1 << l);
            w.pc[l] += 1;
        }
        sync_lanes(c, required);
    }
    Ok(Flow::Jump)
}

/// The lanes `mask` of the executing warp synchronise with each other
/// (and reconverge).
pub(super) fn sync_lanes(c: &mut Ctx<'_>, mask: u32) {
    c.w.converge(mask);
    let (rank, threads, w) = (c.b.rank, c.b.threads, c.w.index);
    let threads: Vec<u32> = lanes(mask).map(|l| rank * threads + w * 32 + l as u32).collect();
    c.cl.clocks.sync_group(&threads);
}

/// `fence.*` and `membar.*`: an emulator that runs one instruction at a
/// time is always ordered, but `fence.proxy.async` is recorded (over shared
/// memory: without a state space or with `.shared::cta`/`::cluster`; over
/// global memory: without one or with `.global`), and so is a fence that
/// publishes the executing thread's mbarrier inits (`fence.mbarrier_init`,
/// that `fence.proxy.async` of shared memory, or a thread fence of cluster
/// scope or wider; see `mbarrier::check_published`).
pub(super) fn fence(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let init = m.take("mbarrier_init");
    let is_proxy = m.take("proxy");
    let is_async = is_proxy && m.take("async");
    let global = m.rest().contains(&"global");
    let shared = m.rest().iter().any(|p| p.starts_with("shared"));
    let proxy = is_async && !global;
    let proxy_global = is_async && !shared;
    let wide = !is_proxy && m.rest().iter().any(|p| matches!(*p, "cluster" | "gpu" | "sys" | "gl"));
    // A fence that a relaxed cluster arrive after it turns into a release
    // (`.cta` scope does not reach the other blocks of the cluster).
    let ordering = m.take_any(&["acq_rel", "sc"]).is_some();
    let scope = m.take_any(&["cluster", "gpu", "sys"]);
    let release = ordering && scope.is_some();
    // Of gpu scope, it also orders global memory between blocks (`gorder`).
    let gpu = ordering && scope.is_some_and(|s| s > 0);
    m.drop_where(|_| true);
    d.count(0)?;
    if !(init || proxy || proxy_global || wide) {
        return Ok(Inst::new(exec_nop));
    }
    let mut i = Inst::new(exec_fence);
    if proxy {
        i.flags |= F_PROXY;
    }
    if proxy_global {
        i.flags |= F_PROXY_GLOBAL;
    }
    if init || proxy || wide {
        i.flags |= F_PUBLISH;
    }
    if release {
        i.flags |= F_RELEASE;
    }
    if gpu {
        i.flags |= F_GPU;
    }
    Ok(i)
}

/// `flags` bit of a fence: `fence.proxy.async` over shared memory.
const F_PROXY: u32 = 1;

/// `flags` bit of a fence: `fence.acq_rel`/`fence.sc` of cluster scope or
/// wider, whose release the executing threads' next relaxed cluster
/// arrive carries.
const F_RELEASE: u32 = 2;

/// `flags` bit of a fence: of gpu (or sys) scope.
const F_GPU: u32 = 4;

/// `flags` bit of a fence: `fence.proxy.async` over global memory.
const F_PROXY_GLOBAL: u32 = 8;

/// `flags` bit of a fence that publishes the executing threads' mbarrier
/// inits.
const F_PUBLISH: u32 = 16;

/// A fence that publishes the executing threads' mbarrier inits; for
/// `fence.proxy.async`, their generic writes so far (of shared or global
/// memory, as its state space says) may also be read by the async proxy
/// (once this fence is ordered before it); for a release fence of cluster
/// scope or wider, what they know is released by their next relaxed
/// cluster arrive.
fn exec_fence(c: &mut Ctx<'_>, i: &Inst) -> X {
    let pc = c.w.group_pc;
    for l in lanes(c.exec) {
        let t = c.thread_index(l);
        if i.flags & F_PROXY != 0 {
            c.cl.clocks.proxy_fence(t, pc);
        }
        if i.flags & F_PROXY_GLOBAL != 0 {
            c.mem.order.proxy_fence(&c.cl.clocks, t, pc);
        }
        if i.flags & F_RELEASE != 0 {
            let scope = if i.flags & F_GPU != 0 {
                Scope::Gpu
            } else {
                Scope::Cluster
            };
            c.mem.order.fence(&mut c.cl.clocks, t, scope);
            c.cl.clocks.release_fence(t);
        }
        if i.flags & F_PUBLISH == 0 {
            continue;
        }
        let own = c.cl.clocks.own(t);
        for b in
            c.b.mbars
                .iter_mut()
                .filter(|b| b.init_thread == t && b.published.is_none())
        {
            b.published = Some((own, pc));
        }
    }
    Ok(Flow::Next)
}

/// `griddepcontrol.launch_dependents` and `griddepcontrol.wait`. The
/// emulator runs launches one after another; a programmatic dependent's
/// global accesses before its thread's wait are checked against what its
/// predecessor touched (see `pdl`).
pub(super) fn griddepcontrol(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let exec = match m.take_any(&["launch_dependents", "wait"]) {
        Some(1) => exec_griddep_wait,
        Some(_) => exec_launch_dependents,
        None => return Err("expected `.launch_dependents` or `.wait`".into()),
    };
    d.count(0)?;
    Ok(Inst::new(exec))
}

/// The predecessor is complete and its memory visible to these threads.
fn exec_griddep_wait(c: &mut Ctx<'_>, _: &Inst) -> X {
    c.w.pdl_waited |= c.exec;
    c.b.trigger.waited = true;
    if c.cl.clocks.on() {
        for l in lanes(c.exec) {
            let t = c.thread_index(l);
            let own = c.cl.clocks.own(t);
            c.cl.pdl_waits.push((t, own));
        }
    }
    Ok(Flow::Next)
}

/// The block lets the launch's dependents start: before its predecessor
/// is complete if a thread that has not waited triggers.
fn exec_launch_dependents(c: &mut Ctx<'_>, _: &Inst) -> X {
    if c.exec & !c.w.pdl_waited != 0 {
        c.b.trigger.early = true;
    }
    Ok(Flow::Next)
}

pub(super) fn nanosleep(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    m.take("u32");
    d.count(1)?;
    let mut i = Inst::new(exec_nop);
    i.s[0] = d.src(0, Ty::U32)?;
    Ok(i)
}

fn exec_nop(_: &mut Ctx<'_>, _: &Inst) -> X {
    Ok(Flow::Next)
}

pub(super) fn trap(d: &Dec<'_>, _: &mut Mods<'_>) -> R {
    d.count(0)?;
    Ok(Inst::new(exec_trap))
}

/// A kernel's failed assertion (its `trap` noted with the assertion's
/// source by the compiler) names the assertion, a failed bounds check of a
/// debug build what it checked; another `trap` itself.
fn exec_trap(c: &mut Ctx<'_>, _: &Inst) -> X {
    let text = &c.env.entry.texts[c.w.group_pc as usize];
    let failed = |prefix| text.split_once(prefix).map(|(_, note): (&str, &str)| note.trim());
    Err(Fault::new(
        if let Some(source) = failed(nvfp4_dsl_compiler::ASSERTION_FAILED) {
            format!("assertion failed: `{source}`")
        } else if let Some(check) = failed(nvfp4_dsl_compiler::INDEX_OUT_OF_BOUNDS) {
            format!("index out of bounds: {check}")
        } else if let Some(check) = failed(nvfp4_dsl_compiler::SLICE_OUT_OF_RANGE) {
            format!("slice range out of bounds: {check}")
        } else {
            "`trap` executed".to_string()
        },
    ))
}
