//! Running kernels: a device, buffers on it, and `launch`.
//!
//! A [`Device`] is a CUDA GPU (through cudarc's driver API, loaded at run
//! time: nothing here needs CUDA to build) or the PTX emulator, plus the
//! stream its launches go to. It can be built on the caller's own cudarc
//! context and stream ([`Device::from_cuda_stream`]); clones and
//! [`Device::with_cuda_stream`] share one module cache. Buffers are
//! [`DeviceView`]s of this crate's [`DeviceBuffer`]s or of the caller's
//! cudarc slices; the launchers that `#[kernel]` generates take them in
//! parameter order and call [`launch`].

mod arg;
mod config;
mod cuda;
mod emu;
mod last_writes;
mod struct_arg;
mod view;
mod workspace;

use crate::target::{Target, Variant};
use std::fmt;
use std::marker::PhantomData;

use arg::Arg;
pub use arg::{KernelArg, ScalarArg};
pub use config::{LaunchConfig, TileMap2d};
pub use cuda::CudaDevice;
pub use emu::EmuDevice;
use last_writes::LastWrites;
use view::{BufferArg, Memory, MemoryMut};
pub use view::{DeviceView, DeviceViewMut};
use workspace::Workspaces;

/// What can go wrong when running kernels. `{:?}` writes the same message
/// as `{}` (what `fn main() -> Result<(), nvfp4_dsl::Error>` prints):
/// the emulator's errors lead with the Rust statement, not with a
/// structure's fields.
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda.so`) is not installed.
    NoDriver,
    /// No CUDA device with this ordinal.
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// A CUDA driver call failed.
    Driver {
        /// What was being done.
        during: String,
        /// The driver's error.
        error: cudarc::driver::DriverError,
    },
    /// The driver rejected a kernel's PTX; `log` is ptxas's message.
    ModuleRejected {
        /// The kernel entry.
        entry: String,
        /// The target whose PTX was loaded.
        target: Target,
        /// The JIT error log (with PTX line numbers).
        log: String,
    },
    /// The kernel was not compiled for a target this device runs.
    NoTarget {
        /// The kernel entry.
        entry: String,
        /// The device's compute capability.
        compute_capability: (u32, u32),
        /// The targets the kernel was compiled for.
        targets: Vec<Target>,
    },
    /// The launch configuration or the arguments are invalid.
    InvalidLaunch(String),
    /// The emulator stopped a launch (an out-of-bounds access, a barrier
    /// that cannot complete, ...) or could not run its PTX.
    Emulator(Box<crate::emu::EmuError>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => write!(f, "no CUDA driver: libcuda was not found"),
            Error::NoDevice { ordinal, count } => {
                write!(f, "no CUDA device {ordinal}: the driver reports {count} device(s)")
            }
            Error::Driver { during, error } => write!(f, "CUDA driver error while {during}: {error}"),
            Error::ModuleRejected { entry, target, log } => {
                write!(f, "the driver rejected the {target} PTX of `{entry}`:\n{log}")
            }
            Error::NoTarget {
                entry,
                compute_capability: (ma, mi),
                targets,
            } => {
                write!(
                    f,
                    "`{entry}` has no PTX for a compute capability {ma}.{mi} device (compiled for {})",
                    targets.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
                )?;
                if let [only] = targets[..] {
                    write!(
                        f,
                        ": run it on a device of that target, or on `Device::emulator(Target::{only:?})` (without a GPU, `Device::best()` emulates an sm_100a device)"
                    )?;
                }
                Ok(())
            }
            Error::InvalidLaunch(msg) => write!(f, "invalid launch: {msg}"),
            Error::Emulator(e) => write!(f, "emulator: {e}"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Plain data that can be copied to and from a device byte for byte.
///
/// # Safety
///
/// Implementors have no padding, no pointers, and every bit pattern is a
/// valid value.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: plain numbers: no padding, every bit pattern valid.
        unsafe impl DeviceCopy for $t {}
    )* };
}
device_copy!(
    u8,
    u16,
    u32,
    u64,
    usize,
    i8,
    i16,
    i32,
    i64,
    f32,
    f64,
    half::f16,
    half::bf16
);
device_copy!(
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

fn as_bytes<T: DeviceCopy>(data: &[T]) -> &[u8] {
    // SAFETY: `DeviceCopy` types are plain data without padding.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

fn from_bytes<T: DeviceCopy>(bytes: &[u8]) -> Vec<T> {
    let n = bytes.len() / std::mem::size_of::<T>();
    let mut out = Vec::<T>::with_capacity(n);
    // SAFETY: `out` has room for `n` elements, the copy fills all of them,
    // and every bit pattern is a valid `T` (`DeviceCopy`).
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            out.as_mut_ptr().cast::<u8>(),
            n * std::mem::size_of::<T>(),
        );
        out.set_len(n);
    }
    out
}

/// Where kernels run: a CUDA GPU or the PTX emulator, and the stream this
/// handle's launches and copies go to. Launches are asynchronous and
/// ordered on that stream like any cudarc work.
///
/// A `Device` is `Send + Sync`: threads may share one, or each take its own
/// stream with [`new_stream`](Self::new_stream) or
/// [`with_cuda_stream`](Self::with_cuda_stream). Clones and those handles
/// share the module cache: each kernel's module is loaded once per context,
/// also when threads race to launch it first. The modules are unloaded when
/// the last handle is dropped, after the work queued on the handles' streams
/// (not the whole context's: that would break a graph capture under way on
/// another thread); once a launch was captured into a CUDA graph they stay
/// loaded until the context is destroyed, so the graph may outlive the
/// `Device`.
#[derive(Clone, Debug)]
pub enum Device {
    /// A CUDA GPU.
    Cuda(CudaDevice),
    /// The PTX emulator, standing in for a GPU of one target.
    Emulator(EmuDevice),
}

impl Device {
    /// The CUDA device `ordinal`, with a context and stream of its own. An
    /// `Err` (never a panic) when there is no driver or no such device.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        Ok(Device::Cuda(CudaDevice::new(ordinal)?))
    }

    /// A device on the caller's cudarc context, launching on `stream` (and
    /// allocating there). Nothing of the context's settings is changed:
    /// with cudarc's event tracking on, buffers passed to kernels are
    /// synchronised across streams as cudarc does for its own launches.
    pub fn from_cuda_stream(stream: std::sync::Arc<cudarc::driver::CudaStream>) -> Result<Device> {
        Ok(Device::Cuda(CudaDevice::from_stream(stream)?))
    }

    /// A device on the caller's cudarc context, launching on its default
    /// (legacy) stream, which cannot be captured into a graph: use
    /// [`from_cuda_stream`](Self::from_cuda_stream) with a stream of your own
    /// for that.
    pub fn from_cuda_context(context: std::sync::Arc<cudarc::driver::CudaContext>) -> Result<Device> {
        Device::from_cuda_stream(context.default_stream())
    }

    /// This device launching on the caller's `stream` instead, sharing the
    /// module cache. `Err` on the emulator and for a stream of another
    /// context.
    pub fn with_cuda_stream(&self, stream: std::sync::Arc<cudarc::driver::CudaStream>) -> Result<Device> {
        match self {
            Device::Cuda(d) => Ok(Device::Cuda(d.with_stream(stream)?)),
            Device::Emulator(_) => Err(Error::InvalidLaunch(
                "the emulator has no CUDA streams; use Device::new_stream".into(),
            )),
        }
    }

    /// This device on a new stream of its own, sharing the module cache (on
    /// the emulator: the memory too; its launches run on the calling thread).
    pub fn new_stream(&self) -> Result<Device> {
        match self {
            Device::Cuda(d) => Ok(Device::Cuda(d.new_stream()?)),
            Device::Emulator(d) => Ok(Device::Emulator(d.new_stream())),
        }
    }

    /// How many kernel modules this device's cache has loaded (parsed, on
    /// the emulator) so far: each kernel variant counts once.
    pub fn module_loads(&self) -> usize {
        match self {
            Device::Cuda(d) => d.module_loads(),
            Device::Emulator(d) => d.module_loads(),
        }
    }

    /// The PTX emulator standing in for a GPU of `target`: it runs a
    /// kernel's PTX for the newest of its targets that `target` has (see
    /// [`Target::has`]), so an sm_90a emulator runs sm_90a code and falls
    /// back to sm_90. Its launches use the default emulator options, the
    /// checked mode: the adversarial schedule with seed 0 and the race
    /// checks ([`crate::emu::Options`]).
    pub fn emulator(target: Target) -> Device {
        Device::emulator_with(target, crate::emu::Options::default())
    }

    /// [`emulator`](Device::emulator) with the emulator options of its
    /// launches (another seed, the sequential schedule, the fast mode
    /// [`Options::fast`](crate::emu::Options::fast), an instruction limit,
    /// the number of threads).
    pub fn emulator_with(target: Target, options: crate::emu::Options) -> Device {
        Device::Emulator(EmuDevice::new(target, options))
    }

    /// CUDA device 0 when there is one, else the emulator as a Blackwell
    /// (`sm_100a`) GPU: code that takes a `Device` runs anywhere.
    pub fn best() -> Device {
        Device::cuda(0).unwrap_or_else(|_| Device::emulator(Target::Sm100a))
    }

    /// Whether this is the emulator.
    pub fn is_emulator(&self) -> bool {
        matches!(self, Device::Emulator(_))
    }

    /// A short description: name and compute capability.
    pub fn describe(&self) -> String {
        let (ma, mi) = self.compute_capability();
        match self {
            Device::Cuda(d) => format!("{} (compute capability {ma}.{mi})", d.name()),
            Device::Emulator(d) => format!(
                "the PTX emulator as an {} GPU (compute capability {ma}.{mi})",
                d.target()
            ),
        }
    }

    /// The compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        match self {
            Device::Cuda(d) => d.compute_capability(),
            Device::Emulator(d) => d.compute_capability(),
        }
    }

    /// Streaming multiprocessors (what the emulator stands in for, on the
    /// emulator): for sizing grids that fill the GPU.
    pub fn multiprocessors(&self) -> u32 {
        match self {
            Device::Cuda(d) => d.multiprocessors(),
            Device::Emulator(d) => d.multiprocessors(),
        }
    }

    /// The CUDA device, when this is one (for its context, stream, events
    /// and other cudarc APIs).
    pub fn as_cuda(&self) -> Option<&CudaDevice> {
        match self {
            Device::Cuda(d) => Some(d),
            Device::Emulator(_) => None,
        }
    }

    /// The emulator, when this is one (for
    /// [`replace_ptx`](EmuDevice::replace_ptx)).
    pub fn as_emulator(&self) -> Option<&EmuDevice> {
        match self {
            Device::Cuda(_) => None,
            Device::Emulator(d) => Some(d),
        }
    }

    /// Copies `data` to a new buffer on the device.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let storage = match self {
            Device::Cuda(d) => d.upload(as_bytes(data))?,
            Device::Emulator(d) => Storage::Emu(d.upload(as_bytes(data))?),
        };
        Ok(DeviceBuffer::new(storage, data.len()))
    }

    /// A new buffer of `len` zeroed elements.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::InvalidLaunch(format!("a buffer of {len} elements is too large")))?;
        let storage = match self {
            Device::Cuda(d) => d.alloc_zeroed(bytes)?,
            Device::Emulator(d) => Storage::Emu(d.alloc_zeroed(bytes)?),
        };
        Ok(DeviceBuffer::new(storage, len))
    }

    /// A new buffer of `len` elements whose contents are unspecified: a
    /// workspace that kernels write before they read it. On a CUDA device
    /// it is allocated in stream order without a fill (the emulator's is
    /// zeroed).
    pub fn alloc_scratch<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::InvalidLaunch(format!("a buffer of {len} elements is too large")))?;
        let storage = match self {
            Device::Cuda(d) => d.alloc_scratch(bytes)?,
            Device::Emulator(d) => Storage::Emu(d.alloc_zeroed(bytes)?),
        };
        Ok(DeviceBuffer::new(storage, len))
    }

    /// The number of this handle's stream, for keys of per-stream state.
    fn stream_id(&self) -> u64 {
        match self {
            Device::Cuda(d) => d.stream_key(),
            Device::Emulator(d) => d.stream(),
        }
    }

    fn workspaces(&self) -> &Workspaces {
        match self {
            Device::Cuda(d) => d.workspaces(),
            Device::Emulator(d) => d.workspaces(),
        }
    }

    /// Whether this handle's stream is being captured into a graph.
    fn capturing(&self) -> Result<bool> {
        match self {
            Device::Cuda(d) => d.capturing(),
            Device::Emulator(_) => Ok(false),
        }
    }

    /// Copies a buffer back to the host (waits for the work before it on
    /// this device's stream).
    pub fn download<T: DeviceCopy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let bytes = buf.len * std::mem::size_of::<T>();
        let all = match (self, &buf.storage) {
            (Device::Cuda(d), Storage::Cuda { slice, .. }) => d.download(slice)?,
            (Device::Emulator(d), Storage::Emu(s)) => d.download(s)?,
            _ => return Err(foreign_buffer()),
        };
        Ok(from_bytes(&all[..bytes]))
    }

    /// Overwrites a buffer with `data` (same length).
    pub fn write<T: DeviceCopy>(&self, buf: &mut DeviceBuffer<T>, data: &[T]) -> Result<()> {
        if data.len() != buf.len {
            return Err(Error::InvalidLaunch(format!(
                "writing {} elements into a buffer of {}",
                data.len(),
                buf.len
            )));
        }
        match (self, &mut buf.storage) {
            (Device::Cuda(d), Storage::Cuda { slice, .. }) => d.write(slice, as_bytes(data)),
            (Device::Emulator(d), Storage::Emu(s)) => d.write(s, as_bytes(data)),
            _ => Err(foreign_buffer()),
        }
    }

    /// Whether a kernel launched on this device's stream (by any handle)
    /// that may still run when the next kernel starts was given (part of)
    /// `view` as a writable (`&mut`) argument. A kernel that starts before
    /// its predecessor finishes (see
    /// [`grid_dependency_wait`](crate::intrinsics::grid_dependency_wait)) may
    /// read a buffer early only when this is false.
    ///
    /// Those kernels are the most recent one and, while it is a kernel that
    /// may let the next launch before its own wait returned
    /// ([`Variant::triggers_early`](crate::Variant::triggers_early)), the
    /// ones before it: with A written by a quantizer and then read by two
    /// GEMVs (which trigger early), the second GEMV may start while the
    /// quantizer still runs.
    ///
    /// Only this crate's launches are seen. A view of the caller's cudarc
    /// memory is always reported as possibly written (kernels the caller
    /// launches on the stream could have written it); kernels the caller
    /// launches on this crate's [`DeviceBuffer`]s are not seen.
    pub fn written_by_running_kernel<'a, T: DeviceCopy>(&self, view: impl Into<DeviceView<'a, T>>) -> bool {
        let view = view.into();
        let (Memory::Buffer(storage), bytes) = (view.memory, view.len() * std::mem::size_of::<T>()) else {
            return true;
        };
        let start = storage.address() + view.offset as u64;
        let range = (start, start + bytes as u64);
        match self {
            Device::Cuda(d) => d.written_by_running_kernel(range),
            Device::Emulator(d) => d.written_by_running_kernel(range),
        }
    }

    /// A tensor map over `view` for bulk tensor copies
    /// ([`cp_async_bulk_tensor_2d_global_to_shared`](crate::intrinsics::cp_async_bulk_tensor_2d_global_to_shared)).
    /// The map holds the view's address: launch kernels with it only while
    /// the memory lives. `Err` unless the view starts at a multiple of 16
    /// bytes.
    pub fn tensor_map_2d<'a, T: DeviceCopy>(
        &self,
        view: impl Into<DeviceView<'a, T>>,
        map: TileMap2d,
    ) -> Result<crate::types::TensorMap> {
        let view = view.into();
        map.validate((view.len() * std::mem::size_of::<T>()) as u64)?;
        let arg = BufferArg::from(view);
        match self {
            Device::Cuda(d) => d.tensor_map_2d(&arg, &map),
            Device::Emulator(d) => d.tensor_map_2d(&arg, &map),
        }
    }

    /// Waits until all work launched on this device's stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Device::Cuda(d) => d.synchronize(),
            Device::Emulator(d) => {
                d.synchronize();
                Ok(())
            }
        }
    }
}

/// The memory of a [`DeviceBuffer`].
#[derive(Debug)]
enum Storage {
    /// A cudarc allocation and its device address.
    Cuda {
        slice: cudarc::driver::CudaSlice<u8>,
        addr: u64,
    },
    Emu(emu::EmuAlloc),
}

impl Storage {
    fn bytes(&self) -> usize {
        match self {
            Storage::Cuda { slice, .. } => slice.len(),
            Storage::Emu(a) => a.bytes(),
        }
    }

    fn address(&self) -> u64 {
        match self {
            Storage::Cuda { addr, .. } => *addr,
            Storage::Emu(a) => a.address(),
        }
    }
}

fn foreign_buffer() -> Error {
    Error::InvalidLaunch("the buffer belongs to another device".into())
}

/// A typed buffer in device memory.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    storage: Storage,
    len: usize,
    elem: PhantomData<T>,
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    fn new(storage: Storage, len: usize) -> DeviceBuffer<T> {
        DeviceBuffer {
            storage,
            len,
            elem: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer as a read-only view.
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView::from(self)
    }

    /// The buffer as a writable view.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut::from(self)
    }

    /// Elements `range`, read-only; `Err` when the range is not inside.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Result<DeviceView<'_, T>> {
        self.view().slice(range)
    }

    /// Elements `range`, writable; `Err` when the range is not inside.
    pub fn slice_mut(&mut self, range: std::ops::Range<usize>) -> Result<DeviceViewMut<'_, T>> {
        self.view_mut().slice(range)
    }

    /// Keeps the first `len` elements (at most the current length): the
    /// memory stays allocated, no copy is made.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The cudarc allocation (bytes), when the buffer lives on a CUDA device.
    pub fn as_cuda(&self) -> Option<&cudarc::driver::CudaSlice<u8>> {
        match &self.storage {
            Storage::Cuda { slice, .. } => Some(slice),
            Storage::Emu(_) => None,
        }
    }
}

/// Launches `variant` on `device`'s stream with `args` in the kernel's
/// parameter order. The generated `launch` functions call this; they type
/// the arguments, so prefer them. Every view is checked before anything is
/// launched: it must lie inside its memory, belong to this device, and
/// start at an address aligned for its element type (`Err` otherwise).
///
/// # Safety
///
/// The kernel accesses memory without bounds checks: the configuration and
/// the arguments must keep all its accesses inside its buffers, and `args`
/// must match the kernel's parameters in number and type.
pub unsafe fn launch(
    device: &Device,
    variant: &'static Variant,
    config: LaunchConfig,
    args: &mut [KernelArg<'_>],
) -> Result<()> {
    config.validate().map_err(|e| match e {
        Error::InvalidLaunch(m) => Error::InvalidLaunch(format!("kernel `{}`: {m}", variant.kernel)),
        other => other,
    })?;
    match device {
        // SAFETY: forwarded contract.
        Device::Cuda(d) => unsafe { d.launch(variant, config, args) },
        Device::Emulator(d) => d.launch(variant, config, args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_buffers_can_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Device>();
        send_sync::<DeviceBuffer<f32>>();
        send_sync::<DeviceView<'_, f32>>();
        send_sync::<DeviceViewMut<'_, f32>>();
    }

    /// Writes `value` into every byte of the first workspace buffer of `key`
    /// and returns what it held before.
    fn swap_workspace(device: &Device, key: &'static str, bytes: usize, value: u8) -> Vec<u8> {
        device
            .with_workspace(key, &[bytes], |buffers| {
                assert!(buffers[0].len() >= bytes, "a buffer of at least the size asked for");
                let before = device.download(&buffers[0])?;
                let fill = vec![value; buffers[0].len()];
                device.write(&mut buffers[0], &fill)?;
                Ok(before[..bytes].to_vec())
            })
            .expect("workspace")
    }

    #[test]
    fn a_workspace_is_kept_per_stream_and_key_until_freed() {
        let device = Device::emulator(Target::Sm90a);
        let clone = device.clone();
        let other = device.new_stream().expect("stream");
        // (handle, key, bytes, the byte written, the byte it must have held
        // before): the emulator's fresh memory is zeroed, so 0 means a new
        // buffer.
        type Step<'a> = (&'a Device, &'static str, usize, u8, u8, &'static str);
        let before_free: [Step<'_>; 8] = [
            (&device, "a", 64, 7, 0, "a new buffer"),
            (&device, "a", 64, 8, 7, "kept for the next call"),
            (&device, "a", 16, 9, 8, "a smaller request reuses it"),
            (&clone, "a", 64, 10, 9, "a clone shares the stream"),
            (&device, "b", 64, 11, 0, "another key has its own"),
            (&other, "a", 64, 12, 0, "another stream has its own"),
            (&device, "a", 128, 13, 0, "a larger request replaces it"),
            (&device, "a", 128, 14, 13, "the larger one is kept"),
        ];
        let after_free: [Step<'_>; 2] = [
            (&device, "a", 128, 15, 0, "freed"),
            (&other, "a", 64, 16, 12, "only this stream's are freed"),
        ];
        for (handle, key, bytes, value, before, what) in before_free {
            assert_eq!(swap_workspace(handle, key, bytes, value), vec![before; bytes], "{what}");
        }
        device.free_workspaces();
        for (handle, key, bytes, value, before, what) in after_free {
            assert_eq!(swap_workspace(handle, key, bytes, value), vec![before; bytes], "{what}");
        }
    }

    #[test]
    fn a_workspace_call_returns_the_callers_error_and_keeps_its_buffers() {
        let device = Device::emulator(Target::Sm90a);
        swap_workspace(&device, "k", 32, 5);
        let failed: Result<()> = device.with_workspace("k", &[32, 8], |buffers| {
            assert_eq!(buffers.len(), 2, "one buffer per size");
            Err(Error::InvalidLaunch("the caller's error".into()))
        });
        assert!(matches!(failed, Err(Error::InvalidLaunch(m)) if m == "the caller's error"));
        assert_eq!(swap_workspace(&device, "k", 32, 6), vec![5; 32]);
    }
}
