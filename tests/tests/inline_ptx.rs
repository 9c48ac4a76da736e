//! `ptx!` templates with literal braces (`{{`, `}}`): a temporary register
//! declared in a PTX block of its own, in a device function called twice
//! and in an unrolled loop (each use its own block, so its own register),
//! the conversions to e2m1x2 and e4m3x2 as the `ptx!` docs write them
//! (through a `.b8` or `.b16` temporary), and a vector operand. Run on the
//! emulator, and assembled by ptxas where it is installed.

use nvfp4_dsl::prelude::*;

/// Two f32 to two e2m1 codes in one byte, `lo` in the low nibble.
#[device]
fn to_e2m1x2(lo: f32, hi: f32) -> u8 {
    ptx!(
        u8,
        "{{ .reg .b8 t; cvt.rn.satfinite.e2m1x2.f32 t, {1}, {0}; cvt.u32.u8 {d}, t; }}",
        lo,
        hi
    )
}

/// Two f32 to two e4m3 bytes, `lo` in the low byte.
#[device]
fn to_e4m3x2(lo: f32, hi: f32) -> u16 {
    ptx!(
        u16,
        "{{ .reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, {1}, {0}; cvt.u32.u16 {d}, t; }}",
        lo,
        hi
    )
}

/// Thread `i` packs `x[4i..4i + 4]`: as e4m3 bytes (two calls), as two
/// f16 halves (a vector operand), and the e4m3 pairs again in an unrolled
/// loop.
#[kernel(targets(sm_90, sm_100a))]
pub fn fp8_pairs(x: &[f32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let v = [x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]];
    out[4 * i] = to_e4m3x2(v[0], v[1]) as u32 | (to_e4m3x2(v[2], v[3]) as u32) << 16;
    out[4 * i + 1] = ptx!(
        u32,
        "mov.b32 {d}, {{{0}, {1}}};",
        f16::from_f32(v[0]),
        f16::from_f32(v[1])
    );
    for k in 0..2 {
        out[4 * i + 2 + k] = to_e4m3x2(v[2 * k], v[2 * k + 1]) as u32;
    }
}

/// Thread `i` packs `x[4i..4i + 4]` as four e2m1 codes (two calls).
#[kernel(targets(sm_100a))]
pub fn fp4_pairs(x: &[f32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    let (a, b, c, d) = (x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]);
    out[i] = to_e2m1x2(a, b) as u32 | (to_e2m1x2(c, d) as u32) << 8;
}

/// Values every format here holds exactly (e2m1's are 0, 0.5, 1, 1.5, 2,
/// 3, 4, 6 and their negatives), 4 per thread.
fn inputs() -> Vec<f32> {
    const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    (0..64 * 4)
        .map(|i| {
            let v = E2M1[(i * 5 + i / 8) % 8];
            if i % 3 == 1 { -v } else { v }
        })
        .collect()
}

#[test]
fn scoped_temporaries_convert_to_e4m3_pairs_and_pack_halves() {
    let device = Device::emulator(Target::Sm100a);
    let x = inputs();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(x.len()).expect("alloc");
    // SAFETY: thread i reads x[4i..4i + 4] and writes out[4i..4i + 4].
    unsafe { fp8_pairs::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    let e4m3 = |byte: u32| nvfp4_kernels::nvfp4::e4m3_to_f32(byte as u8);
    for (i, v) in x.chunks(4).enumerate() {
        let w = &out[4 * i..4 * i + 4];
        let bytes: Vec<f32> = (0..4).map(|k| e4m3(w[0] >> (8 * k))).collect();
        assert_eq!(bytes, v, "thread {i}: {:#010x}", w[0]);
        let halves = [w[1] as u16, (w[1] >> 16) as u16].map(|h| f32::from(half::f16::from_bits(h)));
        assert_eq!(halves, v[..2], "thread {i}: {:#010x}", w[1]);
        for k in 0..2 {
            assert_eq!(w[2 + k] >> 16, 0, "thread {i}: a u16 result is zero-extended");
            assert_eq!([e4m3(w[2 + k]), e4m3(w[2 + k] >> 8)], v[2 * k..2 * k + 2], "thread {i}");
        }
    }
}

#[test]
fn scoped_temporaries_convert_to_e2m1_pairs() {
    let device = Device::emulator(Target::Sm100a);
    let x = inputs();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    // SAFETY: thread i reads x[4i..4i + 4] and writes out[i].
    unsafe { fp4_pairs::Kernel::launch(&device, LaunchConfig::linear(1, 64), &dx, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    for (i, v) in x.chunks(4).enumerate() {
        let codes: Vec<f32> = (0..4)
            .map(|k| nvfp4_kernels::nvfp4::e2m1_to_f32((out[i] >> (4 * k)) as u8 & 0xF))
            .collect();
        assert_eq!(codes, v, "thread {i}: {:#010x}", out[i]);
        assert_eq!(out[i] >> 16, 0, "thread {i}");
    }
}

#[test]
fn templates_with_blocks_assemble() {
    let Some(ptxas) = nvfp4_tests::find_ptxas() else {
        assert!(!nvfp4_tests::in_ci(), "ptxas is required in CI");
        eprintln!("ptxas not found: skipping");
        return;
    };
    // Each use of a template is a block declaring its own `t`.
    for (variants, block, uses) in [
        (fp8_pairs::VARIANTS, "{ .reg .b16 t;", 4),
        (fp4_pairs::VARIANTS, "{ .reg .b8 t;", 2),
    ] {
        for v in variants {
            for (target, ptx) in v.ptx {
                let blocks = ptx.lines().filter(|l| l.trim_start().starts_with(block)).count();
                assert_eq!(blocks, uses, "{}", v.entry);
                nvfp4_tests::assemble(&ptxas, ptx, target.name()).unwrap_or_else(|e| panic!("{}: {e}", v.entry));
            }
        }
    }
}
