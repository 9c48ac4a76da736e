//! # nvfp4-dsl
//!
//! GPU kernels written as Rust functions. `#[kernel]` lowers a restricted
//! Rust function to PTX text at compile time (no LLVM, no nvcc, no NVRTC);
//! the PTX is a `&'static str` in your binary, launched at run time through
//! cudarc.
//!
//! ```ignore
//! use nvfp4_dsl::prelude::*;
//!
//! #[kernel(targets(sm_90, sm_100a))]
//! pub fn saxpy(x: &[f32], y: &mut [f32], a: f32, n: u32) {
//!     let i = block_idx_x() * block_dim_x() + thread_idx_x();
//!     if i < n {
//!         y[i as usize] = a * x[i as usize] + y[i as usize];
//!     }
//! }
//!
//! let device = Device::cuda(0)?;
//! let x = device.upload(&[1.0f32; 1024])?;
//! let mut y = device.upload(&[2.0f32; 1024])?;
//! unsafe { saxpy::Kernel::launch(&device, LaunchConfig::linear(4, 256), &x, &mut y, 3.0, 1024)? };
//! ```
//!
//! `targets(..)` lists the targets to compile for (`sm_80`, `sm_90`,
//! `sm_90a`, `sm_100a`); without it a kernel compiles for `sm_90` and
//! `sm_100a`.
//!
//! ## The subset
//!
//! Parameters are slices `&[T]`/`&mut [T]` (global memory, passed with their
//! length: `x.len()` works), scalars, const generics whose values are
//! listed in `#[kernel(specialize(N = [..]))]`, and type parameters bounded
//! by [`Float`](generic::Float), [`Half`](generic::Half),
//! [`Int`](generic::Int) or [`Num`](generic::Num) whose types are listed
//! the same way
//! (`specialize(T = [f16, bf16])`; see [`generic`]). Bodies use `let`/`let mut`,
//! assignment and compound assignment, `if`/`else` (also as a value), `for`
//! over ranges (`a..b`, `a..=b`, `(a..b).step_by(s)`), `while`, `loop`,
//! `break`, `continue`, `return`, Rust's operators with Rust's semantics
//! (integers wrap as in release builds, shifts mask their amount, floats
//! round to nearest and are never contracted into FMAs), `as` casts as Rust
//! defines them, local arrays `[T; N]` indexed by constants, shared memory
//! ([`shared_array`](intrinsics::shared_array),
//! [`dynamic_shared`](intrinsics::dynamic_shared)), `#[unroll]` on `for`
//! loops with constant bounds (a loop with constant bounds whose body
//! indexes a local array by its variable, `for e in 0..4 { acc[e] += x; }`,
//! is unrolled without it, up to 256 iterations), and the intrinsics of
//! [`intrinsics`] and the methods of the DSL types. Atomics (`atomic_add`,
//! `atomic_cas`, ...) work on global and shared memory and take their
//! memory order and scope as constants ([`Order`], [`Scope`]). `if` on a constant (a const generic) is folded:
//! the branch not taken emits nothing. Anything else is a compile error that
//! names the construct and says what to write instead.
//!
//! [`#[device]`](macro@device) functions are called from kernels and from
//! each other (same module, other modules, other crates) and inlined;
//! `#[device]` structs of values live in registers, have methods (a
//! `#[device(methods)]` struct's `#[device] impl` block) and are kernel
//! parameters; `#[device] const`s (numbers, `bool`s, arrays of numbers)
//! are usable wherever a literal is, array lengths and `#[unroll]` bounds
//! included, and an array const is a table that a kernel may index at run
//! time. `match` works on
//! integers and `bool`s (literals, ranges, `|`, `_`, bindings, guards),
//! tuples as values and in `let` patterns.
//!
//! Rust's associated constants (`u32::MAX`, `i32::MIN`, `f32::EPSILON`,
//! `f16::MAX`, `core::f32::consts::PI`, ...) and the methods of its numbers
//! (`wrapping_*`, `saturating_*`, `leading_zeros`, `rotate_left`, `pow`,
//! `floor`, `round`, `copysign`, `powi`, `exp`, `sin`, ... listed in
//! [`intrinsics`]) work in kernels with Rust's results; `exp`, `exp2`,
//! `ln`, `log2`, `sin`, `cos` and `tanh` are `f32` approximations with the
//! accuracy the README documents.
//!
//! Indexing is unchecked on the device (a kernel has no way to panic).
//! Integer division by zero gives all ones (`MAX`, or `-1` for signed
//! types) instead of panicking, and `MIN / -1` gives `MIN` (as
//! `wrapping_div`).
//!
//! ## What `#[kernel]` generates
//!
//! For `#[kernel(..)] pub fn name(..)`, a module `name` with
//! `VARIANTS` (every specialisation: entry name and PTX per target) and
//! `Kernel<..>`, whose `launch` exists for each listed specialisation (for
//! a kernel generic over one type `T`, one `launch` for the types that
//! implement `name::Specialized`, so host code generic over `T:
//! name::Specialized` can launch it).
//! Launching picks the PTX for the device, loads each module once, raises
//! the shared memory limit when a launch asks for more than 48 KiB, and
//! returns [`Error`] (a rejected module comes with the JIT's log). A slice
//! parameter takes anything that converts into a [`DeviceView`]
//! ([`DeviceViewMut`] for `&mut [T]`): a [`DeviceBuffer`], a slice or cast
//! of one, or the caller's cudarc `CudaSlice`, `CudaView` and
//! `CudaViewMut`, checked for bounds, device and alignment before the
//! launch.
//!
//! ## Host code that already uses cudarc
//!
//! [`Device::from_cuda_stream`] wraps the caller's context and stream;
//! [`Device::with_cuda_stream`] and [`Device::new_stream`] give handles on
//! other streams that share the loaded modules. A `Device` is `Send +
//! Sync`; launches are asynchronous on the handle's stream, so they can be
//! captured into CUDA graphs: with [`Device::capture_graph`] (library calls
//! then keep their workspaces from one captured call to the next, as on the
//! stream), or with cudarc's `begin_capture`/`end_capture`.
//!
//! ## Targets
//!
//! `sm_90` (Hopper), `sm_90a` (Hopper with its architecture-specific
//! features: `wgmma`, `setmaxnreg`) and `sm_100a` (Blackwell B200, the
//! tcgen05 tensor cores), optionally `sm_80`. Each gets its own PTX with the
//! lowest `.version` it needs (never above 9.0). An intrinsic used below its
//! minimum target, or an "a" target's intrinsic on another target (wgmma
//! on sm_100a, tcgen05 on sm_90a), is a compile error. At launch the newest
//! target the device runs is picked: sm_90a before sm_90 on an H100.

#![deny(missing_docs)]

pub mod emu;
pub mod generic;
pub mod intrinsics;
pub mod prelude;
mod runtime;
mod target;
mod types;

#[doc(hidden)]
pub use cudarc::driver::DeviceRepr as __DeviceRepr;
pub use half::{bf16, f16};

/// Implemented by a `#[device] impl` block's struct; a `#[device(methods)]`
/// struct checks it, so a missing block is an error at the struct. Not for
/// direct use.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is marked `#[device(methods)]` and has no `#[device] impl {Self} {{ .. }}` block",
    label = "write `#[device] impl {Self} {{ .. }}` in the struct's module, or remove `methods`"
)]
pub trait __HasDeviceImpl {}

/// Implemented by a `#[device(methods)]` struct; its `#[device] impl`
/// block checks it, so that kernels get the methods with the struct. Not
/// for direct use.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` has a `#[device] impl` block and is not a `#[device(methods)]` struct",
    label = "mark the struct `#[device(methods)]`, so that kernels get its methods with it"
)]
pub trait __MarkedDeviceMethods {}
#[doc(hidden)]
pub use nvfp4_dsl_macros::__kernel_with_devices;
pub use nvfp4_dsl_macros::{device, kernel};
pub use runtime::{
    CudaDevice, Device, DeviceBuffer, DeviceCopy, DeviceView, DeviceViewMut, EmuDevice, Error, KernelArg, LaunchConfig,
    Result, ScalarArg, TileMap2d, launch,
};
pub use target::{PtxBuilds, SourceFn, Target, Variant};
pub use types::{
    AtomicAdd, AtomicInt, Cache, DeviceIndex, E4m3, E4m3x2, Element, Fp4x2, InstrDesc, Memory, MemoryMut, Order, Scope,
    SharedArray, SharedElement, SharedMemory, SharedRow, SharedSlice, Shuffle, SmemDesc, Swizzle, TensorMap,
    WarpReduce, WgmmaDesc, bf16x2, f16x2, u32x4,
};
