//! Blocks in parallel (`Options::threads`) and the fast mode
//! (`Options::fast`): the same options give the same memory, statistics
//! and errors on any number of threads; kernels with global atomics run
//! their blocks in grid order; the fast mode skips the race checks and
//! nothing else.

use nvfp4_dsl::emu::{EmuError, Launch, LaunchStats, Memory, Module, Options, ParamValue};

mod common;
use common::{assert_error, download_u32, linear};

const HEAD: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// A module with one entry `k(.param .u64 out)` whose body starts with
/// `%rd1` = out, `%r1` = %tid.x, `%r2` = %ctaid.x, `%r3` = the thread's
/// index in the grid and `%rd2` = &out[%r3].
fn module(body: &str) -> (Module, String) {
    let src = format!(
        "{HEAD}.shared .align 16 .b8 buf[1024];\n.visible .entry k(.param .u64 out)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<16>;\n\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmad.lo.u32 %r3, %r2, %r4, %r1;\n\tmul.wide.u32 %rd3, %r3, 4;\n\tadd.s64 %rd2, %rd1, %rd3;\n{body}\tret;\n}}\n"
    );
    match Module::parse(&src) {
        Ok(m) => (m, src),
        Err(e) => panic!("{e}\n{src}"),
    }
}

/// Runs `k` over `launch` with a 64 KiB output buffer under `options`:
/// the output words and the statistics, or the error.
fn run(m: &Module, launch: &Launch, options: &Options) -> Result<(Vec<u32>, LaunchStats), EmuError> {
    let mut mem = Memory::new();
    let out = mem.alloc(1 << 16, true);
    let stats = m.launch_with("k", launch, &[ParamValue::U64(out)], &mut mem, options)?;
    Ok((download_u32(&mem, out, 1 << 14), stats))
}

/// Every schedule the tests run, on one thread.
fn schedules() -> [Options; 4] {
    [
        Options::adversarial(7),
        Options::priority(3),
        Options::sequential(),
        Options::fast(),
    ]
}

#[test]
fn the_same_seed_gives_the_same_run_on_any_number_of_threads() {
    // Each thread stores its block's clock (warp instructions so far,
    // which depends on the order of the block's warps) after a barrier.
    let (m, _) = module("\tbar.sync 0;\n\tmov.u32 %r5, %clock;\n\tst.global.u32 [%rd2], %r5;\n");
    let launch = linear(64, 128, 0);
    for options in schedules() {
        let one = run(&m, &launch, &options.with_threads(1)).expect("launch");
        assert_eq!(one.1.blocks, 64);
        for threads in [2, 3, 8] {
            let many = run(&m, &launch, &options.with_threads(threads)).expect("launch");
            assert_eq!(one, many, "{options:?} on {threads} threads");
        }
    }
    // The schedule depends on the seed (and so the clocks read).
    let a = run(&m, &launch, &Options::adversarial(1)).expect("launch");
    let b = run(&m, &launch, &Options::adversarial(2)).expect("launch");
    assert_ne!(a.0, b.0);
}

#[test]
fn the_first_failing_block_in_grid_order_is_reported_on_any_number_of_threads() {
    // Blocks 5 and up store out of bounds (the 4th word past the end).
    let (m, src) = module(
        "\tsetp.lt.u32 %p1, %r2, 5;\n\t@%p1 bra DONE;\n\tadd.s64 %rd4, %rd1, 65548;\n\tst.global.u32 [%rd4], %r1;\nDONE:\n",
    );
    let launch = linear(200, 32, 0);
    for options in schedules() {
        for threads in [1, 2, 4] {
            let e = run(&m, &launch, &options.with_threads(threads)).expect_err("out of bounds");
            assert_error(&e, &src, "st.global.u32 [%rd4]", (5, 0, 0), (0, 0, 0), "out of bounds");
        }
    }
}

#[test]
fn kernels_with_global_atomics_run_their_blocks_one_after_another_in_a_seeded_order() {
    // Thread 0 of each block takes a ticket from a counter (the word past
    // the outputs) and stores it at its block's index: the tickets are
    // the order the blocks ran in. One after another: a permutation of the
    // blocks, grid order under the sequential schedule, the seed's order
    // under the others, the same on any number of threads.
    let (m, _) = module(
        "\tsetp.ne.u32 %p1, %r1, 0;\n\t@%p1 bra DONE;\n\tadd.s64 %rd4, %rd1, 32768;\n\tatom.global.add.u32 %r5, [%rd4], 1;\n\tmul.wide.u32 %rd5, %r2, 4;\n\tadd.s64 %rd6, %rd1, %rd5;\n\tst.global.u32 [%rd6], %r5;\nDONE:\n",
    );
    let launch = linear(100, 64, 0);
    let grid_order: Vec<u32> = (0..100).collect();
    let mut orders = Vec::new();
    for options in schedules() {
        let (first, _) = run(&m, &launch, &options.with_threads(1)).expect("launch");
        let mut tickets = first[..100].to_vec();
        tickets.sort_unstable();
        assert_eq!(tickets, grid_order, "{options:?}: one ticket a block");
        assert_eq!(first[8192], 100);
        let (again, _) = run(&m, &launch, &options.with_threads(4)).expect("launch");
        assert_eq!(first[..100], again[..100], "{options:?} on 4 threads");
        if matches!(options.schedule, nvfp4_dsl::emu::Schedule::Sequential) {
            assert_eq!(first[..100], grid_order, "{options:?}");
        }
        orders.push(first[..100].to_vec());
    }
    assert!(
        orders.iter().any(|o| *o != grid_order),
        "some seed runs the blocks out of grid order"
    );
}

#[test]
fn the_fast_mode_skips_the_race_checks_only() {
    // Threads 0 and 32 store to the same shared word with no barrier
    // between them: a race in the checked modes, the last store in the
    // fast mode (`barrier.sync`, not the `.aligned` `bar.sync`: one lane
    // of each warp reaches it).
    let (m, src) = module(
        "\tand.b32 %r6, %r1, 31;\n\tsetp.ne.u32 %p1, %r6, 0;\n\t@%p1 bra DONE;\n\tmov.u32 %r7, buf;\n\tst.shared.u32 [%r7], %r1;\n\tbarrier.sync 0;\n\tld.shared.u32 %r8, [%r7];\n\tst.global.u32 [%rd2], %r8;\nDONE:\n",
    );
    let launch = linear(1, 64, 0);
    let e = run(&m, &launch, &Options::sequential()).expect_err("a race");
    assert_error(&e, &src, "st.shared.u32 [%r7]", (0, 0, 0), (32, 0, 0), "race");
    let (out, _) = run(&m, &launch, &Options::fast()).expect("no race check");
    assert_eq!((out[0], out[32]), (32, 32));
    // Every other check stays: an out-of-bounds store.
    let launch = linear(1, 32, 0);
    let (m, _) = module("\tadd.s64 %rd4, %rd1, 65536;\n\tst.global.u32 [%rd4], %r1;\n");
    let e = run(&m, &launch, &Options::fast()).expect_err("out of bounds");
    assert!(e.message().contains("out of bounds"), "{e}");
}
