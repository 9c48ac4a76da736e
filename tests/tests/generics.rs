//! Type generics: device functions generic over `T: Float`, `T: Half`,
//! `T: Int` and `T: Num` (the type read off the arguments, also of arrays and slices,
//! off the type the caller expects of the result, or given with a
//! turbofish; one generic function calling another), and
//! kernels generic over `T`, compiled for each type of their
//! `specialize(T = [..])` and launched as `Kernel::<T>::launch`; `bf16x2`
//! and `f16x2` kernel parameters. Run on the emulator against the same
//! functions called on the host, on random inputs, outputs poisoned.

use nvfp4_dsl::DeviceCopy;
use nvfp4_dsl::prelude::*;

#[device]
fn axpy<T: Float>(a: f32, x: T, y: T) -> T {
    T::from_f32(a * x.to_f32() + y.to_f32())
}

#[device]
fn clamp_to<T: Float>(v: T, lo: T, hi: T) -> T {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// The first `n` products, summed in `f32`.
#[device]
fn dot<T: Float>(x: &[T], y: &[T], n: usize) -> f32 {
    let mut s = 0.0f32;
    for i in 0..n {
        s += (x[i] * y[i]).to_f32();
    }
    s
}

#[device]
fn sum4<T: Float>(v: [T; 4]) -> f32 {
    let mut s = 0.0f32;
    for x in v {
        s = s * 0.5 + x.to_f32();
    }
    s
}

/// Calls another generic function with its own `T`, and `T`'s constants.
#[device]
fn nested<T: Float>(a: f32, x: T, y: T) -> f32 {
    let big = T::MAX.to_f32().min(1.0e30);
    axpy(a, x, -y).to_f32() + big / (T::EPSILON.to_f32() + 1.0) + (x - y / T::from_f32(3.0)).to_f32()
}

#[kernel(targets(sm_90), specialize(T = [f16, bf16, f32, f64]))]
pub fn floats<T: Float>(x: &[T], y: &[T], a: f32, out: &mut [T], sums: &mut [f32]) {
    let i = thread_idx_x() as usize;
    let lim = T::from_f32(4.0);
    out[i] = clamp_to(axpy(a, x[i], y[i]), -lim, lim);
    sums[3 * i] = dot(x, y, i % 8 + 1);
    sums[3 * i + 1] = sum4([x[i], y[i], x[i] * y[i], -x[i]]);
    sums[3 * i + 2] = nested(a, x[i], y[i]);
}

#[device]
fn mix<T: Int>(a: T, b: T) -> T {
    a.wrapping_mul(b).wrapping_add(a ^ b).max(b >> 1) | (a & !b)
}

#[device]
fn bits<T: Int>(x: T) -> u32 {
    x.count_ones() + x.leading_zeros() * 3 + x.trailing_zeros() * 7 + T::BITS
}

#[kernel(targets(sm_90), specialize(T = [u8, u32, i32, i64]))]
pub fn ints<T: Int>(x: &[T], y: &[T], out: &mut [T], counts: &mut [u32]) {
    let i = thread_idx_x() as usize;
    out[i] = mix(x[i], y[i]).min(T::MAX).max(T::MIN);
    counts[i] = bits(x[i]) + bits::<u32>(i as u32);
}

/// Both halves of a word read as `T` and written back swapped, the low one
/// doubled through `f32`.
#[device]
fn swap_halves<T: Half>(w: u32) -> u32 {
    let lo = T::from_bits((w & 0xFFFF) as u16);
    let hi = T::from_bits((w >> 16) as u16);
    let doubled = T::from_f32(lo.to_f32() * 2.0);
    ((doubled.to_bits() as u32) << 16) | hi.to_bits() as u32
}

/// The middle 16 bits of a word as a `T`, which only the type the caller
/// expects of the result gives.
#[device]
fn middle<T: Half>(w: u32) -> T {
    T::from_bits((w >> 8) as u16)
}

#[kernel(targets(sm_90))]
pub fn halves(w: &[u32], p: bf16x2, q: f16x2, out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    out[4 * i] = swap_halves::<f16>(w[i]);
    out[4 * i + 1] = swap_halves::<bf16>(w[i]);
    out[4 * i + 2] = p.to_bits() ^ q.to_bits() ^ w[i];
    let a: f16 = middle(w[i]);
    let b: bf16 = middle(w[i] ^ 0xFF00);
    out[4 * i + 3] = a.to_bits() as u32 | (b.to_bits() as u32) << 16;
}

const N: usize = 64;

/// xorshift64*: the tests' random numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in [-8, 8), never zero.
    fn float(&mut self) -> f32 {
        let v = (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 16.0 - 8.0;
        if v == 0.0 { 0.375 } else { v }
    }
}

fn same<T: Float>(got: T, want: T) -> bool {
    let (g, w) = (got.to_f32(), want.to_f32());
    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
}

fn check_floats<T: Float + DeviceCopy + std::fmt::Debug>(
    device: &Device,
    rng: &mut Rng,
    launch: impl FnOnce(&DeviceBuffer<T>, &DeviceBuffer<T>, f32, &mut DeviceBuffer<T>, &mut DeviceBuffer<f32>),
) {
    let x: Vec<T> = (0..N).map(|_| T::from_f32(rng.float())).collect();
    let y: Vec<T> = (0..N).map(|_| T::from_f32(rng.float())).collect();
    let a = rng.float();
    let (dx, dy) = (device.upload(&x).expect("upload"), device.upload(&y).expect("upload"));
    let mut out = device.upload(&[T::NAN; N]).expect("upload");
    let mut sums = device.upload(&vec![f32::NAN; 3 * N]).expect("upload");
    launch(&dx, &dy, a, &mut out, &mut sums);
    let (out, sums) = (
        device.download(&out).expect("download"),
        device.download(&sums).expect("download"),
    );
    let lim = T::from_f32(4.0);
    for i in 0..N {
        let want = clamp_to(axpy(a, x[i], y[i]), -lim, lim);
        assert!(same(out[i], want), "out[{i}]: {:?} != {want:?}", out[i]);
        let want = [
            dot(&x, &y, i % 8 + 1),
            sum4([x[i], y[i], x[i] * y[i], -x[i]]),
            nested(a, x[i], y[i]),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                sums[3 * i + k].to_bits(),
                w.to_bits(),
                "sums[{}]: {} != {w}",
                3 * i + k,
                sums[3 * i + k]
            );
        }
    }
}

#[test]
fn generic_float_functions_compute_what_the_host_computes_for_each_type() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng(0x5EED_F10A);
    let config = LaunchConfig::linear(1, N as u32);
    macro_rules! each {
        ($($t:ty),*) => {$(
            check_floats::<$t>(&device, &mut rng, |x, y, a, out, sums| {
                // SAFETY: one thread per element of `out`, three of `sums`.
                unsafe { floats::Kernel::<$t>::launch(&device, config, x, y, a, out, sums) }.expect("launch")
            });
        )*};
    }
    each!(f16, bf16, f32, f64);
}

fn check_ints<T: Int + DeviceCopy + std::fmt::Debug>(
    device: &Device,
    rng: &mut Rng,
    launch: impl FnOnce(&DeviceBuffer<T>, &DeviceBuffer<T>, &mut DeviceBuffer<T>, &mut DeviceBuffer<u32>),
    from: impl Fn(u64) -> T,
) {
    let x: Vec<T> = (0..N).map(|_| from(rng.next() | 1)).collect();
    let y: Vec<T> = (0..N).map(|_| from(rng.next() | 2)).collect();
    let (dx, dy) = (device.upload(&x).expect("upload"), device.upload(&y).expect("upload"));
    let mut out = device.upload(&[T::MAX; N]).expect("upload");
    let mut counts = device.upload(&vec![u32::MAX; N]).expect("upload");
    launch(&dx, &dy, &mut out, &mut counts);
    let (out, counts) = (
        device.download(&out).expect("download"),
        device.download(&counts).expect("download"),
    );
    for i in 0..N {
        assert_eq!(out[i], mix(x[i], y[i]).min(T::MAX).max(T::MIN), "out[{i}]");
        assert_eq!(counts[i], bits(x[i]) + bits::<u32>(i as u32), "counts[{i}]");
    }
}

#[test]
fn generic_integer_functions_compute_what_the_host_computes_for_each_type() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng(0x1A7_5EED);
    let config = LaunchConfig::linear(1, N as u32);
    macro_rules! each {
        ($($t:ty),*) => {$(
            check_ints::<$t>(&device, &mut rng, |x, y, out, counts| {
                // SAFETY: one thread per element of `out` and `counts`.
                unsafe { ints::Kernel::<$t>::launch(&device, config, x, y, out, counts) }.expect("launch")
            }, |v| v as $t);
        )*};
    }
    each!(u8, u32, i32, i64);
}

#[test]
fn half_functions_and_vector_parameters_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng(0xBF16_0F16);
    // Each half the bits of a value in [-8, 8) as f16 or as bf16: read as
    // either type, never a NaN (whose payload the conversions may change).
    let half = |rng: &mut Rng| {
        let v = rng.float();
        u32::from(if rng.next().is_multiple_of(2) {
            f16::from_f32(v).to_bits()
        } else {
            bf16::from_f32(v).to_bits()
        })
    };
    let w: Vec<u32> = (0..N).map(|_| half(&mut rng) | half(&mut rng) << 16).collect();
    let p = bf16x2::new(bf16::from_f32(rng.float()), bf16::from_f32(rng.float()));
    let q = f16x2::new(f16::from_f32(rng.float()), f16::from_f32(rng.float()));
    let dw = device.upload(&w).expect("upload");
    let mut out = device.upload(&vec![0xDEAD_BEEFu32; 4 * N]).expect("upload");
    // SAFETY: one thread per word of `w`, four of `out`.
    unsafe { halves::Kernel::launch(&device, LaunchConfig::linear(1, N as u32), &dw, p, q, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for i in 0..N {
        let (a, b): (f16, bf16) = (middle(w[i]), middle(w[i] ^ 0xFF00));
        let want = [
            swap_halves::<f16>(w[i]),
            swap_halves::<bf16>(w[i]),
            p.to_bits() ^ q.to_bits() ^ w[i],
            a.to_bits() as u32 | (b.to_bits() as u32) << 16,
        ];
        assert_eq!(out[4 * i..4 * i + 4], want, "word {i}: {:#x}", w[i]);
    }
}

/// An inclusive scan of a block's 64 values in shared memory (Hillis and
/// Steele), capped at `T::MAX`: only additions and comparisons, so one
/// `Num` function serves integers and floats.
#[device]
fn block_scan<T: Num>(v: T, t: usize) -> T {
    let s = shared_array::<T, 64>();
    s[t] = v;
    sync_threads();
    let mut offset = 1;
    while offset < 64 {
        let take = t >= offset;
        let mut add = v;
        if take {
            add = s[t - offset];
        }
        sync_threads();
        if take {
            s[t] += add;
        }
        sync_threads();
        offset *= 2;
    }
    if s[t] > T::MAX { T::MAX } else { s[t] }
}

#[kernel(targets(sm_90), specialize(T = [u32, i32, f32]))]
pub fn scans<T: Num>(x: &[T], out: &mut [T]) {
    let t = thread_idx_x() as usize;
    out[t] = block_scan(x[t], t);
}

/// Runs `launch` on `x` (64 values) and compares every output with the
/// running sum on the host.
fn check_scan<T: Num + DeviceCopy + std::fmt::Debug>(
    x: &[T],
    launch: impl Fn(&Device, &DeviceBuffer<T>, &mut DeviceBuffer<T>),
) {
    let device = Device::emulator(Target::Sm90);
    let dx = device.upload(x).expect("upload");
    let mut out = device.upload(&[T::MAX; 64]).expect("upload");
    launch(&device, &dx, &mut out);
    let got = device.download(&out).expect("download");
    let mut sum = x[0];
    for (i, v) in x.iter().enumerate() {
        if i > 0 {
            sum += *v;
        }
        assert!(got[i] == sum, "element {i}: {:?}, want {:?}", got[i], sum);
    }
}

#[test]
fn a_num_function_scans_integers_and_floats() {
    let words: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 12).collect();
    // SAFETY: 64 threads, each reads and writes its own element.
    check_scan(&words, |d, x, out| unsafe {
        scans::Kernel::<u32>::launch(d, LaunchConfig::linear(1, 64), x, out).expect("launch")
    });
    let signed: Vec<i32> = words.iter().map(|w| (*w as i32) - 300_000).collect();
    // SAFETY: as above.
    check_scan(&signed, |d, x, out| unsafe {
        scans::Kernel::<i32>::launch(d, LaunchConfig::linear(1, 64), x, out).expect("launch")
    });
    // Multiples of 1/8 below 2^12: every partial sum is exact in f32, so
    // the scan's order of additions does not change it.
    let floats: Vec<f32> = words.iter().map(|w| (*w % 4096) as f32 / 8.0 - 200.0).collect();
    // SAFETY: as above.
    check_scan(&floats, |d, x, out| unsafe {
        scans::Kernel::<f32>::launch(d, LaunchConfig::linear(1, 64), x, out).expect("launch")
    });
}

/// `T::ZERO` and `T::ONE`: a value above zero less one, otherwise two.
#[device]
fn step_down<T: Num>(v: T) -> T {
    if v > T::ZERO { v - T::ONE } else { T::ONE + T::ONE }
}

/// The reciprocal, or zero for zero.
#[device]
fn reciprocal<T: Float>(v: T) -> T {
    if v == T::ZERO { T::ZERO } else { T::ONE / v }
}

/// The value with its lowest one bit cleared.
#[device]
fn clear_lowest<T: Int>(v: T) -> T {
    if v == T::ZERO { v } else { v & (v - T::ONE) }
}

#[kernel(targets(sm_90), specialize(T = [u8, i32, i64, f16, bf16, f32, f64]))]
pub fn steps<T: Num>(x: &[T], out: &mut [T]) {
    let t = thread_idx_x() as usize;
    out[t] = step_down(x[t]);
}

#[kernel(targets(sm_90), specialize(T = [f16, f64]))]
pub fn reciprocals<T: Float>(x: &[T], out: &mut [T]) {
    let t = thread_idx_x() as usize;
    out[t] = reciprocal(x[t]);
}

#[kernel(targets(sm_90), specialize(T = [u16, i64]))]
pub fn lowest_cleared<T: Int>(x: &[T], out: &mut [T]) {
    let t = thread_idx_x() as usize;
    out[t] = clear_lowest(x[t]);
}

/// Runs `launch` on `x` (64 values, outputs poisoned with `poison`) and
/// compares every output, bit for bit, with `f` on the host.
fn check_map<T: DeviceCopy + std::fmt::Debug>(
    x: &[T],
    poison: T,
    f: impl Fn(T) -> T,
    launch: impl Fn(&Device, &DeviceBuffer<T>, &mut DeviceBuffer<T>),
) {
    let device = Device::emulator(Target::Sm90);
    let dx = device.upload(x).expect("upload");
    let mut out = device.upload(&[poison; 64]).expect("upload");
    launch(&device, &dx, &mut out);
    let got = device.download(&out).expect("download");
    for (i, v) in x.iter().enumerate() {
        let want = f(*v);
        assert!(
            format!("{:?}", got[i]) == format!("{want:?}"),
            "element {i} of {v:?}: {:?}, want {want:?}",
            got[i]
        );
    }
}

#[test]
fn zero_and_one_of_each_bound_are_the_types_own() {
    let words: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 7).collect();
    let config = LaunchConfig::linear(1, 64);
    macro_rules! steps {
        ($t:ty, $values:expr, $poison:expr) => {
            // SAFETY: 64 threads, each reads and writes its own element.
            check_map(&$values, $poison, step_down::<$t>, |d, x, out| unsafe {
                steps::Kernel::<$t>::launch(d, config, x, out).expect("launch")
            })
        };
    }
    let signed = |w: &u32| (*w as i32 % 2000) - 1000;
    let value = |w: &u32| signed(w) as f32 / 16.0;
    steps!(u8, words.iter().map(|w| (*w % 3) as u8).collect::<Vec<_>>(), 0xAA);
    steps!(i32, words.iter().map(signed).collect::<Vec<_>>(), i32::MIN);
    steps!(
        i64,
        words.iter().map(|w| signed(w) as i64 * 3).collect::<Vec<_>>(),
        i64::MIN
    );
    steps!(
        f16,
        words.iter().map(|w| f16::from_f32(value(w))).collect::<Vec<_>>(),
        f16::NAN
    );
    steps!(
        bf16,
        words.iter().map(|w| bf16::from_f32(value(w))).collect::<Vec<_>>(),
        bf16::NAN
    );
    steps!(f32, words.iter().map(value).collect::<Vec<_>>(), f32::NAN);
    steps!(f64, words.iter().map(|w| value(w) as f64).collect::<Vec<_>>(), f64::NAN);
    let halves: Vec<f16> = words.iter().map(|w| f16::from_f32(value(w) * (w % 2) as f32)).collect();
    // SAFETY: 64 threads, each reads and writes its own element.
    check_map(&halves, f16::NAN, reciprocal::<f16>, |d, x, out| unsafe {
        reciprocals::Kernel::<f16>::launch(d, config, x, out).expect("launch")
    });
    let doubles: Vec<f64> = halves.iter().map(|h| h.to_f64()).collect();
    // SAFETY: as above.
    check_map(&doubles, f64::NAN, reciprocal::<f64>, |d, x, out| unsafe {
        reciprocals::Kernel::<f64>::launch(d, config, x, out).expect("launch")
    });
    let shorts: Vec<u16> = words.iter().map(|w| (*w % 7 * 0x1234) as u16).collect();
    // SAFETY: as above.
    check_map(&shorts, 0xDEAD, clear_lowest::<u16>, |d, x, out| unsafe {
        lowest_cleared::Kernel::<u16>::launch(d, config, x, out).expect("launch")
    });
    let longs: Vec<i64> = words.iter().map(|w| signed(w) as i64 * 0x1_0001).collect();
    // SAFETY: as above.
    check_map(&longs, i64::MIN, clear_lowest::<i64>, |d, x, out| unsafe {
        lowest_cleared::Kernel::<i64>::launch(d, config, x, out).expect("launch")
    });
}

#[test]
fn max_min_and_the_warp_intrinsics_of_narrowed_bounds_match_the_host() {
    let checked = nvfp4_tests::generic_ops::check(&Device::emulator(Target::Sm90)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked, 4 * 64 * 3 + 4 * 64);
}
