//! Where things live in the emulator's address spaces: shared memory and
//! the parameter buffer in the generic address space, the `.const`
//! variables in the const space, the block that a
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

/// The const-space address of table `i`: each table starts its own 2^32
/// bytes, so an index past a table's end stays attributable to it (and is
/// an error naming it) instead of reading the next one, as hardware would.
pub(crate) fn const_address(i: usize) -> u64 {
    (i as u64 + 1) << 32
}

/// The table a const-space address belongs to, and its offset in it.
pub(crate) fn const_table(addr: u64) -> Option<(usize, u64)> {
    let i = (addr >> 32).checked_sub(1)?;
    Some((i as usize, addr & 0xFFFF_FFFF))
}

/// Shared::cluster addresses hold the rank of the block they name, plus
/// one, from this bit up (0: the executing block); the bits below are the
/// shared::cta address in that block.
pub(crate) const CLUSTER_SHIFT: u32 = 24;

/// The byte that fills the destination of an asynchronous copy until it
/// completes, and a block's shared memory at its start (all ones: NaN in
/// every float format).
pub(crate) const POISON: u8 = 0xFF;
