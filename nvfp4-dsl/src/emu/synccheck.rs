//! Barrier divergence, as compute-sanitizer's synccheck reports it: an
//! `.aligned` instruction (`bar.sync` is `barrier.sync.aligned`) executed
//! by some lanes of a warp while others that have not exited are elsewhere
//! or have a false guard; a CTA barrier without a thread count reached at
//! two different instructions in one round. (A thread that exits while
//! others wait for it completes their barrier, as on the H100: `if i >= n
//! { return; }` before a barrier is legal. `bar.warp.sync` with a mask
//! that excludes an executing lane, and a thread count that does not match
//! the barrier's round, are checked where they execute, in `ops::control`.)
//!
//! Under independent thread scheduling a warp that diverged is converged
//! again only where the program reconverges it, so an `.aligned`
//! instruction that its lanes reach in separate groups is divergent too.
//! CTA barriers are the exception: on sm_70 and later they count threads,
//! and `.aligned` on a barrier asks that every thread execute the same
//! barrier instruction, not that a warp arrive as one group; so its lanes
//! may arrive separately (a barrier reached at two instructions is still
//! reported, and the lanes it releases together go on as one group).

use super::ctx::Ctx;
use super::inst::{Fault, Flow, Inst};
use super::state::lanes;

/// Whether opcode `op` is `.aligned`: it says so, or it is `bar.sync` /
/// `bar.arrive` (PTX: `bar{.cta}.sync` is `barrier{.cta}.sync.aligned`).
pub(super) fn is_aligned(op: &str) -> bool {
    let mut parts = op.split('.');
    let name = parts.next().unwrap_or("");
    let mods: Vec<&str> = parts.collect();
    mods.contains(&"aligned") || (name == "bar" && !mods.contains(&"warp"))
}

/// Whether opcode `op` is a CTA barrier (`bar{.cta}.sync`/`arrive`,
/// `barrier{.cta}.*`), not `bar.warp.sync` or a cluster barrier.
pub(super) fn is_cta_barrier(op: &str) -> bool {
    let mut parts = op.split('.');
    let name = parts.next().unwrap_or("");
    let mods: Vec<&str> = parts.collect();
    (name == "bar" && !mods.contains(&"warp")) || (name == "barrier" && !mods.contains(&"cluster"))
}

/// Runs an `.aligned` CTA barrier: as [`exec_aligned`], but under
/// independent thread scheduling the lanes of a warp may arrive in
/// separate groups (only a lane at it with a false guard is divergent).
pub(super) fn exec_aligned_barrier(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    if c.w.its.is_none() {
        return exec_aligned(c, i);
    }
    guard_false(c)?;
    (i.aligned)(c, i)
}

/// Runs an `.aligned` instruction once every lane of its warp that has not
/// exited executes it together.
pub(super) fn exec_aligned(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let w = &*c.w;
    let live = w.exists & !w.exited;
    if let Some(l) = lanes(live & !w.group).next() {
        let e = c.env.entry;
        let pc = w.pc[l] as usize;
        if w.its.is_some() {
            let at = if w.pc[l] == w.group_pc {
                "reaches it separately".to_string()
            } else {
                format!("is at line {} `{}`", e.lines[pc], e.texts[pc])
            };
            return Err(Fault::new(format!(
                "divergent warp: this .aligned instruction is executed by lanes {:#010x} of the warp while lane {l} (thread ({},{},{})) {at}: the warp diverged at a branch and nothing reconverged it (under independent thread scheduling a warp reconverges only at bar.warp.sync, a .sync warp collective or a CTA barrier); move it out of a branch that only some lanes take, or reconverge the warp first with sync_warp() (bar.warp.sync)",
                w.group, w.tid[0][l], w.tid[1][l], w.tid[2][l]
            )));
        }
        return Err(Fault::new(format!(
            "divergent warp: this .aligned instruction is executed by lanes {:#010x} of the warp while lane {l} (thread ({},{},{})), which has not exited, is at line {} `{}`; every lane of the warp must execute it together: the usual cause is a barrier or another collective inside a branch that only some threads take (`if t < n {{ sync_threads(); }}`); move it out of the branch, where every thread reaches it",
            w.group, w.tid[0][l], w.tid[1][l], w.tid[2][l], e.lines[pc], e.texts[pc]
        )));
    }
    guard_false(c)?;
    (i.aligned)(c, i)
}

/// Fails if a lane of the group is at the `.aligned` instruction with its
/// guard predicate false.
fn guard_false(c: &Ctx<'_>) -> Result<(), Fault> {
    match lanes(c.w.group & !c.exec).next() {
        Some(l) => Err(Fault::new(format!(
            "divergent warp: this .aligned instruction is executed by lanes {:#010x} of the warp, and lane {l} is at it with its guard predicate false; every lane of the warp must execute it together",
            c.exec
        ))),
        None => Ok(()),
    }
}

/// Fails if barrier `id`'s round without a thread count, which threads
/// already wait at from another instruction, is reached here (at `pc`).
pub(super) fn same_barrier(c: &Ctx<'_>, id: usize, pc: u32) -> Result<(), Fault> {
    let bar = &c.b.bars[id];
    if bar.arrived == 0 || bar.count != 0 || bar.pc == pc {
        return Ok(());
    }
    let e = c.env.entry;
    Err(Fault::new(format!(
        "divergent threads in block: {} threads wait at barrier {id} at line {} `{}`, and this thread reaches barrier {id} at another instruction; a barrier without a thread count must be reached at one instruction by every thread of the block that has not exited",
        bar.arrived, e.lines[bar.pc as usize], e.texts[bar.pc as usize]
    )))
}
