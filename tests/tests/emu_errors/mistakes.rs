//! Mistakes new users of the DSL made, and what the emulator says about
//! them: a bulk copy past the view it was launched on, a deadlock of
//! consumers that synchronise the whole block, wrong mbarrier counts, a
//! block larger than the kernel's launch bounds (or than 1024 threads),
//! dynamic shared memory the launch did not give, shared bins never zeroed,
//! an MMA's accumulator read before its wait.

use super::*;

/// Block `b` copies tile `b` of `x` (64 u32, 256 bytes) into shared
/// memory with one bulk copy, then writes it to `out`.
#[kernel(targets(sm_90))]
pub fn copies_tiles(x: &[u32], out: &mut [u32]) {
    let bars = shared_array::<u64, 1>();
    let tile = shared_array::<u32, 64>();
    let t = thread_idx_x();
    let b = block_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if t == 0 {
        mbarrier_arrive_expect_tx(bars, 0u32, 256);
        cp_async_bulk_global_to_shared(tile, 0u32, x, b * 64, 256, bars, 0u32);
    }
    mbarrier_wait_parity(bars, 0u32, 0u32);
    out[(b * 64 + t) as usize] = tile[t as usize];
}

#[test]
fn a_bulk_copy_past_the_view_it_was_launched_on_is_an_error_naming_the_parameter() {
    let device = Device::emulator(Target::Sm90);
    let data: Vec<u32> = (0..128).collect();
    let buffer = device.upload(&data).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(128).expect("alloc");
    // Two tiles of a 96-element view: the second reads elements 64..128,
    // which the buffer holds but the view does not.
    let x = buffer.slice(0..96).expect("a view");
    // SAFETY: two blocks of 64 threads, each writes out[b * 64 + t]; the emulator checks the rest.
    let e = failure(unsafe { copies_tiles::Kernel::launch(&device, LaunchConfig::linear(2, 64), x, &mut out) });
    let text = e.to_string();
    assert_eq!((e.block(), e.thread()), (Some((1, 0, 0)), Some((0, 0, 0))), "{text}");
    let copy = at(
        "copies_tiles",
        "cp_async_bulk_global_to_shared(tile, 0u32, x, b * 64, 256, bars, 0u32);",
    );
    assert!(text.contains(&format!("at {copy}, line")), "{text}");
    assert!(
        e.message().contains("cp.async.bulk source read of 256 bytes at")
            && e.message().contains("is out of bounds of the view passed as `x`")
            && e.message()
                .contains("384 bytes), which its address was computed from: bytes 256..512 of it, past its end"),
        "{text}"
    );
    // The whole buffer holds both tiles.
    let x = buffer.slice(0..128).expect("a view");
    // SAFETY: as above.
    unsafe { copies_tiles::Kernel::launch(&device, LaunchConfig::linear(2, 64), x, &mut out) }.expect("in bounds");
    assert_eq!(device.download(&out).expect("download"), data);
}

/// Warp 0's thread 0 fills a ring of two slots of `x`'s tiles; warps 1
/// and 2 consume them and then agree that the slot is read with
/// `sync_threads()`, which also waits for the producer (it waits for a
/// free slot): they needed a barrier of their own 64 threads.
#[kernel(targets(sm_90))]
pub fn consumers_sync_the_whole_block(x: &[u32], out: &mut [u32], named: u32) {
    let full = shared_array::<u64, 2>();
    let empty = shared_array::<u64, 2>();
    let ring = shared_array::<u32, 128>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(full, 0u32, 1);
        mbarrier_init(full, 1u32, 1);
        mbarrier_init(empty, 0u32, 64);
        mbarrier_init(empty, 1u32, 64);
        fence_mbarrier_init();
    }
    sync_threads();
    if t == 0 {
        for k in 0..4u32 {
            let s = k % 2;
            if k >= 2 {
                mbarrier_wait_parity(empty, s, 0u32);
            }
            mbarrier_arrive_expect_tx(full, s, 256);
            cp_async_bulk_global_to_shared(ring, s * 64, x, k * 64, 256, full, s);
        }
    } else if t >= 32 {
        let c = t - 32;
        for k in 0..4u32 {
            let s = k % 2;
            mbarrier_wait_parity(full, s, k / 2);
            out[(k * 64 + c) as usize] = ring[(s * 64 + c) as usize];
            if named == 1 {
                named_barrier_sync(1, 64);
            } else {
                sync_threads();
            }
            mbarrier_arrive(empty, s);
        }
    }
}

#[test]
fn a_deadlock_names_the_rust_line_of_every_waiting_warp_and_a_barrier_for_a_subset() {
    let device = Device::emulator(Target::Sm90);
    let data: Vec<u32> = (0..256).map(|i| i * 3 + 1).collect();
    let x = device.upload(&data).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(256).expect("alloc");
    // SAFETY: one block of 96 threads, consumers write out[k * 64 + c]; the emulator checks the rest.
    let launch = |out: &mut DeviceBuffer<u32>, named: u32| unsafe {
        consumers_sync_the_whole_block::Kernel::launch(&device, LaunchConfig::linear(1, 96), &x, out, named)
    };
    let e = failure(launch(&mut out, 0));
    let text = e.to_string();
    assert!(e.message().contains("mbarrier wait can never complete"), "{text}");
    let wait = at(
        "consumers_sync_the_whole_block",
        "mbarrier_wait_parity(empty, s, 0u32);",
    );
    assert!(text.contains(&format!("at {wait}, line")), "{text}");
    let mut sync = at_in("consumers_sync_the_whole_block", "sync_threads();");
    assert_eq!(sync.len(), 2, "{sync:?}");
    // The consumers wait at the second `sync_threads()`, named by its
    // Rust line in the list of where the warps are.
    let sync = sync.remove(1);
    for warp in [1, 2] {
        assert!(
            text.contains(&format!("warp {warp}: lanes 0-31 wait at barrier 0 ({sync}, line ")),
            "{text}"
        );
    }
    assert!(
        text.contains("warp 0: lane 0 wait at the mbarrier at ")
            && text.contains(&format!("for parity 0 ({wait}, line ")),
        "{text}"
    );
    assert!(
        e.message()
            .contains("threads that synchronise a subset of the block among themselves (the consumer warps of a pipeline, say) need `named_barrier_sync(id, threads)` instead"),
        "{text}"
    );
    // With a barrier of their own the consumers run.
    launch(&mut out, 1).expect("the named barrier");
    assert_eq!(device.download(&out).expect("download"), data);
}

/// Thread 0 announces `expect` transaction bytes and copies 256 bytes of
/// `x` (64 u32); the block reads them after its wait.
#[kernel(targets(sm_90))]
pub fn expects_bytes(x: &[u32], out: &mut [u32], expect: u32) {
    let bars = shared_array::<u64, 1>();
    let tile = shared_array::<u32, 64>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if t == 0 {
        mbarrier_arrive_expect_tx(bars, 0u32, expect);
        cp_async_bulk_global_to_shared(tile, 0u32, x, 0u32, 256, bars, 0u32);
    }
    mbarrier_wait_parity(bars, 0u32, 0u32);
    out[t as usize] = tile[t as usize];
}

#[test]
fn a_wrong_expect_tx_count_names_the_expect_tx_and_the_bytes_expected_and_landed() {
    let device = Device::emulator(Target::Sm90);
    let data: Vec<u32> = (0..64).map(|i| i * 5 + 2).collect();
    let x = device.upload(&data).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    // SAFETY: one block of 64 threads, each writes out[t]; the emulator checks the rest.
    let mut launch = |expect: u32| unsafe {
        expects_bytes::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut out, expect)
    };
    let expect_tx = at("expects_bytes", "mbarrier_arrive_expect_tx(bars, 0u32, expect);");
    // The count of elements, not of bytes: the copy's bytes overshoot it.
    let e = failure(launch(64));
    let text = e.to_string();
    let copy = at(
        "expects_bytes",
        "cp_async_bulk_global_to_shared(tile, 0u32, x, 0u32, 256, bars, 0u32);",
    );
    assert!(text.contains(&format!("at {copy}, line")), "{text}");
    assert!(
        e.message().contains(&format!(
            "192 more transaction bytes than expected in phase 0 of the mbarrier at shared address 0x400 (phase 0, 0 of 1 arrivals pending, -192 transaction bytes pending) (every arrival is in): phase 0 expects 64 transaction bytes (set by the expect_tx at {expect_tx} (line "
        )) && e.message().contains("), and 256 landed; the expected count is in bytes: the total size of the phase's copies"),
        "{text}"
    );
    // More bytes than the copy brings: the wait never completes.
    let e = failure(launch(1024));
    let text = e.to_string();
    assert!(e.message().contains("mbarrier wait can never complete"), "{text}");
    assert!(
        e.message().contains(&format!(
            "no copy is pending: phase 0 expects 1024 transaction bytes (set by the expect_tx at {expect_tx}, line "
        )) && e
            .message()
            .contains("), and 256 landed, so 768 bytes will never land; the expected count is in bytes"),
        "{text}"
    );
    launch(256).expect("the copy's bytes");
    assert_eq!(device.download(&out).expect("download"), data);
}

/// Thread 0 announces the bytes of both stages of a two-stage ring, then
/// copies a tile into each; `wrong` announces both on stage 0's barrier.
#[kernel(targets(sm_90))]
pub fn announces_both_stages(x: &[u32], out: &mut [u32], wrong: u32) {
    let full = shared_array::<u64, 2>();
    let ring = shared_array::<u32, 128>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(full, 0u32, 1);
        mbarrier_init(full, 1u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    if t == 0 {
        for s in 0..2u32 {
            mbarrier_arrive_expect_tx(full, s * (1 - wrong), 256);
        }
        for s in 0..2u32 {
            cp_async_bulk_global_to_shared(ring, s * 64, x, s * 64, 256, full, s);
        }
    }
    for s in 0..2u32 {
        mbarrier_wait_parity(full, s, 0u32);
        out[(s * 64 + t) as usize] = ring[(s * 64 + t) as usize];
    }
}

#[test]
fn an_arrive_on_a_phase_already_complete_says_what_it_usually_means_and_names_the_init() {
    let device = Device::emulator(Target::Sm90);
    let data: Vec<u32> = (0..128).map(|i| i * 7 + 1).collect();
    let x = device.upload(&data).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(128).expect("alloc");
    // SAFETY: one block of 64 threads, each writes out[s * 64 + t]; the emulator checks the rest.
    let mut launch = |wrong: u32| unsafe {
        announces_both_stages::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut out, wrong)
    };
    let e = failure(launch(1));
    let text = e.to_string();
    let expect_tx = at(
        "announces_both_stages",
        "mbarrier_arrive_expect_tx(full, s * (1 - wrong), 256);",
    );
    assert!(text.contains(&format!("at {expect_tx}, line")), "{text}");
    let init = at("announces_both_stages", "mbarrier_init(full, 0u32, 1);");
    assert!(
        e.message().contains(&format!(
            "1 arrivals on the mbarrier at shared address 0x400 (phase 0, 0 of 1 arrivals pending, 256 transaction bytes pending): more than are pending. This usually means an arrive for a phase that already completed: a slot refilled before its consumers released it (the producer did not wait for the slot's empty barrier), or an arrive on the wrong stage's barrier. The barrier was initialised at {init} (line "
        )) && e.message().contains(") with a count of 1 arrivals per phase"),
        "{text}"
    );
    launch(0).expect("one announcement per stage");
    assert_eq!(device.download(&out).expect("download"), data);
}

/// Thread 0 initialises the same mbarrier twice.
#[kernel(targets(sm_90))]
pub fn inits_twice(out: &mut [u32]) {
    let bars = shared_array::<u64, 1>();
    let t = thread_idx_x();
    if t == 0 {
        mbarrier_init(bars, 0u32, 1);
        mbarrier_init(bars, 0u32, 2);
    }
    out[t as usize] = t;
}

#[test]
fn a_second_init_of_a_live_mbarrier_names_the_first_by_its_rust_line() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(32).expect("alloc");
    // SAFETY: one warp, each thread writes out[t].
    let e = failure(unsafe { inits_twice::Kernel::launch(&device, LaunchConfig::linear(1, 32), &mut out) });
    let text = e.to_string();
    let (first, second) = (
        at("inits_twice", "mbarrier_init(bars, 0u32, 1);"),
        at("inits_twice", "mbarrier_init(bars, 0u32, 2);"),
    );
    assert!(text.contains(&format!("at {second}, line")), "{text}");
    assert!(
        e.message()
            .contains(&format!("which the mbarrier.init at {first} (line "))
            && e.message().contains("invalidate it first"),
        "{text}"
    );
}

/// Every thread writes `out[i]`; at most 256 threads a block.
#[kernel(targets(sm_90), launch_bounds(256))]
pub fn bounded_to_256(out: &mut [u32]) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    out[i as usize] = i;
}

#[test]
fn a_block_past_the_kernels_launch_bounds_says_what_to_launch_or_to_raise() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(1024).expect("alloc");
    // SAFETY: 1024 threads write out[0..1024]; the emulator checks the launch.
    let e = failure(unsafe { bounded_to_256::Kernel::launch(&device, LaunchConfig::linear(2, 512), &mut out) });
    assert_eq!(e.kernel(), Some("bounded_to_256"), "{e}");
    assert_eq!(
        e.message(),
        "a block of 512 threads exceeds the kernel's .maxntid 256, 1, 1 (256 threads): launch at most 256 threads per block, or raise the kernel's bound to at least 512 (`#[kernel(launch_bounds(512))]` writes `.maxntid 512, 1, 1`)"
    );
    // SAFETY: as above, in blocks of 256.
    unsafe { bounded_to_256::Kernel::launch(&device, LaunchConfig::linear(4, 256), &mut out) }
        .expect("within the bounds");
    assert_eq!(
        device.download(&out).expect("download"),
        (0..1024).collect::<Vec<u32>>()
    );
}

#[test]
fn a_block_of_more_than_1024_threads_names_the_kernel() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(2048).expect("alloc");
    // SAFETY: the launch is refused before it runs.
    let e = unsafe { bounded_to_256::Kernel::launch(&device, LaunchConfig::linear(1, 2048), &mut out) }
        .expect_err("2048 threads a block");
    assert_eq!(
        e.to_string(),
        "invalid launch: kernel `bounded_to_256`: a block has 2048 threads; it must have 1..=1024"
    );
}

/// Copies `x` through the dynamic shared memory the launch gives (the
/// value stored is an `if`'s).
#[kernel(targets(sm_90))]
pub fn through_dynamic_shared(x: &[f32], out: &mut [f32], n: u32) {
    let tile = dynamic_shared::<f32>(0u32);
    let t = thread_idx_x();
    tile[t] = if t < n { x[t as usize] } else { 0.0 };
    sync_threads();
    out[t as usize] = tile[31 - t];
}

#[test]
fn dynamic_shared_memory_the_launch_did_not_give_says_how_to_give_it() {
    let device = Device::emulator(Target::Sm90);
    let x: Vec<f32> = (0..32).map(|i| i as f32 * 0.5).collect();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.alloc_zeroed::<f32>(32).expect("alloc");
    // SAFETY: one warp; the emulator checks the shared accesses.
    let e = failure(unsafe {
        through_dynamic_shared::Kernel::launch(&device, LaunchConfig::linear(1, 32), &dx, &mut out, 32)
    });
    // The store is the statement's (its blocks shown as `{ ... }`), not
    // the `else` branch's `0.0`.
    assert!(
        e.to_string()
            .contains("`tile[t] = if t < n { ... } else { ... };`, line"),
        "{e}"
    );
    assert!(
        e.message().contains(
            "the launch gave the kernel no dynamic shared memory: launch with `LaunchConfig::with_shared_bytes(bytes)`"
        ),
        "{e}"
    );
    let config = LaunchConfig::linear(1, 32).with_shared_bytes(128);
    // SAFETY: as above, with the 128 bytes the tile needs.
    unsafe { through_dynamic_shared::Kernel::launch(&device, config, &dx, &mut out, 32) }.expect("with the bytes");
    let want: Vec<f32> = x.iter().rev().copied().collect();
    assert_eq!(device.download(&out).expect("download"), want);
}

/// Counts the values of `x` modulo 16 into shared bins and adds the bins
/// to `counts`; with `zero` 0 the bins are never set to zero.
#[kernel(targets(sm_90))]
pub fn histogram_of_16(x: &[u32], counts: &mut [u32], zero: u32) {
    let bins = shared_array::<u32, 16>();
    let t = thread_idx_x();
    if zero == 1 && t < 16 {
        bins[t] = 0;
    }
    sync_threads();
    atomic_add(bins, x[t as usize] % 16, 1u32, Order::Relaxed, Scope::Cta);
    sync_threads();
    if t < 16 {
        atomic_add(counts, t, bins[t], Order::Relaxed, Scope::Gpu);
    }
}

#[test]
fn a_read_of_shared_memory_nothing_wrote_is_an_error_naming_the_rust_line() {
    let device = Device::emulator(Target::Sm90);
    let data: Vec<u32> = (0..64).map(|i| i * 7 % 23).collect();
    let x = device.upload(&data).expect("upload");
    let mut counts = device.alloc_zeroed::<u32>(16).expect("alloc");
    // SAFETY: one block of 64 threads reads x[t]; threads below 16 add to counts[t].
    let mut launch = |zero: u32| unsafe {
        histogram_of_16::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut counts, zero)
    };
    let e = failure(launch(0));
    let text = e.to_string();
    let update = at(
        "histogram_of_16",
        "atomic_add(bins, x[t as usize] % 16, 1u32, Order::Relaxed, Scope::Cta);",
    );
    assert!(text.contains(&format!("at {update}, line")), "{text}");
    assert!(
        e.message().starts_with("read of unwritten shared memory: this thread atomically updates shared memory 0x4")
            && e.message().contains("of `histogram_of_16_smem0`), which no thread of the block has written and no copy has filled since the block started")
            && e.message().contains("Write it before reading it (set a histogram's bins or a sum's accumulator first, then sync_threads())"),
        "{text}"
    );
    launch(1).expect("zeroed bins");
    let mut want = vec![0u32; 16];
    data.iter().for_each(|v| want[(v % 16) as usize] += 1);
    assert_eq!(device.download(&counts).expect("download"), want);
}

/// One warpgroup's MMA (A a constant fragment of ones, B from `b`), its
/// accumulator read before the `wgmma_wait_group` that completes it when
/// `early`, after it otherwise.
#[kernel(targets(sm_90a))]
pub fn reads_an_accumulator_early(b: &[u32], d: &mut [f32], early: bool) {
    let smem = dynamic_shared::<u32>(0);
    let t = thread_idx_x() as usize;
    if t < 64 {
        smem[t] = b[t];
    }
    fence_proxy_async_shared();
    sync_threads();
    let frag = [f16x2::from_bits(0x3C00_3C00); 4];
    let desc = WgmmaDesc::new(shared_address(smem, 0))
        .with_leading_byte_offset(128)
        .with_stride_byte_offset(128);
    let mut acc = [0.0f32; 4];
    wgmma_fence();
    wgmma_f16_rs(&mut acc, frag, desc, false);
    wgmma_commit_group();
    if early {
        d[t] = acc[0];
    }
    wgmma_wait_group(0);
    if !early {
        d[t] = acc[0];
    }
}

#[test]
fn an_accumulator_read_before_its_wait_names_the_mma_s_rust_line() {
    let device = Device::emulator(Target::Sm90a);
    let b = device.upload(&[0x3C00_3C00u32; 64]).expect("upload");
    let mut d = device.alloc_zeroed::<f32>(128).expect("alloc");
    let config = LaunchConfig {
        shared_bytes: 256,
        ..LaunchConfig::linear(1, 128)
    };
    // A constant fragment goes into registers after the kernel's
    // `wgmma_fence()`; the compiler fences them: read after the wait, each
    // sum is 16 products of ones.
    // SAFETY: one warpgroup; b has 64 words, d 128 floats.
    unsafe { reads_an_accumulator_early::Kernel::launch(&device, config, &b, &mut d, false) }.expect("after the wait");
    assert_eq!(device.download(&d).expect("download"), vec![16.0f32; 128]);
    // SAFETY: as above.
    let e = failure(unsafe { reads_an_accumulator_early::Kernel::launch(&device, config, &b, &mut d, true) });
    let text = e.to_string();
    let mma = at(
        "reads_an_accumulator_early",
        "wgmma_f16_rs(&mut acc, frag, desc, false);",
    );
    assert!(
        text.contains("read of wgmma accumulator")
            && text.contains(&format!(
                "before the wgmma.wait_group that completes the wgmma.mma_async at {mma} (line"
            )),
        "{text}"
    );
    assert!(
        at_in("reads_an_accumulator_early", "d[t] = acc[0];")
            .iter()
            .any(|read| text.contains(&format!("at {read}, line"))),
        "{text}"
    );
}
