//! Assignments as a Rust author writes them: destructuring assignment
//! (`(a, b) = (b, a + b)`, nested, with `_`, to array elements and tuple
//! fields), `std::mem::swap`, and a `let` of an unsuffixed literal whose
//! type comes from a later `+=` (`let mut acc = 0.0; acc += x[i];`). Run on
//! the emulator against the same functions called on the host.

use nvfp4_dsl::prelude::*;

/// The `n`th term of a Fibonacci-like sequence from `a` and `b`: each step
/// reads both old values before writing either.
#[device]
fn fib(a: u32, b: u32, n: u32) -> u32 {
    let (mut x, mut y) = (a, b);
    for _ in 0..n {
        (x, y) = (y, x.wrapping_add(y));
    }
    x
}

/// Swaps of locals, slice elements and tuple fields, nested targets and
/// `_`, each reading every value before writing any; writes `v[..4]`.
#[device]
fn shuffle(seed: u32, v: &mut [u32]) {
    v[0] = seed;
    v[1] = seed.rotate_left(9);
    v[2] = seed ^ 0x5555_5555;
    v[3] = seed.wrapping_mul(7);
    let (mut p, mut q) = ((seed % 4) as usize, ((seed >> 8) % 4) as usize);
    for _ in 0..(seed >> 16) % 5 {
        (v[p], v[q]) = (v[q], v[p].wrapping_add(1));
        std::mem::swap(&mut p, &mut q);
        q = (q + 1) % 4;
    }
    let mut t = (v[0], v[1]);
    (t.0, t.1) = (t.1, t.0 ^ t.1);
    let mut w = v[3];
    v[3] = w.wrapping_add(t.0);
    ((v[2], _), w) = ((t.0.wrapping_sub(v[3]), t.1), v[2].rotate_left(w % 32));
    core::mem::swap(&mut v[0], &mut w);
    v[1] ^= w;
}

/// Sums whose accumulators take their types from the values added.
#[device]
fn sums(x: &[f32], n: &[u32], start: usize) -> (f32, u32) {
    let mut acc = 0.0;
    let mut count = 0;
    for i in start..start + 4 {
        acc += x[i];
        count += n[i] >> 4;
    }
    (acc * 0.5, count)
}

#[kernel(targets(sm_90))]
pub fn assignments(seeds: &[u32], x: &[f32], out: &mut [u32], sums_out: &mut [f32]) {
    let i = thread_idx_x() as usize;
    let s = seeds[i];
    out[6 * i] = fib(s % 1000, s >> 20, s % 50);
    shuffle(s, &mut out[6 * i + 1..]);
    let (f, c) = sums(x, seeds, i);
    out[6 * i + 5] = c;
    sums_out[i] = f;
}

fn host(seeds: &[u32], x: &[f32], i: usize) -> ([u32; 6], f32) {
    let s = seeds[i];
    let mut v = [0u32; 4];
    shuffle(s, &mut v);
    let (f, c) = sums(x, seeds, i);
    ([fib(s % 1000, s >> 20, s % 50), v[0], v[1], v[2], v[3], c], f)
}

#[test]
fn destructuring_assignment_swap_and_inferred_accumulators_match_the_host() {
    let device = Device::emulator(Target::Sm90);
    let threads = 256usize;
    let seeds: Vec<u32> = (0..threads as u32 + 4)
        .map(|i| i.wrapping_mul(0x2545_F491) ^ 0x5bd1_e995)
        .collect();
    let x: Vec<f32> = seeds.iter().map(|s| (s % 2001) as f32 * 0.125 - 125.0).collect();
    let ds = device.upload(&seeds).expect("upload");
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&vec![0xdead_beef_u32; 6 * threads]).expect("upload");
    let mut dsums = device.upload(&vec![f32::NAN; threads]).expect("upload");
    // SAFETY: thread i reads seeds[i..i + 4] and x[i..i + 4] and writes its own six outputs and sum.
    unsafe {
        assignments::Kernel::launch(
            &device,
            LaunchConfig::linear(1, threads as u32),
            &ds,
            &dx,
            &mut out,
            &mut dsums,
        )
    }
    .expect("launch");
    let out = device.download(&out).expect("download");
    let got_sums = device.download(&dsums).expect("download");
    let mut distinct = std::collections::HashSet::new();
    for i in 0..threads {
        let (want, want_sum) = host(&seeds, &x, i);
        assert_eq!(out[6 * i..6 * i + 6], want, "thread {i}");
        assert_eq!(got_sums[i].to_bits(), want_sum.to_bits(), "sum of thread {i}");
        distinct.insert(want);
    }
    assert!(distinct.len() > 200, "{} distinct results", distinct.len());
}
