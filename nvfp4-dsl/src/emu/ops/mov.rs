//! `mov`: registers, immediates, special registers, variable addresses, and
//! packing/unpacking vectors of narrower registers (`mov.b32 d, {a, b}`,
//! `mov.b32 {a, _}, s`).

use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Ty};
use crate::emu::parse::Arg;

const TYPES: &[Ty] = &[
    Ty::Pred,
    Ty::B16,
    Ty::B32,
    Ty::B64,
    Ty::U16,
    Ty::U32,
    Ty::U64,
    Ty::S16,
    Ty::S32,
    Ty::S64,
    Ty::F16,
    Ty::Bf16,
    Ty::F32,
    Ty::F64,
];

pub(super) fn mov(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    let ty = m.ty()?;
    if !TYPES.contains(&ty) {
        return Err(format!("`mov.{}` is not supported", format!("{ty:?}").to_lowercase()));
    }
    d.count(2)?;
    if ty == Ty::Pred {
        let mut i = Inst::new(exec_mov_pred);
        i.d[0] = d.pred_dst_arg(d.arg(0)?)?;
        i.s[0] = d.src(1, Ty::Pred)?;
        return Ok(i);
    }
    match (d.arg(0)?, d.arg(1)?) {
        (Arg::Vec(parts), _) => {
            // Unpack: {d.x, d.y, ...} = a
            let n = parts.len() as u32;
            if n < 2 || ty.bits() % n != 0 {
                return Err(format!("cannot unpack .{ty:?} into {n} parts").to_lowercase());
            }
            let mut i = Inst::new(exec_unpack);
            i.ty = ty;
            i.imm = u64::from(ty.bits() / n);
            i.v = parts
                .iter()
                .map(|p| d.dst_arg(p))
                .collect::<Result<Vec<Operand>, String>>()?
                .into_boxed_slice();
            if i.v.iter().all(|o| *o == Operand::Sink) {
                return Err("unpacking needs at least one register".into());
            }
            i.s[0] = d.reg_src(1)?;
            Ok(i)
        }
        (_, Arg::Vec(parts)) => {
            let n = parts.len() as u32;
            if n < 2 || ty.bits() % n != 0 {
                return Err(format!("cannot pack {n} parts into .{ty:?}").to_lowercase());
            }
            let part = ty.bits() / n;
            let pty = match part {
                8 => Ty::B8,
                16 => Ty::B16,
                32 => Ty::B32,
                _ => return Err("bad packing width".into()),
            };
            let mut i = Inst::new(exec_pack);
            i.ty = ty;
            i.imm = u64::from(part);
            i.d[0] = d.reg_dst(0)?;
            i.v = parts
                .iter()
                .map(|p| d.src_arg(p, pty))
                .collect::<Result<Vec<Operand>, String>>()?
                .into_boxed_slice();
            Ok(i)
        }
        _ => {
            let mut i = Inst::new(exec_mov);
            i.ty = ty;
            i.d[0] = d.reg_dst(0)?;
            i.s[0] = d.src(1, ty)?;
            Ok(i)
        }
    }
}

fn exec_mov(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    // A register copied to another (the common `mov`): in place, with no
    // 32-lane value in between.
    if let (Operand::Reg { idx: from, .. }, Operand::Reg { idx, bits }) = (i.s[0], i.d[0]) {
        c.copy_reg(from, idx, bits)?;
        return Ok(Flow::Next);
    }
    let a = c.src(&i.s[0])?;
    c.write(&i.d[0], &a, Ext::Zero)?;
    Ok(Flow::Next)
}

fn exec_mov_pred(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let p = c.pred(&i.s[0])?;
    c.write_pred(&i.d[0], p);
    Ok(Flow::Next)
}

fn exec_pack(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let w = i.imm as u32;
    let mask = (1u64 << w) - 1;
    let mut d = [0u64; 32];
    for (k, op) in i.v.iter().enumerate() {
        let v = c.src(op)?;
        for (d, v) in d.iter_mut().zip(&v) {
            *d |= (v & mask) << (k as u32 * w);
        }
    }
    c.write(&i.d[0], &d, Ext::Zero)?;
    Ok(Flow::Next)
}

fn exec_unpack(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let w = i.imm as u32;
    let mask = (1u64 << w) - 1;
    let a = c.src(&i.s[0])?;
    for (k, op) in i.v.iter().enumerate() {
        let mut d = [0u64; 32];
        for (d, a) in d.iter_mut().zip(&a) {
            *d = (a >> (k as u32 * w)) & mask;
        }
        c.write(op, &d, Ext::Zero)?;
    }
    Ok(Flow::Next)
}
