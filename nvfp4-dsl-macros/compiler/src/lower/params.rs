//! Kernel parameters passed by value: how each is declared, and its load
//! into registers. A `#[device]` struct is one `.param .align A .b8
//! name[size]` laid out as `#[repr(C)]` lays it out on the host (the
//! launcher passes the struct's bytes; cudarc's `DeviceRepr` passes the
//! struct itself), each field loaded from its offset.

use super::emit::{Lower, Val};
use super::fold::Result;
use crate::ir::{Operand, ParamTy};
use crate::types::{Len, RegClass, Scalar, Ty};

/// The declaration of a value parameter of type `t`.
pub(super) fn declared(t: &Ty) -> ParamTy {
    match t {
        Ty::U32x4 => ParamTy::Bytes { align: 16, size: 16 },
        Ty::Struct(st) => match st.repr_c() {
            Ok(layout) => ParamTy::Bytes {
                align: layout.align,
                size: layout.size,
            },
            Err((field, _)) => unreachable!("parse: a struct parameter's fields have a layout, not `{field}`"),
        },
        Ty::Scalar(Scalar::Bool) => ParamTy::Scalar("u8"),
        t => match t.mem_layout() {
            Some(layout) => ParamTy::Scalar(layout.ptx),
            None => unreachable!("parse: a kernel parameter of type `{t}` has a layout"),
        },
    }
}

impl Lower<'_> {
    /// Loads the value of type `t` at byte `offset` of the parameter `sym`.
    pub(super) fn load_param(&mut self, t: &Ty, sym: &str, offset: u64) -> Result<Val> {
        let addr = || Operand::Addr(Box::new(Operand::Sym(sym.to_string())), offset as i64);
        Ok(match t {
            Ty::U32x4 => {
                let v = self.fresh(t)?;
                let regs = self.parts(&v, 4).iter().map(operand_reg).collect();
                self.emit("ld.param.v4.u32", vec![Operand::Vec(regs), addr()]);
                v
            }
            Ty::Scalar(Scalar::Bool) => {
                let byte = self.reg(RegClass::B32);
                self.emit("ld.param.u8", vec![byte.into(), addr()]);
                let p = self.reg(RegClass::Pred);
                self.emit("setp.ne.u32", vec![p.into(), byte.into(), Operand::imm(0)]);
                Val::Reg(p)
            }
            Ty::Struct(st) => {
                let Ok(layout) = st.repr_c() else {
                    unreachable!("parse: a struct parameter's fields have a layout")
                };
                let mut parts = Vec::with_capacity(st.fields.len());
                for ((_, ft), at) in st.fields.iter().zip(layout.offsets) {
                    parts.push(self.load_param(ft, sym, offset + at)?);
                }
                Val::Parts(parts)
            }
            Ty::Array { elem, len: Len::Lit(n) } => {
                let (size, _) = elem.c_layout().expect("parse: an array field has a layout");
                let mut parts = Vec::with_capacity(*n as usize);
                for i in 0..*n {
                    parts.push(self.load_param(elem, sym, offset + i * size)?);
                }
                Val::Parts(parts)
            }
            t => {
                let ptx = match t {
                    Ty::SmemDesc | Ty::WgmmaDesc => "b64",
                    Ty::InstrDesc => "b32",
                    t => match t.mem_layout() {
                        Some(layout) => layout.ptx,
                        None => unreachable!("parse: a kernel parameter of type `{t}` has a layout"),
                    },
                };
                let r = self.reg(self.class_of(t));
                self.emit(format!("ld.param.{ptx}"), vec![r.into(), addr()]);
                Val::Reg(r)
            }
        })
    }
}

fn operand_reg(v: &Val) -> Operand {
    match v {
        Val::Reg(r) => Operand::Reg(*r),
        other => unreachable!("a register, not {other:?}"),
    }
}
