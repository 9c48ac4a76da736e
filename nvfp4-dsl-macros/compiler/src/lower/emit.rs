//! The lowering context and what every lowering emits with: the `Lower`
//! state, the values expressions lower to (`Val`, `Const`, `MemRef`), an
//! intrinsic call's view (`Call`), fresh registers, instructions, labels
//! and operands. Intrinsic lowerings use this, `arith`, `memory` and
//! `fold`; none of those reaches back into the intrinsics.

use super::fold::{Const, Result, f32_imm, f64_imm, int_imm};
use crate::ast::*;
use crate::attr::SpecValue;
use crate::ir::*;
use crate::target::Target;
use crate::typed::Types;
use crate::types::{CacheHint, Order, RegClass, Scalar, Scope, Swizzle, Ty};
use std::collections::HashSet;

/// Where a memory view points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    /// Another block's shared memory in the cluster (a `mapa` address).
    SharedCluster,
    /// The module's constant memory: a `#[device] const` table.
    Const,
}

/// A view of memory: a global slice, a shared array or the dynamic block.
#[derive(Clone, Debug)]
pub struct MemRef {
    pub space: Space,
    /// A 64-bit generic-to-global converted pointer register (global), or a
    /// 32-bit shared address register or symbol (shared).
    pub base: Operand,
    /// Constant byte offset from `base`.
    pub offset: i64,
    pub elem: Ty,
    /// Number of elements, when known (global slices carry their length).
    pub len: Option<Box<Val>>,
    /// A sub-slice made in the kernel (`&x[a..b]`): with debug assertions
    /// its indexes are checked against `len`, since the emulator sees only
    /// the parameter's whole view.
    pub sub_slice: bool,
    /// The variable the view was last bound to, for messages.
    pub name: Option<String>,
}

/// The value of an expression during lowering.
#[derive(Clone, Debug)]
pub enum Val {
    Unit,
    Const(Const),
    Reg(Reg),
    /// A `u32x4` or a local array: one value per element.
    Parts(Vec<Val>),
    Mem(MemRef),
    Hint(CacheHint),
    Target(Target),
    Swizzle(Swizzle),
    Order(Order),
    Scope(Scope),
    /// A `TensorMap` parameter, by its `.param` name.
    TensorMap(String),
    /// A closure, inlined where it is called.
    Closure(Box<ClosureVal>),
}

/// A closure's value: its expression and the names it sees, its captures'
/// values copied where it was created.
#[derive(Clone, Debug)]
pub struct ClosureVal {
    pub(super) id: ExprId,
    pub(super) scopes: Vec<Vec<Binding>>,
}

impl Val {
    pub(super) fn regs(&self, out: &mut Vec<RegId>) {
        match self {
            Val::Reg(r) => out.push(r.id),
            Val::Parts(p) => p.iter().for_each(|v| v.regs(out)),
            _ => {}
        }
    }
}

/// An intrinsic call as its lowering function sees it.
#[derive(Debug)]
pub struct Call {
    pub args: Vec<(Val, Ty)>,
    /// Where each argument is (the receiver's first, for a method).
    pub arg_spans: Vec<Loc>,
    pub span: Loc,
    /// The call is a statement whose value is dropped (`f(..);`, `let _ =
    /// f(..);`).
    pub discarded: bool,
    /// Element type and length from a turbofish, when the intrinsic has one.
    pub generic_ty: Option<Ty>,
    pub generic_len: Option<u64>,
}

impl Call {
    /// The arguments, when every one is a constant.
    pub fn constants(&self) -> Option<Vec<Const>> {
        self.args
            .iter()
            .map(|(v, _)| match v {
                Val::Const(k) => Some(*k),
                _ => None,
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum LoopTarget {
    /// A real loop: `break` and `continue` jump to its labels.
    Loop(u32),
    /// An unrolled loop: `break` leaves the outer block, `continue` the
    /// iteration's block.
    Unrolled { outer: u32, iteration: u32 },
}

#[derive(Clone, Debug)]
pub struct Binding {
    pub(super) name: String,
    pub(super) val: Val,
}

#[derive(Debug)]
pub struct Lower<'a> {
    pub(super) kernel: &'a Kernel,
    pub(super) types: &'a Types,
    pub target: Target,
    pub(super) spec: &'a [(String, SpecValue)],
    pub func: Function,
    pub(super) out: Vec<Vec<Node>>,
    pub(super) scopes: Vec<Vec<Binding>>,
    /// The loops around the code being lowered, innermost last, with
    /// their labels.
    pub(super) loops: Vec<(Option<String>, LoopTarget)>,
    /// The `loop`s around the code being lowered, innermost last: their
    /// ids, the registers a `break value` leaving one assigns, its type.
    pub(super) loop_values: Vec<(u32, Val, Ty)>,
    pub(super) next_label: u32,
    /// Registers owned by mutable variables: binding them to a new name
    /// copies, so a later assignment does not change the new name's value.
    pub(super) var_regs: HashSet<RegId>,
    pub(super) line_info: bool,
    /// The device functions being inlined, innermost last: where their
    /// `return` jumps and the registers their value goes to.
    pub(super) returns: Vec<Return>,
    /// Whether `debug_assert!`s are compiled.
    pub(super) debug_assertions: bool,
    /// The expression statement being lowered, when its value is dropped
    /// (`Call::discarded`).
    pub(super) discarded: Option<ExprId>,
    /// The header nodes (comment, `.loc`) of the statements being lowered,
    /// innermost last.
    pub(super) headers: Vec<Vec<Node>>,
}

/// An inlined device function's exit.
#[derive(Debug)]
pub(super) struct Return {
    /// The block around the inlined body.
    pub(super) block: u32,
    pub(super) result: Val,
    pub(super) ty: Ty,
    /// Its name and the line of its `fn`, for the statement comments.
    pub(super) name: String,
    pub(super) fn_line: usize,
}

/// `mov` type for a register class.
pub fn mov_type(c: RegClass) -> &'static str {
    match c {
        RegClass::Pred => "pred",
        RegClass::B8 => "b8",
        RegClass::B16 => "b16",
        RegClass::B32 => "b32",
        RegClass::B64 => "b64",
        RegClass::F32 => "f32",
        RegClass::F64 => "f64",
    }
}

pub(super) fn bit_type(s: Scalar) -> &'static str {
    if s.bits() == 64 { "b64" } else { "b32" }
}

impl Lower<'_> {
    pub fn reg(&mut self, class: RegClass) -> Reg {
        self.func.new_reg(class)
    }

    pub fn emit(&mut self, op: impl Into<String>, args: Vec<Operand>) {
        self.push(Node::Inst(Inst {
            guard: None,
            op: op.into(),
            args,
        }));
    }

    /// Raises the module's PTX ISA version to at least `v` (major*10+minor).
    pub fn require_ptx(&mut self, v: u32) {
        self.func.ptx_version = self.func.ptx_version.max(v);
    }

    pub fn push(&mut self, n: Node) {
        self.out.last_mut().expect("an open node list").push(n);
    }

    /// Lowers `f` into a separate node list.
    pub fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<(Vec<Node>, T)> {
        self.out.push(Vec::new());
        let r = f(self);
        let nodes = self.out.pop().expect("pushed above");
        Ok((nodes, r?))
    }

    pub fn label(&mut self) -> u32 {
        self.next_label += 1;
        self.next_label
    }

    /// A PTX source operand for a scalar value: an immediate where PTX allows
    /// one, else a register.
    pub fn operand(&mut self, v: &Val, s: Scalar) -> Operand {
        match v {
            Val::Const(Const::Int(i)) if s.is_int() => Operand::Imm(int_imm(*i, s)),
            Val::Const(Const::F32(f)) if s == Scalar::F32 => Operand::Imm(f32_imm(*f)),
            Val::Const(Const::F64(f)) if s == Scalar::F64 => Operand::Imm(f64_imm(*f)),
            Val::Reg(r) => Operand::Reg(*r),
            _ => Operand::Reg(self.in_reg(v, s)),
        }
    }

    /// A register holding a scalar value.
    pub fn in_reg(&mut self, v: &Val, s: Scalar) -> Reg {
        match v {
            Val::Reg(r) => *r,
            Val::Const(c) => {
                let r = self.reg(s.reg_class());
                let src = match (c, s) {
                    (Const::Bool(b), _) => Operand::imm(u8::from(*b)),
                    (Const::Int(i), s) => Operand::Imm(int_imm(*i, s)),
                    (Const::F32(f), _) => Operand::Imm(f32_imm(*f)),
                    (Const::F64(f), _) => Operand::Imm(f64_imm(*f)),
                };
                let op = match s {
                    Scalar::Bool => "mov.pred".to_string(),
                    _ => format!("mov.{}", mov_type(s.reg_class())),
                };
                self.emit(op, vec![r.into(), src]);
                r
            }
            other => unreachable!("a scalar value, not {other:?}"),
        }
    }

    /// A register of class `class` with the value's bits (for `u32x4` parts
    /// and other b32 values).
    pub fn bits_reg(&mut self, v: &Val, class: RegClass) -> Reg {
        match v {
            Val::Reg(r) => *r,
            Val::Const(Const::Int(i)) => {
                let r = self.reg(class);
                let imm = match class {
                    RegClass::B64 => (*i as u64).to_string(),
                    _ => (*i as u32).to_string(),
                };
                self.emit(format!("mov.{}", mov_type(class)), vec![r.into(), Operand::Imm(imm)]);
                r
            }
            other => unreachable!("a bit pattern, not {other:?}"),
        }
    }

    pub fn scalar_of(&self, t: &Ty) -> Scalar {
        match t {
            Ty::Scalar(s) => *s,
            Ty::F16x2 | Ty::Bf16x2 | Ty::Fp4x2 | Ty::E4m3 | Ty::E4m3x2 | Ty::InstrDesc => Scalar::U32,
            Ty::SmemDesc | Ty::WgmmaDesc => Scalar::U64,
            other => unreachable!("not a scalar type: {other}"),
        }
    }

    /// Register class of a single-register type.
    pub fn class_of(&self, t: &Ty) -> RegClass {
        match t {
            Ty::Scalar(s) => s.reg_class(),
            Ty::F16x2 | Ty::Bf16x2 | Ty::Fp4x2 | Ty::E4m3 | Ty::E4m3x2 | Ty::InstrDesc => RegClass::B32,
            Ty::SmemDesc | Ty::WgmmaDesc => RegClass::B64,
            other => unreachable!("not a single-register type: {other}"),
        }
    }
}
