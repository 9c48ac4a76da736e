//! A warp-specialised pipeline (sm_90a): one producer thread streams tiles
//! of `x` into a ring of two shared slots by bulk copies, two consumer
//! warpgroups scale each tile into `y` and hand its slot back. The
//! producer's warpgroup gives its registers to the consumers
//! (`setmaxnreg`), before it waits for them.

use nvfp4_dsl::prelude::*;

/// Consumer threads (two warpgroups): one value of a tile each.
#[device]
pub const CONSUMERS: u32 = 256;

/// Slots of the ring.
#[device]
pub const SLOTS: u32 = 2;

/// `y[i] = a * x[i]` for `tiles` tiles of [`CONSUMERS`] values per block
/// (block b takes tiles `b * tiles ..`). Launched with `CONSUMERS + 128`
/// threads.
#[kernel(targets(sm_90a), launch_bounds(CONSUMERS + 128, 1))]
pub fn scale_through_a_ring(x: &[f32], y: &mut [f32], a: f32, tiles: u32) {
    let ring = shared_array::<f32, 512>();
    // full[s]: slot s landed; empty[SLOTS + s]: slot s consumed.
    let bars = shared_array::<u64, 4>();
    let t = thread_idx_x();
    if t == 0 {
        for s in 0..SLOTS {
            mbarrier_init(bars, s, 1);
            mbarrier_init(bars, SLOTS + s, CONSUMERS);
        }
        fence_mbarrier_init();
    }
    sync_threads();
    let first = block_idx_x() * tiles;
    if t >= CONSUMERS {
        setmaxnreg_dec(40);
        if t == CONSUMERS {
            for k in 0..tiles {
                let s = k % SLOTS;
                if k >= SLOTS {
                    mbarrier_wait_parity(bars, SLOTS + s, (k / SLOTS - 1) % 2);
                }
                mbarrier_arrive_expect_tx(bars, s, CONSUMERS * 4);
                cp_async_bulk_global_to_shared(ring, s * CONSUMERS, x, (first + k) * CONSUMERS, CONSUMERS * 4, bars, s);
            }
        }
    } else {
        setmaxnreg_inc(232);
        for k in 0..tiles {
            let s = k % SLOTS;
            mbarrier_wait_parity(bars, s, (k / SLOTS) % 2);
            y[((first + k) * CONSUMERS + t) as usize] = a * ring[s * CONSUMERS + t];
            mbarrier_arrive(bars, SLOTS + s);
        }
    }
}

/// Random values against the CPU, every element.
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (blocks, tiles) = (3u32, 5u32);
    let n = (blocks * tiles * CONSUMERS) as usize;
    let x: Vec<f32> = (0..n).map(|_| rng.f32(8.0)).collect();
    let a = 0.75f32;
    let dx = device.upload(&x)?;
    let mut dy = device.upload(&vec![f32::NAN; n])?;
    // SAFETY: block b reads and writes tiles b * tiles .. (b + 1) * tiles
    // of CONSUMERS values, all inside x and y.
    unsafe {
        scale_through_a_ring::Kernel::launch(
            device,
            LaunchConfig::linear(blocks, CONSUMERS + 128),
            &dx,
            &mut dy,
            a,
            tiles,
        )?
    };
    let got = device.download(&dy)?;
    for (i, (g, v)) in got.iter().zip(&x).enumerate() {
        assert_eq!(*g, a * v, "element {i}");
    }
    Ok(())
}
