//! An inclusive prefix sum of each block's 1024 values (Hillis-Steele,
//! through shared memory).

use nvfp4_dsl::prelude::*;

/// Values per block, one per thread.
#[device]
pub const BLOCK: usize = 1024;

/// Each block's inclusive prefix sum of its `BLOCK` values of `x` (`u32`
/// additions wrap, as in a release build), one thread per value.
#[kernel(targets(sm_90), launch_bounds(1024))]
pub fn block_scan(x: &[u32], y: &mut [u32]) {
    let buf = shared_array::<u32, BLOCK>();
    let t = thread_idx_x() as usize;
    let base = block_idx_x() as usize * BLOCK;
    buf[t] = x[base + t];
    sync_threads();
    let mut offset = 1;
    while offset < BLOCK {
        let v = if t >= offset { buf[t - offset] } else { 0 };
        sync_threads();
        buf[t] += v;
        sync_threads();
        offset *= 2;
    }
    y[base + t] = buf[t];
}

/// The scan on the CPU, wrapping as the kernel does.
pub fn reference(x: &[u32]) -> Vec<u32> {
    let mut y = Vec::with_capacity(x.len());
    for block in x.chunks(BLOCK) {
        let mut sum = 0u32;
        for v in block {
            sum = sum.wrapping_add(*v);
            y.push(sum);
        }
    }
    y
}

/// Scans 5 blocks of random values against [`reference`].
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let blocks = 5;
    let x: Vec<u32> = (0..blocks * BLOCK).map(|_| rng.next_u32()).collect();
    let dx = device.upload(&x)?;
    let mut dy = device.upload(&vec![0xdead_beef_u32; x.len()])?;
    // SAFETY: thread t of block b reads and writes element b * BLOCK + t.
    unsafe { block_scan::Kernel::launch(device, LaunchConfig::linear(blocks as u32, BLOCK as u32), &dx, &mut dy)? };
    let got = device.download(&dy)?;
    for (i, (g, w)) in got.iter().zip(reference(&x)).enumerate() {
        assert_eq!(*g, w, "scan element {i}");
    }
    Ok(())
}
