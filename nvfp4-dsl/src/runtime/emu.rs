//! The emulator backend: kernels run on `crate::emu`, the PTX interpreter,
//! with host memory as device memory.

use super::view::{BufferArg, Memory as View, MemoryMut as ViewMut};
use super::{Arg, Error, KernelArg, LastWrites, LaunchConfig, Result, Storage, Workspaces};
use crate::emu::{self, EmuError, Memory, Module, Options, Overlap, ParamValue, TensorMap2d};
use crate::target::{Target, Variant};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A device that runs kernels on the PTX emulator, as a GPU of `target`
/// would (it reports that target's compute capability and runs that
/// target's PTX), under its emulator [`Options`]. Clones and [`new_stream`](super::Device::new_stream)
/// handles share its memory and modules.
#[derive(Clone)]
pub struct EmuDevice {
    target: Target,
    options: Options,
    memory: Arc<Mutex<Memory>>,
    /// Parsed modules, keyed by the address of their PTX text; a module is
    /// parsed under the lock, so once.
    modules: Arc<Mutex<HashMap<usize, Arc<Module>>>>,
    loads: Arc<AtomicUsize>,
    /// Modules that replace a kernel entry's compiled PTX
    /// ([`replace_ptx`](EmuDevice::replace_ptx)), by entry name.
    replaced: Arc<Mutex<HashMap<String, Arc<Module>>>>,
    last_writes: Arc<LastWrites>,
    /// Per stream, what its last launch touched of global memory (with
    /// what that launch may overlap, before and after a dependent's wait),
    /// while the next operation on the stream could be a programmatic
    /// dependent launch of it.
    footprints: Arc<Mutex<HashMap<u64, Overlap>>>,
    workspaces: Arc<Workspaces>,
    /// This handle's stream, and the last stream number given out.
    stream: u64,
    streams: Arc<AtomicU64>,
}

impl std::fmt::Debug for EmuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmuDevice")
            .field("target", &self.target)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// An allocation in the emulator's memory; freed on drop.
#[derive(Debug)]
pub struct EmuAlloc {
    memory: Arc<Mutex<Memory>>,
    addr: u64,
    bytes: usize,
}

impl EmuAlloc {
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn address(&self) -> u64 {
        self.addr
    }
}

impl Drop for EmuAlloc {
    fn drop(&mut self) {
        lock(&self.memory).free(self.addr);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn emulator(e: EmuError) -> Error {
    Error::Emulator(Box::new(e))
}

impl EmuDevice {
    /// An emulated GPU of `target` that runs launches under `options`.
    pub fn new(target: Target, options: Options) -> EmuDevice {
        EmuDevice {
            target,
            options,
            memory: Arc::new(Mutex::new(Memory::new())),
            modules: Arc::default(),
            loads: Arc::default(),
            replaced: Arc::default(),
            last_writes: Arc::default(),
            footprints: Arc::default(),
            workspaces: Arc::default(),
            stream: 0,
            streams: Arc::default(),
        }
    }

    /// A handle on a new stream (launches still run on the calling thread).
    pub(super) fn new_stream(&self) -> EmuDevice {
        EmuDevice {
            stream: self.streams.fetch_add(1, Ordering::Relaxed) + 1,
            ..self.clone()
        }
    }

    pub(super) fn stream(&self) -> u64 {
        self.stream
    }

    pub(super) fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// The emulator options of its launches.
    pub fn options(&self) -> Options {
        self.options
    }

    /// From now on, launches of the kernel whose PTX entry is `entry`
    /// (`Variant::entry`) run the entry of that name in `ptx` instead of
    /// the compiled PTX, with the same arguments: for mutation tests and
    /// for trying a hand-edited kernel through its typed launcher. Fails
    /// if the emulator cannot parse `ptx` or it lacks the entry.
    pub fn replace_ptx(&self, entry: &str, ptx: &str) -> Result<()> {
        let module = Module::parse(ptx).map_err(emulator)?;
        if !module.entries().contains(&entry) {
            return Err(Error::InvalidLaunch(format!(
                "the replacement PTX has no entry `{entry}` (it has: {})",
                module.entries().join(", ")
            )));
        }
        lock(&self.replaced).insert(entry.to_string(), Arc::new(module));
        Ok(())
    }

    pub(super) fn module_loads(&self) -> usize {
        self.loads.load(Ordering::Relaxed)
    }

    /// The target whose PTX this device runs.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The multiprocessors the emulated GPU reports: an H100 SXM's 132 for
    /// sm_90/sm_90a, a B200's 148 for sm_100a, an A100's 108 for sm_80 (it
    /// only guides how host code sizes grids; blocks run one at a time).
    pub fn multiprocessors(&self) -> u32 {
        if let Some(n) = self.options.multiprocessors {
            return n;
        }
        match self.target {
            Target::Sm80 => 108,
            Target::Sm90 | Target::Sm90a => 132,
            Target::Sm100a => 148,
        }
    }

    /// The compute capability of the emulated target.
    pub fn compute_capability(&self) -> (u32, u32) {
        match self.target {
            Target::Sm80 => (8, 0),
            Target::Sm90 | Target::Sm90a => (9, 0),
            Target::Sm100a => (10, 0),
        }
    }

    pub(super) fn upload(&self, bytes: &[u8]) -> Result<EmuAlloc> {
        let mut memory = lock(&self.memory);
        let addr = memory.alloc(bytes.len(), true);
        memory.write(addr, bytes).map_err(emulator)?;
        Ok(EmuAlloc {
            memory: self.memory.clone(),
            addr,
            bytes: bytes.len(),
        })
    }

    pub(super) fn alloc_zeroed(&self, bytes: usize) -> Result<EmuAlloc> {
        let addr = lock(&self.memory).alloc(bytes, true);
        Ok(EmuAlloc {
            memory: self.memory.clone(),
            addr,
            bytes,
        })
    }

    pub(super) fn download(&self, a: &EmuAlloc) -> Result<Vec<u8>> {
        self.owns(a)?;
        self.synchronize();
        Ok(lock(&self.memory).read(a.addr, a.bytes).map_err(emulator)?.to_vec())
    }

    pub(super) fn write(&self, a: &mut EmuAlloc, bytes: &[u8]) -> Result<()> {
        self.owns(a)?;
        self.synchronize();
        lock(&self.memory).write(a.addr, bytes).map_err(emulator)
    }

    /// An allocation of another emulator has its addresses in that one's
    /// memory: read or written here they would name this one's bytes.
    fn owns(&self, a: &EmuAlloc) -> Result<()> {
        if Arc::ptr_eq(&a.memory, &self.memory) {
            Ok(())
        } else {
            Err(Error::InvalidLaunch(
                "the buffer belongs to another device (another emulator's memory)".into(),
            ))
        }
    }

    /// The stream's work is complete: a launch after this (or after a
    /// copy) overlaps no kernel.
    pub(super) fn synchronize(&self) {
        lock(&self.footprints).remove(&self.stream);
    }

    pub(super) fn written_by_running_kernel(&self, range: (u64, u64)) -> bool {
        self.last_writes.overlaps(self.stream, range)
    }

    /// The emulator allocation behind a view, if it is in this device's
    /// memory.
    fn alloc<'a>(&self, storage: &'a Storage) -> Result<&'a EmuAlloc> {
        match storage {
            Storage::Emu(a) if Arc::ptr_eq(&a.memory, &self.memory) => Ok(a),
            _ => Err(Error::InvalidLaunch(
                "a buffer of another device was passed to the emulator".into(),
            )),
        }
    }

    /// An emulator tensor map (the emulator's own encoding, which its
    /// tensor copy reads) over `view`; `map` is already validated.
    pub(super) fn tensor_map_2d(
        &self,
        view: &BufferArg<View<'_>>,
        map: &super::TileMap2d,
    ) -> Result<crate::types::TensorMap> {
        let View::Buffer(storage) = view.memory else {
            return Err(cudarc_buffer());
        };
        let a = self.alloc(storage)?;
        let base = view.address(0, a.addr, a.bytes)?;
        if !base.is_multiple_of(16) {
            return Err(Error::InvalidLaunch(format!(
                "a tensor map's memory must start at a multiple of 16 bytes, not at {base:#x}"
            )));
        }
        let encoded = TensorMap2d {
            base,
            row_bytes: map.row_bytes,
            rows: map.rows,
            row_stride: map.row_stride,
            box_bytes: map.box_bytes,
            box_rows: map.box_rows,
            swizzle: match map.swizzle {
                crate::types::Swizzle::None => 0,
                crate::types::Swizzle::B32 => 32,
                crate::types::Swizzle::B64 => 64,
                crate::types::Swizzle::B128 => 128,
            },
        };
        Ok(crate::types::TensorMap(encoded.encode()))
    }

    /// The parsed module of `ptx`, parsed once; a parse error names the
    /// Rust statements of `variant`'s files.
    fn module(&self, variant: &Variant, ptx: &'static str) -> Result<Arc<Module>> {
        let mut modules = lock(&self.modules);
        let key = ptx.as_ptr() as usize;
        if let Some(m) = modules.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(Module::parse(ptx).map_err(|e| emulator(e.resolve(variant.sources)))?);
        self.loads.fetch_add(1, Ordering::Relaxed);
        modules.insert(key, m.clone());
        Ok(m)
    }

    /// Runs the launch to completion on the calling thread.
    pub(super) fn launch(
        &self,
        variant: &'static Variant,
        config: LaunchConfig,
        args: &mut [KernelArg<'_>],
    ) -> Result<()> {
        let Some((_, ptx)) = variant.best_for(self.target) else {
            return Err(Error::NoTarget {
                entry: variant.entry.to_string(),
                compute_capability: self.compute_capability(),
                targets: variant.ptx.iter().map(|(t, _)| *t).collect(),
            });
        };
        let replaced = lock(&self.replaced).get(variant.entry).cloned();
        let module = match replaced {
            Some(m) => m,
            None => self.module(variant, ptx)?,
        };
        let mut params = Vec::with_capacity(args.len() * 2);
        let mut writes = Vec::new();
        let mut read_only = Vec::new();
        let mut views = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            let (storage, placement, len, bytes) = match &arg.0 {
                Arg::Buffer(b) => match b.memory {
                    View::Buffer(s) => (s, b.placement(), b.len, b.bytes),
                    View::Cuda(_) => return Err(cudarc_buffer()),
                },
                Arg::BufferMut(b) => match &b.memory {
                    ViewMut::Buffer(s) => (&**s, b.placement(), b.len, b.bytes),
                    ViewMut::Cuda(_) => return Err(cudarc_buffer()),
                },
                Arg::Scalar(bytes, len) => {
                    params.push(scalar_param(bytes, *len)?);
                    continue;
                }
            };
            let a = self.alloc(storage)?;
            let addr = placement.address(index, a.addr, a.bytes)?;
            views.push((addr, addr + bytes as u64));
            if let Arg::BufferMut(_) = &arg.0 {
                writes.push((addr, addr + bytes as u64));
            } else {
                read_only.push(a.addr);
            }
            params.push(ParamValue::U64(addr));
            params.push(ParamValue::U64(len as u64));
        }
        let launch = emu::Launch {
            cluster: config.cluster,
            ..emu::Launch::new(config.grid, config.block, config.shared_bytes)
        };
        // A store through a `&[T]` parameter is a fault on the emulator (on
        // a GPU it would race with the caller's other borrows of the
        // buffer). The borrow rules keep a buffer from being passed both as
        // `&` and as `&mut`.
        let mut memory = lock(&self.memory);
        // A programmatic dependent launch may overlap the stream's last
        // launch (see `emu::pdl`); another starts after it is complete.
        let before = lock(&self.footprints).remove(&self.stream);
        let programmatic = config.programmatic_launch(variant);
        memory.predecessor = before.filter(|_| programmatic);
        for &addr in &read_only {
            memory.set_writable(addr, false).map_err(emulator)?;
        }
        // Each slice parameter's accesses stay inside its view.
        memory.set_views(views);
        let result = module.launch_with(variant.entry, &launch, &params, &mut memory, &self.options);
        memory.predecessor = None;
        if let Some(f) = memory.footprint.take() {
            lock(&self.footprints).insert(self.stream, f);
        }
        memory.set_views(Vec::new());
        for &addr in &read_only {
            memory.set_writable(addr, true).map_err(emulator)?;
        }
        self.last_writes
            .record(self.stream, writes, programmatic, variant.triggers_early);
        result.map(drop).map_err(|e| emulator(e.resolve(variant.sources)))
    }
}

fn cudarc_buffer() -> Error {
    Error::InvalidLaunch("a cudarc buffer was passed to the emulator, which runs on host memory".into())
}

fn scalar_param(bytes: &[u8; 128], len: usize) -> Result<ParamValue> {
    let word = |n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&bytes[..n]);
        u64::from_le_bytes(b)
    };
    Ok(match len {
        1 => ParamValue::U8(bytes[0]),
        2 => ParamValue::U16(word(2) as u16),
        4 => ParamValue::U32(word(4) as u32),
        8 => ParamValue::U64(word(8)),
        16 => ParamValue::B128(bytes[..16].try_into().expect("16 bytes")),
        n @ 1..=128 => ParamValue::Bytes(bytes[..n].to_vec()),
        n => {
            return Err(Error::InvalidLaunch(format!(
                "a {n}-byte parameter is more than 128 bytes"
            )));
        }
    })
}
