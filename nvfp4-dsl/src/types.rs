//! The DSL's value types. They are ordinary Rust types on the host (so
//! buffers of them can be uploaded) and register values in kernels.

use half::f16;

/// Four `u32` values: one 16-byte vector load or store (`ld.v4.u32`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C, align(16))]
pub struct u32x4 {
    /// Bytes 0..4.
    pub x: u32,
    /// Bytes 4..8.
    pub y: u32,
    /// Bytes 8..12.
    pub z: u32,
    /// Bytes 12..16.
    pub w: u32,
}

impl u32x4 {
    /// `u32x4 { x, y, z, w }`; in a kernel, four registers.
    pub const fn new(x: u32, y: u32, z: u32, w: u32) -> u32x4 {
        u32x4 { x, y, z, w }
    }
}

/// Two `f16` in one 32-bit register, `lo` in bits 0..16 (PTX `.f16x2`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct f16x2(u32);

impl f16x2 {
    /// Packs two halves. PTX: `mov.b32 d, {lo, hi}`.
    pub fn new(lo: f16, hi: f16) -> f16x2 {
        f16x2(u32::from(lo.to_bits()) | (u32::from(hi.to_bits()) << 16))
    }

    /// Both halves equal. PTX: `mov.b32 d, {h, h}`.
    pub fn splat(value: f16) -> f16x2 {
        f16x2::new(value, value)
    }

    /// Rounds two `f32` to nearest-even halves. PTX: `cvt.rn.f16x2.f32 d, hi, lo`.
    pub fn from_f32s(lo: f32, hi: f32) -> f16x2 {
        f16x2::new(f16::from_f32(lo), f16::from_f32(hi))
    }

    /// Reinterprets bits (no instruction).
    pub const fn from_bits(bits: u32) -> f16x2 {
        f16x2(bits)
    }

    /// The bits (no instruction).
    pub const fn to_bits(self) -> u32 {
        self.0
    }

    /// Bits 0..16. PTX: `mov.b32 {d, _}, v`.
    pub fn lo(self) -> f16 {
        f16::from_bits(self.0 as u16)
    }

    /// Bits 16..32. PTX: `mov.b32 {_, d}, v`.
    pub fn hi(self) -> f16 {
        f16::from_bits((self.0 >> 16) as u16)
    }
}

/// Two e2m1 (FP4) values in one byte: the element with the even index in
/// the low nibble, the odd one in the high nibble.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Fp4x2(pub u8);

/// f16 bits of the 16 e2m1 codes: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
/// negatives (code 8 is -0).
const E2M1_F16_BITS: [u16; 16] = [
    0x0000, 0x3800, 0x3C00, 0x3E00, 0x4000, 0x4200, 0x4400, 0x4600, 0x8000, 0xB800, 0xBC00, 0xBE00, 0xC000, 0xC200,
    0xC400, 0xC600,
];

impl Fp4x2 {
    /// The byte as two e2m1 values (no instruction).
    pub const fn from_bits(bits: u8) -> Fp4x2 {
        Fp4x2(bits)
    }

    /// Both values, exactly: the even element (low nibble) in the low half.
    ///
    /// PTX: sm_100a `cvt.rn.f16x2.e2m1x2` (from a `.b8` register); sm_90 and
    /// sm_80 have no FP4 conversion: `mul.lo.u32` moves the nibbles to bits
    /// 12..15 and 28..31, `shr`/`and`/`or` place sign and exponent-mantissa
    /// into f16 position (the value times 2^-14), and `mul.rn.f16x2` by 2^14
    /// restores the value (exact).
    pub fn to_f16x2(self) -> f16x2 {
        f16x2(
            u32::from(E2M1_F16_BITS[usize::from(self.0 & 15)])
                | (u32::from(E2M1_F16_BITS[usize::from(self.0 >> 4)]) << 16),
        )
    }
}

/// One e4m3 (FP8) value: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
/// infinities, NaN is `0x7F`/`0xFF`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct E4m3(pub u8);

impl E4m3 {
    /// The byte as an e4m3 value (no instruction).
    pub const fn from_bits(bits: u8) -> E4m3 {
        E4m3(bits)
    }

    /// The value, exactly (NaN for `0x7F`/`0xFF`).
    ///
    /// PTX (sm_90+): `cvt.rn.f16x2.e4m3x2` of the byte, then `cvt.f32.f16` of
    /// the low half.
    pub fn to_f32(self) -> f32 {
        e4m3_to_f16(self.0).to_f32()
    }
}

/// e4m3 -> f16 (exact: every e4m3 value is an f16 value).
fn e4m3_to_f16(byte: u8) -> f16 {
    let sign = u16::from(byte & 0x80) << 8;
    let exponent = u16::from((byte >> 3) & 0xF);
    let mantissa = u16::from(byte & 7);
    if byte & 0x7F == 0x7F {
        return f16::from_bits(0x7FFF);
    }
    let magnitude = if exponent == 0 {
        // Subnormal: mantissa * 2^-9, a normal f16 (or zero).
        f16::from_f32(f32::from(mantissa) / 512.0).to_bits()
    } else {
        // Rebias 7 -> 15 and widen the mantissa 3 -> 10 bits.
        ((exponent + 8) << 10) | (mantissa << 7)
    };
    f16::from_bits(sign | magnitude)
}

/// Two e4m3 values, the first in the low byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct E4m3x2(pub u16);

impl E4m3x2 {
    /// Two bytes as two e4m3 values, the first in the low byte (no
    /// instruction).
    pub const fn from_bits(bits: u16) -> E4m3x2 {
        E4m3x2(bits)
    }

    /// Both values, exactly: the low byte in the low half (NaN for
    /// `0x7F`/`0xFF`).
    ///
    /// PTX (sm_90+): `cvt.rn.f16x2.e4m3x2`.
    pub fn to_f16x2(self) -> f16x2 {
        f16x2::new(e4m3_to_f16(self.0 as u8), e4m3_to_f16((self.0 >> 8) as u8))
    }
}

/// Cache behaviour of a load or store (`load`, `store`, `load_v4`, `store_v4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cache {
    /// No qualifier: cache at all levels (`ld.global`).
    Default,
    /// Cache in L2, not L1 (`.cg`).
    Global,
    /// Streaming, likely accessed once: evict first (`.cs`).
    Streaming,
    /// Read-only data path (`ld.global.nc`); loads only.
    NonCoherent,
    /// Read-only path without L1 allocation (`ld.global.nc.L1::no_allocate`);
    /// loads only.
    NoAllocate,
}

mod sealed {
    pub trait Sealed {}
}

/// Types that can live in memory (slice and shared-array elements).
pub trait Element: Copy + sealed::Sealed + 'static {}

macro_rules! element {
    ($($t:ty),*) => { $( impl sealed::Sealed for $t {} impl Element for $t {} )* };
}
element!(
    u8,
    u16,
    u32,
    u64,
    usize,
    i32,
    i64,
    f32,
    f64,
    f16,
    half::bf16,
    u32x4,
    f16x2,
    Fp4x2,
    E4m3,
    E4m3x2
);

/// 32-bit values a warp shuffle moves: `u32`, `i32`, `f32`, `f16x2`.
pub trait Shuffle: Copy + sealed::Sealed {}
impl Shuffle for u32 {}
impl Shuffle for i32 {}
impl Shuffle for f32 {}
impl Shuffle for f16x2 {}

/// Values `warp_reduce_sum` adds: `u32`, `i32`, `f32`.
pub trait WarpSum: Copy + sealed::Sealed {}
impl WarpSum for u32 {}
impl WarpSum for i32 {}
impl WarpSum for f32 {}

/// Index types of shared memory and of the load/store intrinsics.
pub trait DeviceIndex: Copy + sealed::Sealed {}
impl DeviceIndex for u32 {}
impl DeviceIndex for i32 {}
impl DeviceIndex for usize {}

/// A static shared-memory array of `N` elements (`.shared` in PTX), from
/// [`shared_array`](crate::intrinsics::shared_array). Indexed by `u32`,
/// `i32` or `usize`; every thread of the block sees the same array.
#[derive(Debug)]
pub struct SharedArray<T, const N: usize> {
    _elem: core::marker::PhantomData<T>,
}

/// A view of the dynamic shared memory block, from
/// [`dynamic_shared`](crate::intrinsics::dynamic_shared); its size is the
/// launch's `shared_bytes`.
#[derive(Debug)]
pub struct SharedSlice<T> {
    _elem: core::marker::PhantomData<T>,
}

/// Memory a kernel can read: `[T]` (global), `SharedArray`, `SharedSlice`.
pub trait Memory {
    /// The element type.
    type Elem: Element;
}

/// Memory a kernel can write.
pub trait MemoryMut: Memory {}

impl<T: Element> Memory for [T] {
    type Elem = T;
}
impl<T: Element> MemoryMut for [T] {}
impl<T: Element, const N: usize> Memory for SharedArray<T, N> {
    type Elem = T;
}
impl<T: Element, const N: usize> MemoryMut for SharedArray<T, N> {}
impl<T: Element> Memory for SharedSlice<T> {
    type Elem = T;
}
impl<T: Element> MemoryMut for SharedSlice<T> {}

macro_rules! shared_index {
    ($($ty:ident $(<const $n:ident: usize>)?),*) => {$(
        impl<T: Element, I: DeviceIndex $(, const $n: usize)?> core::ops::Index<I> for $ty<T $(, $n)?> {
            type Output = T;
            fn index(&self, _: I) -> &T {
                crate::intrinsics::device_only("shared memory")
            }
        }
        impl<T: Element, I: DeviceIndex $(, const $n: usize)?> core::ops::IndexMut<I> for $ty<T $(, $n)?> {
            fn index_mut(&mut self, _: I) -> &mut T {
                crate::intrinsics::device_only("shared memory")
            }
        }
    )*};
}
shared_index!(SharedArray<const N: usize>, SharedSlice);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16x2_packs_low_half_first() {
        let v = f16x2::new(f16::from_f32(1.0), f16::from_f32(-2.0));
        assert_eq!(v.to_bits(), 0xC000_3C00);
        assert_eq!(v.lo(), f16::from_f32(1.0));
        assert_eq!(v.hi(), f16::from_f32(-2.0));
        assert_eq!(
            f16x2::from_f32s(0.5, 3.0),
            f16x2::new(f16::from_f32(0.5), f16::from_f32(3.0))
        );
    }

    #[test]
    fn fp4_and_fp8_decode_to_their_values() {
        let e2m1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        for byte in 0..=255u8 {
            let v = Fp4x2(byte).to_f16x2();
            let want = |n: u8| {
                if n & 8 != 0 {
                    -e2m1[usize::from(n & 7)]
                } else {
                    e2m1[usize::from(n & 7)]
                }
            };
            assert_eq!(v.lo().to_f32(), want(byte & 15));
            assert_eq!(v.hi().to_f32(), want(byte >> 4));
            assert_eq!(v.lo().is_sign_negative(), byte & 8 != 0);
        }
        assert_eq!(E4m3(0x38).to_f32(), 1.0);
        assert_eq!(E4m3(0x7E).to_f32(), 448.0);
        assert_eq!(E4m3(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(E4m3(0xC0).to_f32(), -2.0);
        assert!(E4m3(0xFF).to_f32().is_nan());
        let pair = E4m3x2(0x3840).to_f16x2();
        assert_eq!((pair.lo().to_f32(), pair.hi().to_f32()), (2.0, 1.0));
    }

    #[test]
    fn vector_layout_is_16_bytes() {
        assert_eq!(core::mem::size_of::<u32x4>(), 16);
        assert_eq!(core::mem::align_of::<u32x4>(), 16);
    }
}
