//! Declarations of the device intrinsics.
//!
//! These functions exist so that rustc type-checks kernel bodies (and the IDE
//! can help); `#[kernel]` replaces each call by the PTX listed in its
//! documentation. Called on the host they panic: they have no host meaning.
//! Methods of the DSL types (`f16x2::lo`, `f16::to_f32`, `f32::mul_add`, ...)
//! are documented on those types and lower to the PTX their docs name.
//!
//! Unless a doc says otherwise, an intrinsic lowers to the same PTX on every
//! target (`sm_80`, `sm_90`, `sm_100a`).
//!
//! # Methods
//!
//! Kernels can call these methods of Rust's, `half`'s and the DSL's types
//! (their host implementations compute the same values):
//!
//! | method | PTX |
//! | --- | --- |
//! | `slice.len()` | the length parameter passed with every slice |
//! | `x.min(y)`, `x.max(y)` (`f32`, `f64`, `u32`, `i32`, `u64`, `i64`, `usize`) | `min.T`, `max.T` |
//! | `x.mul_add(a, b)` (`f32`, `f64`) | `fma.rn.T` |
//! | `x.abs()`, `x.sqrt()` (`f32`, `f64`) | `abs.T`, `sqrt.rn.T` |
//! | `f32::from_bits(u)`, `x.to_bits()` | `mov.b32` |
//! | `f16::from_f32(x)`, `bf16::from_f32(x)` | `cvt.rn.f16.f32`, `cvt.rn.bf16.f32` |
//! | `h.to_f32()` (`f16`, `bf16`) | `cvt.f32.f16`; for `bf16` an exact shift (`cvt.u32.u16`, `shl.b32 16`) |
//! | `f16::from_bits(u)`, `bf16::from_bits(u)`, `h.to_bits()` | `cvt.u16.u32`, `cvt.u32.u16` |
//! | `f16x2::new(lo, hi)`, `f16x2::splat(h)` | `mov.b32 d, {lo, hi}` |
//! | `f16x2::from_f32s(lo, hi)` | `cvt.rn.f16x2.f32 d, hi, lo` |
//! | `v.lo()`, `v.hi()` (`f16x2`) | `mov.b32 {d, _}, v` / `mov.b32 {_, d}, v` |
//! | `f16x2::from_bits(u)`, `v.to_bits()` | none (same register) |
//! | `u32x4::new(x, y, z, w)`, `v.x` ... | none (four registers) |
//! | `Fp4x2::from_bits(b)`, `E4m3::from_bits(b)`, `E4m3x2::from_bits(h)` | none (same register) |
//! | `p.to_f16x2()` (`Fp4x2`) | sm_100a `cvt.rn.f16x2.e2m1x2`; sm_90: an exact integer sequence (see [`Fp4x2::to_f16x2`](crate::Fp4x2::to_f16x2)) |
//! | `p.to_f16x2()` (`E4m3x2`, sm_90+) | `cvt.rn.f16x2.e4m3x2` |
//! | `s.to_f32()` (`E4m3`, sm_90+) | `cvt.rn.f16x2.e4m3x2`, `cvt.f32.f16` |
//!
//! Operators follow Rust: `+ - *` on integers wrap (`add`, `sub`, `mul.lo`),
//! `/ %` truncate (`div`, `rem`), shifts mask their amount to the width
//! (`and` then `shl`/`shr`); on floats every operation rounds to nearest
//! (`add.rn`, `mul.rn`, `div.rn`: never contracted into an FMA); `f16`/`bf16`
//! arithmetic uses the half-precision instructions (division goes through
//! `f32`, which rounds to the same result). `as` converts as Rust does
//! (`cvt`, saturating float-to-integer with NaN to 0).

use crate::types::{
    Cache, DeviceIndex, Element, Memory, MemoryMut, SharedArray, SharedSlice, Shuffle, WarpSum, f16x2, u32x4,
};

/// Panics: device intrinsics have no host implementation.
#[cold]
#[track_caller]
pub(crate) fn device_only(name: &str) -> ! {
    panic!("`{name}` is a device intrinsic: it runs in #[kernel] bodies (compiled to PTX), not on the host")
}

macro_rules! special_register {
    ($($(#[$doc:meta])* $name:ident => $reg:literal;)*) => {$(
        $(#[$doc])*
        ///
        #[doc = concat!("PTX: `mov.u32 d, ", $reg, ";`")]
        #[inline(always)]
        pub fn $name() -> u32 {
            device_only(stringify!($name))
        }
    )*};
}

special_register! {
    /// Index of the thread in its block, x.
    thread_idx_x => "%tid.x";
    /// Index of the thread in its block, y.
    thread_idx_y => "%tid.y";
    /// Index of the thread in its block, z.
    thread_idx_z => "%tid.z";
    /// Index of the block in the grid, x.
    block_idx_x => "%ctaid.x";
    /// Index of the block in the grid, y.
    block_idx_y => "%ctaid.y";
    /// Index of the block in the grid, z.
    block_idx_z => "%ctaid.z";
    /// Threads per block, x.
    block_dim_x => "%ntid.x";
    /// Threads per block, y.
    block_dim_y => "%ntid.y";
    /// Threads per block, z.
    block_dim_z => "%ntid.z";
    /// Blocks per grid, x.
    grid_dim_x => "%nctaid.x";
    /// Blocks per grid, y.
    grid_dim_y => "%nctaid.y";
    /// Blocks per grid, z.
    grid_dim_z => "%nctaid.z";
    /// Lane of the thread in its warp, `0..32`.
    lane_id => "%laneid";
}

/// Whether the PTX being generated is for `target` or a newer one: a
/// constant, so `if target_at_least(Target::Sm100a) { .. } else { .. }`
/// keeps only one branch in each target's PTX (like `#if __CUDA_ARCH__`).
///
/// PTX: none (folded at compile time).
#[inline(always)]
pub fn target_at_least(target: crate::Target) -> bool {
    let _ = target;
    device_only("target_at_least")
}

/// Lets the next kernel in the stream start launching (programmatic
/// dependent launch): its blocks may be scheduled once every block of this
/// kernel has called this or exited. Needs sm_90 or newer.
///
/// PTX: `griddepcontrol.launch_dependents;`
#[inline(always)]
pub fn launch_dependents() {
    device_only("launch_dependents")
}

/// Waits until the previous kernel in the stream has finished and its
/// memory is visible. A kernel that calls it is launched with programmatic
/// stream serialization (it may start while the previous kernel finishes),
/// so it must call it before reading anything the previous kernel may
/// write, and before writing anything that kernel reads. Without an
/// overlapping launch it returns at once. Needs sm_90 or newer.
///
/// PTX: `griddepcontrol.wait;`
#[inline(always)]
pub fn grid_dependency_wait() {
    device_only("grid_dependency_wait")
}

/// Barrier for all threads of the block; also orders their shared-memory
/// accesses. Every thread of the block must reach it.
///
/// PTX: `bar.sync 0;`
#[inline(always)]
pub fn sync_threads() {
    device_only("sync_threads")
}

/// Barrier for the 32 threads of the warp.
///
/// PTX: `bar.warp.sync -1;`
#[inline(always)]
pub fn sync_warp() {
    device_only("sync_warp")
}

/// The `value` of lane `lane_id() + delta` (own value past lane 31). All 32
/// lanes must call it.
///
/// PTX: `shfl.sync.down.b32 d, value, delta, 0x1f, -1;`
#[inline(always)]
pub fn shfl_down<T: Shuffle>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    device_only("shfl_down")
}

/// The `value` of lane `lane_id() ^ lane_mask`. All 32 lanes must call it.
///
/// PTX: `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, -1;`
#[inline(always)]
pub fn shfl_xor<T: Shuffle>(value: T, lane_mask: u32) -> T {
    let _ = (value, lane_mask);
    device_only("shfl_xor")
}

/// The `value` of lane `src_lane`. All 32 lanes must call it.
///
/// PTX: `shfl.sync.idx.b32 d, value, src_lane, 0x1f, -1;`
#[inline(always)]
pub fn shfl_idx<T: Shuffle>(value: T, src_lane: u32) -> T {
    let _ = (value, src_lane);
    device_only("shfl_idx")
}

/// [`shfl_down`] among the lanes in `mask`; every lane in `mask` must call
/// it with the same `mask`.
///
/// PTX: `shfl.sync.down.b32 d, value, delta, 0x1f, mask;`
#[inline(always)]
pub fn shfl_down_sync<T: Shuffle>(mask: u32, value: T, delta: u32) -> T {
    let _ = (mask, value, delta);
    device_only("shfl_down_sync")
}

/// [`shfl_xor`] among the lanes in `mask`.
///
/// PTX: `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, mask;`
#[inline(always)]
pub fn shfl_xor_sync<T: Shuffle>(mask: u32, value: T, lane_mask: u32) -> T {
    let _ = (mask, value, lane_mask);
    device_only("shfl_xor_sync")
}

/// [`shfl_idx`] among the lanes in `mask`.
///
/// PTX: `shfl.sync.idx.b32 d, value, src_lane, 0x1f, mask;`
#[inline(always)]
pub fn shfl_idx_sync<T: Shuffle>(mask: u32, value: T, src_lane: u32) -> T {
    let _ = (mask, value, src_lane);
    device_only("shfl_idx_sync")
}

/// The sum of `value` over the 32 lanes, in every lane (butterfly order:
/// lane pairs 16 apart first, then 8, 4, 2, 1).
///
/// PTX: five `shfl.sync.bfly.b32` (16, 8, 4, 2, 1), each followed by
/// `add.rn.f32` (or `add.u32`/`add.s32`).
#[inline(always)]
pub fn warp_reduce_sum<T: WarpSum>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_sum")
}

/// Loads `src[index]` with a cache hint (`src[index]` is `Cache::Default`).
///
/// PTX: `ld.global{.cg|.cs|.nc|.nc.L1::no_allocate}.T d, [addr];` or
/// `ld.shared.T` (shared memory takes only `Cache::Default`).
#[inline(always)]
pub fn load<M: Memory + ?Sized, I: DeviceIndex>(src: &M, index: I, hint: Cache) -> M::Elem {
    let _ = (src, index, hint);
    device_only("load")
}

/// Stores `value` to `dst[index]` with a cache hint (`Default`, `Global` or
/// `Streaming`).
///
/// PTX: `st.global{.cg|.cs}.T [addr], value;` or `st.shared.T`.
#[inline(always)]
pub fn store<M: MemoryMut + ?Sized, I: DeviceIndex>(dst: &mut M, index: I, value: M::Elem, hint: Cache) {
    let _ = (dst, index, value, hint);
    device_only("store")
}

/// Loads the 16 bytes that start at element `index` of `src` (whatever its
/// element type). The address must be 16-byte aligned.
///
/// PTX: `ld.global{hint}.v4.u32 {x, y, z, w}, [addr];` or `ld.shared.v4.u32`.
#[inline(always)]
pub fn load_v4<M: Memory + ?Sized, I: DeviceIndex>(src: &M, index: I, hint: Cache) -> u32x4 {
    let _ = (src, index, hint);
    device_only("load_v4")
}

/// Stores 16 bytes at element `index` of `dst`; the address must be 16-byte
/// aligned.
///
/// PTX: `st.global{hint}.v4.u32 [addr], {x, y, z, w};` or `st.shared.v4.u32`.
#[inline(always)]
pub fn store_v4<M: MemoryMut + ?Sized, I: DeviceIndex>(dst: &mut M, index: I, value: u32x4, hint: Cache) {
    let _ = (dst, index, value, hint);
    device_only("store_v4")
}

/// A static shared-memory array, one per call site and block (at most 48 KiB
/// of static shared memory per kernel).
///
/// PTX: `.shared .align 16 .b8 <kernel>_smemN[N * size_of::<T>()];`
#[inline(always)]
pub fn shared_array<T: Element, const N: usize>() -> &'static mut SharedArray<T, N> {
    device_only("shared_array")
}

/// The dynamic shared block (its size is the launch's `shared_bytes`, up to
/// 227 KiB on Hopper), seen as `T` elements starting `byte_offset` bytes in.
/// The block is 1024-byte aligned.
///
/// PTX: `.extern .shared .align 1024 .b8 <kernel>_dyn_smem[];`
#[inline(always)]
pub fn dynamic_shared<T: Element>(byte_offset: u32) -> &'static mut SharedSlice<T> {
    let _ = byte_offset;
    device_only("dynamic_shared")
}

/// Byte permute: byte `i` of the result is chosen by nibble `i` of
/// `selector` (bits 0..16) among the eight bytes of `a` (0..4) and `b`
/// (4..8); when the nibble's bit 3 is set, the byte is instead the chosen
/// byte's sign bit replicated (0x00 or 0xFF). With a table of eight small
/// bytes in `a`, `b` this is a four-way table lookup.
///
/// PTX: `prmt.b32 d, a, b, selector;`
#[inline(always)]
pub fn byte_perm(a: u32, b: u32, selector: u32) -> u32 {
    let _ = (a, b, selector);
    device_only("byte_perm")
}

/// `acc` plus the dot product of the four signed bytes of `a` and of `b`.
///
/// PTX: `dp4a.s32.s32 d, a, b, acc;`
#[inline(always)]
pub fn dp4a_s8(a: u32, b: u32, acc: i32) -> i32 {
    let _ = (a, b, acc);
    device_only("dp4a_s8")
}

/// `acc` plus the dot product of the four unsigned bytes of `a` and the four
/// signed bytes of `b`.
///
/// PTX: `dp4a.u32.s32 d, a, b, acc;`
#[inline(always)]
pub fn dp4a_u8_s8(a: u32, b: u32, acc: i32) -> i32 {
    let _ = (a, b, acc);
    device_only("dp4a_u8_s8")
}

/// Eight e2m1 values packed in a word (byte `j` is an [`Fp4x2`](crate::Fp4x2)
/// holding elements `2j` and `2j + 1`) as four `f16x2`, exactly: result `j`
/// holds element `2j` in its low half and `2j + 1` in its high half.
///
/// PTX: sm_100a `mov.b32 {b0, b1, b2, b3}, word;` and four
/// `cvt.rn.f16x2.e2m1x2`; sm_90/sm_80 (no FP4 conversion): `shl.b32` by 4,
/// then per pair one `prmt.b32` (element `2j` to bits 12..15, `2j + 1` to
/// bits 28..31), `shr`/`and`/`or` into f16 position (the value times 2^-14),
/// and `mul.rn.f16x2` by 2^14.
#[inline(always)]
pub fn decode_e2m1x8(word: u32) -> [f16x2; 4] {
    let _ = word;
    device_only("decode_e2m1x8")
}

/// [`decode_e2m1x8`] times 2^-14 (still exact: the smallest magnitude, 0.5 x
/// 2^-14, is an f16 subnormal). The integer decode of sm_90 yields this
/// directly, so a dot product that folds the 2^14 into a later `f32` scale
/// saves one multiply per pair there.
///
/// PTX: sm_90/sm_80 as [`decode_e2m1x8`] without the final multiply;
/// sm_100a `cvt.rn.f16x2.e2m1x2` then `mul.rn.f16x2` by 2^-14.
#[inline(always)]
pub fn decode_e2m1x8_scaled(word: u32) -> [f16x2; 4] {
    let _ = word;
    device_only("decode_e2m1x8_scaled")
}

/// `a + b` per half. PTX: `add.rn.f16x2 d, a, b;`
#[inline(always)]
pub fn hadd2(a: f16x2, b: f16x2) -> f16x2 {
    let _ = (a, b);
    device_only("hadd2")
}

/// `a * b` per half. PTX: `mul.rn.f16x2 d, a, b;`
#[inline(always)]
pub fn hmul2(a: f16x2, b: f16x2) -> f16x2 {
    let _ = (a, b);
    device_only("hmul2")
}

/// `a * b + c` per half, rounded once. PTX: `fma.rn.f16x2 d, a, b, c;`
#[inline(always)]
pub fn hfma2(a: f16x2, b: f16x2, c: f16x2) -> f16x2 {
    let _ = (a, b, c);
    device_only("hfma2")
}

/// Inline PTX: `ptx!(T, "template", inputs...)` runs the template with
/// `{d}` replaced by a fresh register of type `T` (the result; leave it out
/// for `()`), and `{0}`, `{1}`, ... by the inputs (scalars or `f16x2`).
///
/// ```ignore
/// let clock: u32 = ptx!(u32, "mov.u32 {d}, %clock;");
/// let sum: u32 = ptx!(u32, "add.u32 {d}, {0}, {1};", a, b);
/// ptx!((), "membar.gl;");
/// ```
#[macro_export]
macro_rules! ptx {
    ($ty:ty, $template:literal $(, $input:expr)* $(,)?) => {{
        $( let _ = $input; )*
        $crate::intrinsics::inline_ptx_result::<$ty>($template)
    }};
}

/// The value `ptx!` stands for on the host side of type checking.
#[doc(hidden)]
pub fn inline_ptx_result<T>(template: &str) -> T {
    let _ = template;
    device_only("ptx!")
}

/// `true` in exactly one lane of the warp (the leader the hardware elects),
/// `false` in the others; all 32 lanes must call it. Needs sm_90 or newer.
///
/// PTX (ISA 8.0): `elect.sync _|p, -1;`
#[inline(always)]
pub fn elect_sync() -> bool {
    device_only("elect_sync")
}
