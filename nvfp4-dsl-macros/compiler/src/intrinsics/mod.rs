//! The one table of intrinsics: one row each, with its signature (its
//! name is read from it), minimum target, lowering and constant folding,
//! kept as one file per family ([`FAMILIES`]): thread indices,
//! synchronisation and warp operations; memory and asynchronous copies;
//! atomics; conversions; the methods of Rust's integers; those of its floats;
//! Blackwell tcgen05; Hopper wgmma.
//!
//! `check` types calls against the signatures; `lower` folds a call on
//! constants through its row's `fold`, or calls the row's lowering, which
//! may emit different PTX per target and raise the module's PTX version.
//! Lowerings use only `lower`'s `emit`, `fold`, `arith` and `memory`
//! (none of which calls back into this table). `nvfp4_dsl::intrinsics`
//! declares the free functions (with docs) in files of the same families,
//! so rustc type-checks kernel bodies; `tests/tests/compiler.rs` keeps the two
//! in step.

mod atomic;
mod convert;
mod float;
mod int;
mod memory;
mod nvfp4;
mod tcgen05;
mod threads;
mod wgmma;

use super::lower::emit::{Call, Lower, MemRef, Space, Val};
use super::lower::fold::{Const, Result, err};
use super::target::Target;
use super::typed::IntrinsicId;
use super::types::{CacheHint, Order, RegClass, Scalar, Scope, Ty};
use super::{ast, ir};
use ir::Operand;

/// The table, one slice per family.
pub static FAMILIES: &[&[Intrinsic]] = &[
    threads::TABLE,
    memory::TABLE,
    atomic::TABLE,
    convert::TABLE,
    nvfp4::TABLE,
    int::TABLE,
    float::TABLE,
    tcgen05::TABLE,
    wgmma::TABLE,
];

/// Every intrinsic of every family.
pub fn all() -> impl Iterator<Item = &'static Intrinsic> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The intrinsic at `id`.
pub fn get(id: IntrinsicId) -> &'static Intrinsic {
    all().nth(id.0).expect("an id comes from the table")
}

/// Where `intrinsic` is in the table.
pub fn id(intrinsic: &'static Intrinsic) -> IntrinsicId {
    IntrinsicId(
        all()
            .position(|i| std::ptr::eq(i, intrinsic))
            .expect("an intrinsic of the table"),
    )
}

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
    /// An `Order::...` constant.
    OrderConst,
    /// A `Scope::...` constant.
    ScopeConst,
    /// A `&mut` slice or shared memory whose element type is one of
    /// `t_set`: what an atomic updates.
    AtomicMem,
    /// A `Target::...` constant.
    TargetConst,
    /// A local array `[T; n]`.
    ArrayOf(Ty, u64),
    /// `&mut acc` of a `let mut acc: [f32; N]` (or a device function's
    /// `acc: &mut [f32; N]` parameter, passed as `acc`): an MMA accumulator
    /// the intrinsic updates in place (its registers are the instruction's).
    AccumMut,
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
            ArgTy::ArrayOf(e, n) => *t == array_of(e, *n),
            ArgTy::Elem
            | ArgTy::ConstU32
            | ArgTy::SwizzleConst
            | ArgTy::AccumMut
            | ArgTy::OrderConst
            | ArgTy::ScopeConst
            | ArgTy::AtomicMem => false,
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

/// Computes a call whose arguments are all constants, with Rust's result
/// (`None`: left to the lowering). Gets the arguments and the first one's
/// type.
pub type FoldFn = fn(&[Const], Scalar) -> Option<Const>;

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
    pub fold: Option<FoldFn>,
    /// Computed by a PTX `.approx` instruction (in `f32` only), so never
    /// folded: its value is the hardware's.
    pub approximate: bool,
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

/// Whether the method `name` is one PTX approximates (`f32` only).
pub fn is_approximate(name: &str) -> bool {
    all().any(|i| i.approximate && i.name == name)
}

/// Special-register reads (the free intrinsics without arguments that
/// return a `u32`): no effects, same value every call.
pub fn is_pure_index(name: &str) -> bool {
    all().any(|i| i.name == name && i.form == Form::Free && i.params.is_empty() && i.ret == RetTy::Is(U32))
}

pub(super) const U8: Ty = Ty::Scalar(Scalar::U8);
pub(super) const U16: Ty = Ty::Scalar(Scalar::U16);
pub(super) const U32: Ty = Ty::Scalar(Scalar::U32);
pub(super) const I32: Ty = Ty::Scalar(Scalar::I32);
pub(super) const U64: Ty = Ty::Scalar(Scalar::U64);
pub(super) const I64: Ty = Ty::Scalar(Scalar::I64);
pub(super) const USIZE: Ty = Ty::Scalar(Scalar::Usize);
pub(super) const F16: Ty = Ty::Scalar(Scalar::F16);
pub(super) const BF16: Ty = Ty::Scalar(Scalar::Bf16);
pub(super) const F32: Ty = Ty::Scalar(Scalar::F32);
pub(super) const F64: Ty = Ty::Scalar(Scalar::F64);

pub(super) const SHFL_TYPES: &[Ty] = &[U32, I32, F32, Ty::F16x2, U64, I64, F64];
pub(super) const WARP_REDUCE_TYPES: &[Ty] = &[U32, I32, F32, U64, I64, F64];
pub(super) const FLOATS: &[Ty] = &[F32, F64];
pub(super) const HALVES: &[Ty] = &[F16, BF16];
pub(super) const BARS: ArgTy = ArgTy::SharedOf(Ty::Scalar(Scalar::U64));
pub(super) const SLOT: ArgTy = ArgTy::SharedOf(U32);

/// One row of the table. The Rust signature comes first; the row's name
/// and form are read from it (`fn name(..)`, `fn Type::name(..)`, `fn
/// name(self, ..)`), so the name is written once. Then what `check` needs
/// (`generics` and `types` only where the intrinsic has them), the
/// minimum target and the lowering; `fold` where calls on constants fold
/// (the lowering is not asked then); `approximate` for `.approx` PTX.
macro_rules! row {
    (
        $sig:expr,
        $(generics: $generics:expr,)?
        params: [$($param:expr),* $(,)?],
        $(types: $types:expr,)?
        ret: $ret:expr,
        target: $target:ident,
        lower: $lower:expr
        $(, fold: $fold:expr)?
        $(, approximate: $approximate:literal)?
        $(,)?
    ) => {
        Intrinsic {
            name: name_of($sig),
            form: form_of($sig),
            generics: first!($($generics,)? Generics::None),
            params: &[$($param),*],
            t_set: first!($($types,)? &[]),
            ret: $ret,
            min_target: Target::$target,
            sig: $sig,
            lower: $lower,
            fold: first!($(Some($fold),)? None),
            approximate: first!($($approximate,)? false),
        }
    };
}

/// The first of its arguments: an optional field's value or its default.
macro_rules! first {
    ($x:expr $(, $rest:expr)*) => {
        $x
    };
}

use {first, row};

/// The name and the type qualifier of `fn [Type::]name..`, and where the
/// name ends.
const fn split_signature(sig: &'static str) -> (Option<&'static str>, &'static str, usize) {
    let bytes = sig.as_bytes();
    let start = 3; // after `fn `
    let mut end = start;
    let mut qualifier_end = 0;
    while end < bytes.len() && bytes[end] != b'(' && bytes[end] != b'<' {
        if bytes[end] == b':' {
            qualifier_end = end;
        }
        end += 1;
    }
    let (head, _) = bytes.split_at(end);
    if qualifier_end == 0 {
        let (_, name) = head.split_at(start);
        return (None, utf8(name), end);
    }
    let (qualified, name) = head.split_at(qualifier_end + 1);
    let (qualifier, _) = qualified.split_at(qualifier_end - 1);
    let (_, qualifier) = qualifier.split_at(start);
    (Some(utf8(qualifier)), utf8(name), end)
}

const fn utf8(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("a signature is ASCII"),
    }
}

/// The name in a row's signature.
const fn name_of(sig: &'static str) -> &'static str {
    split_signature(sig).1
}

/// How a row's signature is called: `fn Type::name` is associated, a
/// first parameter `self` makes a method.
const fn form_of(sig: &'static str) -> Form {
    let (qualifier, _, end) = split_signature(sig);
    if let Some(q) = qualifier {
        return Form::Assoc(q);
    }
    let bytes = sig.as_bytes();
    let mut i = end;
    while i < bytes.len() && bytes[i] != b'(' {
        i += 1;
    }
    // `(self`, `(&self`, `(&mut self`.
    i += 1;
    if i < bytes.len() && bytes[i] == b'&' {
        i += 1;
    }
    if i + 4 <= bytes.len() && bytes[i] == b'm' && bytes[i + 1] == b'u' && bytes[i + 2] == b't' && bytes[i + 3] == b' '
    {
        i += 4;
    }
    let is_self = i + 5 <= bytes.len()
        && bytes[i] == b's'
        && bytes[i + 1] == b'e'
        && bytes[i + 2] == b'l'
        && bytes[i + 3] == b'f'
        && matches!(bytes[i + 4], b')' | b',' | b':');
    if is_self { Form::Method } else { Form::Free }
}

pub(super) fn arg(c: &Call, i: usize) -> Val {
    c.args[i].0.clone()
}

pub(super) fn mem(c: &Call, i: usize) -> MemRef {
    match &c.args[i].0 {
        Val::Mem(m) => m.clone(),
        other => unreachable!("checked: memory, not {other:?}"),
    }
}

pub(super) fn hint(c: &Call, i: usize) -> CacheHint {
    match &c.args[i].0 {
        Val::Hint(h) => *h,
        other => unreachable!("checked: a hint, not {other:?}"),
    }
}

pub(super) fn order(c: &Call, i: usize) -> Order {
    match &c.args[i].0 {
        Val::Order(o) => *o,
        other => unreachable!("checked: an order, not {other:?}"),
    }
}

pub(super) fn scope(c: &Call, i: usize) -> Scope {
    match &c.args[i].0 {
        Val::Scope(s) => *s,
        other => unreachable!("checked: a scope, not {other:?}"),
    }
}

pub(super) fn scalar(c: &Call, i: usize) -> Scalar {
    match &c.args[i].1 {
        Ty::Scalar(s) => *s,
        _ => Scalar::U32,
    }
}

/// Operand for a 32-bit value of any single-register type.
pub(super) fn b32(l: &mut Lower<'_>, c: &Call, i: usize) -> Operand {
    match &c.args[i].1 {
        Ty::Scalar(s) => l.operand(&c.args[i].0, *s),
        _ => Operand::Reg(l.bits_reg(&c.args[i].0, RegClass::B32)),
    }
}

pub(super) fn class_of(t: &Ty) -> RegClass {
    match t {
        Ty::Scalar(s) => s.reg_class(),
        _ => RegClass::B32,
    }
}

/// `op d, args...` into a fresh register of the result's class.
pub(super) fn unary_op(l: &mut Lower<'_>, op: &str, class: RegClass, src: Operand) -> Val {
    let d = l.reg(class);
    l.emit(op, vec![d.into(), src]);
    Val::Reg(d)
}

/// `[address]` of element `index` of the shared memory argument `mem`.
pub(super) fn shared_operand(l: &mut Lower<'_>, c: &Call, mem_arg: usize, index_arg: usize) -> Result<Operand> {
    let m = mem(c, mem_arg);
    let (base, offset) = l.element_addr(&m, arg(c, index_arg), &c.args[index_arg].1, c.span)?;
    Ok(Operand::Addr(Box::new(base), offset))
}

/// The 32-bit shared address of element `index` of `mem`, in a register.
pub(super) fn shared_address_reg(l: &mut Lower<'_>, c: &Call, mem_arg: usize, index_arg: usize) -> Result<ir::Reg> {
    let m = mem(c, mem_arg);
    let (base, offset) = l.element_addr(&m, arg(c, index_arg), &c.args[index_arg].1, c.span)?;
    let d = l.reg(RegClass::B32);
    match base {
        Operand::Sym(s) if offset == 0 => l.emit("mov.u32", vec![d.into(), Operand::Sym(s)]),
        Operand::Sym(s) => {
            l.emit("mov.u32", vec![d.into(), Operand::Sym(s)]);
            l.emit("add.s32", vec![d.into(), d.into(), Operand::imm(offset)]);
        }
        other if offset == 0 => l.emit("mov.u32", vec![d.into(), other]),
        other => l.emit("add.s32", vec![d.into(), other, Operand::imm(offset)]),
    }
    Ok(d)
}

pub(super) fn const_u32(c: &Call, i: usize, what: &str) -> Result<u32> {
    match arg(c, i) {
        Val::Const(Const::Int(v)) => u32::try_from(v).map_err(|_| c.span.error(format!("{what} is out of range"))),
        _ => err(c.span, format!("{what} must be a compile-time constant")),
    }
}

pub(super) fn simple(l: &mut Lower<'_>, op: &str, ptx: u32) -> Result<Val> {
    l.require_ptx(ptx);
    l.emit(op, vec![]);
    Ok(Val::Unit)
}

pub(super) fn bin64(l: &mut Lower<'_>, c: &Call, op: ast::BinOp, a: Val, b: Val) -> Result<Val> {
    l.binary(op, a, b, Scalar::U64, None, None, c.span)
}

pub(super) fn bin32(l: &mut Lower<'_>, c: &Call, op: ast::BinOp, a: Val, b: Val) -> Result<Val> {
    l.binary(op, a, b, Scalar::U32, None, None, c.span)
}

pub(super) fn int(v: u64) -> Val {
    Val::Const(Const::Int(i128::from(v)))
}

/// The type `[elem; n]`.
pub fn array_of(elem: &Ty, n: u64) -> Ty {
    Ty::Array {
        elem: Box::new(elem.clone()),
        len: super::types::Len::Lit(n),
    }
}

/// The descriptor advanced by `bytes` (its start-address field, in units
/// of 16 bytes, is the low field of both descriptor formats).
pub(super) fn desc_offset(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    use ast::BinOp::*;
    let units = bin32(l, c, Shr, arg(c, 1), int(4))?;
    let wide = l.cast(units, Scalar::U32, Scalar::U64);
    bin64(l, c, Add, arg(c, 0), wide)
}

/// Replaces the base-offset field (bits 49..52 in both descriptor formats).
pub(super) fn set_base_offset(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    use ast::BinOp::*;
    let cleared = bin64(l, c, BitAnd, arg(c, 0), int(!(7u64 << 49)))?;
    let v = bin32(l, c, BitAnd, arg(c, 1), int(7))?;
    let wide = l.cast(v, Scalar::U32, Scalar::U64);
    let field = bin64(l, c, Shl, wide, int(49))?;
    bin64(l, c, BitOr, cleared, field)
}

/// Replaces the 14-bit field at `shift` of a shared-memory descriptor (either format) with
/// `bytes >> 4`.
pub(super) fn set_desc_field(l: &mut Lower<'_>, c: &Call, desc: Val, bytes: Val, shift: u64) -> Result<Val> {
    use ast::BinOp::*;
    let cleared = bin64(l, c, BitAnd, desc, int(!(0x3FFFu64 << shift)))?;
    let units = bin32(l, c, Shr, bytes, int(4))?;
    let units = bin32(l, c, BitAnd, units, int(0x3FFF))?;
    let wide = l.cast(units, Scalar::U32, Scalar::U64);
    let field = bin64(l, c, Shl, wide, int(shift))?;
    bin64(l, c, BitOr, cleared, field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_takes_its_name_and_form_from_its_signature() {
        let load = "fn load<M: Memory, I: Index>(src: &M, index: I, hint: Cache) -> M::Elem";
        assert_eq!((name_of(load), form_of(load)), ("load", Form::Free));
        let from_bits = "fn f64::from_bits(bits: u64) -> f64";
        assert_eq!(
            (name_of(from_bits), form_of(from_bits)),
            ("from_bits", Form::Assoc("f64"))
        );
        for method in [
            "fn len(&self) -> usize",
            "fn len(self) -> usize",
            "fn len(&mut self) -> usize",
        ] {
            assert_eq!((name_of(method), form_of(method)), ("len", Form::Method));
        }
        assert_eq!(form_of("fn selfish(x: u32)"), Form::Free);
        assert_eq!(form_of("fn f(selfish: u32)"), Form::Free);
    }

    #[test]
    fn every_row_is_named_once_and_found_by_its_id() {
        for (i, row) in all().enumerate() {
            let qualified = match row.form {
                Form::Assoc(q) => format!("fn {q}::{}", row.name),
                _ => format!("fn {}", row.name),
            };
            assert!(row.sig.starts_with(&qualified), "{}", row.sig);
            assert!(std::ptr::eq(get(IntrinsicId(i)), row));
            assert_eq!(id(row), IntrinsicId(i));
        }
    }
}
