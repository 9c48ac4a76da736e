//! Per-row statistics, one warp per row: the sum of squares in `f64`
//! (64-bit warp reduction), the first column past a threshold (a `loop`
//! that gives its value, then a warp minimum), and a class from a `match`
//! on the pair.

use nvfp4_dsl::prelude::*;

/// The first of `values[start..]` at a stride of 32 whose magnitude
/// exceeds `limit`, or `u32::MAX`.
#[device]
fn first_over(values: &[f32], start: usize, limit: f32) -> u32 {
    let mut c = start;
    loop {
        if c >= values.len() {
            break u32::MAX;
        }
        if values[c].abs() > limit {
            break c as u32;
        }
        c += 32;
    }
}

/// Row `blockIdx.x` of `x` (rows of `cols`): its sum of squares, the first
/// column whose magnitude exceeds `limit` (`u32::MAX` if none) and its
/// class: 0 small and calm, 1 small with a spike, 2 large and calm, 3
/// large with a spike.
#[kernel(targets(sm_90), launch_bounds(32))]
pub fn row_stats(x: &[f32], squares: &mut [f64], first: &mut [u32], class: &mut [u32], cols: usize, limit: f32) {
    let row = block_idx_x() as usize;
    let values = &x[row * cols..(row + 1) * cols];
    let lane = lane_id();
    let mut sum = 0.0f64;
    for c in (lane as usize..values.len()).step_by(32) {
        let v = values[c] as f64;
        sum += v * v;
    }
    let sum = warp_reduce_sum(sum);
    let spike = warp_reduce_min(first_over(values, lane as usize, limit));
    if lane == 0 {
        squares[row] = sum;
        first[row] = spike;
        class[row] = match (sum > 1000.0, spike) {
            (false, u32::MAX) => 0,
            (false, _) => 1,
            (true, u32::MAX) => 2,
            (true, _) => 3,
        };
    }
}

/// Rows of random values on a grid of 1/256 (their squares and sums are
/// exact in `f64`, in any order), some with a spike, against the CPU.
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let (rows, cols, limit) = (48usize, 300usize, 6.0f32);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| {
            let row = i / cols;
            let range = if row % 3 == 0 { 1.0 } else { 4.0 };
            let spike = row % 4 == 1 && rng.next_u32().is_multiple_of(97);
            if spike { 7.5 } else { rng.f32(range) }
        })
        .collect();
    let dx = device.upload(&x)?;
    let mut squares = device.upload(&vec![f64::NAN; rows])?;
    let mut first = device.upload(&vec![7u32; rows])?;
    let mut class = device.upload(&vec![9u32; rows])?;
    let config = LaunchConfig::linear(rows as u32, 32);
    // SAFETY: block r reads row r of x and writes element r of each output.
    unsafe { row_stats::Kernel::launch(device, config, &dx, &mut squares, &mut first, &mut class, cols, limit)? };
    let (squares, first, class) = (
        device.download(&squares)?,
        device.download(&first)?,
        device.download(&class)?,
    );
    let mut classes = [0usize; 4];
    for (r, values) in x.chunks(cols).enumerate() {
        let sum: f64 = values.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        let spike = values
            .iter()
            .position(|v| v.abs() > limit)
            .map_or(u32::MAX, |c| c as u32);
        let want = u32::from(sum > 1000.0) * 2 + u32::from(spike != u32::MAX);
        assert_eq!((squares[r], first[r], class[r]), (sum, spike, want), "row {r}");
        classes[want as usize] += 1;
    }
    assert!(classes.iter().all(|&n| n > 0), "every class occurs: {classes:?}");
    Ok(())
}
