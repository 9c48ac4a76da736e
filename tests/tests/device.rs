//! `#[device]` functions: called from kernels and from each other, in the
//! same module, another module and another crate, with const generics,
//! early returns, `mut` parameters, arrays and slices; inlined, so the
//! PTX has one function per kernel. Run on the emulator against the same
//! functions called on the host.

use nvfp4_dsl::prelude::*;

#[device]
fn mix(x: u32, y: u32) -> u32 {
    (x ^ y.rotate_left(5)).wrapping_mul(0x9E37_79B9)
}

/// The number of steps of the Collatz sequence from `x`, at most `LIMIT`:
/// a loop with an early `return`.
#[device]
fn collatz_steps<const LIMIT: u32>(mut x: u32) -> u32 {
    let mut steps = 0;
    while x != 1 {
        if steps == LIMIT {
            return LIMIT;
        }
        x = if x & 1 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

mod helpers {
    use nvfp4_dsl::prelude::*;

    /// Sum of the four elements of an array.
    #[device]
    pub fn sum4(v: [f32; 4]) -> f32 {
        (v[0] + v[1]) + (v[2] + v[3])
    }

    /// `N` consecutive elements of `x` from `start`, scaled.
    #[device]
    pub fn load_scaled<const N: usize>(x: &[f32], start: usize, scale: f32) -> [f32; N] {
        let mut out = [0.0f32; N];
        #[unroll]
        for i in 0..N {
            out[i] = x[start + i] * scale;
        }
        out
    }

    /// The sum of an array of any length (`N` inferred from the argument).
    /// Kernels index local arrays in unrolled loops (registers have no
    /// iterators).
    #[device]
    #[allow(clippy::needless_range_loop)]
    pub fn sum<const N: usize>(v: [f32; N]) -> f32 {
        let mut total = 0.0f32;
        #[unroll]
        for i in 0..N {
            total += v[i];
        }
        total
    }

    /// Calls device functions of its own module by their plain names; the
    /// length of `load_scaled` comes from the type the call must have.
    #[device]
    pub fn scaled_sum(x: &[f32], start: usize) -> f32 {
        let v: [f32; 4] = load_scaled(x, start, 0.5);
        sum4(v) - sum(v) + sum4(load_scaled::<4>(x, start, 0.5))
    }

    /// Clamps through the caller's module: `super::` from here.
    #[device]
    pub fn mixed_twice(x: u32) -> u32 {
        super::mix(super::mix(x, 1), 2)
    }
}

#[kernel(targets(sm_90, sm_100a))]
pub fn device_calls(x: &[f32], seeds: &[u32], sums: &mut [f32], ints: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < seeds.len() {
        let s = seeds[i];
        ints[3 * i] = mix(s, i as u32);
        ints[3 * i + 1] = collatz_steps::<100>(s % 1000 + 1);
        ints[3 * i + 2] = crate::helpers::mixed_twice(s);
        sums[i] = helpers::scaled_sum(x, 4 * i);
    }
}

fn collatz_host(mut x: u32, limit: u32) -> u32 {
    let mut steps = 0;
    while x != 1 {
        if steps == limit {
            return limit;
        }
        x = if x & 1 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

#[test]
fn device_functions_compute_what_they_compute_on_the_host() {
    let device = Device::emulator(Target::Sm90);
    let n = 200usize;
    let seeds: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ 77).collect();
    let x: Vec<f32> = (0..4 * n).map(|i| i as f32 * 0.25 - 3.0).collect();
    let dx = device.upload(&x).expect("upload");
    let ds = device.upload(&seeds).expect("upload");
    let mut sums = device.alloc_zeroed::<f32>(n).expect("alloc");
    let mut ints = device.alloc_zeroed::<u32>(3 * n).expect("alloc");
    // SAFETY: one thread per seed, each writing its own outputs.
    unsafe {
        device_calls::Kernel::launch(&device, LaunchConfig::linear(2, 128), &dx, &ds, &mut sums, &mut ints)
            .expect("launch")
    };
    let sums = device.download(&sums).expect("download");
    let ints = device.download(&ints).expect("download");
    for i in 0..n {
        let s = seeds[i];
        assert_eq!(ints[3 * i], mix(s, i as u32));
        assert_eq!(ints[3 * i + 1], collatz_host(s % 1000 + 1, 100));
        assert_eq!(ints[3 * i + 2], helpers::mixed_twice(s));
        let v: Vec<f32> = x[4 * i..4 * i + 4].iter().map(|v| v * 0.5).collect();
        assert_eq!(sums[i], (v[0] + v[1]) + (v[2] + v[3]));
    }
    // Inlined: one entry, no `.func`, no `call`.
    let ptx = device_calls::VARIANTS[0].ptx[0].1;
    let calls = ptx.lines().any(|l| l.trim_start().starts_with("call"));
    assert!(!ptx.contains(".func") && !calls, "{ptx}");
}

/// A device function of another crate (the kernels' decode helpers), by
/// its path there and through a `use`.
#[kernel(targets(sm_90))]
pub fn cross_crate(words: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    #[unroll]
    for j in 0..4 {
        out[4 * i + j] = nvfp4_kernels::decode::e2m1_pair_scaled(words[i], j as u32).to_bits();
    }
    out[4 * i + 3] ^= e2m1_pair_scaled(words[i], 0).to_bits();
}

use nvfp4_kernels::decode::e2m1_pair_scaled;

#[test]
fn device_functions_of_another_crate_are_called_by_path_and_by_use() {
    let device = Device::emulator(Target::Sm90);
    let words: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    let dw = device.upload(&words).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(4 * words.len()).expect("alloc");
    // SAFETY: one thread per word.
    unsafe { cross_crate::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dw, &mut out).expect("launch") };
    let out = device.download(&out).expect("download");
    for (i, w) in words.iter().enumerate() {
        let want: Vec<u32> = (0..4).map(|j| e2m1_pair_scaled(*w, j).to_bits()).collect();
        let last = want[3] ^ want[0];
        assert_eq!(out[4 * i..4 * i + 4], [want[0], want[1], want[2], last], "{w:#x}");
    }
}

/// A small struct of values, kept in registers.
#[device]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinMax {
    pub lo: f32,
    pub hi: f32,
    pub count: u32,
}

#[device]
fn extend(m: MinMax, v: f32) -> MinMax {
    MinMax {
        count: m.count + 1,
        lo: m.lo.min(v),
        hi: m.hi.max(v),
    }
}

mod shapes {
    use nvfp4_dsl::prelude::*;

    #[device]
    #[derive(Clone, Copy, Debug)]
    pub struct Span2 {
        pub start: u32,
        pub len: u32,
    }

    #[device]
    pub fn end(s: Span2) -> u32 {
        s.start + s.len
    }
}

#[kernel(targets(sm_90))]
pub fn structs(x: &[f32], out: &mut [f32], ends: &mut [u32]) {
    let mut m = MinMax {
        lo: f32::INFINITY,
        hi: f32::NEG_INFINITY,
        count: 0,
    };
    for i in 0..x.len() {
        m = extend(m, x[i]);
    }
    m.count *= 2;
    out[0] = m.lo;
    out[1] = m.hi;
    out[2] = m.count as f32;
    let s = shapes::Span2 { start: 3, len: m.count };
    ends[0] = shapes::end(s);
}

#[test]
fn device_structs_are_built_passed_returned_and_updated_by_field() {
    let device = Device::emulator(Target::Sm90);
    let x = [3.5f32, -2.0, 7.25, 0.0, 1.0];
    let dx = device.upload(&x).expect("upload");
    let mut out = device.alloc_zeroed::<f32>(3).expect("alloc");
    let mut ends = device.alloc_zeroed::<u32>(1).expect("alloc");
    // SAFETY: one thread writes three floats and one word.
    unsafe { structs::Kernel::launch(&device, LaunchConfig::linear(1, 1), &dx, &mut out, &mut ends).expect("launch") };
    assert_eq!(device.download(&out).expect("download"), [-2.0, 7.25, 10.0]);
    assert_eq!(device.download(&ends).expect("download"), [13]);
}

/// A kernel that calls a device function defined after it in the file.
#[kernel(targets(sm_90))]
pub fn calls_later_definition(out: &mut [u32]) {
    out[0] = defined_later(20);
}

#[device]
fn defined_later(x: u32) -> u32 {
    x * 2 + 1
}

#[test]
fn a_device_function_may_follow_its_caller() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.alloc_zeroed::<u32>(1).expect("alloc");
    // SAFETY: one thread writes one word.
    unsafe { calls_later_definition::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut out).expect("launch") };
    assert_eq!(device.download(&out).expect("download"), [41]);
}

/// Device functions that take the caller's shared memory and the caller's
/// local array by reference.
mod tiles {
    use nvfp4_dsl::prelude::*;

    /// Adds `x[start..start + N]` times `w` into the caller's accumulator.
    #[device]
    pub fn accumulate<const N: usize>(acc: &mut [f32; N], x: &[f32], start: usize, w: f32) {
        #[unroll]
        for i in 0..N {
            acc[i] += x[start + i] * w;
        }
    }

    /// Passes its accumulator on, as Rust reborrows it.
    #[device]
    pub fn accumulate_pair<const N: usize>(acc: &mut [f32; N], x: &[f32], start: usize) {
        accumulate(acc, x, start, 1.0);
        accumulate(acc, x, start + N, -0.5);
    }

    /// Each thread stores one element of `x` from `base` into the tile.
    #[device]
    pub fn stage<const T: usize>(tile: &mut SharedArray<f32, T>, x: &[f32], base: usize) {
        let t = thread_idx_x() as usize;
        tile[t] = x[base + t];
    }

    /// The sum of a thread's two neighbours in the tile (wrapping around).
    #[device]
    pub fn neighbours<const T: usize>(tile: &SharedArray<f32, T>) -> f32 {
        let t = thread_idx_x() as usize;
        tile[(t + 1) % T] + tile[(t + T - 1) % T]
    }
}

#[kernel(targets(sm_90))]
pub fn through_references(x: &[f32], out: &mut [f32]) {
    let tile = shared_array::<f32, 64>();
    let b = block_idx_x() as usize;
    tiles::stage(tile, x, 64 * b);
    sync_threads();
    let i = 64 * b + thread_idx_x() as usize;
    let mut acc = [0.5f32; 4];
    tiles::accumulate_pair(&mut acc, x, 8 * (i % 23));
    out[5 * i] = tiles::neighbours(tile);
    for j in 0..acc.len() {
        out[5 * i + 1 + j] = acc[j];
    }
}

#[test]
fn device_functions_take_shared_arrays_and_local_arrays_by_reference() {
    let device = Device::emulator(Target::Sm90);
    let blocks = 3usize;
    let x: Vec<f32> = (0..64 * blocks)
        .map(|i| ((i * 37) % 101) as f32 * 0.125 - 6.0)
        .collect();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&vec![f32::NAN; 5 * 64 * blocks]).expect("upload");
    // SAFETY: thread i writes out[5i..5i + 5] and reads x inside 64 * blocks.
    unsafe {
        through_references::Kernel::launch(&device, LaunchConfig::linear(blocks as u32, 64), &dx, &mut out)
            .expect("launch")
    };
    let out = device.download(&out).expect("download");
    for i in 0..64 * blocks {
        let (b, t) = (i / 64, i % 64);
        let neighbours = x[64 * b + (t + 1) % 64] + x[64 * b + (t + 63) % 64];
        let mut acc = [0.5f32; 4];
        tiles::accumulate_pair(&mut acc, &x, 8 * (i % 23));
        assert_eq!(out[5 * i], neighbours, "thread {i}");
        assert_eq!(out[5 * i + 1..5 * i + 5], acc, "thread {i}");
    }
}

#[kernel(targets(sm_90))]
pub fn accumulate_by_reference(x: &[f32], out: &mut [f32]) {
    let mut acc = [0.0f32; 4];
    tiles::accumulate(&mut acc, x, 0, 2.0);
    tiles::accumulate(&mut acc, x, 4, 3.0);
    for j in 0..acc.len() {
        out[j] = acc[j];
    }
}

#[kernel(targets(sm_90))]
#[allow(clippy::needless_range_loop)]
pub fn accumulate_written_inline(x: &[f32], out: &mut [f32]) {
    let mut acc = [0.0f32; 4];
    #[unroll]
    for i in 0..4 {
        acc[i] += x[i] * 2.0;
    }
    #[unroll]
    for i in 0..4 {
        acc[i] += x[4 + i] * 3.0;
    }
    for j in 0..acc.len() {
        out[j] = acc[j];
    }
}

#[test]
fn a_local_array_passed_by_reference_is_not_copied() {
    // The instructions, with the kernel's name (in its parameters' names)
    // left out.
    let instructions = |v: &nvfp4_dsl::Variant| -> Vec<String> {
        v.ptx[0]
            .1
            .lines()
            .map(str::trim)
            .filter(|l| l.ends_with(';') && !l.starts_with("//") && !l.starts_with('.'))
            .map(|l| l.replace(v.kernel, "kernel"))
            .collect()
    };
    let by_reference = instructions(&accumulate_by_reference::VARIANTS[0]);
    let inline = instructions(&accumulate_written_inline::VARIANTS[0]);
    assert_eq!(by_reference, inline);
}
