//! Memory: loads and stores with cache hints, shared memory, mbarriers,
//! fences and the asynchronous bulk and tensor copies.

use super::device_only;
use crate::types::{
    Cache, DeviceIndex, Element, Memory, MemoryMut, SharedArray, SharedElement, SharedMemory, SharedSlice, TensorMap,
    u32x4,
};

/// Loads `src[index]` with a cache hint (`src[index]` is `Cache::Default`).
///
/// PTX: `ld.global{.cg|.cs|.nc|.nc.L1::no_allocate}.T d, [addr];` or
/// `ld.shared.T` (shared memory takes only `Cache::Default`).
#[inline(always)]
pub fn load<M: Memory + ?Sized, I: DeviceIndex>(src: &M, index: I, hint: Cache) -> M::Elem {
    let _ = (src, index, hint);
    device_only("load")
}

/// Stores `value` to `dst[index]` with a cache hint (`Default`, `Global` or
/// `Streaming`).
///
/// PTX: `st.global{.cg|.cs}.T [addr], value;` or `st.shared.T`.
#[inline(always)]
pub fn store<M: MemoryMut + ?Sized, I: DeviceIndex>(dst: &mut M, index: I, value: M::Elem, hint: Cache) {
    let _ = (dst, index, value, hint);
    device_only("store")
}

/// Loads the 16 bytes that start at element `index` of `src` (whatever its
/// element type). The address must be 16-byte aligned.
///
/// PTX: `ld.global{hint}.v4.u32 {x, y, z, w}, [addr];` or `ld.shared.v4.u32`.
#[inline(always)]
pub fn load_v4<M: Memory + ?Sized, I: DeviceIndex>(src: &M, index: I, hint: Cache) -> u32x4 {
    let _ = (src, index, hint);
    device_only("load_v4")
}

/// Stores 16 bytes at element `index` of `dst`; the address must be 16-byte
/// aligned.
///
/// PTX: `st.global{hint}.v4.u32 [addr], {x, y, z, w};` or `st.shared.v4.u32`.
#[inline(always)]
pub fn store_v4<M: MemoryMut + ?Sized, I: DeviceIndex>(dst: &mut M, index: I, value: u32x4, hint: Cache) {
    let _ = (dst, index, value, hint);
    device_only("store_v4")
}

/// A static shared-memory array, one per call site and block (at most 48 KiB
/// of static shared memory per kernel). With a row type,
/// `shared_array::<[f32; 33], 32>()` is 2-D, 32 rows of 33, indexed
/// `tile[r][c]` (see [`SharedArray`]).
///
/// PTX: `.shared .align 16 .b8 <kernel>_smemN[N * size_of::<T>()];`
#[inline(always)]
pub fn shared_array<T: SharedElement, const N: usize>() -> &'static mut SharedArray<T, N> {
    device_only("shared_array")
}

/// The dynamic shared block (its size is the launch's `shared_bytes`, up to
/// 227 KiB on Hopper), seen as `T` elements starting `byte_offset` bytes in.
/// The block is 1024-byte aligned.
///
/// PTX: `.extern .shared .align 1024 .b8 <kernel>_dyn_smem[];`
#[inline(always)]
pub fn dynamic_shared<T: Element>(byte_offset: u32) -> &'static mut SharedSlice<T> {
    let _ = byte_offset;
    device_only("dynamic_shared")
}

/// The 32-bit shared-memory address of `mem[index]` (for descriptors and
/// tensor-memory slots).
///
/// PTX: `mov.u32 d, <array>;` plus the element's offset.
#[inline(always)]
pub fn shared_address<M: SharedMemory, I: DeviceIndex>(mem: &M, index: I) -> u32 {
    let _ = (mem, index);
    device_only("shared_address")
}

/// Initialises the mbarrier `bars[index]` to expect `count` arrivals per
/// phase. Needs sm_90 or newer.
///
/// PTX: `mbarrier.init.shared::cta.b64 [bar], count;`
#[inline(always)]
pub fn mbarrier_init<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, count: u32) {
    let _ = (bars, index, count);
    device_only("mbarrier_init")
}

/// Makes initialised mbarriers visible to the asynchronous units (call once
/// after the inits, before the barrier that publishes them). The emulator
/// reports a bulk copy or `tcgen05.commit` that completes on an mbarrier
/// whose init no such fence, ordered before the issue, published.
///
/// PTX (ISA 8.0): `fence.mbarrier_init.release.cluster;`
#[inline(always)]
pub fn fence_mbarrier_init() {
    device_only("fence_mbarrier_init")
}

/// Arrives once on `bars[index]` of block `cta_rank` of this thread's
/// cluster (that block's barrier: its threads waiting on it see this
/// thread's writes before the arrive, a release at cluster scope). That
/// block must have started, its barrier initialised (a cluster barrier,
/// as for [`store_cluster`]), and must not have exited.
///
/// PTX (ISA 8.0): `mapa.shared::cluster.u32 a, bar, rank; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [a];`
#[inline(always)]
pub fn mbarrier_arrive_cluster<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, cta_rank: u32) {
    let _ = (bars, index, cta_rank);
    device_only("mbarrier_arrive_cluster")
}

/// Arrives once on `bars[index]`.
///
/// PTX: `mbarrier.arrive.shared::cta.b64 _, [bar];`
#[inline(always)]
pub fn mbarrier_arrive<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I) {
    let _ = (bars, index);
    device_only("mbarrier_arrive")
}

/// Arrives once on `bars[index]` and adds `bytes` to the transaction count
/// the current phase waits for (the bulk copies that name the barrier
/// complete them).
///
/// PTX (ISA 8.0): `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes;`
#[inline(always)]
pub fn mbarrier_arrive_expect_tx<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, bytes: u32) {
    let _ = (bars, index, bytes);
    device_only("mbarrier_arrive_expect_tx")
}

/// Whether the phase of `bars[index]` with parity `parity` has completed
/// (waits a bounded time).
///
/// PTX: `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity;`
#[inline(always)]
pub fn mbarrier_try_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32) -> bool {
    let _ = (bars, index, parity);
    device_only("mbarrier_try_wait_parity")
}

/// Waits until the phase of `bars[index]` with parity `parity` has
/// completed. A fresh barrier is in phase 0, so waiting for parity 1
/// returns at once (the "previous" phase counts as complete).
///
/// PTX: a loop around `mbarrier.try_wait.parity.shared::cta.b64`.
#[inline(always)]
pub fn mbarrier_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32) {
    let _ = (bars, index, parity);
    device_only("mbarrier_wait_parity")
}

/// A memory fence with acquire and release semantics at GPU scope: orders
/// this thread's memory accesses before it against those after it, as seen
/// by any thread of the GPU that synchronises with this one.
///
/// PTX: `fence.acq_rel.gpu;`
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    device_only("fence_acq_rel_gpu")
}

/// Orders this thread's earlier shared-memory writes before later accesses
/// of the asynchronous proxy (bulk copies, tensor cores).
///
/// PTX (ISA 8.0): `fence.proxy.async.shared::cta;`
#[inline(always)]
pub fn fence_proxy_async_shared() {
    device_only("fence_proxy_async_shared")
}

/// Orders this thread's earlier global-memory writes before later accesses
/// of the asynchronous proxy (bulk copies), another block's included once
/// a release and an acquire order them after this fence: a thread that
/// stores what a bulk copy of another block reads executes it after its
/// stores, before the barrier and release that publish them
/// (`tests/src/flag_spin.rs`). The emulator checks such a copy's read
/// against the stores (the release and acquire) and this fence: a
/// missing one, or one after the release, is an error at the copy.
///
/// PTX (ISA 8.0): `fence.proxy.async.global;`
#[inline(always)]
pub fn fence_proxy_async_global() {
    device_only("fence_proxy_async_global")
}

/// Starts copying `bytes` (a multiple of 16; both addresses 16-byte aligned)
/// from `src[src_index..]` to `dst[dst_index..]`; the copy completes
/// `bytes` transactions on `bars[bar_index]`.
///
/// PTX (ISA 8.0): `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes, [bar];`
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cp_async_bulk_global_to_shared<
    D: SharedMemory,
    I: DeviceIndex,
    T: Element,
    J: DeviceIndex,
    B: SharedMemory<Elem = u64>,
    K: DeviceIndex,
>(
    dst: &D,
    dst_index: I,
    src: &[T],
    src_index: J,
    bytes: u32,
    bars: &B,
    bar_index: K,
) {
    let _ = (dst, dst_index, src, src_index, bytes, bars, bar_index);
    device_only("cp_async_bulk_global_to_shared")
}

/// Starts copying `bytes` (a multiple of 16; both addresses 16-byte aligned)
/// from shared memory `src[src_index..]` to global memory
/// `dst[dst_index..]` (a TMA store). It joins the thread's next bulk group
/// ([`cp_async_bulk_commit_group`]); until a [`cp_async_bulk_wait_group_read`]
/// (or [`cp_async_bulk_wait_group`]) covers that group, `src` may not be
/// written, and until a `cp_async_bulk_wait_group` covers it, `dst` may not
/// be read. Shared memory written by ordinary stores needs
/// [`fence_proxy_async_shared`] (after a barrier, if other threads wrote
/// it) before the copy reads it.
///
/// PTX (ISA 8.0): `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], bytes;`
#[inline(always)]
pub fn cp_async_bulk_shared_to_global<T: Element, I: DeviceIndex, S: SharedMemory, J: DeviceIndex>(
    dst: &mut [T],
    dst_index: I,
    src: &S,
    src_index: J,
    bytes: u32,
) {
    let _ = (dst, dst_index, src, src_index, bytes);
    device_only("cp_async_bulk_shared_to_global")
}

/// Starts copying `bytes` (a multiple of 16; both addresses 16-byte
/// aligned) from this block's shared memory `src[src_index..]` to
/// `dst[dst_index..]` of block `cta_rank` of the cluster (distributed
/// shared memory, one bulk copy where [`store_cluster`] pushes a value per
/// thread; `cta_rank` may be this block's own); the copy completes `bytes`
/// transactions on `bars[bar_index]` of that block, which its threads wait
/// on before they read `dst`. Until then
/// `src` may not be written and this block may not exit: the receiver
/// arriving at a cluster barrier after its wait, and this block waiting
/// on it before it exits, says the copy is done. That block must have
/// started (a cluster barrier, as for [`store_cluster`]) with its mbarrier
/// initialised ([`fence_mbarrier_init`] before
/// that barrier). Shared memory written by ordinary stores needs
/// [`fence_proxy_async_shared`] (after a barrier, if other threads wrote
/// it) before the copy reads it.
///
/// PTX (ISA 8.0): `mapa.shared::cluster.u32` of `dst` and of the mbarrier,
/// then `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], bytes, [bar];`
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cp_async_bulk_shared_to_cluster<
    D: SharedMemory,
    I: DeviceIndex,
    S: SharedMemory,
    J: DeviceIndex,
    B: SharedMemory<Elem = u64>,
    K: DeviceIndex,
>(
    dst: &D,
    dst_index: I,
    src: &S,
    src_index: J,
    bytes: u32,
    bars: &B,
    bar_index: K,
    cta_rank: u32,
) {
    let _ = (dst, dst_index, src, src_index, bytes, bars, bar_index, cta_rank);
    device_only("cp_async_bulk_shared_to_cluster")
}

/// Stores the `u32x4` `value` into `dst[index]` of block `cta_rank` of the
/// cluster (distributed shared memory, as [`store_cluster`])
/// asynchronously: the store completes its 16 bytes as transactions on
/// `bars[bar_index]` of that block, whose threads wait on it (a phase that
/// expects every such store's bytes: [`mbarrier_arrive_expect_tx`]) before
/// they read `dst`. No cluster barrier is needed after it: the receiver's
/// wait says the values arrived, and this block may exit before they do.
/// That block must have started (a cluster barrier, as for
/// [`store_cluster`]) with its mbarrier initialised
/// ([`fence_mbarrier_init`] before that barrier).
///
/// PTX (ISA 8.1): `mapa.shared::cluster.u32` of `dst` and of the mbarrier,
/// then `st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [dst], {..}, [bar];`
/// (other element types are a compile error: view the memory as `u32x4`)
#[inline(always)]
pub fn store_async_cluster<M: SharedMemory, I: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(
    dst: &M,
    index: I,
    value: M::Elem,
    bars: &B,
    bar_index: K,
    cta_rank: u32,
) {
    let _ = (dst, index, value, bars, bar_index, cta_rank);
    device_only("store_async_cluster")
}

/// Puts this thread's bulk copies to global memory that are not in a group
/// yet into a new group, the unit [`cp_async_bulk_wait_group`] waits for.
///
/// PTX (ISA 8.0): `cp.async.bulk.commit_group;`
#[inline(always)]
pub fn cp_async_bulk_commit_group() {
    device_only("cp_async_bulk_commit_group")
}

/// Waits until at most `pending` (a constant, at most 63) of this thread's
/// bulk groups are still in flight: the others have completed, their
/// writes to global memory done.
///
/// PTX (ISA 8.0): `cp.async.bulk.wait_group pending;`
#[inline(always)]
pub fn cp_async_bulk_wait_group(pending: u32) {
    let _ = pending;
    device_only("cp_async_bulk_wait_group")
}

/// Waits until at most `pending` (a constant, at most 63) of this thread's
/// bulk groups still read their shared sources: the others' sources may be
/// written again (their global writes may still be in flight).
///
/// PTX (ISA 8.0): `cp.async.bulk.wait_group.read pending;`
#[inline(always)]
pub fn cp_async_bulk_wait_group_read(pending: u32) {
    let _ = pending;
    device_only("cp_async_bulk_wait_group_read")
}

/// Starts copying the box of `map` at coordinates (`c0` innermost, `c1`)
/// to `dst[dst_index..]` (with the map's swizzle); the copy completes the
/// box's bytes on `bars[bar_index]`.
///
/// PTX (ISA 8.0): `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, {c0, c1}], [bar];`
#[inline(always)]
pub fn cp_async_bulk_tensor_2d_global_to_shared<
    D: SharedMemory,
    I: DeviceIndex,
    B: SharedMemory<Elem = u64>,
    K: DeviceIndex,
>(
    dst: &D,
    dst_index: I,
    map: TensorMap,
    c0: i32,
    c1: i32,
    bars: &B,
    bar_index: K,
) {
    let _ = (dst, dst_index, map, c0, c1, bars, bar_index);
    device_only("cp_async_bulk_tensor_2d_global_to_shared")
}

/// Reads `src[index]` of block `cta_rank`'s shared memory, a block of this
/// thread's cluster (distributed shared memory). That block must not have
/// exited: synchronise with [`cluster_sync`](super::cluster_sync) before it does.
///
/// PTX: `mapa.shared::cluster.u32 a, addr, rank; ld.shared::cluster.T d, [a];` (`.v4.u32` for `u32x4`)
#[inline(always)]
pub fn load_cluster<M: SharedMemory, I: DeviceIndex>(src: &M, index: I, cta_rank: u32) -> M::Elem {
    let _ = (src, index, cta_rank);
    device_only("load_cluster")
}

/// Writes `value` to `dst[index]` of block `cta_rank`'s shared memory, a
/// block of this thread's cluster (distributed shared memory): a push,
/// which costs the writer no round trip, where [`load_cluster`] pulls.
/// That block must have started (it arrived at a cluster barrier this
/// thread has since waited on: [`cluster_arrive_relaxed`](super::cluster_arrive_relaxed)
/// at its start and [`cluster_wait`](super::cluster_wait) before the first
/// push) and must not have exited; it reads the value after a cluster
/// barrier that this thread arrived at after the write
/// ([`cluster_sync`](super::cluster_sync)).
///
/// PTX: `mapa.shared::cluster.u32 a, addr, rank; st.shared::cluster.T [a], v;` (`.v4.u32` for `u32x4`)
#[inline(always)]
pub fn store_cluster<M: SharedMemory, I: DeviceIndex>(dst: &M, index: I, value: M::Elem, cta_rank: u32) {
    let _ = (dst, index, value, cta_rank);
    device_only("store_cluster")
}
