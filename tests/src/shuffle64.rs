//! Warp shuffles and reductions of 64-bit values (`u64`, `i64`, `f64`), as
//! two shuffles of their 32-bit halves, against the same lane exchanges on
//! the host: on the emulator (`tests/shuffle64.rs`) and on a GPU
//! (`tests/gpu/main.rs`).

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

#[kernel(targets(sm_90))]
pub fn shuffles64(x: &[u64], f: &[f64], out: &mut [u64], fout: &mut [f64]) {
    let t = thread_idx_x() as usize;
    let lane = lane_id();
    let v = x[t];
    out[6 * t] = shfl_xor(v, 5);
    out[6 * t + 1] = shfl_down(v as i64, 3) as u64;
    out[6 * t + 2] = shfl_idx_sync(0xffff_ffff, v, (lane * 7) % 32);
    out[6 * t + 3] = warp_reduce_sum(v);
    out[6 * t + 4] = warp_reduce_max(v as i64) as u64;
    out[6 * t + 5] = warp_reduce_min(v as i64) as u64;
    let g = f[t];
    fout[4 * t] = shfl_xor_sync(0xffff_ffff, g, 17);
    fout[4 * t + 1] = warp_reduce_sum(g);
    fout[4 * t + 2] = warp_reduce_max(g);
    fout[4 * t + 3] = warp_reduce_min(g);
}

/// Runs `shuffles64` over 4 warps of random values (finite doubles of
/// every sign and a wide range of exponents, two infinities) and compares
/// every word with the host: the number of words checked, or the first
/// difference.
pub fn check(device: &Device, seed: u64) -> Result<usize, String> {
    let threads = 128usize;
    let mut rng = Rng::new(seed);
    let x: Vec<u64> = (0..threads).map(|_| rng.next_u64()).collect();
    let mut f: Vec<f64> = (0..threads)
        .map(|_| f64::from_bits(rng.next_u64() & !(0x400u64 << 52)))
        .collect();
    (f[9], f[70]) = (f64::INFINITY, f64::NEG_INFINITY);
    let e = |e: nvfp4_dsl::Error| e.to_string();
    let (dx, df) = (device.upload(&x).map_err(e)?, device.upload(&f).map_err(e)?);
    let mut out = device
        .upload(&vec![0xdead_beef_dead_beef_u64; 6 * threads])
        .map_err(e)?;
    let mut fout = device
        .upload(&vec![f64::from_bits(0x7ff4_dead_beef_0000); 4 * threads])
        .map_err(e)?;
    let config = LaunchConfig::linear(1, threads as u32);
    // SAFETY: thread t reads x[t] and f[t] and writes its own six and four words.
    unsafe { shuffles64::Kernel::launch(device, config, &dx, &df, &mut out, &mut fout) }.map_err(e)?;
    let (out, fout) = (device.download(&out).map_err(e)?, device.download(&fout).map_err(e)?);
    for (w, (xs, fs)) in x.chunks(32).zip(f.chunks(32)).enumerate() {
        let signed: Vec<i64> = xs.iter().map(|&v| v as i64).collect();
        let sums = butterfly(xs, u64::wrapping_add);
        let (maxs, mins) = (butterfly(&signed, i64::max), butterfly(&signed, i64::min));
        let fsums = butterfly(fs, |a, b| a + b);
        let (fmaxs, fmins) = (butterfly(fs, f64::max), butterfly(fs, f64::min));
        for lane in 0..32 {
            let t = 32 * w + lane;
            let down = if lane + 3 < 32 { xs[lane + 3] } else { xs[lane] };
            let want = [
                xs[lane ^ 5],
                down,
                xs[(lane * 7) % 32],
                sums[lane],
                maxs[lane] as u64,
                mins[lane] as u64,
            ];
            if out[6 * t..6 * t + 6] != want {
                return Err(format!("thread {t}: {:x?}, want {want:x?}", &out[6 * t..6 * t + 6]));
            }
            let fwant = [fs[lane ^ 17], fsums[lane], fmaxs[lane], fmins[lane]];
            let got = &fout[4 * t..4 * t + 4];
            if got.iter().zip(&fwant).any(|(g, w)| g.to_bits() != w.to_bits()) {
                return Err(format!("thread {t}: {got:?}, want {fwant:?}"));
            }
        }
    }
    Ok(out.len() + fout.len())
}

/// Each lane's value after the butterfly of `warp_reduce_*`: lanes 16
/// apart combined first, then 8, 4, 2, 1, each lane `own op other`.
fn butterfly<T: Copy>(warp: &[T], op: impl Fn(T, T) -> T) -> Vec<T> {
    let mut v = warp.to_vec();
    for off in [16, 8, 4, 2, 1] {
        v = (0..32).map(|i| op(v[i], v[i ^ off])).collect();
    }
    v
}
