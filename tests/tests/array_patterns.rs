//! `let [a, b, c, d] = v;`: an array pattern binds each element of a local
//! array (`mut` names, `_`, nested in a tuple pattern) and of a
//! `#[device] const` table. Run on the emulator against the same functions
//! called on the host.

use nvfp4_dsl::prelude::*;

#[device]
const STEPS: [u32; 3] = [3, 5, 7];

/// The four words of `v` taken apart, updated and put back in another
/// order.
#[device]
fn shuffle_words(v: [u32; 4], s: u32) -> [u32; 4] {
    let [a, mut b, _, d] = v;
    b ^= s;
    let ([p, q], r) = ([a.rotate_left(5), d], v[2]);
    let [x, y, z] = STEPS;
    [q.wrapping_mul(x), p ^ y, b.wrapping_add(z), r]
}

#[kernel(targets(sm_90))]
pub fn array_patterns(seeds: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let w = shuffle_words([seeds[i], seeds[i + 1], seeds[i + 2], seeds[i + 3]], seeds[i] >> 3);
    #[unroll]
    for k in 0..4 {
        out[4 * i + k] = w[k];
    }
}

#[test]
fn array_patterns_bind_what_the_host_binds() {
    let device = Device::emulator(Target::Sm90);
    let n = 64usize;
    let seeds: Vec<u32> = (0..n as u32 + 3)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995)
        .collect();
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.upload(&vec![0xdead_beef_u32; 4 * n]).expect("upload");
    // SAFETY: thread i reads seeds[i..i + 4] and writes out[4i..4i + 4].
    unsafe { array_patterns::Kernel::launch(&device, LaunchConfig::linear(1, n as u32), &ds, &mut out) }
        .expect("launch");
    let out = device.download(&out).expect("download");
    for i in 0..n {
        let v = [seeds[i], seeds[i + 1], seeds[i + 2], seeds[i + 3]];
        assert_eq!(out[4 * i..4 * i + 4], shuffle_words(v, seeds[i] >> 3), "thread {i}");
    }
}
