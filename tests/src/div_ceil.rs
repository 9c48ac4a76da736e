//! `u32::div_ceil` and `u64::div_ceil` in a kernel against std over pairs
//! of edge cases and random values, zero divisors included (`MAX` in a
//! kernel, as `x / 0`): on a GPU (`tests/gpu/main.rs`); `tests/std_methods/`
//! checks every unsigned type on the emulator.

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

/// `x[i].div_ceil(y[i])` for both widths.
#[kernel(targets(sm_90))]
pub fn div_ceil_both(x32: &[u32], y32: &[u32], out32: &mut [u32], x64: &[u64], y64: &[u64], out64: &mut [u64]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x32.len() {
        out32[i] = x32[i].div_ceil(y32[i]);
        out64[i] = x64[i].div_ceil(y64[i]);
    }
}

/// Every pair of 0, 1, 2, 3, `MAX`, `MAX - 1`, `MAX / 2`, the powers of two
/// and 16 random values of each width: the number of pairs checked, or the
/// first difference.
pub fn check(device: &Device, seed: u64) -> Result<usize, String> {
    let mut rng = Rng::new(seed);
    let mut edges = |max: u64, bits: u32| -> Vec<u64> {
        let mut v = vec![0, 1, 2, 3, max, max - 1, max / 2];
        v.extend((0..bits).map(|b| 1u64 << b));
        v.extend((0..16).map(|_| rng.next_u64() & max));
        v
    };
    let (v32, v64) = (edges(u32::MAX.into(), 32), edges(u64::MAX, 64));
    let pairs = |v: &[u64]| -> (Vec<u64>, Vec<u64>) { v.iter().flat_map(|&x| v.iter().map(move |&y| (x, y))).unzip() };
    let (x64, y64) = pairs(&v64);
    let (x32, y32): (Vec<u32>, Vec<u32>) = {
        let (x, y) = pairs(&v32);
        let n = x64.len();
        (
            x.iter().cycle().take(n).map(|&v| v as u32).collect(),
            y.iter().cycle().take(n).map(|&v| v as u32).collect(),
        )
    };
    let err = |e: nvfp4_dsl::Error| e.to_string();
    let n = x64.len();
    let (dx32, dy32) = (device.upload(&x32).map_err(err)?, device.upload(&y32).map_err(err)?);
    let (dx64, dy64) = (device.upload(&x64).map_err(err)?, device.upload(&y64).map_err(err)?);
    let mut out32 = device.upload(&vec![0x5A5A_5A5Au32; n]).map_err(err)?;
    let mut out64 = device.upload(&vec![0x5A5A_5A5A_5A5A_5A5Au64; n]).map_err(err)?;
    // SAFETY: one thread per pair, every slice `n` long.
    unsafe {
        div_ceil_both::Kernel::launch(
            device,
            LaunchConfig::linear((n as u32).div_ceil(128), 128),
            &dx32,
            &dy32,
            &mut out32,
            &dx64,
            &dy64,
            &mut out64,
        )
        .map_err(err)?
    };
    let (out32, out64) = (
        device.download(&out32).map_err(err)?,
        device.download(&out64).map_err(err)?,
    );
    for i in 0..n {
        let want32 = if y32[i] == 0 { u32::MAX } else { x32[i].div_ceil(y32[i]) };
        let want64 = if y64[i] == 0 { u64::MAX } else { x64[i].div_ceil(y64[i]) };
        if out32[i] != want32 || out64[i] != want64 {
            return Err(format!(
                "{}.div_ceil({}) = {} (want {want32}), {}.div_ceil({}) = {} (want {want64})",
                x32[i], y32[i], out32[i], x64[i], y64[i], out64[i]
            ));
        }
    }
    Ok(n)
}
