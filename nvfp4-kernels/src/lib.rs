//! Kernels written in nvfp4-dsl: the sample kernels, the NVFP4 GEMV and the
//! block-scaled GEMM, the quantization of activations, with their host-side
//! utilities and CPU references; and an NVFP4 linear layer loaded from a
//! ModelOpt checkpoint. [`registry`] lists every kernel.

#![deny(missing_docs)]

pub mod checkpoint;
pub mod decode;
pub mod encode;
pub mod fidelity;
pub mod gemm;
pub mod gemv;
pub mod linear;
pub mod nvfp4;
pub mod quantize;
pub mod registry;
pub mod rng;
pub mod samples;

use std::fmt;

/// Errors of the typed host APIs.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The device or a launch failed.
    Device(nvfp4_dsl::Error),
    /// Shapes or lengths that the kernel cannot take.
    Shape(String),
    /// A value the computation cannot take: a scale that is not positive
    /// and finite, an input that is not finite.
    Value(String),
    /// A result differs from the CPU reference.
    Mismatch(String),
    /// The device cannot run this kernel.
    Unsupported(String),
    /// A checkpoint file is unreadable, incomplete, or lacks a tensor of
    /// the right dtype and shape.
    Checkpoint(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Device(e) => write!(f, "{e}"),
            Error::Shape(s) => write!(f, "invalid shape: {s}"),
            Error::Value(s) => write!(f, "invalid value: {s}"),
            Error::Mismatch(s) => write!(f, "wrong result: {s}"),
            Error::Unsupported(s) => write!(f, "unsupported: {s}"),
            Error::Checkpoint(s) => write!(f, "checkpoint: {s}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Device(e) => Some(e),
            _ => None,
        }
    }
}

impl From<nvfp4_dsl::Error> for Error {
    fn from(e: nvfp4_dsl::Error) -> Error {
        Error::Device(e)
    }
}
