//! Declarations of the device intrinsics.
//!
//! These functions exist so that rustc type-checks kernel bodies (and the IDE
//! can help); `#[kernel]` replaces each call by the PTX listed in its
//! documentation. Called on the host they panic: they have no host meaning.
//! Methods of the DSL types (`f16x2::lo`, `f16::to_f32`, `f32::mul_add`, ...)
//! are documented on those types and lower to the PTX their docs name.
//!
//! Unless a doc says otherwise, an intrinsic lowers to the same PTX on every
//! target (`sm_80`, `sm_90`, `sm_90a`, `sm_100a`). Those marked sm_90a
//! (`wgmma_*`, `setmaxnreg_*`) exist only there, those marked sm_100a
//! (`tcgen05_*`) only on sm_100a: a kernel listing another target is a
//! compile error pointing at the call.
//!
//! # Methods
//!
//! Kernels can call these methods of Rust's, `half`'s and the DSL's types
//! (their host implementations compute the same values):
//!
//! | method | PTX |
//! | --- | --- |
//! | `slice.len()`, `array.len()` | the length parameter passed with every slice; a local array's length, a constant |
//! | `x.min(y)`, `x.max(y)` (`f32`, `f64`, `u8`, `u16`, `u32`, `i32`, `u64`, `i64`, `usize`) | `min.T`, `max.T` |
//! | `x.mul_add(a, b)` (`f32`, `f64`) | `fma.rn.T` |
//! | `x.abs()`, `x.sqrt()` (`f32`, `f64`) | `abs.T`, `sqrt.rn.T` |
//! | `f32::from_bits(u)`, `x.to_bits()`, `f64::from_bits(u)` | `mov.b32`, `mov.b64` |
//! | `u8::from(x)`, `u16::from(x)`, `u32::from(x)`, `u64::from(x)`, `usize::from(x)`, `i32::from(x)`, `i64::from(x)`, `f32::from(x)`, `f64::from(x)`: std's lossless conversions (and `half`'s from `f16`, `bf16`) | as `x as T`: `cvt`, `selp` from `bool`; halves through `cvt.f32.f16` or a shift |
//! | `x.wrapping_add(y)`, `x.wrapping_sub(y)`, `x.wrapping_mul(y)`, `x.wrapping_div(y)`, `x.wrapping_rem(y)`, `x.wrapping_neg()`, `x.wrapping_shl(n)`, `x.wrapping_shr(n)`, `x.wrapping_abs()`, `x.wrapping_pow(e)` (integers) | the operators' PTX (they wrap already) |
//! | `x.saturating_add(y)`, `x.saturating_sub(y)` (integers) | unsigned: `min`/`max` then `add`/`sub`; `i32`: `add.sat.s32`, `sub.sat.s32`; `i64`: the wrapped result and an overflow test (`xor`, `and`, `setp`, `selp`) |
//! | `x.saturating_mul(y)` (integers) | `mul.lo` and `mul.hi` with a `selp` (`mul.wide.s32` and a clamp for `i32`) |
//! | `x.leading_zeros()`, `x.trailing_zeros()`, `x.count_ones()`, `x.count_zeros()`, `x.reverse_bits()` (integers) | `clz`, `brev` + `clz`, `popc`, `brev` (adjusted for `u8`/`u16`) |
//! | `x.rotate_left(n)`, `x.rotate_right(n)` (integers) | 32-bit: `shf.l.wrap.b32`, `shf.r.wrap.b32`; others: `shl`, `shr`, `or` |
//! | `x.pow(e)` (integers) | multiplications by squaring, unrolled for a constant `e`, else a loop |
//! | `x.abs()`, `x.signum()` (`i32`, `i64`) | `abs.T` (`MIN.abs()` is `MIN`, as in release builds); `setp` + `selp` |
//! | `x.is_power_of_two()` (unsigned) | `popc`, `setp.eq` |
//! | `x.div_ceil(y)` (unsigned) | `div`, `mul.lo`, `setp`, `selp`, `add` (`MAX` for `y = 0`, as `x / 0`) |
//! | `x.is_multiple_of(y)` (unsigned) | `rem`, `setp.eq`; with a run-time `y`, `x == 0` where `y = 0` (`setp`, `and.pred`, `or.pred`), as in Rust |
//! | `x.clamp(min, max)` (integers, `f32`, `f64`) | integers: `max` then `min`; floats: `setp` + `selp` in Rust's order (NaN stays NaN) |
//! | `x.floor()`, `x.ceil()`, `x.trunc()`, `x.round_ties_even()` (`f32`, `f64`) | `cvt.rmi`, `cvt.rpi`, `cvt.rzi`, `cvt.rni` |
//! | `x.round()`, `x.fract()` (`f32`, `f64`) | half away from zero from `cvt.rzi`, `sub`, `setp`, `copysign`, `add`; `x - x.trunc()` |
//! | `x.copysign(s)`, `x.recip()`, `x.signum()` (`f32`, `f64`) | `copysign.T`, `rcp.rn.T`, `copysign` + `setp.nan` + `selp` |
//! | `x.powi(n)` (`f32`, `f64`) | `mul.rn` by squaring in the order of Rust's `__powisf2`, `div.rn` for `n < 0` |
//! | `x.is_nan()`, `x.is_finite()`, `x.is_infinite()`, `x.is_sign_negative()`, `x.is_sign_positive()` (`f32`, `f64`) | `setp.nan`, `testp.finite`, `testp.infinite`, the sign bit |
//! | `x.exp2()`, `x.log2()`, `x.sin()`, `x.cos()`, `x.tanh()` (`f32`) | `ex2.approx.f32`, `lg2.approx.f32`, `sin.approx.f32`, `cos.approx.f32`, `tanh.approx.f32` (accuracy in the README) |
//! | `x.exp()`, `x.ln()` (`f32`) | `mul.rn.f32` by log2(e) then `ex2.approx.f32`; `lg2.approx.f32` then `mul.rn.f32` by ln(2) |
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
//! | `SmemDesc::new(addr)`, `d.with_leading_byte_offset(b)`, `d.with_stride_byte_offset(b)`, `d.with_base_offset(o)`, `d.with_swizzle(s)`, `d.offset(b)`, `d.bits()` | integer `and`/`or`/`shl`/`add` on a 64-bit register, folded for constants |
//! | `InstrDesc::mxf4nvf4(m, n)`, `i.bits()` | integer `shr`/`shl`/`or`, folded for constants |
//! | `WgmmaDesc::new(addr)`, `d.with_leading_byte_offset(b)`, `d.with_stride_byte_offset(b)`, `d.with_base_offset(o)`, `d.with_swizzle(s)`, `d.offset(b)`, `d.bits()` | the sm_90 descriptor's fields by integer `and`/`or`/`shl`/`add`, folded for constants |
//! | `bf16x2::new(lo, hi)` | `mov.b32 d, {lo, hi}` |
//! | `bf16x2::from_bits(u)`, `v.to_bits()` (`bf16x2`) | none (same register) |
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

/// The GPU's global timer in nanoseconds, the same clock on every
/// multiprocessor (its resolution is a microsecond or finer): for
/// timelines of a launch's blocks. The emulator's timer counts the block's
/// warp instructions instead.
///
/// PTX: `mov.u64 d, %globaltimer;`
#[inline(always)]
pub fn global_timer() -> u64 {
    device_only("global_timer")
}

/// Whether the PTX being generated has `target`'s features
/// ([`Target::has`](crate::Target::has): `target` itself or a newer plain
/// target; `Target::Sm90a` and `Target::Sm100a` only themselves): a
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
/// accesses. Every thread of the block must reach it. (Barrier 0; see
/// [`named_barrier_sync`] for the others.)
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

// ----- Asynchronous copies, mbarriers and the Blackwell tensor cores -----

use crate::types::{InstrDesc, SharedMemory, SmemDesc, TensorMap, WgmmaDesc, bf16x2};

/// The 32-bit shared-memory address of `mem[index]` (for descriptors and
/// tensor-memory slots).
///
/// PTX: `mov.u32 d, <array>;` plus the element's offset.
#[inline(always)]
pub fn shared_address<M: SharedMemory, I: DeviceIndex>(mem: &M, index: I) -> u32 {
    let _ = (mem, index);
    device_only("shared_address")
}

/// Initialises the mbarrier `bars[index]` to expect `count` arrivals per
/// phase. Needs sm_90 or newer.
///
/// PTX: `mbarrier.init.shared::cta.b64 [bar], count;`
#[inline(always)]
pub fn mbarrier_init<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, count: u32) {
    let _ = (bars, index, count);
    device_only("mbarrier_init")
}

/// Makes initialised mbarriers visible to the asynchronous units (call once
/// after the inits, before the barrier that publishes them).
///
/// PTX (ISA 8.0): `fence.mbarrier_init.release.cluster;`
#[inline(always)]
pub fn fence_mbarrier_init() {
    device_only("fence_mbarrier_init")
}

/// Arrives once on `bars[index]`.
///
/// PTX: `mbarrier.arrive.shared::cta.b64 _, [bar];`
#[inline(always)]
pub fn mbarrier_arrive<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I) {
    let _ = (bars, index);
    device_only("mbarrier_arrive")
}

/// Arrives once on `bars[index]` and adds `bytes` to the transaction count
/// the current phase waits for (the bulk copies that name the barrier
/// complete them).
///
/// PTX (ISA 8.0): `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes;`
#[inline(always)]
pub fn mbarrier_arrive_expect_tx<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, bytes: u32) {
    let _ = (bars, index, bytes);
    device_only("mbarrier_arrive_expect_tx")
}

/// Whether the phase of `bars[index]` with parity `parity` has completed
/// (waits a bounded time).
///
/// PTX: `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity;`
#[inline(always)]
pub fn mbarrier_try_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32) -> bool {
    let _ = (bars, index, parity);
    device_only("mbarrier_try_wait_parity")
}

/// Waits until the phase of `bars[index]` with parity `parity` has
/// completed. A fresh barrier is in phase 0, so waiting for parity 1
/// returns at once (the "previous" phase counts as complete).
///
/// PTX: a loop around `mbarrier.try_wait.parity.shared::cta.b64`.
#[inline(always)]
pub fn mbarrier_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32) {
    let _ = (bars, index, parity);
    device_only("mbarrier_wait_parity")
}

/// Adds `value` to `dst[index]` atomically and returns the old value, with
/// acquire and release semantics at GPU scope: writes this thread made (or
/// acquired) before it are visible to a thread that reads its result with a
/// later acquire, and writes released before the increments it reads are
/// visible to this thread after it. For counters that blocks of a launch
/// use to find which of them arrives last.
///
/// PTX: `atom.acq_rel.gpu.global.add.u32 old, [addr], value;`
#[inline(always)]
pub fn atomic_add_acq_rel_gpu<I: DeviceIndex>(dst: &mut [u32], index: I, value: u32) -> u32 {
    let _ = (dst, index, value);
    device_only("atomic_add_acq_rel_gpu")
}

/// A memory fence with acquire and release semantics at GPU scope: orders
/// this thread's memory accesses before it against those after it, as seen
/// by any thread of the GPU that synchronises with this one.
///
/// PTX: `fence.acq_rel.gpu;`
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    device_only("fence_acq_rel_gpu")
}

/// Orders this thread's earlier shared-memory writes before later accesses
/// of the asynchronous proxy (bulk copies, tensor cores).
///
/// PTX (ISA 8.0): `fence.proxy.async.shared::cta;`
#[inline(always)]
pub fn fence_proxy_async_shared() {
    device_only("fence_proxy_async_shared")
}

/// Starts copying `bytes` (a multiple of 16; both addresses 16-byte aligned)
/// from `src[src_index..]` to `dst[dst_index..]`; the copy completes
/// `bytes` transactions on `bars[bar_index]`.
///
/// PTX (ISA 8.0): `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes, [bar];`
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cp_async_bulk_global_to_shared<
    D: SharedMemory,
    I: DeviceIndex,
    T: Element,
    J: DeviceIndex,
    B: SharedMemory<Elem = u64>,
    K: DeviceIndex,
>(
    dst: &D,
    dst_index: I,
    src: &[T],
    src_index: J,
    bytes: u32,
    bars: &B,
    bar_index: K,
) {
    let _ = (dst, dst_index, src, src_index, bytes, bars, bar_index);
    device_only("cp_async_bulk_global_to_shared")
}

/// Starts copying the box of `map` at coordinates (`c0` innermost, `c1`)
/// to `dst[dst_index..]` (with the map's swizzle); the copy completes the
/// box's bytes on `bars[bar_index]`.
///
/// PTX (ISA 8.0): `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, {c0, c1}], [bar];`
#[inline(always)]
pub fn cp_async_bulk_tensor_2d_global_to_shared<
    D: SharedMemory,
    I: DeviceIndex,
    B: SharedMemory<Elem = u64>,
    K: DeviceIndex,
>(
    dst: &D,
    dst_index: I,
    map: TensorMap,
    c0: i32,
    c1: i32,
    bars: &B,
    bar_index: K,
) {
    let _ = (dst, dst_index, map, c0, c1, bars, bar_index);
    device_only("cp_async_bulk_tensor_2d_global_to_shared")
}

/// Allocates `columns` (a constant power of two, 32..=512) of tensor memory
/// and writes its address to `slot[index]`; the whole warp calls it.
/// sm_100a.
///
/// PTX: `tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], columns;`
#[inline(always)]
pub fn tcgen05_alloc<M: SharedMemory<Elem = u32>, I: DeviceIndex>(slot: &M, index: I, columns: u32) {
    let _ = (slot, index, columns);
    device_only("tcgen05_alloc")
}

/// Frees tensor memory allocated with [`tcgen05_alloc`] (same column
/// count); the whole warp calls it. sm_100a.
///
/// PTX: `tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, columns;`
#[inline(always)]
pub fn tcgen05_dealloc(tmem_address: u32, columns: u32) {
    let _ = (tmem_address, columns);
    device_only("tcgen05_dealloc")
}

/// Gives up the right to allocate more tensor memory in this block. sm_100a.
///
/// PTX: `tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;`
#[inline(always)]
pub fn tcgen05_relinquish_alloc_permit() {
    device_only("tcgen05_relinquish_alloc_permit")
}

/// Copies 32 rows x 16 bytes of shared memory (described by `src`) into 4
/// columns at `tmem_address` of each of the four 32-lane quarters of tensor
/// memory: one 128-row x 4-scale block of the blocked scale layout. Issued
/// by one thread. sm_100a.
///
/// PTX: `tcgen05.cp.cta_group::1.32x128b.warpx4 [taddr], src;`
#[inline(always)]
pub fn tcgen05_cp_32x128b_warpx4(tmem_address: u32, src: SmemDesc) {
    let _ = (tmem_address, src);
    device_only("tcgen05_cp_32x128b_warpx4")
}

/// Block-scaled NVFP4 MMA, `D (+)= A x B^T`: A (M x 64) and B (N x 64) E2M1
/// from shared memory, 4 UE4M3 scales per row of each (one per 16 values)
/// from tensor memory, f32 D in tensor memory; `accumulate` false
/// overwrites D. Issued by one thread. sm_100a.
///
/// PTX (ISA 8.7): `tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [d], a, b, idesc, [sfa], [sfb], p;`
#[inline(always)]
pub fn tcgen05_mma_mxf4nvf4(
    d_tmem: u32,
    a: SmemDesc,
    b: SmemDesc,
    idesc: InstrDesc,
    sfa_tmem: u32,
    sfb_tmem: u32,
    accumulate: bool,
) {
    let _ = (d_tmem, a, b, idesc, sfa_tmem, sfb_tmem, accumulate);
    device_only("tcgen05_mma_mxf4nvf4")
}

/// Arrives once on `bars[index]` when all tcgen05 operations this thread
/// issued before have completed. sm_100a.
///
/// PTX: `tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];`
#[inline(always)]
pub fn tcgen05_commit<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I) {
    let _ = (bars, index);
    device_only("tcgen05_commit")
}

/// Loads `N` consecutive 32-bit columns of one tensor-memory lane per
/// thread: thread `t` of the warp reads lane `lane(tmem_address) + t`
/// (a warp may access only its quarter `32 * (warp % 4)..`). Read the
/// values after [`tcgen05_wait_ld`]. `N` is 1, 2, 4, ... 128. sm_100a.
///
/// PTX: `tcgen05.ld.sync.aligned.32x32b.xN.b32 {..}, [taddr];`
#[inline(always)]
pub fn tcgen05_ld_32x32b<const N: usize>(tmem_address: u32) -> [u32; N] {
    let _ = tmem_address;
    device_only("tcgen05_ld_32x32b")
}

/// Waits for this thread's tensor-memory loads. sm_100a.
///
/// PTX: `tcgen05.wait::ld.sync.aligned;`
#[inline(always)]
pub fn tcgen05_wait_ld() {
    device_only("tcgen05_wait_ld")
}

/// Orders earlier tcgen05 operations before a following thread
/// synchronisation. sm_100a.
///
/// PTX: `tcgen05.fence::before_thread_sync;`
#[inline(always)]
pub fn tcgen05_fence_before_thread_sync() {
    device_only("tcgen05_fence_before_thread_sync")
}

/// Orders later tcgen05 operations after a preceding thread
/// synchronisation. sm_100a.
///
/// PTX: `tcgen05.fence::after_thread_sync;`
#[inline(always)]
pub fn tcgen05_fence_after_thread_sync() {
    device_only("tcgen05_fence_after_thread_sync")
}

/// Waits at barrier `id` (1 to 15; 0 is [`sync_threads`]'s) until
/// `threads` threads (a multiple of 32, whole warps) have arrived, with
/// [`named_barrier_sync`] or [`named_barrier_arrive`]; orders shared-memory
/// accesses like `sync_threads`. Lets a subset of the block (the consumer
/// warpgroups of a warp-specialised kernel, say) synchronise.
///
/// PTX: `bar.sync id, threads;`
#[inline(always)]
pub fn named_barrier_sync(id: u32, threads: u32) {
    let _ = (id, threads);
    device_only("named_barrier_sync")
}

/// Arrives at barrier `id` without waiting (a producer signalling
/// consumers that wait with [`named_barrier_sync`] on the same count).
///
/// PTX: `bar.arrive id, threads;`
#[inline(always)]
pub fn named_barrier_arrive(id: u32, threads: u32) {
    let _ = (id, threads);
    device_only("named_barrier_arrive")
}

/// The block's rank in its thread-block cluster, `0..cluster_size()`
/// (0 when the launch has no clusters). Needs sm_90 or newer.
///
/// PTX: `mov.u32 d, %cluster_ctarank;`
#[inline(always)]
pub fn cluster_cta_rank() -> u32 {
    device_only("cluster_cta_rank")
}

/// Blocks in the cluster (1 when the launch has no clusters; set with
/// [`LaunchConfig::cluster`](crate::LaunchConfig::cluster)). Needs sm_90 or
/// newer.
///
/// PTX: `mov.u32 d, %cluster_nctarank;`
#[inline(always)]
pub fn cluster_size() -> u32 {
    device_only("cluster_size")
}

/// Arrives at the cluster barrier, releasing this thread's earlier memory
/// accesses to the cluster; pair with [`cluster_wait`]. Every thread of
/// every block of the cluster arrives; the warp must be converged.
///
/// PTX (ISA 8.0): `barrier.cluster.arrive.release.aligned;`
#[inline(always)]
pub fn cluster_arrive() {
    device_only("cluster_arrive")
}

/// Arrives at the cluster barrier without ordering memory: for a barrier
/// that only keeps blocks alive (a block whose shared memory the others
/// read must not exit before they are done), where every access it must
/// cover has completed (its value used) before the arrive. Pair with
/// [`cluster_wait`]; the warp must be converged.
///
/// PTX (ISA 8.0): `barrier.cluster.arrive.relaxed.aligned;`
#[inline(always)]
pub fn cluster_arrive_relaxed() {
    device_only("cluster_arrive_relaxed")
}

/// Waits until every thread of the cluster has arrived at the cluster
/// barrier ([`cluster_arrive`]); their released accesses are then visible.
///
/// PTX (ISA 8.0): `barrier.cluster.wait.acquire.aligned;`
#[inline(always)]
pub fn cluster_wait() {
    device_only("cluster_wait")
}

/// [`cluster_arrive`] then [`cluster_wait`]: a barrier for every thread of
/// every block of the cluster, which also makes their shared-memory writes
/// visible to the cluster's other blocks ([`load_cluster`]).
///
/// PTX (ISA 8.0): `barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;`
#[inline(always)]
pub fn cluster_sync() {
    device_only("cluster_sync")
}

/// Reads `src[index]` of block `cta_rank`'s shared memory, a block of this
/// thread's cluster (distributed shared memory). That block must not have
/// exited: synchronise with [`cluster_sync`] before it does.
///
/// PTX: `mapa.shared::cluster.u32 a, addr, rank; ld.shared::cluster.T d, [a];` (`.v4.u32` for `u32x4`)
#[inline(always)]
pub fn load_cluster<M: SharedMemory, I: DeviceIndex>(src: &M, index: I, cta_rank: u32) -> M::Elem {
    let _ = (src, index, cta_rank);
    device_only("load_cluster")
}

/// Makes the warp's earlier register writes (accumulators, A fragments)
/// and shared-memory accesses visible to the warpgroup MMAs that follow:
/// needed before the first `wgmma_*` and whenever their registers were
/// written since the last one. The whole warpgroup executes it. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.fence.sync.aligned;`
#[inline(always)]
pub fn wgmma_fence() {
    device_only("wgmma_fence")
}

/// Closes the warp's `wgmma_*` issued since the last commit into one group,
/// for [`wgmma_wait_group`]. The whole warpgroup executes it. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.commit_group.sync.aligned;`
#[inline(always)]
pub fn wgmma_commit_group() {
    device_only("wgmma_commit_group")
}

/// Waits until at most `pending` (a constant, 0 to 7) of the warp's
/// committed wgmma groups are unfinished. Until then the accumulators and
/// register A fragments of the unfinished ones must not be read or
/// written, and the shared memory they read must not be overwritten.
/// sm_90a.
///
/// PTX (ISA 8.0): `wgmma.wait_group.sync.aligned pending;`
#[inline(always)]
pub fn wgmma_wait_group(pending: u32) {
    let _ = pending;
    device_only("wgmma_wait_group")
}

/// Warpgroup MMA `acc (+)= A x B` with f32 accumulators: A 64 x 16 f16 from
/// registers (`a`: warp `w` of the warpgroup holds rows `16w..16w+16`; with
/// `g = lane / 4`, `t = lane % 4`: `a[0]` row g, columns 2t, 2t+1; `a[1]`
/// row g+8, the same columns; `a[2]`, `a[3]` the same rows at columns
/// 2t+8, 2t+9), B 16 x n f16 from shared memory through `b` (K-major: each
/// of the n columns holds its 16 K values contiguously). `acc` holds
/// `N = n / 2` values per thread (n a multiple of 8 up to 256): for each
/// 8-column chunk i, `acc[4i]`, `acc[4i+1]` are row g, columns 8i+2t and
/// 8i+2t+1, `acc[4i+2]`, `acc[4i+3]` row g+8. `accumulate` false
/// overwrites `acc`. Asynchronous: issue after [`wgmma_fence`], commit with
/// [`wgmma_commit_group`], and touch `acc` and `a` only after the
/// [`wgmma_wait_group`] that covers it. The whole warpgroup executes it.
/// sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.f16.f16 {acc..}, {a..}, b, p, 1, 1, 0;`
#[inline(always)]
pub fn wgmma_f16_rs<const N: usize>(acc: &mut [f32; N], a: [f16x2; 4], b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_f16_rs")
}

/// [`wgmma_f16_rs`] with bf16 inputs. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.bf16.bf16 {acc..}, {a..}, b, p, 1, 1, 0;`
#[inline(always)]
pub fn wgmma_bf16_rs<const N: usize>(acc: &mut [f32; N], a: [bf16x2; 4], b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_bf16_rs")
}

/// [`wgmma_f16_rs`] with A (64 x 16, K-major) from shared memory through
/// the descriptor `a` as well. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.f16.f16 {acc..}, a, b, p, 1, 1, 0, 0;`
#[inline(always)]
pub fn wgmma_f16_ss<const N: usize>(acc: &mut [f32; N], a: WgmmaDesc, b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_f16_ss")
}

/// [`wgmma_f16_ss`] with bf16 inputs. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.bf16.bf16 {acc..}, a, b, p, 1, 1, 0, 0;`
#[inline(always)]
pub fn wgmma_bf16_ss<const N: usize>(acc: &mut [f32; N], a: WgmmaDesc, b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_bf16_ss")
}

/// Raises the warpgroup's per-thread register limit to `registers` (a
/// constant multiple of 8, 24 to 256), taking them from the block's pool
/// that other warpgroups released with [`setmaxnreg_dec`]. The whole
/// warpgroup executes it; the kernel needs `launch_bounds` with a minimum
/// of one block. sm_90a.
///
/// PTX (ISA 8.0): `setmaxnreg.inc.sync.aligned.u32 registers;`
#[inline(always)]
pub fn setmaxnreg_inc(registers: u32) {
    let _ = registers;
    device_only("setmaxnreg_inc")
}

/// Lowers the warpgroup's per-thread register limit to `registers` (a
/// constant multiple of 8, 24 to 256), returning the rest to the block's
/// pool. sm_90a.
///
/// PTX (ISA 8.0): `setmaxnreg.dec.sync.aligned.u32 registers;`
#[inline(always)]
pub fn setmaxnreg_dec(registers: u32) {
    let _ = registers;
    device_only("setmaxnreg_dec")
}
