//! Each row's maximum and sum, one warp per row, written once for every
//! type the warp reductions take (`T: Num + WarpReduce`), launched for
//! `u32` and `f32` by one host function generic over `T`
//! (`row_max_sum::Specialized`).

use nvfp4_dsl::prelude::*;

/// `out[2 r]` and `out[2 r + 1]`: the maximum and the sum of row
/// `blockIdx.x` of `x` (rows of `cols`).
#[kernel(specialize(T = [u32, f32]), launch_bounds(32))]
pub fn row_max_sum<T: Num + WarpReduce>(x: &[T], out: &mut [T], cols: usize) {
    let row = block_idx_x() as usize;
    let values = &x[row * cols..(row + 1) * cols];
    let (mut max, mut sum) = (T::MIN, T::ZERO);
    for c in (lane_id() as usize..values.len()).step_by(32) {
        if values[c] > max {
            max = values[c];
        }
        sum += values[c];
    }
    let (max, sum) = (warp_reduce_max(max), warp_reduce_sum(sum));
    if lane_id() == 0 {
        out[2 * row] = max;
        out[2 * row + 1] = sum;
    }
}

/// The maxima and sums on the CPU.
fn reference<T: Num>(x: &[T], cols: usize) -> Vec<T> {
    let mut out = Vec::new();
    for row in x.chunks(cols) {
        let (mut max, mut sum) = (T::MIN, T::ZERO);
        for &v in row {
            if v > max {
                max = v;
            }
            sum += v;
        }
        out.extend([max, sum]);
    }
    out
}

/// Launches the kernel for `T` on `x` and compares every output with
/// [`reference`].
fn check_one<T: Num + row_max_sum::Specialized + std::fmt::Debug>(
    device: &Device,
    x: &[T],
    cols: usize,
    poison: T,
) -> Result<(), nvfp4_dsl::Error> {
    let rows = x.len() / cols;
    let dx = device.upload(x)?;
    let mut dout = device.upload(&vec![poison; 2 * rows])?;
    // SAFETY: block r reads row r of x and writes out[2 r] and out[2 r + 1].
    unsafe { row_max_sum::Kernel::<T>::launch(device, LaunchConfig::linear(rows as u32, 32), &dx, &mut dout, cols)? };
    let got = device.download(&dout)?;
    for (i, (g, w)) in got.iter().zip(reference(x, cols)).enumerate() {
        assert!(g == &w, "row {} {}: {g:?}, want {w:?}", i / 2, ["max", "sum"][i % 2]);
    }
    Ok(())
}

/// Rows of random `u32`s and of `f32`s on a grid of 1/256 (every sum is
/// exact in any order), against [`reference`].
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (rows, cols) = (24usize, 75usize);
    let words: Vec<u32> = (0..rows * cols).map(|_| rng.next_u32() % 100_000).collect();
    check_one(device, &words, cols, u32::MAX)?;
    let floats: Vec<f32> = (0..rows * cols).map(|_| rng.f32(64.0)).collect();
    check_one(device, &floats, cols, f32::NAN)
}
