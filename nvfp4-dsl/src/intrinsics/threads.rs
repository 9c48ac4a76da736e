//! Thread and block indices, the target test, programmatic launch,
//! barriers, clusters, warp shuffles, votes and reductions.

use super::device_only;
use crate::types::{Shuffle, WarpReduce};

macro_rules! special_register {
    ($($(#[$doc:meta])* $name:ident => $reg:literal;)*) => {$(
        $(#[$doc])*
        ///
        #[doc = concat!("PTX: `mov.u32 d, ", $reg, ";`")]
        #[inline(always)]
        pub fn $name() -> u32 {
            device_only(stringify!($name))
        }
    )*};
}

special_register! {
    /// Index of the thread in its block, x.
    thread_idx_x => "%tid.x";
    /// Index of the thread in its block, y.
    thread_idx_y => "%tid.y";
    /// Index of the thread in its block, z.
    thread_idx_z => "%tid.z";
    /// Index of the block in the grid, x.
    block_idx_x => "%ctaid.x";
    /// Index of the block in the grid, y.
    block_idx_y => "%ctaid.y";
    /// Index of the block in the grid, z.
    block_idx_z => "%ctaid.z";
    /// Threads per block, x.
    block_dim_x => "%ntid.x";
    /// Threads per block, y.
    block_dim_y => "%ntid.y";
    /// Threads per block, z.
    block_dim_z => "%ntid.z";
    /// Blocks per grid, x.
    grid_dim_x => "%nctaid.x";
    /// Blocks per grid, y.
    grid_dim_y => "%nctaid.y";
    /// Blocks per grid, z.
    grid_dim_z => "%nctaid.z";
    /// Lane of the thread in its warp, `0..32`.
    lane_id => "%laneid";
}

/// The GPU's global timer in nanoseconds, the same clock on every
/// multiprocessor (its resolution is a microsecond or finer): for
/// timelines of a launch's blocks. The emulator's timer counts the block's
/// warp instructions instead.
///
/// PTX: `mov.u64 d, %globaltimer;`
#[inline(always)]
pub fn global_timer() -> u64 {
    device_only("global_timer")
}

/// Whether the PTX being generated has `target`'s features
/// ([`Target::has`](crate::Target::has): `target` itself or a newer plain
/// target; `Target::Sm90a` and `Target::Sm100a` only themselves): a
/// constant, so `if target_at_least(Target::Sm100a) { .. } else { .. }`
/// keeps only one branch in each target's PTX (like `#if __CUDA_ARCH__`).
///
/// PTX: none (folded at compile time).
#[inline(always)]
pub fn target_at_least(target: crate::Target) -> bool {
    let _ = target;
    device_only("target_at_least")
}

/// Lets the next kernel in the stream start launching (programmatic
/// dependent launch): its blocks may be scheduled once every block of this
/// kernel has called this or exited. Needs sm_90 or newer.
///
/// PTX: `griddepcontrol.launch_dependents;`
#[inline(always)]
pub fn launch_dependents() {
    device_only("launch_dependents")
}

/// Waits until the previous kernel in the stream has finished and its
/// memory is visible. A kernel that calls it is launched with programmatic
/// stream serialization (it may start while the previous kernel finishes),
/// so it must call it before reading anything the previous kernel may
/// write, and before writing anything that kernel reads. Without an
/// overlapping launch it returns at once. Needs sm_90 or newer. The
/// emulator reports a thread's global access, before its call, of bytes
/// the previous kernel read or wrote (one of the two a write).
///
/// PTX: `griddepcontrol.wait;`
#[inline(always)]
pub fn grid_dependency_wait() {
    device_only("grid_dependency_wait")
}

/// Barrier for all threads of the block; also orders their shared-memory
/// accesses. Every thread of the block must reach it. (Barrier 0; see
/// [`named_barrier_sync`] for the others.)
///
/// PTX: `bar.sync 0;`
#[inline(always)]
pub fn sync_threads() {
    device_only("sync_threads")
}

/// Barrier for the 32 threads of the warp.
///
/// PTX: `bar.warp.sync -1;`
#[inline(always)]
pub fn sync_warp() {
    device_only("sync_warp")
}

/// The `value` of lane `lane_id() + delta` (own value past lane 31). All 32
/// lanes must call it. A 64-bit `value` (`u64`, `i64`, `f64`) moves as its
/// two 32-bit halves, as CUDA's `__shfl_down_sync` moves a `double`.
///
/// PTX: `shfl.sync.down.b32 d, value, delta, 0x1f, -1;` (64-bit: `mov.b64
/// {lo, hi}, value;`, one `shfl` of each half, `mov.b64 d, {lo', hi'};`)
#[inline(always)]
pub fn shfl_down<T: Shuffle>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    device_only("shfl_down")
}

/// The `value` of lane `lane_id() ^ lane_mask`. All 32 lanes must call it.
/// A 64-bit `value` moves as its two halves (see [`shfl_down`]).
///
/// PTX: `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, -1;`
#[inline(always)]
pub fn shfl_xor<T: Shuffle>(value: T, lane_mask: u32) -> T {
    let _ = (value, lane_mask);
    device_only("shfl_xor")
}

/// The `value` of lane `src_lane`. All 32 lanes must call it. A 64-bit
/// `value` moves as its two halves (see [`shfl_down`]).
///
/// PTX: `shfl.sync.idx.b32 d, value, src_lane, 0x1f, -1;`
#[inline(always)]
pub fn shfl_idx<T: Shuffle>(value: T, src_lane: u32) -> T {
    let _ = (value, src_lane);
    device_only("shfl_idx")
}

/// [`shfl_down`] among the lanes in `mask`; every lane in `mask` must call
/// it with the same `mask`.
///
/// PTX: `shfl.sync.down.b32 d, value, delta, 0x1f, mask;`
#[inline(always)]
pub fn shfl_down_sync<T: Shuffle>(mask: u32, value: T, delta: u32) -> T {
    let _ = (mask, value, delta);
    device_only("shfl_down_sync")
}

/// [`shfl_xor`] among the lanes in `mask`.
///
/// PTX: `shfl.sync.bfly.b32 d, value, lane_mask, 0x1f, mask;`
#[inline(always)]
pub fn shfl_xor_sync<T: Shuffle>(mask: u32, value: T, lane_mask: u32) -> T {
    let _ = (mask, value, lane_mask);
    device_only("shfl_xor_sync")
}

/// [`shfl_idx`] among the lanes in `mask`.
///
/// PTX: `shfl.sync.idx.b32 d, value, src_lane, 0x1f, mask;`
#[inline(always)]
pub fn shfl_idx_sync<T: Shuffle>(mask: u32, value: T, src_lane: u32) -> T {
    let _ = (mask, value, src_lane);
    device_only("shfl_idx_sync")
}

/// The sum of `value` over the 32 lanes, in every lane (butterfly order:
/// lane pairs 16 apart first, then 8, 4, 2, 1).
///
/// PTX: five `shfl.sync.bfly.b32` (16, 8, 4, 2, 1), each followed by
/// `add.rn.f32` (or `add.u32`/`add.s32`; a 64-bit value: two shuffles of
/// its halves and `add.rn.f64`, `add.u64`, `add.s64`).
#[inline(always)]
pub fn warp_reduce_sum<T: WarpReduce>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_sum")
}

/// The largest `value` of the 32 lanes, in every lane (the butterfly of
/// [`warp_reduce_sum`]). On `f32` as Rust's `f32::max`: NaN is ignored, so
/// the result is NaN only when every lane holds NaN (then the canonical
/// NaN, `0x7fffffff`); `-0.0` counts as below `+0.0`. On `f64` as
/// `f64::max` in a kernel (`max.f64`).
///
/// PTX: five `shfl.sync.bfly.b32` (16, 8, 4, 2, 1), each followed by
/// `max.f32` (or `max.u32`/`max.s32`; 64-bit: `max.f64`/`max.u64`/`max.s64`).
#[inline(always)]
pub fn warp_reduce_max<T: WarpReduce>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_max")
}

/// The smallest `value` of the 32 lanes, in every lane (the butterfly of
/// [`warp_reduce_sum`]). On `f32` as Rust's `f32::min`: NaN is ignored, so
/// the result is NaN only when every lane holds NaN (then the canonical
/// NaN, `0x7fffffff`); `-0.0` counts as below `+0.0`. On `f64` as
/// `f64::min` in a kernel (`min.f64`).
///
/// PTX: five `shfl.sync.bfly.b32` (16, 8, 4, 2, 1), each followed by
/// `min.f32` (or `min.u32`/`min.s32`; 64-bit: `min.f64`/`min.u64`/`min.s64`).
#[inline(always)]
pub fn warp_reduce_min<T: WarpReduce>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_min")
}

/// `true` in exactly one lane of the warp (the leader the hardware elects),
/// `false` in the others; all 32 lanes must call it. Needs sm_90 or newer.
///
/// PTX (ISA 8.0): `elect.sync _|p, -1;`
#[inline(always)]
pub fn elect_sync() -> bool {
    device_only("elect_sync")
}

/// Waits at barrier `id` (1 to 15; 0 is [`sync_threads`]'s) until
/// `threads` threads (a multiple of 32, whole warps) have arrived, with
/// [`named_barrier_sync`] or [`named_barrier_arrive`]; orders shared-memory
/// accesses like `sync_threads`. Lets a subset of the block (the consumer
/// warpgroups of a warp-specialised kernel, say) synchronise.
///
/// PTX: `bar.sync id, threads;`
#[inline(always)]
pub fn named_barrier_sync(id: u32, threads: u32) {
    let _ = (id, threads);
    device_only("named_barrier_sync")
}

/// Arrives at barrier `id` without waiting (a producer signalling
/// consumers that wait with [`named_barrier_sync`] on the same count).
///
/// PTX: `bar.arrive id, threads;`
#[inline(always)]
pub fn named_barrier_arrive(id: u32, threads: u32) {
    let _ = (id, threads);
    device_only("named_barrier_arrive")
}

/// The block's rank in its thread-block cluster, `0..cluster_size()`
/// (0 when the launch has no clusters). Needs sm_90 or newer.
///
/// PTX: `mov.u32 d, %cluster_ctarank;`
#[inline(always)]
pub fn cluster_cta_rank() -> u32 {
    device_only("cluster_cta_rank")
}

/// Blocks in the cluster (1 when the launch has no clusters; set with
/// [`LaunchConfig::cluster`](crate::LaunchConfig::cluster)). Needs sm_90 or
/// newer.
///
/// PTX: `mov.u32 d, %cluster_nctarank;`
#[inline(always)]
pub fn cluster_size() -> u32 {
    device_only("cluster_size")
}

/// Arrives at the cluster barrier, releasing this thread's earlier memory
/// accesses to the cluster; pair with [`cluster_wait`]. Every thread of
/// every block of the cluster arrives; the warp must be converged.
///
/// PTX (ISA 8.0): `barrier.cluster.arrive.release.aligned;`
#[inline(always)]
pub fn cluster_arrive() {
    device_only("cluster_arrive")
}

/// Arrives at the cluster barrier without ordering memory: for a barrier
/// that only keeps blocks alive (a block whose shared memory the others
/// read must not exit before they are done), where every access it must
/// cover has completed (its value used) before the arrive. It releases
/// nothing: a [`cluster_wait`] after it makes no earlier write visible
/// (the emulator reports the race), unless a
/// [`fence_acq_rel_gpu`](super::fence_acq_rel_gpu) before it released
/// what came before that fence. Pair with [`cluster_wait`]; the warp must
/// be converged.
///
/// PTX (ISA 8.0): `barrier.cluster.arrive.relaxed.aligned;`
#[inline(always)]
pub fn cluster_arrive_relaxed() {
    device_only("cluster_arrive_relaxed")
}

/// Waits until every thread of the cluster has arrived at the cluster
/// barrier ([`cluster_arrive`]); their released accesses are then visible.
///
/// PTX (ISA 8.0): `barrier.cluster.wait.acquire.aligned;`
#[inline(always)]
pub fn cluster_wait() {
    device_only("cluster_wait")
}

/// [`cluster_arrive`] then [`cluster_wait`]: a barrier for every thread of
/// every block of the cluster, which also makes their shared-memory writes
/// visible to the cluster's other blocks ([`load_cluster`](super::load_cluster)).
///
/// PTX (ISA 8.0): `barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;`
#[inline(always)]
pub fn cluster_sync() {
    device_only("cluster_sync")
}
