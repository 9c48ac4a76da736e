//! The atomics against a host reference, on the emulator
//! (`tests/atomic_ops.rs` runs them under several schedules) and on a GPU
//! (`tests/gpu/main.rs`): every operation on global and shared memory for
//! every element type, with its result and with the result dropped (a
//! `red`); tickets; a histogram of random bytes counted per block in
//! shared memory and merged in global memory; an `f32` maximum by
//! compare-and-swap.
//!
//! Threads apply their atomics in an order nobody chooses, so the old
//! values are checked by replaying them ([`replay`]): they must be those of
//! some order of the atomics, and memory must hold that order's last value.
//! Operands keep each word's values monotone (no value comes back), which
//! makes the replay unambiguous.

use nvfp4_dsl::DeviceCopy;
use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

/// The kernels' operation numbers.
const OPS: [&str; 8] = ["add", "min", "max", "and", "or", "xor", "exch", "cas"];

/// The kernels of an integer type `$t`: thread `t` applies operation `op`
/// (an index of [`OPS`]) to word `i = t % slots` with operand `a[t]` (and,
/// for cas, the expected value `b[t]`), its old value into `old[t]` when
/// `keep` is 1, dropped when 0 (a `red` where the order allows one); each
/// operation with another order and scope. `$global` works on `mem` in
/// global memory with every thread of the grid, `$shared` on a copy of
/// `words` in the shared memory of one block (copied back after).
macro_rules! int_kernels {
    ($global:ident, $shared:ident, $t:ident) => {
        #[kernel(targets(sm_90))]
        pub fn $global(mem: &mut [$t], a: &[$t], b: &[$t], old: &mut [$t], op: u32, slots: u32, keep: u32) {
            let t = block_idx_x() * block_dim_x() + thread_idx_x();
            let (i, v, w) = (t % slots, a[t as usize], b[t as usize]);
            if keep == 1 {
                old[t as usize] = match op {
                    0 => atomic_add(mem, i, v, Order::Relaxed, Scope::Gpu),
                    1 => atomic_min(mem, i, v, Order::Acquire, Scope::Cta),
                    2 => atomic_max(mem, i, v, Order::Release, Scope::Sys),
                    3 => atomic_and(mem, i, v, Order::AcqRel, Scope::Gpu),
                    4 => atomic_or(mem, i, v, Order::Relaxed, Scope::Cluster),
                    5 => atomic_xor(mem, i, v, Order::Release, Scope::Gpu),
                    6 => atomic_exch(mem, i, v, Order::Acquire, Scope::Sys),
                    _ => atomic_cas(mem, i, w, v, Order::AcqRel, Scope::Gpu),
                };
            } else {
                match op {
                    0 => {
                        atomic_add(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    1 => {
                        atomic_min(mem, i, v, Order::Release, Scope::Cta);
                    }
                    2 => {
                        atomic_max(mem, i, v, Order::Relaxed, Scope::Sys);
                    }
                    3 => {
                        atomic_and(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    4 => {
                        atomic_or(mem, i, v, Order::Release, Scope::Cluster);
                    }
                    5 => {
                        atomic_xor(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    6 => {
                        atomic_exch(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    _ => {
                        atomic_cas(mem, i, w, v, Order::Release, Scope::Gpu);
                    }
                }
            }
        }

        #[kernel(targets(sm_90))]
        pub fn $shared(words: &mut [$t], a: &[$t], b: &[$t], old: &mut [$t], op: u32, slots: u32, keep: u32) {
            let mem = shared_array::<$t, 64>();
            let t = thread_idx_x();
            if t < slots {
                mem[t] = words[t as usize];
            }
            sync_threads();
            let (i, v, w) = (t % slots, a[t as usize], b[t as usize]);
            if keep == 1 {
                old[t as usize] = match op {
                    0 => atomic_add(mem, i, v, Order::Relaxed, Scope::Gpu),
                    1 => atomic_min(mem, i, v, Order::Acquire, Scope::Cta),
                    2 => atomic_max(mem, i, v, Order::Release, Scope::Sys),
                    3 => atomic_and(mem, i, v, Order::AcqRel, Scope::Gpu),
                    4 => atomic_or(mem, i, v, Order::Relaxed, Scope::Cluster),
                    5 => atomic_xor(mem, i, v, Order::Release, Scope::Gpu),
                    6 => atomic_exch(mem, i, v, Order::Acquire, Scope::Sys),
                    _ => atomic_cas(mem, i, w, v, Order::AcqRel, Scope::Gpu),
                };
            } else {
                match op {
                    0 => {
                        atomic_add(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    1 => {
                        atomic_min(mem, i, v, Order::Release, Scope::Cta);
                    }
                    2 => {
                        atomic_max(mem, i, v, Order::Relaxed, Scope::Sys);
                    }
                    3 => {
                        atomic_and(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    4 => {
                        atomic_or(mem, i, v, Order::Release, Scope::Cluster);
                    }
                    5 => {
                        atomic_xor(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    6 => {
                        atomic_exch(mem, i, v, Order::Relaxed, Scope::Gpu);
                    }
                    _ => {
                        atomic_cas(mem, i, w, v, Order::Release, Scope::Gpu);
                    }
                }
            }
            sync_threads();
            if t < slots {
                words[t as usize] = mem[t];
            }
        }
    };
}

/// [`int_kernels!`] for a float type: `add` alone (`op` and `b` unused).
macro_rules! float_kernels {
    ($global:ident, $shared:ident, $t:ident) => {
        #[kernel(targets(sm_90))]
        pub fn $global(mem: &mut [$t], a: &[$t], b: &[$t], old: &mut [$t], op: u32, slots: u32, keep: u32) {
            let t = block_idx_x() * block_dim_x() + thread_idx_x();
            let (i, v, w) = (t % slots, a[t as usize], b[t as usize]);
            let _ = (w, op);
            if keep == 1 {
                old[t as usize] = atomic_add(mem, i, v, Order::Relaxed, Scope::Gpu);
            } else {
                atomic_add(mem, i, v, Order::Release, Scope::Cluster);
            }
        }

        #[kernel(targets(sm_90))]
        pub fn $shared(words: &mut [$t], a: &[$t], b: &[$t], old: &mut [$t], op: u32, slots: u32, keep: u32) {
            let mem = shared_array::<$t, 64>();
            let t = thread_idx_x();
            if t < slots {
                mem[t] = words[t as usize];
            }
            sync_threads();
            let (i, v, w) = (t % slots, a[t as usize], b[t as usize]);
            let _ = (w, op);
            if keep == 1 {
                old[t as usize] = atomic_add(mem, i, v, Order::Relaxed, Scope::Gpu);
            } else {
                atomic_add(mem, i, v, Order::Release, Scope::Cluster);
            }
            sync_threads();
            if t < slots {
                words[t as usize] = mem[t];
            }
        }
    };
}

int_kernels!(ops_u32_global, ops_u32_shared, u32);
int_kernels!(ops_i32_global, ops_i32_shared, i32);
int_kernels!(ops_u64_global, ops_u64_shared, u64);
int_kernels!(ops_i64_global, ops_i64_shared, i64);
float_kernels!(add_f32_global, add_f32_shared, f32);
float_kernels!(add_f64_global, add_f64_shared, f64);
float_kernels!(add_f16x2_global, add_f16x2_shared, f16x2);
float_kernels!(add_bf16x2_global, add_bf16x2_shared, bf16x2);

/// Every kernel of this file.
pub fn variants() -> Vec<&'static nvfp4_dsl::Variant> {
    [
        ops_u32_global::VARIANTS,
        ops_u32_shared::VARIANTS,
        ops_i32_global::VARIANTS,
        ops_i32_shared::VARIANTS,
        ops_u64_global::VARIANTS,
        ops_u64_shared::VARIANTS,
        ops_i64_global::VARIANTS,
        ops_i64_shared::VARIANTS,
        add_f32_global::VARIANTS,
        add_f32_shared::VARIANTS,
        add_f64_global::VARIANTS,
        add_f64_shared::VARIANTS,
        add_f16x2_global::VARIANTS,
        add_f16x2_shared::VARIANTS,
        add_bf16x2_global::VARIANTS,
        add_bf16x2_shared::VARIANTS,
        histogram::VARIANTS,
        max_by_cas::VARIANTS,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A histogram of `bytes`: each block counts its share in shared memory
/// (relaxed atomics of block scope), then adds its counts to `hist`
/// (relaxed, GPU scope); the results are dropped, so both are `red`.
#[kernel(targets(sm_90))]
pub fn histogram(bytes: &[u8], hist: &mut [u32], n: u32) {
    let counts = shared_array::<u32, 256>();
    let t = thread_idx_x();
    let mut k = t;
    while k < 256 {
        counts[k] = 0;
        k += block_dim_x();
    }
    sync_threads();
    let mut i = block_idx_x() * block_dim_x() + t;
    while i < n {
        atomic_add(counts, u32::from(bytes[i as usize]), 1u32, Order::Relaxed, Scope::Cta);
        i += grid_dim_x() * block_dim_x();
    }
    sync_threads();
    let mut k = t;
    while k < 256 {
        add_count(hist, k, counts[k]);
        k += block_dim_x();
    }
}

/// Adds `count` to `hist[bin]` unless it is 0 (a device function: its
/// dropped atomic is a `red` too).
#[device]
fn add_count(hist: &mut [u32], bin: u32, count: u32) {
    if count != 0 {
        atomic_add(hist, bin, count, Order::Relaxed, Scope::Gpu);
    }
}

/// The largest of `x` (no NaNs), as `f32` bits, into `best[0]`: each
/// thread's largest element by a compare-and-swap loop on the block's word
/// in shared memory, then each block's by one on `best[0]`.
#[kernel(targets(sm_90))]
pub fn max_by_cas(x: &[f32], best: &mut [u32], n: u32) {
    let block_best = shared_array::<u32, 1>();
    if thread_idx_x() == 0 {
        block_best[0u32] = f32::NEG_INFINITY.to_bits();
    }
    sync_threads();
    let mut v = f32::NEG_INFINITY;
    let mut i = block_idx_x() * block_dim_x() + thread_idx_x();
    while i < n {
        v = v.max(x[i as usize]);
        i += grid_dim_x() * block_dim_x();
    }
    let mut old = f32::NEG_INFINITY.to_bits();
    while f32::from_bits(old) < v {
        let seen = atomic_cas(block_best, 0u32, old, v.to_bits(), Order::Relaxed, Scope::Cta);
        if seen == old {
            break;
        }
        old = seen;
    }
    sync_threads();
    if thread_idx_x() == 0 {
        let v = f32::from_bits(block_best[0u32]);
        let mut old = f32::NEG_INFINITY.to_bits();
        while f32::from_bits(old) < v {
            let seen = atomic_cas(best, 0u32, old, v.to_bits(), Order::Relaxed, Scope::Gpu);
            if seen == old {
                break;
            }
            old = seen;
        }
    }
}

/// An element type of the atomics, with what the host needs to check them.
pub trait Word: DeviceCopy + std::fmt::Debug {
    /// How many of the operations (`OPS`) it has: all, or `add`.
    const OPS: u32;
    fn from_bits(b: u64) -> Self;
    fn bits(self) -> u64;
    /// The value operation `op` leaves at a word holding `self`, with
    /// operand `a` (and expected value `b`), on global memory or shared.
    fn apply(self, op: u32, a: Self, b: Self, global: bool) -> Self;
    /// A value for word `slot`: the words' values keep a sign (and an
    /// order of magnitude) each, so that their sums move one way; `exact`
    /// ones (small integers, or a few units of the least subnormal) sum
    /// without rounding.
    fn random(rng: &mut Rng, slot: u32, exact: bool) -> Self;
}

macro_rules! int_word {
    ($($t:ident as $u:ident),*) => {$(
        impl Word for $t {
            const OPS: u32 = 8;
            fn from_bits(b: u64) -> $t {
                b as $t
            }
            fn bits(self) -> u64 {
                self as $u as u64
            }
            fn apply(self, op: u32, a: $t, b: $t, _global: bool) -> $t {
                match op {
                    0 => self.wrapping_add(a),
                    1 => self.min(a),
                    2 => self.max(a),
                    3 => self & a,
                    4 => self | a,
                    5 => self ^ a,
                    6 => a,
                    _ if self == b => a,
                    _ => self,
                }
            }
            fn random(rng: &mut Rng, _slot: u32, _exact: bool) -> $t {
                rng.next_u64() as $t
            }
        }
    )*};
}
int_word!(u32 as u32, i32 as u32, u64 as u64, i64 as u64);

/// `-1.0` for the odd words, `1.0` for the even ones.
fn sign(slot: u32) -> f32 {
    if slot % 2 == 1 { -1.0 } else { 1.0 }
}

/// Word 0 of a float type holds subnormals.
fn subnormal(slot: u32) -> bool {
    slot == 0
}

/// Zero of the same sign for a subnormal: what the GPU does to `f32` on
/// global memory.
fn flush(x: f32) -> f32 {
    if x.is_subnormal() { 0.0f32.copysign(x) } else { x }
}

impl Word for f32 {
    const OPS: u32 = 1;
    fn from_bits(b: u64) -> f32 {
        f32::from_bits(b as u32)
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn apply(self, _op: u32, a: f32, _b: f32, global: bool) -> f32 {
        if global {
            flush(flush(self) + flush(a))
        } else {
            self + a
        }
    }
    fn random(rng: &mut Rng, slot: u32, exact: bool) -> f32 {
        if subnormal(slot) {
            f32::from_bits(1 + rng.below(if exact { 4 } else { 0x7F_FFFF }))
        } else if exact {
            sign(slot) * rng.below(1000) as f32
        } else {
            sign(slot) * rng.uniform(1.0, 2.0)
        }
    }
}

impl Word for f64 {
    const OPS: u32 = 1;
    fn from_bits(b: u64) -> f64 {
        f64::from_bits(b)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn apply(self, _op: u32, a: f64, _b: f64, _global: bool) -> f64 {
        self + a
    }
    fn random(rng: &mut Rng, slot: u32, exact: bool) -> f64 {
        if subnormal(slot) {
            f64::from_bits(
                1 + if exact {
                    u64::from(rng.below(4))
                } else {
                    rng.next_u64() >> 12
                },
            )
        } else if exact {
            f64::from(sign(slot)) * f64::from(rng.below(1000))
        } else {
            f64::from(sign(slot)) * f64::from_bits(0x3FF0_0000_0000_0000 | rng.next_u64() >> 12)
        }
    }
}

/// One half of an `f16x2` or `bf16x2` with its format's rounding.
trait Half: Copy {
    fn from_bits(b: u16) -> Self;
    fn to_bits(self) -> u16;
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
}

impl Half for f16 {
    fn from_bits(b: u16) -> f16 {
        f16::from_bits(b)
    }
    fn to_bits(self) -> u16 {
        f16::to_bits(self)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn from_f64(x: f64) -> f16 {
        f16::from_f64(x)
    }
}

impl Half for bf16 {
    fn from_bits(b: u16) -> bf16 {
        bf16::from_bits(b)
    }
    fn to_bits(self) -> u16 {
        bf16::to_bits(self)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn from_f64(x: f64) -> bf16 {
        bf16::from_f64(x)
    }
}

/// Two halves' bits added half by half, each sum exact in `f64` (the
/// operands of a word are of one magnitude) and rounded once.
fn add_halves<H: Half>(x: u32, y: u32) -> u32 {
    let add = |a: u32, b: u32| {
        let s = H::from_bits(a as u16).to_f64() + H::from_bits(b as u16).to_f64();
        u32::from(H::from_f64(s).to_bits())
    };
    add(x & 0xFFFF, y & 0xFFFF) | add(x >> 16, y >> 16) << 16
}

/// A half's bits for word `slot`: a subnormal, a small integer
/// (`exact`), or a value in [1, 2), of the word's sign; `one` is 1.0's
/// bits and `mantissa` the mantissa's mask.
fn random_half<H: Half>(rng: &mut Rng, slot: u32, exact: bool, one: u16, mantissa: u32) -> u32 {
    let bits = if subnormal(slot) {
        (1 + rng.below(if exact { 4 } else { mantissa })) as u16
    } else if exact {
        H::from_f64(f64::from(sign(slot)) * f64::from(rng.below(4))).to_bits()
    } else {
        H::from_f64(f64::from(sign(slot)) * H::from_bits(one | rng.below(mantissa + 1) as u16).to_f64()).to_bits()
    };
    u32::from(bits)
}

macro_rules! half_word {
    ($($t:ident of $h:ident, one $one:literal, mantissa $m:literal);*) => {$(
        impl Word for $t {
            const OPS: u32 = 1;
            fn from_bits(b: u64) -> $t {
                $t::from_bits(b as u32)
            }
            fn bits(self) -> u64 {
                u64::from(self.to_bits())
            }
            fn apply(self, _op: u32, a: $t, _b: $t, _global: bool) -> $t {
                $t::from_bits(add_halves::<$h>(self.to_bits(), a.to_bits()))
            }
            fn random(rng: &mut Rng, slot: u32, exact: bool) -> $t {
                let lo = random_half::<$h>(rng, slot, exact, $one, $m);
                let hi = random_half::<$h>(rng, slot, exact, $one, $m);
                $t::from_bits(lo | hi << 16)
            }
        }
    )*};
}
half_word!(f16x2 of f16, one 0x3C00, mantissa 0x3FF; bf16x2 of bf16, one 0x3F80, mantissa 0x7F);

/// Checks that the old values of the atomics of one word, `(old, a, b)`
/// with operand `a` and expected value `b`, are those of some order of
/// them from `init`, and that the word ends at that order's last value
/// `fin`. At each value the threads that saw it go next: those that leave
/// it unchanged, then at most one that changes it (values never come back,
/// so no later thread can have seen it).
pub fn replay<T: Word>(init: T, ops: &[(T, T, T)], fin: T, apply: impl Fn(T, T, T) -> T) -> Result<(), String> {
    let mut left = ops.to_vec();
    let mut cur = init;
    while !left.is_empty() {
        let (seen, rest): (Vec<_>, Vec<_>) = left.into_iter().partition(|o| o.0.bits() == cur.bits());
        let (same, change): (Vec<_>, Vec<_>) = seen
            .into_iter()
            .partition(|o: &(T, T, T)| apply(cur, o.1, o.2).bits() == cur.bits());
        match change.as_slice() {
            [o] => cur = apply(cur, o.1, o.2),
            [] if rest.is_empty() => {}
            [] => {
                return Err(format!(
                    "after {} atomics that saw {cur:?} and left it, {} others saw other values: {:?}",
                    same.len(),
                    rest.len(),
                    rest.iter().map(|o| o.0).take(8).collect::<Vec<_>>()
                ));
            }
            more => return Err(format!("{} atomics saw {cur:?} and changed it", more.len())),
        }
        left = rest;
    }
    if fin.bits() != cur.bits() {
        return Err(format!("the atomics end at {cur:?}, memory holds {fin:?}"));
    }
    Ok(())
}

/// A kernel of [`kernels!`]: `(device, config, mem, a, b, old, op, slots,
/// keep)`.
type Launch<T> = fn(
    &Device,
    LaunchConfig,
    &mut DeviceBuffer<T>,
    &DeviceBuffer<T>,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    u32,
    u32,
    u32,
) -> nvfp4_dsl::Result<()>;

/// Runs every operation of `T` through `launch` (on global memory: 4
/// blocks of 64 threads; shared: 1 block of 256), with its results (and
/// for `add` once more with all operands 1: tickets) and without, on 8
/// words, and checks them. Returns the number of atomics checked.
fn check_ops<T: Word>(
    device: &Device,
    rng: &mut Rng,
    name: &str,
    global: bool,
    launch: Launch<T>,
) -> Result<u32, String> {
    let (blocks, threads, slots) = if global { (4, 64, 8) } else { (1, 256, 8) };
    let n = blocks * threads;
    let err = |e: nvfp4_dsl::Error| format!("{name}: {e}");
    let mut checked = 0;
    for op in 0..T::OPS {
        let passes: &[(u32, bool)] = if op == 0 && T::OPS == 8 {
            &[(1, false), (1, true), (0, false)]
        } else {
            &[(1, false), (0, false)]
        };
        for &(keep, tickets) in passes {
            let exact = keep == 0;
            let init: Vec<T> = if tickets {
                vec![T::from_bits(0); slots as usize]
            } else {
                (0..slots).map(|s| T::random(rng, s, exact)).collect()
            };
            let a: Vec<T> = (0..n)
                .map(|t| {
                    if tickets {
                        T::from_bits(1)
                    } else {
                        T::random(rng, t % slots, exact)
                    }
                })
                .collect();
            // Cas expects the word's first value or another thread's.
            let b: Vec<T> = (0..n)
                .map(|t| match rng.below(4) {
                    0 => init[(t % slots) as usize],
                    _ => a[(t % slots + slots * rng.below(n / slots)) as usize],
                })
                .collect();
            let mut mem = device.upload(&init).map_err(err)?;
            let da = device.upload(&a).map_err(err)?;
            let db = device.upload(&b).map_err(err)?;
            let mut old = device
                .upload(&vec![T::from_bits(0x5A5A_5A5A_5A5A_5A5A); n as usize])
                .map_err(err)?;
            let config = LaunchConfig::linear(blocks, threads);
            launch(device, config, &mut mem, &da, &db, &mut old, op, slots, keep).map_err(err)?;
            let fin = device.download(&mem).map_err(err)?;
            let old = device.download(&old).map_err(err)?;
            let what = |s: u32| {
                format!(
                    "{name} {}{} word {s}",
                    OPS[op as usize],
                    ["", " (dropped)"][1 - keep as usize]
                )
            };
            for s in 0..slots {
                let mine = (s..n).step_by(slots as usize);
                let apply = |cur: T, x: T, y: T| cur.apply(op, x, y, global);
                let (i, f) = (init[s as usize], fin[s as usize]);
                if keep == 1 {
                    let ops: Vec<(T, T, T)> = mine.map(|t| (old[t as usize], a[t as usize], b[t as usize])).collect();
                    replay(i, &ops, f, apply).map_err(|e| format!("{}: {e}", what(s)))?;
                } else if op < 6 {
                    let want = mine.fold(i, |cur, t| apply(cur, a[t as usize], b[t as usize]));
                    if want.bits() != f.bits() {
                        return Err(format!("{}: memory holds {f:?}, not {want:?}", what(s)));
                    }
                } else if f.bits() != i.bits() && !mine.clone().any(|t| a[t as usize].bits() == f.bits()) {
                    return Err(format!("{}: memory holds {f:?}, which no atomic stored", what(s)));
                }
                checked += n / slots;
            }
        }
    }
    Ok(checked)
}

/// Checks every operation and element type on both memories; returns a
/// line per type.
pub fn check_all_ops(device: &Device, seed: u64) -> Result<Vec<String>, String> {
    let mut rng = Rng::new(seed);
    let mut lines = Vec::new();
    macro_rules! check {
        ($($t:ident: $global:ident, $shared:ident);*) => {$(
            let g = check_ops::<$t>(device, &mut rng, concat!(stringify!($t), " global"), true, |d, c, m, a, b, o, op, s, k| {
                // SAFETY: `old`, `a` and `b` hold one element per thread;
                // `mem` one per word.
                unsafe { $global::Kernel::launch(d, c, m, a, b, o, op, s, k) }
            })?;
            let s = check_ops::<$t>(device, &mut rng, concat!(stringify!($t), " shared"), false, |d, c, m, a, b, o, op, s, k| {
                // SAFETY: as above; one block, at most 64 words.
                unsafe { $shared::Kernel::launch(d, c, m, a, b, o, op, s, k) }
            })?;
            lines.push(format!("{}: {g} atomics on global memory and {s} on shared memory match", stringify!($t)));
        )*};
    }
    check!(
        u32: ops_u32_global, ops_u32_shared;
        i32: ops_i32_global, ops_i32_shared;
        u64: ops_u64_global, ops_u64_shared;
        i64: ops_i64_global, ops_i64_shared;
        f32: add_f32_global, add_f32_shared;
        f64: add_f64_global, add_f64_shared;
        f16x2: add_f16x2_global, add_f16x2_shared;
        bf16x2: add_bf16x2_global, add_bf16x2_shared
    );
    Ok(lines)
}

/// The histogram of `n` random bytes on `blocks` blocks of 256 threads
/// against the host's count; returns the number of bytes.
pub fn check_histogram(device: &Device, blocks: u32, n: u32, seed: u64) -> Result<u32, String> {
    let mut rng = Rng::new(seed);
    let bytes: Vec<u8> = (0..n).map(|_| rng.next_u32() as u8).collect();
    let err = |e: nvfp4_dsl::Error| format!("histogram: {e}");
    let dbytes = device.upload(&bytes).map_err(err)?;
    let mut hist = device.alloc_zeroed::<u32>(256).map_err(err)?;
    // SAFETY: `hist` has the 256 bins; the kernel reads `bytes[..n]`.
    unsafe {
        histogram::Kernel::launch(device, LaunchConfig::linear(blocks, 256), &dbytes, &mut hist, n).map_err(err)?;
    }
    let got = device.download(&hist).map_err(err)?;
    let mut want = vec![0u32; 256];
    bytes.iter().for_each(|&b| want[usize::from(b)] += 1);
    match (0..256).find(|&k| got[k] != want[k]) {
        Some(k) => Err(format!("histogram bin {k}: {} counted, {} bytes", got[k], want[k])),
        None => Ok(n),
    }
}

/// The maximum of `n` random floats (both signs) by compare-and-swap
/// against the host's; returns `n`.
pub fn check_max_by_cas(device: &Device, blocks: u32, n: u32, seed: u64) -> Result<u32, String> {
    let mut rng = Rng::new(seed);
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1e6, 1e6)).collect();
    let err = |e: nvfp4_dsl::Error| format!("max by cas: {e}");
    let dx = device.upload(&x).map_err(err)?;
    let mut best = device.upload(&[f32::NEG_INFINITY.to_bits()]).map_err(err)?;
    // SAFETY: `best` has one word; the kernel reads `x[..n]`.
    unsafe {
        max_by_cas::Kernel::launch(device, LaunchConfig::linear(blocks, 128), &dx, &mut best, n).map_err(err)?;
    }
    let got = f32::from_bits(device.download(&best).map_err(err)?[0]);
    let want = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if got.to_bits() == want.to_bits() {
        Ok(n)
    } else {
        Err(format!("max by cas: {got}, not {want}"))
    }
}
