//! Loop forms beyond `for i in a..b`: labels (`break 'label` and
//! `continue 'label` on `for`, `while` and `loop`, out of nested run-time
//! loops, out of and into `#[unroll]` loops, a device function's labels
//! kept apart from its caller's) and reversed ranges (`(a..b).rev()`,
//! `(a..=b).rev()` down to the type's minimum, `.rev().step_by(s)`, run-time
//! and unrolled) and element loops over slices and local arrays
//! (`x.iter()`, `for v in x`, `&v`, `.enumerate()`, `.rev()`, writing
//! through `x.iter_mut()`; an array's loops are unrolled) and loops with
//! constant bounds that index a local array by their variable (unrolled
//! without `#[unroll]`). Run on the emulator against the same functions
//! called on the host.

use nvfp4_dsl::prelude::*;

#[device]
fn mix(seed: u32, a: u32, b: u32) -> u32 {
    let x = seed ^ a.wrapping_mul(0x85EB_CA6B) ^ b.wrapping_mul(0xC2B2_AE35);
    (x ^ (x >> 15)).wrapping_mul(0x9E37_79B9) >> 4
}

/// The index of the first value of a `rows` x `cols` grid divisible by
/// `d`, row by row (`rows * cols` if none): a `break` out of two loops.
#[device]
fn find(seed: u32, rows: u32, cols: u32, d: u32) -> u32 {
    let mut found = rows * cols;
    'rows: for r in 0..rows {
        for c in 0..cols {
            if mix(seed, r, c).is_multiple_of(d) {
                found = r * cols + c;
                break 'rows;
            }
        }
    }
    found
}

/// A row's values summed until one divisible by 5 drops the rest of the
/// row (`continue 'rows` from the inner loop); those divisible by 7 are
/// skipped (`continue 'values`); each finished row is mixed in.
#[device]
fn skip_rows(seed: u32) -> u32 {
    let mut sum = 0u32;
    let mut r = 0u32;
    'rows: while r < 8 {
        r += 1;
        let mut c = 0u32;
        'values: loop {
            c += 1;
            if c > 6 {
                break 'values;
            }
            let v = mix(seed, r, c);
            if v.is_multiple_of(5) {
                continue 'rows;
            }
            if v.is_multiple_of(7) {
                continue 'values;
            }
            sum = sum.wrapping_add(v);
        }
        sum ^= r << 8;
    }
    sum
}

/// An `#[unroll]` loop inside a labeled run-time loop, left from the
/// unrolled body; then a labeled `#[unroll]` loop left from a run-time
/// loop inside it.
#[device]
fn unrolled(seed: u32) -> u32 {
    let mut acc = 0u32;
    'scan: for i in 0..seed % 13 {
        #[unroll]
        for j in 0..4u32 {
            let v = mix(seed, i, j);
            if v.is_multiple_of(11) {
                break 'scan;
            }
            if v.is_multiple_of(3) {
                continue 'scan;
            }
            acc = acc.wrapping_add(v);
        }
        acc = acc.rotate_left(3);
    }
    #[unroll]
    'lanes: for j in 0..4u32 {
        let mut k = 0u32;
        while k < 5 {
            k += 1;
            let v = mix(seed, j + 10, k);
            if v.is_multiple_of(13) {
                continue 'lanes;
            }
            if v.is_multiple_of(17) {
                break 'lanes;
            }
            acc ^= v;
        }
        acc = acc.wrapping_mul(3);
    }
    acc
}

/// Reversed ranges, each value weighted by its position, so that the order
/// counts.
#[device]
fn reversed(seed: u32) -> u32 {
    let (a, b) = (seed % 7, seed % 23);
    let mut h = 0u32;
    for i in (a..b).rev() {
        h = h.wrapping_mul(31).wrapping_add(i);
    }
    for i in (a..=b).rev() {
        h = h.wrapping_mul(37) ^ i;
    }
    let step = (seed >> 5) % 5 + 1;
    'down: for i in (a..b + 9).rev().step_by(step as usize) {
        if i == 3 {
            continue 'down;
        }
        h = h.wrapping_mul(41).wrapping_add(i);
    }
    // Down to the type's minimum, and from its maximum: no wrap.
    let lo = i32::MIN + (seed % 3) as i32;
    for i in (i32::MIN..=lo).rev() {
        h = h.wrapping_mul(43) ^ i as u32;
    }
    for i in (u32::MAX - seed % 4..=u32::MAX).rev() {
        h = h.wrapping_mul(53) ^ i;
    }
    let mut n = 0u32;
    for i in (0u8..=(seed % 4) as u8).rev() {
        n = n * 10 + i as u32;
    }
    for i in (a as u8..(b + 5) as u8).rev().step_by(2) {
        n = n.wrapping_mul(7) ^ i as u32;
    }
    #[unroll]
    for j in (1u32..8).rev().step_by(3) {
        h = h.wrapping_mul(47).wrapping_add(j);
    }
    let big = (seed as u64) << 20;
    for i in (big..big + 100).rev().step_by((seed % 50 + 30) as usize) {
        h = h.wrapping_add(i as u32) ^ (i >> 32) as u32;
    }
    h ^ n
}

/// Element loops over slices: `iter()`, `for &v in x`, `enumerate()` with
/// `*w` and with `&v`, a label, and both reversed.
#[device]
fn element_sums(x: &[u32], weights: &[u32]) -> [u32; 6] {
    let mut a = 0u32;
    for v in x.iter() {
        a = a.wrapping_mul(3).wrapping_add(*v);
    }
    let mut b = 0u32;
    for &v in x {
        b ^= v.rotate_left(b % 32);
    }
    let mut c = 0u32;
    for (i, w) in weights.iter().enumerate() {
        c = c.wrapping_add(w.wrapping_mul(i as u32));
    }
    let mut d = 0u32;
    'scan: for (i, &v) in x.iter().enumerate() {
        if v.is_multiple_of(7) {
            d ^= i as u32;
            break 'scan;
        }
        d = d.wrapping_add(v);
    }
    let mut e = 0u32;
    for v in x.iter().rev() {
        e = e.wrapping_mul(3).wrapping_add(*v);
    }
    let mut g = 0u32;
    for (i, &w) in weights.iter().enumerate().rev() {
        g = g.rotate_left(5) ^ w.wrapping_mul(i as u32 + 1);
    }
    [a, b, c, d, e, g]
}

/// Element loops over a local array (in registers: unrolled), and an index
/// loop to its `len()`.
#[device]
fn array_sums(seed: u32) -> [u32; 3] {
    let arr = [seed, seed.rotate_left(7), seed ^ 0x5555_5555, seed.wrapping_mul(3), 17];
    let mut a = 0u32;
    for v in arr {
        a = a.wrapping_mul(5).wrapping_add(v);
    }
    let mut b = 0u32;
    for (i, &v) in arr.iter().enumerate() {
        b ^= v >> i;
    }
    let mut c = 0u32;
    for i in 0..arr.len() {
        c = c.wrapping_add(arr[arr.len() - 1 - i] << i);
    }
    for &v in arr.iter().rev() {
        c = c.rotate_left(3) ^ v;
    }
    [a, b, c]
}

#[kernel(targets(sm_90))]
pub fn elements(xs: &[u32], weights: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = element_sums(&xs[i % 16..], weights);
    #[unroll]
    for k in 0..6 {
        out[9 * i + k] = r[k];
    }
    let r = array_sums(xs[i]);
    #[unroll]
    for k in 0..3 {
        out[9 * i + 6 + k] = r[k];
    }
}

#[test]
fn element_loops_over_slices_and_arrays_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let xs: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 3).collect();
    let weights: Vec<u32> = (0..40u32).map(|i| i * i + 7).collect();
    let (dx, dw) = (
        device.upload(&xs).expect("upload"),
        device.upload(&weights).expect("upload"),
    );
    let mut out = device.alloc_zeroed::<u32>(9 * 64).expect("alloc");
    // SAFETY: one thread per nine outputs.
    unsafe { elements::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &dw, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for i in 0..64 {
        assert_eq!(
            out[9 * i..9 * i + 6],
            element_sums(&xs[i % 16..], &weights),
            "thread {i}"
        );
        assert_eq!(out[9 * i + 6..9 * i + 9], array_sums(xs[i]), "thread {i}");
    }
}

/// Writes through `iter_mut`: each element scaled and offset by its index;
/// a reversed pass that stops at the first multiple of 5; a local array
/// doubled in place.
#[device]
fn update_in_place(x: &mut [u32], k: u32) -> u32 {
    for (i, v) in x.iter_mut().enumerate() {
        *v = (*v).wrapping_mul(k).wrapping_add(i as u32);
    }
    for v in x.iter_mut().rev() {
        if (*v).is_multiple_of(5) {
            break;
        }
        *v ^= 0xFF;
    }
    let mut arr = [k, k + 1, k + 2, k + 3];
    for v in arr.iter_mut() {
        *v = (*v).wrapping_mul(2);
    }
    arr[0] ^ arr[3]
}

#[kernel(targets(sm_90))]
pub fn in_place(xs: &mut [u32], out: &mut [u32]) {
    out[0] = update_in_place(xs, 0x9E37_79B9);
}

#[test]
fn iter_mut_writes_what_the_host_writes() {
    let device = Device::emulator(Target::Sm90);
    let xs: Vec<u32> = (0..300u32).map(|i| i.wrapping_mul(0x2545_F491) ^ 0x5bd1_e995).collect();
    let mut dx = device.upload(&xs).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(1).expect("alloc");
    // SAFETY: one thread, which owns both buffers.
    unsafe { in_place::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut dx, &mut out) }.expect("launch");
    let mut want = xs.clone();
    let r = update_in_place(&mut want, 0x9E37_79B9);
    assert_ne!(want, xs, "the host changed the elements");
    assert_eq!(device.download(&dx).expect("download"), want);
    assert_eq!(device.download(&out).expect("download"), [r]);
}

/// What one thread of `labeled` computes.
#[device]
fn labeled_thread(s: u32) -> [u32; 5] {
    // `find` has a `'rows` of its own: its `break 'rows` leaves its loop,
    // not this one.
    let mut total = 0u32;
    'rows: for t in 0..3u32 {
        let f = find(s.wrapping_add(t), 5, 7, 3 + t);
        if f == 35 {
            break 'rows;
        }
        total = total.wrapping_add(f + 1);
    }
    [total, skip_rows(s), unrolled(s), find(s, 9, 9, 97), reversed(s)]
}

#[kernel(targets(sm_90))]
pub fn labeled(seeds: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = labeled_thread(seeds[i]);
    #[unroll]
    for k in 0..5 {
        out[5 * i + k] = r[k];
    }
}

#[test]
fn labeled_and_reversed_loops_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let seeds: Vec<u32> = (0..256u32).map(|i| i.wrapping_mul(0x2545_F491) ^ 0x5bd1_e995).collect();
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(5 * seeds.len()).expect("alloc");
    // SAFETY: one thread per seed; five outputs per thread.
    unsafe { labeled::Kernel::launch(&device, LaunchConfig::linear(1, seeds.len() as u32), &ds, &mut out) }
        .expect("launch");
    let out = device.download(&out).expect("download");
    let mut distinct = std::collections::HashSet::new();
    for (i, &s) in seeds.iter().enumerate() {
        let want = labeled_thread(s);
        assert_eq!(out[5 * i..5 * i + 5], want, "seed {s:#x}");
        distinct.insert(want);
    }
    // The inputs reach every exit: not one result for all.
    assert!(distinct.len() > 200, "{} distinct results", distinct.len());
}

#[device]
const GROUP: usize = 4;

/// Sets element `i` of the caller's array: a device function indexing a
/// local array by its parameter.
#[device]
fn put(acc: &mut [u32; 8], i: usize, v: u32) {
    acc[i] = v;
}

/// `0..N` of a const generic (the array's length).
#[device]
#[allow(clippy::needless_range_loop)]
fn weigh<const N: usize>(a: [u32; N]) -> u32 {
    let mut s = 0u32;
    for i in 0..N {
        s = s.wrapping_mul(31).wrapping_add(a[i] ^ i as u32);
    }
    s
}

/// A local array indexed by the variables of loops with constant bounds,
/// none marked `#[unroll]`: directly, through a `let`, nested, through a
/// closure and a device function, with `step_by`, `.rev()`, `..=`,
/// `continue` and `break`. (Index loops are what this tests.)
#[device]
#[allow(clippy::needless_range_loop)]
fn constant_bounds(seed: u32) -> [u32; 8] {
    let mut acc = [0u32; 8];
    for e in 0..4 {
        acc[e] = mix(seed, e as u32, 0);
    }
    for g in 0..GROUP {
        let j = g + GROUP;
        acc[j] = acc[g] ^ j as u32;
    }
    for r in 0..2 {
        for c in 0..4 {
            acc[r * 4 + c] = acc[r * 4 + c].wrapping_add(mix(seed, r as u32, c as u32));
        }
    }
    let half = move |k: usize| acc[k] >> 1;
    let mut folded = 0u32;
    for e in 0..8 {
        folded = folded.rotate_left(5) ^ half(e);
    }
    for i in (0..8).step_by(3) {
        let v = acc[i].wrapping_mul(5) ^ folded;
        put(&mut acc, i, v);
    }
    for i in (0..=6).rev() {
        if acc[i].is_multiple_of(3) {
            continue;
        }
        acc[i + 1] ^= acc[i];
        if acc[i].is_multiple_of(7) {
            break;
        }
    }
    acc[7] = acc[7].wrapping_add(weigh(acc));
    acc
}

#[kernel(targets(sm_90))]
pub fn constant_bound_loops(seeds: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let r = constant_bounds(seeds[i]);
    for k in 0..8 {
        out[8 * i + k] = r[k];
    }
}

#[test]
fn loops_with_constant_bounds_index_local_arrays_as_the_host_does() {
    let device = Device::emulator(Target::Sm90);
    let seeds: Vec<u32> = (0..128u32).map(|i| i.wrapping_mul(0x2545_F491) ^ 0x5bd1_e995).collect();
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(8 * seeds.len()).expect("alloc");
    // SAFETY: one thread per seed; eight outputs per thread.
    unsafe {
        constant_bound_loops::Kernel::launch(&device, LaunchConfig::linear(1, seeds.len() as u32), &ds, &mut out)
    }
    .expect("launch");
    let out = device.download(&out).expect("download");
    for (i, &s) in seeds.iter().enumerate() {
        assert_eq!(out[8 * i..8 * i + 8], constant_bounds(s), "seed {s:#x}");
    }
}
