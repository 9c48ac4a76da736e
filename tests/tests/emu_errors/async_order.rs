//! Item 5 of issue 24: mbarrier init fences and phase overruns,
//! programmatic dependent launch, relaxed cluster arrives, pushes into
//! another block, and global memory ordered only by release and acquire.

use super::*;

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

/// Lets the next kernel launch, then waits for the kernel before it and
/// writes `out[t]`.
#[kernel(targets(sm_90))]
pub fn triggers_then_waits(out: &mut [u32]) {
    launch_dependents();
    grid_dependency_wait();
    let t = thread_idx_x() as usize;
    out[t] = 3;
}

/// Waits in both branches of an `if`, then lets the next kernel launch.
#[kernel(targets(sm_90))]
pub fn waits_in_branches(out: &mut [u32], first: bool) {
    let t = thread_idx_x() as usize;
    if first {
        grid_dependency_wait();
        out[t] = 1;
    } else {
        out[t] = 2;
        grid_dependency_wait();
    }
    launch_dependents();
}

/// Waits in one branch of an `if` only, then lets the next kernel launch.
#[kernel(targets(sm_90))]
pub fn waits_in_one_branch(out: &mut [u32], first: bool) {
    if first {
        grid_dependency_wait();
    }
    launch_dependents();
    let t = thread_idx_x() as usize;
    out[t] = 1;
}

/// Waits in a loop (which may run no time), then lets the next kernel
/// launch.
#[kernel(targets(sm_90))]
pub fn waits_in_a_loop(out: &mut [u32], n: u32) {
    for _ in 0..n {
        grid_dependency_wait();
    }
    launch_dependents();
    let t = thread_idx_x() as usize;
    out[t] = 1;
}

#[test]
fn a_wait_counts_before_a_trigger_only_where_every_path_to_it_waits() {
    assert!(!waits_in_branches::Kernel::VARIANT.triggers_early);
    assert!(waits_in_one_branch::Kernel::VARIANT.triggers_early);
    assert!(waits_in_a_loop::Kernel::VARIANT.triggers_early);
}

#[test]
fn a_kernel_that_triggers_before_its_wait_leaves_its_predecessors_writes_running() {
    assert!(triggers_then_waits::Kernel::VARIANT.triggers_early);
    assert!(!reads_after_its_wait::Kernel::VARIANT.triggers_early);
    let device = Device::emulator(Target::Sm90);
    let mut x = device.alloc_zeroed::<u32>(64).expect("alloc");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    let mut other = device.alloc_zeroed::<u32>(64).expect("alloc");
    let config = LaunchConfig::linear(1, 64);
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { writes_below::Kernel::launch(&device, config, &mut x, 64) }.expect("fills x");
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { triggers_then_waits::Kernel::launch(&device, config, &mut other) }.expect("triggers");
    // The kernel after `triggers_then_waits` may start while `writes_below`
    // still runs: the runtime says so, and the emulator agrees.
    assert!(device.written_by_running_kernel(&x), "writes_below may still run");
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    let e = failure(unsafe { reads_before_its_wait::Kernel::launch(&device, config, &x, &mut out) });
    let text = e.to_string();
    assert!(
        text.contains("`writes_below`") && text.contains("before this thread's `griddepcontrol.wait`"),
        "{text}"
    );
    // A kernel that waits before it triggers leaves only its own writes.
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { writes_below::Kernel::launch(&device, config, &mut x, 64) }.expect("fills x");
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_after_its_wait::Kernel::launch(&device, config, &other, &mut out) }.expect("waits first");
    assert!(!device.written_by_running_kernel(&x), "writes_below is complete");
    assert!(device.written_by_running_kernel(&out));
    // SAFETY: 64 threads, each touches element t of 64-element buffers.
    unsafe { reads_before_its_wait::Kernel::launch(&device, config, &x, &mut other) }.expect("x is complete");
    assert_eq!(
        device.download(&other).expect("download"),
        (1..65).collect::<Vec<u32>>()
    );
}

/// A programmatic dependent whose first block waits for the kernel before
/// it when `wait` is set (no thread waits otherwise), then writes
/// `other[i]`.
#[kernel(targets(sm_90))]
pub fn first_block_waits_if(other: &mut [u32], wait: u32) {
    if wait != 0 && block_idx_x() == 0 {
        grid_dependency_wait();
    }
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    other[i] = 5;
}

#[test]
fn a_kernel_that_ends_without_waiting_leaves_its_predecessor_running_past_the_next_wait() {
    let device = Device::emulator(Target::Sm90);
    let mut x = device.alloc_zeroed::<u32>(64).expect("alloc");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    let mut other = device.alloc_zeroed::<u32>(64).expect("alloc");
    let config = LaunchConfig::linear(1, 64);
    let run = |x: &mut nvfp4_dsl::DeviceBuffer<u32>,
               out: &mut nvfp4_dsl::DeviceBuffer<u32>,
               other: &mut nvfp4_dsl::DeviceBuffer<u32>,
               wait: u32| {
        // SAFETY: 64 threads in all, each touches element t (or its
        // global index) of 64-element buffers.
        unsafe {
            writes_below::Kernel::launch(&device, config, &mut *x, 64).expect("fills x");
            first_block_waits_if::Kernel::launch(&device, LaunchConfig::linear(2, 32), other, wait)
                .expect("writes other");
            reads_after_its_wait::Kernel::launch(&device, config, &*x, out)
        }
    };
    // No thread of the kernel between them waits: it may end before
    // `writes_below` does, and the read after the wait races with it.
    let text = failure(run(&mut x, &mut out, &mut other, 0)).to_string();
    assert!(
        text.contains("which an earlier kernel in the stream (`writes_below`) writes, and which may still run after this thread's `griddepcontrol.wait`")
            && text.contains("have at least one block of it call `grid_dependency_wait()` before it ends"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "at {}, line",
            at("reads_after_its_wait", "out[t] = x[t] + 1;")
        )),
        "{text}"
    );
    // One block of it waiting is enough: it ends only once `writes_below`
    // is complete.
    device.synchronize().expect("sync");
    run(&mut x, &mut out, &mut other, 1).expect("the first block waits");
    assert_eq!(device.download(&out).expect("download"), (1..65).collect::<Vec<u32>>());
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
    // The error names the Rust line of whichever access comes second; a
    // read before the push finds the array unwritten.
    let read = at("pushes_through_the_cluster", "out[(64 * rank + t) as usize] = s[t];");
    if e.message().starts_with("read of unwritten shared memory") {
        assert!(text.contains(&format!("at {read}, line")), "{text}");
    } else {
        assert!(text.contains("shared-memory data race"), "{text}");
        assert!(
            text.contains(&format!("at {push}, line")) || text.contains(&format!("at {read}, line")),
            "{text}"
        );
    }
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
