//! Atomics on global and shared memory: `atom{.sem}{.scope}{.space}.op.type`,
//! or `red` where the result is dropped and the order allows it.

use super::*;

/// What an atomic computes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

/// The element types of every atomic but `add`.
const INTS: &[Ty] = &[U32, I32, U64, I64];
/// Those of `atomic_add`.
const ADDS: &[Ty] = &[U32, I32, U64, I64, F32, F64, Ty::F16x2, Ty::Bf16x2];

/// The row of an atomic with one operand: its signature, element types
/// and operation.
macro_rules! one_operand {
    ($sig:expr, $types:expr, $op:expr) => {
        row!(
            $sig,
            params: [
                ArgTy::AtomicMem,
                ArgTy::Index,
                ArgTy::Elem,
                ArgTy::OrderConst,
                ArgTy::ScopeConst
            ],
            types: $types,
            ret: RetTy::Elem,
            target: Sm80,
            lower: |l, c| atomic(l, c, $op),
        )
    };
}

pub(super) static TABLE: &[Intrinsic] = &[
    one_operand!(
        "fn atomic_add<M: MemoryMut<Elem: AtomicAdd>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        ADDS,
        Op::Add
    ),
    one_operand!(
        "fn atomic_min<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        INTS,
        Op::Min
    ),
    one_operand!(
        "fn atomic_max<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        INTS,
        Op::Max
    ),
    one_operand!(
        "fn atomic_and<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        INTS,
        Op::And
    ),
    one_operand!(
        "fn atomic_or<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        INTS,
        Op::Or
    ),
    one_operand!(
        "fn atomic_xor<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        INTS,
        Op::Xor
    ),
    one_operand!(
        "fn atomic_exch<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, value: M::Elem, order: Order, scope: Scope) -> M::Elem",
        INTS,
        Op::Exch
    ),
    row!(
        "fn atomic_cas<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, expected: M::Elem, new: M::Elem, order: Order, scope: Scope) -> M::Elem",
        params: [
            ArgTy::AtomicMem,
            ArgTy::Index,
            ArgTy::Elem,
            ArgTy::Elem,
            ArgTy::OrderConst,
            ArgTy::ScopeConst
        ],
        types: INTS,
        ret: RetTy::Elem,
        target: Sm80,
        lower: |l, c| atomic(l, c, Op::Cas),
    ),
    row!(
        "fn atomic_load<M: MemoryMut<Elem: AtomicInt>, I: DeviceIndex>(mem: &mut M, index: I, order: Order, scope: Scope) -> M::Elem",
        params: [
            ArgTy::AtomicMem,
            ArgTy::Index,
            ArgTy::OrderConst,
            ArgTy::ScopeConst
        ],
        types: INTS,
        ret: RetTy::Elem,
        target: Sm80,
        lower: atomic_load,
    ),
];

/// `ld.<order>.<scope>.<space>.<type> value, [addr]`: a relaxed or
/// acquire load (a release order is an error: a load publishes nothing).
fn atomic_load(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let m = mem(c, 0);
    let (order, scope) = (order(c, 2), scope(c, 3));
    if matches!(order, Order::Release | Order::AcqRel) {
        return err(
            c.arg_spans[2],
            "a load releases nothing: write `Order::Acquire` (or `Order::Relaxed`), and publish with a release atomic or `fence_acq_rel_gpu()` before a store",
        );
    }
    l.require_ptx(scope_ptx(l, c, 3, scope)?);
    let space = space_name(&m);
    let ty = if class_of(&m.elem) == RegClass::B64 {
        "b64"
    } else {
        "b32"
    };
    let (base, offset) = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    let value = l.reg(class_of(&m.elem));
    l.emit(
        format!("ld.{}.{}.{space}.{ty}", order.ptx(), scope.ptx()),
        vec![value.into(), Operand::Addr(Box::new(base), offset)],
    );
    Ok(Val::Reg(value))
}

/// `atom.<order>.<scope>.<space>.<op>.<type> old, [addr], value(, new)`,
/// or `red` (no result) for a dropped result of a relaxed or release
/// `add`/`min`/`max`/`and`/`or`/`xor` (`red` has no acquire, exchange or
/// compare-and-swap).
fn atomic(l: &mut Lower<'_>, c: &Call, op: Op) -> Result<Val> {
    let m = mem(c, 0);
    let n = c.args.len();
    let (order, scope) = (order(c, n - 2), scope(c, n - 1));
    let mut ptx = scope_ptx(l, c, n - 1, scope)?;
    let (name, ty) = match (op, &m.elem) {
        (Op::Add, Ty::F16x2) => {
            ptx = ptx.max(62);
            ("add", "noftz.f16x2")
        }
        (Op::Add, Ty::Bf16x2) => {
            if !l.target.has(Target::Sm90) {
                return err(
                    c.arg_spans[0],
                    format!(
                        "`atomic_add` on `bf16x2` needs target sm_90 or newer (`atom.add.noftz.bf16x2`), but this kernel also compiles for {}: add `f32` values, or remove {} from `targets(..)`",
                        l.target.name(),
                        l.target.name()
                    ),
                );
            }
            ptx = 78;
            ("add", "noftz.bf16x2")
        }
        // PTX has no `add.s64`; the wrapped sum's bits are those of `u64`.
        (Op::Add, Ty::Scalar(Scalar::I64)) => ("add", "u64"),
        (Op::Add | Op::Min | Op::Max, Ty::Scalar(s)) => (op.name(), s.ptx_arith()),
        (_, t) => (op.name(), if class_of(t) == RegClass::B64 { "b64" } else { "b32" }),
    };
    l.require_ptx(ptx);
    let space = space_name(&m);
    let (base, offset) = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    let addr = Operand::Addr(Box::new(base), offset);
    let mut operands = vec![value(l, c, &m.elem, 2)];
    if op == Op::Cas {
        operands.push(value(l, c, &m.elem, 3));
    }
    let reduces = c.discarded && matches!(order, Order::Relaxed | Order::Release) && !matches!(op, Op::Exch | Op::Cas);
    let head = if reduces { "red" } else { "atom" };
    let inst = format!("{head}.{}.{}.{space}.{name}.{ty}", order.ptx(), scope.ptx());
    if reduces {
        l.emit(inst, [vec![addr], operands].concat());
        return Ok(Val::Unit);
    }
    let old = l.reg(class_of(&m.elem));
    l.emit(inst, [vec![old.into(), addr], operands].concat());
    Ok(Val::Reg(old))
}

/// The PTX ISA an atomic's `.sem` and `.scope` need (6.0; 7.8 for
/// `.cluster`), or the error of a cluster scope (argument `i`) in a kernel
/// that also compiles for a target below sm_90.
fn scope_ptx(l: &Lower<'_>, c: &Call, i: usize, scope: Scope) -> Result<u32> {
    if scope != Scope::Cluster {
        return Ok(60);
    }
    if !l.target.has(Target::Sm90) {
        return err(
            c.arg_spans[i],
            format!(
                "`Scope::Cluster` needs target sm_90 or newer, but this kernel also compiles for {}: write `Scope::Gpu`, or remove {} from `targets(..)`",
                l.target.name(),
                l.target.name()
            ),
        );
    }
    Ok(78)
}

/// The state space of an atomic's memory in PTX.
fn space_name(m: &MemRef) -> &'static str {
    match m.space {
        Space::Global => "global",
        _ => "shared",
    }
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Min => "min",
            Op::Max => "max",
            Op::And => "and",
            Op::Or => "or",
            Op::Xor => "xor",
            Op::Exch => "exch",
            Op::Cas => "cas",
        }
    }
}

/// The operand of argument `i`, a value of the memory's element type.
fn value(l: &mut Lower<'_>, c: &Call, elem: &Ty, i: usize) -> Operand {
    match elem {
        Ty::Scalar(s) => l.operand(&arg(c, i), *s),
        _ => Operand::Reg(l.bits_reg(&arg(c, i), RegClass::B32)),
    }
}
