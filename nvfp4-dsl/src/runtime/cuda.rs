//! The CUDA backend: cudarc's driver API, one context and one stream.

use super::{Arg, Error, KernelArg, LaunchConfig, Result, Storage};
use crate::target::{Target, Variant};
use cudarc::driver::sys::{self, CUfunction, CUfunction_attribute, CUjit_option, CUmodule};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex};

/// Static shared memory plus up to this much dynamic shared memory needs no
/// opt-in.
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

/// A CUDA GPU with its context, stream and loaded kernels.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (u32, u32),
    max_shared_optin: u32,
    multiprocessors: u32,
    /// Loaded modules, keyed by the address of their PTX text (each is a
    /// `&'static str` in the binary): each module is loaded once.
    modules: Mutex<HashMap<usize, Loaded>>,
    /// Device address ranges the most recent launch could write (its
    /// `&mut` buffers).
    last_writes: Mutex<Vec<(u64, u64)>>,
}

struct Loaded {
    module: CUmodule,
    function: CUfunction,
    /// The dynamic shared memory limit set on the function so far.
    shared_limit: u32,
}

// SAFETY: module and function handles are plain driver handles, valid in the
// context from any thread (the context is bound before each use).
unsafe impl Send for Loaded {}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("name", &self.name)
            .field("compute_capability", &self.compute_capability)
            .finish_non_exhaustive()
    }
}

fn driver(during: impl Into<String>) -> impl FnOnce(DriverError) -> Error {
    let during = during.into();
    move |error| Error::Driver { during, error }
}

impl CudaDevice {
    /// Opens device `ordinal`; `Err` when there is no driver or device.
    pub fn new(ordinal: usize) -> Result<CudaDevice> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let count = CudaContext::device_count().map_err(driver("counting devices"))?;
        let count = usize::try_from(count).unwrap_or(0);
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver("creating a context"))?;
        // One stream orders all work, so cudarc's cross-stream events are
        // not needed.
        // SAFETY: every operation of this device goes through `stream`.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let name = ctx.name().map_err(driver("reading the device name"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver("reading the compute capability"))?;
        let max_shared_optin = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(driver("reading the shared memory limit"))?;
        let multiprocessors = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("reading the multiprocessor count"))?;
        Ok(CudaDevice {
            ctx,
            stream,
            name,
            compute_capability: (major as u32, minor as u32),
            max_shared_optin: max_shared_optin as u32,
            multiprocessors: multiprocessors as u32,
            modules: Mutex::new(HashMap::new()),
            last_writes: Mutex::new(Vec::new()),
        })
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// Streaming multiprocessors.
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// The cudarc context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch and copy of this device uses.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(super) fn upload(&self, bytes: &[u8]) -> Result<CudaSlice<u8>> {
        self.stream.clone_htod(bytes).map_err(driver("copying to the device"))
    }

    pub(super) fn alloc_zeroed(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        self.stream
            .alloc_zeros::<u8>(bytes)
            .map_err(driver("allocating device memory"))
    }

    pub(super) fn download(&self, s: &CudaSlice<u8>) -> Result<Vec<u8>> {
        self.stream.clone_dtoh(s).map_err(driver("copying from the device"))
    }

    pub(super) fn write(&self, s: &mut CudaSlice<u8>, bytes: &[u8]) -> Result<()> {
        self.stream
            .memcpy_htod(bytes, s)
            .map_err(driver("copying to the device"))
    }

    /// Whether the most recent launch was given `s` as a writable buffer.
    pub(super) fn written_by_last_launch(&self, s: &CudaSlice<u8>) -> bool {
        let (ptr, _sync) = s.device_ptr(&self.stream);
        let end = ptr + s.num_bytes() as u64;
        let writes = self.last_writes.lock().unwrap_or_else(|p| p.into_inner());
        writes.iter().any(|&(start, stop)| start < end && ptr < stop)
    }

    pub(super) fn tensor_map_2d(&self, s: &CudaSlice<u8>, map: &super::TileMap2d) -> Result<crate::types::TensorMap> {
        use sys::{
            CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
            CUtensorMapSwizzle,
        };
        let (ptr, _sync) = s.device_ptr(&self.stream);
        let swizzle = match map.swizzle {
            crate::types::Swizzle::None => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            crate::types::Swizzle::B32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            crate::types::Swizzle::B64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            crate::types::Swizzle::B128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let dims = [map.row_bytes, map.rows];
        let strides = [map.row_stride];
        let boxes = [map.box_bytes, map.box_rows];
        let element_strides = [1u32, 1];
        // SAFETY: an all-zero CUtensorMap is plain data the call overwrites.
        let mut out: sys::CUtensorMap = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to arrays of the rank's length; the address
        // is a live allocation of this context.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut out,
                CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
                2,
                ptr as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
        .result()
        .map_err(driver("encoding a tensor map"))?;
        let mut bytes = [0u8; 128];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(out.opaque) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(crate::types::TensorMap(bytes))
    }

    pub(super) fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver("waiting for the device"))
    }

    /// Loads (once) and launches.
    ///
    /// # Safety
    ///
    /// As [`super::launch`].
    pub(super) unsafe fn launch(
        &self,
        variant: &'static Variant,
        config: LaunchConfig,
        args: &mut [KernelArg<'_>],
    ) -> Result<()> {
        let (major, minor) = self.compute_capability;
        let Some((target, ptx)) = variant.select(major, minor) else {
            return Err(Error::NoTarget {
                entry: variant.entry.to_string(),
                compute_capability: self.compute_capability,
                targets: variant.ptx.iter().map(|(t, _)| *t).collect(),
            });
        };
        if config.shared_bytes > self.max_shared_optin {
            return Err(Error::InvalidLaunch(format!(
                "{} bytes of dynamic shared memory requested; this device allows {}",
                config.shared_bytes, self.max_shared_optin
            )));
        }
        self.ctx.bind_to_thread().map_err(driver("binding the context"))?;
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        let key = ptx.as_ptr() as usize;
        let loaded = match modules.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(load(ptx, variant.entry, target)?),
        };
        if config.shared_bytes > DEFAULT_SHARED_LIMIT && config.shared_bytes > loaded.shared_limit {
            // SAFETY: a valid function handle of this context.
            unsafe {
                sys::cuFuncSetAttribute(
                    loaded.function,
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    config.shared_bytes as i32,
                )
            }
            .result()
            .map_err(driver(format!(
                "allowing {} bytes of shared memory for `{}`",
                config.shared_bytes, variant.entry
            )))?;
            loaded.shared_limit = config.shared_bytes;
        }

        // Each parameter's value lives in a 16-byte slot; the driver reads
        // through the pointers during `cuLaunchKernel`.
        let mut slots: Vec<[u64; 16]> = Vec::with_capacity(args.len() * 2);
        let mut writes = Vec::new();
        for arg in args.iter_mut() {
            match &mut arg.0 {
                Arg::Buffer(Storage::Cuda(s), len) => {
                    let (ptr, _sync) = s.device_ptr(&self.stream);
                    slots.push(slot(ptr));
                    slots.push(slot(*len as u64));
                }
                Arg::BufferMut(Storage::Cuda(s), len) => {
                    let bytes = s.num_bytes() as u64;
                    let (ptr, _sync) = s.device_ptr_mut(&self.stream);
                    writes.push((ptr, ptr + bytes));
                    slots.push(slot(ptr));
                    slots.push(slot(*len as u64));
                }
                Arg::Buffer(Storage::Emu(_), _) | Arg::BufferMut(Storage::Emu(_), _) => {
                    return Err(Error::InvalidLaunch(
                        "an emulator buffer was passed to a CUDA launch".into(),
                    ));
                }
                Arg::Scalar(bytes, _) => {
                    let mut s = [0u64; 16];
                    for (word, chunk) in s.iter_mut().zip(bytes.chunks_exact(8)) {
                        *word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                    }
                    slots.push(s);
                }
            }
        }
        *self.last_writes.lock().unwrap_or_else(|p| p.into_inner()) = writes;
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s.as_mut_ptr().cast::<c_void>()).collect();
        let during = format!("launching `{}`", variant.entry);
        if !variant.programmatic && config.cluster == (1, 1, 1) {
            // SAFETY: the function belongs to this context, `params` points
            // at one slot per kernel parameter (the caller guarantees the
            // argument list matches), and the slots outlive the call.
            return unsafe {
                cudarc::driver::result::launch_kernel(
                    loaded.function,
                    config.grid,
                    config.block,
                    config.shared_bytes,
                    self.stream.cu_stream(),
                    &mut params,
                )
            }
            .map_err(driver(during));
        }
        let mut attributes = Vec::with_capacity(2);
        if variant.programmatic {
            // The kernel waits for its predecessor itself
            // (`griddepcontrol.wait`), so it may start while the predecessor
            // finishes.
            // SAFETY: an all-zero attribute is valid plain data; the fields
            // that matter are set here.
            let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            a.value.programmaticStreamSerializationAllowed = 1;
            attributes.push(a);
        }
        if config.cluster != (1, 1, 1) {
            // SAFETY: as above.
            let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = config.cluster.0;
            a.value.clusterDim.y = config.cluster.1;
            a.value.clusterDim.z = config.cluster.2;
            attributes.push(a);
        }
        let launch = sys::CUlaunchConfig {
            gridDimX: config.grid.0,
            gridDimY: config.grid.1,
            gridDimZ: config.grid.2,
            blockDimX: config.block.0,
            blockDimY: config.block.1,
            blockDimZ: config.block.2,
            sharedMemBytes: config.shared_bytes,
            hStream: self.stream.cu_stream(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attributes.len() as u32,
        };
        // SAFETY: as above; `launch` and `attributes` outlive the call.
        unsafe { sys::cuLaunchKernelEx(&launch, loaded.function, params.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(driver(during))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        let _ = self.stream.synchronize();
        let modules = self.modules.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, m) in modules.drain() {
            // SAFETY: the module was loaded in this context and no work
            // using it is pending (synchronized above).
            let _ = unsafe { sys::cuModuleUnload(m.module) };
        }
    }
}

/// A 128-byte parameter slot holding one 64-bit value.
fn slot(value: u64) -> [u64; 16] {
    let mut s = [0u64; 16];
    s[0] = value;
    s
}

/// `cuModuleLoadDataEx` with an error-log buffer, so a rejected PTX comes
/// back with the JIT's line-numbered message.
fn load(ptx: &str, entry: &str, target: Target) -> Result<Loaded> {
    let src =
        CString::new(ptx).map_err(|_| Error::InvalidLaunch(format!("the PTX of `{entry}` contains a NUL byte")))?;
    let name = CString::new(entry).map_err(|_| Error::InvalidLaunch(format!("bad entry name `{entry}`")))?;
    let mut log = vec![0u8; 64 * 1024];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
    let mut module: CUmodule = std::ptr::null_mut();
    // SAFETY: valid pointers for the module, a NUL-terminated image, and two
    // options with their values (a buffer and its size).
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            src.as_ptr().cast::<c_void>(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if let Err(error) = status.result() {
        let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]).trim().to_string();
        return Err(if text.is_empty() {
            Error::Driver {
                during: format!("loading the {target} PTX of `{entry}`"),
                error,
            }
        } else {
            Error::ModuleRejected {
                entry: entry.to_string(),
                target,
                log: text,
            }
        });
    }
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: `module` was just loaded; `name` is NUL-terminated.
    let found = unsafe { sys::cuModuleGetFunction(&mut function, module, name.as_ptr()) }.result();
    if let Err(error) = found {
        // SAFETY: unloading the module loaded above.
        let _ = unsafe { sys::cuModuleUnload(module) };
        return Err(Error::Driver {
            during: format!("finding entry `{entry}`"),
            error,
        });
    }
    Ok(Loaded {
        module,
        function,
        shared_limit: DEFAULT_SHARED_LIMIT,
    })
}
