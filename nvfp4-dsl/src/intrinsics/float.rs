//! The `f32` functions PTX approximates that Rust's `f32` does not have,
//! as methods of a trait (in the prelude): named `_approx`, so that none
//! is mistaken for an exact function.

use crate::types::sealed::Sealed;

/// Approximate `f32` functions: each is one PTX `.approx` instruction, with
/// the hardware's accuracy (documented below and in the README's table of
/// approximate functions), not Rust's. On the host (and on the emulator)
/// they give the correctly rounded value.
pub trait ApproxF32: Sealed + Copy {
    /// `1 / sqrt(self)`, approximately: within a relative error of 2^-22.9
    /// over the positive finite range, subnormals included (PTX ISA); `+0.0`
    /// gives `+inf`, `-0.0` gives `-inf`, `+inf` gives `+0.0`, a negative
    /// value or NaN gives NaN.
    ///
    /// PTX: `rsqrt.approx.f32`
    fn rsqrt_approx(self) -> f32;

    /// `1 / self`, approximately: within 1 ulp of the correctly rounded
    /// reciprocal over the whole range, subnormals included (PTX ISA);
    /// `±0.0` gives `±inf`, `±inf` gives `±0.0`, NaN gives NaN. The exact
    /// reciprocal is `self.recip()` (`rcp.rn.f32`).
    ///
    /// PTX: `rcp.approx.f32`
    fn recip_approx(self) -> f32;
}

impl ApproxF32 for f32 {
    #[inline]
    fn rsqrt_approx(self) -> f32 {
        (1.0 / f64::from(self).sqrt()) as f32
    }

    #[inline]
    fn recip_approx(self) -> f32 {
        (1.0 / f64::from(self)) as f32
    }
}
