//! The index of each row's largest value (the lowest index among equal
//! ones), one warp per row.

use nvfp4_dsl::prelude::*;

/// Index of the largest of row `blockIdx.x` of `x` (rows of `cols`): each
/// lane keeps the first largest of its strided columns, then the warp
/// reduces the (value, index) pairs with shuffles.
#[kernel(targets(sm_90), launch_bounds(32))]
pub fn row_argmax(x: &[f32], out: &mut [u32], cols: usize) {
    let row = block_idx_x() as usize;
    let values = &x[row * cols..(row + 1) * cols];
    let lane = lane_id();
    let (mut best, mut index) = (f32::NEG_INFINITY, u32::MAX);
    for c in (lane as usize..values.len()).step_by(32) {
        if values[c] > best {
            (best, index) = (values[c], c as u32);
        }
    }
    for offset in [16, 8, 4, 2, 1] {
        // A shuffle moves one 32-bit value: the pair goes as two.
        let (v, i) = (shfl_xor(best, offset), shfl_xor(index, offset));
        if v > best || (v == best && i < index) {
            (best, index) = (v, i);
        }
    }
    if lane == 0 {
        out[row] = index;
    }
}

/// The argmax on the CPU: the first of the largest.
pub fn reference(x: &[f32], cols: usize) -> Vec<u32> {
    x.chunks(cols)
        .map(|row| {
            let mut best = 0;
            for (i, v) in row.iter().enumerate() {
                if *v > row[best] {
                    best = i;
                }
            }
            best as u32
        })
        .collect()
}

/// Rows of random values from a small set, so that most rows hold their
/// largest more than once, against [`reference`].
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (rows, cols) = (40usize, 100usize);
    let x: Vec<f32> = (0..rows * cols).map(|_| (rng.next_u32() % 16) as f32 - 7.5).collect();
    let dx = device.upload(&x)?;
    let mut dout = device.upload(&vec![u32::MAX - 1; rows])?;
    // SAFETY: block r reads row r of x and writes out[r].
    unsafe { row_argmax::Kernel::launch(device, LaunchConfig::linear(rows as u32, 32), &dx, &mut dout, cols)? };
    let got = device.download(&dout)?;
    for (r, (g, w)) in got.iter().zip(reference(&x, cols)).enumerate() {
        assert_eq!(*g, w, "argmax of row {r}");
    }
    Ok(())
}
