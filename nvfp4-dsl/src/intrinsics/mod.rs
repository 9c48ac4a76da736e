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
//! (their host implementations compute the same values), each also in
//! Rust's path form, `T::method(x, ..)` for `x.method(..)` (`f32::max(a, b)`,
//! `f16x2::lo(v)`), which lowers to the same PTX:
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
//! | `x.rsqrt_approx()`, `x.recip_approx()` (`f32`, [`ApproxF32`]) | `rsqrt.approx.f32`, `rcp.approx.f32` (accuracy in the README) |
//! | `f16::from_f32(x)`, `bf16::from_f32(x)` | `cvt.rn.f16.f32`, `cvt.rn.bf16.f32` |
//! | `h.to_f32()` (`f16`, `bf16`) | `cvt.f32.f16`; for `bf16` an exact shift (`cvt.u32.u16`, `shl.b32 16`) |
//! | `f32::from_f32(x)`, `f64::from_f32(x)`, `x.to_f32()` (`f32`, `f64`): [`Float`](crate::generic::Float)'s, for generic code | none; `cvt.f64.f32`; none; `cvt.rn.f32.f64` |
//! | `f16::from_bits(u)`, `bf16::from_bits(u)`, `h.to_bits()` | `cvt.u16.u32`, `cvt.u32.u16` |
//! | `f16x2::new(lo, hi)`, `f16x2::splat(h)` | `mov.b32 d, {lo, hi}` |
//! | `f16x2::from_f32s(lo, hi)` | `cvt.rn.f16x2.f32 d, hi, lo` |
//! | `v.lo()`, `v.hi()` (`f16x2`) | `mov.b32 {d, _}, v` / `mov.b32 {_, d}, v` |
//! | `f16x2::from_bits(u)`, `v.to_bits()` | none (same register) |
//! | `u32x4::new(x, y, z, w)`, `v.x` ... | none (four registers) |
//! | `Fp4x2::from_bits(b)`, `E4m3::from_bits(b)`, `E4m3x2::from_bits(h)` and `.to_bits()` of each | none (same register) |
//! | `Fp4x2::from_f32s(lo, hi)` | sm_100a `cvt.rn.satfinite.e2m1x2.f32`; sm_90: 18 instructions a value (see [`Fp4x2::from_f32s`](crate::Fp4x2::from_f32s)) |
//! | `E4m3::from_f32(x)`, `E4m3x2::from_f32s(lo, hi)` (sm_90+) | `cvt.rn.satfinite.e4m3x2.f32`, `cvt.u32.u16` |
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

mod atomic;
mod convert;
mod float;
mod memory;
mod tcgen05;
mod threads;
mod wgmma;

pub use atomic::*;
pub use convert::*;
pub use float::*;
pub use memory::*;
pub use tcgen05::*;
pub use threads::*;
pub use wgmma::*;

/// Panics: device intrinsics have no host implementation.
#[cold]
#[track_caller]
pub(crate) fn device_only(name: &str) -> ! {
    panic!("`{name}` is a device intrinsic: it runs in #[kernel] bodies (compiled to PTX), not on the host")
}

/// Inline PTX: `ptx!(T, "template", inputs...)` runs the template with
/// `{d}` replaced by a fresh register of type `T` (the result; leave it out
/// for `()`), and `{0}`, `{1}`, ... by the inputs (scalars or `f16x2`).
/// As in `format!`, `{{` and `}}` are literal braces: a PTX block
/// `{{ .. }}`, a vector operand `{{{0}, {1}}}`.
///
/// ```ignore
/// let clock: u32 = ptx!(u32, "mov.u32 {d}, %clock;");
/// let sum: u32 = ptx!(u32, "add.u32 {d}, {0}, {1};", a, b);
/// ptx!((), "membar.gl;");
/// // Two f16 packed into one word, the first in the low half.
/// let pair: u32 = ptx!(u32, "mov.b32 {d}, {{{0}, {1}}};", lo, hi);
/// ```
///
/// # Registers
///
/// The result and each input are registers of the PTX type that their Rust
/// type lives in (a constant input is an immediate instead):
///
/// | Rust type | PTX register |
/// | --- | --- |
/// | `u8`, `u16`, `u32`, `i32`, `f16x2` | `.b32` |
/// | `u64`, `usize`, `i64` | `.b64` |
/// | `f16`, `bf16` | `.b16` |
/// | `f32` | `.f32` |
/// | `f64` | `.f64` |
/// | `bool` | `.pred` |
///
/// So a `u8` or `u16` result is a 32-bit register, which the template must
/// leave zero-extended (the kernel's arithmetic and comparisons on it rely
/// on the upper bits being clear). An instruction whose operand must be a
/// `.b8` or `.b16` register (ptxas checks, and so does the emulator:
/// `Arguments mismatch for instruction`) writes a temporary of that
/// width, declared in a block of its own, then widens it into `{d}`. The
/// block matters: without it, a template used twice in one kernel (a
/// device function called twice, an unrolled loop) declares its register
/// twice in the same scope, which ptxas and the emulator reject
/// (`Duplicate definition of variable`).
///
/// ```ignore
/// // Two f32 to two e2m1 codes in one byte, `lo` in the low nibble
/// // (`cvt` puts its first source in the high one): `.e2m1x2` is written
/// // to a `.b8` register.
/// let fp4: u8 = ptx!(
///     u8,
///     "{{ .reg .b8 t; cvt.rn.satfinite.e2m1x2.f32 t, {1}, {0}; cvt.u32.u8 {d}, t; }}",
///     lo,
///     hi
/// );
/// // Two f32 to two e4m3 bytes, `lo` in the low byte: `.e4m3x2` and
/// // `.e5m2x2` are written to a `.b16` register.
/// let fp8: u16 = ptx!(
///     u16,
///     "{{ .reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, {1}, {0}; cvt.u32.u16 {d}, t; }}",
///     lo,
///     hi
/// );
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
