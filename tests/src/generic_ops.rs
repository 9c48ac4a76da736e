//! Generic kernels over the prelude's bounds that use what a bound grants:
//! `Float`'s `max` and `min` (on `f16` and `bf16` too), and a `Num` bound
//! narrowed by `WarpReduce` and `Shuffle` calling the warp reductions and
//! shuffles, with `+=`. Shared by the emulator test
//! (`tests/tests/generics.rs`) and the GPU test.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{DeviceCopy, Error};

/// `x` clamped into `[lo, hi]` through `max` and `min` of `T: Float`.
#[kernel(targets(sm_90), specialize(T = [f16, bf16, f32, f64]))]
pub fn clamps<T: Float>(x: &[T], out: &mut [T], lo: f32, hi: f32) {
    let t = thread_idx_x() as usize;
    out[t] = x[t].max(T::from_f32(lo)).min(T::from_f32(hi));
}

/// Each lane's value plus its xor-1 neighbour's (through `+=`), and the
/// warp's sum and maximum.
#[device]
fn warp_stats<T: Num + WarpReduce + Shuffle>(v: T) -> [T; 3] {
    let mut pair = T::ZERO;
    pair += v;
    pair += shfl_xor(v, 1);
    [pair, warp_reduce_sum(v), warp_reduce_max(v)]
}

#[kernel(targets(sm_90), specialize(T = [u32, i64, f32, f64]))]
pub fn warp_stats_of<T: Num + WarpReduce + Shuffle>(x: &[T], out: &mut [T]) {
    let t = thread_idx_x() as usize;
    let stats = warp_stats(x[t]);
    #[unroll]
    for i in 0..3usize {
        out[3 * t + i] = stats[i];
    }
}

/// 64 words of a fixed stream, below 2^12: small enough that every sum
/// below is exact in any order.
fn words() -> Vec<u32> {
    (0..64u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 20).collect()
}

/// Uploads `x`, poisons `n` outputs with `poison`, runs `launch` and
/// returns the outputs.
fn run<T: DeviceCopy>(
    device: &Device,
    x: &[T],
    poison: T,
    n: usize,
    launch: impl FnOnce(&DeviceBuffer<T>, &mut DeviceBuffer<T>) -> Result<(), Error>,
) -> Result<Vec<T>, String> {
    let dx = device.upload(x).map_err(|e| e.to_string())?;
    let mut out = device.upload(&vec![poison; n]).map_err(|e| e.to_string())?;
    launch(&dx, &mut out).map_err(|e| e.to_string())?;
    device.download(&out).map_err(|e| e.to_string())
}

/// Every element of `got` the same bits as `want` (compared by their
/// `Debug` text: the types have no common `to_bits`).
fn same<T: std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<usize, String> {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if format!("{g:?}") != format!("{w:?}") {
            return Err(format!("{what}, element {i}: {g:?}, want {w:?}"));
        }
    }
    Ok(got.len())
}

/// Runs `clamps` and `warp_stats_of` for each of their types on `device`
/// and compares every output with the host; the number of outputs checked.
pub fn check(device: &Device) -> Result<usize, String> {
    let config = LaunchConfig::linear(1, 64);
    let (lo, hi) = (-10.5f32, 12.25f32);
    let mut checked = 0;
    macro_rules! clamp {
        ($t:ty, $poison:expr) => {{
            let x: Vec<$t> = words()
                .iter()
                .map(|w| <$t>::from_f32(*w as f32 / 64.0 - 32.0))
                .collect();
            // SAFETY: 64 threads, each reads and writes its own element.
            let got = run(device, &x, $poison, 64, |x, out| unsafe {
                clamps::Kernel::<$t>::launch(device, config, x, out, lo, hi)
            })?;
            let want: Vec<$t> = x
                .iter()
                .map(|v| v.max(<$t>::from_f32(lo)).min(<$t>::from_f32(hi)))
                .collect();
            checked += same(concat!("clamps of ", stringify!($t)), &got, &want)?;
        }};
    }
    clamp!(f16, f16::NAN);
    clamp!(bf16, bf16::NAN);
    clamp!(f32, f32::NAN);
    clamp!(f64, f64::NAN);
    macro_rules! stats {
        ($t:ty, $values:expr, $poison:expr) => {{
            let x: Vec<$t> = $values;
            // SAFETY: 64 threads, each reads its element and writes its 3.
            let got = run(device, &x, $poison, 192, |x, out| unsafe {
                warp_stats_of::Kernel::<$t>::launch(device, config, x, out)
            })?;
            let mut want = Vec::with_capacity(192);
            for (t, v) in x.iter().enumerate() {
                let warp = &x[t / 32 * 32..t / 32 * 32 + 32];
                let mut sum = <$t as Num>::ZERO;
                let mut max = <$t as Num>::MIN;
                for &w in warp {
                    sum += w;
                    if w > max {
                        max = w;
                    }
                }
                want.extend([*v + x[t ^ 1], sum, max]);
            }
            checked += same(concat!("warp_stats_of ", stringify!($t)), &got, &want)?;
        }};
    }
    stats!(u32, words(), u32::MAX);
    stats!(i64, words().iter().map(|w| *w as i64 - 2000).collect(), i64::MIN);
    stats!(f32, words().iter().map(|w| *w as f32 / 8.0 - 200.0).collect(), f32::NAN);
    stats!(f64, words().iter().map(|w| *w as f64 / 4.0 - 300.0).collect(), f64::NAN);
    Ok(checked)
}
