//! Blackwell tensor memory and the block-scaled MMA (`tcgen05`, sm_100a).

use super::device_only;
use crate::types::{DeviceIndex, InstrDesc, SharedMemory, SmemDesc};

/// Allocates `columns` (a constant power of two, 32..=512) of tensor memory
/// and writes its address to `slot[index]`; the whole warp calls it.
/// sm_100a.
///
/// PTX: `tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], columns;`
#[inline(always)]
pub fn tcgen05_alloc<M: SharedMemory<Elem = u32>, I: DeviceIndex>(slot: &M, index: I, columns: u32) {
    let _ = (slot, index, columns);
    device_only("tcgen05_alloc")
}

/// Frees tensor memory allocated with [`tcgen05_alloc`] (same column
/// count); the whole warp calls it. sm_100a.
///
/// PTX: `tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, columns;`
#[inline(always)]
pub fn tcgen05_dealloc(tmem_address: u32, columns: u32) {
    let _ = (tmem_address, columns);
    device_only("tcgen05_dealloc")
}

/// Gives up the right to allocate more tensor memory in this block. sm_100a.
///
/// PTX: `tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;`
#[inline(always)]
pub fn tcgen05_relinquish_alloc_permit() {
    device_only("tcgen05_relinquish_alloc_permit")
}

/// Copies 32 rows x 16 bytes of shared memory (described by `src`) into 4
/// columns at `tmem_address` of each of the four 32-lane quarters of tensor
/// memory: one 128-row x 4-scale block of the blocked scale layout. Issued
/// by one thread. sm_100a.
///
/// PTX: `tcgen05.cp.cta_group::1.32x128b.warpx4 [taddr], src;`
#[inline(always)]
pub fn tcgen05_cp_32x128b_warpx4(tmem_address: u32, src: SmemDesc) {
    let _ = (tmem_address, src);
    device_only("tcgen05_cp_32x128b_warpx4")
}

/// Block-scaled NVFP4 MMA, `D (+)= A x B^T`: A (M x 64) and B (N x 64) E2M1
/// from shared memory, 4 UE4M3 scales per row of each (one per 16 values)
/// from tensor memory, f32 D in tensor memory; `accumulate` false
/// overwrites D. Issued by one thread. sm_100a.
///
/// PTX (ISA 8.7): `tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [d], a, b, idesc, [sfa], [sfb], p;`
#[inline(always)]
pub fn tcgen05_mma_mxf4nvf4(
    d_tmem: u32,
    a: SmemDesc,
    b: SmemDesc,
    idesc: InstrDesc,
    sfa_tmem: u32,
    sfb_tmem: u32,
    accumulate: bool,
) {
    let _ = (d_tmem, a, b, idesc, sfa_tmem, sfb_tmem, accumulate);
    device_only("tcgen05_mma_mxf4nvf4")
}

/// Arrives once on `bars[index]` when all tcgen05 operations this thread
/// issued before have completed. sm_100a.
///
/// PTX: `tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];`
#[inline(always)]
pub fn tcgen05_commit<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I) {
    let _ = (bars, index);
    device_only("tcgen05_commit")
}

/// Loads `N` consecutive 32-bit columns of one tensor-memory lane per
/// thread: thread `t` of the warp reads lane `lane(tmem_address) + t`
/// (a warp may access only its quarter `32 * (warp % 4)..`). Read the
/// values after [`tcgen05_wait_ld`]. `N` is 1, 2, 4, ... 128. sm_100a.
///
/// PTX: `tcgen05.ld.sync.aligned.32x32b.xN.b32 {..}, [taddr];`
#[inline(always)]
pub fn tcgen05_ld_32x32b<const N: usize>(tmem_address: u32) -> [u32; N] {
    let _ = tmem_address;
    device_only("tcgen05_ld_32x32b")
}

/// Waits for this thread's tensor-memory loads. sm_100a.
///
/// PTX: `tcgen05.wait::ld.sync.aligned;`
#[inline(always)]
pub fn tcgen05_wait_ld() {
    device_only("tcgen05_wait_ld")
}

/// Orders earlier tcgen05 operations before a following thread
/// synchronisation. sm_100a.
///
/// PTX: `tcgen05.fence::before_thread_sync;`
#[inline(always)]
pub fn tcgen05_fence_before_thread_sync() {
    device_only("tcgen05_fence_before_thread_sync")
}

/// Orders later tcgen05 operations after a preceding thread
/// synchronisation. sm_100a.
///
/// PTX: `tcgen05.fence::after_thread_sync;`
#[inline(always)]
pub fn tcgen05_fence_after_thread_sync() {
    device_only("tcgen05_fence_after_thread_sync")
}
