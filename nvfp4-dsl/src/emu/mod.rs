//! A PTX emulator: runs the PTX that `#[kernel]` emits on the CPU, so every
//! kernel can be tested without a GPU (and Blackwell kernels without a
//! Blackwell).
//!
//! ```
//! use nvfp4_dsl::emu::{Launch, Memory, Module, ParamValue};
//!
//! let ptx = r#"
//! .version 7.8
//! .target sm_90
//! .address_size 64
//! .visible .entry twice(.param .u64 p_out, .param .u32 p_n)
//! {
//!     .reg .pred %p<2>;
//!     .reg .b32 %r<4>;
//!     .reg .b64 %rd<4>;
//!     ld.param.u64 %rd1, [p_out];
//!     ld.param.u32 %r1, [p_n];
//!     mov.u32 %r2, %tid.x;
//!     setp.ge.u32 %p1, %r2, %r1;
//!     @%p1 ret;
//!     mul.wide.u32 %rd2, %r2, 4;
//!     add.s64 %rd3, %rd1, %rd2;
//!     shl.b32 %r3, %r2, 1;
//!     st.global.u32 [%rd3], %r3;
//!     ret;
//! }
//! "#;
//! let module = Module::parse(ptx)?;
//! let mut mem = Memory::new();
//! let out = mem.alloc(4 * 40, true);
//! let launch = Launch::new((1, 1, 1), (64, 1, 1), 0);
//! module.launch("twice", &launch, &[ParamValue::U64(out), ParamValue::U32(40)], &mut mem)?;
//! let bytes = mem.read(out + 4 * 7, 4)?;
//! assert_eq!(u32::from_le_bytes(bytes.try_into().unwrap()), 14);
//! # Ok::<(), nvfp4_dsl::emu::EmuError>(())
//! ```
//!
//! # Execution model
//!
//! A block's warps of 32 threads take turns. With thread-block clusters
//! ([`Launch::cluster`]) the turns go to every warp of every block of the
//! cluster, so that blocks can wait for each other. Clusters (blocks,
//! without clusters) run in parallel on [`Options::threads`] threads, each
//! taking the next cluster in grid order, under a schedule drawn from the
//! seed and the cluster's index, so that the result does not depend on
//! the number of threads; the first cluster in grid order that fails is
//! the error reported (global memory written by later clusters before it
//! stopped is left as it is). A kernel whose blocks may communicate
//! through global memory (atomics, `.volatile`, `.relaxed`,
//! `.acquire`/`.release` loads and stores outside shared memory, bulk
//! reductions) runs its clusters one after another, as if on a GPU of
//! one multiprocessor: in grid order under the sequential schedule, in an
//! order drawn from the seed under the others (a GPU starts blocks in any
//! order). Blocks that run in parallel share
//! global memory without synchronisation: a kernel whose blocks write
//! bytes that other blocks read or write with plain accesses (a data race
//! on a GPU too, not checked here) may see results that depend on the
//! timing. [`Options`] pick the
//! order: the adversarial schedule (the default, seeded) gives each turn
//! to a random warp for a random number of instructions (1 to 256), so
//! that warps interleave at every granularity and a kernel that is right
//! only in one order fails in some seeds; the priority schedule (PCT,
//! seeded) runs the highest-priority warp that can run until it blocks,
//! dropping the running warp below all others at random turns, so that a
//! warp or block runs as far ahead as the synchronisation lets it; the
//! sequential schedule rotates
//! over the warps in order, thousands of instructions a turn. The same
//! options give the same run. Two modes: the checked mode
//! ([`Options::default`], what `Device::emulator` uses) keeps the
//! threads' vector clocks for the race checks; the fast mode
//! ([`Options::fast`]) runs the sequential schedule without them, for
//! plain functional runs of kernels already checked. Every thread has its own program
//! counter; a warp executes the threads that are at the lowest program
//! counter together, so divergent branches reconverge where their paths
//! meet. Registers live per warp as
//! `[register][lane]` arrays and each decoded instruction runs over the
//! active lanes. The module is parsed and decoded once; launching never
//! looks at text.
//!
//! # The asynchronous model (sm_90 / sm_100a)
//!
//! Asynchronous work is checked when it is issued and completes later:
//! `cp.async.bulk` and `cp.async.bulk.tensor.2d` (both directions),
//! `tcgen05.cp`, `tcgen05.mma` and `tcgen05.commit`'s arrive are put in
//! flight in their block. The adversarial schedule completes each at a
//! legal point chosen by its seed: a random turn soon after its issue, or
//! the latest point (when nothing else can run, or at the
//! `cp.async.bulk.wait_group` that covers a copy to global memory);
//! `tcgen05` operations complete in issue order, as the tensor core runs
//! them. Until an operation completes, the shared bytes it writes hold
//! poison (`0xFF` bytes, NaN in every float format) and no other access
//! may touch them, the shared bytes it reads may not be written, and the
//! tensor-memory columns it writes may not be loaded, stored or freed;
//! a copy completes its transaction bytes on its mbarrier when it lands.
//! A block that ends with an operation in flight is an error. The
//! sequential schedule completes these operations when they are issued.
//! `tcgen05.ld` reads tensor memory at once but holds its registers until
//! `tcgen05.wait::ld`; `griddepcontrol` and the fences other than
//! `fence.proxy.async` and the `tcgen05` fences order nothing here.
//! `wgmma.mma_async` completes at the last legal moment (nothing could
//! observe an earlier one, given the checks below):
//! - `wgmma.mma_async` (`m64nNk16`, `.f32` += `.f16`/`.bf16`, A from
//!   registers or shared memory, B from shared memory through sm_90
//!   descriptors) is pending in its warp until `wgmma.commit_group` puts
//!   it into a group and a `wgmma.wait_group N` of that warp leaves at
//!   most N groups pending: the groups it retires are computed then, in
//!   issue order (shared operands read at that moment, D written). Each
//!   warp computes its 16 rows of D on its own, from its rows of A and
//!   its own descriptors. Until then the operation's D and A registers
//!   are held (another instruction may not read or write them; a later
//!   `wgmma.mma_async` may accumulate into the same D or read the same A)
//!   and the shared bytes it reads may not be stored to, by any block of
//!   the cluster. Each D element is the H100's sum of its 16 products
//!   and D (scale-d true): see the Fidelity section.
//! - `wgmma.fence`: a `wgmma.mma_async` whose D or A registers another
//!   instruction wrote since the warp's last `wgmma.fence` (or with no
//!   fence before it) is an error. Reads in between are not checked.
//! - `setmaxnreg` checks its operand and the warp, and does nothing: the
//!   register file and its limits are not modelled.
//! - An mbarrier (`.b64` in shared memory, 8-byte aligned; its state is
//!   kept beside shared memory) completes a phase when its pending
//!   arrivals and its transaction count both reach zero; then the phase
//!   number goes up and the arrival count is reset. `try_wait.parity p`
//!   is true once the phase with that parity has completed, i.e. when
//!   `(phase & 1) != p`: a fresh barrier reports parity 1 as complete.
//!   The transaction count may go below zero while arrivals are pending
//!   (bytes before the `expect_tx` that announces them, as the PTX ISA
//!   allows); once every arrival is in, more bytes than expected are an
//!   error.
//! - A `try_wait`/`test_wait` that would fail blocks its thread, and the
//!   block's other threads run, until the phase completes. If no thread of
//!   the cluster can run, an operation in flight completes; with none
//!   left, blocked waits return false once (a `try_wait` may time out); if
//!   that changes no mbarrier, the block is stuck and the launch fails
//!   with "mbarrier wait can never complete", naming where every warp is.
//! - `tcgen05` ordering: a thread that gets past a synchronisation (a
//!   barrier, an mbarrier wait) needs `tcgen05.fence::after_thread_sync`
//!   before its next `tcgen05.mma`/`cp`/`ld`/`st`/`dealloc`; a thread
//!   that issued `tcgen05.alloc`/`dealloc`/`ld`/`st` needs
//!   `tcgen05.fence::before_thread_sync` before its next release (an
//!   arrive at a barrier, the cluster barrier or an mbarrier), and one
//!   that issued `tcgen05.cp`/`mma` that fence or a `tcgen05.commit`.
//!   This is the pattern the PTX ISA prescribes; the emulator asks for it
//!   even where no tensor-memory data depends on the synchronisation.
//! - Tensor maps are the emulator's own: [`TensorMap2d::encode`]. A tensor
//!   copy fills bytes outside the tensor with zeros and counts the whole
//!   box; it writes with the map's swizzle applied to absolute shared
//!   addresses.
//! - Tensor memory: per block 128 lanes x 512 columns of 32 bits, with a
//!   written bit per cell. `tcgen05.mma.kind::mxf4nvf4.block_scale
//!   .scale_vec::4X` (the only MMA kind) sums each D element as
//!   Microsoft's MMA-Sim models the B200 (per-block terms aligned to the
//!   largest scale exponent, truncated 35 bits below it, the f32 result
//!   rounded toward zero; `ops/tcgen05.rs`). No Blackwell GPU here has
//!   confirmed it; the same source's Hopper model matched the H100 on
//!   every recorded result.
//! - `bar.sync`/`barrier.sync` without a thread count complete when every
//!   thread of the block that has not exited has arrived (as on the H100);
//!   an exit can complete one.
//! - Clusters: each block keeps its own shared memory, mbarriers and
//!   tensor memory. `mapa` maps a shared address to the same offset in
//!   another block of the cluster; `ld`/`st`/`atom`/`red` with
//!   `.shared::cluster` (or generic addresses) reach it. The cluster
//!   barrier (`barrier.cluster.arrive`/`wait`) completes a phase when every
//!   thread of the cluster that has not exited has arrived (exits count
//!   as arrivals, as for `bar.sync`); a thread's wait waits for the phase
//!   of its own last arrive. `fence.*.cluster` orders nothing here.
//!   `%is_explicit_cluster` is true when the cluster has more than one
//!   block or the kernel declares `.explicitcluster` or
//!   `.reqnctapercluster`.
//!
//! # Fidelity
//!
//! Results are meant to be bit-identical to an H100's. The rules below were
//! checked on one (driver 580, `sm_90`): `tests/data/h100_probes.txt` holds
//! the probes and the outputs it gave, and `tests/emu/probes.rs` replays them.
//! - Every float operation is correctly rounded in the rounding mode it
//!   names (f64, f32, f16, bf16, f16x2, bf16x2; `fma` rounds once);
//!   subnormals are kept unless an instruction says `.ftz`.
//! - f32, f16 and bf16 results that are NaN are the canonical NaN (f32
//!   `0x7FFFFFFF`, f16/bf16 `0x7FFF`) — `neg` and `abs` of a NaN included;
//!   otherwise `neg`/`abs` only change the sign.
//! - f64 propagates NaNs: the result is the first NaN operand, quieted, with
//!   its sign and payload (priority: `add`/`sub`/`mul`/`min`/`max` b then a,
//!   `fma` b, c, a, `div` a then b; `neg`/`abs`/`sqrt`/`rcp` the operand,
//!   sign unchanged); an invalid operation on numbers (inf - inf, 0 * inf,
//!   0/0, sqrt of a negative) gives `0xFFF8000000000000`.
//!
//!   What the PTX alone does not fix, and so no emulator can: these are
//!   the SASS instructions' rules, and ptxas rewrites. It commutes the
//!   operands of `add`/`mul` and the factors of `fma` (a constant goes
//!   last), so which of two NaN operands an f64 result carries depends on
//!   its choice; it folds `neg`/`abs` pairs away, and the `abs` of a
//!   constant NaN to the NaN with its sign cleared, and turns a float
//!   compare-and-`selp` against a constant into `FMNMX.NAN` (canonical
//!   NaN); it takes `abs.s32`/`abs.s64` to be non-negative (a `rem.s32`
//!   of it loses its sign fix for `MIN`); and it folds a constant
//!   `add.s32` into the `add.sat.s32` that follows, which then misses the
//!   saturation when the first add wraps. The DSL's compiler writes what
//!   does not depend on that (integer `abs`, float negation and `abs` as
//!   bits, an explicit NaN select in `clamp`, i32 saturation as a select
//!   on overflow); the GPU fuzz batch counts any f64 NaN equal to any f64
//!   NaN.
//! - `min`/`max` return the non-NaN operand and order -0 below +0; two NaNs
//!   give the canonical NaN (f64: the quieted b), as does any NaN with
//!   `.NaN`.
//! - Conversions of a NaN: to or from f64 keep sign and payload (shifted,
//!   quieted); `cvt.f32.bf16` is a shift (any NaN kept as is); to tf32 a
//!   NaN gives `0x7FFFE000`, and with `.satfinite` NaN and infinity bits `x`
//!   give `(x & !0x1FFF) - 0x2000`; the others give the canonical NaN.
//! - Float-to-integer conversions saturate; NaN converts to 0, except from
//!   f64 or to a 64-bit integer, where it gives `1 << (bits - 1)`.
//! - Integer division and remainder by zero give all ones, for signed and
//!   unsigned types alike; `MIN / -1` wraps to `MIN`.
//! - `testp.normal` is true for zeros (the PTX ISA says so).
//! - The `.approx` instructions (`ex2`, `lg2`, `sin`, `cos`, `rsqrt`,
//!   `tanh`, `rcp.approx`, `sqrt.approx`, `div.approx`/`div.full`) are
//!   computed accurately (correctly rounded from f64) and are **not**
//!   bit-exact with the hardware's approximations (`ex2.approx.f32`,
//!   `rsqrt.approx.f32` and `div.full.f32` differ in the last bit now and
//!   then; `tanh.approx` by up to about 2^-11 relative).
//! - `add`/`mul` without a rounding modifier are executed as written; ptxas
//!   may contract such pairs into an FMA on the GPU (the DSL always writes
//!   `.rn`, which forbids that).
//! - `elect.sync` elects the lowest executing lane of the member mask (as
//!   the H100 did); atomics of one instruction apply in lane order, warps
//!   and blocks in scheduling order (any order is a valid GPU execution;
//!   this one is deterministic). `atom.add`/`red.add` on floats compute
//!   what the H100 did on recorded inputs: round to nearest even
//!   (`f16x2`/`bf16x2` half by half, subnormals kept); `f32` on global
//!   memory flushes subnormal inputs and results to zero of the same sign
//!   (as the PTX ISA documents; shared memory keeps them); canonical NaNs
//!   for `f32` and the halves; for `f64` a NaN operand comes back as it is
//!   on global memory (the operand before the old value), quieted on
//!   shared memory (the old value first).
//! - `wgmma.mma_async` sums as the H100's tensor cores do (the model of
//!   Microsoft's MMA-Sim for Hopper, re-derived): every term aligned to the
//!   largest term's leading exponent and truncated toward zero 25 bits
//!   below it, the result rounded toward zero to f32 (`ops/wgmma.rs` has
//!   the rule). On random f16 and bf16 inputs (all four layouts, A from
//!   registers and from shared memory, K loops of 2 to 8 steps; NaN,
//!   infinities, subnormals and overflow included) all 45056 results an
//!   H100 gave were bit-identical to it; a sample of them is a unit test
//!   (`ops/wgmma_h100.txt`). An exact sum rounded once matched only 62%.

//! # Checks
//!
//! A launch stops with an [`EmuError`] that names the kernel, block, thread
//! and PTX line on: an out-of-bounds, freed or misaligned global, shared or
//! parameter access (alignment is the access size, the whole vector for
//! `.v2`/`.v4`/`.v8`; shared accesses must stay inside one variable or the
//! dynamic block); a store to a read-only allocation; a read of a register
//! the thread never wrote; a barrier that can never complete (a thread
//! waits at another barrier, a `bar.warp.sync` or an mbarrier, or, for a
//! barrier with a thread count, exited); an mbarrier wait that can never
//! complete, an mbarrier used before `mbarrier.init`, more arrivals than
//! are pending, more transaction bytes than expected once every arrival is
//! in, `mbarrier.init` of a live mbarrier and `mbarrier.inval` of one in
//! use (a phase under way, an operation in flight that completes on it);
//! bulk copies with a size or address not a
//! multiple of 16 or global bytes outside the view passed in the parameter
//! their address came from, a tensor copy through bytes that are not a
//! [`TensorMap2d`] or to a misaligned destination; tensor memory used
//! without an allocation or outside it, an allocation that cannot be
//! satisfied or comes after `tcgen05.relinquish_alloc_permit`, a block that
//! exits with tensor memory allocated ("tensor memory not freed"), reads of
//! cells never written (`tcgen05.ld`, the scale factors and the
//! accumulator of `tcgen05.mma`), scale factors that differ between the
//! four lane quarters, a `tcgen05.ld` outside the warp's lane quarter, and
//! instruction or shared-memory descriptors the MMA does not support;
//! `shfl.sync`, `vote.sync`, `elect.sync`, `redux.sync` or `bar.warp.sync`
//! whose member mask disagrees with the lanes that execute it, and a
//! shuffle that reads a lane that does not take part; running past the end
//! of the kernel; a launch beyond the limits (1024 threads per block,
//! `.maxntid`: launch fewer threads or raise `launch_bounds`, `.reqntid`,
//! 227 KiB of shared memory) or with parameters
//! whose count or sizes do not match the `.param` declarations.
//! Clusters: a grid that is not a multiple of the cluster, a cluster of
//! more than 16 blocks, one that differs from `.reqnctapercluster` or
//! exceeds `.maxclusterrank`; `mapa` to a rank outside the cluster; an
//! access to the shared memory of a block of the cluster that has exited,
//! or outside its shared variables; a `.shared::cta` access (or an
//! mbarrier, bulk copy or `tcgen05` operand) through the address of
//! another block; `barrier.cluster.wait` without a preceding
//! `barrier.cluster.arrive`, two arrives without a wait, `.aligned` with
//! a diverged warp, and a cluster barrier that can never complete (naming
//! a thread that has not arrived and what it waits at).
//! `wgmma`: a read or write of a register held by a pending
//! `wgmma.mma_async`, a store to shared bytes it will read (naming both
//! lines), a missing `wgmma.fence` (naming the write), a warp that exits
//! with operations not waited for, scale-d true over D never written,
//! a diverged warp (every `wgmma.*` and `setmaxnreg` is `.sync.aligned`),
//! a block without the whole warpgroup, reserved or unsupported
//! descriptor bits (base offset other than 0) and operands outside the
//! shared variables; at parse time, shapes other than `m64nNk16`, `.f16`
//! accumulators, other operand types, transposed (MN-major) operands,
//! imm-scale other than 1/-1, a constant scale-d other than 0/1, a
//! `wait_group` count that is not an immediate in 0..=7 and a
//! `setmaxnreg` count that is not an immediate multiple of 8 in
//! 24..=256. Operands that differ between the lanes of a warp (the
//! descriptors, scale-d) are errors too.
//!
//! # Hazards
//!
//! The errors a GPU would not report but answer with wrong results, each
//! naming the kernel, block, thread and both PTX lines involved:
//! - a generic access of shared bytes that an asynchronous operation in
//!   flight writes, or (for a write) reads: a missing mbarrier wait, a
//!   stage reused too early; an asynchronous operation issued over such
//!   bytes;
//! - a shared-memory data race: two threads touch the same bytes, at
//!   least one writing, and no barrier, mbarrier arrive and wait, cluster
//!   barrier or (within a warp) `bar.warp.sync` orders them (vector clocks
//!   over the threads of a cluster; an asynchronous operation accesses
//!   memory as its issuing thread, at its issue). Two atomics (`atom`,
//!   `red`) never race with each other, but an atomic and a plain load or
//!   store of the same bytes do; volatile, relaxed, acquire and release
//!   loads and stores are not data races; none of these orders anything
//!   here; global memory is not checked;
//! - in the checked mode, a read (a load, an atomic, an asynchronous
//!   operation's read at its issue) of shared bytes that nothing wrote
//!   since the block started (no store, atomic or landed copy): a missing
//!   initialisation, or a read before the write it should wait for;
//! - shared bytes written by generic stores and read by the async proxy
//!   (`wgmma`, `tcgen05.mma`/`cp`, a bulk copy to global memory) without a
//!   `fence.proxy.async` by the writer that is ordered before the read;
//! - a `tcgen05.ld` result read or overwritten before `tcgen05.wait::ld`; a
//!   `tcgen05.ld`, `st` or `dealloc` of columns a `tcgen05` operation in
//!   flight writes; the `tcgen05` fence pattern (the asynchronous model
//!   above);
//! - a block that ends with an asynchronous operation in flight.

//! # Memory layout
//!
//! Global allocations start at `0x7f0000000000`, 256-byte aligned, with at
//! least 4 KiB unmapped between them. Shared memory is per block and
//! starts all ones (`0xFF` bytes; reading bytes nothing wrote is an error
//! in the checked mode); its window starts at `0x400` (static variables in
//! declaration order, then the dynamic `.extern .shared` block at its
//! declared alignment, sized by [`Launch::shared_bytes`]). Generic
//! addresses of shared memory are `0x7ff000000000 + offset`. A
//! shared::cluster address is a shared::cta address with the rank of the
//! block it is in, plus one, in bits 24 and up: `((rank + 1) << 24) |
//! offset`, what `mapa` returns; bits 24 and up zero (every plain shared
//! address) mean the executing block, as the PTX ISA guarantees. Generic
//! addresses of other blocks' shared memory are `0x7ff000000000` plus
//! that. A kernel
//! parameter's name is its `.param` address (its offset in the parameter
//! buffer); `cvta.param` turns that into the generic address
//! `0x7ffe00000000 + offset`, which loads (and the tensor copy's map
//! operand) can read through.

mod ctx;
mod deadlock;
mod decode;
mod diag;
mod error;
mod fp;
mod fp_rn;
mod gorder;
mod inst;
mod launch;
mod layout;
mod mbar;
mod memory;
mod ops;
mod origin;
mod parse;
mod pdl;
mod pending;
mod prepare;
mod race;
mod run;
mod schedule;
mod source;
mod state;
mod synccheck;
mod tensormap;
mod tmem;

pub use error::EmuError;
pub use launch::{Launch, LaunchStats, ParamValue};
pub use memory::Memory;
pub(crate) use pdl::Overlap;
pub use schedule::{Options, Schedule};
pub use source::Place;
pub use tensormap::TensorMap2d;

/// A parsed and decoded PTX module: parse once, launch many times.
#[derive(Debug)]
pub struct Module {
    entries: Vec<decode::Entry>,
}

impl Module {
    /// Parses and decodes a PTX module. Fails with the line of the first
    /// statement that is malformed or uses something the emulator does not
    /// implement.
    pub fn parse(ptx: &str) -> Result<Module, EmuError> {
        let lines: Vec<&str> = ptx.lines().collect();
        let asts = parse::parse_module(ptx)?;
        let mut entries = Vec::with_capacity(asts.len());
        for a in &asts {
            if entries.iter().any(|e: &decode::Entry| e.name == a.name) {
                return Err(EmuError::at_line(
                    a.line,
                    lines.get(a.line as usize - 1).unwrap_or(&""),
                    format!("entry `{}` is defined twice", a.name),
                ));
            }
            entries.push(decode::build(a, &lines)?);
        }
        Ok(Module { entries })
    }

    /// The names of the kernel entries, in module order.
    pub fn entries(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// Runs kernel `entry` over the grid, with `params` in `.param` order
    /// and `mem` as global memory, under the default [`Options`] (the
    /// adversarial schedule with seed 0).
    pub fn launch(
        &self,
        entry: &str,
        launch: &Launch,
        params: &[ParamValue],
        mem: &mut Memory,
    ) -> Result<LaunchStats, EmuError> {
        self.launch_with(entry, launch, params, mem, &Options::default())
    }

    /// [`launch`](Module::launch) under `options`: a schedule (and seed),
    /// an instruction limit.
    pub fn launch_with(
        &self,
        entry: &str,
        launch: &Launch,
        params: &[ParamValue],
        mem: &mut Memory,
        options: &Options,
    ) -> Result<LaunchStats, EmuError> {
        let Some(e) = self.entries.iter().find(|e| e.name == entry) else {
            return Err(EmuError::new(format!(
                "no kernel entry `{entry}` in this module (it has: {})",
                self.entries().join(", ")
            )));
        };
        unoptimised_hint();
        run::launch(e, launch, params, mem, options)
    }
}

/// Says once per process, on stderr, that the emulator was built without
/// optimisation (a user's crate in the default dev profile builds its
/// dependencies so) and runs about ten times slower, with the lines that
/// fix it.
fn unoptimised_hint() {
    #[cfg(emu_unoptimised)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            eprintln!(
                "nvfp4-dsl: the PTX emulator was built without optimisation and runs about 10x slower; add to your Cargo.toml: [profile.dev.package.nvfp4-dsl] opt-level = 3"
            );
        });
    }
}

#[cfg(test)]
mod tests;
