//! Everything a kernel body and the host code launching it need:
//! `use nvfp4_dsl::prelude::*;`.

pub use crate::generic::{Float, Half, Int, Num};
pub use crate::intrinsics::*;
pub use crate::ptx;
pub use crate::{
    Cache, Device, DeviceBuffer, E4m3, E4m3x2, Fp4x2, InstrDesc, LaunchConfig, Order, Scope, SharedArray, SharedSlice,
    Shuffle, SmemDesc, Swizzle, Target, TensorMap, WarpReduce, WgmmaDesc, bf16x2, device, f16x2, kernel, u32x4,
};
pub use half::{bf16, f16};
