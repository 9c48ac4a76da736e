//! The DSL's value types. They are ordinary Rust types on the host (so
//! buffers of them can be uploaded) and register values in kernels.

use half::f16;

mod formats;
pub use formats::{E4m3, E4m3x2, Fp4x2};

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

/// Two `bf16` in one 32-bit register, `lo` in bits 0..16 (PTX `.bf16x2`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct bf16x2(u32);

impl bf16x2 {
    /// Packs two halves. PTX: `mov.b32 d, {lo, hi}`.
    pub fn new(lo: half::bf16, hi: half::bf16) -> bf16x2 {
        bf16x2(u32::from(lo.to_bits()) | (u32::from(hi.to_bits()) << 16))
    }

    /// Reinterprets bits (no instruction).
    pub const fn from_bits(bits: u32) -> bf16x2 {
        bf16x2(bits)
    }

    /// The bits (no instruction).
    pub const fn to_bits(self) -> u32 {
        self.0
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

/// The memory order of an atomic (`atomic_add`, `atomic_cas`, ...): PTX's
/// `.sem` qualifier. (Named `Order` so that it does not clash with
/// `core::sync::atomic::Ordering`; PTX has no sequentially consistent
/// atomic, so there is no `SeqCst`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Atomic, and orders nothing else (`.relaxed`): counters, histograms.
    Relaxed,
    /// Later accesses of this thread stay after it, and it sees what a
    /// release it reads from published (`.acquire`).
    Acquire,
    /// Earlier accesses of this thread stay before it, and become visible
    /// to a thread that acquires what it wrote (`.release`).
    Release,
    /// Both (`.acq_rel`).
    AcqRel,
}

/// The threads an atomic is atomic with and its order reaches: PTX's
/// `.scope` qualifier. Two atomics of one address are atomic with respect
/// to each other only if each one's scope includes the other's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The threads of the block (`.cta`).
    Cta,
    /// The blocks of the cluster (`.cluster`; sm_90 and newer).
    Cluster,
    /// Every thread of the GPU (`.gpu`).
    Gpu,
    /// The GPU, the host and other GPUs (`.sys`).
    Sys,
}

pub(crate) mod sealed {
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
    bf16x2,
    Fp4x2,
    E4m3,
    E4m3x2
);

/// Element types of `atomic_min`, `atomic_max`, `atomic_and`, `atomic_or`,
/// `atomic_xor`, `atomic_exch` and `atomic_cas`: `u32`, `i32`, `u64`, `i64`.
pub trait AtomicInt: Element {}
impl AtomicInt for u32 {}
impl AtomicInt for i32 {}
impl AtomicInt for u64 {}
impl AtomicInt for i64 {}

/// Element types of `atomic_add`: those of [`AtomicInt`] and `f32`, `f64`,
/// `f16x2`, `bf16x2`.
pub trait AtomicAdd: Element {}
impl<T: AtomicInt> AtomicAdd for T {}
impl AtomicAdd for f32 {}
impl AtomicAdd for f64 {}
impl AtomicAdd for f16x2 {}
impl AtomicAdd for bf16x2 {}

/// Values a warp shuffle moves: `u32`, `i32`, `f32`, `f16x2`, and `u64`,
/// `i64`, `f64` (as their two 32-bit halves).
pub trait Shuffle: Copy + sealed::Sealed {}
impl Shuffle for u32 {}
impl Shuffle for i32 {}
impl Shuffle for f32 {}
impl Shuffle for f16x2 {}
impl Shuffle for u64 {}
impl Shuffle for i64 {}
impl Shuffle for f64 {}

/// Values the warp reductions (`warp_reduce_sum`, `warp_reduce_max`,
/// `warp_reduce_min`) combine: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`.
pub trait WarpReduce: Copy + sealed::Sealed {}
impl WarpReduce for u32 {}
impl WarpReduce for i32 {}
impl WarpReduce for f32 {}
impl WarpReduce for u64 {}
impl WarpReduce for i64 {}
impl WarpReduce for f64 {}

/// Index types of shared memory and of the load/store intrinsics.
pub trait DeviceIndex: Copy + sealed::Sealed {}
impl DeviceIndex for u32 {}
impl DeviceIndex for i32 {}
impl DeviceIndex for usize {}

/// A static shared-memory array of `N` elements (`.shared` in PTX), from
/// [`shared_array`](crate::intrinsics::shared_array). Indexed by `u32`,
/// `i32` or `usize`; every thread of the block sees the same array.
///
/// `SharedArray<[T; C], R>` is a 2-D array of `R` rows of `C` elements,
/// in row order, read and written by element: `tile[r][c]`, one address
/// `r * C + c` elements in (a row is not a value). A padded row
/// (`[f32; 33]` for 32 columns) keeps a column's elements in different
/// banks.
#[derive(Debug)]
pub struct SharedArray<T, const N: usize> {
    _elem: core::marker::PhantomData<T>,
}

// A kernel asks a shared array for its length as it asks a local array;
// `is_empty` would always be false for one that exists.
#[allow(clippy::len_without_is_empty)]
impl<T, const N: usize> SharedArray<T, N> {
    /// Its length, `N` (its rows if 2-D), a constant in the PTX: `for i in
    /// (t..buf.len()).step_by(..)`.
    pub const fn len(&self) -> usize {
        N
    }
}

/// What a [`SharedArray`] holds: an [`Element`], or a row `[T; C]` of them
/// (a 2-D shared array).
pub trait SharedElement: 'static {}
impl<T: Element> SharedElement for T {}
impl<T: Element, const C: usize> SharedElement for [T; C] {}

/// A row `tile[r]` of a 2-D [`SharedArray`], only ever indexed:
/// `tile[r][c]`.
#[derive(Debug)]
pub struct SharedRow<T, const C: usize> {
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
shared_index!(SharedArray<const N: usize>, SharedSlice, SharedRow<const C: usize>);

impl<T: Element, I: DeviceIndex, const C: usize, const N: usize> core::ops::Index<I> for SharedArray<[T; C], N> {
    type Output = SharedRow<T, C>;
    fn index(&self, _: I) -> &SharedRow<T, C> {
        crate::intrinsics::device_only("shared memory")
    }
}
impl<T: Element, I: DeviceIndex, const C: usize, const N: usize> core::ops::IndexMut<I> for SharedArray<[T; C], N> {
    fn index_mut(&mut self, _: I) -> &mut SharedRow<T, C> {
        crate::intrinsics::device_only("shared memory")
    }
}

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
    fn instruction_descriptor_fields() {
        // The worked values of the PTX reference (E2M1 x E2M1, UE4M3, M = 128).
        assert_eq!(InstrDesc::mxf4nvf4(128, 128).bits(), 0x0820_0480);
        assert_eq!(InstrDesc::mxf4nvf4(128, 256).bits(), 0x0840_0480);
        assert_eq!(InstrDesc::mxf4nvf4(128, 8).bits(), 0x0802_0480);
        let d = InstrDesc::mxf4nvf4(128, 64).bits();
        assert_eq!((d >> 7) & 7, 1, "atype E2M1");
        assert_eq!((d >> 10) & 3, 1, "btype E2M1");
        assert_eq!((d >> 17) & 0x3F, 64 >> 3, "N >> 3");
        assert_eq!((d >> 23) & 1, 0, "UE4M3 scales");
        assert_eq!((d >> 27) & 3, 1, "M >> 7");
        assert_eq!(d & 0b111_1111 | (d >> 29), 0, "sparsity, scale ids, K size clear");
    }

    #[test]
    fn shared_memory_descriptor_fields() {
        let d = SmemDesc::new(0x1_2340)
            .with_leading_byte_offset(16)
            .with_stride_byte_offset(1024)
            .with_swizzle(Swizzle::B128)
            .bits();
        assert_eq!(d & 0x3FFF, 0x1_2340 >> 4, "start address >> 4");
        assert_eq!((d >> 16) & 0x3FFF, 1, "LBO >> 4");
        assert_eq!((d >> 32) & 0x3FFF, 1024 >> 4, "SBO >> 4");
        assert_eq!((d >> 46) & 7, 1, "fixed 0b001");
        assert_eq!((d >> 49) & 7, 0, "base offset");
        assert_eq!(d >> 61, 2, "128-byte swizzle");
        // The recipe of the PTX reference for an NVFP4 tile at 0x400.
        let recipe = (0x400u64 >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 46) | (2 << 61);
        let built = SmemDesc::new(0x400)
            .with_leading_byte_offset(16)
            .with_stride_byte_offset(1024)
            .with_swizzle(Swizzle::B128);
        assert_eq!(built.bits(), recipe);
        assert_eq!(built.offset(32).bits(), recipe + 2, "one K=64 step is 32 bytes");
        assert_eq!(SmemDesc::new(0x400).with_base_offset(3).bits() >> 49 & 7, 3);
        // Fields replace, not accumulate.
        let twice = SmemDesc::new(0)
            .with_stride_byte_offset(1024)
            .with_stride_byte_offset(128)
            .bits();
        assert_eq!((twice >> 32) & 0x3FFF, 8);
        assert_eq!(Swizzle::B32.layout_type(), 6);
        assert_eq!(Swizzle::B64.layout_type(), 4);
    }

    #[test]
    fn wgmma_descriptor_fields() {
        let d = WgmmaDesc::new(0x1_2340)
            .with_leading_byte_offset(16)
            .with_stride_byte_offset(1024)
            .with_swizzle(Swizzle::B128)
            .bits();
        assert_eq!(d & 0x3FFF, 0x1_2340 >> 4, "start address >> 4");
        assert_eq!((d >> 14) & 3, 0, "bits 14..16 clear");
        assert_eq!((d >> 16) & 0x3FFF, 1, "LBO >> 4");
        assert_eq!((d >> 30) & 3, 0, "bits 30..32 clear");
        assert_eq!((d >> 32) & 0x3FFF, 1024 >> 4, "SBO >> 4");
        assert_eq!((d >> 46) & 7, 0, "no tcgen05 version field");
        assert_eq!((d >> 49) & 7, 0, "base offset");
        assert_eq!((d >> 52) & 0x3FF, 0, "bits 52..62 clear");
        assert_eq!(d >> 62, 1, "128-byte swizzle is layout 1");
        // The recipe verified on the H100: a 128B-swizzled K-major f16 tile.
        let recipe = (0x400u64 >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62);
        let built = WgmmaDesc::new(0x400)
            .with_leading_byte_offset(16)
            .with_stride_byte_offset(1024)
            .with_swizzle(Swizzle::B128);
        assert_eq!(built.bits(), recipe);
        assert_eq!(built.offset(32).bits(), recipe + 2, "one K = 16 step is 32 bytes");
        for (s, code) in [
            (Swizzle::None, 0),
            (Swizzle::B128, 1),
            (Swizzle::B64, 2),
            (Swizzle::B32, 3),
        ] {
            let d = WgmmaDesc::new(0x400).with_swizzle(Swizzle::B128).with_swizzle(s);
            assert_eq!(d.bits() >> 62, code, "{s:?}");
            assert_eq!(d.bits() & !(3 << 62), 0x40, "{s:?}: only the layout field changes");
        }
        assert_eq!(WgmmaDesc::new(0x400).with_base_offset(5).bits() >> 49 & 7, 5);
        assert_eq!(
            WgmmaDesc::new(0x400).with_base_offset(9).bits() >> 49 & 7,
            1,
            "three bits"
        );
        // Fields replace, not accumulate, and stay inside their 14 bits.
        let twice = WgmmaDesc::new(0)
            .with_stride_byte_offset(1024)
            .with_stride_byte_offset(128)
            .bits();
        assert_eq!((twice >> 32) & 0x3FFF, 8);
        let wide = WgmmaDesc::new(0).with_leading_byte_offset(0x4_0010).bits();
        assert_eq!(wide, 1 << 16, "LBO >> 4 masked to 14 bits");
        assert_eq!(
            WgmmaDesc::new(0x4_0400).bits(),
            0x40,
            "the address wraps at the 256 KiB window"
        );
    }

    #[test]
    fn vector_layout_is_16_bytes() {
        assert_eq!(core::mem::size_of::<u32x4>(), 16);
        assert_eq!(core::mem::align_of::<u32x4>(), 16);
    }
}

/// Shared memory (a [`SharedArray`] or a [`SharedSlice`]): what the
/// barrier, bulk-copy and tensor-memory intrinsics take.
pub trait SharedMemory: Memory {}
impl<T: Element, const N: usize> SharedMemory for SharedArray<T, N> {}
impl<T: Element> SharedMemory for SharedSlice<T> {}

/// A CUDA tensor map (`CUtensorMap`, 128 bytes, 64-byte aligned): how the
/// bulk tensor copy addresses a tile of a global tensor. Made on the host
/// with [`Device::tensor_map_2d`](crate::Device::tensor_map_2d) and passed to
/// a kernel by value (`.param .align 64 .b8 map[128]`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap(pub(crate) [u8; 128]);

impl core::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TensorMap(..)")
    }
}

impl TensorMap {
    /// The 128 bytes the kernel receives.
    pub fn bytes(&self) -> &[u8; 128] {
        &self.0
    }
}

/// The swizzle of a tile in shared memory, as the tensor copy writes it and
/// the tensor-core descriptors read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Swizzle {
    /// Plain layout (core matrices of 8 rows x 16 bytes).
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle: 16-byte chunk `c` of row `r` sits at chunk
    /// `c ^ (r % 8)` of a 1024-byte atom.
    B128,
}

impl Swizzle {
    /// The tcgen05 descriptor's layout type field (bits 61..64): 0, 6, 4, 2.
    pub const fn layout_type(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 6,
            Swizzle::B64 => 4,
            Swizzle::B128 => 2,
        }
    }

    /// The wgmma (sm_90) descriptor's layout type field (bits 62..64): 0,
    /// 3, 2, 1.
    pub const fn wgmma_layout_type(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 3,
            Swizzle::B64 => 2,
            Swizzle::B128 => 1,
        }
    }
}

/// A tcgen05 shared-memory matrix descriptor (PTX ISA "Shared memory
/// descriptor"): start address >> 4 in bits 0..14, leading byte offset >> 4
/// in 16..30, stride byte offset >> 4 in 32..46, the fixed 0b001 in 46..49,
/// base offset in 49..52, swizzle in 61..64. The builders are the same
/// functions on the host and in kernels (where they are integer
/// instructions, folded when their inputs are constants).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct SmemDesc(u64);

impl SmemDesc {
    const FIELD: u64 = 0x3FFF;

    /// A descriptor of the matrix starting at shared address
    /// `start_address` (16-byte aligned), no swizzle, offsets 0.
    pub const fn new(start_address: u32) -> SmemDesc {
        SmemDesc((((start_address & 0x3FFFF) >> 4) as u64) | (1 << 46))
    }

    const fn with_field(self, bytes: u32, shift: u32) -> SmemDesc {
        SmemDesc((self.0 & !(Self::FIELD << shift)) | ((((bytes >> 4) as u64) & Self::FIELD) << shift))
    }

    /// Sets the leading-dimension byte offset (K-major: between adjacent
    /// 16-byte columns of core matrices; unused with 128-byte swizzle).
    pub const fn with_leading_byte_offset(self, bytes: u32) -> SmemDesc {
        self.with_field(bytes, 16)
    }

    /// Sets the stride-dimension byte offset (between groups of 8 rows;
    /// 1024 for a 128-byte-swizzled K-major tile).
    pub const fn with_stride_byte_offset(self, bytes: u32) -> SmemDesc {
        self.with_field(bytes, 32)
    }

    /// Sets the base offset (0 when the swizzle pattern starts aligned).
    pub const fn with_base_offset(self, offset: u32) -> SmemDesc {
        SmemDesc((self.0 & !(7 << 49)) | (((offset & 7) as u64) << 49))
    }

    /// Sets the swizzle mode.
    pub const fn with_swizzle(self, swizzle: Swizzle) -> SmemDesc {
        SmemDesc((self.0 & !(7 << 61)) | (swizzle.layout_type() << 61))
    }

    /// The descriptor of the matrix `bytes` further (the start address
    /// field advanced by `bytes >> 4`; one K=64 step of an NVFP4 tile is 32
    /// bytes).
    pub const fn offset(self, bytes: u32) -> SmemDesc {
        SmemDesc(self.0 + (bytes >> 4) as u64)
    }

    /// The 64 bits.
    pub const fn bits(self) -> u64 {
        self.0
    }
}

/// A wgmma (Hopper, sm_90) shared-memory matrix descriptor (PTX ISA
/// "Matrix Descriptor Format" of the warpgroup MMA): start address >> 4 in
/// bits 0..14, leading byte offset >> 4 in 16..30, stride byte offset >> 4
/// in 32..46, base offset in 49..52, swizzle in 62..64. It is not the
/// tcgen05 [`SmemDesc`] (which has a fixed 0b001 at bits 46..49 and its
/// swizzle in 61..64 with other codes): the two are different types, so
/// one cannot be passed where the other is expected. The builders are the
/// same functions on the host and in kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct WgmmaDesc(u64);

impl WgmmaDesc {
    const FIELD: u64 = 0x3FFF;

    /// A descriptor of the matrix starting at shared address
    /// `start_address` (16-byte aligned), no swizzle, offsets 0.
    pub const fn new(start_address: u32) -> WgmmaDesc {
        WgmmaDesc(((start_address & 0x3FFFF) >> 4) as u64)
    }

    const fn with_field(self, bytes: u32, shift: u32) -> WgmmaDesc {
        WgmmaDesc((self.0 & !(Self::FIELD << shift)) | ((((bytes >> 4) as u64) & Self::FIELD) << shift))
    }

    /// Sets the leading-dimension byte offset (K-major without swizzle:
    /// between core matrices adjacent in K; swizzled K-major layouts do not
    /// use it, and implementations write 16).
    pub const fn with_leading_byte_offset(self, bytes: u32) -> WgmmaDesc {
        self.with_field(bytes, 16)
    }

    /// Sets the stride-dimension byte offset (between groups of 8 rows;
    /// 1024 for a 128-byte-swizzled K-major tile).
    pub const fn with_stride_byte_offset(self, bytes: u32) -> WgmmaDesc {
        self.with_field(bytes, 32)
    }

    /// Sets the base offset (0 when the swizzle pattern starts aligned).
    pub const fn with_base_offset(self, offset: u32) -> WgmmaDesc {
        WgmmaDesc((self.0 & !(7 << 49)) | (((offset & 7) as u64) << 49))
    }

    /// Sets the swizzle mode.
    pub const fn with_swizzle(self, swizzle: Swizzle) -> WgmmaDesc {
        WgmmaDesc((self.0 & !(3 << 62)) | (swizzle.wgmma_layout_type() << 62))
    }

    /// The descriptor of the matrix `bytes` further (the start address
    /// field advanced by `bytes >> 4`; one K = 16 step of a K-major f16
    /// tile with 128-byte swizzle is 32 bytes).
    pub const fn offset(self, bytes: u32) -> WgmmaDesc {
        WgmmaDesc(self.0 + (bytes >> 4) as u64)
    }

    /// The 64 bits.
    pub const fn bits(self) -> u64 {
        self.0
    }
}

/// A tcgen05 instruction descriptor (32 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct InstrDesc(u32);

impl InstrDesc {
    /// `.kind::mxf4nvf4` block-scaled MMA: A and B E2M1 (type code 1 in
    /// bits 7..10 and 10..12), UE4M3 scales (bit 23 clear), dense, K = 64,
    /// K-major A and B, N >> 3 in bits 17..23, M >> 7 in bits 27..29, scale
    /// factor ids 0. M = 128, N = 128 gives `0x08200480`.
    pub const fn mxf4nvf4(m: u32, n: u32) -> InstrDesc {
        InstrDesc(0x480 | ((n >> 3) << 17) | ((m >> 7) << 27))
    }

    /// The 32 bits.
    pub const fn bits(self) -> u32 {
        self.0
    }
}
