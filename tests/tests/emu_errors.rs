//! The emulator's errors name the Rust statement (`file:line: statement`,
//! and the inlined device function's) before the PTX line: kernels written
//! here fail on purpose and the error text is asserted.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, DeviceBuffer, Error, Target};

/// This file, to find the lines the errors must name.
const SOURCE: &str = include_str!("emu_errors.rs");

/// `file:line: `statement`` of each line of function `function` of this
/// file that holds `statement`.
fn at_in(function: &str, statement: &str) -> Vec<String> {
    let start = SOURCE
        .lines()
        .position(|l| l.contains(&format!("fn {function}(")) || l.contains(&format!("fn {function}<")))
        .expect("the function is in this file");
    SOURCE
        .lines()
        .enumerate()
        .skip(start)
        .take_while(|(i, l)| *i == start || !l.starts_with('}'))
        .filter(|(_, l)| l.trim() == statement)
        .map(|(i, _)| format!("tests/emu_errors.rs:{}: `{statement}`", i + 1))
        .collect()
}

/// [`at_in`] of the one line of `function` holding `statement`.
fn at(function: &str, statement: &str) -> String {
    let mut lines = at_in(function, statement);
    assert_eq!(lines.len(), 1, "`{statement}` must be on one line of `{function}`");
    lines.remove(0)
}

/// The emulator's error of a launch that must fail.
fn failure(result: Result<(), Error>) -> nvfp4_dsl::emu::EmuError {
    match result {
        Err(Error::Emulator(e)) => *e,
        Err(other) => panic!("not an emulator error: {other}"),
        Ok(()) => panic!("the launch must fail"),
    }
}

#[device]
fn load_at(x: &[u32], i: usize) -> u32 {
    let v = x[i + 1];
    v * 2
}

#[kernel(targets(sm_90))]
pub fn reads_one_past(x: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    out[i] = load_at(x, i);
}

#[test]
fn an_out_of_bounds_read_names_the_kernel_statement_and_the_device_function() {
    let device = Device::emulator(Target::Sm90);
    let x = device.upload(&[7u32; 64]).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    // SAFETY: the emulator checks every access; thread 63 reads x[64].
    let e = failure(unsafe { reads_one_past::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut out) });
    let text = e.to_string();
    let want = format!(
        "at {}, inlined `load_at` at {}, line ",
        at("reads_one_past", "out[i] = load_at(x, i);"),
        at("load_at", "let v = x[i + 1];")
    );
    assert!(text.contains(&want), "{text}\nwants {want}");
    assert!(e.message().contains("out of bounds"), "{text}");
}

/// Warp 0 waits at one `sync_threads`, warp 1 at another: on the GPU the
/// two share barrier 0, but a barrier must be reached at one place.
#[kernel(targets(sm_90))]
pub fn two_barriers(out: &mut [u32]) {
    let t = thread_idx_x();
    if t < 32 {
        sync_threads();
    } else {
        sync_threads();
    }
    out[t as usize] = t;
}

/// Half of each warp reaches the barrier: `bar.sync` is `.aligned`.
#[kernel(targets(sm_90))]
pub fn half_warp_barrier(out: &mut [u32]) {
    let t = thread_idx_x();
    if lane_id() < 16 {
        sync_threads();
    }
    out[t as usize] = t;
}

/// Warps 0 and 1 say barrier 1 has 128 threads, warps 2 and 3 say 64.
#[kernel(targets(sm_90))]
pub fn mismatched_counts(out: &mut [u32]) {
    let t = thread_idx_x();
    if t < 64 {
        named_barrier_sync(1, 128);
    } else {
        named_barrier_sync(1, 64);
    }
    out[t as usize] = t;
}

/// A `bar.warp.sync` whose member mask leaves out lanes that execute it.
#[kernel(targets(sm_90))]
pub fn short_warp_mask(out: &mut [u32]) {
    let t = thread_idx_x();
    nvfp4_dsl::ptx!((), "bar.warp.sync 0x0000ffff;");
    out[t as usize] = t;
}

/// Runs a one-block kernel of `threads` threads under `options`; its error.
fn run_block(
    launch: fn(&Device, LaunchConfig, &mut nvfp4_dsl::DeviceBuffer<u32>) -> Result<(), Error>,
    threads: u32,
    options: nvfp4_dsl::emu::Options,
) -> String {
    let device = Device::emulator_with(Target::Sm90a, options);
    let mut out = device.alloc_zeroed::<u32>(threads as usize).expect("alloc");
    failure(launch(&device, LaunchConfig::linear(1, threads), &mut out)).to_string()
}

#[test]
fn barrier_divergence_is_an_error_naming_the_rust_line() {
    let adversarial = nvfp4_dsl::emu::Options::adversarial;
    for seed in 0..3 {
        let text = run_block(
            // SAFETY: one block, each thread writes out[t]; the emulator checks the rest.
            |d, c, o| unsafe { two_barriers::Kernel::launch(d, c, o) },
            64,
            adversarial(seed),
        );
        let sites = at_in("two_barriers", "sync_threads();");
        assert!(sites.iter().any(|s| text.contains(&format!("at {s}, line"))), "{text}");
        assert!(text.contains("divergent threads in block"), "{text}");
        assert!(text.contains("reaches barrier 0 at another instruction"), "{text}");

        let text = run_block(
            // SAFETY: one block, each thread writes out[t]; the emulator checks the rest.
            |d, c, o| unsafe { half_warp_barrier::Kernel::launch(d, c, o) },
            64,
            adversarial(seed),
        );
        assert!(text.contains("divergent warp: this .aligned instruction"), "{text}");
        assert!(
            text.contains(&format!("at {}, line", at("half_warp_barrier", "sync_threads();"))),
            "{text}"
        );
    }
    let text = run_block(
        // SAFETY: one block, each thread writes out[t]; the emulator checks the rest.
        |d, c, o| unsafe { mismatched_counts::Kernel::launch(d, c, o) },
        128,
        nvfp4_dsl::emu::Options::sequential(),
    );
    assert!(
        text.contains("barrier 1 is in use with a count of 128 threads, this instruction says a count of 64 threads"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "at {}, line",
            at("mismatched_counts", "named_barrier_sync(1, 64);")
        )),
        "{text}"
    );
    let text = run_block(
        // SAFETY: one block, each thread writes out[t]; the emulator checks the rest.
        |d, c, o| unsafe { short_warp_mask::Kernel::launch(d, c, o) },
        32,
        adversarial(0),
    );
    assert!(
        text.contains("lane 16 executes bar.warp.sync but is not in its member mask 0x0000ffff"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "at {}, line",
            at("short_warp_mask", "nvfp4_dsl::ptx!((), \"bar.warp.sync 0x0000ffff;\");")
        )),
        "{text}"
    );
}

/// Half a warp fences the warpgroup's wgmma: `wgmma.fence` is `.aligned`.
#[kernel(targets(sm_90a))]
pub fn half_warp_wgmma_fence(out: &mut [u32]) {
    let t = thread_idx_x();
    if lane_id() < 16 {
        wgmma_fence();
    }
    out[t as usize] = t;
}

#[test]
fn a_diverged_aligned_wgmma_instruction_is_an_error_naming_the_rust_line() {
    let text = run_block(
        // SAFETY: one block, each thread writes out[t]; the emulator checks the rest.
        |d, c, o| unsafe { half_warp_wgmma_fence::Kernel::launch(d, c, o) },
        128,
        nvfp4_dsl::emu::Options::adversarial(0),
    );
    assert!(
        text.contains("line") && text.contains("wgmma.fence.sync.aligned"),
        "{text}"
    );
    assert!(
        text.contains(
            "divergent warp: this .aligned instruction is executed by lanes 0x0000ffff of the warp while lane 16"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("at {}, line", at("half_warp_wgmma_fence", "wgmma_fence();"))),
        "{text}"
    );
}

/// Thread 32 stores `first[32]`: the bytes of `second[0]`.
#[kernel(targets(sm_90))]
pub fn overruns_into_neighbour(out: &mut [u32]) {
    let first = shared_array::<u32, 32>();
    let second = shared_array::<u32, 32>();
    let t = thread_idx_x();
    first[t] = t;
    sync_threads();
    out[t as usize] = first[t % 32] + second[t % 32];
}

#[test]
fn a_shared_array_overrun_into_its_neighbour_is_an_error_naming_the_array() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(33).expect("alloc");
    // SAFETY: one block of 33 threads, each writes out[t]; the overrun is the point.
    let e = failure(unsafe { overruns_into_neighbour::Kernel::launch(&device, LaunchConfig::linear(1, 33), &mut out) });
    let text = e.to_string();
    assert_eq!(e.thread(), Some((32, 0, 0)), "{text}");
    assert!(
        text.contains("is out of bounds of `overruns_into_neighbour_smem0` (0x400..0x480, 128 bytes), the shared array its address was computed from: byte offset 128 of it, in `overruns_into_neighbour_smem1`"),
        "{text}"
    );
    assert!(
        text.contains(&format!("at {}, line", at("overruns_into_neighbour", "first[t] = t;"))),
        "{text}"
    );
}

/// Every thread below `n` writes `out[t]`.
#[kernel(targets(sm_90))]
pub fn writes_below(out: &mut [u32], n: u32) {
    let t = block_idx_x() * block_dim_x() + thread_idx_x();
    if t < n {
        out[t as usize] = t;
    }
}

#[test]
fn a_write_past_a_view_inside_its_buffer_is_an_error_naming_the_parameter() {
    let device = Device::emulator(Target::Sm90);
    let mut buffer = device.alloc_zeroed::<u32>(1024).expect("alloc");
    // Index 990 of the 990 elements from 16: element 1006 of the buffer.
    let view = buffer.slice_mut(16..1006).expect("a view");
    // SAFETY: 1024 threads, those below 991 write; the emulator checks the rest.
    let e = failure(unsafe { writes_below::Kernel::launch(&device, LaunchConfig::linear(4, 256), view, 991) });
    let text = e.to_string();
    assert_eq!((e.block(), e.thread()), (Some((3, 0, 0)), Some((222, 0, 0))), "{text}");
    assert!(text.contains("is out of bounds of the view passed as `out`"), "{text}");
    assert!(
        text.contains("3960 bytes), which its address was computed from: byte offset 3960 of it"),
        "{text}"
    );
    assert!(
        text.contains(&format!("at {}, line", at("writes_below", "out[t as usize] = t;"))),
        "{text}"
    );
    // The whole view is fine.
    let view = buffer.slice_mut(16..1006).expect("a view");
    // SAFETY: as above, 990 threads write.
    unsafe { writes_below::Kernel::launch(&device, LaunchConfig::linear(4, 256), view, 990) }.expect("in bounds");
}

/// The PTX compiler's error for kernel `body` over `out: &mut [u32]`.
fn refused(body: &str) -> String {
    let item: syn::ItemFn = syn::parse_str(&format!("fn k(out: &mut [u32]) {{ {body} }}")).expect("parses");
    match nvfp4_dsl_compiler::compile(
        "targets(sm_90)".parse().expect("tokens"),
        &item,
        &[],
        &Default::default(),
    ) {
        Ok(_) => panic!("`{body}` must not compile"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_local_array_overrun_is_a_compile_error() {
    // Local arrays live in registers, indexed by constants: an index past
    // the end is refused before anything runs.
    assert_eq!(
        refused("let mut a = [0u32; 4]; #[unroll] for i in 0..5 { a[i] = i as u32; } out[0] = a[0];"),
        "index 4 is out of bounds for an array of 4 elements (kernel `k`, target sm_90)"
    );
    assert!(
        refused("let mut a = [0u32; 4]; a[out[0] as usize] = 1; out[1] = a[0];")
            .contains("a local array lives in registers and can only be indexed by constants"),
    );
}

/// Reads through a sub-slice of `x` from element 4: thread 60 reads
/// `tail[60]`, element 64 of `x`.
#[kernel(targets(sm_90))]
pub fn reads_a_tail(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x() as usize;
    let tail = &x[4..];
    out[t] = tail[t];
}

#[test]
fn a_read_past_a_sub_slice_of_a_view_is_an_error_naming_the_parameter() {
    let device = Device::emulator(Target::Sm90);
    let buffer = device.upload(&[3u32; 128]).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    let x = buffer.slice(0..64).expect("a view");
    // SAFETY: 64 threads write out[t]; the emulator checks the reads.
    let e = failure(unsafe { reads_a_tail::Kernel::launch(&device, LaunchConfig::linear(1, 64), x, &mut out) });
    let text = e.to_string();
    assert_eq!(e.thread(), Some((60, 0, 0)), "{text}");
    assert!(text.contains("is out of bounds of the view passed as `x`"), "{text}");
    assert!(
        text.contains("256 bytes), which its address was computed from: byte offset 256 of it"),
        "{text}"
    );
    assert!(
        text.contains(&format!("at {}, line", at("reads_a_tail", "out[t] = tail[t];"))),
        "{text}"
    );
}

// Independent thread scheduling (`Options::with_independent_threads`).

/// Each half of a warp takes its own side of an `if` (different loads),
/// then the warpgroup's wgmma is fenced (`wgmma.fence` is `.aligned`);
/// `SYNC` reconverges the warp first with `sync_warp()`.
#[kernel(targets(sm_90a), specialize(SYNC = [false, true]))]
pub fn diverged_then_aligned<const SYNC: bool>(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x();
    let mut v = x[t as usize];
    if lane_id() < 16 {
        v = v * 3 + x[(t + 16) as usize];
    } else {
        v ^= x[(t - 16) as usize];
    }
    if SYNC {
        sync_warp();
    }
    wgmma_fence();
    out[t as usize] = v;
}

/// What `diverged_then_aligned` and `diverged_shuffle` compute before the
/// shuffle, on the host.
fn halves(x: &[u32]) -> Vec<u32> {
    (0..x.len())
        .map(|t| {
            if t % 32 < 16 {
                x[t].wrapping_mul(3).wrapping_add(x[t + 16])
            } else {
                x[t] ^ x[t - 16]
            }
        })
        .collect()
}

/// A launch of a kernel over `x` and `out`.
type LaunchX = fn(&Device, LaunchConfig, &DeviceBuffer<u32>, &mut DeviceBuffer<u32>) -> Result<(), Error>;

/// Runs `launch` over random `x` (never zero) on `threads` threads in
/// `blocks` blocks; the output, or the error's text.
fn run_x(
    options: nvfp4_dsl::emu::Options,
    (blocks, threads): (u32, u32),
    launch: LaunchX,
) -> (Vec<u32>, Result<Vec<u32>, String>) {
    let n = (blocks * threads) as usize;
    let mut rng = nvfp4_kernels::rng::Rng::new(11);
    let x: Vec<u32> = (0..n).map(|_| rng.next_u32() | 1).collect();
    let device = Device::emulator_with(Target::Sm90a, options);
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&vec![0xDEAD_BEEF; n]).expect("upload");
    let got = launch(&device, LaunchConfig::linear(blocks, threads), &dx, &mut out)
        .map(|()| device.download(&out).expect("download"))
        .map_err(|e| e.to_string());
    (x, got)
}

#[test]
fn a_diverged_warp_at_an_aligned_instruction_is_an_error_under_independent_thread_scheduling() {
    use nvfp4_dsl::emu::Options;
    // SAFETY: each thread reads x[t] and x[t +- 16] and writes out[t].
    let unsynced =
        |d: &Device, c, x: &_, o: &mut _| unsafe { diverged_then_aligned::Kernel::<false>::launch(d, c, x, o) };
    // SAFETY: as above.
    let synced = |d: &Device, c, x: &_, o: &mut _| unsafe { diverged_then_aligned::Kernel::<true>::launch(d, c, x, o) };
    for seed in 0..4 {
        let its = Options::adversarial(seed).with_independent_threads();
        let text = run_x(its, (1, 64), unsynced)
            .1
            .expect_err("a diverged warp at wgmma.fence");
        assert!(
            text.contains("divergent warp: this .aligned instruction is executed by lanes"),
            "{text}"
        );
        assert!(
            text.contains("the warp diverged at a branch and nothing reconverged it"),
            "{text}"
        );
        assert!(
            text.contains(&format!("at {}, line", at("diverged_then_aligned", "wgmma_fence();"))),
            "{text}"
        );
        // The default schedule runs the lanes that reach one instruction
        // together: the warp is converged again after the `if`.
        let (x, got) = run_x(Options::adversarial(seed), (1, 64), unsynced);
        assert_eq!(got.expect("converged at the join"), halves(&x));
        // `sync_warp()` reconverges it on every schedule.
        let (x, got) = run_x(its, (1, 64), synced);
        assert_eq!(got.expect("reconverged by bar.warp.sync"), halves(&x));
    }
}

/// Each half of a warp takes its own side of an `if`, then every lane
/// reads lane `t ^ 16` (of the other half) with a full-mask shuffle.
#[kernel(targets(sm_90a))]
pub fn diverged_shuffle(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x() + block_idx_x() * block_dim_x();
    let mut v = x[t as usize];
    if lane_id() < 16 {
        v = v * 3 + x[(t + 16) as usize];
    } else {
        v ^= x[(t - 16) as usize];
    }
    out[t as usize] = shfl_xor_sync(0xffff_ffff, v, 16) + v;
}

#[test]
fn a_shuffle_waits_for_the_lanes_of_its_mask_under_independent_thread_scheduling() {
    use nvfp4_dsl::emu::Options;
    // SAFETY: each thread reads x[t] and x[t +- 16] and writes out[t].
    let launch = |d: &Device, c, x: &_, o: &mut _| unsafe { diverged_shuffle::Kernel::launch(d, c, x, o) };
    let want = |x: &[u32]| {
        let h = halves(x);
        (0..x.len()).map(|t| h[t ^ 16].wrapping_add(h[t])).collect::<Vec<_>>()
    };
    for seed in 0..4 {
        for options in [
            Options::adversarial(seed),
            Options::adversarial(seed).with_independent_threads(),
        ] {
            let (x, got) = run_x(options, (4, 64), launch);
            assert_eq!(
                got.unwrap_or_else(|e| panic!("{options:?}: {e}")),
                want(&x),
                "{options:?}"
            );
        }
    }
}

// Item 5 of issue 24: mbarrier init fences and phase overruns.

/// Thread 0 initialises the mbarrier; thread 32 starts a bulk copy that
/// completes on it. `fence`: 0 no `fence_mbarrier_init`, 1 the fence
/// before the barrier that orders the init before the copy, 2 after it.
#[kernel(targets(sm_90))]
pub fn copy_on_a_fresh_mbarrier(src: &[u32], out: &mut [u32], fence: u32) {
    let bars = shared_array::<u64, 1>();
    let tile = shared_array::<u32, 64>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        if fence == 1 {
            fence_mbarrier_init();
        }
    }
    sync_threads();
    if t == 0 && fence == 2 {
        fence_mbarrier_init();
    }
    if t == 32 {
        mbarrier_arrive_expect_tx(bars, 0u32, 256);
        cp_async_bulk_global_to_shared(tile, 0u32, src, 0u32, 256, bars, 0u32);
    }
    mbarrier_wait_parity(bars, 0u32, 0u32);
    out[t as usize] = tile[t as usize];
}

#[test]
fn an_mbarrier_init_not_fenced_before_an_async_copy_is_an_error_naming_both_lines() {
    for options in [
        nvfp4_dsl::emu::Options::sequential(),
        nvfp4_dsl::emu::Options::adversarial(1),
        nvfp4_dsl::emu::Options::priority(2),
    ] {
        let device = Device::emulator_with(Target::Sm90, options);
        let data: Vec<u32> = (0..64).map(|i| i * 7 + 3).collect();
        let src = device.upload(&data).expect("upload");
        for fence in [0u32, 1, 2] {
            let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
            // SAFETY: one block of 64 threads, each writes out[t]; the emulator checks the rest.
            let result = unsafe {
                copy_on_a_fresh_mbarrier::Kernel::launch(&device, LaunchConfig::linear(1, 64), &src, &mut out, fence)
            };
            if fence == 1 {
                result.expect("the fenced init");
                assert_eq!(device.download(&out).expect("download"), data);
                continue;
            }
            let e = failure(result);
            let text = e.to_string();
            assert!(
                e.message().contains("mbarrier init not published to the async proxy"),
                "{text}"
            );
            let copy = at(
                "copy_on_a_fresh_mbarrier",
                "cp_async_bulk_global_to_shared(tile, 0u32, src, 0u32, 256, bars, 0u32);",
            );
            assert!(text.contains(&format!("at {copy}, line")), "{text}");
            let init = at("copy_on_a_fresh_mbarrier", "mbarrier_init(bars, 0u32, 1);");
            assert!(e.message().contains(&format!("initialised at {init} (line ")), "{text}");
        }
    }
}

/// Thread 0 writes a shared slot, then the block meets at `sync_threads()`
/// (`bar.sync 0`, `.aligned`) after the divergent `if`, and every thread
/// reads the slot.
#[kernel(targets(sm_90a))]
pub fn barrier_after_a_divergent_if(x: &[u32], out: &mut [u32]) {
    let slot = shared_array::<u32, 1>();
    let t = thread_idx_x();
    if t == 0 {
        slot[0u32] = x[0];
    }
    sync_threads();
    out[t as usize] = slot[0u32] + x[t as usize];
}

#[test]
fn a_barrier_after_a_divergent_if_counts_threads_under_independent_thread_scheduling() {
    use nvfp4_dsl::emu::Options;
    // SAFETY: each thread reads x[0] and x[t] and writes out[t].
    let launch = |d: &Device, c, x: &_, o: &mut _| unsafe { barrier_after_a_divergent_if::Kernel::launch(d, c, x, o) };
    for seed in 0..4 {
        let (x, got) = run_x(Options::adversarial(seed).with_independent_threads(), (1, 64), launch);
        let want: Vec<u32> = x.iter().map(|&v| v.wrapping_add(x[0])).collect();
        assert_eq!(got.expect("every thread reaches the one bar.sync"), want);
    }
}

#[test]
fn independent_thread_scheduling_is_deterministic_per_seed_on_any_number_of_threads() {
    use nvfp4_dsl::emu::Options;
    // SAFETY: as in the tests above.
    let unsynced =
        |d: &Device, c, x: &_, o: &mut _| unsafe { diverged_then_aligned::Kernel::<false>::launch(d, c, x, o) };
    let mut firsts = std::collections::HashSet::new();
    for seed in 0..8 {
        let its = Options::adversarial(seed).with_independent_threads();
        // 8 blocks: their clusters run in parallel on 4 threads.
        let one = run_x(its.with_threads(1), (8, 64), unsynced).1.expect_err("diverged");
        for threads in [2, 4] {
            let many = run_x(its.with_threads(threads), (8, 64), unsynced)
                .1
                .expect_err("diverged");
            assert_eq!(one, many, "seed {seed}, {threads} threads");
        }
        assert_eq!(
            one,
            run_x(its, (8, 64), unsynced).1.expect_err("diverged"),
            "seed {seed}"
        );
        // Which half of the warp reaches the fence first is the seed's.
        firsts.insert(one.split("executed by lanes ").nth(1).map(|s| s[..10].to_string()));
    }
    assert!(firsts.len() > 1, "every seed ran the same group first: {firsts:?}");
}

// Item 5 of issue 24: programmatic dependent launch, relaxed cluster arrives.

/// Reads `x[t]` before waiting for the kernel before it in the stream.
#[kernel(targets(sm_90))]
pub fn reads_before_its_wait(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x() as usize;
    let v = x[t];
    grid_dependency_wait();
    out[t] = v + 1;
}

/// Reads `x[t]` after waiting for the kernel before it in the stream.
#[kernel(targets(sm_90))]
pub fn reads_after_its_wait(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x() as usize;
    grid_dependency_wait();
    out[t] = x[t] + 1;
}

/// Thread 0 waits for the kernel before it in the stream; every thread
/// reads `x[t]` after a barrier with it.
#[kernel(targets(sm_90))]
pub fn reads_after_a_barrier_with_the_waiting_thread(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x() as usize;
    if t == 0 {
        grid_dependency_wait();
    }
    sync_threads();
    out[t] = x[t] + 1;
}

/// Writes `x[t]` before waiting for the kernel before it in the stream.
#[kernel(targets(sm_90))]
pub fn writes_before_its_wait(x: &mut [u32]) {
    let t = thread_idx_x() as usize;
    x[t] = 7;
    grid_dependency_wait();
}

#[test]
fn a_dependent_launch_touching_its_predecessors_memory_before_its_wait_is_an_error() {
    let device = Device::emulator(Target::Sm90);
    let mut x = device.alloc_zeroed::<u32>(64).expect("alloc");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    let config = LaunchConfig::linear(1, 64);
    let fill = |x: &mut nvfp4_dsl::DeviceBuffer<u32>| {
        // SAFETY: 64 threads, each touches element t of 64-element buffers.
        unsafe { writes_below::Kernel::launch(&device, config, x, 64) }.expect("fills x");
    };
    // The first launch on a device has no predecessor.
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_before_its_wait::Kernel::launch(&device, config, &x, &mut out) }.expect("no predecessor");
    fill(&mut x);
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    let e = failure(unsafe { reads_before_its_wait::Kernel::launch(&device, config, &x, &mut out) });
    let text = e.to_string();
    assert!(
        text.contains("which the kernel before it in the stream (`writes_below`) writes, before this thread's `griddepcontrol.wait`")
            && text.contains("call `grid_dependency_wait()` before this access"),
        "{text}"
    );
    assert!(
        text.contains(&format!("at {}, line", at("reads_before_its_wait", "let v = x[t];"))),
        "{text}"
    );
    // After the wait, or with the predecessor complete (a copy between
    // them), the read is fine.
    fill(&mut x);
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_after_its_wait::Kernel::launch(&device, config, &x, &mut out) }.expect("after the wait");
    assert_eq!(device.download(&out).expect("download"), (1..65).collect::<Vec<u32>>());
    fill(&mut x);
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_after_a_barrier_with_the_waiting_thread::Kernel::launch(&device, config, &x, &mut out) }
        .expect("ordered after a wait");
    fill(&mut x);
    device.download(&x).expect("download");
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_before_its_wait::Kernel::launch(&device, config, &x, &mut out) }.expect("a copy in between");
    // Writing what the predecessor reads races too.
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_after_its_wait::Kernel::launch(&device, config, &x, &mut out) }.expect("after the wait");
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    let e = failure(unsafe { writes_before_its_wait::Kernel::launch(&device, config, &mut x) });
    let text = e.to_string();
    assert!(
        text.contains("which the kernel before it in the stream (`reads_after_its_wait`) reads"),
        "{text}"
    );
    assert!(
        text.contains(&format!("at {}, line", at("writes_before_its_wait", "x[t] = 7;"))),
        "{text}"
    );
}

/// Each block of a cluster of two writes its shared array, arrives at the
/// cluster barrier (`ORDER` 0: release; 1: relaxed after `fence.acq_rel`;
/// 2: relaxed), waits and reads the other block's array.
#[kernel(targets(sm_90), specialize(ORDER = [0, 1, 2]))]
pub fn swaps_through_the_cluster<const ORDER: u32>(out: &mut [u32]) {
    let s = shared_array::<u32, 64>();
    let t = thread_idx_x();
    let rank = cluster_cta_rank();
    s[t] = 100 * rank + t;
    if ORDER == 0 {
        cluster_arrive();
    } else {
        if ORDER == 1 {
            fence_acq_rel_gpu();
        }
        cluster_arrive_relaxed();
    }
    cluster_wait();
    let v = load_cluster(s, t, 1 - rank);
    out[(64 * rank + t) as usize] = v;
    // The other block reads this one's array until here.
    cluster_sync();
}

#[test]
fn a_relaxed_cluster_arrive_releases_nothing() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(128).expect("alloc");
    let config = LaunchConfig::new((2, 1, 1), (64, 1, 1)).with_cluster((2, 1, 1));
    let want: Vec<u32> = (0..128).map(|i| 100 * (1 - i / 64) + i % 64).collect();
    // SAFETY: one cluster of two blocks of 64 threads, each writes out[64 rank + t].
    unsafe { swaps_through_the_cluster::Kernel::<0>::launch(&device, config, &mut out) }.expect("release");
    assert_eq!(device.download(&out).expect("download"), want);
    // SAFETY: one cluster of two blocks of 64 threads, each writes out[64 rank + t].
    unsafe { swaps_through_the_cluster::Kernel::<1>::launch(&device, config, &mut out) }.expect("fence, relaxed");
    assert_eq!(device.download(&out).expect("download"), want);
    // SAFETY: one cluster of two blocks of 64 threads, each writes out[64 rank + t].
    let e = failure(unsafe { swaps_through_the_cluster::Kernel::<2>::launch(&device, config, &mut out) });
    let text = e.to_string();
    assert!(
        text.contains("shared-memory data race")
            && text.contains("`barrier.cluster.arrive.relaxed` alone releases nothing"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "at {}, line",
            at("swaps_through_the_cluster", "let v = load_cluster(s, t, 1 - rank);")
        )),
        "{text}"
    );
}

/// Each block of a cluster of two pushes its values into the other
/// block's shared array (`store_cluster`), then reads its own array.
/// `SYNC` 1: pushed once both blocks have started (a cluster barrier
/// phase), read after a cluster barrier; 0: read before it (a race with
/// the other block's push); 2: pushed before this thread waited on any
/// cluster barrier (the other block may not have started).
#[kernel(targets(sm_90), specialize(SYNC = [0, 1, 2]))]
pub fn pushes_through_the_cluster<const SYNC: u32>(out: &mut [u32]) {
    let s = shared_array::<u32, 64>();
    let t = thread_idx_x();
    let rank = cluster_cta_rank();
    if SYNC != 2 {
        cluster_arrive_relaxed();
        cluster_wait();
    }
    store_cluster(s, t, 100 * rank + t, 1 - rank);
    if SYNC != 0 {
        cluster_sync();
    }
    out[(64 * rank + t) as usize] = s[t];
    if SYNC == 0 {
        // Neither block exits while the other may still push.
        cluster_sync();
    }
}

#[test]
fn a_push_into_another_block_is_read_after_a_cluster_barrier() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(128).expect("alloc");
    let config = LaunchConfig::new((2, 1, 1), (64, 1, 1)).with_cluster((2, 1, 1));
    let want: Vec<u32> = (0..128).map(|i| 100 * (1 - i / 64) + i % 64).collect();
    // SAFETY: one cluster of two blocks of 64 threads, each writes out[64 rank + t].
    unsafe { pushes_through_the_cluster::Kernel::<1>::launch(&device, config, &mut out) }.expect("barrier");
    assert_eq!(device.download(&out).expect("download"), want);
    let push = at(
        "pushes_through_the_cluster",
        "store_cluster(s, t, 100 * rank + t, 1 - rank);",
    );
    // SAFETY: as above.
    let e = failure(unsafe { pushes_through_the_cluster::Kernel::<0>::launch(&device, config, &mut out) });
    let text = e.to_string();
    assert!(text.contains("shared-memory data race"), "{text}");
    // The error names the Rust line of whichever access comes second.
    let read = at("pushes_through_the_cluster", "out[(64 * rank + t) as usize] = s[t];");
    assert!(
        text.contains(&format!("at {push}, line")) || text.contains(&format!("at {read}, line")),
        "{text}"
    );
    // SAFETY: as above.
    let e = failure(unsafe { pushes_through_the_cluster::Kernel::<2>::launch(&device, config, &mut out) });
    let text = e.to_string();
    assert!(
        text.contains("before this thread has waited on a cluster barrier")
            && text.contains("may not have started")
            && text.contains(&format!("at {push}, line")),
        "{text}"
    );
}

/// Thread 32 arrives on stage 0's mbarrier, then on stage `second`'s;
/// thread 0 waits for the first phase of each. With `second` 0 the
/// second arrive lands on the wrong stage: stage 0's barrier completes
/// two phases before thread 0 waits for the first.
#[kernel(targets(sm_90))]
pub fn two_stage_arrives(out: &mut [u32], second: u32) {
    let bars = shared_array::<u64, 2>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        mbarrier_init(bars, 1u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if t == 32 {
        mbarrier_arrive(bars, 0u32);
        mbarrier_arrive(bars, second);
    }
    sync_threads();
    if t == 0 {
        mbarrier_wait_parity(bars, 0u32, 0u32);
        mbarrier_wait_parity(bars, 1u32, 0u32);
    }
    out[t as usize] = t;
}

#[test]
fn an_arrive_on_the_wrong_stage_that_overruns_a_phase_is_an_error_naming_the_rust_lines() {
    for options in [
        nvfp4_dsl::emu::Options::sequential(),
        nvfp4_dsl::emu::Options::adversarial(1),
        nvfp4_dsl::emu::Options::priority(2),
    ] {
        let device = Device::emulator_with(Target::Sm90, options);
        let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
        // SAFETY: one block of 64 threads, each writes out[t].
        unsafe { two_stage_arrives::Kernel::launch(&device, LaunchConfig::linear(1, 64), &mut out, 1) }
            .expect("arrives on both stages");
        // SAFETY: as above; the emulator reports the overrun.
        let e =
            failure(unsafe { two_stage_arrives::Kernel::launch(&device, LaunchConfig::linear(1, 64), &mut out, 0) });
        let text = e.to_string();
        assert!(e.message().contains("mbarrier phase overrun"), "{text}");
        assert!(
            e.message().contains("completed phases 0 to 1 since its initialisation"),
            "{text}"
        );
        let wait = at("two_stage_arrives", "mbarrier_wait_parity(bars, 0u32, 0u32);");
        assert!(text.contains(&format!("at {wait}, line")), "{text}");
        let init = at("two_stage_arrives", "mbarrier_init(bars, 0u32, 1);");
        assert!(e.message().contains(&format!("initialised at {init} (line ")), "{text}");
    }
}

/// Block 0 writes `data`, then its thread 0 sets `flag`; block 1's thread
/// 0 reads the flag and, if it is set, block 1 reads the data (on a GPU
/// block 1 may run first and read nothing; the emulator runs block 0
/// first). `ORDER` 0: relaxed atomics; 1: release, then acquire; 2:
/// relaxed atomics after a fence (the writer's after the barrier) and
/// before one (the reader's); 3: as 2, but every writer thread fences
/// before the barrier, so thread 0's relaxed atomic releases only its own
/// write.
#[kernel(targets(sm_90), specialize(ORDER = [0, 1, 2, 3]))]
pub fn publishes_through_a_flag<const ORDER: u32>(data: &mut [u32], flag: &mut [u32], out: &mut [u32]) {
    let seen = shared_array::<u32, 1>();
    let t = thread_idx_x();
    if block_idx_x() == 0 {
        data[t as usize] = 7 * t + 1;
        if ORDER == 3 {
            fence_acq_rel_gpu();
        }
        sync_threads();
        if t == 0 {
            if ORDER == 1 {
                atomic_exch(flag, 0u32, 1, Order::Release, Scope::Gpu);
            } else {
                if ORDER == 2 {
                    fence_acq_rel_gpu();
                }
                atomic_exch(flag, 0u32, 1, Order::Relaxed, Scope::Gpu);
            }
        }
    } else {
        if t == 0 {
            if ORDER == 1 {
                seen[0u32] = atomic_or(flag, 0u32, 0, Order::Acquire, Scope::Gpu);
            } else {
                seen[0u32] = atomic_or(flag, 0u32, 0, Order::Relaxed, Scope::Gpu);
                if ORDER >= 2 {
                    fence_acq_rel_gpu();
                }
            }
        }
        sync_threads();
        if seen[0u32] == 1 {
            out[t as usize] = data[t as usize];
        }
    }
}

#[test]
fn blocks_order_global_memory_only_by_a_release_and_an_acquire() {
    let device = Device::emulator(Target::Sm90);
    let want: Vec<u32> = (0..64).map(|t| 7 * t + 1).collect();
    let run = |order: u32| {
        let mut data = device.alloc_zeroed::<u32>(64).expect("alloc");
        let mut flag = device.alloc_zeroed::<u32>(1).expect("alloc");
        let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
        let config = LaunchConfig::linear(2, 64);
        // SAFETY: two blocks of 64 threads; block 1 reads data[t] and writes out[t].
        let r = unsafe {
            match order {
                0 => publishes_through_a_flag::Kernel::<0>::launch(&device, config, &mut data, &mut flag, &mut out),
                1 => publishes_through_a_flag::Kernel::<1>::launch(&device, config, &mut data, &mut flag, &mut out),
                2 => publishes_through_a_flag::Kernel::<2>::launch(&device, config, &mut data, &mut flag, &mut out),
                _ => publishes_through_a_flag::Kernel::<3>::launch(&device, config, &mut data, &mut flag, &mut out),
            }
        };
        r.map(|()| device.download(&out).expect("download"))
    };
    assert_eq!(run(1).expect("release, acquire"), want);
    assert_eq!(run(2).expect("fences around relaxed atomics"), want);
    for order in [0, 3] {
        let e = failure(run(order).map(drop));
        let text = e.to_string();
        assert!(
            text.contains("global-memory data race")
                && text.contains("of block (0,0,0)")
                && text.contains("Order::Release or Order::AcqRel"),
            "{text}"
        );
        for statement in ["out[t as usize] = data[t as usize];", "data[t as usize] = 7 * t + 1;"] {
            let at = at("publishes_through_a_flag", statement);
            assert!(text.contains(&at), "{text}\nwants {at}");
        }
        // Under ORDER 3 thread 0's own write is released: thread 1 races.
        assert_eq!(e.thread(), Some((order / 3, 0, 0)), "{text}");
    }
}
