//! The emulator's error type.

use super::source::Place;
use crate::target::SourceFn;
use std::fmt;

/// Why the emulator refused a module or stopped a launch.
///
/// Parse errors carry the PTX line; launch errors name the kernel entry,
/// the block and thread that failed, and the PTX line (1-based in the
/// module text) with the instruction's text, after the Rust statement the
/// PTX's comments name (and the device functions' inlined there), as
/// `file:line` where the kernel's launcher knew its files. `Display`
/// prints all of it:
///
/// ```text
/// kernel `saxpy`, block (3,0,0), thread (17,0,0), at src/saxpy.rs:9: `y[i] = a * x[i] + y[i];`, line 42 `ld.global.f32 %f2, [%rd9];`: global load of 4 bytes at 0x7f0000001100 is out of bounds ...
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmuError {
    // Boxed, as `source`: errors stay small (clippy::result_large_err).
    pub(crate) kernel: Option<Box<str>>,
    pub(crate) block: Option<(u32, u32, u32)>,
    pub(crate) thread: Option<(u32, u32, u32)>,
    pub(crate) line: Option<u32>,
    pub(crate) text: Option<Box<str>>,
    pub(crate) source: Box<[Place]>,
    pub(crate) message: String,
    /// The statements of another instruction that `message` names (as
    /// `Place`'s `Display` writes them), resolved with `source`.
    pub(crate) cited: Option<Box<Cited>>,
}

/// The statements an error's message cites (boxed: errors stay small).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cited(pub(crate) Vec<Place>);

impl EmuError {
    pub(crate) fn new(message: impl Into<String>) -> EmuError {
        EmuError {
            kernel: None,
            block: None,
            thread: None,
            line: None,
            text: None,
            source: Box::new([]),
            message: message.into(),
            cited: None,
        }
    }

    pub(crate) fn at_line(line: u32, text: &str, message: impl Into<String>) -> EmuError {
        EmuError {
            line: Some(line),
            text: Some(text.trim().into()),
            ..EmuError::new(message)
        }
    }

    pub(crate) fn in_kernel(mut self, kernel: &str) -> EmuError {
        self.kernel = Some(kernel.into());
        self
    }

    /// Names the Rust statements of the failing instruction.
    pub(crate) fn with_source(mut self, places: &[Place]) -> EmuError {
        self.source = places.into();
        self
    }

    /// Names the files and lines of the Rust statements (the kernel's
    /// launcher knows where its functions are).
    pub(crate) fn resolve(mut self, sources: &[SourceFn]) -> EmuError {
        for p in &mut self.source {
            p.resolve(sources);
        }
        for p in self.cited.iter_mut().flat_map(|c| &mut c.0) {
            let before = p.to_string();
            p.resolve(sources);
            self.message = self.message.replace(&before, &p.to_string());
        }
        self
    }

    /// The Rust statement of the failing instruction, then those of the
    /// device functions inlined there (outermost first); empty where the
    /// PTX has no statement comments.
    pub fn source(&self) -> &[Place] {
        &self.source
    }

    /// What went wrong, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The kernel entry, for launch errors (and parse errors inside one).
    pub fn kernel(&self) -> Option<&str> {
        self.kernel.as_deref()
    }

    /// The block index `(x, y, z)` of the failing thread.
    pub fn block(&self) -> Option<(u32, u32, u32)> {
        self.block
    }

    /// The thread index `(x, y, z)` within its block.
    pub fn thread(&self) -> Option<(u32, u32, u32)> {
        self.thread
    }

    /// The 1-based line in the PTX text.
    pub fn line(&self) -> Option<u32> {
        self.line
    }

    /// The source text of the failing instruction or statement.
    pub fn instruction(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(k) = &self.kernel {
            parts.push(format!("kernel `{k}`"));
        }
        if let Some((x, y, z)) = self.block {
            parts.push(format!("block ({x},{y},{z})"));
        }
        if let Some((x, y, z)) = self.thread {
            parts.push(format!("thread ({x},{y},{z})"));
        }
        if let Some((first, inlined)) = self.source.split_first() {
            parts.push(format!("at {first}"));
            parts.extend(inlined.iter().map(Place::to_string));
        }
        match (self.line, &self.text) {
            (Some(l), Some(t)) => parts.push(format!("line {l} `{t}`")),
            (Some(l), None) => parts.push(format!("line {l}")),
            _ => {}
        }
        if parts.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", parts.join(", "), self.message)
        }
    }
}

impl std::error::Error for EmuError {}
