//! Views of device memory, the kernel arguments of `&[T]` and `&mut [T]`
//! parameters: one of this crate's [`DeviceBuffer`]s, or (on a CUDA device)
//! the caller's cudarc `CudaSlice`, `CudaView` or `CudaViewMut`, without a
//! copy. A view is a borrow plus a byte offset and a length; slicing and
//! casting check their bounds, and the address alignment the kernel's loads
//! need is checked at launch, when the address is known.

use super::{DeviceBuffer, DeviceCopy, Error, Result, Storage};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop,
};
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

/// cudarc memory a kernel reads. `read_ptr` is cudarc's `device_ptr`: with
/// cudarc's event tracking on, the stream waits for the buffer's last write
/// and the returned guard records this read when dropped (after the launch).
pub(super) trait CudaRead: Send + Sync {
    fn context(&self) -> &Arc<CudaContext>;
    fn bytes(&self) -> usize;
    fn read_ptr<'s>(&'s self, stream: &'s CudaStream) -> (CUdeviceptr, SyncOnDrop<'s>);
}

/// cudarc memory a kernel may write (cudarc's `device_ptr_mut`).
pub(super) trait CudaWrite: CudaRead {
    fn write_ptr<'s>(&'s mut self, stream: &'s CudaStream) -> (CUdeviceptr, SyncOnDrop<'s>);
}

macro_rules! cuda_read {
    ($($ty:ty),*) => { $(
        impl<T: Send + Sync> CudaRead for $ty {
            fn context(&self) -> &Arc<CudaContext> {
                DeviceSlice::stream(self).context()
            }
            fn bytes(&self) -> usize {
                DeviceSlice::num_bytes(self)
            }
            fn read_ptr<'s>(&'s self, stream: &'s CudaStream) -> (CUdeviceptr, SyncOnDrop<'s>) {
                self.device_ptr(stream)
            }
        }
    )* };
}
cuda_read!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

macro_rules! cuda_write {
    ($($ty:ty),*) => { $(
        impl<T: Send + Sync> CudaWrite for $ty {
            fn write_ptr<'s>(&'s mut self, stream: &'s CudaStream) -> (CUdeviceptr, SyncOnDrop<'s>) {
                self.device_ptr_mut(stream)
            }
        }
    )* };
}
cuda_write!(CudaSlice<T>, CudaViewMut<'_, T>);

/// What a read-only view borrows.
#[derive(Clone, Copy)]
pub(super) enum Memory<'a> {
    Buffer(&'a Storage),
    Cuda(&'a dyn CudaRead),
}

/// What a writable view borrows.
pub(super) enum MemoryMut<'a> {
    Buffer(&'a mut Storage),
    Cuda(&'a mut dyn CudaWrite),
}

impl MemoryMut<'_> {
    fn as_ref(&self) -> Memory<'_> {
        match self {
            MemoryMut::Buffer(s) => Memory::Buffer(s),
            MemoryMut::Cuda(c) => Memory::Cuda(&**c),
        }
    }
}

impl Memory<'_> {
    /// Bytes of the whole allocation or cudarc view.
    fn bytes(&self) -> usize {
        match self {
            Memory::Buffer(s) => s.bytes(),
            Memory::Cuda(c) => c.bytes(),
        }
    }
}

/// `len` elements of `T` at byte `offset` of some device memory: what a
/// kernel's `&[T]` parameter takes. Made with `DeviceView::from` (or
/// `.into()`) from `&DeviceBuffer<T>`, and on a CUDA device from cudarc's
/// `&CudaSlice<T>`, `&CudaView<T>` and `&CudaViewMut<T>`; narrowed with
/// [`slice`](Self::slice), reinterpreted with [`cast`](Self::cast).
pub struct DeviceView<'a, T> {
    pub(super) memory: Memory<'a>,
    pub(super) offset: usize,
    len: usize,
    elem: PhantomData<&'a [T]>,
}

/// `len` elements of `T` at byte `offset` of some device memory, writable:
/// what a kernel's `&mut [T]` parameter takes. Made from `&mut
/// DeviceBuffer<T>`, and on a CUDA device from `&mut CudaSlice<T>` and
/// `&mut CudaViewMut<T>`.
pub struct DeviceViewMut<'a, T> {
    pub(super) memory: MemoryMut<'a>,
    pub(super) offset: usize,
    len: usize,
    elem: PhantomData<&'a mut [T]>,
}

impl<T> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DeviceView<'_, T> {}

impl<T> std::fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceView")
            .field("elem", &std::any::type_name::<T>())
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceViewMut")
            .field("elem", &std::any::type_name::<T>())
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// The byte range of elements `range` of a view of `len` `T`s at `offset`.
fn sub_range<T>(offset: usize, len: usize, range: &Range<usize>) -> Result<usize> {
    if range.start > range.end || range.end > len {
        return Err(Error::InvalidLaunch(format!(
            "elements {range:?} of a view of {len} {}",
            std::any::type_name::<T>()
        )));
    }
    Ok(offset + range.start * std::mem::size_of::<T>())
}

/// The length in `U`s of `len` `T`s, if they are a whole number of `U`s.
fn cast_len<T, U>(len: usize) -> Result<usize> {
    let bytes = len * std::mem::size_of::<T>();
    let size = std::mem::size_of::<U>();
    if !bytes.is_multiple_of(size) {
        return Err(Error::InvalidLaunch(format!(
            "a view of {bytes} bytes is not a whole number of {} ({size} bytes each)",
            std::any::type_name::<U>()
        )));
    }
    Ok(bytes / size)
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    fn new(memory: Memory<'a>, offset: usize, len: usize) -> Self {
        DeviceView {
            memory,
            offset,
            len,
            elem: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements `range` of this view; `Err` when the range is not inside it.
    pub fn slice(self, range: Range<usize>) -> Result<DeviceView<'a, T>> {
        let offset = sub_range::<T>(self.offset, self.len, &range)?;
        Ok(DeviceView::new(self.memory, offset, range.len()))
    }

    /// The same bytes as elements of `U` (for instance a `CudaSlice<u8>` of
    /// packed FP4 as the `u32x4` units a kernel loads); `Err` unless the
    /// bytes are a whole number of `U`s. The address alignment `U` needs is
    /// checked at launch.
    pub fn cast<U: DeviceCopy>(self) -> Result<DeviceView<'a, U>> {
        let len = cast_len::<T, U>(self.len)?;
        Ok(DeviceView::new(self.memory, self.offset, len))
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
    fn new(memory: MemoryMut<'a>, offset: usize, len: usize) -> Self {
        DeviceViewMut {
            memory,
            offset,
            len,
            elem: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements `range` of this view; `Err` when the range is not inside it.
    pub fn slice(self, range: Range<usize>) -> Result<DeviceViewMut<'a, T>> {
        let offset = sub_range::<T>(self.offset, self.len, &range)?;
        Ok(DeviceViewMut::new(self.memory, offset, range.len()))
    }

    /// The same bytes as elements of `U`; see [`DeviceView::cast`].
    pub fn cast<U: DeviceCopy>(self) -> Result<DeviceViewMut<'a, U>> {
        let len = cast_len::<T, U>(self.len)?;
        Ok(DeviceViewMut::new(self.memory, self.offset, len))
    }

    /// A shorter-lived writable view of the same elements, so that this one
    /// can be used again after a launch.
    pub fn reborrow(&mut self) -> DeviceViewMut<'_, T> {
        let memory = match &mut self.memory {
            MemoryMut::Buffer(s) => MemoryMut::Buffer(s),
            MemoryMut::Cuda(c) => MemoryMut::Cuda(&mut **c),
        };
        DeviceViewMut::new(memory, self.offset, self.len)
    }

    /// A read-only view of the same elements.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView::new(self.memory.as_ref(), self.offset, self.len)
    }
}

impl<'a, T: DeviceCopy> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(b: &'a DeviceBuffer<T>) -> Self {
        DeviceView::new(Memory::Buffer(&b.storage), 0, b.len)
    }
}

impl<'a, T: DeviceCopy> From<&'a mut DeviceBuffer<T>> for DeviceViewMut<'a, T> {
    fn from(b: &'a mut DeviceBuffer<T>) -> Self {
        let len = b.len;
        DeviceViewMut::new(MemoryMut::Buffer(&mut b.storage), 0, len)
    }
}

impl<'a, T: DeviceCopy> From<&'a CudaSlice<T>> for DeviceView<'a, T> {
    fn from(s: &'a CudaSlice<T>) -> Self {
        DeviceView::new(Memory::Cuda(s), 0, s.len())
    }
}

impl<'a, 'b: 'a, T: DeviceCopy> From<&'a CudaView<'b, T>> for DeviceView<'a, T> {
    fn from(v: &'a CudaView<'b, T>) -> Self {
        DeviceView::new(Memory::Cuda(v), 0, v.len())
    }
}

impl<'a, 'b: 'a, T: DeviceCopy> From<&'a CudaViewMut<'b, T>> for DeviceView<'a, T> {
    fn from(v: &'a CudaViewMut<'b, T>) -> Self {
        DeviceView::new(Memory::Cuda(v), 0, v.len())
    }
}

impl<'a, T: DeviceCopy> From<&'a mut CudaSlice<T>> for DeviceViewMut<'a, T> {
    fn from(s: &'a mut CudaSlice<T>) -> Self {
        let len = s.len();
        DeviceViewMut::new(MemoryMut::Cuda(s), 0, len)
    }
}

impl<'a, 'b: 'a, T: DeviceCopy> From<&'a mut CudaViewMut<'b, T>> for DeviceViewMut<'a, T> {
    fn from(v: &'a mut CudaViewMut<'b, T>) -> Self {
        let len = v.len();
        DeviceViewMut::new(MemoryMut::Cuda(v), 0, len)
    }
}

/// `&mut view` where a launch takes a writable view: a reborrow
/// ([`DeviceViewMut::reborrow`]), so the view can be used after the launch.
impl<'a, 'b: 'a, T: DeviceCopy> From<&'a mut DeviceViewMut<'b, T>> for DeviceViewMut<'a, T> {
    fn from(v: &'a mut DeviceViewMut<'b, T>) -> Self {
        v.reborrow()
    }
}

/// `&view` where a launch takes a view.
impl<'a, 'b: 'a, T: DeviceCopy> From<&'a DeviceView<'b, T>> for DeviceView<'a, T> {
    fn from(v: &'a DeviceView<'b, T>) -> Self {
        *v
    }
}

/// `&view` of a writable view where a launch takes a read-only one
/// ([`DeviceViewMut::as_view`]).
impl<'a, 'b: 'a, T: DeviceCopy> From<&'a DeviceViewMut<'b, T>> for DeviceView<'a, T> {
    fn from(v: &'a DeviceViewMut<'b, T>) -> Self {
        v.as_view()
    }
}

/// A view resolved into its parts for a launch: the memory, the byte range,
/// and what the kernel's element type needs.
pub(super) struct BufferArg<M> {
    pub(super) memory: M,
    pub(super) offset: usize,
    /// Elements (the length the kernel receives).
    pub(super) len: usize,
    /// Bytes.
    pub(super) bytes: usize,
    /// The address alignment loads of the element type need.
    pub(super) align: usize,
    pub(super) elem: &'static str,
}

impl<'a, T: DeviceCopy> From<DeviceView<'a, T>> for BufferArg<Memory<'a>> {
    fn from(v: DeviceView<'a, T>) -> Self {
        BufferArg {
            memory: v.memory,
            offset: v.offset,
            len: v.len,
            bytes: v.len * std::mem::size_of::<T>(),
            align: std::mem::align_of::<T>(),
            elem: std::any::type_name::<T>(),
        }
    }
}

impl<'a, T: DeviceCopy> From<DeviceViewMut<'a, T>> for BufferArg<MemoryMut<'a>> {
    fn from(v: DeviceViewMut<'a, T>) -> Self {
        BufferArg {
            memory: v.memory,
            offset: v.offset,
            len: v.len,
            bytes: v.len * std::mem::size_of::<T>(),
            align: std::mem::align_of::<T>(),
            elem: std::any::type_name::<T>(),
        }
    }
}

impl<M> BufferArg<M> {
    /// Where the view lies, without the borrow of its memory.
    pub(super) fn placement(&self) -> Placement {
        Placement {
            offset: self.offset,
            bytes: self.bytes,
            align: self.align,
            elem: self.elem,
        }
    }

    /// See [`Placement::address`].
    pub(super) fn address(&self, index: usize, base: u64, memory_bytes: usize) -> Result<u64> {
        self.placement().address(index, base, memory_bytes)
    }
}

/// Where a view lies in its memory and what its element type needs.
#[derive(Clone, Copy)]
pub(super) struct Placement {
    offset: usize,
    bytes: usize,
    align: usize,
    elem: &'static str,
}

impl Placement {
    /// The address of the view given the address of its memory, after
    /// checking that the view lies inside that memory and is aligned for
    /// the kernel's loads. `index` is the argument's position.
    pub(super) fn address(&self, index: usize, base: u64, memory_bytes: usize) -> Result<u64> {
        if self.offset + self.bytes > memory_bytes {
            return Err(Error::InvalidLaunch(format!(
                "argument {index}: bytes {}..{} of a buffer of {memory_bytes}",
                self.offset,
                self.offset + self.bytes
            )));
        }
        let addr = base + self.offset as u64;
        if !addr.is_multiple_of(self.align as u64) {
            return Err(Error::InvalidLaunch(format!(
                "argument {index}: the view of `{}` starts at address {addr:#x}, not a multiple of the {} bytes its loads need; start it at an element offset that keeps it aligned",
                self.elem, self.align
            )));
        }
        Ok(addr)
    }
}

impl BufferArg<Memory<'_>> {
    pub(super) fn memory_bytes(&self) -> usize {
        self.memory.bytes()
    }
}

impl BufferArg<MemoryMut<'_>> {
    pub(super) fn memory_bytes(&self) -> usize {
        self.memory.as_ref().bytes()
    }
}
