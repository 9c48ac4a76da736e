//! The emulator on the PTX our compiler emits (the reviewed snapshots),
//! checked bit for bit against CPU computations, and one test per launch
//! check on a small hand-written kernel (`launch_checks.rs`), and the
//! H100's recorded probes replayed (`probes.rs`).

use half::f16;
use nvfp4_dsl::emu::{EmuError, Launch, Memory, Module, ParamValue};

#[path = "../common/mod.rs"]
mod common;
mod launch_checks;
mod probes;
use common::{Rng, assert_located, download_u32, line_of, linear, ptx, upload_u32};

macro_rules! snapshot {
    ($name:literal) => {
        ptx(include_str!(concat!("../../../snapshots/", $name, ".snap")))
    };
}

fn upload_f32(mem: &mut Memory, data: &[f32], writable: bool) -> u64 {
    upload_u32(mem, &data.iter().map(|f| f.to_bits()).collect::<Vec<_>>(), writable)
}

/// A slice argument: pointer and length.
fn slice(addr: u64, len: usize) -> [ParamValue; 2] {
    [ParamValue::U64(addr), ParamValue::U64(len as u64)]
}

fn run_saxpy(src: &str) {
    let module = Module::parse(src).unwrap();
    assert_eq!(module.entries(), vec!["saxpy"]);
    let mut rng = Rng::new(1);
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let a = rng.uniform(-2.0, 2.0);
    let mut mem = Memory::new();
    let dx = upload_f32(&mut mem, &x, false);
    let dy = upload_f32(&mut mem, &y, true);
    let params = [slice(dx, n), slice(dy, n)].concat();
    let stats = module
        .launch(
            "saxpy",
            &linear(4, 256, 0),
            &[params, vec![ParamValue::F32(a)]].concat(),
            &mut mem,
        )
        .unwrap();
    assert!(stats.thread_instructions > 0);
    assert_eq!(stats.blocks, 4);
    let got = download_u32(&mem, dy, n);
    for i in 0..n {
        assert_eq!(got[i], (a * x[i] + y[i]).to_bits(), "element {i}");
    }
}

#[test]
fn saxpy_sm90_and_sm100a() {
    run_saxpy(&snapshot!("saxpy__default__sm_90"));
    run_saxpy(&snapshot!("saxpy__default__sm_100a"));
}

/// The butterfly reduction `warp_reduce_sum` performs, lane 0's result.
fn butterfly(v: &[f32; 32]) -> f32 {
    let mut v = *v;
    for off in [16, 8, 4, 2, 1] {
        let prev = v;
        for l in 0..32 {
            v[l] = prev[l] + prev[l ^ off];
        }
    }
    v[0]
}

fn run_block_sum(src: &str) {
    let module = Module::parse(src).unwrap();
    let mut rng = Rng::new(2);
    let (n, blocks, threads) = (5000usize, 3u32, 1024u32);
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let mut mem = Memory::new();
    let dx = upload_f32(&mut mem, &x, false);
    let dp = upload_f32(&mut mem, &vec![f32::NAN; blocks as usize], true);
    let params = [
        slice(dx, n).to_vec(),
        slice(dp, blocks as usize).to_vec(),
        vec![ParamValue::U32(n as u32)],
    ]
    .concat();
    module
        .launch("block_sum", &linear(blocks, threads, 0), &params, &mut mem)
        .unwrap();
    let got = download_u32(&mem, dp, blocks as usize);
    let stride = (blocks * threads) as usize;
    for (b, g) in got.iter().enumerate() {
        // Each thread's strided sum, then the same two-level butterfly.
        let acc: Vec<f32> = (0..threads as usize)
            .map(|t| {
                let mut a = 0f32;
                let mut i = b * threads as usize + t;
                while i < n {
                    a += x[i];
                    i += stride;
                }
                a
            })
            .collect();
        let warp_sums: Vec<f32> = acc.chunks(32).map(|w| butterfly(w.try_into().unwrap())).collect();
        let mut v = [0f32; 32];
        v[..warp_sums.len()].copy_from_slice(&warp_sums);
        assert_eq!(*g, butterfly(&v).to_bits(), "block {b}");
    }
}

#[test]
fn block_sum_sm90_and_sm100a() {
    run_block_sum(&snapshot!("block_sum__default__sm_90"));
    run_block_sum(&snapshot!("block_sum__default__sm_100a"));
}

fn run_tile_mirror(src: &str, entry: &str) {
    let module = Module::parse(src).unwrap();
    let mut rng = Rng::new(3);
    let (tiles, words) = (2u32, 16384u32);
    let n = (tiles * words) as usize;
    let src_data: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
    let mut mem = Memory::new();
    let ds = upload_u32(&mut mem, &src_data, false);
    let dd = upload_u32(&mut mem, &vec![0xDEAD_BEEF; n], true);
    let params = [
        slice(ds, n).to_vec(),
        slice(dd, n).to_vec(),
        vec![ParamValue::U32(words)],
    ]
    .concat();
    // 64 KiB of dynamic shared memory.
    module
        .launch(entry, &linear(tiles, 256, words * 4), &params, &mut mem)
        .unwrap();
    let got = download_u32(&mem, dd, n);
    let w = words as usize;
    for t in 0..tiles as usize {
        let tile = &src_data[t * w..(t + 1) * w];
        for i in 0..w {
            let want = tile[i].wrapping_add(tile[w - 1 - i].wrapping_mul(3));
            assert_eq!(got[t * w + i], want, "tile {t} word {i}");
        }
    }
    // One word short of the tile: the last block's staging reads past
    // the shared block and the emulator says so.
    let err = module
        .launch(entry, &linear(tiles, 256, words * 4 - 16), &params, &mut mem)
        .unwrap_err();
    assert!(err.message().contains("shared"), "{err}");
}

#[test]
fn tile_mirror_with_64k_dynamic_shared() {
    run_tile_mirror(&snapshot!("tile_mirror__vecs_2__sm_90"), "tile_mirror__vecs_2");
    run_tile_mirror(&snapshot!("tile_mirror__vecs_4__sm_90"), "tile_mirror__vecs_4");
    run_tile_mirror(&snapshot!("tile_mirror__vecs_2__sm_100a"), "tile_mirror__vecs_2");
    run_tile_mirror(&snapshot!("tile_mirror__vecs_4__sm_100a"), "tile_mirror__vecs_4");
}

/// Correctly rounded f64 -> f16: round to odd at f32 precision (exact
/// for the last bit), then round to nearest even with `half`.
fn f16_of_f64(x: f64) -> f16 {
    let f = x as f32;
    if f64::from(f) == x || !f.is_finite() {
        return f16::from_f32(f);
    }
    let toward_zero = if f64::from(f).abs() > x.abs() {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    };
    f16::from_f32(f32::from_bits(toward_zero.to_bits() | 1))
}

/// `mixed_ops_reference` of nvfp4-kernels, with exact f16 arithmetic.
fn mixed_ops_reference(xs: &[u32], fs: &[f32], hs: &[f16]) -> (Vec<u32>, Vec<f32>, Vec<u32>) {
    let n = xs.len();
    let mut out_u = vec![0u32; n * 8];
    let mut out_f = vec![0f32; n * 4];
    let mut out_h = vec![0u32; n * 3];
    let pack = |lo: f16, hi: f16| u32::from(lo.to_bits()) | (u32::from(hi.to_bits()) << 16);
    let hmul = |a: f16, b: f16| f16_of_f64(f64::from(a) * f64::from(b));
    let hadd = |a: f16, b: f16| f16_of_f64(f64::from(a) + f64::from(b));
    let hsub = |a: f16, b: f16| f16_of_f64(f64::from(a) - f64::from(b));
    let fma = |a: f16, b: f16, c: f16| f16_of_f64(f64::from(a) * f64::from(b) + f64::from(c));
    for i in 0..n {
        let (x, f, h) = (xs[i], fs[i], hs[i]);
        let (base, lane) = (i - i % 32, i % 32);
        let u = &mut out_u[i * 8..i * 8 + 8];
        u[0] = x.wrapping_mul(2654435761).wrapping_add(x << (x >> 27));
        let s = (x as i32) >> (x & 7);
        u[1] = if x & 1 == 0 { (s / -3) as u32 } else { (s % 5) as u32 };
        let b = u32::from(x as u8) + u32::from((x >> 8) as u16);
        let w = i64::from(x as i32).wrapping_mul(-3) as u64;
        u[2] = b ^ (w >> 32) as u32 ^ w as u32;
        let mut acc = 0u32;
        for k in 0..(x & 15) {
            acc = acc.wrapping_add(k * k);
        }
        let mut j = 0u32;
        loop {
            j += 3;
            if j > (x & 31) {
                break;
            }
            if j.is_multiple_of(2) {
                continue;
            }
            acc ^= j << 4;
        }
        u[3] = acc;
        let bytes: Vec<u32> = (0..4).map(|t| (x >> (8 * t)) & 0xff).collect();
        let mut sum = 0u32;
        for t in (0..(x & 63)).step_by(7) {
            sum += t;
        }
        for t in 1..=(x & 3) {
            sum += t * 100;
        }
        u[4] = bytes[0]
            .wrapping_add((bytes[1] << 8).wrapping_mul(3))
            .wrapping_add(bytes[3] ^ bytes[2])
            .wrapping_add(sum);
        u[5] = (0..32).fold(0u32, |a, l| a.wrapping_add(xs[base + l] & 0xffff));
        let down = if lane + 3 < 32 { xs[base + lane + 3] } else { x };
        u[6] = xs[base + (lane ^ 5)] ^ down;
        u[7] = xs[base + (x & 31) as usize].wrapping_add((lane as u32) << 24);

        let fo = &mut out_f[i * 4..i * 4 + 4];
        fo[0] = f * 1.5 + 0.25;
        fo[1] = f.mul_add(f, -1.0) / 3.0;
        fo[2] = (f * 1000.0) as i32 as f32 + (f64::from(f) * 3.0) as f32;
        fo[3] = f.abs().sqrt().clamp(0.5, 1.75) + h.to_f32() + half::bf16::from_f32(f).to_f32()
            - f32::from_bits((x & 0x007f_ffff) | 0x3f00_0000);

        let hf = f16::from_f32(f);
        out_h[i * 3] = pack(fma(h, h, h), fma(hf, hf, h));
        let down_lane = if lane + 1 < 32 { base + lane + 1 } else { i };
        let (dh, df) = (hs[down_lane], f16::from_f32(fs[down_lane]));
        out_h[i * 3 + 1] = pack(
            hadd(hmul(h, f16::from_f32(0.5)), dh),
            hadd(hmul(hf, f16::from_f32(-2.0)), df),
        );
        let neg = if h > f16::from_f32(0.0) { h } else { -h };
        let q = f16::from_f32(neg.to_f32() / f16::from_f32(3.0).to_f32());
        out_h[i * 3 + 2] = pack(hsub(hmul(h, h), h), q);
    }
    (out_u, out_f, out_h)
}

fn run_mixed_ops(src: &str, n: usize, seed: u64) {
    let module = Module::parse(src).unwrap();
    let mut rng = Rng::new(seed);
    let signed = |rng: &mut Rng| {
        let m = rng.uniform(0.25, 4.0);
        if rng.next_u32() & 1 == 0 { m } else { -m }
    };
    let xs: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
    let fs: Vec<f32> = (0..n).map(|_| signed(&mut rng)).collect();
    let hs: Vec<f16> = (0..n).map(|_| f16::from_f32(signed(&mut rng))).collect();
    let (want_u, want_f, want_h) = mixed_ops_reference(&xs, &fs, &hs);
    let mut mem = Memory::new();
    let dx = upload_u32(&mut mem, &xs, false);
    let df = upload_f32(&mut mem, &fs, false);
    let hbytes: Vec<u8> = hs.iter().flat_map(|h| h.to_bits().to_le_bytes()).collect();
    let dh = mem.alloc(hbytes.len(), false);
    mem.write(dh, &hbytes).unwrap();
    let du = upload_u32(&mut mem, &vec![0xDEAD_BEEF; n * 8], true);
    let dfo = upload_f32(&mut mem, &vec![f32::NAN; n * 4], true);
    let dho = upload_u32(&mut mem, &vec![0x7E00_7E00; n * 3], true);
    let params = [
        slice(dx, n),
        slice(df, n),
        slice(dh, n),
        slice(du, n * 8),
        slice(dfo, n * 4),
        slice(dho, n * 3),
    ]
    .concat();
    module
        .launch("mixed_ops", &linear((n / 256) as u32, 256, 0), &params, &mut mem)
        .unwrap();
    let got_u = download_u32(&mem, du, n * 8);
    let got_f = download_u32(&mem, dfo, n * 4);
    let got_h = download_u32(&mem, dho, n * 3);
    for (k, (g, w)) in got_u.iter().zip(&want_u).enumerate() {
        assert_eq!(g, w, "u32 output {k} (thread {}, slot {})", k / 8, k % 8);
    }
    for (k, (g, w)) in got_f.iter().zip(&want_f).enumerate() {
        assert_eq!(*g, w.to_bits(), "f32 output {k} (thread {}, slot {})", k / 4, k % 4);
    }
    for (k, (g, w)) in got_h.iter().zip(&want_h).enumerate() {
        assert_eq!(g, w, "f16x2 output {k} (thread {}, slot {})", k / 3, k % 3);
    }
}

#[test]
fn mixed_ops_bit_exact() {
    run_mixed_ops(&snapshot!("mixed_ops__default__sm_90"), 512, 4);
    run_mixed_ops(&snapshot!("mixed_ops__default__sm_100a"), 256, 5);
}
