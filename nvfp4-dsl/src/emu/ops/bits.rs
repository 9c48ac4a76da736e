//! Bit counting, bit fields and byte and bit selection: `popc clz brev
//! bfind bfe bfi prmt lop3`.

use super::int::int_ty;
use super::{dsrc, lanes1, lanes2, lanes3, sx};
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Ty};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

pub(super) fn popc(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::B32, Ty::B64])?;
    dsrc(d, exec_popc, ty, 1)
}

fn exec_popc(c: &mut Ctx<'_>, i: &Inst) -> X {
    let m = i.ty.mask();
    lanes1(c, i, |a| u64::from((a & m).count_ones()))
}

pub(super) fn clz(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::B32, Ty::B64])?;
    dsrc(d, exec_clz, ty, 1)
}

fn exec_clz(c: &mut Ctx<'_>, i: &Inst) -> X {
    let w = i.ty.bits();
    let m = i.ty.mask();
    lanes1(c, i, |a| u64::from((a & m).leading_zeros() - (64 - w)))
}

pub(super) fn brev(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::B32, Ty::B64])?;
    dsrc(d, exec_brev, ty, 1)
}

fn exec_brev(c: &mut Ctx<'_>, i: &Inst) -> X {
    let w = i.ty.bits();
    lanes1(c, i, |a| a.reverse_bits() >> (64 - w))
}

pub(super) fn bfind(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let shiftamt = m.take("shiftamt");
    let ty = int_ty(m, &[Ty::U32, Ty::U64, Ty::S32, Ty::S64])?;
    let mut i = dsrc(d, exec_bfind, ty, 1)?;
    i.flags = u32::from(shiftamt);
    Ok(i)
}

fn exec_bfind(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let w = ty.bits();
    let shiftamt = i.flags != 0;
    lanes1(c, i, |a| {
        let mut x = a & ty.mask();
        if ty.is_signed() && sx(a, w) < 0 {
            x = !x & ty.mask();
        }
        if x == 0 {
            return 0xFFFF_FFFF;
        }
        let msb = 63 - u64::from(x.leading_zeros());
        if shiftamt { u64::from(w - 1) - msb } else { msb }
    })
}

pub(super) fn bfe(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::U32, Ty::U64, Ty::S32, Ty::S64])?;
    d.count(4)?;
    let mut i = Inst::new(exec_bfe);
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, Ty::U32)?;
    i.s[2] = d.src(3, Ty::U32)?;
    Ok(i)
}

fn exec_bfe(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let msb = ty.bits() - 1;
    lanes3(c, i, |a, b, l| {
        let pos = (b & 0xFF) as u32;
        let len = (l & 0xFF) as u32;
        let sbit = if ty.is_signed() && len != 0 {
            let k = (pos + len - 1).min(msb);
            (a >> k) & 1
        } else {
            0
        };
        let mut d = 0u64;
        for k in 0..=msb {
            let bit = if k < len && pos + k <= msb {
                (a >> (pos + k)) & 1
            } else {
                sbit
            };
            d |= bit << k;
        }
        d
    })
}

pub(super) fn bfi(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::B32, Ty::B64])?;
    d.count(5)?;
    let mut i = Inst::new(exec_bfi);
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, ty)?;
    i.s[2] = d.src(3, Ty::U32)?;
    i.s[3] = d.src(4, Ty::U32)?;
    Ok(i)
}

fn exec_bfi(c: &mut Ctx<'_>, i: &Inst) -> X {
    let f = c.src(&i.s[0])?;
    let b = c.src(&i.s[1])?;
    let p = c.src(&i.s[2])?;
    let l = c.src(&i.s[3])?;
    let msb = i.ty.bits() - 1;
    let mut d = [0u64; 32];
    for k in 0..32 {
        let (pos, len) = ((p[k] & 0xFF) as u32, (l[k] & 0xFF) as u32);
        let mut r = b[k] & i.ty.mask();
        for j in 0..len {
            if pos + j > msb {
                break;
            }
            r = (r & !(1 << (pos + j))) | (((f[k] >> j) & 1) << (pos + j));
        }
        d[k] = r;
    }
    c.write(&i.d[0], &d, Ext::Zero)?;
    Ok(Flow::Next)
}

pub(super) fn prmt(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let md = m
        .take_any(&["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"])
        .map_or(0, |k| k as u8 + 1);
    int_ty(m, &[Ty::B32])?;
    let mut i = dsrc(d, exec_prmt, Ty::B32, 3)?;
    i.sub = md;
    Ok(i)
}

fn exec_prmt(c: &mut Ctx<'_>, i: &Inst) -> X {
    let md = i.sub;
    if let (0, Operand::Imm(s)) = (md, i.s[2]) {
        // A constant selector (the common case): each result byte's
        // source byte and sign replication are the same in every lane,
        // decoded once.
        let picks: [(u64, bool); 4] = std::array::from_fn(|k| {
            let n = s >> (4 * k);
            (8 * (n & 7), n & 8 != 0)
        });
        return lanes2(c, i, |a, b| {
            let bytes = (a & 0xFFFF_FFFF) | ((b & 0xFFFF_FFFF) << 32);
            picks.iter().zip([0, 8, 16, 24]).fold(0, |r, (&(at, sign), to)| {
                let v = bytes >> at & 0xFF;
                let v = if sign { 0u64.wrapping_sub(v >> 7) & 0xFF } else { v };
                r | v << to
            })
        });
    }
    lanes3(c, i, |a, b, s| {
        let bytes = (a & 0xFFFF_FFFF) | ((b & 0xFFFF_FFFF) << 32);
        let byte = |k: u64| (bytes >> (8 * (k & 7))) & 0xFF;
        let sel = (s & 0xFFFF) as u32;
        let pick = |n: u32| -> u64 {
            let v = byte(u64::from(n & 7));
            if n & 8 != 0 {
                if v & 0x80 != 0 { 0xFF } else { 0 }
            } else {
                v
            }
        };
        let lo2 = s & 3;
        let r: [u64; 4] = match md {
            0 => [pick(sel), pick(sel >> 4), pick(sel >> 8), pick(sel >> 12)],
            1 => [byte(lo2), byte(lo2 + 1), byte(lo2 + 2), byte(lo2 + 3)],
            2 => [byte(lo2), byte(lo2 + 7), byte(lo2 + 6), byte(lo2 + 5)],
            3 => [byte(lo2); 4],
            4 => match lo2 {
                0 => [byte(0), byte(1), byte(2), byte(3)],
                1 => [byte(1), byte(1), byte(2), byte(3)],
                2 => [byte(2), byte(2), byte(2), byte(3)],
                _ => [byte(3); 4],
            },
            5 => match lo2 {
                0 => [byte(0); 4],
                1 => [byte(0), byte(1), byte(1), byte(1)],
                2 => [byte(0), byte(1), byte(2), byte(2)],
                _ => [byte(0), byte(1), byte(2), byte(3)],
            },
            _ => {
                let k = (s & 1) * 2;
                [byte(k), byte(k + 1), byte(k), byte(k + 1)]
            }
        };
        r[0] | (r[1] << 8) | (r[2] << 16) | (r[3] << 24)
    })
}

pub(super) fn lop3(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    int_ty(m, &[Ty::B32])?;
    d.count(5)?;
    let mut i = Inst::new(exec_lop3);
    i.ty = Ty::B32;
    i.d[0] = d.reg_dst(0)?;
    for k in 0..3 {
        i.s[k] = d.src(k + 1, Ty::B32)?;
    }
    match d.src(4, Ty::B32)? {
        Operand::Imm(v) if v < 256 => i.imm = v,
        _ => return Err("the lop3 look-up table must be a constant 0..255".into()),
    }
    Ok(i)
}

fn exec_lop3(c: &mut Ctx<'_>, i: &Inst) -> X {
    // Minterm k of the table, all ones where it is in the function: the
    // same in every lane, so the lanes' loop has no branch.
    let on: [u64; 8] = std::array::from_fn(|k| 0u64.wrapping_sub(i.imm >> k & 1));
    lanes3(c, i, |a, b, x| {
        let mut r = 0u64;
        for (k, on) in on.iter().enumerate() {
            let ta = if k & 4 != 0 { a } else { !a };
            let tb = if k & 2 != 0 { b } else { !b };
            let tc = if k & 1 != 0 { x } else { !x };
            r |= on & ta & tb & tc;
        }
        r & 0xFFFF_FFFF
    })
}
