//! NVFP4 quantization of a row, as a new user writes it from the README:
//! each group of 16 values gets an e4m3 scale (`amax / 6`), each value the
//! nearest e2m1 code of `value / scale`, and the kernel writes back what
//! the codes decode to, so the round trip's error can be checked.

use nvfp4_dsl::prelude::*;

/// Values per scale.
#[device]
pub const GROUP: usize = 16;

/// Thread `g` quantizes group `g` of `x` and writes its dequantized values
/// to `y` and its scale's bits to `scales`.
#[kernel(targets(sm_90, sm_100a))]
pub fn round_trip(x: &[f32], y: &mut [f32], scales: &mut [u8]) {
    let g = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if g < scales.len() {
        let mut v = [0.0f32; GROUP];
        let mut amax = 0.0f32;
        for i in 0..GROUP {
            v[i] = x[g * GROUP + i];
            amax = amax.max(v[i].abs());
        }
        let scale = E4m3::from_f32(amax / 6.0);
        let s = scale.to_f32();
        let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        scales[g] = scale.to_bits();
        for i in 0..GROUP / 2 {
            let pair = Fp4x2::from_f32s(v[2 * i] * inv, v[2 * i + 1] * inv).to_f16x2();
            y[g * GROUP + 2 * i] = pair.lo().to_f32() * s;
            y[g * GROUP + 2 * i + 1] = pair.hi().to_f32() * s;
        }
    }
}

/// The same on the CPU, with the same conversions (they run on the host
/// too).
pub fn reference(x: &[f32]) -> (Vec<f32>, Vec<u8>) {
    let mut y = Vec::with_capacity(x.len());
    let mut scales = Vec::new();
    for group in x.chunks(GROUP) {
        let amax = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = E4m3::from_f32(amax / 6.0);
        let s = scale.to_f32();
        let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        scales.push(scale.to_bits());
        for pair in group.chunks(2) {
            let q = Fp4x2::from_f32s(pair[0] * inv, pair[1] * inv).to_f16x2();
            y.push(q.lo().to_f32() * s);
            y.push(q.hi().to_f32() * s);
        }
    }
    (y, scales)
}

/// Round-trips 64 groups of random values: every value and scale as on
/// the CPU, and each value within a code's half-gap (at most 1, at the
/// top of the grid) times its scale of the input, or saturated at 6 scales.
pub fn check(device: &Device, rng: &mut crate::Rng) -> Result<(), nvfp4_dsl::Error> {
    let groups = 64;
    let x: Vec<f32> = (0..groups * GROUP).map(|_| rng.f32(40.0)).collect();
    let dx = device.upload(&x)?;
    let mut dy = device.upload(&vec![f32::NAN; x.len()])?;
    let mut ds = device.upload(&vec![0xA5u8; groups])?;
    // SAFETY: thread g below `groups` reads and writes group g of 16 values
    // and scale g.
    unsafe { round_trip::Kernel::launch(device, LaunchConfig::linear(1, groups as u32), &dx, &mut dy, &mut ds)? };
    let (want_y, want_s) = reference(&x);
    let (y, s) = (device.download(&dy)?, device.download(&ds)?);
    assert_eq!(s, want_s, "scales");
    for (i, (g, w)) in y.iter().zip(&want_y).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "value {i}");
        let scale = E4m3(s[i / GROUP]).to_f32();
        let saturated = g.abs() == 6.0 * scale;
        assert!(
            (g - x[i]).abs() <= scale || saturated,
            "value {i}: {} round-trips to {g} with scale {scale}",
            x[i]
        );
    }
    Ok(())
}
