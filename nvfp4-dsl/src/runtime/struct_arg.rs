//! `#[device]` structs as kernel arguments: `From<Struct> for KernelArg`,
//! which `#[device]` writes, zeroes the struct's bytes (its padding too)
//! and writes each field at its `#[repr(C)]` offset.

use super::{Arg, KernelArg, as_bytes};

/// A field of a `#[device]` struct that a kernel takes by value: its
/// bytes as the kernel reads them. Not for direct use: `#[device]` writes
/// `From<Struct> for KernelArg` with it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a `#[device]` struct cannot have a field of type `{Self}`",
    label = "a field is a number, a vector, a descriptor, an array or a tuple of them"
)]
pub trait StructField {
    /// Writes the value's bytes to the front of `out` (as many as fit).
    fn write_bytes(&self, out: &mut [u8]);
}

macro_rules! struct_field {
    ($($t:ty),*) => { $(
        impl StructField for $t {
            fn write_bytes(&self, out: &mut [u8]) {
                for (o, b) in out.iter_mut().zip(as_bytes(std::slice::from_ref(self))) {
                    *o = *b;
                }
            }
        }
    )* };
}
struct_field!(u8, u16, u32, u64, usize, i32, i64, f32, f64, half::f16, half::bf16);
struct_field!(
    crate::types::u32x4,
    crate::types::f16x2,
    crate::types::bf16x2,
    crate::types::Fp4x2,
    crate::types::E4m3,
    crate::types::E4m3x2,
    crate::types::SmemDesc,
    crate::types::WgmmaDesc,
    crate::types::InstrDesc
);

impl StructField for bool {
    fn write_bytes(&self, out: &mut [u8]) {
        if let Some(o) = out.first_mut() {
            *o = u8::from(*self);
        }
    }
}

impl<T: StructField, const N: usize> StructField for [T; N] {
    fn write_bytes(&self, out: &mut [u8]) {
        let size = std::mem::size_of::<T>();
        for (i, v) in self.iter().enumerate() {
            if let Some(rest) = out.get_mut(i * size..) {
                v.write_bytes(rest);
            }
        }
    }
}

impl KernelArg<'_> {
    /// A `#[device]` struct of `size` bytes, zeroed (so is its padding);
    /// [`KernelArg::__field`] writes each field. Not for direct use.
    #[doc(hidden)]
    pub fn __struct(size: usize) -> Self {
        KernelArg(Arg::Scalar([0; 128], size))
    }

    /// Writes a field of a `#[device]` struct at `offset`. Not for direct
    /// use.
    #[doc(hidden)]
    pub fn __field(&mut self, offset: usize, value: &impl StructField) {
        if let Arg::Scalar(bytes, _) = &mut self.0
            && let Some(out) = bytes.get_mut(offset..)
        {
            value.write_bytes(out);
        }
    }
}
