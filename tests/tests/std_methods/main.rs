//! The methods of Rust's numbers and the associated constants in kernels,
//! on the emulator, against Rust's own results: every integer method on
//! every integer type and every exact float method on f32 and f64 over
//! edge cases and random values, bit for bit; the approximate `f32`
//! functions measured in ulp against f64 (the figures in the README).
//! Every kernel here also assembles with ptxas.

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

mod floats;

/// Outputs of one integer-methods kernel per input (of the input's type),
/// and the bit counts (`u32`) per input.
const INT_OUTS: usize = 22;
const INT_COUNTS: usize = 4;

/// The integer methods of every integer type, one thread per input:
/// `a` and `b` are the operands, `n` a shift or exponent.
macro_rules! int_methods {
    ($name:ident, $t:ty) => {
        #[kernel(targets(sm_90, sm_100a))]
        pub fn $name(a: &[$t], b: &[$t], n: &[u32], out: &mut [$t], counts: &mut [u32]) {
            let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
            if i < a.len() {
                let x = a[i];
                let y = b[i];
                let k = n[i];
                let o = i * 22;
                out[o] = x.wrapping_add(y);
                out[o + 1] = x.wrapping_sub(y);
                out[o + 2] = x.wrapping_mul(y);
                out[o + 3] = x.wrapping_div(y | 1);
                out[o + 4] = x.wrapping_rem(y | 1);
                out[o + 5] = x.wrapping_neg();
                out[o + 6] = x.wrapping_shl(k);
                out[o + 7] = x.wrapping_shr(k);
                out[o + 8] = x.wrapping_pow(k % 70);
                out[o + 9] = x.pow(3);
                out[o + 10] = x.saturating_add(y);
                out[o + 11] = x.saturating_sub(y);
                out[o + 12] = x.saturating_mul(y);
                out[o + 13] = x.rotate_left(k);
                out[o + 14] = x.rotate_right(k);
                out[o + 15] = x.rotate_left(3);
                out[o + 16] = x.reverse_bits();
                let p = x.wrapping_mul(y);
                out[o + 17] = x.clamp(y.min(p), y.max(p));
                out[o + 18] = x.min(y);
                out[o + 19] = x.max(y);
                out[o + 20] = x.pow(0);
                out[o + 21] = y.rotate_right(0);
                let c = i * 4;
                counts[c] = x.leading_zeros();
                counts[c + 1] = x.trailing_zeros();
                counts[c + 2] = x.count_ones();
                counts[c + 3] = x.count_zeros();
            }
        }
    };
}

int_methods!(u8_methods, u8);
int_methods!(u16_methods, u16);
int_methods!(u32_methods, u32);
int_methods!(u64_methods, u64);
int_methods!(i32_methods, i32);
int_methods!(i64_methods, i64);

/// What the kernel above computes, on the host with std.
macro_rules! int_expected {
    ($t:ty, $x:expr, $y:expr, $k:expr) => {{
        let (x, y, k): ($t, $t, u32) = ($x, $y, $k);
        let p = x.wrapping_mul(y);
        (
            [
                x.wrapping_add(y),
                x.wrapping_sub(y),
                x.wrapping_mul(y),
                x.wrapping_div(y | 1),
                x.wrapping_rem(y | 1),
                x.wrapping_neg(),
                x.wrapping_shl(k),
                x.wrapping_shr(k),
                x.wrapping_pow(k % 70),
                x.wrapping_pow(3),
                x.saturating_add(y),
                x.saturating_sub(y),
                x.saturating_mul(y),
                x.rotate_left(k),
                x.rotate_right(k),
                x.rotate_left(3),
                x.reverse_bits(),
                x.clamp(y.min(p), y.max(p)),
                x.min(y),
                x.max(y),
                1,
                y,
            ],
            [x.leading_zeros(), x.trailing_zeros(), x.count_ones(), x.count_zeros()],
        )
    }};
}

/// Edge cases of an integer type (as u64 bit patterns) and random values.
fn int_inputs(bits: u32, rng: &mut Rng, random: usize) -> Vec<u64> {
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let mut v: Vec<u64> = vec![
        0,
        1,
        2,
        3,
        7,
        mask,
        mask - 1,
        mask >> 1,
        (mask >> 1) + 1,
        (mask >> 1) + 2,
    ];
    v.extend((0..bits).map(|b| 1u64 << b));
    v.extend((0..random).map(|_| rng.next_u64() & mask));
    v
}

/// Runs an integer-methods kernel on all pairs of `inputs` (a, b) with
/// shift amounts from 0 to 130, and compares with std.
macro_rules! check_ints {
    ($kernel:ident, $t:ty, $bits:expr, $seed:expr) => {{
        let device = Device::emulator(Target::Sm90);
        let mut rng = Rng::new($seed);
        let values = int_inputs($bits, &mut rng, 24);
        let mut a: Vec<$t> = Vec::new();
        let mut b: Vec<$t> = Vec::new();
        let mut n: Vec<u32> = Vec::new();
        for (i, x) in values.iter().enumerate() {
            for (j, y) in values.iter().enumerate() {
                a.push(*x as $t);
                b.push(*y as $t);
                n.push(((i * 7 + j * 3) % 131) as u32);
            }
        }
        let len = a.len();
        let da = device.upload(&a).expect("upload");
        let db = device.upload(&b).expect("upload");
        let dn = device.upload(&n).expect("upload");
        let mut out = device.alloc_zeroed::<$t>(len * INT_OUTS).expect("alloc");
        let mut counts = device.alloc_zeroed::<u32>(len * INT_COUNTS).expect("alloc");
        // SAFETY: one thread per input, each writing its own outputs.
        unsafe {
            $kernel::Kernel::launch(
                &device,
                LaunchConfig::linear(len.div_ceil(128) as u32, 128),
                &da,
                &db,
                &dn,
                &mut out,
                &mut counts,
            )
            .expect("launch")
        };
        let out = device.download(&out).expect("download");
        let counts = device.download(&counts).expect("download");
        for i in 0..len {
            let (want, want_counts) = int_expected!($t, a[i], b[i], n[i]);
            let got = &out[i * INT_OUTS..(i + 1) * INT_OUTS];
            assert_eq!(
                got,
                &want[..],
                "{}: x = {}, y = {}, k = {}",
                stringify!($t),
                a[i],
                b[i],
                n[i]
            );
            let got = &counts[i * INT_COUNTS..(i + 1) * INT_COUNTS];
            assert_eq!(got, &want_counts[..], "{}: counts of {}", stringify!($t), a[i]);
        }
    }};
}

#[test]
fn integer_methods_match_std_on_every_integer_type() {
    check_ints!(u8_methods, u8, 8, 1);
    check_ints!(u16_methods, u16, 16, 2);
    check_ints!(u32_methods, u32, 32, 3);
    check_ints!(u64_methods, u64, 64, 4);
    check_ints!(i32_methods, i32, 32, 5);
    check_ints!(i64_methods, i64, 64, 6);
}

/// The methods of the signed types only, and of the unsigned only.
macro_rules! signed_methods {
    ($name:ident, $t:ty) => {
        #[kernel(targets(sm_90))]
        pub fn $name(a: &[$t], out: &mut [$t]) {
            let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
            if i < a.len() {
                let x = a[i];
                out[3 * i] = x.abs();
                out[3 * i + 1] = x.wrapping_abs();
                out[3 * i + 2] = x.signum();
            }
        }
    };
}
signed_methods!(i32_signed, i32);
signed_methods!(i64_signed, i64);

macro_rules! unsigned_methods {
    ($name:ident, $t:ty) => {
        #[kernel(targets(sm_90))]
        pub fn $name(a: &[$t], b: &[$t], powers: &mut [u32], ceils: &mut [$t]) {
            let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
            if i < a.len() {
                // Bit 0: is_power_of_two; bits 1-3: is_multiple_of a
                // run-time divisor, of the constants 0 and 3.
                powers[i] = a[i].is_power_of_two() as u32
                    | (a[i].is_multiple_of(b[i]) as u32) << 1
                    | (a[i].is_multiple_of(0) as u32) << 2
                    | (a[i].is_multiple_of(3) as u32) << 3;
                ceils[i] = a[i].div_ceil(b[i]);
            }
        }
    };
}
unsigned_methods!(u8_unsigned, u8);
unsigned_methods!(u16_unsigned, u16);
unsigned_methods!(u32_unsigned, u32);
unsigned_methods!(u64_unsigned, u64);

#[test]
fn div_ceil_matches_std_in_both_widths() {
    let pairs = nvfp4_tests::div_ceil::check(&Device::emulator(Target::Sm90), 11).unwrap_or_else(|e| panic!("{e}"));
    assert!(pairs > 0);
}

#[test]
fn the_last_block_to_arrive_sees_every_block_s_release() {
    let blocks = nvfp4_tests::atomics::check(&Device::emulator(Target::Sm90), 37, 12).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(blocks, 37);
}

#[test]
fn signed_and_unsigned_only_methods_match_std() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(7);
    macro_rules! signed {
        ($kernel:ident, $t:ty, $bits:expr) => {{
            let a: Vec<$t> = int_inputs($bits, &mut rng, 64).into_iter().map(|v| v as $t).collect();
            let da = device.upload(&a).expect("upload");
            let mut out = device.alloc_zeroed::<$t>(a.len() * 3).expect("alloc");
            // SAFETY: one thread per input.
            unsafe {
                $kernel::Kernel::launch(&device, LaunchConfig::linear(1, a.len() as u32), &da, &mut out)
                    .expect("launch")
            };
            let out = device.download(&out).expect("download");
            for (i, x) in a.iter().enumerate() {
                assert_eq!(
                    out[3 * i..3 * i + 3],
                    [x.wrapping_abs(), x.wrapping_abs(), x.signum()],
                    "{x}"
                );
            }
        }};
    }
    signed!(i32_signed, i32, 32);
    signed!(i64_signed, i64, 64);
    // div_ceil and is_multiple_of over every pair of edge cases and random
    // values, zero divisors included: `x.div_ceil(0)` is `MAX`, as `x / 0`
    // gives in a kernel (Rust panics); `x.is_multiple_of(0)` is `x == 0`,
    // as in Rust.
    macro_rules! unsigned {
        ($kernel:ident, $t:ty, $bits:expr) => {{
            let values: Vec<$t> = int_inputs($bits, &mut rng, 24).into_iter().map(|v| v as $t).collect();
            let (a, b): (Vec<$t>, Vec<$t>) = values.iter().flat_map(|&x| values.iter().map(move |&y| (x, y))).unzip();
            let (da, db) = (device.upload(&a).expect("upload"), device.upload(&b).expect("upload"));
            let mut powers = device.alloc_zeroed::<u32>(a.len()).expect("alloc");
            let mut ceils = device.alloc_zeroed::<$t>(a.len()).expect("alloc");
            // SAFETY: one thread per input pair.
            unsafe {
                $kernel::Kernel::launch(
                    &device,
                    LaunchConfig::linear((a.len() as u32).div_ceil(128), 128),
                    &da,
                    &db,
                    &mut powers,
                    &mut ceils,
                )
                .expect("launch")
            };
            let (powers, ceils) = (
                device.download(&powers).expect("download"),
                device.download(&ceils).expect("download"),
            );
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                let flags = x.is_power_of_two() as u32
                    | (x.is_multiple_of(*y) as u32) << 1
                    | (x.is_multiple_of(0) as u32) << 2
                    | (x.is_multiple_of(3) as u32) << 3;
                assert_eq!(powers[i], flags, "{x}, {y}: is_power_of_two and is_multiple_of");
                let want = if *y == 0 { <$t>::MAX } else { x.div_ceil(*y) };
                assert_eq!(ceils[i], want, "{x}.div_ceil({y})");
            }
        }};
    }
    unsigned!(u8_unsigned, u8, 8);
    unsigned!(u16_unsigned, u16, 16);
    unsigned!(u32_unsigned, u32, 32);
    unsigned!(u64_unsigned, u64, 64);
}

/// Associated constants, as the kernel computes them.
#[kernel(targets(sm_90))]
pub fn associated_constants(ints: &mut [u64], floats: &mut [f32], halves: &mut [u16], wide: &mut [f64]) {
    ints[0] = u32::MAX as u64;
    ints[1] = i32::MIN as u64;
    ints[2] = i64::MIN as u64;
    ints[3] = i64::MAX as u64;
    ints[4] = u8::MAX as u64;
    ints[5] = u16::MAX as u64;
    ints[6] = u64::MAX;
    ints[7] = u32::BITS as u64;
    ints[8] = i32::MAX as u64;
    ints[9] = (i32::MIN / 2) as u64;
    floats[0] = f32::INFINITY;
    floats[1] = f32::EPSILON;
    floats[2] = f32::MAX;
    floats[3] = f32::MIN;
    floats[4] = f32::MIN_POSITIVE;
    floats[5] = core::f32::consts::PI;
    floats[6] = core::f32::consts::LN_2;
    floats[7] = f32::NEG_INFINITY;
    halves[0] = f16::MAX.to_bits();
    halves[1] = f16::EPSILON.to_bits();
    halves[2] = f16::MIN.to_bits();
    halves[3] = bf16::MAX.to_bits();
    halves[4] = bf16::EPSILON.to_bits();
    halves[5] = f16::INFINITY.to_bits();
    halves[6] = bf16::MIN_POSITIVE.to_bits();
    halves[7] = f16::ONE.to_bits();
    wide[0] = f64::EPSILON;
    wide[1] = std::f64::consts::E;
    wide[2] = f64::MAX;
    wide[3] = f64::from_bits(0x4000_0000_0000_0001);
}

#[test]
fn associated_constants_have_rusts_values() {
    let device = Device::emulator(Target::Sm90);
    let mut ints = device.alloc_zeroed::<u64>(10).expect("alloc");
    let mut floats = device.alloc_zeroed::<f32>(8).expect("alloc");
    let mut halves = device.alloc_zeroed::<u16>(8).expect("alloc");
    let mut wide = device.alloc_zeroed::<f64>(4).expect("alloc");
    // SAFETY: one thread writes the first elements of each buffer.
    unsafe {
        associated_constants::Kernel::launch(
            &device,
            LaunchConfig::linear(1, 1),
            &mut ints,
            &mut floats,
            &mut halves,
            &mut wide,
        )
        .expect("launch")
    };
    assert_eq!(
        device.download(&ints).expect("download"),
        [
            u32::MAX as u64,
            i32::MIN as u64,
            i64::MIN as u64,
            i64::MAX as u64,
            255,
            65535,
            u64::MAX,
            32,
            i32::MAX as u64,
            (i32::MIN / 2) as u64
        ]
    );
    assert_eq!(
        device.download(&floats).expect("download"),
        [
            f32::INFINITY,
            f32::EPSILON,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            std::f32::consts::PI,
            std::f32::consts::LN_2,
            f32::NEG_INFINITY
        ]
    );
    assert_eq!(
        device.download(&halves).expect("download"),
        [
            f16::MAX.to_bits(),
            f16::EPSILON.to_bits(),
            f16::MIN.to_bits(),
            bf16::MAX.to_bits(),
            bf16::EPSILON.to_bits(),
            f16::INFINITY.to_bits(),
            bf16::MIN_POSITIVE.to_bits(),
            f16::ONE.to_bits()
        ]
    );
    assert_eq!(
        device.download(&wide).expect("download"),
        [
            f64::EPSILON,
            std::f64::consts::E,
            f64::MAX,
            f64::from_bits(0x4000_0000_0000_0001)
        ]
    );
}

/// Every kernel of this file assembles with ptxas for each of its targets.
#[test]
fn every_method_kernel_assembles_with_ptxas() {
    let Some(ptxas) = nvfp4_tests::find_ptxas() else {
        assert!(!nvfp4_tests::in_ci(), "CI needs ptxas");
        eprintln!("no ptxas: skipped");
        return;
    };
    let variants = [
        u8_methods::VARIANTS,
        u16_methods::VARIANTS,
        u32_methods::VARIANTS,
        u64_methods::VARIANTS,
        i32_methods::VARIANTS,
        i64_methods::VARIANTS,
        i32_signed::VARIANTS,
        i64_signed::VARIANTS,
        u8_unsigned::VARIANTS,
        u16_unsigned::VARIANTS,
        u32_unsigned::VARIANTS,
        u64_unsigned::VARIANTS,
        floats::f32_methods::VARIANTS,
        floats::f64_methods::VARIANTS,
        nvfp4_tests::approx::approximate_methods::VARIANTS,
        associated_constants::VARIANTS,
    ];
    for v in variants.iter().flat_map(|v| v.iter()) {
        for (target, ptx) in v.ptx {
            nvfp4_tests::assemble(&ptxas, ptx, target.name()).unwrap_or_else(|e| panic!("{}: {e}", v.entry));
        }
    }
}

/// `T::from(x)` for every lossless integer conversion kernels have, from
/// one word: its low bit as a `bool`, its low byte, its low half, the word
/// and the word as `i32`.
#[device]
fn lossless_ints(x: u32) -> [u64; 21] {
    let (b, byte, half, signed) = (x & 1 == 1, x as u8, x as u16, x as i32);
    [
        u8::from(b) as u64,
        u16::from(b) as u64,
        u16::from(byte) as u64,
        u32::from(b) as u64,
        u32::from(byte) as u64,
        u32::from(half) as u64,
        u64::from(b),
        u64::from(byte),
        u64::from(half),
        u64::from(x),
        usize::from(b) as u64,
        usize::from(byte) as u64,
        usize::from(half) as u64,
        i32::from(b) as u64,
        i32::from(byte) as u64,
        i32::from(half) as u64,
        i64::from(b) as u64,
        i64::from(byte) as u64,
        i64::from(half) as u64,
        i64::from(signed) as u64,
        i64::from(x) as u64,
    ]
}

/// The float ones: also the word's halves as `f16` and `bf16`, and the
/// word as `f32`.
#[device]
fn lossless_floats(x: u32) -> [f64; 13] {
    let (b, byte, half, signed) = (x & 1 == 1, x as u8, x as u16, x as i32);
    let (h, bh, f) = (
        f16::from_bits(x as u16),
        bf16::from_bits((x >> 16) as u16),
        f32::from_bits(x),
    );
    [
        f32::from(b) as f64,
        f32::from(byte) as f64,
        f32::from(half) as f64,
        f32::from(h) as f64,
        f32::from(bh) as f64,
        f64::from(b),
        f64::from(byte),
        f64::from(half),
        f64::from(x),
        f64::from(signed),
        f64::from(f),
        f64::from(h),
        f64::from(bh),
    ]
}

#[kernel(targets(sm_90))]
pub fn lossless_from(w: &[u32], ints: &mut [u64], floats: &mut [f64]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < w.len() {
        let (xi, xf) = (lossless_ints(w[i]), lossless_floats(w[i]));
        #[unroll]
        for k in 0..21 {
            ints[21 * i + k] = xi[k];
        }
        #[unroll]
        for k in 0..13 {
            floats[13 * i + k] = xf[k];
        }
    }
}

#[test]
fn lossless_from_conversions_match_std() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(19);
    let words: Vec<u32> = int_inputs(32, &mut rng, 200).into_iter().map(|v| v as u32).collect();
    let dw = device.upload(&words).expect("upload");
    let mut ints = device.alloc_zeroed::<u64>(21 * words.len()).expect("alloc");
    let mut floats = device.alloc_zeroed::<f64>(13 * words.len()).expect("alloc");
    // SAFETY: one thread per word, 21 and 13 outputs each.
    unsafe {
        lossless_from::Kernel::launch(
            &device,
            LaunchConfig::linear((words.len() as u32).div_ceil(128), 128),
            &dw,
            &mut ints,
            &mut floats,
        )
    }
    .expect("launch");
    let (ints, floats) = (
        device.download(&ints).expect("download"),
        device.download(&floats).expect("download"),
    );
    for (i, &x) in words.iter().enumerate() {
        assert_eq!(ints[21 * i..21 * i + 21], lossless_ints(x), "{x:#x}");
        for (k, (&got, want)) in floats[13 * i..13 * i + 13].iter().zip(lossless_floats(x)).enumerate() {
            // A NaN stays a NaN (its payload is the hardware's).
            let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
            assert!(same, "{x:#x}, conversion {k}: {got:e} against {want:e}");
        }
    }
}
