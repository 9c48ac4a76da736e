//! The exact float methods on f32 and f64 over edge cases and random
//! values, bit for bit against Rust's, and the approximate functions
//! measured against f64.

use super::*;

const FLOAT_OUTS: usize = 20;

/// The exact float methods, one thread per input pair.
macro_rules! float_methods {
    ($name:ident, $t:ty) => {
        #[kernel(targets(sm_90, sm_100a))]
        pub fn $name(a: &[$t], b: &[$t], n: &[i32], out: &mut [$t], tests: &mut [u32]) {
            let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
            if i < a.len() {
                let x = a[i];
                let y = b[i];
                let o = i * 20;
                out[o] = x.floor();
                out[o + 1] = x.ceil();
                out[o + 2] = x.trunc();
                out[o + 3] = x.round();
                out[o + 4] = x.round_ties_even();
                out[o + 5] = x.fract();
                out[o + 6] = x.copysign(y);
                out[o + 7] = x.recip();
                out[o + 8] = x.powi(n[i]);
                out[o + 9] = x.powi(5);
                out[o + 10] = x.powi(-3);
                out[o + 11] = x.clamp(-1.5, 2.0);
                out[o + 12] = x.signum();
                out[o + 13] = x.abs();
                out[o + 14] = x.sqrt();
                out[o + 15] = x.min(y);
                out[o + 16] = x.max(y);
                out[o + 17] = x.mul_add(y, 1.0);
                out[o + 18] = x.powi(0);
                out[o + 19] = y.clamp(x.min(0.0), 0.0);
                tests[i] = x.is_nan() as u32
                    | (x.is_finite() as u32) << 1
                    | (x.is_infinite() as u32) << 2
                    | (x.is_sign_negative() as u32) << 3
                    | (x.is_sign_positive() as u32) << 4;
            }
        }
    };
}
float_methods!(f32_methods, f32);
float_methods!(f64_methods, f64);

/// `powi` as Rust computes it: square-and-multiply (compiler-builtins'
/// `__powisf2`/`__powidf2`), which `f32::powi` does not promise.
macro_rules! powi_reference {
    ($t:ty, $x:expr, $n:expr) => {{
        let (x, n): ($t, i32) = ($x, $n);
        let (mut r, mut b, mut e) = (1.0 as $t, x, n.unsigned_abs());
        loop {
            if e & 1 == 1 {
                r *= b;
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            b *= b;
        }
        if n < 0 { 1.0 / r } else { r }
    }};
}

macro_rules! float_expected {
    ($t:ty, $x:expr, $y:expr, $n:expr) => {{
        let (x, y, n): ($t, $t, i32) = ($x, $y, $n);
        (
            [
                x.floor(),
                x.ceil(),
                x.trunc(),
                x.round(),
                x.round_ties_even(),
                x.fract(),
                x.copysign(y),
                x.recip(),
                powi_reference!($t, x, n),
                powi_reference!($t, x, 5),
                powi_reference!($t, x, -3),
                x.clamp(-1.5, 2.0),
                x.signum(),
                x.abs(),
                x.sqrt(),
                ptx_min(x, y),
                ptx_max(x, y),
                x.mul_add(y, 1.0),
                1.0,
                y.clamp(ptx_min(x, 0.0), 0.0),
            ],
            x.is_nan() as u32
                | (x.is_finite() as u32) << 1
                | (x.is_infinite() as u32) << 2
                | (x.is_sign_negative() as u32) << 3
                | (x.is_sign_positive() as u32) << 4,
        )
    }};
}

/// `f32::min`, with -0.0 below +0.0 (Rust leaves the order of zeros
/// unspecified; PTX's `min` orders them).
fn ptx_min<T: Into<f64> + Copy + PartialOrd>(x: T, y: T) -> T {
    let (a, b) = (x.into(), y.into());
    if a.is_nan() || b < a || (a == b && b.is_sign_negative()) {
        y
    } else {
        x
    }
}

fn ptx_max<T: Into<f64> + Copy + PartialOrd>(x: T, y: T) -> T {
    let (a, b) = (x.into(), y.into());
    if a.is_nan() || b > a || (a == b && b.is_sign_positive()) {
        y
    } else {
        x
    }
}

/// f32 edge cases: zeros, infinities, NaN, halves, the last fractions
/// below 2^23, subnormals, extremes; then random bit patterns and random
/// moderate values.
fn f32_inputs(rng: &mut Rng, random: usize) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.49999997,
        -0.49999997,
        8388607.5,
        -8388607.5,
        8388608.0,
        16777215.0,
        1e-45,
        -1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        1.0,
        -1.0,
        3.0,
        -7.25,
        1e10,
        -1e-10,
    ];
    v.extend((0..random).map(|_| f32::from_bits(rng.next_u32())));
    v.extend((0..random).map(|_| rng.uniform(-40.0, 40.0)));
    v
}

fn f64_inputs(rng: &mut Rng, random: usize) -> Vec<f64> {
    let mut v: Vec<f64> = f32_inputs(rng, 0).into_iter().map(f64::from).collect();
    v.extend([
        4503599627370495.5,
        -4503599627370495.5,
        4503599627370496.0,
        0.49999999999999994,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
    ]);
    v.extend((0..random).map(|_| f64::from_bits(rng.next_u64())));
    v.extend((0..random).map(|_| f64::from(rng.uniform(-40.0, 40.0)) * 1.000_000_1));
    v
}

/// Same bits, or both NaN (Rust does not define NaN payloads).
fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

macro_rules! check_floats {
    ($kernel:ident, $t:ty, $values:expr) => {{
        let device = Device::emulator(Target::Sm90);
        let values: Vec<$t> = $values;
        let mut a: Vec<$t> = Vec::new();
        let mut b: Vec<$t> = Vec::new();
        let mut n: Vec<i32> = Vec::new();
        for (i, x) in values.iter().enumerate() {
            for (j, y) in values.iter().enumerate().step_by(3) {
                a.push(*x);
                b.push(*y);
                n.push(((i * 5 + j) % 41) as i32 - 20);
            }
        }
        let len = a.len();
        let da = device.upload(&a).expect("upload");
        let db = device.upload(&b).expect("upload");
        let dn = device.upload(&n).expect("upload");
        let mut out = device.alloc_zeroed::<$t>(len * FLOAT_OUTS).expect("alloc");
        let mut tests = device.alloc_zeroed::<u32>(len).expect("alloc");
        // SAFETY: one thread per input, each writing its own outputs.
        unsafe {
            $kernel::Kernel::launch(
                &device,
                LaunchConfig::linear(len.div_ceil(128) as u32, 128),
                &da,
                &db,
                &dn,
                &mut out,
                &mut tests,
            )
            .expect("launch")
        };
        let out = device.download(&out).expect("download");
        let tests = device.download(&tests).expect("download");
        for i in 0..len {
            let (want, want_tests) = float_expected!($t, a[i], b[i], n[i]);
            for (m, w) in want.iter().enumerate() {
                let got = out[i * FLOAT_OUTS + m];
                assert!(
                    same_f64(got.into(), (*w).into()),
                    "{} output {m}: x = {:e} ({:#x}), y = {:e}, n = {}: got {got:e}, want {w:e}",
                    stringify!($t),
                    a[i],
                    a[i].to_bits(),
                    b[i],
                    n[i]
                );
            }
            assert_eq!(tests[i], want_tests, "{}: tests of {:e}", stringify!($t), a[i]);
        }
    }};
}

#[test]
fn float_methods_match_std_on_f32_and_f64() {
    let mut rng = Rng::new(8);
    check_floats!(f32_methods, f32, f32_inputs(&mut rng, 40));
    check_floats!(f64_methods, f64, f64_inputs(&mut rng, 40));
}

/// Each approximate function over its domain, within the error the README
/// documents. The emulator computes every `.approx` instruction correctly
/// rounded, so this measures the lowering around the instruction (the
/// `mul.rn` of `exp` and `ln`); `tests/gpu/main.rs` measures the H100.
#[test]
fn approximate_functions_are_within_their_documented_error_on_the_emulator() {
    let report = nvfp4_tests::approx::check(&Device::emulator(Target::Sm90), 9).unwrap_or_else(|e| panic!("{e}"));
    for (name, worst, unit, at) in report {
        println!("{name}: at most {worst:.3e} {unit} (at x = {at:e})");
    }
}
