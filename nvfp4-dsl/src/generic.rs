//! The traits that bound a kernel's or device function's type parameters
//! (in the prelude): `fn scale<T: Float>(x: &[T], y: &mut [T])`.
//!
//! A generic kernel lists the types to compile with
//! `#[kernel(specialize(T = [f16, bf16]))]`: one PTX entry per type
//! (`scale__t_f16`, `scale__t_bf16`) and a launcher per type,
//! `scale::Kernel::<f16>::launch(..)` taking `f16` views where the kernel
//! takes `&[T]`. A generic `#[device]` function is compiled for each type
//! its calls give `T`, read off the arguments as rustc infers it, or
//! written with a turbofish (`widen::<f32>(x)`).
//!
//! Each instantiation is the function written for that type: the trait's
//! methods are the type's own (`T::from_f32` of `f16` is
//! `f16::from_f32`, `cvt.rn.f16.f32`), and so is the PTX. What a generic
//! body may do with a `T` is what the trait provides (rustc checks it
//! against these declarations): its methods and constants, and the
//! operators and comparisons of its supertraits.

use crate::types::Element;
use core::ops::{
    Add, AddAssign, BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Div, DivAssign, Mul, MulAssign,
    Neg, Not, Rem, RemAssign, Shl, ShlAssign, Shr, ShrAssign, Sub, SubAssign,
};
use half::{bf16, f16};

/// The floating-point types of kernels: `f16`, `bf16`, `f32`, `f64`.
///
/// `+ - * /` (and `+= -= *= /=`), unary `-` and comparisons are each
/// type's own (`add.rn.f16`, `add.rn.f32`, ...; `f16`/`bf16` division
/// through `f32`).
///
/// `ZERO`, `ONE`, `MIN` (`-MAX`) and `MAX` are [`Num`]'s.
pub trait Float: Num + Neg<Output = Self> {
    /// Positive infinity.
    const INFINITY: Self;
    /// Negative infinity.
    const NEG_INFINITY: Self;
    /// Not a number.
    const NAN: Self;
    /// The difference between 1 and the next larger value.
    const EPSILON: Self;

    /// The smaller of the two; a NaN gives the other. PTX: `min.T`
    fn min(self, other: Self) -> Self;

    /// The larger of the two; a NaN gives the other. PTX: `max.T`
    fn max(self, other: Self) -> Self;

    /// `v` rounded to nearest even: `f16::from_f32`, `bf16::from_f32`,
    /// `v` itself for `f32`, exact for `f64`.
    ///
    /// PTX: `cvt.rn.f16.f32`, `cvt.rn.bf16.f32`, none, `cvt.f64.f32`
    fn from_f32(v: f32) -> Self;

    /// The value as an `f32`: exact for `f16`, `bf16` and `f32`, rounded to
    /// nearest even for `f64` (as `x as f32`).
    ///
    /// PTX: `cvt.f32.f16`; for `bf16` an exact shift (`cvt.u32.u16`,
    /// `shl.b32 16`); none; `cvt.rn.f32.f64`
    fn to_f32(self) -> f32;
}

/// The half-precision types, `f16` and `bf16`: [`Float`]s stored in 16
/// bits.
pub trait Half: Float {
    /// The value with these bits.
    ///
    /// PTX: `cvt.u16.u32`
    fn from_bits(bits: u16) -> Self;

    /// The bits of the value.
    ///
    /// PTX: `cvt.u32.u16`
    fn to_bits(self) -> u16;
}

/// The integer types of kernels: `u8`, `u16`, `u32`, `u64`, `usize`,
/// `i32`, `i64`.
///
/// The operators wrap, divide and shift as each type's own (see the
/// README's subset); `min` and `max` are `Ord`'s (`min.T`, `max.T`).
///
/// `ZERO`, `ONE`, `MIN` and `MAX` are [`Num`]'s.
pub trait Int:
    Num
    + Ord
    + Rem<Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Not<Output = Self>
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
    + RemAssign
    + BitAndAssign
    + BitOrAssign
    + BitXorAssign
    + ShlAssign<u32>
    + ShrAssign<u32>
{
    /// The width in bits.
    const BITS: u32;

    /// `self + other`, wrapping. PTX: `add`
    fn wrapping_add(self, other: Self) -> Self;
    /// `self - other`, wrapping. PTX: `sub`
    fn wrapping_sub(self, other: Self) -> Self;
    /// `self * other`, wrapping. PTX: `mul.lo`
    fn wrapping_mul(self, other: Self) -> Self;
    /// The number of ones. PTX: `popc`
    fn count_ones(self) -> u32;
    /// The number of leading zeros. PTX: `clz`
    fn leading_zeros(self) -> u32;
    /// The number of trailing zeros. PTX: `brev` + `clz`
    fn trailing_zeros(self) -> u32;
}

/// Every number type of kernels, [`Float`] and [`Int`] alike: `f16`,
/// `bf16`, `f32`, `f64`, `u8`, `u16`, `u32`, `u64`, `usize`, `i32`, `i64`.
/// For code that only adds, multiplies and compares (a scan, a maximum):
/// `+ - * /` and comparisons are each type's own, as under `Float` or
/// `Int`.
pub trait Num:
    Element
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest finite value.
    const MIN: Self;
    /// The largest finite value.
    const MAX: Self;
}

macro_rules! num {
    ($($t:ty => $zero:expr, $one:expr;)*) => {$(
        impl Num for $t {
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
        }
    )*};
}
num! {
    f16 => f16::ZERO, f16::ONE;
    bf16 => bf16::ZERO, bf16::ONE;
    f32 => 0.0, 1.0;
    f64 => 0.0, 1.0;
    u8 => 0, 1;
    u16 => 0, 1;
    u32 => 0, 1;
    u64 => 0, 1;
    usize => 0, 1;
    i32 => 0, 1;
    i64 => 0, 1;
}

macro_rules! float {
    ($($t:ty: $v:ident => $from:expr, $x:ident => $to:expr;)*) => {$(
        impl Float for $t {
            const INFINITY: Self = <$t>::INFINITY;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            const NAN: Self = <$t>::NAN;
            const EPSILON: Self = <$t>::EPSILON;

            #[inline]
            fn min(self, other: Self) -> Self {
                <$t>::min(self, other)
            }

            #[inline]
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }

            #[inline]
            fn from_f32($v: f32) -> Self {
                $from
            }

            #[inline]
            fn to_f32(self) -> f32 {
                let $x = self;
                $to
            }
        }
    )*};
}
float! {
    f16: v => f16::from_f32(v), x => f16::to_f32(x);
    bf16: v => bf16::from_f32(v), x => bf16::to_f32(x);
    f32: v => v, x => x;
    f64: v => f64::from(v), x => x as f32;
}

macro_rules! half {
    ($($t:ty),*) => {$(
        impl Half for $t {
            #[inline]
            fn from_bits(bits: u16) -> Self {
                <$t>::from_bits(bits)
            }

            #[inline]
            fn to_bits(self) -> u16 {
                <$t>::to_bits(self)
            }
        }
    )*};
}
half!(f16, bf16);

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const BITS: u32 = <$t>::BITS;

            #[inline]
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }

            #[inline]
            fn wrapping_sub(self, other: Self) -> Self {
                <$t>::wrapping_sub(self, other)
            }

            #[inline]
            fn wrapping_mul(self, other: Self) -> Self {
                <$t>::wrapping_mul(self, other)
            }

            #[inline]
            fn count_ones(self) -> u32 {
                <$t>::count_ones(self)
            }

            #[inline]
            fn leading_zeros(self) -> u32 {
                <$t>::leading_zeros(self)
            }

            #[inline]
            fn trailing_zeros(self) -> u32 {
                <$t>::trailing_zeros(self)
            }
        }
    )*};
}
int!(u8, u16, u32, u64, usize, i32, i64);
