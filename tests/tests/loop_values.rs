//! `loop` as a value: `let x = loop { .. break value; .. };`, out of nested
//! loops (`break 'outer value`), of a tuple, of a float, with the
//! literal's type from the context, as a device function's tail. Run on
//! the emulator against the same functions called on the host.

use nvfp4_dsl::prelude::*;

/// The first `k` below 40 whose mix with `seed` is divisible by `d`, or
/// 40: `break k` out of a `loop` that is the function's value.
#[device]
fn first_multiple(seed: u32, d: u32) -> u32 {
    let mut k = 0u32;
    loop {
        if k == 40 {
            break 40;
        }
        if (seed ^ k.wrapping_mul(0x9E37_79B9))
            .rotate_left(k % 32)
            .is_multiple_of(d)
        {
            break k;
        }
        k += 1;
    }
}

/// The first cell `(r, c)` of an 8 x 8 grid whose mix is below a
/// threshold, as a pair, out of the inner loop with `break 'grid (r, c)`;
/// `(8, 8)` if none.
#[device]
fn first_cell(seed: u32) -> (u32, u32) {
    let mut r = 0u32;
    'grid: loop {
        if r == 8 {
            break (8, 8);
        }
        let mut c = 0u32;
        loop {
            if c == 8 {
                break;
            }
            if (seed ^ (r * 8 + c).wrapping_mul(0x85EB_CA6B)) < 0x0040_0000 {
                break 'grid (r, c);
            }
            c += 1;
        }
        r += 1;
    }
}

/// Halves `x` until it drops below 1, counting the steps: a float value
/// (`break x * 0.5`) and the `u8` of a literal typed by the context.
#[device]
fn halvings(seed: u32) -> (f32, u8) {
    let mut x = (seed >> 8) as f32;
    let mut steps: u8 = 0;
    let last: f32 = loop {
        if x < 1.0 {
            break x * 0.5;
        }
        x *= 0.5;
        steps += 1;
    };
    let mut tries = 0u32;
    let flag: u8 = loop {
        tries += 1;
        if tries == 3 {
            break if steps > 20 { 1 } else { 0 };
        }
    };
    (last, steps + flag)
}

#[kernel(targets(sm_90))]
pub fn loop_values(seeds: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let s = seeds[i];
    let (r, c) = first_cell(s);
    let (last, steps) = halvings(s);
    out[5 * i] = first_multiple(s, 7);
    out[5 * i + 1] = r;
    out[5 * i + 2] = c;
    out[5 * i + 3] = last.to_bits();
    out[5 * i + 4] = steps as u32;
}

#[test]
fn loops_with_values_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let n = 128usize;
    let mut seeds: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(0x2545_F491) ^ 0x5bd1_e995)
        .collect();
    seeds[3] = 0xffff_ffff;
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.upload(&vec![0xdead_beef_u32; 5 * n]).expect("upload");
    // SAFETY: thread i reads seeds[i] and writes out[5i..5i + 5].
    unsafe { loop_values::Kernel::launch(&device, LaunchConfig::linear(1, n as u32), &ds, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    let mut found = [0usize; 2];
    for (i, &s) in seeds.iter().enumerate() {
        let (r, c) = first_cell(s);
        let (last, steps) = halvings(s);
        let want = [first_multiple(s, 7), r, c, last.to_bits(), steps as u32];
        assert_eq!(out[5 * i..5 * i + 5], want, "thread {i}");
        found[usize::from(r == 8)] += 1;
    }
    // Both ways out of the grid are taken.
    assert!(found[0] > 0 && found[1] > 0, "{found:?}");
}
