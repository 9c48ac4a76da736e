//! Independent thread scheduling (`Options::with_independent_threads`):
//! a diverged warp at an `.aligned` instruction, shuffles that wait for
//! their mask, barriers after a divergent `if`, and determinism per seed.

use super::*;

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
