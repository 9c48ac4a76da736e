//! Barrier divergence, as compute-sanitizer's synccheck reports it: an
//! `.aligned` instruction (`bar.sync` is `barrier.sync.aligned`) executed
//! by some lanes of a warp while others that have not exited are elsewhere
//! or have a false guard; a CTA barrier without a thread count reached at
//! two different instructions in one round. (A thread that exits while
//! others wait for it completes their barrier, as on the H100: `if i >= n
//! { return; }` before a barrier is legal. `bar.warp.sync` with a mask
//! that excludes an executing lane, and a thread count that does not match
//! the barrier's round, are checked where they execute, in `ops::control`.)

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

/// Runs an `.aligned` instruction once every lane of its warp that has not
/// exited executes it together.
pub(super) fn exec_aligned(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let w = &*c.w;
    let live = w.exists & !w.exited;
    if let Some(l) = lanes(live & !w.group).next() {
        let e = c.env.entry;
        let pc = w.pc[l] as usize;
        return Err(Fault::new(format!(
            "divergent warp: this .aligned instruction is executed by lanes {:#010x} of the warp while lane {l} (thread ({},{},{})), which has not exited, is at line {} `{}`; every lane of the warp must execute it together (reconverge first, e.g. with bar.warp.sync)",
            w.group, w.tid[0][l], w.tid[1][l], w.tid[2][l], e.lines[pc], e.texts[pc]
        )));
    }
    if let Some(l) = lanes(w.group & !c.exec).next() {
        return Err(Fault::new(format!(
            "divergent warp: this .aligned instruction is executed by lanes {:#010x} of the warp, and lane {l} is at it with its guard predicate false; every lane of the warp must execute it together",
            c.exec
        )));
    }
    (i.aligned)(c, i)
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
