//! Reading NVFP4 checkpoints: safetensors files, memory-mapped, with
//! tensors checked by name, dtype and shape before use.
//!
//! NVIDIA ModelOpt stores an NVFP4 linear layer `prefix` as
//! `prefix.weight` (u8 `[N, K/2]`, two e2m1 codes per byte, the even K
//! index in the low nibble), `prefix.weight_scale` (f8 e4m3 `[N, K/16]`,
//! the plain layout), `prefix.weight_scale_2` (f32 scalar, the weight's
//! global scale) and `prefix.input_scale` (f32 scalar, the calibrated
//! activation scale); [`crate::linear::Linear::load`] reads them.

use crate::Error;
use safetensors::{Dtype, SafeTensors};
use std::path::{Path, PathBuf};

/// An open safetensors file, memory-mapped: tensors are read from the
/// mapping (the page cache) when they are asked for.
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    map: memmap2::Mmap,
}

/// The shape a tensor must have: exact extents, or a scalar (shape `[]`,
/// or `[1]` as some exporters write them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape<'a> {
    /// Exactly these extents.
    Exact(&'a [usize]),
    /// One value.
    Scalar,
}

impl Checkpoint {
    /// Opens and maps `path` and checks its header: `Err` (naming the file)
    /// when it cannot be read or is not a complete safetensors file (a
    /// truncated download, say).
    pub fn open(path: impl AsRef<Path>) -> Result<Checkpoint, Error> {
        let path = path.as_ref().to_path_buf();
        let fail = |what: String| Error::Checkpoint(format!("{}: {what}", path.display()));
        let file = std::fs::File::open(&path).map_err(|e| fail(format!("cannot open it: {e}")))?;
        // SAFETY: the mapping is read-only; the file must not be truncated or
        // rewritten while the checkpoint is open (as with any memory-mapped
        // reader), which callers of a model loader do not do.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| fail(format!("cannot map it: {e}")))?;
        let checkpoint = Checkpoint { path, map };
        checkpoint.tensors()?;
        Ok(checkpoint)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn tensors(&self) -> Result<SafeTensors<'_>, Error> {
        SafeTensors::deserialize(&self.map).map_err(|e| {
            Error::Checkpoint(format!(
                "{}: not a complete safetensors file (truncated or corrupt?): {e}",
                self.path.display()
            ))
        })
    }

    /// The names of all tensors, sorted.
    pub fn names(&self) -> Result<Vec<String>, Error> {
        let mut names: Vec<String> = self.tensors()?.names().into_iter().map(String::from).collect();
        names.sort();
        Ok(names)
    }

    /// The bytes of tensor `name` after checking its dtype and shape; the
    /// error says what was found and what was expected.
    pub fn tensor(&self, name: &str, dtype: Dtype, shape: Shape<'_>) -> Result<&[u8], Error> {
        let tensors = self.tensors()?;
        let fail = |what: String| Error::Checkpoint(format!("{}: tensor `{name}` {what}", self.path.display()));
        let view = tensors.tensor(name).map_err(|_| fail("is missing".into()))?;
        if view.dtype() != dtype {
            return Err(fail(format!("is {:?}, expected {dtype:?}", view.dtype())));
        }
        let fits = match shape {
            Shape::Exact(extents) => view.shape() == extents,
            Shape::Scalar => view.shape().iter().product::<usize>() == 1 && view.shape().len() <= 1,
        };
        if !fits {
            let want = match shape {
                Shape::Exact(extents) => format!("{extents:?}"),
                Shape::Scalar => "a scalar ([] or [1])".into(),
            };
            return Err(fail(format!("has shape {:?}, expected {want}", view.shape())));
        }
        Ok(view.data())
    }

    /// The extents of tensor `name`, to learn a layer's size from its
    /// weight.
    pub fn shape(&self, name: &str) -> Result<Vec<usize>, Error> {
        let tensors = self.tensors()?;
        let view = tensors
            .tensor(name)
            .map_err(|_| Error::Checkpoint(format!("{}: tensor `{name}` is missing", self.path.display())))?;
        Ok(view.shape().to_vec())
    }

    /// A positive, finite f32 scalar tensor.
    pub fn scale(&self, name: &str) -> Result<f32, Error> {
        let bytes = self.tensor(name, Dtype::F32, Shape::Scalar)?;
        let value = f32::from_le_bytes(bytes.try_into().map_err(|_| {
            Error::Checkpoint(format!(
                "{}: tensor `{name}` does not hold 4 bytes",
                self.path.display()
            ))
        })?);
        if !(value.is_finite() && value > 0.0) {
            return Err(Error::Checkpoint(format!(
                "{}: scale `{name}` is {value}; it must be positive and finite",
                self.path.display()
            )));
        }
        Ok(value)
    }
}
