//! The one table of intrinsics: name, signature, minimum target, lowering.
//!
//! `check` types calls against the signatures; `lower` calls the lowering
//! function, which may emit different PTX per target and raise the module's
//! PTX version. `nvfp4_dsl::prelude` declares the same functions (with docs)
//! so rustc type-checks kernel bodies; a test keeps the two in step.

use super::ir::Operand;
use super::lower::{Call, Const, Lower, MemRef, Result, Val, err};
use super::types::{CacheHint, RegClass, Scalar, Target, Ty};

/// How an intrinsic is called.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Form {
    /// `name(args)`.
    Free,
    /// `Type::name(args)`.
    Assoc(&'static str),
    /// `receiver.name(args)`; the receiver is the first parameter.
    Method,
}

/// Generic arguments given with a turbofish.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Generics {
    None,
    /// `::<T>`.
    Type,
    /// `::<T, N>`.
    TypeLen,
}

/// A parameter's type.
#[derive(Clone, PartialEq, Debug)]
pub enum ArgTy {
    /// Exactly this type.
    Is(Ty),
    /// The intrinsic's type parameter, one of `t_set`; all `T`s are equal.
    T,
    /// An index: `u32`, `i32` or `usize`.
    Index,
    /// A slice or shared memory, read.
    Mem,
    /// A `&mut` slice or shared memory, written.
    MemMut,
    /// A global slice.
    Global,
    /// A value of the memory argument's element type.
    Elem,
    /// A `Cache::...` constant.
    Hint,
    /// A `Target::...` constant.
    TargetConst,
}

impl ArgTy {
    /// Whether a receiver of type `t` fits (used to find methods).
    pub fn matches(&self, t: &Ty, intr: &Intrinsic) -> bool {
        match self {
            ArgTy::Is(want) => want == t,
            ArgTy::T => intr.t_set.contains(t),
            ArgTy::Mem => t.is_memory(),
            ArgTy::MemMut => matches!(
                t,
                Ty::Slice { mutable: true, .. } | Ty::SharedArray { .. } | Ty::SharedSlice { .. }
            ),
            ArgTy::Global => matches!(t, Ty::Slice { .. }),
            ArgTy::Index => matches!(t, Ty::Scalar(Scalar::U32 | Scalar::I32 | Scalar::Usize)),
            ArgTy::Elem => false,
            ArgTy::Hint => *t == Ty::Cache,
            ArgTy::TargetConst => *t == Ty::Target,
        }
    }
}

/// A result type.
#[derive(Clone, PartialEq, Debug)]
pub enum RetTy {
    Unit,
    Is(Ty),
    T,
    /// The element type of the memory argument.
    Elem,
    /// `SharedArray<T, N>` from the turbofish.
    SharedArray,
    /// `SharedSlice<T>` from the turbofish.
    SharedSlice,
    /// `[T; N]`.
    Array(Ty, u64),
}

pub type LowerFn = fn(&mut Lower<'_>, &Call) -> Result<Val>;

pub struct Intrinsic {
    pub name: &'static str,
    pub form: Form,
    pub generics: Generics,
    pub params: &'static [ArgTy],
    pub t_set: &'static [Ty],
    pub ret: RetTy,
    pub min_target: Target,
    /// The Rust signature, as `nvfp4_dsl::prelude` declares it.
    pub sig: &'static str,
    pub lower: LowerFn,
}

impl std::fmt::Debug for Intrinsic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.sig)
    }
}

impl Intrinsic {
    pub fn display_name(&self) -> String {
        match self.form {
            Form::Free => self.name.to_string(),
            Form::Assoc(q) => format!("{q}::{}", self.name),
            Form::Method => format!(".{}()", self.name),
        }
    }

    pub fn signature(&self) -> &'static str {
        self.sig
    }
}

/// Special-register reads (the free intrinsics without arguments that
/// return a `u32`): no effects, same value every call.
pub fn is_pure_index(name: &str) -> bool {
    TABLE
        .iter()
        .any(|i| i.name == name && i.form == Form::Free && i.params.is_empty() && i.ret == RetTy::Is(U32))
}

const U16: Ty = Ty::Scalar(Scalar::U16);
const U32: Ty = Ty::Scalar(Scalar::U32);
const I32: Ty = Ty::Scalar(Scalar::I32);
const U64: Ty = Ty::Scalar(Scalar::U64);
const I64: Ty = Ty::Scalar(Scalar::I64);
const USIZE: Ty = Ty::Scalar(Scalar::Usize);
const F16: Ty = Ty::Scalar(Scalar::F16);
const BF16: Ty = Ty::Scalar(Scalar::Bf16);
const F32: Ty = Ty::Scalar(Scalar::F32);
const F64: Ty = Ty::Scalar(Scalar::F64);

const SHFL_TYPES: &[Ty] = &[U32, I32, F32, Ty::F16x2];
const SUM_TYPES: &[Ty] = &[U32, I32, F32];
const FLOATS: &[Ty] = &[F32, F64];
const HALVES: &[Ty] = &[F16, BF16];

/// A special-register read (`%tid.x`, ...).
macro_rules! sreg {
    ($name:literal, $reg:literal) => {
        Intrinsic {
            name: $name,
            form: Form::Free,
            generics: Generics::None,
            params: &[],
            t_set: &[],
            ret: RetTy::Is(U32),
            min_target: Target::Sm80,
            sig: concat!("fn ", $name, "() -> u32"),
            lower: |l, _| Ok(Val::Reg(special(l, $reg))),
        }
    };
}

fn special(l: &mut Lower<'_>, reg: &str) -> super::ir::Reg {
    let r = l.reg(RegClass::B32);
    l.emit("mov.u32", vec![r.into(), Operand::Sym(reg.to_string())]);
    r
}

fn arg(c: &Call, i: usize) -> Val {
    c.args[i].0.clone()
}

fn mem(c: &Call, i: usize) -> MemRef {
    match &c.args[i].0 {
        Val::Mem(m) => m.clone(),
        other => unreachable!("checked: memory, not {other:?}"),
    }
}

fn hint(c: &Call, i: usize) -> CacheHint {
    match &c.args[i].0 {
        Val::Hint(h) => *h,
        other => unreachable!("checked: a hint, not {other:?}"),
    }
}

fn scalar(c: &Call, i: usize) -> Scalar {
    match &c.args[i].1 {
        Ty::Scalar(s) => *s,
        _ => Scalar::U32,
    }
}

/// Operand for a 32-bit value of any single-register type.
fn b32(l: &mut Lower<'_>, c: &Call, i: usize) -> Operand {
    match &c.args[i].1 {
        Ty::Scalar(s) => l.operand(&c.args[i].0, *s),
        _ => Operand::Reg(l.bits_reg(&c.args[i].0, RegClass::B32)),
    }
}

fn class_of(t: &Ty) -> RegClass {
    match t {
        Ty::Scalar(s) => s.reg_class(),
        _ => RegClass::B32,
    }
}

/// `op d, args...` into a fresh register of the result's class.
fn unary_op(l: &mut Lower<'_>, op: &str, class: RegClass, src: Operand) -> Val {
    let d = l.reg(class);
    l.emit(op, vec![d.into(), src]);
    Val::Reg(d)
}

fn shfl(l: &mut Lower<'_>, c: &Call, mode: &str, with_mask: bool) -> Result<Val> {
    let base = usize::from(with_mask);
    let mask = if with_mask {
        b32(l, c, 0)
    } else {
        Operand::Imm("-1".into())
    };
    let v = b32(l, c, base);
    let lane = b32(l, c, base + 1);
    // `c` = 0x1f: clamp at lane 31 (down, bfly, idx); `up` would use 0.
    let d = l.reg(class_of(&c.args[base].1));
    l.emit(
        format!("shfl.sync.{mode}.b32"),
        vec![d.into(), v, lane, Operand::imm("0x1f"), mask],
    );
    Ok(Val::Reg(d))
}

fn lower_warp_reduce_sum(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let s = scalar(c, 0);
    let mut v = Val::Reg(l.in_reg(&arg(c, 0), s));
    for off in [16, 8, 4, 2, 1] {
        let t = l.reg(s.reg_class());
        let src = l.operand(&v, s);
        l.emit(
            "shfl.sync.bfly.b32",
            vec![
                t.into(),
                src,
                Operand::imm(off),
                Operand::imm("0x1f"),
                Operand::Imm("-1".into()),
            ],
        );
        v = l.binary(super::ast::BinOp::Add, v, Val::Reg(t), s, None, None, c.span)?;
    }
    Ok(v)
}

fn lower_load(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let m = mem(c, 0);
    let addr = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    l.load(&m, addr, hint(c, 2), c.span)
}

fn lower_store(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let m = mem(c, 0);
    let addr = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    l.store(&m, addr, arg(c, 2), hint(c, 3), c.span)?;
    Ok(Val::Unit)
}

/// The memory view re-typed as 16-byte vectors at the element's address.
fn as_v4(l: &mut Lower<'_>, c: &Call) -> Result<(MemRef, (Operand, i64))> {
    let m = mem(c, 0);
    let addr = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    Ok((MemRef { elem: Ty::U32x4, ..m }, addr))
}

fn lower_load_v4(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let (m, addr) = as_v4(l, c)?;
    l.load(&m, addr, hint(c, 2), c.span)
}

fn lower_store_v4(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let (m, addr) = as_v4(l, c)?;
    l.store(&m, addr, arg(c, 2), hint(c, 3), c.span)?;
    Ok(Val::Unit)
}

/// Converts a constant f32 argument through a register (cvt takes one).
fn f32_reg(l: &mut Lower<'_>, c: &Call, i: usize) -> super::ir::Reg {
    l.in_reg(&arg(c, i), Scalar::F32)
}

pub static TABLE: &[Intrinsic] = &[
    sreg!("thread_idx_x", "%tid.x"),
    sreg!("thread_idx_y", "%tid.y"),
    sreg!("thread_idx_z", "%tid.z"),
    sreg!("block_idx_x", "%ctaid.x"),
    sreg!("block_idx_y", "%ctaid.y"),
    sreg!("block_idx_z", "%ctaid.z"),
    sreg!("block_dim_x", "%ntid.x"),
    sreg!("block_dim_y", "%ntid.y"),
    sreg!("block_dim_z", "%ntid.z"),
    sreg!("grid_dim_x", "%nctaid.x"),
    sreg!("grid_dim_y", "%nctaid.y"),
    sreg!("grid_dim_z", "%nctaid.z"),
    sreg!("lane_id", "%laneid"),
    Intrinsic {
        name: "target_at_least",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::TargetConst],
        t_set: &[],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        min_target: Target::Sm80,
        sig: "fn target_at_least(target: Target) -> bool",
        lower: |l, c| match arg(c, 0) {
            Val::Target(t) => Ok(Val::Const(Const::Bool(l.target >= t))),
            other => unreachable!("checked: a target, not {other:?}"),
        },
    },
    Intrinsic {
        name: "launch_dependents",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm90,
        sig: "fn launch_dependents()",
        lower: |l, _| {
            l.emit("griddepcontrol.launch_dependents", vec![]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "grid_dependency_wait",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm90,
        sig: "fn grid_dependency_wait()",
        lower: |l, _| {
            l.func.programmatic = true;
            l.emit("griddepcontrol.wait", vec![]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "sync_threads",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm80,
        sig: "fn sync_threads()",
        lower: |l, _| {
            l.emit("bar.sync", vec![Operand::imm(0)]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "sync_warp",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm80,
        sig: "fn sync_warp()",
        lower: |l, _| {
            l.emit("bar.warp.sync", vec![Operand::Imm("-1".into())]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "elect_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        min_target: Target::Sm90,
        sig: "fn elect_sync() -> bool",
        lower: |l, _| {
            l.require_ptx(80);
            let p = l.reg(RegClass::Pred);
            let dest = Operand::Pair(Box::new(Operand::Sink), Box::new(Operand::Reg(p)));
            l.emit("elect.sync", vec![dest, Operand::Imm("-1".into())]);
            Ok(Val::Reg(p))
        },
    },
    Intrinsic {
        name: "shfl_down",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_down<T: Shuffle>(value: T, delta: u32) -> T",
        lower: |l, c| shfl(l, c, "down", false),
    },
    Intrinsic {
        name: "shfl_xor",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_xor<T: Shuffle>(value: T, lane_mask: u32) -> T",
        lower: |l, c| shfl(l, c, "bfly", false),
    },
    Intrinsic {
        name: "shfl_idx",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_idx<T: Shuffle>(value: T, src_lane: u32) -> T",
        lower: |l, c| shfl(l, c, "idx", false),
    },
    Intrinsic {
        name: "shfl_down_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_down_sync<T: Shuffle>(mask: u32, value: T, delta: u32) -> T",
        lower: |l, c| shfl(l, c, "down", true),
    },
    Intrinsic {
        name: "shfl_xor_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_xor_sync<T: Shuffle>(mask: u32, value: T, lane_mask: u32) -> T",
        lower: |l, c| shfl(l, c, "bfly", true),
    },
    Intrinsic {
        name: "shfl_idx_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_idx_sync<T: Shuffle>(mask: u32, value: T, src_lane: u32) -> T",
        lower: |l, c| shfl(l, c, "idx", true),
    },
    Intrinsic {
        name: "warp_reduce_sum",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T],
        t_set: SUM_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn warp_reduce_sum<T: WarpSum>(value: T) -> T",
        lower: lower_warp_reduce_sum,
    },
    Intrinsic {
        name: "load",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Mem, ArgTy::Index, ArgTy::Hint],
        t_set: &[],
        ret: RetTy::Elem,
        min_target: Target::Sm80,
        sig: "fn load<M: Memory, I: Index>(src: &M, index: I, hint: Cache) -> M::Elem",
        lower: lower_load,
    },
    Intrinsic {
        name: "store",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::MemMut, ArgTy::Index, ArgTy::Elem, ArgTy::Hint],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm80,
        sig: "fn store<M: MemoryMut, I: Index>(dst: &mut M, index: I, value: M::Elem, hint: Cache)",
        lower: lower_store,
    },
    Intrinsic {
        name: "load_v4",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Mem, ArgTy::Index, ArgTy::Hint],
        t_set: &[],
        ret: RetTy::Is(Ty::U32x4),
        min_target: Target::Sm80,
        sig: "fn load_v4<M: Memory, I: Index>(src: &M, index: I, hint: Cache) -> u32x4",
        lower: lower_load_v4,
    },
    Intrinsic {
        name: "store_v4",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::MemMut, ArgTy::Index, ArgTy::Is(Ty::U32x4), ArgTy::Hint],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm80,
        sig: "fn store_v4<M: MemoryMut, I: Index>(dst: &mut M, index: I, value: u32x4, hint: Cache)",
        lower: lower_store_v4,
    },
    Intrinsic {
        name: "len",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Global],
        t_set: &[],
        ret: RetTy::Is(USIZE),
        min_target: Target::Sm80,
        sig: "fn len(&self) -> usize",
        lower: |_, c| match mem(c, 0).len {
            Some(len) => Ok(*len),
            None => err(c.span, "the length of this view is not known"),
        },
    },
    Intrinsic {
        name: "shared_array",
        form: Form::Free,
        generics: Generics::TypeLen,
        params: &[],
        t_set: &[],
        ret: RetTy::SharedArray,
        min_target: Target::Sm80,
        sig: "fn shared_array<T: Element, const N: usize>() -> &'static mut SharedArray<T, N>",
        lower: |l, c| {
            let elem = c.generic_ty.clone().expect("checked: a type argument");
            let len = c.generic_len.unwrap_or(0);
            if len == 0 {
                return err(c.span, "a shared array needs at least one element");
            }
            Ok(Val::Mem(l.declare_shared(&elem, len, c.span)?))
        },
    },
    Intrinsic {
        name: "dynamic_shared",
        form: Form::Free,
        generics: Generics::Type,
        params: &[ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::SharedSlice,
        min_target: Target::Sm80,
        sig: "fn dynamic_shared<T: Element>(byte_offset: u32) -> &'static mut SharedSlice<T>",
        lower: |l, c| {
            let elem = c.generic_ty.clone().expect("checked: a type argument");
            if let Val::Const(Const::Int(o)) = arg(c, 0) {
                let align = elem.mem_layout().map_or(1, |m| m.bytes) as i128;
                if o % align != 0 {
                    return err(
                        c.span,
                        format!("byte offset {o} is not a multiple of the element size {align}"),
                    );
                }
            }
            Ok(Val::Mem(l.dynamic_shared(&elem, arg(c, 0))))
        },
    },
    // ----- half precision and conversions -----
    Intrinsic {
        name: "from_f32",
        form: Form::Assoc("f16"),
        generics: Generics::None,
        params: &[ArgTy::Is(F32)],
        t_set: &[],
        ret: RetTy::Is(F16),
        min_target: Target::Sm80,
        sig: "fn f16::from_f32(value: f32) -> f16",
        lower: |l, c| {
            let f = f32_reg(l, c, 0);
            Ok(unary_op(l, "cvt.rn.f16.f32", RegClass::B16, f.into()))
        },
    },
    Intrinsic {
        name: "from_f32",
        form: Form::Assoc("bf16"),
        generics: Generics::None,
        params: &[ArgTy::Is(F32)],
        t_set: &[],
        ret: RetTy::Is(BF16),
        min_target: Target::Sm80,
        sig: "fn bf16::from_f32(value: f32) -> bf16",
        lower: |l, c| {
            let f = f32_reg(l, c, 0);
            Ok(unary_op(l, "cvt.rn.bf16.f32", RegClass::B16, f.into()))
        },
    },
    Intrinsic {
        name: "to_f32",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T],
        t_set: HALVES,
        ret: RetTy::Is(F32),
        min_target: Target::Sm80,
        sig: "fn to_f32(self) -> f32",
        lower: |l, c| {
            let h = l.in_reg(&arg(c, 0), scalar(c, 0));
            if scalar(c, 0) == Scalar::F16 {
                return Ok(unary_op(l, "cvt.f32.f16", RegClass::F32, h.into()));
            }
            // bf16 is the top half of an f32: widen exactly with a shift.
            let w = l.reg(RegClass::B32);
            l.emit("cvt.u32.u16", vec![w.into(), h.into()]);
            l.emit("shl.b32", vec![w.into(), w.into(), Operand::imm(16)]);
            Ok(unary_op(l, "mov.b32", RegClass::F32, w.into()))
        },
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("f16"),
        generics: Generics::None,
        params: &[ArgTy::Is(U16)],
        t_set: &[],
        ret: RetTy::Is(F16),
        min_target: Target::Sm80,
        sig: "fn f16::from_bits(bits: u16) -> f16",
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U16);
            Ok(unary_op(l, "cvt.u16.u32", RegClass::B16, r.into()))
        },
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("bf16"),
        generics: Generics::None,
        params: &[ArgTy::Is(U16)],
        t_set: &[],
        ret: RetTy::Is(BF16),
        min_target: Target::Sm80,
        sig: "fn bf16::from_bits(bits: u16) -> bf16",
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U16);
            Ok(unary_op(l, "cvt.u16.u32", RegClass::B16, r.into()))
        },
    },
    Intrinsic {
        name: "to_bits",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T],
        t_set: HALVES,
        ret: RetTy::Is(U16),
        min_target: Target::Sm80,
        sig: "fn to_bits(self) -> u16",
        lower: |l, c| {
            let h = l.in_reg(&arg(c, 0), scalar(c, 0));
            Ok(unary_op(l, "cvt.u32.u16", RegClass::B32, h.into()))
        },
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("f32"),
        generics: Generics::None,
        params: &[ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::Is(F32),
        min_target: Target::Sm80,
        sig: "fn f32::from_bits(bits: u32) -> f32",
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::U32);
            Ok(unary_op(l, "mov.b32", RegClass::F32, r.into()))
        },
    },
    Intrinsic {
        name: "to_bits",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(F32)],
        t_set: &[],
        ret: RetTy::Is(U32),
        min_target: Target::Sm80,
        sig: "fn to_bits(self) -> u32",
        lower: |l, c| {
            let r = l.in_reg(&arg(c, 0), Scalar::F32);
            Ok(unary_op(l, "mov.b32", RegClass::B32, r.into()))
        },
    },
    Intrinsic {
        name: "mul_add",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::T, ArgTy::T],
        t_set: FLOATS,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn mul_add(self, a: Self, b: Self) -> Self",
        lower: |l, c| {
            let s = scalar(c, 0);
            let ops: Vec<Operand> = (0..3).map(|i| l.operand(&arg(c, i), s)).collect();
            let d = l.reg(s.reg_class());
            l.emit(format!("fma.rn.{}", s.ptx_arith()), [vec![d.into()], ops].concat());
            Ok(Val::Reg(d))
        },
    },
    Intrinsic {
        name: "abs",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T],
        t_set: FLOATS,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn abs(self) -> Self",
        lower: |l, c| {
            let s = scalar(c, 0);
            let a = l.operand(&arg(c, 0), s);
            Ok(unary_op(l, &format!("abs.{}", s.ptx_arith()), s.reg_class(), a))
        },
    },
    Intrinsic {
        name: "sqrt",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T],
        t_set: FLOATS,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn sqrt(self) -> Self",
        lower: |l, c| {
            let s = scalar(c, 0);
            let a = l.operand(&arg(c, 0), s);
            Ok(unary_op(l, &format!("sqrt.rn.{}", s.ptx_arith()), s.reg_class(), a))
        },
    },
    Intrinsic {
        name: "min",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::T],
        t_set: &[F32, F64, U32, I32, U64, I64, USIZE],
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn min(self, other: Self) -> Self",
        lower: |l, c| min_max(l, c, "min"),
    },
    Intrinsic {
        name: "max",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::T],
        t_set: &[F32, F64, U32, I32, U64, I64, USIZE],
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn max(self, other: Self) -> Self",
        lower: |l, c| min_max(l, c, "max"),
    },
    Intrinsic {
        name: "new",
        form: Form::Assoc("f16x2"),
        generics: Generics::None,
        params: &[ArgTy::Is(F16), ArgTy::Is(F16)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn f16x2::new(lo: f16, hi: f16) -> f16x2",
        lower: |l, c| {
            let lo = l.in_reg(&arg(c, 0), Scalar::F16);
            let hi = l.in_reg(&arg(c, 1), Scalar::F16);
            Ok(unary_op(
                l,
                "mov.b32",
                RegClass::B32,
                Operand::Vec(vec![lo.into(), hi.into()]),
            ))
        },
    },
    Intrinsic {
        name: "splat",
        form: Form::Assoc("f16x2"),
        generics: Generics::None,
        params: &[ArgTy::Is(F16)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn f16x2::splat(value: f16) -> f16x2",
        lower: |l, c| {
            let h = l.in_reg(&arg(c, 0), Scalar::F16);
            Ok(unary_op(
                l,
                "mov.b32",
                RegClass::B32,
                Operand::Vec(vec![h.into(), h.into()]),
            ))
        },
    },
    Intrinsic {
        name: "from_f32s",
        form: Form::Assoc("f16x2"),
        generics: Generics::None,
        params: &[ArgTy::Is(F32), ArgTy::Is(F32)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn f16x2::from_f32s(lo: f32, hi: f32) -> f16x2",
        lower: |l, c| {
            let lo = f32_reg(l, c, 0);
            let hi = f32_reg(l, c, 1);
            let d = l.reg(RegClass::B32);
            // The first source goes to the upper half.
            l.emit("cvt.rn.f16x2.f32", vec![d.into(), hi.into(), lo.into()]);
            Ok(Val::Reg(d))
        },
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("f16x2"),
        generics: Generics::None,
        params: &[ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn f16x2::from_bits(bits: u32) -> f16x2",
        lower: |_, c| Ok(arg(c, 0)),
    },
    Intrinsic {
        name: "to_bits",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::F16x2)],
        t_set: &[],
        ret: RetTy::Is(U32),
        min_target: Target::Sm80,
        sig: "fn to_bits(self) -> u32",
        lower: |_, c| Ok(arg(c, 0)),
    },
    Intrinsic {
        name: "lo",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::F16x2)],
        t_set: &[],
        ret: RetTy::Is(F16),
        min_target: Target::Sm80,
        sig: "fn lo(self) -> f16",
        lower: |l, c| half_of(l, c, false),
    },
    Intrinsic {
        name: "hi",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::F16x2)],
        t_set: &[],
        ret: RetTy::Is(F16),
        min_target: Target::Sm80,
        sig: "fn hi(self) -> f16",
        lower: |l, c| half_of(l, c, true),
    },
    Intrinsic {
        name: "hadd2",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn hadd2(a: f16x2, b: f16x2) -> f16x2",
        lower: |l, c| half2_op(l, c, "add.rn.f16x2"),
    },
    Intrinsic {
        name: "hmul2",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn hmul2(a: f16x2, b: f16x2) -> f16x2",
        lower: |l, c| half2_op(l, c, "mul.rn.f16x2"),
    },
    Intrinsic {
        name: "hfma2",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2), ArgTy::Is(Ty::F16x2)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn hfma2(a: f16x2, b: f16x2, c: f16x2) -> f16x2",
        lower: |l, c| half2_op(l, c, "fma.rn.f16x2"),
    },
    Intrinsic {
        name: "byte_perm",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::Is(U32),
        min_target: Target::Sm80,
        sig: "fn byte_perm(a: u32, b: u32, selector: u32) -> u32",
        lower: |l, c| {
            let ops: Vec<Operand> = (0..3).map(|i| l.operand(&arg(c, i), Scalar::U32)).collect();
            let d = l.reg(RegClass::B32);
            l.emit("prmt.b32", [vec![d.into()], ops].concat());
            Ok(Val::Reg(d))
        },
    },
    Intrinsic {
        name: "dp4a_s8",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(I32)],
        t_set: &[],
        ret: RetTy::Is(I32),
        min_target: Target::Sm80,
        sig: "fn dp4a_s8(a: u32, b: u32, acc: i32) -> i32",
        lower: |l, c| dp4a(l, c, "dp4a.s32.s32"),
    },
    Intrinsic {
        name: "dp4a_u8_s8",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(I32)],
        t_set: &[],
        ret: RetTy::Is(I32),
        min_target: Target::Sm80,
        sig: "fn dp4a_u8_s8(a: u32, b: u32, acc: i32) -> i32",
        lower: |l, c| dp4a(l, c, "dp4a.u32.s32"),
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("Fp4x2"),
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::Scalar(Scalar::U8))],
        t_set: &[],
        ret: RetTy::Is(Ty::Fp4x2),
        min_target: Target::Sm80,
        sig: "fn Fp4x2::from_bits(bits: u8) -> Fp4x2",
        lower: |_, c| Ok(arg(c, 0)),
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("E4m3"),
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::Scalar(Scalar::U8))],
        t_set: &[],
        ret: RetTy::Is(Ty::E4m3),
        min_target: Target::Sm80,
        sig: "fn E4m3::from_bits(bits: u8) -> E4m3",
        lower: |_, c| Ok(arg(c, 0)),
    },
    Intrinsic {
        name: "from_bits",
        form: Form::Assoc("E4m3x2"),
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::Scalar(Scalar::U16))],
        t_set: &[],
        ret: RetTy::Is(Ty::E4m3x2),
        min_target: Target::Sm80,
        sig: "fn E4m3x2::from_bits(bits: u16) -> E4m3x2",
        lower: |_, c| Ok(arg(c, 0)),
    },
    // ----- NVFP4 conversions -----
    Intrinsic {
        name: "to_f16x2",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::Fp4x2)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm80,
        sig: "fn to_f16x2(self) -> f16x2",
        lower: |l, c| {
            let byte = l.bits_reg(&arg(c, 0), RegClass::B32);
            if l.target >= Target::Sm100a {
                let b = l.reg(RegClass::B8);
                l.emit(
                    "mov.b32",
                    vec![
                        Operand::Vec(vec![b.into(), Operand::Sink, Operand::Sink, Operand::Sink]),
                        byte.into(),
                    ],
                );
                return Ok(unary_op(l, "cvt.rn.f16x2.e2m1x2", RegClass::B32, b.into()));
            }
            // Low nibble to bits 12..15, high nibble to bits 28..31.
            let t = l.reg(RegClass::B32);
            l.emit("mul.lo.u32", vec![t.into(), byte.into(), Operand::imm("0x01001000")]);
            let scaled = e2m1_pair_sm90(l, t);
            Ok(half2_times(l, scaled, F16X2_2_POW_14))
        },
    },
    Intrinsic {
        name: "decode_e2m1x8",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::Array(Ty::F16x2, 4),
        min_target: Target::Sm80,
        sig: "fn decode_e2m1x8(word: u32) -> [f16x2; 4]",
        lower: |l, c| decode_e2m1x8(l, c, false),
    },
    Intrinsic {
        name: "decode_e2m1x8_scaled",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::Array(Ty::F16x2, 4),
        min_target: Target::Sm80,
        sig: "fn decode_e2m1x8_scaled(word: u32) -> [f16x2; 4]",
        lower: |l, c| decode_e2m1x8(l, c, true),
    },
    Intrinsic {
        name: "to_f16x2",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::E4m3x2)],
        t_set: &[],
        ret: RetTy::Is(Ty::F16x2),
        min_target: Target::Sm90,
        sig: "fn to_f16x2(self) -> f16x2",
        lower: |l, c| {
            let pair = l.bits_reg(&arg(c, 0), RegClass::B32);
            Ok(Val::Reg(e4m3x2_to_f16x2(l, pair)))
        },
    },
    Intrinsic {
        name: "to_f32",
        form: Form::Method,
        generics: Generics::None,
        params: &[ArgTy::Is(Ty::E4m3)],
        t_set: &[],
        ret: RetTy::Is(F32),
        min_target: Target::Sm90,
        sig: "fn to_f32(self) -> f32",
        lower: |l, c| {
            let byte = l.bits_reg(&arg(c, 0), RegClass::B32);
            let pair = e4m3x2_to_f16x2(l, byte);
            let lo = l.reg(RegClass::B16);
            l.emit(
                "mov.b32",
                vec![Operand::Vec(vec![lo.into(), Operand::Sink]), pair.into()],
            );
            Ok(unary_op(l, "cvt.f32.f16", RegClass::F32, lo.into()))
        },
    },
    Intrinsic {
        name: "new",
        form: Form::Assoc("u32x4"),
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(U32), ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::Is(Ty::U32x4),
        min_target: Target::Sm80,
        sig: "fn u32x4::new(x: u32, y: u32, z: u32, w: u32) -> u32x4",
        lower: |_, c| Ok(Val::Parts((0..4).map(|i| arg(c, i)).collect())),
    },
];

/// 2^14 in both halves of an f16x2: the exponent bias difference between
/// f16 (15) and e2m1 (1).
const F16X2_2_POW_14: &str = "0x74007400";
/// 2^-14 in both halves.
const F16X2_2_POW_MINUS_14: &str = "0x04000400";

/// sm_90 has no FP4 conversion. With an e2m1 code in bits 12..15 and another
/// in bits 28..31 of `t`, sign and exponent-mantissa moved into f16 position
/// (`sign << 15 | em << 9` per half) give each value times 2^-14, exactly
/// (e2m1's subnormal 0.5 lands on an f16 subnormal).
fn e2m1_pair_sm90(l: &mut Lower<'_>, t: super::ir::Reg) -> super::ir::Reg {
    let shifted = l.reg(RegClass::B32);
    l.emit("shr.b32", vec![shifted.into(), t.into(), Operand::imm(3)]);
    let sign = l.reg(RegClass::B32);
    l.emit("and.b32", vec![sign.into(), t.into(), Operand::imm("0x80008000")]);
    // Exponent-mantissa, bits 12..14 of each half moved to 9..11.
    let magnitude = l.reg(RegClass::B32);
    l.emit(
        "and.b32",
        vec![magnitude.into(), shifted.into(), Operand::imm("0x0E000E00")],
    );
    let d = l.reg(RegClass::B32);
    l.emit("or.b32", vec![d.into(), sign.into(), magnitude.into()]);
    d
}

/// `v * factor` per half (f16x2 instructions take no immediates).
fn half2_times(l: &mut Lower<'_>, v: super::ir::Reg, factor: &str) -> Val {
    let f = l.reg(RegClass::B32);
    l.emit("mov.b32", vec![f.into(), Operand::imm(factor)]);
    let d = l.reg(RegClass::B32);
    l.emit("mul.rn.f16x2", vec![d.into(), v.into(), f.into()]);
    Val::Reg(d)
}

/// Eight e2m1 values of a word (byte j holds elements 2j, 2j+1) as four
/// f16x2, element 2j in the low half of result j. `scaled`: times 2^-14.
fn decode_e2m1x8(l: &mut Lower<'_>, c: &Call, scaled: bool) -> Result<Val> {
    let word = l.bits_reg(&arg(c, 0), RegClass::B32);
    let mut pairs = Vec::with_capacity(4);
    if l.target >= Target::Sm100a {
        let bytes: Vec<_> = (0..4).map(|_| l.reg(RegClass::B8)).collect();
        l.emit(
            "mov.b32",
            vec![Operand::Vec(bytes.iter().map(|b| (*b).into()).collect()), word.into()],
        );
        for b in bytes {
            let h = l.reg(RegClass::B32);
            l.emit("cvt.rn.f16x2.e2m1x2", vec![h.into(), b.into()]);
            pairs.push(if scaled {
                half2_times(l, h, F16X2_2_POW_MINUS_14)
            } else {
                Val::Reg(h)
            });
        }
        return Ok(Val::Parts(pairs));
    }
    // One byte permute per pair puts element 2j in bits 12..15 (from the
    // word shifted left by 4) and element 2j+1 in bits 28..31.
    let shifted = l.reg(RegClass::B32);
    l.emit("shl.b32", vec![shifted.into(), word.into(), Operand::imm(4)]);
    for j in 0..4u32 {
        let selector = ((4 + j) << 12) | (j << 8) | (j << 4) | j;
        let t = l.reg(RegClass::B32);
        l.emit(
            "prmt.b32",
            vec![
                t.into(),
                shifted.into(),
                word.into(),
                Operand::Imm(format!("0x{selector:04X}")),
            ],
        );
        let h = e2m1_pair_sm90(l, t);
        pairs.push(if scaled {
            Val::Reg(h)
        } else {
            half2_times(l, h, F16X2_2_POW_14)
        });
    }
    Ok(Val::Parts(pairs))
}

/// `cvt.rn.f16x2.e4m3x2` of the low 16 bits of `pair` (low byte to the low half).
fn e4m3x2_to_f16x2(l: &mut Lower<'_>, pair: super::ir::Reg) -> super::ir::Reg {
    let h = l.reg(RegClass::B16);
    l.emit(
        "mov.b32",
        vec![Operand::Vec(vec![h.into(), Operand::Sink]), pair.into()],
    );
    let d = l.reg(RegClass::B32);
    l.emit("cvt.rn.f16x2.e4m3x2", vec![d.into(), h.into()]);
    d
}

fn dp4a(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let a = l.operand(&arg(c, 0), Scalar::U32);
    let b = l.operand(&arg(c, 1), Scalar::U32);
    let acc = l.operand(&arg(c, 2), Scalar::I32);
    let d = l.reg(RegClass::B32);
    l.emit(op, vec![d.into(), a, b, acc]);
    Ok(Val::Reg(d))
}

fn min_max(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let s = scalar(c, 0);
    let a = l.operand(&arg(c, 0), s);
    let b = l.operand(&arg(c, 1), s);
    let d = l.reg(s.reg_class());
    l.emit(format!("{op}.{}", s.ptx_arith()), vec![d.into(), a, b]);
    Ok(Val::Reg(d))
}

fn half_of(l: &mut Lower<'_>, c: &Call, high: bool) -> Result<Val> {
    let src = l.bits_reg(&arg(c, 0), RegClass::B32);
    let d = l.reg(RegClass::B16);
    let parts = if high {
        vec![Operand::Sink, d.into()]
    } else {
        vec![d.into(), Operand::Sink]
    };
    l.emit("mov.b32", vec![Operand::Vec(parts), src.into()]);
    Ok(Val::Reg(d))
}

fn half2_op(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let ops: Vec<Operand> = (0..c.args.len())
        .map(|i| Operand::Reg(l.bits_reg(&arg(c, i), RegClass::B32)))
        .collect();
    let d = l.reg(RegClass::B32);
    l.emit(op, [vec![d.into()], ops].concat());
    Ok(Val::Reg(d))
}
