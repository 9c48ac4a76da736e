//! The CUDA backend: cudarc's driver API; a context's loaded kernels shared
//! by every handle, each handle launching on its own stream.

use super::view::{BufferArg, Memory, MemoryMut};
use super::{Arg, Error, KernelArg, LastWrites, LaunchConfig, Result, Storage, Workspaces};
use crate::target::{Target, Variant};
use cudarc::driver::sys::{self, CUfunction, CUfunction_attribute, CUjit_option, CUmodule};
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError, SyncOnDrop};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Static shared memory plus up to this much dynamic shared memory needs no
/// opt-in.
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

/// A CUDA GPU: its context and loaded kernels (shared by clones and by the
/// handles of other streams) and the stream this handle launches on.
#[derive(Clone)]
pub struct CudaDevice {
    shared: Arc<Shared>,
    stream: Arc<CudaStream>,
}

/// What every handle of one context shares.
struct Shared {
    ctx: Arc<CudaContext>,
    name: String,
    compute_capability: (u32, u32),
    max_shared_optin: u32,
    multiprocessors: u32,
    /// Loaded modules, keyed by the address of their PTX text (each is a
    /// `&'static str` in the binary). A module is loaded under the write
    /// lock, so threads racing to launch a kernel first load it once;
    /// launches of loaded kernels only take the read lock.
    modules: RwLock<HashMap<usize, Loaded>>,
    /// Modules loaded so far.
    loads: AtomicUsize,
    last_writes: LastWrites,
    workspaces: Workspaces,
    /// Per stream, an event recorded when a handle on it was dropped: the
    /// modules are unloaded once these have completed. (Not a context-wide
    /// synchronisation, which would invalidate a graph capture under way on
    /// another thread.)
    retired: Mutex<HashMap<u64, CudaEvent>>,
    /// Set once a launch was captured into a graph (which refers to the
    /// module) or a handle was dropped while its stream was captured: the
    /// modules then stay loaded until the context is destroyed.
    keep_modules: AtomicBool,
}

struct Loaded {
    module: CUmodule,
    function: CUfunction,
    /// The dynamic shared memory limit set on the function so far.
    shared_limit: u32,
}

// SAFETY: module and function handles are plain driver handles, valid in the
// context from any thread (the context is bound before each use); the map
// that holds them is behind a lock.
unsafe impl Send for Loaded {}
// SAFETY: as above; a shared `Loaded` is only read.
unsafe impl Sync for Loaded {}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("name", &self.shared.name)
            .field("compute_capability", &self.shared.compute_capability)
            .finish_non_exhaustive()
    }
}

fn driver(during: impl Into<String>) -> impl FnOnce(DriverError) -> Error {
    let during = during.into();
    move |error| Error::Driver { during, error }
}

impl CudaDevice {
    /// Opens device `ordinal` with a context of its own and launches on its
    /// default stream; `Err` when there is no driver or device.
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
        // Each handle orders its work on its stream, so cudarc's
        // cross-stream events are not needed.
        // SAFETY: every operation of this device goes through a handle's
        // stream; buffers are not shared across streams without the user
        // ordering them (as with any CUDA streams).
        unsafe { ctx.disable_event_tracking() };
        CudaDevice::from_stream(ctx.default_stream())
    }

    /// A device on the caller's context, launching on `stream`.
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<CudaDevice> {
        let ctx = stream.context().clone();
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
        let shared = Shared {
            ctx,
            name,
            compute_capability: (major as u32, minor as u32),
            max_shared_optin: max_shared_optin as u32,
            multiprocessors: multiprocessors as u32,
            modules: RwLock::new(HashMap::new()),
            loads: AtomicUsize::new(0),
            last_writes: LastWrites::default(),
            workspaces: Workspaces::default(),
            retired: Mutex::new(HashMap::new()),
            keep_modules: AtomicBool::new(false),
        };
        Ok(CudaDevice {
            shared: Arc::new(shared),
            stream,
        })
    }

    /// This device on the caller's `stream` (of the same context).
    pub(super) fn with_stream(&self, stream: Arc<CudaStream>) -> Result<CudaDevice> {
        if stream.context() != &self.shared.ctx {
            return Err(Error::InvalidLaunch(
                "the stream belongs to another CUDA context than this device's".into(),
            ));
        }
        Ok(CudaDevice {
            shared: self.shared.clone(),
            stream,
        })
    }

    /// This device on a new stream of its context.
    pub(super) fn new_stream(&self) -> Result<CudaDevice> {
        let stream = self.shared.ctx.new_stream().map_err(driver("creating a stream"))?;
        self.with_stream(stream)
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.shared.compute_capability
    }

    /// Streaming multiprocessors.
    pub fn multiprocessors(&self) -> u32 {
        self.shared.multiprocessors
    }

    /// The cudarc context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.shared.ctx
    }

    /// The stream this handle's launches and copies use.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(super) fn module_loads(&self) -> usize {
        self.shared.loads.load(Ordering::Relaxed)
    }

    fn storage(&self, slice: CudaSlice<u8>) -> Storage {
        let addr = slice.device_ptr(&self.stream).0;
        Storage::Cuda { slice, addr }
    }

    pub(super) fn upload(&self, bytes: &[u8]) -> Result<Storage> {
        let slice = self.stream.clone_htod(bytes).map_err(driver("copying to the device"))?;
        Ok(self.storage(slice))
    }

    pub(super) fn alloc_zeroed(&self, bytes: usize) -> Result<Storage> {
        let slice = self
            .stream
            .alloc_zeros::<u8>(bytes)
            .map_err(driver("allocating device memory"))?;
        Ok(self.storage(slice))
    }

    pub(super) fn alloc_scratch(&self, bytes: usize) -> Result<Storage> {
        // SAFETY: the bytes are plain data of no type's invariants; whatever
        // the allocation held is a valid (unspecified) value of them.
        let slice = unsafe { self.stream.alloc::<u8>(bytes) }.map_err(driver("allocating device memory"))?;
        Ok(self.storage(slice))
    }

    pub(super) fn download(&self, s: &CudaSlice<u8>) -> Result<Vec<u8>> {
        self.stream.clone_dtoh(s).map_err(driver("copying from the device"))
    }

    pub(super) fn write(&self, s: &mut CudaSlice<u8>, bytes: &[u8]) -> Result<()> {
        self.stream
            .memcpy_htod(bytes, s)
            .map_err(driver("copying to the device"))
    }

    pub(super) fn stream_key(&self) -> u64 {
        self.stream.cu_stream() as u64
    }

    pub(super) fn workspaces(&self) -> &Workspaces {
        &self.shared.workspaces
    }

    /// Begins capturing this handle's stream into a graph (launches from
    /// this thread only).
    pub(super) fn begin_capture(&self) -> Result<()> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(driver("beginning a graph capture"))
    }

    /// Ends the capture begun by [`begin_capture`](Self::begin_capture): its
    /// graph, instantiated, or `None` if nothing was captured.
    pub(super) fn end_capture(&self) -> Result<Option<cudarc::driver::CudaGraph>> {
        self.stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(driver("ending a graph capture"))
    }

    /// Whether this handle's stream is being captured into a graph (or its
    /// capture was invalidated).
    pub(super) fn capturing(&self) -> Result<bool> {
        let status = self
            .stream
            .capture_status()
            .map_err(driver("querying the stream's capture status"))?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Whether a kernel that may still run when this stream's next kernel
    /// starts was given a writable view overlapping `range`.
    pub(super) fn written_by_running_kernel(&self, range: (u64, u64)) -> bool {
        self.shared.last_writes.overlaps(self.stream_key(), range)
    }

    fn foreign(&self, what: &str) -> Error {
        Error::InvalidLaunch(format!("{what} belongs to another device or CUDA context"))
    }

    /// The address of `memory` for a read on this stream, and cudarc's
    /// guard that records the read when dropped.
    fn read_ptr<'s>(&'s self, memory: Memory<'s>) -> Result<(u64, Option<SyncOnDrop<'s>>)> {
        match memory {
            Memory::Buffer(Storage::Cuda { slice, .. }) if slice.context() == &self.shared.ctx => {
                let (ptr, sync) = slice.device_ptr(&self.stream);
                Ok((ptr, Some(sync)))
            }
            Memory::Cuda(c) if c.context() == &self.shared.ctx => {
                let (ptr, sync) = c.read_ptr(&self.stream);
                Ok((ptr, Some(sync)))
            }
            _ => Err(self.foreign("a buffer")),
        }
    }

    /// As [`read_ptr`](Self::read_ptr), for a write.
    fn write_ptr<'s>(&'s self, memory: &'s mut MemoryMut<'_>) -> Result<(u64, SyncOnDrop<'s>)> {
        match memory {
            MemoryMut::Buffer(Storage::Cuda { slice, .. }) if slice.context() == &self.shared.ctx => {
                Ok(slice.device_ptr_mut(&self.stream))
            }
            MemoryMut::Cuda(c) if c.context() == &self.shared.ctx => Ok(c.write_ptr(&self.stream)),
            _ => Err(self.foreign("a buffer")),
        }
    }

    pub(super) fn tensor_map_2d(
        &self,
        view: &BufferArg<Memory<'_>>,
        map: &super::TileMap2d,
    ) -> Result<crate::types::TensorMap> {
        use sys::{
            CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
            CUtensorMapSwizzle,
        };
        let (base, _sync) = self.read_ptr(view.memory)?;
        let ptr = view.address(0, base, view.memory_bytes())?;
        if !ptr.is_multiple_of(16) {
            return Err(Error::InvalidLaunch(format!(
                "a tensor map's memory must start at a multiple of 16 bytes, not at {ptr:#x}"
            )));
        }
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
        // is inside a live allocation of this context.
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

    /// The function of `variant`'s module for `target`, loaded once, with
    /// its dynamic shared memory limit raised to `shared_bytes`.
    fn function(&self, variant: &Variant, target: Target, ptx: &'static str, shared_bytes: u32) -> Result<CUfunction> {
        let key = ptx.as_ptr() as usize;
        {
            let modules = self.shared.modules.read().unwrap_or_else(|p| p.into_inner());
            if let Some(loaded) = modules.get(&key)
                && shared_bytes <= loaded.shared_limit
            {
                return Ok(loaded.function);
            }
        }
        let mut modules = self.shared.modules.write().unwrap_or_else(|p| p.into_inner());
        let loaded = match modules.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let loaded = load(ptx, variant.entry, target)?;
                self.shared.loads.fetch_add(1, Ordering::Relaxed);
                e.insert(loaded)
            }
        };
        if shared_bytes > loaded.shared_limit {
            // SAFETY: a valid function handle of this context.
            unsafe {
                sys::cuFuncSetAttribute(
                    loaded.function,
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_bytes as i32,
                )
            }
            .result()
            .map_err(driver(format!(
                "allowing {shared_bytes} bytes of shared memory for `{}`",
                variant.entry
            )))?;
            loaded.shared_limit = shared_bytes;
        }
        Ok(loaded.function)
    }

    /// Loads (once) and launches on this handle's stream.
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
        let (major, minor) = self.shared.compute_capability;
        let Some((target, ptx)) = variant.select(major, minor) else {
            return Err(Error::NoTarget {
                entry: variant.entry.to_string(),
                compute_capability: self.shared.compute_capability,
                targets: variant.ptx.iter().map(|(t, _)| *t).collect(),
            });
        };
        if config.shared_bytes > self.shared.max_shared_optin {
            return Err(Error::InvalidLaunch(format!(
                "{} bytes of dynamic shared memory requested; this device allows {}",
                config.shared_bytes, self.shared.max_shared_optin
            )));
        }
        self.shared
            .ctx
            .bind_to_thread()
            .map_err(driver("binding the context"))?;
        let function = self.function(variant, target, ptx, config.shared_bytes)?;

        // Each parameter's value lives in a 128-byte slot; the driver reads
        // through the pointers during the launch call. cudarc's guards stay
        // alive until after it, so that (with event tracking on) the reads
        // and writes are recorded after the launch, as cudarc's own launches
        // do.
        let mut slots: Vec<[u64; 16]> = Vec::with_capacity(args.len() * 2);
        let mut writes = Vec::new();
        let mut guards = Vec::with_capacity(args.len());
        for (index, arg) in args.iter_mut().enumerate() {
            match &mut arg.0 {
                Arg::Buffer(b) => {
                    let (base, sync) = self.read_ptr(b.memory)?;
                    guards.extend(sync);
                    slots.push(slot(b.address(index, base, b.memory_bytes())?));
                    slots.push(slot(b.len as u64));
                }
                Arg::BufferMut(b) => {
                    let (memory_bytes, placement, len) = (b.memory_bytes(), b.placement(), b.len);
                    let (base, sync) = self.write_ptr(&mut b.memory)?;
                    guards.push(sync);
                    let addr = placement.address(index, base, memory_bytes)?;
                    writes.push((addr, addr + b.bytes as u64));
                    slots.push(slot(addr));
                    slots.push(slot(len as u64));
                }
                Arg::Scalar(_, len) if *len > 128 => {
                    return Err(Error::InvalidLaunch(format!(
                        "a {len}-byte parameter is more than 128 bytes"
                    )));
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
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s.as_mut_ptr().cast::<c_void>()).collect();
        // SAFETY: forwarded contract; `params` holds one slot per kernel
        // parameter and outlives the call.
        let launched = unsafe { self.launch_function(function, variant, config, &mut params) };
        self.shared.last_writes.record(
            self.stream_key(),
            writes,
            config.programmatic_launch(variant),
            variant.triggers_early,
        );
        drop(guards);
        launched?;
        // The launch happened: a capture status that cannot be read keeps
        // the modules too, rather than reporting the launch as failed.
        if !self.shared.keep_modules.load(Ordering::Relaxed) && self.capturing().unwrap_or(true) {
            self.shared.keep_modules.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `cuLaunchKernel`, or `cuLaunchKernelEx` with the attributes a
    /// programmatic (PDL) kernel or a cluster launch needs.
    ///
    /// # Safety
    ///
    /// `function` belongs to this context and `params` points at one slot
    /// per kernel parameter, matching the kernel's parameter types.
    unsafe fn launch_function(
        &self,
        function: CUfunction,
        variant: &Variant,
        config: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let during = || format!("launching `{}`", variant.entry);
        let programmatic = config.programmatic_launch(variant);
        if !programmatic && config.cluster == (1, 1, 1) {
            // SAFETY: the caller's contract.
            return unsafe {
                cudarc::driver::result::launch_kernel(
                    function,
                    config.grid,
                    config.block,
                    config.shared_bytes,
                    self.stream.cu_stream(),
                    params,
                )
            }
            .map_err(driver(during()));
        }
        let mut attributes = Vec::with_capacity(2);
        if programmatic {
            // The kernel waits for its predecessor itself
            // (`griddepcontrol.wait`), so it may start while the predecessor
            // finishes. Under stream capture this becomes a programmatic
            // edge of the graph (CUDA 12.3 and newer), with the same rules.
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
        // SAFETY: the caller's contract; `launch` and `attributes` outlive
        // the call.
        unsafe { sys::cuLaunchKernelEx(&launch, function, params.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(driver(during()))
    }
}

impl Drop for CudaDevice {
    /// Notes what this handle's stream has queued, for `Shared`'s drop.
    fn drop(&mut self) {
        let idle = matches!(
            self.stream.capture_status(),
            Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
        );
        match idle.then(|| self.stream.record_event(None).ok()).flatten() {
            Some(event) => {
                let mut retired = self.shared.retired.lock().unwrap_or_else(|p| p.into_inner());
                retired.retain(|_, e| !e.is_complete());
                retired.insert(self.stream_key(), event);
            }
            None => self.shared.keep_modules.store(true, Ordering::Relaxed),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if *self.keep_modules.get_mut() || self.ctx.bind_to_thread().is_err() {
            return;
        }
        // No launch of these modules may still be pending on any stream:
        // every handle's stream recorded an event when the handle dropped.
        let retired = self.retired.get_mut().unwrap_or_else(|p| p.into_inner());
        if retired.values().any(|e| e.synchronize().is_err()) {
            return;
        }
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
