//! The `f32` functions PTX approximates (`exp`, `exp2`, `ln`, `log2`,
//! `sin`, `cos`, `tanh`, `rsqrt_approx`, `recip_approx`) against f64,
//! within the bounds the README documents: on the emulator
//! (`tests/std_methods/floats.rs`) and on a GPU (`tests/gpu/main.rs`).

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

/// The approximate functions, [`FUNCTIONS`]`.len()` results per input.
#[kernel(targets(sm_90, sm_100a))]
pub fn approximate_methods(x: &[f32], out: &mut [f32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < x.len() {
        let v = x[i];
        let o = i * 9;
        out[o] = v.exp();
        out[o + 1] = v.exp2();
        out[o + 2] = v.ln();
        out[o + 3] = v.log2();
        out[o + 4] = v.sin();
        out[o + 5] = v.cos();
        out[o + 6] = v.tanh();
        out[o + 7] = v.rsqrt_approx();
        out[o + 8] = v.recip_approx();
    }
}

/// The ulp error as CUDA's programming guide defines it for its bounds:
/// how many f32 steps `got` is from the correctly rounded (to nearest,
/// ties to even) `want` (0 for two NaNs).
pub fn ulps(got: f32, want: f64) -> f64 {
    let rounded = want as f32;
    if got.is_nan() && rounded.is_nan() {
        return 0.0;
    }
    if got.is_nan() || rounded.is_nan() {
        return f64::INFINITY;
    }
    // f32 bits mapped to integers in the order of the values (-0 = +0).
    let ordered = |v: f32| {
        let b = v.to_bits() as i64;
        if b & 0x8000_0000 != 0 { -(b & 0x7FFF_FFFF) } else { b }
    };
    (ordered(got) - ordered(rounded)).unsigned_abs() as f64
}

/// The error the README documents for `name`, which is NVIDIA's bound for
/// the same instruction sequence (CUDA's `__expf`, `__exp2f`, `__logf`,
/// `__log2f`, `__sinf`, `__cosf`; PTX's `tanh.approx.f32`,
/// `rsqrt.approx.f32`, `rcp.approx.f32`): the error of `got` against the
/// exact `want` in the unit the bound is stated in, the bound, and the
/// unit.
pub fn documented_error(name: &str, x: f32, got: f32, want: f64) -> (f64, f64, &'static str) {
    let abs = (f64::from(got) - want).abs();
    let near_one = (0.5..=2.0).contains(&x);
    match name {
        "exp" => (ulps(got, want), 2.0 + (1.173 * f64::from(x.abs())).floor(), "ulp"),
        "exp2" => (ulps(got, want), 2.0, "ulp"),
        "ln" if near_one => (abs, 2f64.powf(-21.41), "absolute"),
        "log2" if near_one => (abs, 2f64.powf(-22.0), "absolute"),
        "ln" => (ulps(got, want), 3.0, "ulp"),
        "log2" => (ulps(got, want), 2.0, "ulp"),
        // The PTX ISA's bound for `sin.approx.f32`/`cos.approx.f32` on
        // [-π, π]; CUDA states 2^-21.41 for `__sinf`/`__cosf` there, which
        // the H100 exceeds (cos(1.7598144) is 3.64e-7 = 2^-21.39 off).
        "sin" | "cos" => (abs, 2f64.powf(-20.9), "absolute"),
        "rsqrt_approx" => (relative(got, want), 2f64.powf(-22.9), "relative"),
        "recip_approx" => (ulps(got, want), 1.0, "ulp"),
        _ => (relative(got, want), 2f64.powf(-10.987), "relative"),
    }
}

/// `got`'s error relative to the exact `want` (0 where both are the same
/// infinity).
fn relative(got: f32, want: f64) -> f64 {
    if f64::from(got) == want {
        return 0.0;
    }
    (f64::from(got) - want).abs() / want.abs().max(f64::MIN_POSITIVE)
}

/// A function's name, its exact value in f64, and its domain.
pub type Function = (&'static str, fn(f64) -> f64, fn(f32) -> bool);

/// Each function with its exact value and its domain.
pub const FUNCTIONS: [Function; 9] = [
    ("exp", f64::exp, |v| v.abs() <= 87.0),
    ("exp2", f64::exp2, |v| v.abs() <= 126.0),
    ("ln", f64::ln, |v| v > 0.0 && v.is_finite()),
    ("log2", f64::log2, |v| v > 0.0 && v.is_finite()),
    ("sin", f64::sin, |v| v.abs() <= std::f32::consts::PI),
    ("cos", f64::cos, |v| v.abs() <= std::f32::consts::PI),
    ("tanh", f64::tanh, |v| v.is_finite() && v != 0.0),
    ("rsqrt_approx", |v| 1.0 / v.sqrt(), |v| v > 0.0),
    ("recip_approx", f64::recip, |v| !v.is_nan()),
];

/// One line of a report: what was measured, the worst error, its unit,
/// and the input where it occurred.
pub type Worst = (String, f64, &'static str, f32);

/// Runs every function on `device` over random and special inputs; checks
/// each result in its domain against its documented bound and returns, per
/// function, the worst error in ulps there; for `sin` and `cos` also the
/// worst absolute error beyond [-π, π], where NVIDIA documents no bound
/// (reported, not checked).
pub fn check(device: &Device, seed: u64) -> Result<Vec<Worst>, String> {
    let mut rng = Rng::new(seed);
    let mut x: Vec<f32> = (0..4000).map(|_| rng.uniform(-87.0, 88.0)).collect();
    x.extend((0..2000).map(|_| rng.uniform(-1.0, 1.0)));
    x.extend((0..2000).map(|_| rng.uniform(0.5, 2.0)));
    x.extend((0..2000).map(|_| rng.uniform(-4.0, 4.0)));
    x.extend((0..2000).map(|_| f32::from_bits(rng.next_u32() & 0x7FFF_FFFF)));
    x.extend([
        0.0,
        -0.0,
        1.0,
        2.0,
        0.5,
        std::f32::consts::PI,
        -std::f32::consts::PI,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
    ]);
    let dx = device.upload(&x).map_err(|e| e.to_string())?;
    let n = FUNCTIONS.len();
    let mut out = device.alloc_zeroed::<f32>(x.len() * n).map_err(|e| e.to_string())?;
    let blocks = x.len().div_ceil(256) as u32;
    // SAFETY: one thread per input, writing its results.
    unsafe { approximate_methods::Kernel::launch(device, LaunchConfig::linear(blocks, 256), &dx, &mut out) }
        .map_err(|e| e.to_string())?;
    let out = device.download(&out).map_err(|e| e.to_string())?;
    let mut report = Vec::new();
    for (f, (name, exact, domain)) in FUNCTIONS.iter().enumerate() {
        let mut worst = (0.0f64, 0.0f32);
        let mut beyond = (0.0f64, 0.0f32);
        for (i, v) in x.iter().enumerate() {
            let want = exact(f64::from(*v));
            let got = out[i * n + f];
            if !domain(*v) {
                if matches!(*name, "sin" | "cos") && v.abs() <= 100.0 * std::f32::consts::PI {
                    let e = (f64::from(got) - want).abs();
                    if e > beyond.0 {
                        beyond = (e, *v);
                    }
                }
                continue;
            }
            let (e, bound, unit) = documented_error(name, *v, got, want);
            if e > bound {
                return Err(format!(
                    "{name}({v:e}) = {got:e}, exact {want:e}: {unit} error {e:e} > {bound:e}"
                ));
            }
            let u = ulps(got, want);
            if u > worst.0 {
                worst = (u, *v);
            }
        }
        report.push((name.to_string(), worst.0, "ulp", worst.1));
        if matches!(*name, "sin" | "cos") {
            report.push((
                format!("{name} on [-100π, 100π] beyond [-π, π]"),
                beyond.0,
                "absolute",
                beyond.1,
            ));
        }
    }
    Ok(report)
}
