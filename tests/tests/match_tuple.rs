//! `match` on integers and `bool`s (literals, negative literals, constants,
//! ranges, `|`, `_`, bindings, guards; as a statement and as a value),
//! tuples (built, returned from device functions, destructured by `let`,
//! indexed by `.0`), on the emulator against the same code on the host.

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
