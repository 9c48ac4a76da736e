//! A wgmma accumulator passed through `#[device]` functions: the kernel
//! declares it, a device function takes it as `acc: &mut [f32; N]` and
//! hands it to `wgmma_f16_rs` (and on to another device function), and the
//! MMAs write the kernel's array. Run on the sm_90a emulator against an
//! f64 reference on random inputs.

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;

/// `acc (+)= a x B` for one K step of 16; `accumulate` false overwrites.
#[device]
fn mma_step<const N: usize>(acc: &mut [f32; N], a: [f16x2; 4], b: WgmmaDesc, accumulate: bool) {
    wgmma_fence();
    wgmma_f16_rs(acc, a, b, accumulate);
    wgmma_commit_group();
}

/// `acc = a x B + a x B`, through `mma_step` twice, then waits for both.
#[device]
fn mma_twice<const N: usize>(acc: &mut [f32; N], a: [f16x2; 4], b: WgmmaDesc) {
    mma_step(acc, a, b, false);
    mma_step(acc, a, b, true);
    wgmma_wait_group(0);
}

/// One warpgroup: `d = 2 a b` for `a` 64 x 16 (each thread's four fragment
/// registers, `a[4 t..4 t + 4]`) and `b` 16 x 8, K-major without a swizzle
/// (64 words: two 8 x 16-byte core matrices, LBO = SBO = 128 bytes); the
/// thread's four sums to `d[4 t..4 t + 4]`.
#[kernel(targets(sm_90a))]
pub fn wgmma_through_device_fns(a: &[u32], b: &[u32], d: &mut [f32]) {
    let smem = dynamic_shared::<u32>(0);
    let t = thread_idx_x() as usize;
    if t < 64 {
        smem[t] = b[t];
    }
    fence_proxy_async_shared();
    sync_threads();
    let frag = [
        f16x2::from_bits(a[4 * t]),
        f16x2::from_bits(a[4 * t + 1]),
        f16x2::from_bits(a[4 * t + 2]),
        f16x2::from_bits(a[4 * t + 3]),
    ];
    let desc = WgmmaDesc::new(shared_address(smem, 0))
        .with_leading_byte_offset(128)
        .with_stride_byte_offset(128);
    let mut acc = [0.0f32; 4];
    mma_twice(&mut acc, frag, desc);
    #[unroll]
    for i in 0..4usize {
        d[4 * t + i] = acc[i];
    }
}

/// Small integers as f16 bits: every product and sum is exact in f32.
fn small(rng: &mut Rng) -> (u16, f64) {
    let v = (rng.next_u32() % 9) as f64 - 4.0;
    (half::f16::from_f64(v).to_bits(), v)
}

#[test]
fn an_accumulator_passed_through_device_functions_gets_the_mmas_sums() {
    let mut rng = Rng::new(0x5EED_003A);
    let a: Vec<Vec<(u16, f64)>> = (0..64).map(|_| (0..16).map(|_| small(&mut rng)).collect()).collect();
    let b: Vec<Vec<(u16, f64)>> = (0..8).map(|_| (0..16).map(|_| small(&mut rng)).collect()).collect();
    // Thread t (warp w, lane l; g = 16 w + l / 4, q = l % 4) holds rows g and
    // g + 8, K pairs 2q and 2q + 8, in the order (g, 2q), (g + 8, 2q),
    // (g, 2q + 8), (g + 8, 2q + 8).
    let pair = |r: usize, k: usize| u32::from(a[r][k].0) | u32::from(a[r][k + 1].0) << 16;
    let mut a_words = Vec::with_capacity(512);
    for t in 0..128 {
        let (g, q) = (16 * (t / 32) + t % 32 / 4, t % 4);
        a_words.extend([
            pair(g, 2 * q),
            pair(g + 8, 2 * q),
            pair(g, 2 * q + 8),
            pair(g + 8, 2 * q + 8),
        ]);
    }
    // B's column n, K k at byte (k / 8) 128 + 16 n + 2 (k % 8).
    let mut b_halves = vec![0u16; 128];
    for (n, col) in b.iter().enumerate() {
        for (k, &(bits, _)) in col.iter().enumerate() {
            b_halves[(k / 8) * 64 + 8 * n + k % 8] = bits;
        }
    }
    let b_words: Vec<u32> = b_halves
        .chunks(2)
        .map(|p| u32::from(p[0]) | u32::from(p[1]) << 16)
        .collect();

    let device = Device::emulator(Target::Sm90a);
    let da = device.upload(&a_words).expect("upload");
    let db = device.upload(&b_words).expect("upload");
    let mut dd = device.upload(&vec![f32::NAN; 512]).expect("upload");
    let config = LaunchConfig {
        shared_bytes: 256,
        ..LaunchConfig::linear(1, 128)
    };
    // SAFETY: one warpgroup; a has 512 words, b 64, d 512 floats.
    unsafe { wgmma_through_device_fns::Kernel::launch(&device, config, &da, &db, &mut dd) }.expect("launch");
    let d = device.download(&dd).expect("download");

    let dot = |r: usize, n: usize| 2.0 * (0..16).map(|k| a[r][k].1 * b[n][k].1).sum::<f64>();
    let mut nonzero = 0;
    for t in 0..128 {
        let (g, q) = (16 * (t / 32) + t % 32 / 4, t % 4);
        let want = [
            dot(g, 2 * q),
            dot(g, 2 * q + 1),
            dot(g + 8, 2 * q),
            dot(g + 8, 2 * q + 1),
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(f64::from(d[4 * t + i]), *w, "thread {t}, value {i}");
            nonzero += usize::from(*w != 0.0);
        }
    }
    assert!(nonzero > 400, "{nonzero} of 512 sums are nonzero");
}
