//! `setp`: integer and float comparisons into predicates, optionally
//! combined with a third predicate.

use super::float::FTZ;
use super::sx;
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::fp;
use crate::emu::inst::{Fault, Flow, Inst, Mods, Operand, Ty};

const OPS: &[&str] = &[
    "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
];

#[derive(Clone, Copy)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// `setp.CmpOp{.BoolOp}{.ftz}.type p[|q], a, b{, {!}c}`.
pub(super) fn setp(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    let op = m.take_any(OPS).ok_or("`setp` needs a comparison (.eq, .lt, ...)")?;
    let bop = m.take_any(&["and", "or", "xor"]);
    let ftz = m.take("ftz");
    let ty = m.ty()?;
    if matches!(ty, Ty::Pred | Ty::B8 | Ty::U8 | Ty::S8 | Ty::B128)
        || ty.bits() > 64
        || (!ty.is_int() && ty.fmt().is_none())
    {
        return Err("`setp` needs a 16/32/64-bit integer or float type".into());
    }
    // Unsigned aliases: lo/ls/hi/hs.
    let op = match op {
        6 => 2,
        7 => 3,
        8 => 4,
        9 => 5,
        o => o,
    };
    if ty.is_int() && op >= 10 {
        return Err("unordered comparisons need a float type".into());
    }
    d.count(if bop.is_some() { 4 } else { 3 })?;
    let mut i = Inst::new(if ty.is_int() { exec_setp_int } else { exec_setp });
    i.ty = ty;
    i.sub = op as u8;
    i.imm = bop.map_or(0, |b| b as u64 + 1);
    i.flags = if ftz { FTZ } else { 0 };
    match d.arg(0)? {
        crate::emu::parse::Arg::Pair(p, q) => {
            i.d[0] = d.pred_dst_arg(p)?;
            i.d[1] = d.pred_dst_arg(q)?;
        }
        a => i.d[0] = d.pred_dst_arg(a)?,
    }
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, ty)?;
    if bop.is_some() {
        i.s[2] = d.src(3, Ty::Pred)?;
        if !matches!(i.s[2], Operand::Pred { .. } | Operand::Imm(_)) {
            return Err("the combining operand must be a predicate".into());
        }
    }
    Ok(i)
}

#[inline(always)]
fn ord(c: Cmp, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match c {
        Cmp::Eq => o == Equal,
        Cmp::Ne => o != Equal,
        Cmp::Lt => o == Less,
        Cmp::Le => o != Greater,
        Cmp::Gt => o == Greater,
        Cmp::Ge => o != Less,
    }
}

/// A float comparison on exact f64 values.
fn fcmp(op: u8, x: f64, y: f64) -> bool {
    let unordered = x.is_nan() || y.is_nan();
    match op {
        16 => !unordered,
        17 => unordered,
        _ => {
            let cmp = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge][(op % 10) as usize];
            if unordered {
                op >= 10
            } else {
                ord(cmp, x.partial_cmp(&y).expect("ordered"))
            }
        }
    }
}

/// `setp` on integers (loop bounds, guards: the common case), apart from
/// the float comparisons.
fn exec_setp_int(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    // Keys that compare as unsigned integers: a signed value
    // sign-extended with its sign bit flipped; 32 bits wide where the type
    // fits (the baseline x86-64 has vector compares of 32-bit lanes, not
    // of 64-bit ones). One branch-free loop per comparison, with no choice
    // per lane: `ne`, `ge` and `le` are the complements of `eq`, `lt` and
    // `gt`.
    let (sel, not) = match [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge][i.sub as usize] {
        Cmp::Eq => (Cmp::Eq, false),
        Cmp::Ne => (Cmp::Eq, true),
        Cmp::Lt => (Cmp::Lt, false),
        Cmp::Ge => (Cmp::Lt, true),
        Cmp::Gt => (Cmp::Gt, false),
        Cmp::Le => (Cmp::Gt, true),
    };
    let ty = i.ty;
    let (w, m) = (ty.bits(), ty.mask());
    let p = match (w <= 32, ty.is_signed()) {
        (true, true) => setp_keys(c, i, sel, |x| sx(x, w) as u32 ^ 1 << 31)?,
        (true, false) => setp_keys(c, i, sel, |x| (x & m) as u32)?,
        (false, true) => setp_keys(c, i, sel, |x| sx(x, w) as u64 ^ 1 << 63)?,
        (false, false) => setp_keys(c, i, sel, |x| x & m)?,
    };
    let p = if not { !p } else { p };
    combine_and_write(c, i, p, !p)
}

/// The lanes where comparison `sel` (`eq`, `lt` or `gt`) of the keys of
/// the two sources holds. An immediate bound (`k < 16`) is one key, not
/// 32.
#[inline(always)]
fn setp_keys<K: Copy + Ord + Default>(
    c: &mut Ctx<'_>,
    i: &Inst,
    sel: Cmp,
    key: impl Fn(u64) -> K,
) -> Result<u32, Fault> {
    let keys = |v: &[u64; 32]| {
        let mut k = [K::default(); 32];
        for (k, x) in k.iter_mut().zip(v) {
            *k = key(*x);
        }
        k
    };
    Ok(if let Operand::Imm(y) = i.s[1] {
        let [a] = c.srcs([&i.s[0]])?;
        let (a, y) = (keys(a), key(y));
        match sel {
            Cmp::Eq => lane_bits(|l| a[l] == y),
            Cmp::Lt => lane_bits(|l| a[l] < y),
            _ => lane_bits(|l| a[l] > y),
        }
    } else {
        let [a, b] = c.srcs([&i.s[0], &i.s[1]])?;
        let (a, b) = (keys(a), keys(b));
        match sel {
            Cmp::Eq => lane_bits(|l| a[l] == b[l]),
            Cmp::Lt => lane_bits(|l| a[l] < b[l]),
            _ => lane_bits(|l| a[l] > b[l]),
        }
    })
}

/// The lanes for which `f` holds, as a mask: a select of constants per
/// lane, which vectorises (a shift by the lane's index does not).
#[inline(always)]
fn lane_bits(f: impl Fn(usize) -> bool) -> u32 {
    (0..32).fold(0, |m, l| m | if f(l) { 1 << l } else { 0 })
}

fn exec_setp(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let exec = c.exec;
    let [a, b] = c.srcs([&i.s[0], &i.s[1]])?;
    let ty = i.ty;
    let op = i.sub;
    let (mut p, mut q) = (0u32, 0u32);
    let x2 = matches!(ty, Ty::F16x2 | Ty::Bf16x2);
    if ty == Ty::F32 && i.flags == 0 {
        for l in 0..32 {
            let (x, y) = (f32::from_bits(a[l] as u32), f32::from_bits(b[l] as u32));
            p |= u32::from(fcmp(op, f64::from(x), f64::from(y))) << l;
        }
    } else {
        let f = ty.fmt().expect("a float type");
        let ftz = i.flags & FTZ != 0;
        let val = |bits: u64| {
            let v = fp::to_f64(bits, f);
            if ftz && v != 0.0 && v.abs() < fp::to_f64(1 << f.man, f) {
                0.0
            } else {
                v
            }
        };
        for l in crate::emu::state::lanes(exec) {
            if x2 {
                let lo = fcmp(op, val(a[l] & 0xFFFF), val(b[l] & 0xFFFF));
                let hi = fcmp(op, val((a[l] >> 16) & 0xFFFF), val((b[l] >> 16) & 0xFFFF));
                p |= u32::from(lo) << l;
                q |= u32::from(hi) << l;
            } else {
                p |= u32::from(fcmp(op, val(a[l] & ty.mask()), val(b[l] & ty.mask()))) << l;
            }
        }
    }
    if !x2 {
        q = !p;
    }
    combine_and_write(c, i, p, q)
}

/// Combines the comparisons `p` and `q` with the third operand (`.and`,
/// `.or`, `.xor`) and writes the destinations.
fn combine_and_write(c: &mut Ctx<'_>, i: &Inst, mut p: u32, mut q: u32) -> Result<Flow, Fault> {
    if i.imm != 0 {
        let cc = c.pred(&i.s[2])?;
        let comb = |t: u32| match i.imm {
            1 => t & cc,
            2 => t | cc,
            _ => t ^ cc,
        };
        p = comb(p);
        q = comb(q);
    }
    c.write_pred(&i.d[0], p);
    c.write_pred(&i.d[1], q);
    Ok(Flow::Next)
}
