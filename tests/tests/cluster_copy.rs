//! Bulk copies into the other block of a cluster and arrives on its
//! mbarrier (`tests/src/cluster_copy.rs`) on the emulator: the tiles
//! arrive, and the emulator reports the inbox read before the wait, a
//! second tile sent before the receiver said its inbox was free, and a
//! block that exits while its copy still reads its tile; and a block
//! that bulk-copies what the other block of its cluster stored once a
//! flag says so (`tests/src/flag_spin.rs`), with the errors of a relaxed
//! poll, a missing proxy fence and a proxy fence after the release; and
//! values pushed into the other block by asynchronous stores
//! (`tests/src/store_async.rs`), with the errors of a read before the wait
//! and of stores before the other block is known to have started.

use nvfp4_dsl::emu::Options;
use nvfp4_dsl::{Device, Target};
use nvfp4_tests::cluster_copy::{check, launch};
use nvfp4_tests::{flag_spin, four_schedules, store_async};

#[test]
fn tiles_copied_into_the_other_block_of_a_cluster_arrive() {
    for options in four_schedules() {
        check(&Device::emulator_with(Target::Sm90, options), 512).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn reading_the_inbox_before_the_copy_s_mbarrier_wait_is_an_error() {
    let x: Vec<u32> = (0..256).collect();
    for options in four_schedules() {
        let device = Device::emulator_with(Target::Sm90, options);
        let text = launch(&device, &x, 1).expect_err("no wait").to_string();
        assert!(text.contains("y[i] = inbox[t];"), "the message names the read: {text}");
    }
}

#[test]
fn a_second_tile_sent_before_the_receiver_freed_its_inbox_is_an_error() {
    let x: Vec<u32> = (0..256).collect();
    for options in four_schedules() {
        let device = Device::emulator_with(Target::Sm90, options);
        let text = launch(&device, &x, 3).expect_err("no wait on free").to_string();
        // The tile rewritten while the first copy reads it, or the second
        // copy issued while the receiver may still read its inbox.
        assert!(
            text.contains("tile[t] = x[i] + 7 + rank;") || text.contains("cp_async_bulk_shared_to_cluster("),
            "the message names the write or the copy: {text}"
        );
    }
}

#[test]
fn a_block_that_exits_while_its_copy_reads_its_tile_is_an_error() {
    // On the schedules where a block's copy has not completed when the
    // block exits (with the sequential one a copy completes at its issue).
    let x: Vec<u32> = (0..256).collect();
    let mut caught = 0;
    for seed in 1..=16 {
        let device = Device::emulator_with(Target::Sm90, Options::adversarial(seed));
        if let Err(e) = launch(&device, &x, 2) {
            let text = e.to_string();
            assert!(
                text.contains("exited with this cp.async.bulk still in flight"),
                "{text}"
            );
            assert!(
                text.contains("cp_async_bulk_shared_to_cluster("),
                "the message names the copy: {text}"
            );
            caught += 1;
        }
    }
    assert!(
        caught > 0,
        "no schedule of 16 let a block exit before its copy completed"
    );
}

#[test]
fn a_block_spinning_on_a_flag_does_not_hold_back_the_copy_the_other_block_waits_for() {
    // Block 0 of each cluster spins until block 1 sets a flag, which block
    // 1 does once its bulk copy landed: under every schedule the copy
    // completes (the emulator completes a block's asynchronous operations
    // once none of its warps can run, even while another block's do).
    let x: Vec<u32> = (0..256u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 5).collect();
    for options in four_schedules() {
        let options = nvfp4_dsl::emu::Options {
            max_warp_instructions: Some(1 << 20),
            ..options
        };
        flag_spin::check(&Device::emulator_with(Target::Sm90, options), &x).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// `spin_on_flag` with `mistake` on four schedules: the error each time,
/// which must name the copy of `y` and the store to it.
fn spin_errors(mistake: u32) -> Vec<String> {
    let x: Vec<u32> = (0..256u32).collect();
    four_schedules()
        .into_iter()
        .map(|options| {
            let options = Options {
                max_warp_instructions: Some(1 << 20),
                ..options
            };
            let device = Device::emulator_with(Target::Sm90, options);
            let text = flag_spin::launch(&device, &x, mistake)
                .expect_err("a mistake")
                .to_string();
            assert!(
                text.contains("cp_async_bulk_global_to_shared(tile, 0u32, y,") && text.contains("y[i] = tile[t] * 2;"),
                "the message names the copy and the store: {text}"
            );
            text
        })
        .collect()
}

#[test]
fn a_bulk_copy_of_another_block_s_stores_after_a_relaxed_poll_is_a_race() {
    // The poll that sees the flag is relaxed: nothing orders the other
    // block's stores of `y` before the bulk copy that reads them.
    for text in spin_errors(flag_spin::RELAXED_POLL) {
        assert!(text.contains("global-memory data race"), "{text}");
    }
}

#[test]
fn a_bulk_copy_of_stores_released_without_a_proxy_fence_is_an_error() {
    // The stores of `y` are ordered before the copy by the release and
    // the acquire, but the copy reads through the async proxy, which
    // sees plain stores only after the writer's proxy fence.
    for text in spin_errors(flag_spin::NO_PROXY_FENCE) {
        assert!(text.contains("missing fence_proxy_async_global()"), "{text}");
    }
}

#[test]
fn a_proxy_fence_after_the_release_is_an_error() {
    // Each writer's fence comes after the barrier and the release that
    // order its store before the copy: nothing orders the fence itself.
    for text in spin_errors(flag_spin::FENCE_AFTER_RELEASE) {
        assert!(
            text.contains("fence_proxy_async_global() at src/flag_spin.rs:")
                && text.contains("is not ordered before the copy"),
            "{text}"
        );
    }
}

#[test]
fn values_stored_asynchronously_into_the_other_block_arrive() {
    // No cluster barrier after the stores: a block may exit before its
    // stores land, the receiver's wait covers them.
    for options in four_schedules() {
        store_async::check(&Device::emulator_with(Target::Sm90, options), 512).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn reading_what_asynchronous_stores_bring_before_their_mbarrier_wait_is_an_error() {
    let x: Vec<u32> = (0..256).collect();
    for options in four_schedules() {
        let device = Device::emulator_with(Target::Sm90, options);
        let text = store_async::launch(&device, &x, store_async::NO_WAIT)
            .expect_err("no wait")
            .to_string();
        assert!(
            text.contains("let got = inbox[t];"),
            "the message names the read: {text}"
        );
    }
}

#[test]
fn asynchronous_stores_before_the_cluster_barrier_are_an_error() {
    let x: Vec<u32> = (0..256).collect();
    for options in four_schedules() {
        let device = Device::emulator_with(Target::Sm90, options);
        let text = store_async::launch(&device, &x, store_async::NO_CLUSTER_BARRIER)
            .expect_err("no cluster barrier")
            .to_string();
        assert!(
            text.contains("store_async_cluster(inbox, t,"),
            "the message names the store: {text}"
        );
    }
}
