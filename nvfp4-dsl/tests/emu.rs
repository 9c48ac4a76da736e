//! The emulator on the PTX our compiler emits (the reviewed snapshots),
//! checked bit for bit against CPU computations, and one test per launch
//! check on a small hand-written kernel.

use half::f16;
use nvfp4_dsl::emu::{EmuError, Launch, Memory, Module, ParamValue};

mod common;
use common::{Rng, assert_located, download_u32, line_of, linear, ptx, upload_u32};

macro_rules! snapshot {
    ($name:literal) => {
        ptx(include_str!(concat!("../../snapshots/", $name, ".snap")))
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

// ----- launch checks -----

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// A one-entry module `k` with the given parameters and body, plus the
/// 1-based line of the first body line.
fn module(params: &str, body: &str) -> (Module, String) {
    let src = format!("{HEAD}.visible .entry k({params})\n{{\n{body}}}\n");
    (Module::parse(&src).unwrap(), src)
}

/// [`assert_located`], and that the text names the kernel, block, thread
/// and line.
fn assert_names(e: &EmuError, src: &str, needle: &str, block: (u32, u32, u32), thread: (u32, u32, u32)) {
    assert_located(e, src, needle, block, thread);
    let text = e.to_string();
    assert!(text.contains("kernel `k`"), "{text}");
    assert!(
        text.contains(&format!("block ({},{},{})", block.0, block.1, block.2)),
        "{text}"
    );
    assert!(
        text.contains(&format!("thread ({},{},{})", thread.0, thread.1, thread.2)),
        "{text}"
    );
    assert!(text.contains(&format!("line {}", line_of(src, needle))), "{text}");
}

const OUT: &str = ".param .u64 out";

/// Regs shared by the check kernels.
const REGS: &str = "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\t.reg .f32 %f<4>;\n";

fn one_block(threads: u32) -> Launch {
    linear(1, threads, 0)
}

#[test]
fn global_out_of_bounds_is_reported() {
    let body = format!(
        "{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let out = mem.alloc(4 * 40, true);
    let l = linear(2, 64, 0);
    let e = m.launch("k", &l, &[ParamValue::U64(out)], &mut mem).unwrap_err();
    assert_names(&e, &src, "st.global.u32", (0, 0, 0), (40, 0, 0));
    assert!(e.message().contains("out of bounds"), "{e}");
    // The first 40 threads' stores happened.
    assert_eq!(download_u32(&mem, out + 4 * 39, 1), vec![39]);
}

#[test]
fn misaligned_global_access_is_reported() {
    let body = format!(
        "{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %tid.x;\n\tcvt.u64.u32 %rd2, %r1;\n\tshl.b64 %rd2, %rd2, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tadd.s64 %rd3, %rd3, 8;\n\tld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd3];\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let out = mem.alloc(1024, true);
    let e = m
        .launch("k", &one_block(4), &[ParamValue::U64(out)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "ld.global.v4.u32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("misaligned") && e.message().contains("16"), "{e}");
}

#[test]
fn shared_out_of_bounds_and_misaligned_are_reported() {
    let params = OUT;
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 2;\n\tmov.u32 %r3, smem;\n\tadd.s32 %r4, %r3, %r2;\n\tst.shared.u32 [%r4], %r1;\n\tst.shared.u32 [%r4+2], %r1;\n\tret;\n"
    );
    let src = format!("{HEAD}.shared .align 4 .b8 smem[64];\n.visible .entry k({params})\n{{\n{body}}}\n");
    let m = Module::parse(&src).unwrap();
    let mut mem = Memory::new();
    // 17 threads: thread 16 stores past the 64-byte array.
    let e = m
        .launch("k", &one_block(17), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "st.shared.u32 [%r4], %r1", (0, 0, 0), (16, 0, 0));
    assert!(
        e.message().contains("out of bounds") && e.message().contains("smem"),
        "{e}"
    );
    let e = m
        .launch("k", &one_block(16), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "[%r4+2]", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("misaligned"), "{e}");
}

#[test]
fn param_out_of_bounds_is_reported() {
    let body = format!("{REGS}\tld.param.u64 %rd1, [out+4];\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "ld.param.u64", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("outside the parameter"), "{e}");
}

#[test]
fn misaligned_param_access_is_reported() {
    let body = format!("{REGS}\tld.param.u32 %r1, [out+2];\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "ld.param.u32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("misaligned"), "{e}");
}

#[test]
fn warp_sync_with_an_exited_lane_and_inconsistent_elect_are_reported() {
    let body = format!(
        "{REGS}\tmov.u32 %r1, %laneid;\n\tsetp.eq.u32 %p1, %r1, 5;\n\t@%p1 ret;\n\tbar.warp.sync -1;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let l = Launch::new((1, 1, 2), (32, 1, 1), 0);
    let e = m.launch("k", &l, &[ParamValue::U64(0)], &mut mem).unwrap_err();
    assert_names(&e, &src, "bar.warp.sync", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("lane 5 has exited"), "{e}");
    let body = format!(
        "{REGS}\tmov.u32 %r1, %laneid;\n\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 elect.sync %r2|%p2, 0xffff;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "elect.sync", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("inconsistent elect.sync mask"), "{e}");
}

#[test]
fn store_to_read_only_allocation_is_reported() {
    let body =
        format!("{REGS}\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, %ctaid.x;\n\tst.global.u32 [%rd1], %r1;\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let ro = mem.alloc(16, false);
    let l = Launch::new((1, 2, 1), (2, 3, 1), 0);
    let e = m.launch("k", &l, &[ParamValue::U64(ro)], &mut mem).unwrap_err();
    assert_names(&e, &src, "st.global.u32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("read-only"), "{e}");
}

/// As on the H100: a CTA barrier waits only for threads that have not
/// exited, whether they exit before the others arrive or after.
#[test]
fn barrier_waits_only_for_threads_that_have_not_exited() {
    let store = "\tld.param.u64 %rd1, [out];\n\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;\n\tret;\n";
    // Thread 37 exits first.
    let body =
        format!("{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 37;\n\t@%p1 ret;\n\tbar.sync 0;\n{store}");
    let (m, _) = module(OUT, &body);
    let mut mem = Memory::new();
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    let got = download_u32(&mem, out, 64);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(*g, if t == 37 { 0 } else { t as u32 }, "thread {t}");
    }
    // Thread 37 exits after the others arrived (its path is at a higher
    // PC, so they reach the barrier first): the exit completes it. With
    // `barrier.sync` (not `.aligned`): `bar.sync` is `.aligned`, and its
    // warp is diverged, which synccheck reports.
    let late = |bar: &str| {
        format!(
            "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 37;\n\t@%p1 bra $L_late;\n\t{bar} 0;\n{store}$L_late:\n\tadd.u32 %r2, %r1, 1;\n\tret;\n"
        )
    };
    let (m, _) = module(OUT, &late("barrier.sync"));
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    assert_eq!(download_u32(&mem, out + 4 * 63, 1), vec![63]);
    let (m, src) = module(OUT, &late("bar.sync"));
    let e = m
        .launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "bar.sync 0;", (0, 0, 0), (32, 0, 0));
    assert!(
        e.message().contains("divergent warp") && e.message().contains("lane 5 (thread (37,0,0))"),
        "{e}"
    );
    // A whole warp exits, the other synchronises alone.
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 ret;\n\tbar.sync 0;\n\tbarrier.sync.aligned 1;\n{store}"
    );
    let (m, _) = module(OUT, &body);
    let out = mem.alloc(4 * 64, true);
    m.launch("k", &one_block(64), &[ParamValue::U64(out)], &mut mem)
        .unwrap();
    assert_eq!(download_u32(&mem, out + 4 * 40, 1), vec![40]);
}

/// A barrier with a thread count still needs that many arrivals.
#[test]
fn counted_barrier_with_an_exited_thread_is_reported() {
    let body =
        format!("{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 37;\n\t@%p1 ret;\n\tbar.sync 0, 64;\n\tret;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(64), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "bar.sync 0, 64", (0, 0, 0), (0, 0, 0));
    assert!(
        e.message().contains("barrier 0 can never complete") && e.message().contains("thread (37,0,0) exited"),
        "{e}"
    );
}

#[test]
fn barrier_waiting_on_another_barrier_is_reported() {
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra $L_a;\n\tbar.sync 1;\n\tret;\n$L_a:\n\tbar.sync 0;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let l = linear(3, 64, 0);
    let e = m.launch("k", &l, &[ParamValue::U64(0)], &mut mem).unwrap_err();
    assert_names(&e, &src, "bar.sync 0", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("waits at barrier 1"), "{e}");
}

#[test]
fn inconsistent_shuffle_mask_is_reported() {
    // Lanes 0..15 shuffle with a full mask; the others skipped it.
    let body = format!(
        "{REGS}\tmov.u32 %r1, %laneid;\n\tsetp.ge.u32 %p1, %r1, 16;\n\t@%p1 bra $L_end;\n\tshfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, -1;\n$L_end:\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(32), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "shfl.sync.bfly.b32", (0, 0, 0), (0, 0, 0));
    assert!(e.message().contains("inconsistent shuffle mask"), "{e}");
}

#[test]
fn running_past_the_end_is_reported() {
    let body = format!("{REGS}\tmov.u32 %r1, %tid.x;\n");
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(8), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_eq!(e.kernel(), Some("k"));
    assert_eq!(e.block(), Some((0, 0, 0)));
    assert_eq!(e.thread(), Some((0, 0, 0)));
    assert_eq!(e.line(), Some(src.lines().count() as u32));
    assert_eq!(e.instruction(), Some("}"));
    let shown = format!(
        "kernel `k`, block (0,0,0), thread (0,0,0), line {} `}}`",
        src.lines().count()
    );
    assert!(e.to_string().contains(&shown), "{e}");
    assert!(e.message().contains("past the end"), "{e}");
}

#[test]
fn uninitialised_register_read_is_reported() {
    let body = format!(
        "{REGS}\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n\t@!%p1 mov.u32 %r5, 7;\n\tadd.u32 %r2, %r5, 1;\n\tret;\n"
    );
    let (m, src) = module(OUT, &body);
    let mut mem = Memory::new();
    let e = m
        .launch("k", &one_block(8), &[ParamValue::U64(0)], &mut mem)
        .unwrap_err();
    assert_names(&e, &src, "add.u32 %r2", (0, 0, 0), (3, 0, 0));
    assert!(e.message().contains("read of uninitialised register %r5"), "{e}");
}

#[test]
fn launch_limits_and_parameters_are_checked() {
    let body = format!("{REGS}\tret;\n");
    let src = format!("{HEAD}.visible .entry k({OUT}, .param .f32 a)\n.maxntid 128, 1, 1\n{{\n{body}}}\n");
    let m = Module::parse(&src).unwrap();
    let mut mem = Memory::new();
    let p = [ParamValue::U64(0), ParamValue::F32(1.0)];
    let e = m.launch("k", &one_block(256), &p, &mut mem).unwrap_err();
    assert!(e.message().contains(".maxntid"), "{e}");
    assert_eq!(e.kernel(), Some("k"));
    let e = m.launch("k", &one_block(2048), &p, &mut mem).unwrap_err();
    assert!(e.message().contains("1024"), "{e}");
    let e = m.launch("k", &linear(1, 32, 228 * 1024), &p, &mut mem).unwrap_err();
    assert!(e.message().contains("227 KiB"), "{e}");
    let e = m.launch("k", &one_block(32), &p[..1], &mut mem).unwrap_err();
    assert!(e.message().contains("2 parameters"), "{e}");
    let e = m
        .launch(
            "k",
            &one_block(32),
            &[ParamValue::U32(0), ParamValue::F32(1.0)],
            &mut mem,
        )
        .unwrap_err();
    assert!(e.message().contains("parameter 0 `out` is 8 bytes"), "{e}");
    let e = m.launch("nope", &one_block(32), &p, &mut mem).unwrap_err();
    assert!(e.message().contains("no kernel entry `nope`"), "{e}");
    m.launch("k", &one_block(128), &p, &mut mem).unwrap();
}

#[test]
fn parse_errors_name_the_line() {
    let src = format!("{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n\tfrobnicate.u32 %r1;\n\tret;\n}}\n");
    let e = Module::parse(&src).unwrap_err();
    assert_eq!(e.line(), Some(7));
    assert!(e.to_string().contains("line 7 `frobnicate.u32 %r1;`"), "{e}");
    assert!(e.message().contains("unknown or unsupported instruction"), "{e}");
    let src = format!("{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n\tadd.u32 %r1, %r9, 1;\n\tret;\n}}\n");
    let e = Module::parse(&src).unwrap_err();
    assert_eq!(e.line(), Some(7));
    assert!(e.message().contains("unknown register or symbol `%r9`"), "{e}");
    let src = format!("{HEAD}.visible .entry k()\n{{\n\tbra $L_nowhere;\n}}\n");
    let e = Module::parse(&src).unwrap_err();
    assert!(e.message().contains("unknown label"), "{e}");
}

// ----- H100 probes -----

/// The kernel around each probe body of `data/h100_probes.txt`.
const PROBE_HEAD: &str = ".version 8.1
.target sm_90
.address_size 64
.shared .align 16 .b8 sm[64];
.extern .shared .align 1024 .b8 dyn[];
.visible .entry t(.param .u64 t_in,.param .u64 t_out)
{
.reg .pred %p<16>;.reg .b16 %h<16>;.reg .b32 %r<32>;.reg .b64 %rd<32>;.reg .f32 %f<16>;.reg .f64 %fd<16>;
ld.param.u64 %rd30,[t_in];ld.param.u64 %rd31,[t_out];mov.u32 %r30,%tid.x;
mul.wide.u32 %rd29,%r30,32;add.s64 %rd28,%rd30,%rd29;
ld.global.v4.u32 {%r1,%r2,%r3,%r4},[%rd28];ld.global.v4.u32 {%r5,%r6,%r7,%r8},[%rd28+16];
";
const PROBE_TAIL: &str =
    "mul.wide.u32 %rd29,%r30,8;add.s64 %rd27,%rd31,%rd29;st.global.v2.u32 [%rd27],{%r10,%r11};ret;}";

/// Special values the `mix` inputs draw from: integer extremes, f32
/// zeros, infinities, quiet/signalling NaNs with payloads, subnormals;
/// f16 pairs; f64 high words.
const MIX: [u32; 32] = [
    0,
    1,
    0xFFFF_FFFF,
    0x8000_0000,
    0x7FFF_FFFF,
    0x7FC0_0000,
    0xFFC0_0001,
    0x7F80_0001,
    0x7FA0_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x8000_0000,
    1,
    0x807F_FFFF,
    0x3F80_0000,
    0xBF80_0000,
    0x7E00_FE01,
    0x7C01_FC00,
    0x0001_8001,
    0x3C00_BC00,
    0x7FF8_0000,
    0xFFF0_0001,
    0x7F7F_FFFF,
    0x4780_0000,
    0xC3A0_0000,
    0x7D00_FD00,
    5,
    7,
    0x4188_0000,
    0x43E0_0000,
    0x43E8_0000,
    0x3A80_0000,
];

/// 32 threads of inputs: four special values and four pseudo-random words
/// each (the generator the probes were run with).
fn mix_inputs(k: usize) -> Vec<u32> {
    let mut x = 12345u32.wrapping_add(k as u32);
    let mut out = Vec::with_capacity(256);
    for t in 0..32 {
        for j in 0..8 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            out.push(if j < 4 { MIX[(t * 3 + j * 7 + k) % MIX.len()] } else { x });
        }
    }
    out
}

struct Probe {
    name: String,
    ptx: String,
    inputs: Vec<u32>,
    gpu: Vec<u32>,
    ulps: u32,
}

fn hex(s: &str) -> Vec<u32> {
    s.split_whitespace()
        .map(|w| u32::from_str_radix(w, 16).expect("hex"))
        .collect()
}

fn probes() -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    for line in include_str!("data/h100_probes.txt").lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "probe" => out.push(Probe {
                name: rest.to_string(),
                ptx: String::new(),
                inputs: Vec::new(),
                gpu: Vec::new(),
                ulps: 0,
            }),
            "body" => {
                let p = out.last_mut().expect("a probe");
                p.ptx = format!("{PROBE_HEAD}{}\n{PROBE_TAIL}\n", rest.replace(';', ";\n"));
            }
            "in" => {
                let p = out.last_mut().expect("a probe");
                p.inputs = match rest.split_once(' ') {
                    Some(("mix", k)) => mix_inputs(k.parse().expect("a seed")),
                    Some(("rows", words)) => hex(words).into_iter().cycle().take(256).collect(),
                    _ => panic!("bad input line {line}"),
                };
            }
            "gpu" => out.last_mut().expect("a probe").gpu = hex(rest),
            "ulps" => out.last_mut().expect("a probe").ulps = rest.parse().expect("ulps"),
            _ => assert!(key.starts_with('#') || key.is_empty(), "bad line {line}"),
        }
    }
    out
}

fn emulate_probe(p: &Probe) -> Vec<u32> {
    let module = Module::parse(&p.ptx).unwrap_or_else(|e| panic!("{}: {e}", p.name));
    let mut mem = Memory::new();
    let inp = upload_u32(&mut mem, &p.inputs, false);
    let out = mem.alloc(32 * 8, true);
    module
        .launch(
            "t",
            &linear(1, 32, 256),
            &[ParamValue::U64(inp), ParamValue::U64(out)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.name));
    download_u32(&mem, out, 64)
}

/// Differences between the emulator's and the GPU's outputs of a probe.
fn probe_diffs(p: &Probe, emu: &[u32], gpu: &[u32]) -> Vec<String> {
    let mut d = Vec::new();
    for (k, (e, g)) in emu.iter().zip(gpu).enumerate() {
        if (i64::from(*e) - i64::from(*g)).unsigned_abs() > u64::from(p.ulps) {
            let t = k / 2;
            d.push(format!(
                "{} thread {t} %r1{}: inputs {:08x?}: GPU {g:08x}, emulator {e:08x}",
                p.name,
                k % 2,
                &p.inputs[t * 8..t * 8 + 4]
            ));
        }
    }
    d
}

/// The NaN, division-by-zero, conversion, min/max, testp, shared-address
/// and elect behaviour an H100 showed, replayed bit for bit.
#[test]
fn h100_probes_replay_bit_for_bit() {
    let probes = probes();
    assert_eq!(probes.len(), 98);
    let mut diffs = Vec::new();
    for p in &probes {
        assert_eq!((p.inputs.len(), p.gpu.len()), (256, 64), "{}", p.name);
        diffs.extend(probe_diffs(p, &emulate_probe(p), &p.gpu));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// On a machine with a CUDA GPU (never in CI), runs every probe on the GPU
/// too and compares. Skips when there is no driver or device.
#[test]
fn probes_match_the_gpu_when_one_is_present() {
    use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg, sys};
    // SAFETY: only probes whether the driver library can be opened.
    if !unsafe { sys::is_culib_present() } || CudaContext::device_count().unwrap_or(0) == 0 {
        eprintln!("no CUDA device: skipped");
        return;
    }
    let ctx = CudaContext::new(0).expect("a context");
    let stream = ctx.default_stream();
    let mut diffs = Vec::new();
    for p in &probes() {
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(p.ptx.clone()))
            .unwrap_or_else(|e| panic!("{}: the driver rejected the PTX: {e}", p.name));
        let f = module.load_function("t").expect("entry t");
        let inp = stream.clone_htod(&p.inputs).expect("upload");
        let mut out = stream.alloc_zeros::<u32>(64).expect("alloc");
        let mut launch = stream.launch_builder(&f);
        launch.arg(&inp).arg(&mut out);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 256,
        };
        // SAFETY: the kernel reads 32 x 32 bytes of `inp` and writes 32 x 8
        // bytes of `out`, both that large.
        unsafe { launch.launch(cfg) }.expect("launch");
        let gpu = stream.clone_dtoh(&out).expect("download");
        diffs.extend(probe_diffs(p, &emulate_probe(p), &gpu));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
