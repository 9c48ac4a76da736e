//! C = A x B in f32 through 16 x 16 shared tiles.

use nvfp4_dsl::prelude::*;

/// The tile's side, also the block's.
#[device]
pub const TILE: usize = 16;

/// `c` (n x m) = `a` (n x k) times `b` (k x m), row-major; one thread per
/// element of `c`, blocks of `TILE` x `TILE`.
#[kernel(targets(sm_90))]
pub fn matmul(a: &[f32], b: &[f32], c: &mut [f32], n: usize, k: usize, m: usize) {
    let a_tile = shared_array::<[f32; TILE], TILE>();
    let b_tile = shared_array::<[f32; TILE], TILE>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row = block_idx_y() as usize * TILE + ty;
    let col = block_idx_x() as usize * TILE + tx;
    let mut acc = 0.0;
    for t in 0..k.div_ceil(TILE) {
        let ak = t * TILE + tx;
        let bk = t * TILE + ty;
        a_tile[ty][tx] = if row < n && ak < k { a[row * k + ak] } else { 0.0 };
        b_tile[ty][tx] = if bk < k && col < m { b[bk * m + col] } else { 0.0 };
        sync_threads();
        for i in 0..TILE {
            acc += a_tile[ty][i] * b_tile[i][tx];
        }
        sync_threads();
    }
    if row < n && col < m {
        c[row * m + col] = acc;
    }
}

/// The product on the CPU, adding in the kernel's order (the zero padding
/// of the last tile adds exact zeros).
pub fn reference(a: &[f32], b: &[f32], n: usize, k: usize, m: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; n * m];
    for row in 0..n {
        for col in 0..m {
            let mut acc = 0.0f32;
            for i in 0..k {
                acc += a[row * k + i] * b[i * m + col];
            }
            c[row * m + col] = acc;
        }
    }
    c
}

/// Multiplies random matrices whose sides are not multiples of `TILE`
/// against [`reference`].
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (n, k, m) = (37usize, 45usize, 29usize);
    let a: Vec<f32> = (0..n * k).map(|_| rng.f32(4.0)).collect();
    let b: Vec<f32> = (0..k * m).map(|_| rng.f32(4.0)).collect();
    let da = device.upload(&a)?;
    let db = device.upload(&b)?;
    let mut dc = device.upload(&vec![f32::NAN; n * m])?;
    let grid = (m.div_ceil(TILE) as u32, n.div_ceil(TILE) as u32, 1);
    let config = LaunchConfig::new(grid, (TILE as u32, TILE as u32, 1));
    // SAFETY: each thread writes its own element of c inside n x m, and reads a and b inside their sizes.
    unsafe { matmul::Kernel::launch(device, config, &da, &db, &mut dc, n, k, m)? };
    let got = device.download(&dc)?;
    for (i, (g, w)) in got.iter().zip(reference(&a, &b, n, k, m)).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "matmul element {i}: {g} != {w}");
    }
    Ok(())
}
