use super::*;
use std::collections::BTreeSet;

/// e4m3 decoded straight from the bit fields, independently of the module.
fn e4m3_from_fields(byte: u8) -> f64 {
    let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((byte >> 3) & 0xF);
    let mantissa = f64::from(byte & 7);
    if exponent == 15 && mantissa == 7.0 {
        f64::NAN
    } else if exponent == 0 {
        sign * mantissa * 2f64.powi(-9)
    } else {
        sign * (1.0 + mantissa / 8.0) * 2f64.powi(exponent - 7)
    }
}

/// The nearest of `candidates` (code, value) to `x` by exhaustive search, ties to the even code.
fn nearest(x: f64, candidates: impl Iterator<Item = (u8, f64)>) -> u8 {
    let mut best: Option<(u8, f64)> = None;
    for (code, value) in candidates {
        let distance = (x - value).abs();
        best = match best {
            Some((best_code, best_distance))
                if best_distance < distance || (best_distance == distance && best_code % 2 == 0) =>
            {
                Some((best_code, best_distance))
            }
            _ => Some((code, distance)),
        };
    }
    best.unwrap().0
}

/// e4m3 by exhaustive search over the finite codes (which saturates by itself).
fn nearest_e4m3(x: f64) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    sign | nearest(x.abs(), (0..=0x7Eu8).map(|c| (c, e4m3_from_fields(c))))
}

/// e2m1 of `x / scale` by exhaustive search on the distances `|x - value * scale|`.
fn nearest_e2m1_scaled(x: f64, scale: f64) -> u8 {
    let sign = if x.is_sign_negative() { 8 } else { 0 };
    sign | nearest(
        x.abs(),
        (0..8u8).map(|c| (c, f64::from(E2M1_VALUES[usize::from(c)]) * scale)),
    )
}

fn naive_products(a: &Nvfp4Tensor, b: &Nvfp4Tensor, b_rows: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for l in 0..a.batches {
        for m in 0..a.rows {
            for n in 0..b_rows {
                out.push((0..a.k).map(|kk| a.element(l, m, kk) * b.element(l, n, kk)).sum());
            }
        }
    }
    out
}

fn random_scale_bytes(rng: &mut Rng, tensor: &mut Nvfp4Tensor) {
    for scale in &mut tensor.scales {
        // Positive, finite and non-zero, so that every scale is visible.
        *scale = E4m3(1 + rng.below(0x7E) as u8);
    }
}

#[test]
fn e2m1_codes_decode_exactly_and_round_trip() {
    let expected = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let mut rng = Rng::new(11);
    for code in 0..16u8 {
        let magnitude = expected[usize::from(code & 7)];
        let value = e2m1_to_f32(code);
        assert_eq!(value.abs(), magnitude, "code {code}");
        assert_eq!(value.is_sign_negative(), code >= 8, "sign of code {code}");
        assert_eq!(E2M1_VALUES[usize::from(code)].to_bits(), value.to_bits());
        // High bits are ignored.
        let noisy = code | ((1 + rng.below(15)) as u8) << 4;
        assert_eq!(e2m1_to_f32(noisy).to_bits(), value.to_bits(), "code {noisy:#x}");
        assert_eq!(f32_to_e2m1(value), code, "round trip of code {code}");
    }
    assert_eq!(f32_to_e2m1(-0.0), 8);
    assert_eq!(f32_to_e2m1(0.0), 0);
}

#[test]
fn e2m1_rounds_to_nearest_even_and_saturates() {
    // Midpoints between neighbouring magnitudes go to the even code.
    let midpoints = [(0.25, 0), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6)];
    for (midpoint, code) in midpoints {
        assert_eq!(f32_to_e2m1(midpoint), code, "+{midpoint}");
        assert_eq!(f32_to_e2m1(-midpoint), code | 8, "-{midpoint}");
        let above = f32::from_bits(midpoint.to_bits() + 1);
        let below = f32::from_bits(midpoint.to_bits() - 1);
        assert_eq!(
            f32_to_e2m1(above),
            nearest_e2m1_scaled(f64::from(above), 1.0),
            "just above {midpoint}"
        );
        assert_eq!(
            f32_to_e2m1(below),
            nearest_e2m1_scaled(f64::from(below), 1.0),
            "below {midpoint}"
        );
        assert_ne!(f32_to_e2m1(above), f32_to_e2m1(below));
    }
    for (x, code) in [
        (6.0, 7),
        (6.9, 7),
        (1e30, 7),
        (f32::INFINITY, 7),
        (f32::NEG_INFINITY, 15),
    ] {
        assert_eq!(f32_to_e2m1(x), code, "{x}");
    }
    assert_eq!(f32_to_e2m1(-100.0), 15);
    assert_eq!(f32_to_e2m1(-1e-9), 8, "tiny negatives round to -0");
    assert_eq!(f32_to_e2m1(f32::NAN), 0);
    assert_eq!(f32_to_e2m1(-f32::NAN), 0);
    let mut rng = Rng::new(12);
    for i in 0..20_000 {
        // Half of the draws sit on the quarter grid, which holds every midpoint.
        let x = if i % 2 == 0 {
            rng.uniform(-8.0, 8.0)
        } else {
            (rng.below(65) as f32 - 32.0) * 0.25
        };
        assert_eq!(f32_to_e2m1(x), nearest_e2m1_scaled(f64::from(x), 1.0), "{x}");
    }
}

#[test]
fn e4m3_all_bytes_decode_exactly_and_round_trip() {
    for byte in 0..=255u8 {
        let expected = e4m3_from_fields(byte);
        let value = e4m3_to_f32(byte);
        if byte & 0x7F == 0x7F {
            assert!(value.is_nan(), "{byte:#04x} must be NaN");
            assert!(expected.is_nan());
            continue;
        }
        assert_eq!(f64::from(value).to_bits(), expected.to_bits(), "{byte:#04x}");
        assert_eq!(f32_to_e4m3(value), byte, "round trip of {byte:#04x} ({value})");
    }
    assert_eq!(e4m3_to_f32(0x7E), 448.0);
    assert_eq!(e4m3_to_f32(0xFE), -448.0);
    assert_eq!(e4m3_to_f32(0x01), 2f32.powi(-9));
    assert_eq!(e4m3_to_f32(0x08), 2f32.powi(-6));
    assert_eq!(e4m3_to_f32(0x38), 1.0);
    assert!(e4m3_to_f32(0x80).is_sign_negative() && e4m3_to_f32(0x80) == 0.0);
}

#[test]
fn e4m3_rounds_to_nearest_even_and_saturates() {
    // Every midpoint between neighbouring finite codes (codes grow with the magnitude).
    for code in 0..0x7Eu8 {
        let (low, high) = (e4m3_from_fields(code), e4m3_from_fields(code + 1));
        let midpoint = ((low + high) / 2.0) as f32;
        assert_eq!(f64::from(midpoint), (low + high) / 2.0, "midpoint is an f32");
        let even = if code % 2 == 0 { code } else { code + 1 };
        assert_eq!(
            f32_to_e4m3(midpoint),
            even,
            "midpoint of {code:#04x} and {:#04x}",
            code + 1
        );
        assert_eq!(f32_to_e4m3(-midpoint), even | 0x80);
        assert_eq!(f32_to_e4m3(f32::from_bits(midpoint.to_bits() + 1)), code + 1);
        assert_eq!(f32_to_e4m3(f32::from_bits(midpoint.to_bits() - 1)), code);
    }
    for x in [448.0, 448.5, 463.9, 464.0, 479.0, 480.0, 1e6, f32::MAX, f32::INFINITY] {
        assert_eq!(f32_to_e4m3(x), 0x7E, "{x}");
        assert_eq!(f32_to_e4m3(-x), 0xFE, "-{x}");
    }
    assert_eq!(f32_to_e4m3(f32::NAN), 0x7F);
    assert_eq!(f32_to_e4m3(-f32::NAN), 0x7F);
    assert_eq!(
        f32_to_e4m3(2f32.powi(-10)),
        0x00,
        "half the smallest subnormal ties to 0"
    );
    assert_eq!(f32_to_e4m3(-2f32.powi(-11)), 0x80);
    assert_eq!(f32_to_e4m3(-0.0), 0x80);
    let mut rng = Rng::new(13);
    for _ in 0..20_000 {
        let exponent = rng.below(24) as i32 - 13;
        let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
        let x = sign * rng.uniform(1.0, 2.0) * 2f32.powi(exponent);
        assert_eq!(f32_to_e4m3(x), nearest_e4m3(f64::from(x)), "{x}");
    }
}

#[test]
fn pack_puts_the_even_element_in_the_low_nibble() {
    assert_eq!(pack(0x3, 0xA), Fp4x2(0xA3));
    assert_eq!(unpack(Fp4x2(0xA3)), (0x3, 0xA));
    let mut rng = Rng::new(14);
    for _ in 0..1000 {
        let (even, odd) = (rng.next_u32() as u8, rng.next_u32() as u8);
        let packed = pack(even, odd);
        assert_eq!(packed.0, (even & 0xF) | (odd << 4), "pack({even:#x}, {odd:#x})");
        assert_eq!(unpack(packed), (even & 0xF, odd & 0xF));
        assert_eq!(pack(unpack(packed).0, unpack(packed).1), packed);
    }
    // The tensor reads the same order: element 2i is the low nibble of byte i.
    let mut tensor = Nvfp4Tensor::zeros(3, 32, 2).unwrap();
    random_scale_bytes(&mut rng, &mut tensor);
    for byte in &mut tensor.data {
        *byte = Fp4x2(rng.next_u32() as u8);
    }
    for (l, r, kk) in [(0, 0, 0), (0, 0, 1), (1, 2, 30), (1, 2, 31), (1, 1, 17)] {
        let byte = tensor.data[(l * 3 + r) * 16 + kk / 2];
        let code = if kk % 2 == 0 { byte.0 & 0xF } else { byte.0 >> 4 };
        assert_eq!(tensor.code(l, r, kk), code);
        let scale = tensor.scales[(l * 3 + r) * 2 + kk / 16];
        assert_eq!(tensor.scale(l, r, kk / 16), scale);
        let expected = f64::from(e2m1_to_f32(code)) * e4m3_from_fields(scale.0);
        assert_eq!(tensor.element(l, r, kk), expected);
    }
}

#[test]
fn zeros_and_quantize_reject_bad_shapes_and_values() {
    for (rows, k, batches) in [
        (0, 16, 1),
        (4, 0, 1),
        (4, 16, 0),
        (4, 24, 1),
        (4, 8, 1),
        (usize::MAX, 16, 2),
    ] {
        assert!(
            matches!(Nvfp4Tensor::zeros(rows, k, batches), Err(Error::Shape(_))),
            "{rows} x {k} x {batches}"
        );
    }
    let mut rng = Rng::new(15);
    let mut values: Vec<f32> = (0..2 * 32).map(|_| rng.uniform(-3.0, 3.0)).collect();
    assert!(Nvfp4Tensor::quantize(&values, 2, 32, 1).is_ok());
    assert!(matches!(
        Nvfp4Tensor::quantize(&values[1..], 2, 32, 1),
        Err(Error::Shape(_))
    ));
    assert!(matches!(Nvfp4Tensor::quantize(&values, 2, 24, 1), Err(Error::Shape(_))));
    values[17] = f32::NAN;
    assert!(matches!(Nvfp4Tensor::quantize(&values, 2, 32, 1), Err(Error::Value(_))));
    values[17] = f32::INFINITY;
    assert!(matches!(Nvfp4Tensor::quantize(&values, 2, 32, 1), Err(Error::Value(_))));
    assert!(matches!(
        gemv_inputs(&mut rng, 4, 40, 1, Inputs::Wide),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        gemm_inputs(&mut rng, 4, 0, 32, 1, Inputs::Task),
        Err(Error::Shape(_))
    ));
}

#[test]
#[should_panic(expected = "out of range")]
fn element_panics_out_of_range() {
    let tensor = Nvfp4Tensor::zeros(2, 32, 1).unwrap();
    // Row 2 would still be inside the buffer of a tensor with more batches; it must not alias.
    tensor.element(0, 2, 0);
}

#[test]
fn quantize_rounds_each_block_to_its_scale() {
    let mut rng = Rng::new(16);
    let (rows, k, batches) = (6, 256, 2);
    let mut values = Vec::new();
    for _ in 0..rows * k * batches / BLOCK {
        // Block magnitudes from subnormal scales to past saturation, and some zero blocks.
        let kind = rng.below(8);
        let magnitude = match kind {
            0 => 0.0,
            1 => 2f32.powi(-(rng.below(8) as i32) - 6),
            2 => rng.uniform(2700.0, 10_000.0),
            _ => 2f32.powf(rng.uniform(-6.0, 11.0)),
        };
        for _ in 0..BLOCK {
            let x = match rng.below(10) {
                0 => 0.0,
                1 => -0.0,
                _ => rng.uniform(-magnitude, magnitude),
            };
            values.push(x);
        }
    }
    let tensor = Nvfp4Tensor::quantize(&values, rows, k, batches).unwrap();
    let mut saw = BTreeSet::new();
    for (index, block) in values.chunks_exact(BLOCK).enumerate() {
        let (row_index, block_column) = (index / (k / BLOCK), index % (k / BLOCK));
        let (l, r) = (row_index / rows, row_index % rows);
        let scale = tensor.scale(l, r, block_column);
        let amax = block.iter().fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
        if amax == 0.0 {
            saw.insert("zero");
            assert_eq!(scale, E4m3(0));
            for kk in 0..BLOCK {
                assert_eq!(tensor.code(l, r, block_column * BLOCK + kk), 0);
            }
            continue;
        }
        let mut expected_scale = nearest_e4m3(amax / 6.0);
        if amax > 7.0 * e4m3_from_fields(expected_scale) && expected_scale < 0x7E {
            expected_scale += 1;
            saw.insert("bumped");
        }
        assert_eq!(scale, E4m3(expected_scale), "block {index}, amax {amax}");
        let decoded = e4m3_from_fields(scale.0);
        saw.insert(if scale.0 < 8 { "subnormal scale" } else { "normal scale" });
        for (kk, &x) in block.iter().enumerate() {
            let kk = block_column * BLOCK + kk;
            let x = f64::from(x);
            let code = tensor.code(l, r, kk);
            assert_eq!(code, nearest_e2m1_scaled(x, decoded), "x {x}, scale {decoded}");
            let error = (tensor.element(l, r, kk) - x).abs();
            if amax <= 6.0 * 448.0 {
                // Half the e2m1 spacing around x / scale (spacings 0.5, 1, 2; past 6, the last one).
                let y = x.abs() / decoded;
                let half_spacing = if y <= 2.0 {
                    0.25
                } else if y <= 4.0 {
                    0.5
                } else {
                    1.0
                };
                assert!(error <= half_spacing * decoded, "x {x}, scale {decoded}, error {error}");
            } else {
                saw.insert("saturated");
                assert_eq!(scale, E4m3(0x7E));
            }
        }
    }
    for case in ["zero", "bumped", "subnormal scale", "normal scale", "saturated"] {
        assert!(saw.contains(case), "no {case} block drawn");
    }
}

#[test]
fn blocked_offsets_are_a_bijection_onto_the_padded_buffer() {
    let mut rng = Rng::new(17);
    for _ in 0..6 {
        let rows = 1 + rng.below(300) as usize;
        let scale_cols = 1 + rng.below(13) as usize;
        let batches = 1 + rng.below(3) as usize;
        let len = blocked_scale_len(rows, scale_cols, batches);
        let (padded_rows, padded_cols) = (rows.div_ceil(128) * 128, scale_cols.div_ceil(4) * 4);
        assert_eq!(len, batches * padded_rows * padded_cols);
        let mut hit = vec![false; len];
        for l in 0..batches {
            for r in 0..padded_rows {
                for c in 0..padded_cols {
                    let offset = blocked_scale_offset(l, r, c, rows, scale_cols);
                    assert!(offset < len && !hit[offset], "({l}, {r}, {c}) of {rows} x {scale_cols}");
                    hit[offset] = true;
                }
            }
        }
    }
}

#[test]
fn blocked_offsets_match_the_tasks_permuted_tensor_and_to_blocked() {
    let mut rng = Rng::new(18);
    let (rows, scale_cols, batches) = (384, 12, 2);
    let (rest_m, rest_k) = (rows / 128, scale_cols / 4);
    // The task allocates a contiguous (L, rest_m, rest_k, 32, 4, 4) tensor, views it as
    // permute(3, 4, 1, 5, 2, 0) = logical (32, 4, rest_m, 4, rest_k, L), and stores scale
    // (r, c, l) at logical index (r % 32, (r % 128) / 32, r / 128, c % 4, c / 4, l).
    let memory_shape = [batches, rest_m, rest_k, 32, 4, 4];
    let mut memory_strides = [1usize; 6];
    for d in (0..5).rev() {
        memory_strides[d] = memory_strides[d + 1] * memory_shape[d + 1];
    }
    let permutation = [3, 4, 1, 5, 2, 0];
    let permuted_offset = |l: usize, r: usize, c: usize| {
        let logical = [r % 32, (r % 128) / 32, r / 128, c % 4, c / 4, l];
        (0..6)
            .map(|d| logical[d] * memory_strides[permutation[d]])
            .sum::<usize>()
    };
    // The reference's to_blocked, per batch: view (rows/128, 128, cols/4, 4), permute
    // (0, 2, 1, 3), reshape (-1, 4, 32, 4) (so row r % 128 = 32 * i + j), transpose (1, 2),
    // flatten: [tile][j][i][c % 4].
    let to_blocked_offset = |l: usize, r: usize, c: usize| {
        let tile = (r / 128) * rest_k + c / 4;
        let (i, j) = ((r % 128) / 32, r % 32);
        l * rows * scale_cols + ((tile * 32 + j) * 4 + i) * 4 + c % 4
    };
    for _ in 0..5000 {
        let (l, r, c) = (
            rng.below(batches as u32) as usize,
            rng.below(rows as u32) as usize,
            rng.below(scale_cols as u32) as usize,
        );
        let offset = blocked_scale_offset(l, r, c, rows, scale_cols);
        assert_eq!(offset, permuted_offset(l, r, c), "({l}, {r}, {c})");
        assert_eq!(offset, to_blocked_offset(l, r, c), "({l}, {r}, {c})");
    }
}

#[test]
fn blocked_scales_place_a_128_row_by_64_k_block_as_documented() {
    let mut rng = Rng::new(19);
    // 200 rows (padded to 256) x 96 k (6 scale columns, padded to 8), 2 batches.
    let mut tensor = Nvfp4Tensor::zeros(200, 96, 2).unwrap();
    random_scale_bytes(&mut rng, &mut tensor);
    let blocked = tensor.blocked_scales();
    assert_eq!(blocked.len(), 2 * 2 * 2 * 512);
    // The block of batch 1, rows 128..256, k 64..128 (scale columns 4..8) is tile
    // (row tile 1, column tile 1): batch base 2048, tile base (1 * 2 + 1) * 512.
    let base = 2048 + 3 * 512;
    for t in 0..128 {
        for j in 0..4 {
            let at = blocked[base + (t % 32) * 16 + (t / 32) * 4 + j];
            let (r, c) = (128 + t, 4 + j);
            let expected = if r < 200 && c < 6 {
                tensor.scale(1, r, c)
            } else {
                E4m3(0)
            };
            assert_eq!(at, expected, "row {r}, column {c}");
        }
    }
    // Spot checks of the pattern: row 1 is one 16-byte line down, row 32 one 4-byte group over.
    assert_eq!(blocked[base], tensor.scale(1, 128, 4));
    assert_eq!(blocked[base + 16], tensor.scale(1, 129, 4));
    assert_eq!(blocked[base + 4], tensor.scale(1, 160, 4));
    assert_eq!(blocked[base + 16 + 4 + 1], tensor.scale(1, 161, 5));
    assert_eq!(blocked[base + 3 * 16 + 2 * 4 + 1], tensor.scale(1, 128 + 64 + 3, 5));
    // Every real scale is somewhere; everything else is padding.
    let non_zero = blocked.iter().filter(|s| s.0 != 0).count();
    assert_eq!(non_zero, tensor.scales.len());
    // One 128-row x 256-k tile's scales are 2048 contiguous bytes.
    let wide = Nvfp4Tensor::zeros(128, 512, 1).unwrap();
    let mut offsets: Vec<usize> = (0..128)
        .flat_map(|r| (16..32).map(move |c| blocked_scale_offset(0, r, c, 128, 32)))
        .collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (2048..4096).collect::<Vec<_>>());
    assert_eq!(wide.blocked_scales().len(), 4096);
}

#[test]
fn task_inputs_use_only_the_task_values() {
    let mut rng = Rng::new(20);
    let (a, b) = gemv_inputs(&mut rng, 256, 512, 2, Inputs::Task).unwrap();
    assert_eq!(
        (a.rows, a.k, a.batches, b.rows, b.k, b.batches),
        (256, 512, 2, 128, 512, 2)
    );
    for tensor in [&a, &b] {
        let bytes: BTreeSet<u8> = tensor.data.iter().map(|d| d.0).collect();
        assert_eq!(bytes, (0..4).collect());
        let scales: BTreeSet<u32> = tensor.scales.iter().map(|s| e4m3_to_f32(s.0).to_bits()).collect();
        assert_eq!(scales, [0.0f32, 1.0, 2.0].iter().map(|v| v.to_bits()).collect());
    }
    let (a, b) = gemm_inputs(&mut rng, 128, 96, 256, 2, Inputs::Task).unwrap();
    assert_eq!((a.rows, b.rows, a.k, b.batches), (128, 96, 256, 2));
    for tensor in [&a, &b] {
        let bytes: BTreeSet<u8> = tensor.data.iter().map(|d| d.0).collect();
        assert_eq!(bytes, (0..2).collect());
        let scales: BTreeSet<u32> = tensor.scales.iter().map(|s| e4m3_to_f32(s.0).to_bits()).collect();
        assert_eq!(scales, [1.0f32, 2.0].iter().map(|v| v.to_bits()).collect());
    }
}

#[test]
fn wide_inputs_cover_every_byte_and_the_scale_range() {
    let mut rng = Rng::new(21);
    let (a, b) = gemv_inputs(&mut rng, 256, 1024, 2, Inputs::Wide).unwrap();
    let (c, d) = gemm_inputs(&mut rng, 64, 48, 512, 2, Inputs::Wide).unwrap();
    for (name, tensor) in [("gemv a", &a), ("gemv b", &b), ("gemm a", &c), ("gemm b", &d)] {
        let bytes: BTreeSet<u8> = tensor.data.iter().map(|x| x.0).collect();
        assert_eq!(bytes.len(), 256, "{name}: every byte value");
        assert!(
            tensor.scales.iter().all(|s| s.0 & 0x80 == 0 && s.0 != 0x7F),
            "{name}: positive, not NaN"
        );
    }
    // Scale exponents spread over the normal range (fields 1..=15), in both operands.
    for (name, x, y) in [("gemv", &a, &b), ("gemm", &c, &d)] {
        let fields = |t: &Nvfp4Tensor| t.scales.iter().map(|s| s.0 >> 3).collect::<BTreeSet<u8>>();
        let (fields_x, fields_y) = (fields(x), fields(y));
        assert!(
            fields_x.len() >= 12 && fields_y.len() >= 12,
            "{name}: {fields_x:?} {fields_y:?}"
        );
        assert!(
            fields_x.contains(&1) && fields_y.contains(&1),
            "{name}: smallest exponent"
        );
        assert!(
            fields_x.contains(&15) || fields_y.contains(&15),
            "{name}: largest exponent"
        );
    }
}

#[test]
fn wide_outputs_stay_inside_f16_range() {
    let mut rng = Rng::new(22);
    let check = |name: &str, magnitudes: Vec<f64>, outputs: Vec<f64>| {
        let largest = magnitudes.iter().fold(0.0f64, |m, &v| m.max(v));
        assert!(largest <= WIDE_MAGNITUDE_LIMIT, "{name}: sum of |products| {largest}");
        // Far above atol, so that the tolerance check means something.
        assert!(largest > 8.0, "{name}: outputs are not tiny ({largest})");
        for value in outputs {
            assert!(
                value.abs() <= largest && f16::from_f64(value).is_finite(),
                "{name}: {value}"
            );
        }
    };
    for (m, k, l) in [(128, 16384, 1), (96, 7168, 2), (128, 256, 2), (64, 16, 3)] {
        let (a, b) = gemv_inputs(&mut rng, m, k, l, Inputs::Wide).unwrap();
        check(
            &format!("gemv {m} x {k} x {l}"),
            products(&a, &b, 1, true),
            gemv_reference(&a, &b),
        );
    }
    for (m, n, k, l) in [(40, 24, 4096, 1), (32, 64, 256, 2)] {
        let (a, b) = gemm_inputs(&mut rng, m, n, k, l, Inputs::Wide).unwrap();
        check(
            &format!("gemm {m} x {n} x {k} x {l}"),
            products(&a, &b, n, true),
            gemm_reference(&a, &b),
        );
    }
}

#[test]
fn wide_shrinks_rows_whose_products_are_too_large() {
    let mut rng = Rng::new(23);
    let (mut a, mut b) = gemm_inputs(&mut rng, 6, 5, 512, 2, Inputs::Wide).unwrap();
    // Rows 0 and 3 of batch 1 get the largest scales everywhere, as does b.
    for r in [6, 9] {
        a.scales[r * 32..(r + 1) * 32].fill(E4m3(0x7E));
    }
    b.scales.fill(E4m3(0x7E));
    let untouched = a.scales[0..6 * 32].to_vec();
    shrink_loud_rows(&mut a, &b, 5);
    let magnitudes = products(&a, &b, 5, true);
    assert!(magnitudes.iter().all(|&v| v <= WIDE_MAGNITUDE_LIMIT), "{magnitudes:?}");
    for r in [6, 9] {
        assert!(
            a.scales[r * 32..(r + 1) * 32].iter().all(|s| s.0 != 0),
            "row {r} shrunk, not zeroed"
        );
    }
    // Batch 0 met b's large scales too, so its rows shrank as well: each row by one power
    // of two, exactly wherever the result is normal (above 0x08, which a subnormal
    // quotient can round up to).
    for (r, (before, after)) in untouched.chunks_exact(32).zip(a.scales.chunks_exact(32)).enumerate() {
        let ratios: BTreeSet<u32> = before
            .iter()
            .zip(after)
            .filter(|(_, after)| after.0 > 0x08)
            .map(|(before, after)| (e4m3_to_f32(before.0) / e4m3_to_f32(after.0)).to_bits())
            .collect();
        assert!(ratios.len() <= 1, "row {r}: {ratios:?}");
        for ratio in ratios {
            let ratio = f32::from_bits(ratio);
            assert!(ratio >= 2.0 && ratio.log2().fract() == 0.0, "row {r}: ratio {ratio}");
        }
    }
}

#[test]
fn references_match_a_naive_loop_over_elements() {
    let mut rng = Rng::new(24);
    for trial in 0..8 {
        let (m, n) = (1 + rng.below(37) as usize, 1 + rng.below(9) as usize);
        let (k, l) = (16 * (1 + rng.below(12) as usize), 1 + rng.below(3) as usize);
        let kind = if trial % 2 == 0 { Inputs::Wide } else { Inputs::Task };
        let (a, b) = gemm_inputs(&mut rng, m, n, k, l, kind).unwrap();
        // Both sums are exact, so they agree to the bit.
        assert_eq!(
            gemm_reference(&a, &b),
            naive_products(&a, &b, n),
            "gemm {m} x {n} x {k} x {l}"
        );
        let (a, b) = gemv_inputs(&mut rng, m, k, l, kind).unwrap();
        assert_eq!(
            gemv_reference(&a, &b),
            naive_products(&a, &b, 1),
            "gemv {m} x {k} x {l}"
        );
    }
    // Quantized data (sign mixes, -0 codes, subnormal scales) as well.
    let values: Vec<f32> = (0..2 * 20 * 64)
        .map(|_| rng.uniform(-1.0, 1.0) * 2f32.powf(rng.uniform(-9.0, 9.0)))
        .collect();
    let a = Nvfp4Tensor::quantize(&values[..2 * 13 * 64], 13, 64, 2).unwrap();
    let b = Nvfp4Tensor::quantize(&values[2 * 13 * 64..], 7, 64, 2).unwrap();
    assert_eq!(gemm_reference(&a, &b), naive_products(&a, &b, 7));
}

#[test]
fn gemv_reference_reads_only_row_0_of_b() {
    let mut rng = Rng::new(25);
    let (a, mut b) = gemv_inputs(&mut rng, 50, 128, 2, Inputs::Wide).unwrap();
    let before = gemv_reference(&a, &b);
    let row = 128 / 2;
    for l in 0..2 {
        for byte in &mut b.data[(l * 128 + 1) * row..(l + 1) * 128 * row] {
            *byte = Fp4x2(rng.next_u32() as u8);
        }
    }
    assert_eq!(gemv_reference(&a, &b), before);
    b.data[0] = Fp4x2(b.data[0].0 ^ 0x77);
    assert_ne!(gemv_reference(&a, &b), before);
}

#[test]
#[should_panic(expected = "a is")]
fn references_reject_mismatched_operands() {
    let mut rng = Rng::new(26);
    let (a, _) = gemm_inputs(&mut rng, 4, 4, 32, 1, Inputs::Wide).unwrap();
    let (_, b) = gemm_inputs(&mut rng, 4, 4, 64, 1, Inputs::Wide).unwrap();
    gemm_reference(&a, &b);
}

#[test]
fn check_close_catches_nan_inf_and_one_wrong_element() {
    let mut rng = Rng::new(27);
    let (a, b) = gemv_inputs(&mut rng, 300, 512, 1, Inputs::Wide).unwrap();
    let want = gemv_reference(&a, &b);
    let got: Vec<f16> = want.iter().map(|&v| f16::from_f64(v)).collect();
    check_close(&got, &want, 1e-3, 1e-3).unwrap();
    let index = 1 + rng.below(298) as usize;
    for (bad, what) in [
        (f16::NAN, "NaN"),
        (f16::INFINITY, "inf"),
        (f16::NEG_INFINITY, "-inf"),
        (f16::from_f64(want[index] * 1.01 + 0.01), "1% off"),
    ] {
        let mut wrong = got.clone();
        wrong[index] = bad;
        let message = check_close(&wrong, &want, 1e-3, 1e-3).expect_err(what);
        assert!(message.starts_with("1 of 300 values"), "{what}: {message}");
        assert!(message.contains(&format!("index {index}:")), "{what}: {message}");
    }
    let mut reference_nan = want.clone();
    reference_nan[index] = f64::NAN;
    assert!(
        check_close(&got, &reference_nan, 1e-3, 1e-3).is_err(),
        "a NaN reference never passes"
    );
    assert!(check_close(&got[1..], &want, 1e-3, 1e-3).is_err());
    assert!(check_close(&got, &want, -1.0, 1e-3).is_err());
    assert!(check_close(&got, &want, 1e-3, f64::NAN).is_err());
}

#[test]
fn block_scales_places_every_plain_scale_as_the_tensor_s_blocked_layout() {
    let mut rng = Rng::new(71);
    for (rows, k, batches) in [(128, 256, 1), (200, 96, 2), (7, 16, 3)] {
        let (t, _) = gemv_inputs(&mut rng, rows, k, batches, Inputs::Wide).expect("inputs");
        let plain = &t.scales[..batches * rows * k / 16];
        let blocked = block_scales(plain, rows, k, batches).expect("blocked");
        assert_eq!(blocked, t.blocked_scales(), "[{rows}, {k}, {batches}]");
        for (i, &s) in plain.iter().enumerate() {
            let (row, c) = (i / (k / 16), i % (k / 16));
            assert_eq!(
                blocked[blocked_scale_offset(row / rows, row % rows, c, rows, k / 16)],
                s
            );
        }
        let bytes: Vec<u8> = plain.iter().map(|s| s.0).collect();
        let blocked_bytes = block_scales(&bytes, rows, k, batches).expect("bytes");
        assert_eq!(blocked_bytes, blocked.iter().map(|s| s.0).collect::<Vec<_>>());
    }
    assert!(block_scales(&[E4m3(1); 10], 2, 96, 1).is_err(), "12 scales needed");
    assert!(block_scales(&[E4m3(1); 2], 2, 24, 1).is_err(), "K not a multiple of 16");
}
