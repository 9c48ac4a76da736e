//! `setmaxnreg.{inc,dec}.sync.aligned.u32 N` (sm_90a): warps move
//! registers through their block's pool. Every warp starts with
//! `Env::start_registers` a thread and the pool empty; a decrease puts
//! what the warp gives up into the pool, an increase takes what it asks
//! for, and blocks (PTX ISA: "until enough registers are available in the
//! CTA's register pool") while the pool holds less. So an increase that
//! only a decrease after it in program order could satisfy (a producer
//! warpgroup that waits for its consumers before it gives its registers
//! up), or increases that ask for more than the decreases give, hang on
//! the GPU; here the blocked warps show in the deadlock report. A warp
//! that exits keeps its registers out of the pool (the ISA moves them
//! only through `setmaxnreg`). In a kernel without `.maxnreg` or both
//! `.maxntid` and `.minnctapersm` ptxas drops every `setmaxnreg` (C7508),
//! and so does the emulator, after checking the operand and the warp's
//! convergence. The register file itself is not modelled: a program may
//! use any register after any count.

use super::tcgen05::whole_warp;
use super::wgmma::imm;
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::inst::{Fault, Flow, Inst, Mods, Ty};
use crate::emu::state::{Block, REG_WAIT, Warp, lanes, register_waiters};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

/// `Inst::sub` of a decrease (an increase is 0).
const DEC: u8 = 1;

/// `setmaxnreg.{inc,dec}.sync.aligned.u32 N`.
pub(super) fn setmaxnreg(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let Some(action) = m.take_any(&["inc", "dec"]) else {
        return Err("expected `setmaxnreg.inc` or `setmaxnreg.dec`".into());
    };
    let (sync, aligned) = (m.take("sync"), m.take("aligned"));
    if !(sync && aligned) {
        return Err("`setmaxnreg` needs `.sync.aligned`".into());
    }
    if m.ty()? != Ty::U32 {
        return Err("`setmaxnreg` needs `.u32`".into());
    }
    d.count(1)?;
    let n = imm(
        d,
        0,
        |v| v % 8 == 0 && (24..=256).contains(&v),
        "the register count of setmaxnreg must be an immediate multiple of 8 in 24..=256",
    )?;
    let mut i = Inst::new(exec_setmaxnreg);
    i.sub = action as u8;
    i.imm = n as u64;
    Ok(i)
}

fn exec_setmaxnreg(c: &mut Ctx<'_>, i: &Inst) -> X {
    whole_warp(c, "setmaxnreg")?;
    if c.env.start_registers.is_none() {
        return Ok(Flow::Next);
    }
    let (want, held) = (i.imm as u32, c.w.registers);
    if i.sub == DEC {
        if want > held {
            return Err(Fault::new(format!(
                "setmaxnreg.dec to {want} registers a thread, more than the {held} this warp holds: a decrease gives registers back to the block's pool; `setmaxnreg_inc` asks for more"
            )));
        }
        c.b.register_pool += (held - want) * 32;
        c.b.registers_freed |= held > want;
        c.w.registers = want;
        return Ok(Flow::Next);
    }
    if want < held {
        return Err(Fault::new(format!(
            "setmaxnreg.inc to {want} registers a thread, fewer than the {held} this warp holds: an increase takes registers from the block's pool; `setmaxnreg_dec` gives some back"
        )));
    }
    if take_registers(&mut c.b.register_pool, &mut c.w.registers, want) {
        return Ok(Flow::Next);
    }
    c.w.registers_wanted = want;
    c.park(c.exec, REG_WAIT);
    Ok(Flow::Jump)
}

/// Lets warps blocked in `setmaxnreg.inc` whose registers the pool now
/// holds go on, in warp order.
pub(crate) fn release_registers(block: &mut Block, warps: &mut [Warp]) {
    block.registers_freed = false;
    for w in warps {
        let blocked = register_waiters(w);
        if blocked == 0 {
            continue;
        }
        if !take_registers(&mut block.register_pool, &mut w.registers, w.registers_wanted) {
            continue;
        }
        w.waiting &= !blocked;
        for l in lanes(blocked) {
            w.pc[l] += 1;
        }
        w.converge(blocked);
        w.reschedule();
    }
}

/// Raises a warp that holds `registers` a thread to `want` with registers
/// from the block's `pool`, if it holds enough for the warp's 32 threads.
fn take_registers(pool: &mut u32, registers: &mut u32, want: u32) -> bool {
    let need = (want - *registers) * 32;
    if *pool < need {
        return false;
    }
    *pool -= need;
    *registers = want;
    true
}
