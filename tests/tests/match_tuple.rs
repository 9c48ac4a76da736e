//! `match` on integers and `bool`s (literals, negative literals, constants,
//! ranges, `|`, `_`, bindings, guards; as a statement and as a value),
//! tuples (built, returned from device functions, destructured by `let`,
//! indexed by `.0`), `match` on tuples of them (`(0, 1..=3, _)`, nested,
//! with bindings and guards), on the emulator against the same code on the
//! host.

use nvfp4_dsl::prelude::*;

/// Quotient and remainder, as a tuple.
#[device]
fn div_rem(a: i32, b: i32) -> (i32, i32) {
    (a.wrapping_div(b), a.wrapping_rem(b))
}

#[device]
fn classify(x: i32, flag: bool) -> u32 {
    match x {
        i32::MIN => 100,
        -5..=-1 => 1,
        0 => 2,
        1 | 3 | 5 | 7 => 3,
        n if n % 2 == 0 && flag => 4,
        8..16 => 5,
        100.. => 6,
        -99..=-6 => 7,
        _ => 8,
    }
}

#[kernel(targets(sm_90))]
pub fn matches(xs: &[i32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let x = xs[i];
    let flag = i % 3 == 0;
    let (q, r) = div_rem(x, 7);
    let (mut a, (b, _)) = (q, (r, 0u32));
    a += 1;
    let t = (a, b as u32);
    out[5 * i] = classify(x, flag);
    out[5 * i + 1] = match flag {
        true => t.1,
        false => t.0 as u32,
    };
    let mut s = 0u32;
    match x % 4 {
        0 => s += 10,
        1 | -1 => {
            s += 20;
        }
        v => s = v as u32,
    }
    out[5 * i + 2] = s;
    out[5 * i + 3] = match x as u8 {
        0..=9 => 1,
        b'a'..=b'z' => 2,
        u8::MAX => 3,
        _ => 4,
    };
    // The arms' type is theirs, not the cast's (a fuzzer finding).
    let widened = (match x {
        0 => 5i32,
        _ => -3,
    }) as u64;
    let mut pair = (x, 1u32);
    pair.1 = 9;
    pair.0 -= 1;
    out[5 * i + 4] = pair.0 as u32 ^ pair.1 ^ widened as u32;
}

fn classify_host(x: i32, flag: bool) -> u32 {
    match x {
        i32::MIN => 100,
        -5..=-1 => 1,
        0 => 2,
        1 | 3 | 5 | 7 => 3,
        n if n % 2 == 0 && flag => 4,
        8..16 => 5,
        100.. => 6,
        -99..=-6 => 7,
        _ => 8,
    }
}

#[test]
fn match_and_tuples_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let mut xs: Vec<i32> = (-40..60).collect();
    xs.extend([i32::MIN, i32::MAX, 97, 98, 99, 100, 101, 1000, -1000, 255, 256, 300]);
    let dx = device.upload(&xs).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(5 * xs.len()).expect("alloc");
    // SAFETY: one thread per input.
    unsafe { matches::Kernel::launch(&device, LaunchConfig::linear(1, xs.len() as u32), &dx, &mut out) }
        .expect("launch");
    let out = device.download(&out).expect("download");
    for (i, x) in xs.iter().copied().enumerate() {
        let flag = i % 3 == 0;
        let (q, r) = (x.wrapping_div(7), x.wrapping_rem(7));
        let t = (q + 1, r as u32);
        let s = match x % 4 {
            0 => 10,
            1 | -1 => 20,
            v => v as u32,
        };
        let byte = match x as u8 {
            0..=9 => 1,
            b'a'..=b'z' => 2,
            u8::MAX => 3,
            _ => 4,
        };
        let want = [
            classify_host(x, flag),
            if flag { t.1 } else { t.0 as u32 },
            s,
            byte,
            x.wrapping_sub(1) as u32 ^ 9 ^ if x == 0 { 5 } else { -3i32 as u32 },
        ];
        assert_eq!(out[5 * i..5 * i + 5], want, "x = {x}");
    }
}

/// A small state machine over `(state, input class)`: tuple patterns with
/// literals, ranges, `|` inside and around them, `_`, bindings of parts and
/// of a whole nested tuple, and guards.
#[device]
fn step(state: u32, x: u32, odd: bool) -> (u32, u32) {
    match (state, x % 16, odd) {
        (0, 0..=3, _) => (1, x),
        (0, c, true) if c > 12 => (2, c * 3),
        (1 | 2, 4 | 8, false) => (state + 1, 8),
        (3, _, _) => (0, 0),
        (s, c, false) => (s ^ 1, c + s),
        (s, _, true) => (s, 99),
    }
}

/// `step` over a word's nibbles; the state and a checksum of the outputs.
#[device]
fn walk(seed: u32) -> (u32, u32) {
    let mut state = 0u32;
    let mut sum = 0u32;
    for k in 0..8u32 {
        let nibble = (seed >> (4 * k)) & 15;
        let (next, out) = step(state % 4, nibble.wrapping_mul(k + 1), (seed >> k) & 1 == 1);
        let kind = match ((next, out), k) {
            ((0, 0), _) => 1u32,
            (pair, 7) => pair.0 + pair.1,
            _ => 2,
        };
        state = next;
        sum = sum.wrapping_mul(31).wrapping_add(out ^ kind);
    }
    (state, sum)
}

#[kernel(targets(sm_90))]
pub fn tuple_match(seeds: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let (state, sum) = walk(seeds[i]);
    out[2 * i] = state;
    out[2 * i + 1] = sum;
}

#[test]
fn match_on_tuples_computes_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let n = 128usize;
    let seeds: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995)
        .collect();
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.upload(&vec![0xdead_beef_u32; 2 * n]).expect("upload");
    // SAFETY: thread i reads seeds[i] and writes out[2i..2i + 2].
    unsafe { tuple_match::Kernel::launch(&device, LaunchConfig::linear(1, n as u32), &ds, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    let mut states = [0usize; 4];
    for (i, &s) in seeds.iter().enumerate() {
        let (state, sum) = walk(s);
        assert_eq!([out[2 * i], out[2 * i + 1]], [state, sum], "thread {i}");
        states[(state % 4) as usize] += 1;
    }
    assert!(states.iter().filter(|&&c| c > 0).count() >= 3, "{states:?}");
}
