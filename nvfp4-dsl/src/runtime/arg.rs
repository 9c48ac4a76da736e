//! A kernel's arguments as the launchers pass them: buffer views and
//! values ([`KernelArg`]).

use super::*;

/// One kernel argument: a buffer view (passed as pointer and length) or a
/// value. Made with `KernelArg::from` of a [`DeviceView`], a
/// [`DeviceViewMut`], `&buffer`, `&mut buffer`, a scalar or a `#[device]`
/// struct (of numbers, vectors and arrays, at most 128 bytes).
pub struct KernelArg<'a>(pub(super) Arg<'a>);

impl std::fmt::Debug for KernelArg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Arg::Buffer(b) => write!(f, "KernelArg(&[{}; {}])", b.elem, b.len),
            Arg::BufferMut(b) => write!(f, "KernelArg(&mut [{}; {}])", b.elem, b.len),
            Arg::Scalar(_, n) => write!(f, "KernelArg({n}-byte scalar)"),
        }
    }
}

pub(super) enum Arg<'a> {
    /// A view the kernel reads.
    Buffer(BufferArg<Memory<'a>>),
    /// A view the kernel may write.
    BufferMut(BufferArg<MemoryMut<'a>>),
    /// A by-value parameter's bytes (at most 128: scalars, vectors, tensor
    /// maps, structs), zero-padded, and their count.
    Scalar([u8; 128], usize),
}

impl<'a, T: DeviceCopy> From<DeviceView<'a, T>> for KernelArg<'a> {
    fn from(v: DeviceView<'a, T>) -> KernelArg<'a> {
        KernelArg(Arg::Buffer(BufferArg::from(v)))
    }
}

impl<'a, T: DeviceCopy> From<DeviceViewMut<'a, T>> for KernelArg<'a> {
    fn from(v: DeviceViewMut<'a, T>) -> KernelArg<'a> {
        KernelArg(Arg::BufferMut(BufferArg::from(v)))
    }
}

impl<'a, T: DeviceCopy> From<&'a DeviceBuffer<T>> for KernelArg<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> KernelArg<'a> {
        KernelArg::from(b.view())
    }
}

impl<'a, T: DeviceCopy> From<&'a mut DeviceBuffer<T>> for KernelArg<'a> {
    fn from(b: &'a mut DeviceBuffer<T>) -> KernelArg<'a> {
        KernelArg::from(b.view_mut())
    }
}

/// A value a kernel takes by value, as a generic launcher passes a
/// parameter of the kernel's type parameter (`a: T`).
pub trait ScalarArg: DeviceCopy {
    /// The argument holding the value.
    fn kernel_arg<'a>(self) -> KernelArg<'a>;
}

macro_rules! scalar_arg {
    ($($t:ty),*) => { $(
        impl From<$t> for KernelArg<'_> {
            fn from(v: $t) -> Self {
                scalar_bytes(&[v])
            }
        }
    )* };
}
scalar_arg!(u8, u16, u32, u64, usize, i32, i64, f32, f64, half::f16, half::bf16);

macro_rules! scalar_value_arg {
    ($($t:ty),*) => { $(
        impl ScalarArg for $t {
            fn kernel_arg<'a>(self) -> KernelArg<'a> {
                scalar_bytes(&[self])
            }
        }
    )* };
}
scalar_value_arg!(u8, u16, u32, u64, usize, i32, i64, f32, f64, half::f16, half::bf16);
scalar_arg!(
    crate::types::u32x4,
    crate::types::f16x2,
    crate::types::bf16x2,
    crate::types::Fp4x2,
    crate::types::E4m3,
    crate::types::E4m3x2
);

impl From<bool> for KernelArg<'_> {
    fn from(v: bool) -> Self {
        scalar_bytes(&[u8::from(v)])
    }
}

impl From<crate::types::TensorMap> for KernelArg<'_> {
    fn from(map: crate::types::TensorMap) -> Self {
        KernelArg(Arg::Scalar(*map.bytes(), 128))
    }
}

fn scalar_bytes<'a, T: DeviceCopy>(v: &[T]) -> KernelArg<'a> {
    let b = as_bytes(v);
    let mut out = [0u8; 128];
    out[..b.len()].copy_from_slice(b);
    KernelArg(Arg::Scalar(out, b.len()))
}
