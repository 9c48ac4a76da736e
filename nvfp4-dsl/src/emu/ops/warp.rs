//! Warp-level operations: `shfl.sync`, `elect.sync`, `vote.sync`,
//! `redux.sync`, `activemask`.
//!
//! The `.sync` forms require every non-exited lane of the member mask to
//! execute the instruction with the same mask. By default the scheduler
//! runs the lanes at the lowest PC together, so converged code always
//! does, and anything else is reported as an inconsistent mask instead of
//! waiting. Under independent thread scheduling the executing lanes wait
//! for the other lanes of the mask, as the hardware's do, and the last to
//! arrive runs the instruction for all of them (which reconverges them).

use super::sx;
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::diag::statement_of;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Ty};
use crate::emu::parse::Arg;
use crate::emu::state::{COLLECTIVE_WAIT, lanes};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

/// Checks the member mask against the executing lanes; under independent
/// thread scheduling `None` when they wait for others of the mask.
fn members(c: &mut Ctx<'_>, op: &Operand, what: &str) -> Result<Option<u32>, Fault> {
    let v = c.src(op)?;
    let first = c.exec.trailing_zeros() as usize;
    let mask = v[first] as u32;
    let thread = |l: usize| {
        let (x, y, z) = c.thread_of(l);
        format!("({x},{y},{z})")
    };
    for l in lanes(c.exec) {
        if v[l] as u32 != mask {
            return Err(Fault::lane(
                l,
                format!(
                    "inconsistent {what} mask: lane {first} uses {mask:#010x}, lane {l} uses {:#010x}",
                    v[l] as u32
                ),
            ));
        }
    }
    if c.exec & !mask != 0 {
        let l = (c.exec & !mask).trailing_zeros() as usize;
        return Err(Fault::lane(
            l,
            format!("inconsistent {what} mask: lane {l} executes it but is not in the member mask {mask:#010x}"),
        ));
    }
    let missing = mask & c.live() & !c.exec;
    if missing != 0 && c.w.its.is_some() {
        return gather(c, mask, missing, what);
    }
    if missing != 0 {
        let l = missing.trailing_zeros() as usize;
        return Err(Fault::lane(
            first,
            format!(
                "inconsistent {what} mask: the member mask {mask:#010x} includes lane {l} (thread {}), which does not execute this instruction together with lanes {:#010x}: call it where every lane of the mask reaches it (outside the branch, with a neutral value for the lanes without data), or give it the mask of the lanes that do",
                thread(l),
                c.exec
            ),
        ));
    }
    Ok(Some(mask))
}

/// Independent thread scheduling: the executing lanes of a `.sync`
/// collective whose member mask has `missing` lanes elsewhere. If those
/// all wait at this instruction they join the group, which runs it;
/// otherwise the executing lanes wait for them.
fn gather(c: &mut Ctx<'_>, mask: u32, missing: u32, what: &str) -> Result<Option<u32>, Fault> {
    let pc = c.w.group_pc;
    let w = &mut *c.w;
    let waiting = lanes(w.waiting & missing)
        .filter(|&l| w.bar_of[l] == COLLECTIVE_WAIT)
        .fold(0u32, |m, l| m | 1 << l);
    for l in lanes(waiting) {
        if w.pc[l] != pc {
            let other = w.pc[l];
            return Err(Fault::lane(
                l,
                format!(
                    "lane {l} of the {what} member mask {mask:#010x} waits at another warp collective, at {}; the emulator runs a .sync collective only when every lane of its mask reaches the same instruction",
                    statement_of(c.env, other)
                ),
            )
            .citing(other));
        }
        if w.wsync_mask[l] != mask {
            return Err(Fault::lane(
                l,
                format!(
                    "inconsistent {what} mask: lane {l} waits with {:#010x}, lanes {:#010x} execute it with {mask:#010x}",
                    w.wsync_mask[l], c.exec
                ),
            ));
        }
    }
    if waiting != missing {
        for l in lanes(c.exec) {
            c.w.wsync_mask[l] = mask;
        }
        c.wait(COLLECTIVE_WAIT);
        return Ok(None);
    }
    w.waiting &= !waiting;
    w.group |= waiting;
    c.exec |= waiting;
    super::control::sync_lanes(c, mask & c.live());
    Ok(Some(mask))
}

const UP: u8 = 0;
const DOWN: u8 = 1;
const BFLY: u8 = 2;

pub(super) fn shfl(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if !m.take("sync") {
        return Err("`shfl` without `.sync` is not supported; use `shfl.sync`".into());
    }
    let mode = m
        .take_any(&["up", "down", "bfly", "idx"])
        .ok_or("`shfl.sync` needs .up, .down, .bfly or .idx")? as u8;
    if m.ty()? != Ty::B32 {
        return Err("`shfl.sync` moves .b32 values".into());
    }
    d.count(5)?;
    let mut i = Inst::new(exec_shfl);
    i.sub = mode;
    match d.arg(0)? {
        Arg::Pair(v, p) => {
            i.d[0] = d.dst_arg(v)?;
            i.d[1] = d.pred_dst_arg(p)?;
        }
        a => i.d[0] = d.dst_arg(a)?,
    }
    i.s[0] = d.src(1, Ty::B32)?;
    i.s[1] = d.src(2, Ty::U32)?;
    i.s[2] = d.src(3, Ty::U32)?;
    i.s[3] = d.src(4, Ty::B32)?;
    Ok(i)
}

fn exec_shfl(c: &mut Ctx<'_>, i: &Inst) -> X {
    if members(c, &i.s[3], "shuffle")?.is_none() {
        return Ok(Flow::Jump);
    }
    // Immediate lane and clamp operands (`shfl.sync.bfly.b32 d, a, 16,
    // 0x1f, -1`, the common form) are read as they are, not spread over
    // 32 lanes first.
    let exec = c.exec;
    let (d, p) = match (i.s[1], i.s[2]) {
        (Operand::Imm(b), Operand::Imm(cc)) => {
            let [a] = c.srcs([&i.s[0]])?;
            shuffle(exec, i.sub, a, |_| (b, cc))
        }
        _ => {
            let [a, b, cc] = c.srcs([&i.s[0], &i.s[1], &i.s[2]])?;
            shuffle(exec, i.sub, a, |l| (b[l], cc[l]))
        }
    }
    .map_err(|(l, j)| absent_lane(c, l, j))?;
    c.write(&i.d[0], &d, Ext::Zero)?;
    c.write_pred(&i.d[1], p);
    Ok(Flow::Next)
}

/// The values each executing lane reads in shuffle `sub` of `a` (with
/// lane `l`'s lane and clamp operands `bc(l)`) and the lanes whose source
/// was in range; `Err((l, j))` if lane `l` reads lane `j`, which does not
/// execute.
#[inline(always)]
fn shuffle(
    exec: u32,
    sub: u8,
    a: &[u64; 32],
    bc: impl Fn(usize) -> (u64, u64),
) -> Result<([u64; 32], u32), (usize, usize)> {
    let mut d = [0u64; 32];
    let mut p = 0u32;
    for l in lanes(exec) {
        let (b, cc) = bc(l);
        let lane = l as i64;
        let bval = (b & 31) as i64;
        let cval = (cc & 31) as i64;
        let seg = ((cc >> 8) & 31) as i64;
        let max_lane = (lane & seg) | (cval & !seg);
        let min_lane = lane & seg;
        let (j, ok) = match sub {
            UP => (lane - bval, lane - bval >= max_lane),
            DOWN => (lane + bval, lane + bval <= max_lane),
            BFLY => (lane ^ bval, (lane ^ bval) <= max_lane),
            _ => {
                let j = min_lane | (bval & !seg);
                (j, j <= max_lane)
            }
        };
        let j = if ok { j as usize } else { l };
        if exec >> j & 1 == 0 {
            return Err((l, j));
        }
        d[l] = a[j];
        p |= u32::from(ok) << l;
    }
    Ok((d, p))
}

/// The error for lane `l` of a shuffle reading lane `j`, which does not
/// take part.
#[cold]
fn absent_lane(c: &Ctx<'_>, l: usize, j: usize) -> Fault {
    let (x, y, z) = c.thread_of(l);
    Fault::lane(
        l,
        format!(
            "shfl.sync: lane {l} (thread ({x},{y},{z})) reads lane {j}, which does not take part in this shuffle (exited, missing or outside the member mask); its value is undefined: shuffle where every lane of the warp takes part, before any lane returns or branches away, and give the lanes without data a neutral value (`let v = if i < n {{ x[i] }} else {{ 0.0 }};`)"
        ),
    )
}

pub(super) fn elect(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if !m.take("sync") {
        return Err("expected `elect.sync`".into());
    }
    d.count(2)?;
    let mut i = Inst::new(exec_elect);
    match d.arg(0)? {
        Arg::Pair(r, p) => {
            i.d[0] = d.dst_arg(r)?;
            i.d[1] = d.pred_dst_arg(p)?;
        }
        _ => return Err("`elect.sync` writes `d|p`".into()),
    }
    i.s[0] = d.src(1, Ty::B32)?;
    Ok(i)
}

/// The leader is the lowest executing lane.
fn exec_elect(c: &mut Ctx<'_>, i: &Inst) -> X {
    if members(c, &i.s[0], "elect.sync")?.is_none() {
        return Ok(Flow::Jump);
    }
    let leader = c.exec.trailing_zeros();
    c.write(&i.d[0], &[u64::from(leader); 32], Ext::Zero)?;
    c.write_pred(&i.d[1], 1 << leader);
    Ok(Flow::Next)
}

const ALL: u8 = 0;
const ANY: u8 = 1;
const UNI: u8 = 2;
const BALLOT: u8 = 3;

pub(super) fn vote(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if !m.take("sync") {
        return Err("`vote` without `.sync` is not supported; use `vote.sync`".into());
    }
    let mode = m
        .take_any(&["all", "any", "uni", "ballot"])
        .ok_or("`vote.sync` needs .all, .any, .uni or .ballot")? as u8;
    let ty = m.ty()?;
    if (mode == BALLOT) != (ty == Ty::B32) || (mode != BALLOT && ty != Ty::Pred) {
        return Err("`vote.sync.ballot` is .b32; the others are .pred".into());
    }
    d.count(3)?;
    let mut i = Inst::new(exec_vote);
    i.sub = mode;
    i.d[0] = if mode == BALLOT {
        d.reg_dst(0)?
    } else {
        d.pred_dst_arg(d.arg(0)?)?
    };
    i.s[0] = d.src(1, Ty::Pred)?;
    i.s[1] = d.src(2, Ty::B32)?;
    Ok(i)
}

fn exec_vote(c: &mut Ctx<'_>, i: &Inst) -> X {
    if members(c, &i.s[1], "vote.sync")?.is_none() {
        return Ok(Flow::Jump);
    }
    let p = c.pred(&i.s[0])? & c.exec;
    let e = c.exec;
    match i.sub {
        ALL => c.write_pred(&i.d[0], if p == e { u32::MAX } else { 0 }),
        ANY => c.write_pred(&i.d[0], if p != 0 { u32::MAX } else { 0 }),
        UNI => c.write_pred(&i.d[0], if p == 0 || p == e { u32::MAX } else { 0 }),
        _ => c.write(&i.d[0], &[u64::from(p); 32], Ext::Zero)?,
    }
    Ok(Flow::Next)
}

pub(super) fn activemask(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if m.ty()? != Ty::B32 {
        return Err("`activemask` is .b32".into());
    }
    d.count(1)?;
    let mut i = Inst::new(exec_activemask);
    i.d[0] = d.reg_dst(0)?;
    Ok(i)
}

fn exec_activemask(c: &mut Ctx<'_>, i: &Inst) -> X {
    let g = c.w.group;
    c.write(&i.d[0], &[u64::from(g); 32], Ext::Zero)?;
    Ok(Flow::Next)
}

const OPS: &[&str] = &["add", "min", "max", "and", "or", "xor"];

pub(super) fn redux(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if !m.take("sync") {
        return Err("expected `redux.sync`".into());
    }
    let op = m
        .take_any(OPS)
        .ok_or("`redux.sync` needs .add, .min, .max, .and, .or or .xor")? as u8;
    let ty = m.ty()?;
    let ok = if op < 3 {
        matches!(ty, Ty::U32 | Ty::S32)
    } else {
        ty == Ty::B32
    };
    if !ok {
        return Err("`redux.sync`: .add/.min/.max take .u32/.s32, .and/.or/.xor take .b32".into());
    }
    d.count(3)?;
    let mut i = Inst::new(exec_redux);
    i.sub = op;
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, Ty::B32)?;
    Ok(i)
}

fn exec_redux(c: &mut Ctx<'_>, i: &Inst) -> X {
    if members(c, &i.s[1], "redux.sync")?.is_none() {
        return Ok(Flow::Jump);
    }
    let a = c.src(&i.s[0])?;
    let signed = i.ty.is_signed();
    let mut acc: Option<u64> = None;
    for l in lanes(c.exec) {
        let x = a[l] & 0xFFFF_FFFF;
        acc = Some(match acc {
            None => x,
            Some(r) => match i.sub {
                0 => (r + x) & 0xFFFF_FFFF,
                1 | 2 => {
                    let less = if signed { sx(x, 32) < sx(r, 32) } else { x < r };
                    if (i.sub == 1) == less { x } else { r }
                }
                3 => r & x,
                4 => r | x,
                _ => r ^ x,
            },
        });
    }
    c.write(&i.d[0], &[acc.unwrap_or(0); 32], Ext::Zero)?;
    Ok(Flow::Next)
}
