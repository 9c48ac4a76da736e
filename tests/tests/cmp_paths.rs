//! `std::cmp::max(a, b)` and `min` (also `core::cmp::`), std's free
//! functions, as `a.max(b)`: compared with std on the host.

use nvfp4_dsl::prelude::*;

#[device]
fn bounds(a: u32, b: u32, c: i64, d: i64) -> (u32, u32, i64) {
    (
        std::cmp::max(a, b),
        core::cmp::min(a, b),
        std::cmp::max(c, d).wrapping_sub(std::cmp::min(c, d)),
    )
}

#[kernel(targets(sm_90))]
pub fn cmp_paths(x: &[u32], out: &mut [u32], wide: &mut [i64]) {
    let i = thread_idx_x() as usize;
    let (hi, lo, span) = bounds(x[i], x[i + 1], x[i] as i32 as i64, -(x[i + 2] as i64));
    out[2 * i] = hi;
    out[2 * i + 1] = lo;
    wide[i] = span;
}

#[test]
fn cmp_max_and_min_match_std() {
    let device = Device::emulator(Target::Sm90);
    let n = 128usize;
    let mut x: Vec<u32> = (0..n as u32 + 2)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995)
        .collect();
    x[7] = x[8];
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&vec![0xdead_beef_u32; 2 * n]).expect("upload");
    let mut wide = device.upload(&vec![i64::MIN + 1; n]).expect("upload");
    // SAFETY: thread i reads x[i..i + 3] and writes out[2i..2i + 2] and wide[i].
    unsafe { cmp_paths::Kernel::launch(&device, LaunchConfig::linear(1, n as u32), &dx, &mut out, &mut wide) }
        .expect("launch");
    let out = device.download(&out).expect("download");
    let wide = device.download(&wide).expect("download");
    for i in 0..n {
        let (a, b) = (x[i], x[i + 1]);
        let (c, d) = (x[i] as i32 as i64, -(x[i + 2] as i64));
        assert_eq!((out[2 * i], out[2 * i + 1]), (a.max(b), a.min(b)), "thread {i}");
        assert_eq!(wide[i], c.max(d).wrapping_sub(c.min(d)), "thread {i}");
    }
}
