//! Where things live in the emulator's address spaces: shared memory and
//! the parameter buffer in the generic address space, the block that a
//! shared::cluster address names, and the bytes that memory in flight
//! holds.

/// The shared-window address of the first byte of shared memory (the first
/// KiB is reserved, as on sm_80 and later).
pub(crate) const SHARED_BASE: u32 = 0x400;
/// Generic addresses `[SHARED_WINDOW, SHARED_WINDOW + 2^32)` are shared
/// memory (`cvta.shared`, generic `ld`/`st`).
pub(crate) const SHARED_WINDOW: u64 = 0x7ff0_0000_0000;
/// Generic addresses `[PARAM_WINDOW, PARAM_WINDOW + 2^32)` are the running
/// kernel's parameter buffer (`cvta.param` of a parameter's address).
pub(crate) const PARAM_WINDOW: u64 = 0x7ffe_0000_0000;

/// Shared::cluster addresses hold the rank of the block they name, plus
/// one, from this bit up (0: the executing block); the bits below are the
/// shared::cta address in that block.
pub(crate) const CLUSTER_SHIFT: u32 = 24;

/// The byte that fills the destination of an asynchronous copy until it
/// completes (all ones: NaN in every float format).
pub(crate) const POISON: u8 = 0xFF;
