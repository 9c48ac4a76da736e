//! What a CUDA or Rust author writes in the first hour: path calls
//! `T::method(x, ..)` of every method; `for` over an array literal; zipped
//! element loops; `warp_reduce_max`/`min`; assertions, reported by the
//! emulator; `rsqrt_approx` and `recip_approx`; closures. Run on the
//! emulator against the same functions called on the host, on random
//! inputs, outputs poisoned first; a path call's PTX is the method call's.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl_compiler as compiler;

/// Outputs start as this, so a word the kernel never writes shows.
const POISON: u32 = 0xDEAD_BEEF;

/// A xorshift stream of `n` words from `seed`, never zero.
fn random_words(seed: u32, n: usize) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s
        })
        .collect()
}

/// A device buffer of `len` words of [`POISON`].
fn poisoned(device: &Device, len: usize) -> DeviceBuffer<u32> {
    device.upload(&vec![POISON; len]).expect("upload")
}

/// Methods called by path, each as Rust writes it, the results as bits.
#[device]
fn path_calls(a: u32, b: u32) -> [u32; 16] {
    let (x, y) = (f32::from_bits(a & 0xBFFF_FFFF), f32::from_bits(b & 0xBFFF_FFFF));
    let n = a as i32;
    let h = f16x2::from_bits(b);
    [
        f32::max(x, y).to_bits(),
        f32::min(x, 2.5).to_bits(),
        f32::sqrt(f32::abs(x)).to_bits(),
        f32::mul_add(x, y, 1.0).to_bits(),
        f32::clamp(x, -1.0, 1.0).to_bits(),
        f64::floor(x as f64).to_bits() as u32,
        u32::wrapping_add(a, b),
        u32::rotate_left(a, b % 32),
        u32::max(a, 7),
        u32::count_ones(b),
        i32::abs(n) as u32,
        i32::signum(n) as u32,
        i64::wrapping_mul(n as i64, 3) as u32,
        f16x2::lo(h).to_bits() as u32,
        f16x2::hi(h).to_bits() as u32,
        u8::wrapping_sub(a as u8, b as u8) as u32,
    ]
}

#[kernel(targets(sm_90))]
pub fn paths(xs: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = path_calls(xs[2 * i], xs[2 * i + 1]);
    #[unroll]
    for k in 0..16 {
        out[16 * i + k] = r[k];
    }
}

#[test]
fn path_calls_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let xs = random_words(0x1d10_5eed, 2 * 64);
    let dx = device.upload(&xs).expect("upload");
    let mut out = poisoned(&device, 16 * 64);
    // SAFETY: one thread per sixteen outputs.
    unsafe { paths::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for i in 0..64 {
        assert_eq!(
            out[16 * i..16 * i + 16],
            path_calls(xs[2 * i], xs[2 * i + 1]),
            "thread {i}"
        );
    }
}

/// The PTX of `body` in a kernel `k(x: &[f32], y: &mut [f32], u: &[u32])`,
/// without its comments (they quote the source).
fn ptx_of(body: &str) -> String {
    let item: syn::ItemFn =
        syn::parse_str(&format!("fn k(x: &[f32], y: &mut [f32], u: &mut [u32]) {{ {body} }}")).expect("parses");
    let c = compiler::compile(
        "targets(sm_90)".parse().expect("tokens"),
        &item,
        &[],
        &compiler::Options::default(),
    )
    .unwrap_or_else(|e| panic!("{body}: {e}"));
    c.variants[0].ptx[0]
        .1
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_path_call_is_the_method_call() {
    let pairs = [
        ("y[0] = x[0].max(x[1]);", "y[0] = f32::max(x[0], x[1]);"),
        ("y[0] = x[0].sqrt();", "y[0] = f32::sqrt(x[0]);"),
        (
            "y[0] = x[0].mul_add(x[1], 2.0);",
            "y[0] = f32::mul_add(x[0], x[1], 2.0);",
        ),
        ("y[0] = x[0].exp();", "y[0] = f32::exp(x[0]);"),
        ("y[0] = x[0].rsqrt_approx();", "y[0] = f32::rsqrt_approx(x[0]);"),
        ("y[0] = x[0].recip_approx();", "y[0] = f32::recip_approx(x[0]);"),
        (
            "u[0] = u[1].wrapping_add(u[2]);",
            "u[0] = u32::wrapping_add(u[1], u[2]);",
        ),
        (
            "u[0] = (u[1] as i32).abs() as u32;",
            "u[0] = i32::abs(u[1] as i32) as u32;",
        ),
        ("u[0] = u[1].leading_zeros();", "u[0] = u32::leading_zeros(u[1]);"),
        (
            "u[0] = f16x2::from_bits(u[1]).lo().to_bits() as u32;",
            "u[0] = f16::to_bits(f16x2::lo(f16x2::from_bits(u[1]))) as u32;",
        ),
    ];
    for (method, path) in pairs {
        assert_eq!(ptx_of(method), ptx_of(path), "`{method}` and `{path}`");
    }
}

/// Loops over array literals: shift amounts, `.iter().enumerate()`,
/// `&v` through `.iter().rev()` left by a labeled `break`, `continue`, and
/// a repeat `[x; n]`.
#[device]
fn array_literal_loops(seed: u32) -> [u32; 5] {
    let mut a = seed;
    for s in [16u32, 8, 4, 2, 1] {
        a ^= a >> s;
    }
    let mut b = 0u32;
    for (i, v) in [seed, seed.rotate_left(3), 7].iter().enumerate() {
        b = b.wrapping_mul(31) ^ v.wrapping_add(i as u32);
    }
    let mut c = 0u32;
    'digits: for &v in [seed % 5, 3, seed % 7, 1].iter().rev() {
        if v == 0 {
            break 'digits;
        }
        c = c * 10 + v;
    }
    let mut d = 0u32;
    for k in [1u32, 2, 3] {
        if (seed >> k) & 1 == 1 {
            continue;
        }
        d += k;
    }
    let mut e = seed;
    for v in [seed >> 3; 3] {
        e = e.wrapping_mul(v | 1);
    }
    [a, b, c, d, e]
}

/// A warp's sum by hand: the offsets a literal array, each an immediate.
#[kernel(targets(sm_90))]
pub fn literal_loops(xs: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = array_literal_loops(xs[i]);
    #[unroll]
    for k in 0..5 {
        out[6 * i + k] = r[k];
    }
    let mut v = xs[i];
    for off in [16, 8, 4, 2, 1] {
        v = v.wrapping_add(shfl_xor(v, off));
    }
    out[6 * i + 5] = v;
}

#[test]
fn loops_over_array_literals_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let xs = random_words(0xa77a_5eed, 64);
    let dx = device.upload(&xs).expect("upload");
    let mut out = poisoned(&device, 6 * 64);
    // SAFETY: one thread per six outputs.
    unsafe { literal_loops::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for i in 0..64 {
        assert_eq!(out[6 * i..6 * i + 5], array_literal_loops(xs[i]), "thread {i}");
        let warp = &xs[i / 32 * 32..i / 32 * 32 + 32];
        let sum = warp.iter().fold(0u32, |s, &x| s.wrapping_add(x));
        assert_eq!(out[6 * i + 5], sum, "thread {i}");
    }
    // Each offset is an immediate of its `shfl`.
    let ptx = literal_loops::VARIANTS[0].ptx[0].1;
    let offsets: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.trim().strip_prefix("shfl.sync.bfly.b32 "))
        .map(|l| l.split(", ").nth(2).expect("a lane operand"))
        .collect();
    assert_eq!(offsets, ["16", "8", "4", "2", "1"], "{ptx}");
}

/// Zipped element loops: slices of different lengths (as far as the
/// shorter goes), with `.enumerate()`, reversed (from the end of the
/// shorter, as Rust's `Zip`), a local array with a slice (unrolled to the
/// array's length, cut at the slice's run-time one), three zipped.
#[device]
fn zips(x: &[u32], y: &[u32], seed: u32) -> [u32; 6] {
    let mut a = 0u32;
    for (p, q) in x.iter().zip(y.iter()) {
        a = a.wrapping_mul(31).wrapping_add(p ^ q);
    }
    let mut b = 0u32;
    for (i, (&p, q)) in x.iter().zip(y).enumerate() {
        b ^= p.wrapping_mul(i as u32 + 1).wrapping_add(*q);
    }
    let mut c = 0u32;
    'pairs: for (p, q) in x.iter().zip(y.iter()).rev() {
        if (p ^ q).is_multiple_of(13) {
            break 'pairs;
        }
        c = c.rotate_left(5) ^ p.wrapping_sub(*q);
    }
    let arr = [seed, seed >> 3, seed ^ 0xff, 7, 9, 11];
    let mut d = 0u32;
    for (w, v) in arr.iter().zip(x.iter()) {
        d = d.wrapping_mul(7) ^ w.wrapping_mul(*v);
    }
    let mut e = 0u32;
    for (i, (w, v)) in arr.iter().zip(y.iter()).enumerate().rev() {
        e = e.wrapping_mul(3).wrapping_add(w ^ v ^ i as u32);
    }
    let mut g = 0u32;
    for ((p, q), w) in x.iter().zip(y.iter()).zip([1u32, 2, 3, 4]) {
        g = g.wrapping_add(p.wrapping_mul(w) ^ q);
    }
    [a, b, c, d, e, g]
}

/// Writes through `iter_mut` zipped with a slice, and through a sub-slice's
/// `iter_mut` zipped with another sub-slice; a local array zipped with an
/// array literal, written in place, then through `&mut arr`.
#[device]
fn zip_update(x: &mut [u32], y: &[u32]) -> u32 {
    for (v, w) in x.iter_mut().zip(y) {
        *v = (*v).wrapping_mul(3) ^ *w;
    }
    for (v, w) in x[2..].iter_mut().zip(&y[1..]) {
        *v = (*v).wrapping_add(*w);
    }
    let mut arr = [y.len() as u32, 5, 6];
    for (v, k) in arr.iter_mut().zip([10u32, 20]) {
        *v += k;
    }
    for v in &mut arr {
        *v = (*v).rotate_left(9);
    }
    arr[0] ^ arr[1] ^ arr[2]
}

#[kernel(targets(sm_90))]
pub fn zipped(xs: &[u32], ys: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = zips(&xs[i * 5 % 65..], &ys[i * 11 % 40..], xs[i]);
    #[unroll]
    for k in 0..6 {
        out[6 * i + k] = r[k];
    }
}

#[kernel(targets(sm_90))]
pub fn zipped_update(xs: &mut [u32], ys: &[u32], out: &mut [u32]) {
    out[0] = zip_update(xs, &ys[3..]);
}

#[test]
fn zipped_loops_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let xs = random_words(0x21b5_eed1, 64);
    let ys = random_words(0x5eed_21b5, 40);
    let (dx, dy) = (device.upload(&xs).expect("upload"), device.upload(&ys).expect("upload"));
    let mut out = poisoned(&device, 6 * 64);
    // SAFETY: one thread per six outputs.
    unsafe { zipped::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &dy, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for i in 0..64 {
        let want = zips(&xs[i * 5 % 65..], &ys[i * 11 % 40..], xs[i]);
        assert_eq!(out[6 * i..6 * i + 6], want, "thread {i}");
    }

    let mut dx = device.upload(&xs).expect("upload");
    let mut out = poisoned(&device, 1);
    // SAFETY: one thread, which owns both buffers.
    unsafe { zipped_update::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut dx, &dy, &mut out) }
        .expect("launch");
    let mut want = xs.clone();
    let r = zip_update(&mut want, &ys[3..]);
    assert_ne!(want, xs, "the host changed the elements");
    assert_eq!(device.download(&dx).expect("download"), want);
    assert_eq!(device.download(&out).expect("download"), [r]);
}

#[kernel(targets(sm_90))]
pub fn warp_extremes(us: &[u32], fs: &[f32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let (u, f) = (us[i], fs[i]);
    out[6 * i] = warp_reduce_max(u);
    out[6 * i + 1] = warp_reduce_min(u);
    out[6 * i + 2] = warp_reduce_max(u as i32) as u32;
    out[6 * i + 3] = warp_reduce_min(u as i32) as u32;
    out[6 * i + 4] = warp_reduce_max(f).to_bits();
    out[6 * i + 5] = warp_reduce_min(f).to_bits();
}

/// Rust's `f32::max` (`min` with `max` false), NaN-ignoring, with `-0.0`
/// below `+0.0` (which Rust leaves open); NaN of two NaNs.
fn float_extreme(a: f32, b: f32, max: bool) -> f32 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f32::NAN,
        (true, false) => b,
        (false, true) => a,
        _ if a == b => {
            if a.is_sign_negative() == max {
                b
            } else {
                a
            }
        }
        _ if (a < b) == max => b,
        _ => a,
    }
}

#[test]
fn warp_max_and_min_are_rusts_in_every_lane() {
    let device = Device::emulator(Target::Sm90);
    let us = random_words(0x3a7c_5eed, 128);
    let words = random_words(0x0f1e_5eed, 128);
    // Warp 0: any floats, a few NaNs and infinities; warp 1: NaNs among
    // small values; warp 2: only NaNs (some negative); warp 3: only zeros of
    // both signs and NaNs.
    let fs: Vec<f32> = (0..128)
        .map(|i| {
            let w = words[i];
            match (i / 32, w % 8) {
                (0, 0) => f32::NAN,
                (0, 1) => f32::NEG_INFINITY,
                (0, _) => f32::from_bits(w),
                (1, 0..=3) => f32::from_bits(0x7fc0_0000 | w >> 12),
                (1, _) => (w % 1000) as f32 - 500.0,
                (2, _) => f32::from_bits(0x7f80_0001 | w & 0x807f_ffff),
                _ if w.is_multiple_of(3) => f32::NAN,
                _ => f32::from_bits(w & 0x8000_0000),
            }
        })
        .collect();
    let (du, df) = (device.upload(&us).expect("upload"), device.upload(&fs).expect("upload"));
    let mut out = poisoned(&device, 6 * 128);
    // SAFETY: one thread per six outputs.
    unsafe { warp_extremes::Kernel::launch(&device, LaunchConfig::linear(1, 128), &du, &df, &mut out) }
        .expect("launch");
    let out = device.download(&out).expect("download");
    for warp in 0..4 {
        let lanes = warp * 32..warp * 32 + 32;
        let u = &us[lanes.clone()];
        let f = &fs[lanes.clone()];
        let fmax = f.iter().fold(f32::NAN, |m, &x| float_extreme(m, x, true));
        let fmin = f.iter().fold(f32::NAN, |m, &x| float_extreme(m, x, false));
        // The canonical NaN where every lane is NaN.
        let bits = |x: f32| if x.is_nan() { 0x7fff_ffff } else { x.to_bits() };
        let want = [
            *u.iter().max().expect("32 lanes"),
            *u.iter().min().expect("32 lanes"),
            u.iter().map(|&x| x as i32).max().expect("32 lanes") as u32,
            u.iter().map(|&x| x as i32).min().expect("32 lanes") as u32,
            bits(fmax),
            bits(fmin),
        ];
        for lane in lanes {
            assert_eq!(out[6 * lane..6 * lane + 6], want, "warp {warp}, lane {lane}");
        }
    }
    // What each warp tests is there: NaN ignored, all-NaN, zeros ordered.
    assert!(fs[..32].iter().any(|x| x.is_nan()) && !f32::from_bits(out[4]).is_nan());
    assert_eq!(out[6 * 64 + 4], 0x7fff_ffff);
    assert_eq!((out[6 * 96 + 4], out[6 * 96 + 5]), (0, 0x8000_0000));
}

/// Checked preconditions: the index in range, the value not the sentinel
/// 7, a copy equal, the high half not all ones; a `debug_assert!` against
/// 8.
#[device]
fn checked(x: &[u32], i: usize, n: usize) -> u32 {
    assert!(i < n);
    let v = x[i];
    assert!(v != 7, "the sentinel 7 at {}", i);
    let w = v;
    assert_eq!(w, v);
    assert_ne!(v >> 16, 0xffff, "no all-ones high half");
    debug_assert!(v != 8);
    v.wrapping_mul(3)
}

#[kernel(targets(sm_90))]
pub fn asserting(x: &[u32], n: u32, out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    out[i] = checked(x, i, n as usize);
}

/// Where and why a launch failed: block, thread, message.
type Failure = ((u32, u32, u32), (u32, u32, u32), String);

/// Runs `asserting` on two blocks of 64 over `x`; the emulator's error of a
/// failed assertion.
fn assert_run(device: &Device, x: &[u32], n: u32) -> Result<Vec<u32>, Failure> {
    let dx = device.upload(x).expect("upload");
    let mut out = poisoned(device, 128);
    // SAFETY: one thread per output; the emulator checks every access.
    match unsafe { asserting::Kernel::launch(device, LaunchConfig::linear(2, 64), &dx, n, &mut out) } {
        Ok(()) => Ok(device.download(&out).expect("download")),
        Err(nvfp4_dsl::Error::Emulator(e)) => {
            assert_eq!(e.kernel(), Some("asserting"), "{e}");
            assert!(e.instruction().is_some_and(|t| t.starts_with("trap;")), "{e}");
            Err((
                e.block().expect("a block"),
                e.thread().expect("a thread"),
                e.message().to_string(),
            ))
        }
        Err(other) => panic!("not an emulator error: {other}"),
    }
}

#[test]
fn a_failed_assertion_traps_and_the_emulator_names_it() {
    let device = Device::emulator(Target::Sm90);
    let good: Vec<u32> = random_words(0xa55e_27ed, 128).iter().map(|w| w >> 1 | 16).collect();
    let out = assert_run(&device, &good, 128).expect("every assertion holds");
    for (i, &o) in out.iter().enumerate() {
        assert_eq!(o, checked(&good, i, 128), "thread {i}");
    }

    let (block, thread, msg) = assert_run(&device, &good, 100).expect_err("threads 100.. fail");
    assert_eq!(block, (1, 0, 0));
    assert!(thread.0 >= 36, "thread {thread:?}");
    assert_eq!(msg, "assertion failed: `assert!(i < n)`");

    let mut x = good.clone();
    x[5] = 7;
    let failed = assert_run(&device, &x, 128).expect_err("the sentinel");
    let want = "assertion failed: `assert!(v != 7, \"the sentinel 7 at {}\", i)`";
    assert_eq!(failed, ((0, 0, 0), (5, 0, 0), want.to_string()));

    let mut x = good.clone();
    x[70] = 0xffff_0001;
    let failed = assert_run(&device, &x, 128).expect_err("all ones");
    let want = "assertion failed: `assert_ne!(v >> 16, 0xffff, \"no all-ones high half\")`";
    assert_eq!(failed, ((1, 0, 0), (6, 0, 0), want.to_string()));

    // `debug_assert!` as in Rust: checked where this crate builds with
    // debug assertions (`cargo test`), gone without (`--release`).
    let mut x = good.clone();
    x[9] = 8;
    let run = assert_run(&device, &x, 128);
    if cfg!(debug_assertions) {
        let want = "assertion failed: `debug_assert!(v != 8)`";
        assert_eq!(run, Err(((0, 0, 0), (9, 0, 0), want.to_string())));
    } else {
        assert_eq!(run.expect("no debug assertions")[9], 24);
    }
}

#[test]
fn debug_asserts_compile_twice_and_only_they_differ() {
    let item: syn::ItemFn = syn::parse_str(
        "fn k(x: &[u32], y: &mut [u32]) { assert!(x[0] < 4); debug_assert!(x[1] < 4, \"small\"); y[0] = x[0]; }",
    )
    .expect("parses");
    let c = compiler::compile(
        "targets(sm_90, sm_100a)".parse().expect("tokens"),
        &item,
        &[],
        &compiler::Options::default(),
    )
    .expect("compiles");
    let release = c.variants[0].release_ptx.as_ref().expect("a debug_assert!");
    for ((_, debug), release) in c.variants[0].ptx.iter().zip(release) {
        assert_eq!(debug.matches("trap;").count(), 2, "{debug}");
        assert_eq!(release.matches("trap;").count(), 1, "{release}");
        assert!(
            debug.contains("trap; // assertion failed: debug_assert!(x[1] < 4, \"small\")"),
            "{debug}"
        );
    }
    assert!(ptx_of("assert!(x[0] < 1.0);").contains("trap; // assertion failed: assert!(x[0] < 1.0)"));
    let item: syn::ItemFn = syn::parse_str("fn k(y: &mut [u32]) { assert!(y[0] < 4); }").expect("parses");
    let c = compiler::compile(
        "targets(sm_90)".parse().expect("tokens"),
        &item,
        &[],
        &compiler::Options::default(),
    )
    .expect("compiles");
    assert!(c.variants[0].release_ptx.is_none(), "no debug_assert!, one PTX");
}

#[kernel(targets(sm_90))]
pub fn approximate_reciprocals(x: &[f32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    out[2 * i] = x[i].rsqrt_approx().to_bits();
    out[2 * i + 1] = f32::recip_approx(x[i]).to_bits();
}

/// The emulator computes `rsqrt.approx.f32` and `rcp.approx.f32` correctly
/// rounded, as the host's `ApproxF32` does (the GPU's error is bounded in
/// `tests/approx.rs`): the same bits, special values included; and each is
/// the one instruction.
#[test]
fn rsqrt_and_recip_approx_are_one_instruction_each() {
    let device = Device::emulator(Target::Sm90);
    let mut x: Vec<f32> = random_words(0x7a11_5eed, 128)
        .iter()
        .map(|&w| f32::from_bits(w))
        .collect();
    x[..10].copy_from_slice(&[
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -4.0,
        4.0,
        f32::MIN_POSITIVE / 8.0,
        f32::MAX,
        1.0,
    ]);
    let dx = device.upload(&x).expect("upload");
    let mut out = poisoned(&device, 2 * 128);
    // SAFETY: one thread per two outputs.
    unsafe { approximate_reciprocals::Kernel::launch(&device, LaunchConfig::linear(1, 128), &dx, &mut out) }
        .expect("launch");
    let out = device.download(&out).expect("download");
    let same = |got: u32, want: f32| got == want.to_bits() || (f32::from_bits(got).is_nan() && want.is_nan());
    for (i, &v) in x.iter().enumerate() {
        assert!(
            same(out[2 * i], v.rsqrt_approx()),
            "rsqrt_approx({v:e}): {:#x}",
            out[2 * i]
        );
        assert!(
            same(out[2 * i + 1], v.recip_approx()),
            "recip_approx({v:e}): {:#x}",
            out[2 * i + 1]
        );
    }
    let ptx = approximate_reciprocals::VARIANTS[0].ptx[0].1;
    assert_eq!(ptx.matches("rsqrt.approx.f32 ").count(), 1, "{ptx}");
    assert_eq!(ptx.matches("rcp.approx.f32 ").count(), 1, "{ptx}");
}

/// Closures: a square; a `move` closure of two parameters with a block
/// body, capturing a parameter and a local that is assigned after it is
/// created (it keeps the value it captured); one without annotations
/// (typed by its call); one calling another; a tuple parameter; one that
/// indexes a captured local array with its argument (a constant where it
/// is called); one in a loop capturing the loop's variable.
#[device]
fn closures(x: f32, n: u32) -> [u32; 8] {
    let sq = |v: f32| v * v;
    let scale = 3u32;
    let mut offset = n >> 3;
    let affine = move |a: u32, b: u32| -> u32 {
        let t = a.wrapping_mul(scale);
        t.wrapping_add(b ^ offset)
    };
    let first = affine(n, 1);
    offset = offset.wrapping_add(7);
    let second = affine(n ^ offset, 2);
    let twice = |v| v + v;
    let doubled = twice(n >> 1);
    let sq_plus = |v: f32| sq(v) + 1.0;
    let pair = |(a, b): (u32, u32)| a ^ b.rotate_left(5);
    let table = [n, n ^ 1, n.rotate_left(9), 17];
    let pick = |k: usize| table[k];
    let mut acc = 0u32;
    for i in 0..n % 8 {
        let add_i = |v: u32| v.wrapping_add(i);
        acc = add_i(acc).rotate_left(3);
    }
    [
        sq(x).to_bits(),
        first,
        second,
        doubled,
        sq_plus(x).to_bits(),
        pair((n, first)),
        pick(2) ^ pick(3),
        acc,
    ]
}

#[kernel(targets(sm_90))]
pub fn with_closures(xs: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = closures(f32::from_bits(xs[i] & 0xBFFF_FFFF), xs[i]);
    // Writes through the captured slice reach it.
    let mut put = |k: usize, v: u32| out[8 * i + k] = v;
    #[unroll]
    for k in 0..8 {
        put(k, r[k]);
    }
}

#[test]
fn closures_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let xs = random_words(0xc105_5eed, 64);
    let dx = device.upload(&xs).expect("upload");
    let mut out = poisoned(&device, 8 * 64);
    // SAFETY: one thread per eight outputs.
    unsafe { with_closures::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for (i, &x) in xs.iter().enumerate() {
        let want = closures(f32::from_bits(x & 0xBFFF_FFFF), x);
        assert_eq!(out[8 * i..8 * i + 8], want, "thread {i}");
    }
}

/// `y[i] = x[i] * 3 + i`, with no `targets(..)`: compiled for sm_90 and
/// sm_100a.
#[kernel]
pub fn no_targets_listed(x: &[u32], y: &mut [u32]) {
    let i = thread_idx_x() as usize;
    y[i] = x[i] * 3 + i as u32;
}

#[test]
fn a_kernel_without_targets_compiles_for_hopper_and_blackwell() {
    let listed: Vec<Target> = no_targets_listed::Kernel::VARIANT.ptx.iter().map(|(t, _)| *t).collect();
    assert_eq!(listed, [Target::Sm90, Target::Sm100a]);
    let x = random_words(17, 64);
    for target in [Target::Sm90, Target::Sm90a, Target::Sm100a] {
        let device = Device::emulator(target);
        let dx = device.upload(&x).expect("upload");
        let mut dy = device.upload(&[POISON; 64]).expect("upload");
        // SAFETY: 64 threads, each reads and writes its own element.
        unsafe { no_targets_listed::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut dy) }
            .expect("launch");
        let want: Vec<u32> = x
            .iter()
            .enumerate()
            .map(|(i, v)| v.wrapping_mul(3).wrapping_add(i as u32))
            .collect();
        assert_eq!(device.download(&dy).expect("download"), want, "{target:?}");
    }
}
