//! What a caller's GEMM operand bytes may be held as: the element types
//! [`super::GemmOperand::new`] takes for the data and the scales, and the
//! wrapper that says the scales' layout.

use nvfp4_dsl::{E4m3, Fp4x2};

/// What a GEMM operand's packed e2m1 data may be held as: [`Fp4x2`], or
/// `u8` (as PyTorch holds `float4_e2m1fn_x2`); nothing else reads as codes.
#[diagnostic::on_unimplemented(
    message = "a GEMM operand's data is packed e2m1 bytes, `Fp4x2` or `u8`, not `{Self}`",
    label = "a view of `Fp4x2` or `u8` expected here"
)]
pub trait Fp4Bytes: nvfp4_dsl::DeviceCopy + sealed::Sealed {}
impl Fp4Bytes for Fp4x2 {}
impl Fp4Bytes for u8 {}

/// What a GEMM operand's e4m3 scales may be held as: [`E4m3`], or `u8` (as
/// PyTorch holds `float8_e4m3fn`); nothing else reads as scales.
#[diagnostic::on_unimplemented(
    message = "a GEMM operand's scales are e4m3 bytes in the blocked 128x4 layout, `E4m3` or `u8`, not `{Self}`",
    label = "a view of `E4m3` or `u8` expected here"
)]
pub trait E4m3Bytes: nvfp4_dsl::DeviceCopy + sealed::Sealed {}
impl E4m3Bytes for E4m3 {}
impl E4m3Bytes for u8 {}

/// A view of e4m3 scales in the blocked 128x4 layout the tensor cores read
/// ([`crate::nvfp4::blocked_scale_offset`]): `BlockedScales(&scales)`. Plain
/// `[L][rows][k/16]` scales, as a checkpoint holds them, have the same
/// length for every operand the GEMM takes, so nothing could tell them
/// apart at run time and they would give a wrong answer: the caller says
/// which layout the bytes are in. Convert plain ones with
/// [`crate::nvfp4::block_scales`], or quantize with
/// [`crate::quantize::ScaleLayout::Blocked`].
#[derive(Clone, Copy, Debug)]
pub struct BlockedScales<V>(pub V);

/// The byte types above, and no others.
mod sealed {
    pub trait Sealed {}
    impl Sealed for nvfp4_dsl::Fp4x2 {}
    impl Sealed for nvfp4_dsl::E4m3 {}
    impl Sealed for u8 {}
}
