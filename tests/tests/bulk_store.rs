//! Bulk copies from shared to global memory (TMA stores,
//! `tests/src/bulk_store.rs`) on the emulator: the tile reaches global
//! memory, and the emulator checks the writers' proxy fence and the wait
//! before the tile is written again.

use nvfp4_dsl::{Device, Target};
use nvfp4_tests::bulk_store::{check, launch};
use nvfp4_tests::four_schedules;

#[test]
fn a_tile_stored_by_a_bulk_copy_reaches_global_memory() {
    for options in four_schedules() {
        check(&Device::emulator_with(Target::Sm90, options), 256).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn a_bulk_store_of_unfenced_shared_writes_is_an_error() {
    let x: Vec<u32> = (0..128).collect();
    for options in four_schedules() {
        let device = Device::emulator_with(Target::Sm90, options);
        let text = launch(&device, &x, 1).expect_err("no proxy fence").to_string();
        assert!(text.contains("fence.proxy.async"), "{text}");
        assert!(
            text.contains("cp_async_bulk_shared_to_global(y, block_idx_x() * 64, tile, 0u32, 256);"),
            "the message names the copy: {text}"
        );
    }
}

#[test]
fn writing_a_tile_a_bulk_store_still_reads_is_an_error() {
    let x: Vec<u32> = (0..128).collect();
    for options in four_schedules() {
        let device = Device::emulator_with(Target::Sm90, options);
        let text = launch(&device, &x, 2)
            .expect_err("no wait before the rewrite")
            .to_string();
        assert!(
            text.contains("tile[t] = x[i] + 1;"),
            "the message names the write: {text}"
        );
    }
}
