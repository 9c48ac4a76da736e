//! Benchmarks the NVFP4 kernels on a CUDA GPU.
//!
//! The GEMM needs a compute capability 10.0 GPU; on any other the bench
//! says "no sm_100 device" and lists the GEMM shapes it did not run. For each shape: the result is checked against the f64 CPU
//! reference first, then timed as back-to-back launches between CUDA events
//! (median over repeats), rotating through enough input copies that nothing
//! is served from the 50 MB L2. The ceiling, device-to-device copy bandwidth
//! (bytes read + written), is measured in the same run.
//!
//! `bench [--json] [--repeats N] [--all-variants]`

use cudarc::driver::sys::CUevent_flags;
use nvfp4_dsl::{Device, DeviceBuffer, f16};
use nvfp4_kernels::gemm::{self, BM, DeviceGemmOperand};
use nvfp4_kernels::gemv::{DeviceNvfp4, GemvConfig, gemv_with};
use nvfp4_kernels::nvfp4::{Inputs, check_close, gemm_inputs, gemm_reference, gemv_inputs, gemv_reference};
use nvfp4_kernels::rng::Rng;
use std::process::ExitCode;

/// The GEMV benchmark shapes (M, K, L).
const GEMV_SHAPES: [(usize, usize, usize); 3] = [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4)];
/// L2 size of the H100; input copies cover several times this.
const L2_BYTES: usize = 50 << 20;
/// Launches between two events.
const LAUNCHES: usize = 20;

struct Options {
    json: bool,
    repeats: usize,
    all_variants: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        json: false,
        repeats: 30,
        all_variants: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => o.json = true,
            "--all-variants" => o.all_variants = true,
            "--repeats" => {
                o.repeats = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or("--repeats takes a positive number")?
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use --json, --repeats N, --all-variants"
                ));
            }
        }
    }
    Ok(o)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds per call of `work`, timed with CUDA events around
/// `LAUNCHES` back-to-back calls.
fn time_ms(device: &Device, repeats: usize, mut work: impl FnMut(usize) -> Result<(), String>) -> Result<f64, String> {
    let cuda = device.as_cuda().ok_or("timing needs a CUDA device")?;
    let ctx = cuda.context();
    let stream = cuda.stream();
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = ctx.new_event(flags).map_err(|e| e.to_string())?;
    let end = ctx.new_event(flags).map_err(|e| e.to_string())?;
    for i in 0..5 {
        work(i)?;
    }
    let mut samples = Vec::with_capacity(repeats);
    let mut call = 0;
    for _ in 0..repeats {
        start.record(stream).map_err(|e| e.to_string())?;
        for _ in 0..LAUNCHES {
            work(call)?;
            call += 1;
        }
        end.record(stream).map_err(|e| e.to_string())?;
        end.synchronize().map_err(|e| e.to_string())?;
        let ms = start.elapsed_ms(&end).map_err(|e| e.to_string())?;
        samples.push(f64::from(ms) / LAUNCHES as f64);
    }
    Ok(median(samples))
}

/// Device-to-device copy bandwidth in bytes/s, counting bytes read and written.
fn copy_bandwidth(device: &Device, repeats: usize) -> Result<f64, String> {
    let cuda = device.as_cuda().ok_or("needs a CUDA device")?;
    let stream = cuda.stream();
    let bytes = 1usize << 30;
    let src = stream.alloc_zeros::<u8>(bytes).map_err(|e| e.to_string())?;
    let mut dst = stream.alloc_zeros::<u8>(bytes).map_err(|e| e.to_string())?;
    let ms = time_ms(device, repeats, |_| {
        stream.memcpy_dtod(&src, &mut dst).map_err(|e| e.to_string())
    })?;
    Ok(2.0 * bytes as f64 / (ms * 1e-3))
}

struct Row {
    kernel: &'static str,
    shape: String,
    variant: String,
    us: f64,
    gbps: f64,
    percent: f64,
}

fn gemv_rows(device: &Device, opts: &Options, ceiling: f64) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut rng = Rng::new(0x5eed);
    for (m, k, l) in GEMV_SHAPES {
        let (a, b) = gemv_inputs(&mut rng, m, k, l, Inputs::Wide).map_err(|e| e.to_string())?;
        let want = gemv_reference(&a, &b);
        let bytes = m * l * (k / 2 + k / 16) + l * (k / 2 + k / 16) + m * l * 2;
        let copies = (3 * L2_BYTES).div_ceil(bytes).max(2);
        let da: Vec<DeviceNvfp4> = (0..copies)
            .map(|_| DeviceNvfp4::upload(device, &a))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let db: Vec<DeviceNvfp4> = (0..copies)
            .map(|_| DeviceNvfp4::upload(device, &b))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let mut dc: Vec<DeviceBuffer<f16>> = (0..copies)
            .map(|_| device.upload(&vec![f16::NAN; m * l]))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let configs = if opts.all_variants {
            [(1, 2), (1, 4), (1, 8), (2, 2), (2, 4), (2, 8), (8, 8)]
                .map(|(ksplit, warps)| GemvConfig { rows: 4, ksplit, warps })
                .to_vec()
        } else {
            vec![GemvConfig::choose(k)]
        };
        for cfg in configs {
            for c in dc.iter_mut() {
                device.write(c, &vec![f16::NAN; m * l]).map_err(|e| e.to_string())?;
            }
            gemv_with(device, cfg, &da[0], &db[0], &mut dc[0]).map_err(|e| e.to_string())?;
            let got = device.download(&dc[0]).map_err(|e| e.to_string())?;
            check_close(&got, &want, 1e-3, 1e-3).map_err(|e| format!("GEMV {m}x{k}x{l} {cfg:?}: {e}"))?;
            let ms = time_ms(device, opts.repeats, |i| {
                let j = i % copies;
                gemv_with(device, cfg, &da[j], &db[j], &mut dc[j]).map_err(|e| e.to_string())
            })?;
            let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
            rows.push(Row {
                kernel: "gemv",
                shape: format!("M={m} K={k} L={l}"),
                variant: format!("rows={} ksplit={} warps={}", cfg.rows, cfg.ksplit, cfg.warps),
                us: ms * 1e3,
                gbps,
                percent: 100.0 * gbps * 1e9 / ceiling,
            });
        }
    }
    Ok(rows)
}

fn gemm_rows(device: &Device, opts: &Options, ceiling: f64) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut rng = Rng::new(0x6e33);
    for (m, n, k) in gemm::BENCH_SHAPES {
        let (a, b) = gemm_inputs(&mut rng, m, n, k, 1, Inputs::Wide).map_err(|e| e.to_string())?;
        let want = gemm_reference(&a, &b);
        let bytes = (m + n) * (k / 2 + k / 16) + m * n * 2;
        let copies = (3 * L2_BYTES).div_ceil(bytes).max(2);
        let tiles: Vec<usize> = if opts.all_variants { vec![128, 256] } else { vec![128] };
        for bn in tiles.into_iter().filter(|bn| n.is_multiple_of(*bn)) {
            let da: Vec<DeviceGemmOperand> = (0..copies)
                .map(|_| DeviceGemmOperand::upload(device, &a, BM))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            let db: Vec<DeviceGemmOperand> = (0..copies)
                .map(|_| DeviceGemmOperand::upload(device, &b, bn))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            let mut dc: Vec<DeviceBuffer<f16>> = (0..copies)
                .map(|_| device.upload(&vec![f16::NAN; m * n]))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            gemm::gemm(device, &da[0], &db[0], &mut dc[0]).map_err(|e| e.to_string())?;
            let got = device.download(&dc[0]).map_err(|e| e.to_string())?;
            check_close(&got, &want, 1e-3, 1e-3).map_err(|e| format!("GEMM {m}x{n}x{k} BN={bn}: {e}"))?;
            let ms = time_ms(device, opts.repeats, |i| {
                let j = i % copies;
                gemm::gemm(device, &da[j], &db[j], &mut dc[j]).map_err(|e| e.to_string())
            })?;
            let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
            rows.push(Row {
                kernel: "gemm",
                shape: format!("M={m} N={n} K={k}"),
                variant: format!("BN={bn} stages={}", gemm::STAGES),
                us: ms * 1e3,
                gbps,
                percent: 100.0 * gbps * 1e9 / ceiling,
            });
        }
    }
    Ok(rows)
}

/// The geometric mean over `kernel`'s shapes of each shape's fastest variant.
fn geomean_of_best(rows: &[Row], kernel: &str) -> Option<f64> {
    let mut best: Vec<(&str, f64)> = Vec::new();
    for r in rows.iter().filter(|r| r.kernel == kernel) {
        match best.iter_mut().find(|(s, _)| *s == r.shape) {
            Some((_, us)) => *us = us.min(r.us),
            None => best.push((&r.shape, r.us)),
        }
    }
    (!best.is_empty()).then(|| (best.iter().map(|(_, us)| us.ln()).sum::<f64>() / best.len() as f64).exp())
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("the benchmark needs a CUDA GPU: {e}");
            return ExitCode::FAILURE;
        }
    };
    let gemm_runs = device.compute_capability() == (10, 0);
    let run = || -> Result<(f64, Vec<Row>), String> {
        let ceiling = copy_bandwidth(&device, opts.repeats)?;
        let mut rows = gemv_rows(&device, &opts, ceiling)?;
        if gemm_runs {
            rows.extend(gemm_rows(&device, &opts, ceiling)?);
        }
        Ok((ceiling, rows))
    };
    let gemm_note = if gemm_runs {
        String::new()
    } else {
        let shapes: Vec<String> = gemm::BENCH_SHAPES
            .iter()
            .map(|(m, n, k)| format!("M={m} N={n} K={k}"))
            .collect();
        let (major, minor) = device.compute_capability();
        format!(
            "GEMM: no sm_100 device (this one is {major}.{minor}); not run: {}",
            shapes.join(", ")
        )
    };
    let (ceiling, rows) = match run() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let geomeans: Vec<(&str, f64)> = ["gemv", "gemm"]
        .into_iter()
        .filter_map(|kernel| geomean_of_best(&rows, kernel).map(|g| (kernel, g)))
        .collect();
    if opts.json {
        let items: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"kernel\":\"{}\",\"shape\":\"{}\",\"variant\":\"{}\",\"us\":{:.3},\"gb_per_s\":{:.1},\"percent_of_copy\":{:.1}}}",
                    r.kernel, r.shape, r.variant, r.us, r.gbps, r.percent
                )
            })
            .collect();
        let means: Vec<String> = geomeans.iter().map(|(k, g)| format!("\"{k}\":{g:.3}")).collect();
        println!(
            "{{\"device\":\"{}\",\"copy_gb_per_s\":{:.1},\"results\":[{}],\"geomean_us\":{{{}}},\"note\":\"{}\"}}",
            device.describe(),
            ceiling / 1e9,
            items.join(","),
            means.join(","),
            gemm_note
        );
    } else {
        println!("device: {}", device.describe());
        println!("device-to-device copy: {:.1} GB/s (read + write)", ceiling / 1e9);
        println!(
            "{:<6} {:<22} {:<26} {:>10} {:>10} {:>8}",
            "kernel", "shape", "variant", "median us", "GB/s", "% copy"
        );
        for r in &rows {
            println!(
                "{:<6} {:<22} {:<26} {:>10.2} {:>10.1} {:>7.1}%",
                r.kernel, r.shape, r.variant, r.us, r.gbps, r.percent
            );
        }
        for (kernel, g) in &geomeans {
            println!("{kernel} geometric mean: {g:.2} us");
        }
        if !gemm_note.is_empty() {
            println!("{gemm_note}");
        }
    }
    ExitCode::SUCCESS
}
