//! The emulator's errors name the Rust statement (`file:line: statement`,
//! and the inlined device function's) before the PTX line: kernels written
//! here fail on purpose and the error text is asserted.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, DeviceBuffer, Error, Target};

mod async_order;
mod flags;
mod its;
mod mistakes;
mod ptx_checks;
mod registers;

/// The files of this test, to find the lines the errors must name.
const SOURCES: [(&str, &str); 7] = [
    ("tests/emu_errors/main.rs", include_str!("main.rs")),
    ("tests/emu_errors/its.rs", include_str!("its.rs")),
    ("tests/emu_errors/async_order.rs", include_str!("async_order.rs")),
    ("tests/emu_errors/ptx_checks.rs", include_str!("ptx_checks.rs")),
    ("tests/emu_errors/mistakes.rs", include_str!("mistakes.rs")),
    ("tests/emu_errors/registers.rs", include_str!("registers.rs")),
    ("tests/emu_errors/flags.rs", include_str!("flags.rs")),
];

/// `file:line: `statement`` of each line of function `function` of these
/// files that holds `statement`.
fn at_in(function: &str, statement: &str) -> Vec<String> {
    let defines = |l: &str| l.contains(&format!("fn {function}(")) || l.contains(&format!("fn {function}<"));
    let (path, source, start) = SOURCES
        .iter()
        .find_map(|(path, source)| source.lines().position(defines).map(|start| (path, source, start)))
        .expect("the function is in one of the files");
    source
        .lines()
        .enumerate()
        .skip(start)
        .take_while(|(i, l)| *i == start || !l.starts_with('}'))
        .filter(|(_, l)| l.trim() == statement)
        .map(|(i, _)| format!("{path}:{}: `{statement}`", i + 1))
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

/// A kernel for Hopper only.
#[kernel(targets(sm_90a))]
pub fn hopper_only(out: &mut [u32]) {
    out[thread_idx_x() as usize] = 1;
}

#[test]
fn a_kernel_without_ptx_for_the_device_says_which_emulator_runs_it_and_debug_reads_the_same() {
    let device = Device::emulator(Target::Sm100a);
    let mut out = device.alloc_zeroed::<u32>(32).expect("alloc");
    // SAFETY: one block of 32 threads, thread t writes out[t].
    let err = unsafe { hopper_only::Kernel::launch(&device, LaunchConfig::linear(1, 32), &mut out) }
        .expect_err("no PTX for sm_100a");
    let text = err.to_string();
    assert!(
        text.starts_with("`hopper_only` has no PTX for a compute capability 10.0 device (compiled for sm_90a): run it on a device of that target, or on `Device::emulator(Target::Sm90a)`"),
        "{text}"
    );
    // What `fn main() -> Result<(), nvfp4_dsl::Error>` prints.
    assert_eq!(format!("{err:?}"), text);
}
