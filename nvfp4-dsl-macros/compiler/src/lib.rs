//! The kernel compiler of nvfp4-dsl: `#[kernel]` arguments and a Rust
//! function in, PTX per specialisation and target out. The proc macro
//! (`nvfp4-dsl-macros`) is a thin shell around [`compile`]; tests, the
//! compile-time bench and tools call it directly on `proc_macro2` tokens,
//! without rustc.
//!
//! One direction, one module per stage:
//! `attr` -> `parse` (with `generics`) -> `check` -> `lower` (with
//! `intrinsics`) -> `ir` -> `coalesce` -> `ptx`; `spec` evaluates the attribute's lists;
//! `expand` turns the result into the Rust tokens the macro emits;
//! `driver` runs them.
//!
//! [`Target`], [`ASSERTION_FAILED`] and [`INDEX_OUT_OF_BOUNDS`] need nothing of the rest: the
//! runtime (`nvfp4-dsl`) takes this crate with `default-features = false`
//! for them alone, so a user's build compiles syn only for the proc macro.

pub mod target;

pub use target::Target;

/// How the PTX comment on the `trap` of a kernel's assertion starts
/// (`trap; // assertion failed: assert!(i < n)`): the emulator reports what
/// follows, the assertion's source, when the trap executes.
pub const ASSERTION_FAILED: &str = "assertion failed: ";

/// How the PTX comment on the `trap` of a bounds check that only builds
/// with debug assertions make starts (a 2-D shared array's column, which
/// the emulator's whole-array check cannot see): the emulator reports
/// what follows.
pub const INDEX_OUT_OF_BOUNDS: &str = "index out of bounds: ";

/// How the PTX comment on the `trap` of a debug build's check of a
/// sub-slice's range (`&x[a..b]` inside `x`) starts: the emulator reports
/// what follows.
pub const SLICE_OUT_OF_RANGE: &str = "slice range out of bounds: ";

#[cfg(feature = "compiler")]
pub mod ast;
#[cfg(feature = "compiler")]
pub mod attr;
#[cfg(feature = "compiler")]
pub mod check;
#[cfg(feature = "compiler")]
pub mod coalesce;
#[cfg(feature = "compiler")]
mod devices;
#[cfg(feature = "compiler")]
mod driver;
#[cfg(feature = "compiler")]
pub mod expand;
#[cfg(feature = "compiler")]
pub mod generics;
#[cfg(feature = "compiler")]
pub mod intrinsics;
#[cfg(feature = "compiler")]
pub mod ir;
#[cfg(feature = "compiler")]
pub mod lower;
#[cfg(feature = "compiler")]
pub mod parse;
#[cfg(feature = "compiler")]
pub mod ptx;
#[cfg(feature = "compiler")]
mod spec;
#[cfg(feature = "compiler")]
pub mod typed;
#[cfg(feature = "compiler")]
pub mod types;

#[cfg(feature = "compiler")]
pub use devices::missing_devices;
#[cfg(feature = "compiler")]
pub use driver::{Compiled, Dump, Options, SourceFn, Stage, StructParam, Variant, compile, launcher_only};
