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
    /// `::<N>`, one of these lengths.
    Len(&'static [u64]),
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
    /// Shared memory of any element type.
    Shared,
    /// Shared memory of this element type.
    SharedOf(Ty),
    /// A `u32` known at compile time.
    ConstU32,
    /// A `Swizzle::...` constant.
    SwizzleConst,
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
            ArgTy::Elem | ArgTy::ConstU32 | ArgTy::SwizzleConst => false,
            ArgTy::Shared => matches!(t, Ty::SharedArray { .. } | Ty::SharedSlice { .. }),
            ArgTy::SharedOf(e) => matches!(t, Ty::SharedArray { elem, .. } | Ty::SharedSlice { elem } if **elem == *e),
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
    /// `[T; N]` with `N` from the turbofish.
    ArrayOfGenericLen(Ty),
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

const BARS: ArgTy = ArgTy::SharedOf(Ty::Scalar(Scalar::U64));
const SLOT: ArgTy = ArgTy::SharedOf(U32);
const DESC: Ty = Ty::SmemDesc;
const TMEM_LD_LENGTHS: &[u64] = &[1, 2, 4, 8, 16, 32, 64, 128];

macro_rules! intrinsic {
    ($name:literal, $form:expr, [$($p:expr),*], $ret:expr, $target:ident, $sig:literal, $lower:expr) => {
        Intrinsic {
            name: $name,
            form: $form,
            generics: Generics::None,
            params: &[$($p),*],
            t_set: &[],
            ret: $ret,
            min_target: Target::$target,
            sig: $sig,
            lower: $lower,
        }
    };
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
    // ----- Hopper/Blackwell asynchronous copies, barriers and tensor cores -----
    intrinsic!(
        "shared_address",
        Form::Free,
        [ArgTy::Shared, ArgTy::Index],
        RetTy::Is(U32),
        Sm80,
        "fn shared_address<M: SharedMemory, I: DeviceIndex>(mem: &M, index: I) -> u32",
        |l, c| Ok(Val::Reg(shared_address_reg(l, c, 0, 1)?))
    ),
    intrinsic!(
        "mbarrier_init",
        Form::Free,
        [BARS, ArgTy::Index, ArgTy::Is(U32)],
        RetTy::Unit,
        Sm90,
        "fn mbarrier_init<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, count: u32)",
        |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            let count = l.operand(&arg(c, 2), Scalar::U32);
            l.emit("mbarrier.init.shared::cta.b64", vec![addr, count]);
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "fence_mbarrier_init",
        Form::Free,
        [],
        RetTy::Unit,
        Sm90,
        "fn fence_mbarrier_init()",
        |l, _| simple(l, "fence.mbarrier_init.release.cluster", 80)
    ),
    intrinsic!(
        "mbarrier_arrive",
        Form::Free,
        [BARS, ArgTy::Index],
        RetTy::Unit,
        Sm90,
        "fn mbarrier_arrive<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I)",
        |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            l.emit("mbarrier.arrive.shared::cta.b64", vec![Operand::Sink, addr]);
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "mbarrier_arrive_expect_tx",
        Form::Free,
        [BARS, ArgTy::Index, ArgTy::Is(U32)],
        RetTy::Unit,
        Sm90,
        "fn mbarrier_arrive_expect_tx<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, bytes: u32)",
        |l, c| {
            l.require_ptx(80);
            let addr = shared_operand(l, c, 0, 1)?;
            let bytes = l.operand(&arg(c, 2), Scalar::U32);
            l.emit(
                "mbarrier.arrive.expect_tx.shared::cta.b64",
                vec![Operand::Sink, addr, bytes],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "mbarrier_try_wait_parity",
        Form::Free,
        [BARS, ArgTy::Index, ArgTy::Is(U32)],
        RetTy::Is(Ty::Scalar(Scalar::Bool)),
        Sm90,
        "fn mbarrier_try_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32) -> bool",
        |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            let parity = l.operand(&arg(c, 2), Scalar::U32);
            let p = l.reg(RegClass::Pred);
            l.emit("mbarrier.try_wait.parity.shared::cta.b64", vec![p.into(), addr, parity]);
            Ok(Val::Reg(p))
        }
    ),
    intrinsic!(
        "mbarrier_wait_parity",
        Form::Free,
        [BARS, ArgTy::Index, ArgTy::Is(U32)],
        RetTy::Unit,
        Sm90,
        "fn mbarrier_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32)",
        |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            let parity = l.operand(&arg(c, 2), Scalar::U32);
            let p = l.reg(RegClass::Pred);
            let id = l.label();
            let body = vec![
                super::ir::Node::Inst(super::ir::Inst {
                    guard: None,
                    op: "mbarrier.try_wait.parity.shared::cta.b64".into(),
                    args: vec![p.into(), addr, parity],
                }),
                super::ir::Node::If {
                    cond: p,
                    negate: false,
                    then: vec![super::ir::Node::Break(id)],
                    els: vec![],
                },
            ];
            l.push(super::ir::Node::Loop {
                id,
                body,
                continuing: vec![],
            });
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "fence_proxy_async_shared",
        Form::Free,
        [],
        RetTy::Unit,
        Sm90,
        "fn fence_proxy_async_shared()",
        |l, _| simple(l, "fence.proxy.async.shared::cta", 80)
    ),
    intrinsic!(
        "cp_async_bulk_global_to_shared",
        Form::Free,
        [
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Global,
            ArgTy::Index,
            ArgTy::Is(U32),
            BARS,
            ArgTy::Index
        ],
        RetTy::Unit,
        Sm90,
        "fn cp_async_bulk_global_to_shared<D: SharedMemory, I: DeviceIndex, T: Element, J: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(dst: &D, dst_index: I, src: &[T], src_index: J, bytes: u32, bars: &B, bar_index: K)",
        |l, c| {
            l.require_ptx(80);
            let dst = shared_operand(l, c, 0, 1)?;
            let g = mem(c, 2);
            let (base, offset) = l.element_addr(&g, arg(c, 3), &c.args[3].1, c.span)?;
            let bytes = l.operand(&arg(c, 4), Scalar::U32);
            let bar = shared_operand(l, c, 5, 6)?;
            l.emit(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                vec![dst, Operand::Addr(Box::new(base), offset), bytes, bar],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "cp_async_bulk_tensor_2d_global_to_shared",
        Form::Free,
        [
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Is(Ty::TensorMap),
            ArgTy::Is(I32),
            ArgTy::Is(I32),
            BARS,
            ArgTy::Index
        ],
        RetTy::Unit,
        Sm90,
        "fn cp_async_bulk_tensor_2d_global_to_shared<D: SharedMemory, I: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(dst: &D, dst_index: I, map: TensorMap, c0: i32, c1: i32, bars: &B, bar_index: K)",
        |l, c| {
            l.require_ptx(80);
            let dst = shared_operand(l, c, 0, 1)?;
            let Val::TensorMap(name) = arg(c, 2) else {
                unreachable!("checked: a tensor map parameter")
            };
            let raw = l.reg(RegClass::B64);
            l.emit("mov.b64", vec![raw.into(), Operand::Sym(name)]);
            let map = l.reg(RegClass::B64);
            l.emit("cvta.param.u64", vec![map.into(), raw.into()]);
            let c0 = l.operand(&arg(c, 3), Scalar::I32);
            let c1 = l.operand(&arg(c, 4), Scalar::I32);
            let bar = shared_operand(l, c, 5, 6)?;
            l.emit(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                vec![dst, Operand::TensorCoords(Box::new(map.into()), vec![c0, c1]), bar],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "tcgen05_alloc",
        Form::Free,
        [SLOT, ArgTy::Index, ArgTy::ConstU32],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_alloc<M: SharedMemory<Elem = u32>, I: DeviceIndex>(slot: &M, index: I, columns: u32)",
        |l, c| {
            let cols = tmem_columns(c, 2)?;
            let addr = shared_operand(l, c, 0, 1)?;
            l.emit(
                "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                vec![addr, Operand::imm(cols)],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "tcgen05_dealloc",
        Form::Free,
        [ArgTy::Is(U32), ArgTy::ConstU32],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_dealloc(tmem_address: u32, columns: u32)",
        |l, c| {
            let cols = tmem_columns(c, 1)?;
            let t = l.operand(&arg(c, 0), Scalar::U32);
            l.emit(
                "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
                vec![t, Operand::imm(cols)],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "tcgen05_relinquish_alloc_permit",
        Form::Free,
        [],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_relinquish_alloc_permit()",
        |l, _| simple(l, "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned", 86)
    ),
    intrinsic!(
        "tcgen05_cp_32x128b_warpx4",
        Form::Free,
        [ArgTy::Is(U32), ArgTy::Is(DESC)],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_cp_32x128b_warpx4(tmem_address: u32, src: SmemDesc)",
        |l, c| {
            let t = l.in_reg(&arg(c, 0), Scalar::U32);
            let d = l.bits_reg(&arg(c, 1), RegClass::B64);
            l.emit(
                "tcgen05.cp.cta_group::1.32x128b.warpx4",
                vec![Operand::Addr(Box::new(t.into()), 0), d.into()],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "tcgen05_mma_mxf4nvf4",
        Form::Free,
        [
            ArgTy::Is(U32),
            ArgTy::Is(DESC),
            ArgTy::Is(DESC),
            ArgTy::Is(Ty::InstrDesc),
            ArgTy::Is(U32),
            ArgTy::Is(U32),
            ArgTy::Is(Ty::Scalar(Scalar::Bool))
        ],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_mma_mxf4nvf4(d_tmem: u32, a: SmemDesc, b: SmemDesc, idesc: InstrDesc, sfa_tmem: u32, sfb_tmem: u32, accumulate: bool)",
        |l, c| {
            l.require_ptx(87);
            let d = l.in_reg(&arg(c, 0), Scalar::U32);
            let a = l.bits_reg(&arg(c, 1), RegClass::B64);
            let b = l.bits_reg(&arg(c, 2), RegClass::B64);
            let i = l.bits_reg(&arg(c, 3), RegClass::B32);
            let sfa = l.in_reg(&arg(c, 4), Scalar::U32);
            let sfb = l.in_reg(&arg(c, 5), Scalar::U32);
            let acc = l.in_reg(&arg(c, 6), Scalar::Bool);
            let at = |r: super::ir::Reg| Operand::Addr(Box::new(r.into()), 0);
            l.emit(
                "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X",
                vec![at(d), a.into(), b.into(), i.into(), at(sfa), at(sfb), acc.into()],
            );
            Ok(Val::Unit)
        }
    ),
    intrinsic!(
        "tcgen05_commit",
        Form::Free,
        [BARS, ArgTy::Index],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_commit<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I)",
        |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            l.emit(
                "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
                vec![addr],
            );
            Ok(Val::Unit)
        }
    ),
    Intrinsic {
        name: "tcgen05_ld_32x32b",
        form: Form::Free,
        generics: Generics::Len(TMEM_LD_LENGTHS),
        params: &[ArgTy::Is(U32)],
        t_set: &[],
        ret: RetTy::ArrayOfGenericLen(U32),
        min_target: Target::Sm100a,
        sig: "fn tcgen05_ld_32x32b<const N: usize>(tmem_address: u32) -> [u32; N]",
        lower: |l, c| {
            let n = c.generic_len.unwrap_or(0);
            if !TMEM_LD_LENGTHS.contains(&n) {
                return err(
                    c.span,
                    format!("`tcgen05_ld_32x32b` loads one of {TMEM_LD_LENGTHS:?} columns, not {n}"),
                );
            }
            let t = l.in_reg(&arg(c, 0), Scalar::U32);
            let regs: Vec<super::ir::Reg> = (0..n).map(|_| l.reg(RegClass::B32)).collect();
            l.emit(
                format!("tcgen05.ld.sync.aligned.32x32b.x{n}.b32"),
                vec![
                    Operand::Vec(regs.iter().map(|r| (*r).into()).collect()),
                    Operand::Addr(Box::new(t.into()), 0),
                ],
            );
            Ok(Val::Parts(regs.into_iter().map(Val::Reg).collect()))
        },
    },
    intrinsic!(
        "tcgen05_wait_ld",
        Form::Free,
        [],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_wait_ld()",
        |l, _| simple(l, "tcgen05.wait::ld.sync.aligned", 86)
    ),
    intrinsic!(
        "tcgen05_fence_before_thread_sync",
        Form::Free,
        [],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_fence_before_thread_sync()",
        |l, _| simple(l, "tcgen05.fence::before_thread_sync", 86)
    ),
    intrinsic!(
        "tcgen05_fence_after_thread_sync",
        Form::Free,
        [],
        RetTy::Unit,
        Sm100a,
        "fn tcgen05_fence_after_thread_sync()",
        |l, _| simple(l, "tcgen05.fence::after_thread_sync", 86)
    ),
    // Descriptor builders: integer arithmetic, folded when the inputs are constants.
    intrinsic!(
        "new",
        Form::Assoc("SmemDesc"),
        [ArgTy::Is(U32)],
        RetTy::Is(DESC),
        Sm80,
        "fn SmemDesc::new(start_address: u32) -> SmemDesc",
        |l, c| {
            use super::ast::BinOp::*;
            let start = bin32(l, c, BitAnd, arg(c, 0), int(0x3FFFF))?;
            let start = bin32(l, c, Shr, start, int(4))?;
            let wide = l.cast(start, Scalar::U32, Scalar::U64);
            bin64(l, c, BitOr, wide, int(1 << 46))
        }
    ),
    intrinsic!(
        "with_leading_byte_offset",
        Form::Method,
        [ArgTy::Is(DESC), ArgTy::Is(U32)],
        RetTy::Is(DESC),
        Sm80,
        "fn with_leading_byte_offset(self, bytes: u32) -> SmemDesc",
        |l, c| set_desc_field(l, c, arg(c, 0), arg(c, 1), 16)
    ),
    intrinsic!(
        "with_stride_byte_offset",
        Form::Method,
        [ArgTy::Is(DESC), ArgTy::Is(U32)],
        RetTy::Is(DESC),
        Sm80,
        "fn with_stride_byte_offset(self, bytes: u32) -> SmemDesc",
        |l, c| set_desc_field(l, c, arg(c, 0), arg(c, 1), 32)
    ),
    intrinsic!(
        "with_base_offset",
        Form::Method,
        [ArgTy::Is(DESC), ArgTy::Is(U32)],
        RetTy::Is(DESC),
        Sm80,
        "fn with_base_offset(self, offset: u32) -> SmemDesc",
        |l, c| {
            use super::ast::BinOp::*;
            let cleared = bin64(l, c, BitAnd, arg(c, 0), int(!(7u64 << 49)))?;
            let v = bin32(l, c, BitAnd, arg(c, 1), int(7))?;
            let wide = l.cast(v, Scalar::U32, Scalar::U64);
            let field = bin64(l, c, Shl, wide, int(49))?;
            bin64(l, c, BitOr, cleared, field)
        }
    ),
    intrinsic!(
        "with_swizzle",
        Form::Method,
        [ArgTy::Is(DESC), ArgTy::SwizzleConst],
        RetTy::Is(DESC),
        Sm80,
        "fn with_swizzle(self, swizzle: Swizzle) -> SmemDesc",
        |l, c| {
            use super::ast::BinOp::*;
            let Val::Swizzle(s) = arg(c, 1) else {
                unreachable!("checked: a swizzle")
            };
            let cleared = bin64(l, c, BitAnd, arg(c, 0), int(!(7u64 << 61)))?;
            bin64(l, c, BitOr, cleared, int(s.layout_type() << 61))
        }
    ),
    intrinsic!(
        "offset",
        Form::Method,
        [ArgTy::Is(DESC), ArgTy::Is(U32)],
        RetTy::Is(DESC),
        Sm80,
        "fn offset(self, bytes: u32) -> SmemDesc",
        |l, c| {
            use super::ast::BinOp::*;
            let units = bin32(l, c, Shr, arg(c, 1), int(4))?;
            let wide = l.cast(units, Scalar::U32, Scalar::U64);
            bin64(l, c, Add, arg(c, 0), wide)
        }
    ),
    intrinsic!(
        "bits",
        Form::Method,
        [ArgTy::Is(DESC)],
        RetTy::Is(U64),
        Sm80,
        "fn bits(self) -> u64",
        |_, c| Ok(arg(c, 0))
    ),
    intrinsic!(
        "mxf4nvf4",
        Form::Assoc("InstrDesc"),
        [ArgTy::Is(U32), ArgTy::Is(U32)],
        RetTy::Is(Ty::InstrDesc),
        Sm80,
        "fn InstrDesc::mxf4nvf4(m: u32, n: u32) -> InstrDesc",
        |l, c| {
            use super::ast::BinOp::*;
            let n = bin32(l, c, Shr, arg(c, 1), int(3))?;
            let n = bin32(l, c, Shl, n, int(17))?;
            let m = bin32(l, c, Shr, arg(c, 0), int(7))?;
            let m = bin32(l, c, Shl, m, int(27))?;
            let d = bin32(l, c, BitOr, n, m)?;
            bin32(l, c, BitOr, d, int(0x480))
        }
    ),
    intrinsic!(
        "bits",
        Form::Method,
        [ArgTy::Is(Ty::InstrDesc)],
        RetTy::Is(U32),
        Sm80,
        "fn bits(self) -> u32",
        |_, c| Ok(arg(c, 0))
    ),
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

// ----- Hopper/Blackwell asynchronous copies, barriers and tensor cores -----

/// `[address]` of element `index` of the shared memory argument `mem`.
fn shared_operand(l: &mut Lower<'_>, c: &Call, mem_arg: usize, index_arg: usize) -> Result<Operand> {
    let m = mem(c, mem_arg);
    let (base, offset) = l.element_addr(&m, arg(c, index_arg), &c.args[index_arg].1, c.span)?;
    Ok(Operand::Addr(Box::new(base), offset))
}

/// The 32-bit shared address of element `index` of `mem`, in a register.
fn shared_address_reg(l: &mut Lower<'_>, c: &Call, mem_arg: usize, index_arg: usize) -> Result<super::ir::Reg> {
    let m = mem(c, mem_arg);
    let (base, offset) = l.element_addr(&m, arg(c, index_arg), &c.args[index_arg].1, c.span)?;
    let d = l.reg(RegClass::B32);
    match base {
        Operand::Sym(s) if offset == 0 => l.emit("mov.u32", vec![d.into(), Operand::Sym(s)]),
        Operand::Sym(s) => {
            l.emit("mov.u32", vec![d.into(), Operand::Sym(s)]);
            l.emit("add.s32", vec![d.into(), d.into(), Operand::imm(offset)]);
        }
        other => l.emit("add.s32", vec![d.into(), other, Operand::imm(offset)]),
    }
    Ok(d)
}

fn const_u32(c: &Call, i: usize, what: &str) -> Result<u32> {
    match arg(c, i) {
        Val::Const(Const::Int(v)) => u32::try_from(v).map_err(|_| c.span.error(format!("{what} is out of range"))),
        _ => err(c.span, format!("{what} must be a compile-time constant")),
    }
}

/// `tcgen05` column counts: a power of two in 32..=512.
fn tmem_columns(c: &Call, i: usize) -> Result<u32> {
    let n = const_u32(c, i, "the number of tensor memory columns")?;
    if !(32..=512).contains(&n) || !n.is_power_of_two() {
        return err(
            c.span,
            format!("tensor memory is allocated in powers of two from 32 to 512 columns, not {n}"),
        );
    }
    Ok(n)
}

fn simple(l: &mut Lower<'_>, op: &str, ptx: u32) -> Result<Val> {
    l.require_ptx(ptx);
    l.emit(op, vec![]);
    Ok(Val::Unit)
}

fn bin64(l: &mut Lower<'_>, c: &Call, op: super::ast::BinOp, a: Val, b: Val) -> Result<Val> {
    l.binary(op, a, b, Scalar::U64, None, None, c.span)
}

fn bin32(l: &mut Lower<'_>, c: &Call, op: super::ast::BinOp, a: Val, b: Val) -> Result<Val> {
    l.binary(op, a, b, Scalar::U32, None, None, c.span)
}

fn int(v: u64) -> Val {
    Val::Const(Const::Int(i128::from(v)))
}

/// Replaces the 14-bit field at `shift` of a shared-memory descriptor with
/// `bytes >> 4`.
fn set_desc_field(l: &mut Lower<'_>, c: &Call, desc: Val, bytes: Val, shift: u64) -> Result<Val> {
    use super::ast::BinOp::*;
    let cleared = bin64(l, c, BitAnd, desc, int(!(0x3FFFu64 << shift)))?;
    let units = bin32(l, c, Shr, bytes, int(4))?;
    let units = bin32(l, c, BitAnd, units, int(0x3FFF))?;
    let wide = l.cast(units, Scalar::U32, Scalar::U64);
    let field = bin64(l, c, Shl, wide, int(shift))?;
    bin64(l, c, BitOr, cleared, field)
}
