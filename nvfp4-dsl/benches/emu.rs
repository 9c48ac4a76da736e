//! Emulator throughput on the snapshot kernels at realistic sizes, in
//! thread-instructions per second, and for the sm_100a and sm_90a GEMMs,
//! whose time goes into the tensor-core MMAs, in MMA multiply-adds per
//! second: in
//! the checked mode (the default, `Options::default()`) and the fast mode
//! (`Options::fast()`), each on one thread and on every core. Run with
//! `cargo bench -p nvfp4-dsl --bench emu`.

use nvfp4_dsl::emu::{Launch, Memory, Module, Options, ParamValue, TensorMap2d};
use nvfp4_testkit::emu::{le_bytes, linear, ptx, upload, upload_u32, xorshift};
use std::time::{Duration, Instant};

/// Small floats in [0.25, 4) with random signs, as bits.
fn floats(n: usize, seed: u32) -> Vec<u32> {
    xorshift(n, seed)
        .into_iter()
        .map(|w| {
            let m = 0.25 + 3.75 * (w >> 8) as f32 / (1u32 << 24) as f32;
            (if w & 1 == 0 { m } else { -m }).to_bits()
        })
        .collect()
}

struct Case {
    name: &'static str,
    module: Module,
    entry: &'static str,
    launch: Launch,
    params: Vec<ParamValue>,
    mem: Memory,
    /// Multiply-adds of the tensor-core MMAs a launch performs (0: none).
    macs: u64,
}

fn run(case: &mut Case, mode: &str, options: &Options) {
    let launch = |case: &mut Case| {
        case.module
            .launch_with(case.entry, &case.launch, &case.params, &mut case.mem, options)
            .expect("launch")
    };
    // One launch to warm up, then as many as fit in about a second.
    let stats = launch(case);
    let mut runs = 0u32;
    let start = Instant::now();
    let mut elapsed = Duration::ZERO;
    while runs < 3 || elapsed < Duration::from_secs(1) {
        launch(case);
        runs += 1;
        elapsed = start.elapsed();
    }
    let per = elapsed.as_secs_f64() / f64::from(runs);
    let rate = stats.thread_instructions as f64 / per;
    print!(
        "{:<32} {mode:<13} {:>12} thread-insts {:>9.2} ms/launch {:>8.1} M thread-insts/s",
        case.name,
        stats.thread_instructions,
        per * 1e3,
        rate / 1e6,
    );
    if case.macs > 0 {
        print!(" {:>8.1} M MMA multiply-adds/s", case.macs as f64 / per / 1e6);
    }
    println!();
}

/// The sm_100a NVFP4 GEMM (`bn` = 128 or 256) on random data: M x N x K,
/// one batch.
fn gemm_case(name: &'static str, snap: &str, entry: &'static str, bn: usize, (m, n, k): (usize, usize, usize)) -> Case {
    let module = Module::parse(&ptx(snap)).expect("ptx");
    let mut mem = Memory::new();
    let a = upload_u32(&mut mem, &xorshift(m * k / 8, 8), false);
    let b = upload_u32(&mut mem, &xorshift(n * k / 8, 9), false);
    // Scales: e4m3 with exponent field 5..=8 (0.25 to 3.75).
    let scales = |rows: usize, seed| -> Vec<u8> {
        le_bytes(&xorshift(rows * k / 64, seed))
            .into_iter()
            .map(|x| ((5 + (x & 3)) << 3) | ((x >> 2) & 7))
            .collect()
    };
    let sfa_bytes = scales(m, 10);
    let sfb_bytes = scales(n, 11);
    let sfa = upload(&mut mem, &sfa_bytes, false);
    let sfb = upload(&mut mem, &sfb_bytes, false);
    let c = upload(&mut mem, &vec![0; m * n * 2], true);
    let map = |base, rows: usize, box_rows: usize| TensorMap2d {
        base,
        row_bytes: (k / 2) as u64,
        rows: rows as u64,
        row_stride: (k / 2) as u64,
        box_bytes: 128,
        box_rows: box_rows as u32,
        swizzle: 128,
    };
    let params = vec![
        ParamValue::Bytes(map(a, m, 128).encode().to_vec()),
        ParamValue::Bytes(map(b, n, bn).encode().to_vec()),
        ParamValue::U64(sfa),
        ParamValue::U64(sfa_bytes.len() as u64),
        ParamValue::U64(sfb),
        ParamValue::U64(sfb_bytes.len() as u64),
        ParamValue::U64(c),
        ParamValue::U64((m * n) as u64),
        ParamValue::U32(m as u32),
        ParamValue::U32(n as u32),
        ParamValue::U32(k as u32),
        ParamValue::F32(1.0),
    ];
    Case {
        name,
        module,
        entry,
        launch: Launch::new(
            ((n / bn) as u32, (m / 128) as u32, 1),
            (128, 1, 1),
            (4 * (128 * 128 + bn * 128 + 2048 + bn / 128 * 2048)) as u32,
        ),
        params,
        mem,
        macs: (m * n * k) as u64,
    }
}

/// The sm_90a NVFP4 GEMM with one m64 block of B rows per warpgroup and
/// no split of K, on random data: M x N x K, one batch. A comes as the
/// decode kernel's f16 images, B
/// pre-arranged: each m64 block of a (128 rows, 128 K) chunk 4096 bytes
/// of FP4 codes, then its 512 e4m3 scales (0.25 to 3.75).
fn gemm_sm90_case(name: &'static str, (m, n, k): (usize, usize, usize)) -> Case {
    let module = Module::parse(&ptx(include_str!(
        "../../snapshots/gemm_nvfp4_sm90__blocks_1_split_1__sm_90a.snap"
    )))
    .expect("ptx");
    let mut mem = Memory::new();
    // The decode kernel's f16 values: an E2M1 value times an e4m3 scale
    // (0.25 to 3.75) times 2^-14, from 10 random bits.
    const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let value = |w: u32| {
        let scale = (8 + (w >> 4 & 7)) as f32 / 8.0 * 2f32.powi((w >> 7 & 3) as i32 - 2);
        let v = E2M1[(w & 7) as usize] * scale * 2f32.powi(-14);
        u32::from(half::f16::from_f32(if w >> 3 & 1 != 0 { -v } else { v }).to_bits())
    };
    let images: Vec<u32> = xorshift(m * k / 2, 12)
        .into_iter()
        .map(|w| value(w) | value(w >> 16) << 16)
        .collect();
    let mut weights = le_bytes(&xorshift(n * k * 9 / 16 / 4, 13));
    for block in weights.chunks_mut(4608) {
        for x in &mut block[4096..] {
            *x = ((5 + (*x & 3)) << 3) | ((*x >> 2) & 7);
        }
    }
    let images = upload_u32(&mut mem, &images, false);
    let weights_len = (weights.len() / 4) as u64;
    let weights = upload(&mut mem, &weights, false);
    let c = upload(&mut mem, &vec![0; m * n * 2], true);
    let partials = upload_u32(&mut mem, &[0], true);
    let counters = upload_u32(&mut mem, &[0], true);
    let params = vec![
        ParamValue::U64(images),
        ParamValue::U64((m * k / 2) as u64),
        ParamValue::U64(weights),
        ParamValue::U64(weights_len),
        ParamValue::U64(c),
        ParamValue::U64((m * n) as u64),
        ParamValue::U64(partials),
        ParamValue::U64(1),
        ParamValue::U64(counters),
        ParamValue::U64(1),
        ParamValue::U32(0),
        ParamValue::U32(m as u32),
        ParamValue::U32(n as u32),
        ParamValue::U32(k as u32),
        ParamValue::F32(1.0),
    ];
    // Four ring stages of A's 32 KiB image and B's 9 KiB chunk, and the
    // area where the accumulators are staged (32 KiB).
    let shared = 4 * (32768 + 9216) + 32768;
    Case {
        name,
        module,
        entry: "gemm_nvfp4_sm90__blocks_1_split_1",
        launch: Launch::new((1, (n / 128) as u32, (m / 128) as u32), (384, 1, 1), shared),
        params,
        mem,
        macs: (m * n * k) as u64,
    }
}

/// The SIMT snapshot kernels: saxpy, mixed_ops, block_sum and
/// tile_mirror.
fn simt_cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // saxpy over 2^20 elements.
    {
        let module = Module::parse(&ptx(include_str!("../../snapshots/saxpy__default__sm_90.snap"))).expect("ptx");
        let n = 1 << 20;
        let mut mem = Memory::new();
        let x = upload_u32(&mut mem, &floats(n, 1), false);
        let y = upload_u32(&mut mem, &floats(n, 2), true);
        let params = vec![
            ParamValue::U64(x),
            ParamValue::U64(n as u64),
            ParamValue::U64(y),
            ParamValue::U64(n as u64),
            ParamValue::F32(1.5),
        ];
        cases.push(Case {
            name: "saxpy (2^20)",
            module,
            entry: "saxpy",
            launch: linear((n / 256) as u32, 256, 0),
            params,
            mem,
            macs: 0,
        });
    }

    // mixed_ops over 2^14 threads.
    {
        let module = Module::parse(&ptx(include_str!("../../snapshots/mixed_ops__default__sm_90.snap"))).expect("ptx");
        let n = 1 << 14;
        let mut mem = Memory::new();
        let xs = upload_u32(&mut mem, &xorshift(n, 3), false);
        let fs = upload_u32(&mut mem, &floats(n, 4), false);
        let hs: Vec<u32> = floats(n / 2, 5)
            .into_iter()
            .map(|f| {
                let h = half::f16::from_f32(f32::from_bits(f)).to_bits() as u32;
                h | (h << 16)
            })
            .collect();
        let hs = upload_u32(&mut mem, &hs, false);
        let ou = upload_u32(&mut mem, &vec![0; n * 8], true);
        let of = upload_u32(&mut mem, &vec![0; n * 4], true);
        let oh = upload_u32(&mut mem, &vec![0; n * 3], true);
        let mut params = Vec::new();
        for (a, len) in [(xs, n), (fs, n), (hs, n), (ou, n * 8), (of, n * 4), (oh, n * 3)] {
            params.push(ParamValue::U64(a));
            params.push(ParamValue::U64(len as u64));
        }
        cases.push(Case {
            name: "mixed_ops (2^14)",
            module,
            entry: "mixed_ops",
            launch: linear((n / 256) as u32, 256, 0),
            params,
            mem,
            macs: 0,
        });
    }

    // block_sum of 2^22 floats over 132 blocks of 1024 threads.
    {
        let module = Module::parse(&ptx(include_str!("../../snapshots/block_sum__default__sm_90.snap"))).expect("ptx");
        let (n, blocks) = (1 << 22, 132u32);
        let mut mem = Memory::new();
        let x = upload_u32(&mut mem, &floats(n, 6), false);
        let p = upload_u32(&mut mem, &vec![0; blocks as usize], true);
        let params = vec![
            ParamValue::U64(x),
            ParamValue::U64(n as u64),
            ParamValue::U64(p),
            ParamValue::U64(u64::from(blocks)),
            ParamValue::U32(n as u32),
        ];
        cases.push(Case {
            name: "block_sum (2^22)",
            module,
            entry: "block_sum",
            launch: linear(blocks, 1024, 0),
            params,
            mem,
            macs: 0,
        });
    }

    // tile_mirror<4>: 16 tiles of 64 KiB through dynamic shared memory.
    {
        let module = Module::parse(&ptx(include_str!("../../snapshots/tile_mirror__vecs_4__sm_90.snap"))).expect("ptx");
        let (tiles, w) = (16u32, 16384u32);
        let n = (tiles * w) as usize;
        let mut mem = Memory::new();
        let s = upload_u32(&mut mem, &xorshift(n, 7), false);
        let d = upload_u32(&mut mem, &vec![0; n], true);
        let params = vec![
            ParamValue::U64(s),
            ParamValue::U64(n as u64),
            ParamValue::U64(d),
            ParamValue::U64(n as u64),
            ParamValue::U32(w),
        ];
        cases.push(Case {
            name: "tile_mirror<4> (16x64K)",
            module,
            entry: "tile_mirror__vecs_4",
            launch: linear(tiles, 256, w * 4),
            params,
            mem,
            macs: 0,
        });
    }
    cases
}

fn main() {
    let mut cases = simt_cases();
    // The sm_100a block-scaled NVFP4 GEMM: tensor copies, mbarrier
    // pipelines, tcgen05 MMAs.
    cases.push(gemm_case(
        "gemm_nvfp4 bn128 256x256x2304",
        include_str!("../../snapshots/gemm_nvfp4__bn_128_stages_4__sm_100a.snap"),
        "gemm_nvfp4__bn_128_stages_4",
        128,
        (256, 256, 2304),
    ));
    cases.push(gemm_case(
        "gemm_nvfp4 bn256 256x512x2304",
        include_str!("../../snapshots/gemm_nvfp4__bn_256_stages_4__sm_100a.snap"),
        "gemm_nvfp4__bn_256_stages_4",
        256,
        (256, 512, 2304),
    ));
    // The sm_90a NVFP4 GEMM: bulk copies, mbarrier pipelines, FP4 decoded
    // to f16 in registers, wgmma MMAs.
    cases.push(gemm_sm90_case("gemm_nvfp4_sm90 b1 256x256x2304", (256, 256, 2304)));

    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let all = format!("{cores} threads");
    let modes = [
        ("checked", "1 thread", Options::default().with_threads(1)),
        ("checked", all.as_str(), Options::default()),
        ("fast", "1 thread", Options::fast().with_threads(1)),
        ("fast", all.as_str(), Options::fast()),
    ];
    // `cargo bench -p nvfp4-dsl --bench emu -- "saxpy (2^20) fast"` runs
    // the lines that start so.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    println!("{cores} cores; load average: {}", uptime());
    for c in &mut cases {
        for (mode, threads, options) in &modes {
            let mode = format!("{mode} {threads}");
            if format!("{} {mode}", c.name).starts_with(&filter) {
                run(c, &mode, options);
            }
        }
    }
}

/// The load of the machine, for the record (noisy figures on a loaded
/// one).
fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_else(|_| "unknown".into())
}
