//! A kernel that encodes f32 values to FP4 and FP8 with the DSL's
//! conversion intrinsics, to compare the hardware (or the emulator) with
//! the CPU: every rounding boundary of both formats, a step either side of
//! it, the special values and random bit patterns.

use crate::Error;
use crate::rng::Rng;
use nvfp4_dsl::prelude::*;

/// Thread `i` encodes `values[2i]` and `values[2i + 1]` three ways.
#[kernel(targets(sm_90, sm_100a))]
pub fn encode_all(values: &[f32], fp4: &mut [Fp4x2], fp8: &mut [E4m3], fp8x2: &mut [E4m3x2]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < fp4.len() {
        let (lo, hi) = (values[2 * i], values[2 * i + 1]);
        fp4[i] = Fp4x2::from_f32s(lo, hi);
        fp8[2 * i] = E4m3::from_f32(lo);
        fp8[2 * i + 1] = E4m3::from_f32(hi);
        fp8x2[i] = E4m3x2::from_f32s(lo, hi);
    }
}

/// The values the check encodes (an even number): each format's rounding
/// boundaries (midpoints between neighbouring codes, and the saturation
/// edge) with the f32 values just below and above, every e2m1 and e4m3
/// value, zeros, infinities, NaNs, f32 subnormals, and random bit patterns
/// of magnitudes from 2^-12 to 2^12; all of them with both signs.
pub fn encode_inputs(seed: u64) -> Vec<f32> {
    let e2m1 = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let e4m3: Vec<f32> = (0..=0x7Eu8).map(|b| E4m3(b).to_f32()).collect();
    let mut edges: Vec<f32> = e2m1.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
    edges.extend(e4m3.windows(2).map(|w| (w[0] + w[1]) / 2.0));
    edges.extend([448.0 + 16.0, 6.0, 448.0]);
    let mut values: Vec<f32> = e2m1.iter().chain(&e4m3).copied().collect();
    for edge in edges {
        values.extend([edge, edge.next_down(), edge.next_up()]);
    }
    values.extend([
        f32::INFINITY,
        f32::NAN,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        1e-30,
    ]);
    let mut rng = Rng::new(seed);
    values.extend((0..2048).map(|_| {
        let exponent = 115 + rng.below(25);
        f32::from_bits((exponent << 23) | (rng.next_u32() & 0x7F_FFFF))
    }));
    let negatives: Vec<f32> = values.iter().map(|v| -v).collect();
    values.extend(negatives);
    values
}

/// What `encode_all` wrote for a list of values.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// `Fp4x2::from_f32s` of each pair.
    pub fp4: Vec<Fp4x2>,
    /// `E4m3::from_f32` of each value.
    pub fp8: Vec<E4m3>,
    /// `E4m3x2::from_f32s` of each pair.
    pub fp8x2: Vec<E4m3x2>,
}

/// Encodes `values` (an even number of them) on `device` with
/// `encode_all`, outputs poisoned first.
pub fn encode_on(device: &Device, values: &[f32]) -> Result<Encoded, Error> {
    if !values.len().is_multiple_of(2) {
        return Err(Error::Shape(format!("{} values: encode_on takes pairs", values.len())));
    }
    let pairs = values.len() / 2;
    let dv = device.upload(values)?;
    let mut fp4 = device.upload(&vec![Fp4x2(0x5A); pairs])?;
    let mut fp8 = device.upload(&vec![E4m3(0x5A); values.len()])?;
    let mut fp8x2 = device.upload(&vec![E4m3x2(0x5A5A); pairs])?;
    let blocks = u32::try_from(pairs.div_ceil(256)).map_err(|_| Error::Shape(format!("{pairs} pairs")))?;
    // SAFETY: thread i < fp4.len() reads values[2i], values[2i + 1] (the
    // length is twice fp4's) and writes index i of fp4 and fp8x2 (same
    // length) and 2i, 2i + 1 of fp8 (twice).
    unsafe {
        encode_all::Kernel::launch(
            device,
            LaunchConfig::linear(blocks, 256),
            &dv,
            &mut fp4,
            &mut fp8,
            &mut fp8x2,
        )?
    };
    Ok(Encoded {
        fp4: device.download(&fp4)?,
        fp8: device.download(&fp8)?,
        fp8x2: device.download(&fp8x2)?,
    })
}

/// Encodes [`encode_inputs`] on `device` and compares every byte with the
/// DSL's host functions (`Fp4x2::from_f32s`, `E4m3::from_f32`,
/// `E4m3x2::from_f32s`), bit for bit, NaN included. Returns how many
/// values it checked.
pub fn check_encode(device: &Device, seed: u64) -> Result<usize, Error> {
    let values = encode_inputs(seed);
    let Encoded { fp4, fp8, fp8x2 } = encode_on(device, &values)?;
    for (i, pair) in values.chunks_exact(2).enumerate() {
        let (lo, hi) = (pair[0], pair[1]);
        let mismatch = |what: &str, got: &dyn std::fmt::Debug, want: &dyn std::fmt::Debug| {
            Error::Mismatch(format!(
                "{what} of ({lo:e} = {:#010x}, {hi:e} = {:#010x}) gave {got:?}, the CPU says {want:?}",
                lo.to_bits(),
                hi.to_bits()
            ))
        };
        let want = Fp4x2::from_f32s(lo, hi);
        if fp4[i] != want {
            return Err(mismatch("Fp4x2::from_f32s", &fp4[i], &want));
        }
        let want = [E4m3::from_f32(lo), E4m3::from_f32(hi)];
        if fp8[2 * i..2 * i + 2] != want {
            return Err(mismatch("E4m3::from_f32", &&fp8[2 * i..2 * i + 2], &want));
        }
        let want = E4m3x2::from_f32s(lo, hi);
        if fp8x2[i] != want {
            return Err(mismatch("E4m3x2::from_f32s", &fp8x2[i], &want));
        }
    }
    Ok(values.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvfp4::{f32_to_e2m1, f32_to_e4m3};

    #[test]
    fn the_dsl_s_encodings_agree_with_the_reference_quantizer_s() {
        // The reference rounds in f64 by its own midpoint tables: an
        // independent model. It maps NaN to e2m1 +0 where the hardware
        // gives +6, so NaN is compared for e4m3 only.
        let values = encode_inputs(5);
        assert!(values.len() > 4000);
        for &v in &values {
            assert_eq!(E4m3::from_f32(v).0, f32_to_e4m3(v), "e4m3 of {v:e}");
            if !v.is_nan() {
                assert_eq!(
                    Fp4x2::from_f32s(v, -v).0,
                    f32_to_e2m1(v) | (f32_to_e2m1(-v) << 4),
                    "e2m1 of {v:e}"
                );
            }
        }
        assert_eq!(Fp4x2::from_f32s(f32::NAN, -f32::NAN).0, 0x77);
    }
}
