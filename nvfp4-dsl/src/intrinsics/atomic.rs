//! Atomics on global memory (`&mut [T]` parameters) and shared memory
//! (`shared_array`, `dynamic_shared`).
//!
//! Each one reads `mem[index]`, writes the result of its operation there
//! as one indivisible step, and returns the value it read. The memory
//! order and the scope are compile-time arguments, written as constants:
//!
//! ```ignore
//! let bin = u32::from(byte);
//! atomic_add(hist, bin, 1u32, Order::Relaxed, Scope::Cta);
//! let ticket = atomic_add(counter, 0u32, 1u32, Order::AcqRel, Scope::Gpu);
//! ```
//!
//! PTX: `atom.<order>.<scope>.<space>.<op>.<type> old, [addr], value;`
//! with `<order>` `relaxed`, `acquire`, `release` or `acq_rel`, `<scope>`
//! `cta`, `cluster` (sm_90 and newer), `gpu` or `sys`, `<space>` `global`
//! or `shared`. A call whose result is dropped (`atomic_add(..);`, `let _ =
//! atomic_add(..);`) with `Order::Relaxed` or `Order::Release` lowers to
//! `red.<order>.<scope>.<space>.<op>.<type> [addr], value;` (no result to
//! wait for), except `atomic_exch` and `atomic_cas`, which `red` lacks.
//!
//! Atomics of one address are atomic with respect to each other when each
//! one's scope includes the other's thread (`Scope::Cta` for the threads of
//! a block on its shared memory, `Scope::Gpu` across blocks). An atomic and
//! a plain access (`x[i]`, `load`, `store`) of the same address race unless
//! something orders them (a barrier, an acquire that reads a release); the
//! emulator reports such races in shared memory, and in global memory
//! where a kernel's blocks may communicate through it (it has global
//! atomics): there, between blocks, only an atomic with `Order::Release`
//! or `Order::AcqRel` of `Scope::Gpu` (or a relaxed one after the thread's
//! `fence_acq_rel_gpu()`) releases, and only one with `Order::Acquire` or
//! `Order::AcqRel` (or a relaxed one followed by `fence_acq_rel_gpu()`)
//! that reads its value acquires.

use super::device_only;
use crate::types::{AtomicAdd, AtomicInt, DeviceIndex, MemoryMut, Order, Scope};

/// Adds `value` to `mem[index]` and returns the old value. Integers wrap;
/// `f32` and `f64` round to nearest even (on global memory the hardware
/// flushes `f32` subnormal inputs and results to zero of the same sign, as
/// the PTX ISA documents; shared memory keeps them); `f16x2` and `bf16x2`
/// add each half to nearest even, keeping subnormals (each half is atomic
/// on its own).
///
/// PTX: `atom.<order>.<scope>.<space>.add.<type> old, [addr], value;` with
/// `<type>` `u32`, `s32`, `u64` (also for `i64`: the same bits), `f32`,
/// `f64`, `noftz.f16x2`, `noftz.bf16x2` (sm_90 and newer); `red` when the
/// result is dropped (module docs).
#[inline(always)]
pub fn atomic_add<M: MemoryMut<Elem: AtomicAdd> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_add")
}

/// Stores the smaller of `mem[index]` and `value` (signed for `i32` and
/// `i64`) and returns the old value.
///
/// PTX: `atom.<order>.<scope>.<space>.min.<type> old, [addr], value;` with
/// `<type>` `u32`, `s32`, `u64`, `s64`; `red` when the result is dropped.
#[inline(always)]
pub fn atomic_min<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_min")
}

/// Stores the larger of `mem[index]` and `value` (signed for `i32` and
/// `i64`) and returns the old value.
///
/// PTX: `atom.<order>.<scope>.<space>.max.<type> old, [addr], value;` with
/// `<type>` `u32`, `s32`, `u64`, `s64`; `red` when the result is dropped.
#[inline(always)]
pub fn atomic_max<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_max")
}

/// Stores `mem[index] & value` and returns the old value.
///
/// PTX: `atom.<order>.<scope>.<space>.and.b32 old, [addr], value;` (`b64`
/// for 64-bit elements); `red` when the result is dropped.
#[inline(always)]
pub fn atomic_and<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_and")
}

/// Reads `mem[index]` as an atomic: with `Order::Acquire`, the thread's
/// later accesses stay after it and see what a release it reads from
/// published (a flag another block sets). `Order::Relaxed` or
/// `Order::Acquire` only (a load releases nothing); an error names the
/// others.
///
/// PTX: `ld.<order>.<scope>.<space>.b32 value, [addr];` (`b64` for 64-bit
/// elements).
#[inline(always)]
pub fn atomic_load<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, order, scope);
    device_only("atomic_load")
}

/// Stores `mem[index] | value` and returns the old value.
///
/// PTX: `atom.<order>.<scope>.<space>.or.b32 old, [addr], value;` (`b64`
/// for 64-bit elements); `red` when the result is dropped.
#[inline(always)]
pub fn atomic_or<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_or")
}

/// Stores `mem[index] ^ value` and returns the old value.
///
/// PTX: `atom.<order>.<scope>.<space>.xor.b32 old, [addr], value;` (`b64`
/// for 64-bit elements); `red` when the result is dropped.
#[inline(always)]
pub fn atomic_xor<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_xor")
}

/// Stores `value` and returns the old value.
///
/// PTX: `atom.<order>.<scope>.<space>.exch.b32 old, [addr], value;` (`b64`
/// for 64-bit elements), also when the result is dropped (`red` has no
/// exchange).
#[inline(always)]
pub fn atomic_exch<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    value: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, value, order, scope);
    device_only("atomic_exch")
}

/// Compare-and-swap: stores `new` if `mem[index]` is `expected`, and
/// returns the old value either way (it swapped if and only if the result
/// is `expected`). Any other update of one word is a loop around it; an
/// `f32` maximum on the bits in a `&mut [u32]` (the first guess is a value
/// rather than a plain load, which would race with the other threads'
/// atomics):
///
/// ```ignore
/// let mut old = f32::NEG_INFINITY.to_bits();
/// while f32::from_bits(old) < x {
///     let seen = atomic_cas(best, 0u32, old, x.to_bits(), Order::Relaxed, Scope::Gpu);
///     if seen == old {
///         break;
///     }
///     old = seen;
/// }
/// ```
///
/// PTX: `atom.<order>.<scope>.<space>.cas.b32 old, [addr], expected,
/// new;` (`b64` for 64-bit elements).
#[inline(always)]
pub fn atomic_cas<M: MemoryMut<Elem: AtomicInt> + ?Sized, I: DeviceIndex>(
    mem: &mut M,
    index: I,
    expected: M::Elem,
    new: M::Elem,
    order: Order,
    scope: Scope,
) -> M::Elem {
    let _ = (mem, index, expected, new, order, scope);
    device_only("atomic_cas")
}
