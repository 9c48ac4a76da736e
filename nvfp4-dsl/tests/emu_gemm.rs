//! The sm_100a block-scaled NVFP4 GEMM snapshot (`gemm_nvfp4`, BN = 128
//! and 256) run end to end on the emulator: tensor copies through
//! emulator tensor maps, bulk copies, mbarrier pipelines, tensor memory,
//! `tcgen05.cp`/`mma`/`commit`/`ld`, checked element by element against an
//! f64 reference computed here.

use half::f16;
use nvfp4_dsl::emu::{Launch, Memory, Module, ParamValue, TensorMap2d};

mod common;
use common::{Rng, ptx, upload};
use nvfp4_testkit::{Nvfp4Rows, products};

/// A K-major NVFP4 operand: `[L][rows][K/2]` packed bytes (even K in the
/// low nibble) and its scales, `[L][rows][K/16]`.
struct Operand {
    rows: usize,
    k: usize,
    batches: usize,
    data: Vec<u8>,
    scales: Vec<u8>,
}

impl Operand {
    fn random(rng: &mut Rng, rows: usize, k: usize, batches: usize) -> Operand {
        let data = (0..batches * rows * k / 2).map(|_| rng.next_u64() as u8).collect();
        // Scales in [0.25, 3.75]: exponent field 5..=8, any mantissa.
        let scales = (0..batches * rows * k / 16)
            .map(|_| {
                let r = rng.next_u64();
                (((5 + r % 4) << 3) | ((r >> 8) & 7)) as u8
            })
            .collect();
        Operand {
            rows,
            k,
            batches,
            data,
            scales,
        }
    }

    /// The rows as the reference reads them.
    fn rows(&self) -> Nvfp4Rows<'_> {
        Nvfp4Rows {
            rows: self.rows,
            k: self.k,
            data: &self.data,
            scales: &self.scales,
        }
    }

    /// The scales in the blocked 128x4 layout the kernel reads.
    fn blocked_scales(&self) -> Vec<u8> {
        let (rb, kb) = (self.rows.div_ceil(128), self.k / 64);
        let mut out = vec![0u8; self.batches * rb * kb * 512];
        for l in 0..self.batches {
            for r in 0..self.rows {
                for c in 0..self.k / 16 {
                    let off = l * rb * kb * 512
                        + ((r / 128) * kb + c / 4) * 512
                        + (r % 32) * 16
                        + ((r % 128) / 32) * 4
                        + c % 4;
                    out[off] = self.scales[(l * self.rows + r) * self.k / 16 + c];
                }
            }
        }
        out
    }
}

/// `C[l][m][n] = sum_k A(l, m, k) * B(l, n, k)`, exactly: the workspace's
/// reference (`nvfp4_testkit`).
fn reference(a: &Operand, b: &Operand) -> Vec<f64> {
    products(a.rows(), b.rows(), b.rows, a.batches)
}

/// Runs the GEMM snapshot with tiles of `bn` columns and returns C.
fn run_gemm(src: &str, entry: &str, bn: usize, a: &Operand, b: &Operand, sfa: &[u8]) -> Vec<f16> {
    let module = Module::parse(src).unwrap();
    let (m, n, k, l) = (a.rows, b.rows, a.k, a.batches);
    let mut mem = Memory::new();
    let da = upload(&mut mem, &a.data, false);
    let db = upload(&mut mem, &b.data, false);
    let dsfa = upload(&mut mem, sfa, false);
    let sfb = b.blocked_scales();
    let dsfb = upload(&mut mem, &sfb, false);
    let poison: Vec<u8> = (0..m * n * l).flat_map(|_| f16::NAN.to_bits().to_le_bytes()).collect();
    let dc = upload(&mut mem, &poison, true);
    let map = |base: u64, rows: usize, box_rows: u32| TensorMap2d {
        base,
        row_bytes: (k / 2) as u64,
        rows: (rows * l) as u64,
        row_stride: (k / 2) as u64,
        box_bytes: 128,
        box_rows,
        swizzle: 128,
    };
    let params = vec![
        ParamValue::Bytes(map(da, m, 128).encode().to_vec()),
        ParamValue::Bytes(map(db, n, bn as u32).encode().to_vec()),
        ParamValue::U64(dsfa),
        ParamValue::U64(sfa.len() as u64),
        ParamValue::U64(dsfb),
        ParamValue::U64(sfb.len() as u64),
        ParamValue::U64(dc),
        ParamValue::U64((m * n * l) as u64),
        ParamValue::U32(m as u32),
        ParamValue::U32(n as u32),
        ParamValue::U32(k as u32),
        ParamValue::F32(1.0),
    ];
    let launch = Launch::new(
        ((n / bn) as u32, (m / 128) as u32, l as u32),
        (128, 1, 1),
        (4 * (128 * 128 + bn * 128 + 2048 + bn / 128 * 2048)) as u32,
    );
    let stats = module
        .launch(entry, &launch, &params, &mut mem)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stats.blocks, ((n / bn) * (m / 128) * l) as u64);
    mem.read(dc, m * n * l * 2)
        .unwrap()
        .chunks(2)
        .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
        .collect()
}

/// The first element outside `|got - want| <= 1e-3 + 1e-3 |want|`.
fn mismatch(got: &[f16], want: &[f64]) -> Option<String> {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).enumerate().find_map(|(i, (g, w))| {
        let g = f64::from(g.to_f32());
        let ok = (g - w).abs() <= 1e-3 + 1e-3 * w.abs();
        (!ok).then(|| format!("element {i}: got {g}, want {w}"))
    })
}

fn check(snap: &str, entry: &str, bn: usize, (m, n, k, l): (usize, usize, usize, usize), seed: u64, blind: bool) {
    let src = ptx(snap);
    let mut rng = Rng::new(seed);
    let a = Operand::random(&mut rng, m, k, l);
    let b = Operand::random(&mut rng, n, k, l);
    let want = reference(&a, &b);
    assert!(
        want.iter().all(|w| w.abs() < 60000.0),
        "inputs must keep C in f16 range"
    );
    let got = run_gemm(&src, entry, bn, &a, &b, &a.blocked_scales());
    if let Some(e) = mismatch(&got, &want) {
        panic!("{entry} M={m} N={n} K={k} L={l}: {e}");
    }
    if !blind {
        return;
    }
    // Not blind: swapping two of A's scale blocks (K-blocks 0 and 1 of the
    // first 128 rows) must be caught.
    let mut sfa = a.blocked_scales();
    let (x, y) = sfa.split_at_mut(512);
    x.swap_with_slice(&mut y[..512]);
    let got = run_gemm(&src, entry, bn, &a, &b, &sfa);
    assert!(
        mismatch(&got, &want).is_some(),
        "{entry}: swapped scale blocks went unnoticed"
    );
}

#[test]
fn gemm_bn128_on_the_emulator() {
    // 2 x 2 tiles, 9 K tiles: the 4-stage ring wraps twice.
    check(
        include_str!("../../snapshots/gemm_nvfp4__bn_128_stages_4__sm_100a.snap"),
        "gemm_nvfp4__bn_128_stages_4",
        128,
        (256, 256, 2304, 1),
        1,
        true,
    );
}

#[test]
fn gemm_bn256_on_the_emulator() {
    check(
        include_str!("../../snapshots/gemm_nvfp4__bn_256_stages_4__sm_100a.snap"),
        "gemm_nvfp4__bn_256_stages_4",
        256,
        (256, 512, 2304, 1),
        2,
        false,
    );
}

#[test]
fn gemm_batched_on_the_emulator() {
    // Two batches, one K tile short of a full ring.
    check(
        include_str!("../../snapshots/gemm_nvfp4__bn_128_stages_4__sm_100a.snap"),
        "gemm_nvfp4__bn_128_stages_4",
        128,
        (128, 256, 768, 2),
        3,
        false,
    );
}
