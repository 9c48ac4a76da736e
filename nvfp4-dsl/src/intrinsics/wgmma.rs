//! Hopper warpgroup MMA (`wgmma`) and register reallocation
//! (`setmaxnreg`), sm_90a.
//!
//! An MMA's accumulator `acc` is a local `let mut acc = [0.0f32; N];`
//! passed as `&mut acc`, or, inside a device function, its
//! `acc: &mut [f32; N]` parameter passed on as `acc` (the caller's array:
//! the MMA writes its registers in place).

use super::device_only;
use crate::types::{WgmmaDesc, bf16x2, f16x2};

/// Makes the warp's earlier register writes (accumulators, A fragments)
/// and shared-memory accesses visible to the warpgroup MMAs that follow:
/// needed before the first `wgmma_*` and whenever their registers were
/// written since the last one. The whole warpgroup executes it. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.fence.sync.aligned;`
#[inline(always)]
pub fn wgmma_fence() {
    device_only("wgmma_fence")
}

/// Closes the warp's `wgmma_*` issued since the last commit into one group,
/// for [`wgmma_wait_group`]. The whole warpgroup executes it. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.commit_group.sync.aligned;`
#[inline(always)]
pub fn wgmma_commit_group() {
    device_only("wgmma_commit_group")
}

/// Waits until at most `pending` (a constant, 0 to 7) of the warp's
/// committed wgmma groups are unfinished. Until then the accumulators and
/// register A fragments of the unfinished ones must not be read or
/// written, and the shared memory they read must not be overwritten.
/// sm_90a.
///
/// PTX (ISA 8.0): `wgmma.wait_group.sync.aligned pending;`
#[inline(always)]
pub fn wgmma_wait_group(pending: u32) {
    let _ = pending;
    device_only("wgmma_wait_group")
}

/// Warpgroup MMA `acc (+)= A x B` with f32 accumulators: A 64 x 16 f16 from
/// registers (`a`: warp `w` of the warpgroup holds rows `16w..16w+16`; with
/// `g = lane / 4`, `t = lane % 4`: `a[0]` row g, columns 2t, 2t+1; `a[1]`
/// row g+8, the same columns; `a[2]`, `a[3]` the same rows at columns
/// 2t+8, 2t+9), B 16 x n f16 from shared memory through `b` (K-major: each
/// of the n columns holds its 16 K values contiguously). `acc` holds
/// `N = n / 2` values per thread (n a multiple of 8 up to 256): for each
/// 8-column chunk i, `acc[4i]`, `acc[4i+1]` are row g, columns 8i+2t and
/// 8i+2t+1, `acc[4i+2]`, `acc[4i+3]` row g+8. `accumulate` false
/// overwrites `acc`. Asynchronous: issue after [`wgmma_fence`], commit with
/// [`wgmma_commit_group`], and touch `acc` and `a` only after the
/// [`wgmma_wait_group`] that covers it. The whole warpgroup executes it.
/// sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.f16.f16 {acc..}, {a..}, b, p, 1, 1, 0;`
#[inline(always)]
pub fn wgmma_f16_rs<const N: usize>(acc: &mut [f32; N], a: [f16x2; 4], b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_f16_rs")
}

/// [`wgmma_f16_rs`] with bf16 inputs. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.bf16.bf16 {acc..}, {a..}, b, p, 1, 1, 0;`
#[inline(always)]
pub fn wgmma_bf16_rs<const N: usize>(acc: &mut [f32; N], a: [bf16x2; 4], b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_bf16_rs")
}

/// [`wgmma_f16_rs`] with A (64 x 16, K-major) from shared memory through
/// the descriptor `a` as well. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.f16.f16 {acc..}, a, b, p, 1, 1, 0, 0;`
#[inline(always)]
pub fn wgmma_f16_ss<const N: usize>(acc: &mut [f32; N], a: WgmmaDesc, b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_f16_ss")
}

/// [`wgmma_f16_ss`] with bf16 inputs. sm_90a.
///
/// PTX (ISA 8.0): `wgmma.mma_async.sync.aligned.m64n{2N}k16.f32.bf16.bf16 {acc..}, a, b, p, 1, 1, 0, 0;`
#[inline(always)]
pub fn wgmma_bf16_ss<const N: usize>(acc: &mut [f32; N], a: WgmmaDesc, b: WgmmaDesc, accumulate: bool) {
    let _ = (acc, a, b, accumulate);
    device_only("wgmma_bf16_ss")
}

/// Raises the warpgroup's per-thread register limit to `registers` (a
/// constant multiple of 8, 24 to 256), taking them from the block's pool
/// that other warpgroups released with [`setmaxnreg_dec`]. The whole
/// warpgroup executes it. The kernel needs `launch_bounds` with both
/// numbers (threads, blocks per multiprocessor): each thread then starts
/// with all the registers they leave it (168 for 384 threads and one
/// block), and without them ptxas drops the instruction (a compile
/// error here). sm_90a.
///
/// It waits until the pool holds the registers, so a wait in any warp of
/// the releasing warpgroup before its `setmaxnreg_dec` (a
/// `grid_dependency_wait`, an mbarrier) holds this warpgroup too: release
/// first, then wait (docs/perf.md entry 22 measured it on the H100). An
/// increase that can never be served (the releasing warps wait for this
/// warpgroup, or the increases ask for more than the decreases give) hangs
/// on the GPU; the emulator reports it as a deadlock at this call.
///
/// PTX (ISA 8.0): `setmaxnreg.inc.sync.aligned.u32 registers;`
#[inline(always)]
pub fn setmaxnreg_inc(registers: u32) {
    let _ = registers;
    device_only("setmaxnreg_inc")
}

/// Lowers the warpgroup's per-thread register limit to `registers` (a
/// constant multiple of 8, 24 to 256), returning the rest to the block's
/// pool. sm_90a.
///
/// PTX (ISA 8.0): `setmaxnreg.dec.sync.aligned.u32 registers;`
#[inline(always)]
pub fn setmaxnreg_dec(registers: u32) {
    let _ = registers;
    device_only("setmaxnreg_dec")
}
