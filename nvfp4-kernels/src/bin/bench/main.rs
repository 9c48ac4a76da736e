//! Benchmarks the NVFP4 kernels on a CUDA GPU.
//!
//! For each shape the result is checked against the f64 CPU reference
//! first, then timed as back-to-back launches between CUDA events (median
//! over repeats), rotating through enough input copies that nothing is
//! served from the 50 MB L2. The ceiling, device-to-device copy bandwidth
//! (bytes read + written), is measured in the same run.
//!
//! The GEMM runs on compute capability 9.0 (the sm_90a kernel) and 10.0
//! (sm_100a); elsewhere the bench lists the GEMM shapes it did not run. Its
//! rows give TFLOP/s, the share of the f16 dense tensor peak (989 TFLOP/s,
//! the H100 SXM's: Hopper multiplies the decoded operands in f16) and of
//! the byte floor (the bytes of A, B, their scales and C once, at the copy
//! bandwidth). The anchor in the same run is cuBLAS's f16 GEMM (f32
//! accumulation) on the decoded operands, loaded at run time ("cuBLAS not
//! found" when the library is absent). An sm_90a row with K split says how
//! the partial sums meet: `cl` in clusters (distributed shared memory),
//! `gm` through global memory and the reduction kernel.
//!
//! The launch rows measure the cost of launching rather than the kernels:
//! host microseconds per call of a small GEMV (512 x 2048, so the GPU keeps
//! up with the host) through `gemv` on this crate's buffers, through `gemv`
//! on the caller's cudarc buffers (the interop path), and as a bare cudarc
//! `launch_builder` launch of the same PTX (`cuLaunchKernel`, no PDL
//! attribute); and GPU microseconds per GEMV for 20 direct launches against
//! one replay of a CUDA graph of the same 20 launches.
//!
//! `bench [--json] [--repeats N] [--all-variants] [--only gemv|gemm|launch] [--shape I]
//! [--gemm-shape M,N,K]`
//!
//! `--shape I` runs only the I-th (1-based) benchmark shape of each kernel,
//! so a profiler (`ncu`) sees the launches of one shape. `--gemm-shape M,N,K`
//! times the GEMM rows of that shape instead of the benchmark shapes (M a
//! multiple of 128, N and K of 256).

use nvfp4_dsl::{Device, DeviceBuffer, f16};
use nvfp4_kernels::gemm::{self, DeviceGemmOperand, GemmKernel};
use nvfp4_kernels::gemv::{DeviceNvfp4, GemvConfig, gemv_with};
use nvfp4_kernels::nvfp4::{
    Inputs, check_close, gemm_inputs, gemm_reference, gemv_inputs, gemv_reference, worst_error_ratio,
};
use nvfp4_kernels::rng::Rng;
use std::process::ExitCode;

/// The GEMV benchmark shapes (M, K, L).
const GEMV_SHAPES: [(usize, usize, usize); 3] = [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4)];
/// L2 size of the H100; input copies cover several times this.
const L2_BYTES: usize = 50 << 20;
/// Launches between two events.
const LAUNCHES: usize = 20;
/// Dense f16 tensor-core peak of the H100 SXM, FLOP/s.
const F16_PEAK: f64 = 989e12;

struct Options {
    json: bool,
    repeats: usize,
    all_variants: bool,
    /// `--only gemv` / `--only gemm`: one kernel's rows.
    only: Option<String>,
    /// `--shape I`: only the I-th benchmark shape (1-based).
    shape: Option<usize>,
    /// `--gemm-shape M,N,K`: the GEMM rows of this shape instead of the
    /// benchmark shapes.
    gemm_shape: Option<(usize, usize, usize)>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        json: false,
        repeats: 30,
        all_variants: false,
        only: None,
        shape: None,
        gemm_shape: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => o.json = true,
            "--all-variants" => o.all_variants = true,
            "--only" => {
                o.only = Some(
                    args.next()
                        .filter(|k| ["gemv", "gemm", "launch"].contains(&k.as_str()))
                        .ok_or("--only takes gemv, gemm or launch")?,
                )
            }
            "--shape" => {
                o.shape = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .filter(|i| (1..=3).contains(i))
                        .ok_or("--shape takes 1, 2 or 3")?,
                )
            }
            "--gemm-shape" => {
                let dims: Vec<usize> = args
                    .next()
                    .map(|v| v.split(',').filter_map(|d| d.parse().ok()).collect())
                    .unwrap_or_default();
                o.gemm_shape = match dims[..] {
                    [m, n, k] if m % 128 == 0 && n % 256 == 0 && k % 256 == 0 && m * n * k > 0 => Some((m, n, k)),
                    _ => return Err("--gemm-shape takes M,N,K: M a multiple of 128, N and K of 256".into()),
                };
            }
            "--repeats" => {
                o.repeats = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or("--repeats takes a positive number")?
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use --json, --repeats N, --all-variants, --only gemv|gemm|launch, --shape I, --gemm-shape M,N,K"
                ));
            }
        }
    }
    Ok(o)
}

mod timing;
use timing::{capture, median, time_graph_ms, time_ms};

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
    /// GEMM only: median microseconds per call replayed from a CUDA graph of
    /// `LAUNCHES` calls.
    graph_us: Option<f64>,
    gbps: f64,
    percent: f64,
    /// GEMM only: TFLOP/s and the time the bytes take at the copy bandwidth.
    tflops: Option<f64>,
    floor_us: Option<f64>,
    /// GEMM only: the worst |error| / (1e-3 + 1e-3 |want|) of the checked run
    /// (at most 1 within the tolerance).
    error_ratio: Option<f64>,
}

fn gemv_rows(device: &Device, opts: &Options, ceiling: f64) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut rng = Rng::new(0x5eed);
    for (i, (m, k, l)) in GEMV_SHAPES.into_iter().enumerate() {
        if opts.shape.is_some_and(|only| only != i + 1) {
            continue;
        }
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
                graph_us: None,
                gbps,
                percent: 100.0 * gbps * 1e9 / ceiling,
                tflops: None,
                floor_us: None,
                error_ratio: None,
            });
        }
    }
    Ok(rows)
}

fn gemm_rows(device: &Device, opts: &Options, ceiling: f64) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut rng = Rng::new(0x6e33);
    let blas = cublas::Blas::new(device)?;
    let shapes = match opts.gemm_shape {
        Some(shape) => vec![shape],
        None => gemm::BENCH_SHAPES
            .into_iter()
            .enumerate()
            .filter(|(i, _)| opts.shape.is_none_or(|only| only == i + 1))
            .map(|(_, shape)| shape)
            .collect(),
    };
    for (m, n, k) in shapes {
        let (a, b) = gemm_inputs(&mut rng, m, n, k, 1, Inputs::Wide).map_err(|e| e.to_string())?;
        let want = gemm_reference(&a, &b);
        let bytes = (m + n) * (k / 2 + k / 16) + m * n * 2;
        let flops = 2.0 * (m * n * k) as f64;
        let row = |kernel: &'static str, variant: String, (us, graph_us): (f64, f64), error_ratio: f64| {
            let gbps = bytes as f64 / (us * 1e-6) / 1e9;
            Row {
                kernel,
                shape: format!("M={m} N={n} K={k}"),
                variant,
                us,
                graph_us: Some(graph_us),
                gbps,
                percent: 100.0 * gbps * 1e9 / ceiling,
                tflops: Some(flops / (us * 1e-6) / 1e12),
                floor_us: Some(bytes as f64 / ceiling * 1e6),
                error_ratio: Some(error_ratio),
            }
        };
        let copies = (3 * L2_BYTES).div_ceil(bytes).max(2);
        let da: Vec<DeviceGemmOperand> = (0..copies)
            .map(|_| DeviceGemmOperand::upload(device, &a))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        // The weights as a loaded layer holds them (pre-arranged on sm_90a),
        // and once plain, to time the pre-arrangement itself.
        let db: Vec<DeviceGemmOperand> = (0..copies)
            .map(|_| DeviceGemmOperand::upload_weights(device, &b))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        if matches!(device.compute_capability(), (9, 0)) {
            let plain = DeviceGemmOperand::upload(device, &b).map_err(|e| e.to_string())?;
            let mut words = device
                .upload(&vec![0u32; gemm::prearranged_words(n, k, 1)])
                .map_err(|e| e.to_string())?;
            let ms = time_ms(device, opts.repeats, |_| {
                gemm::prearrange_weights(device, &plain, &mut words).map_err(|e| e.to_string())
            })?;
            println!(
                "M={m} N={n} K={k}: pre-arranging the weights (once per load) takes {:.2} us",
                ms * 1e3
            );
        }
        let mut dc: Vec<DeviceBuffer<f16>> = (0..copies)
            .map(|_| device.upload(&vec![f16::NAN; m * n]))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let chosen = GemmKernel::for_device(device, m, n, k, 1).ok_or("no GEMM kernel for this device")?;
        let kernels = match chosen {
            _ if !opts.all_variants => vec![chosen],
            GemmKernel::Sm100 { .. } => [128, 256].map(|bn| GemmKernel::Sm100 { bn }).to_vec(),
            GemmKernel::Sm90 { .. } | GemmKernel::Sm90Stream { .. } => [1, 2]
                .into_iter()
                .flat_map(|blocks| [1, 2, 4, 8].map(|split| GemmKernel::Sm90 { blocks, split }))
                .filter(|k9| matches!(k9, GemmKernel::Sm90 { split, .. } if *split as usize <= k / 128))
                .chain([GemmKernel::stream_k(device, m, n, k, 1)])
                .collect(),
        };
        for kernel in kernels {
            for c in dc.iter_mut() {
                device.write(c, &vec![f16::NAN; m * n]).map_err(|e| e.to_string())?;
            }
            gemm::gemm_with(device, &da[0], &db[0], &mut dc[0], kernel).map_err(|e| e.to_string())?;
            let got = device.download(&dc[0]).map_err(|e| e.to_string())?;
            let ratio = checked_ratio(&got, &want, &format!("GEMM {m}x{n}x{k} {kernel:?}"))?;
            let mut call = |i: usize| {
                let j = i % copies;
                gemm::gemm_with(device, &da[j], &db[j], &mut dc[j], kernel).map_err(|e| e.to_string())
            };
            let ms = time_ms(device, opts.repeats, &mut call)?;
            let graph_ms = time_graph_ms(device, opts.repeats, &mut call)?;
            let variant = match kernel {
                GemmKernel::Sm100 { bn } => format!("sm_100a BN={bn}"),
                GemmKernel::Sm90 { blocks, split } => {
                    let grid = split * (n / (128 * blocks as usize)) as u32;
                    let how = match gemm::sm90_reduction(device.multiprocessors() as usize, grid, split) {
                        gemm::Sm90Reduction::None => "",
                        gemm::Sm90Reduction::Cluster => " cl",
                        gemm::Sm90Reduction::Pairs => " cl2x2",
                        gemm::Sm90Reduction::Kernel => " gm",
                    };
                    format!("sm_90a rows={} split={split}{how}", 128 * blocks)
                }
                GemmKernel::Sm90Stream { grid } => format!("sm_90a stream-K grid={grid}"),
            };
            rows.push(row("gemm", variant, (ms * 1e3, graph_ms * 1e3), ratio));
        }
        if m == 128 && matches!(device.compute_capability(), (9, 0)) {
            for (variant, times, ratio) in linear::linear_timings(device, opts.repeats, &mut rng, &b, copies)? {
                rows.push(row("linear", variant, times, ratio));
            }
        }
        if let Some(blas) = &blas {
            let (us, graph_us, ratio) = blas.time_f16_gemm(device, opts.repeats, &a, &b, &want)?;
            rows.push(row("cublas", "f16 GemmEx, decoded".into(), (us, graph_us), ratio));
        }
    }
    if blas.is_none() {
        println!("cuBLAS not found: the GEMM rows have no anchor");
    }
    Ok(rows)
}

/// The worst error ratio of a GEMM's output (see `Row::error_ratio`): a
/// ratio over 1 is reported in the table, one over 64 (or a NaN) means the
/// kernel is broken and stops the bench before it is timed.
fn checked_ratio(got: &[f16], want: &[f64], what: &str) -> Result<f64, String> {
    let ratio = worst_error_ratio(got, want, 1e-3, 1e-3);
    if ratio > 64.0 {
        let detail = check_close(got, want, 1e-3, 1e-3).err().unwrap_or_default();
        return Err(format!("{what}: {detail}"));
    }
    Ok(ratio)
}

/// cuBLAS's f16 GEMM (f32 accumulation) on the decoded operands: the
/// anchor of the GEMM rows.
mod cublas;
mod linear;

/// One launch-cost measurement: host or GPU microseconds per GEMV.
struct LaunchRow {
    what: &'static str,
    host_us: Option<f64>,
    gpu_us: Option<f64>,
}

/// Launches per host-timed sample.
const HOST_LAUNCHES: usize = 200;

/// Median host microseconds per call of `launch`, `HOST_LAUNCHES` calls
/// per sample, the stream drained between samples.
fn host_us(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    repeats: usize,
    mut launch: impl FnMut() -> Result<(), String>,
) -> Result<f64, String> {
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(5) {
        stream.synchronize().map_err(|e| e.to_string())?;
        let start = std::time::Instant::now();
        for _ in 0..HOST_LAUNCHES {
            launch()?;
        }
        samples.push(start.elapsed().as_secs_f64() * 1e6 / HOST_LAUNCHES as f64);
    }
    stream.synchronize().map_err(|e| e.to_string())?;
    Ok(median(samples))
}

/// See the module docs: the cost of a GEMV launch by each path, and of 20
/// launches replayed from a graph.
fn launch_rows(device: &Device, opts: &Options) -> Result<Vec<LaunchRow>, String> {
    use cudarc::driver::sys::CUevent_flags;
    use cudarc::driver::{LaunchConfig as CudaLaunch, PushKernelArg};
    use nvfp4_kernels::gemv::{Nvfp4View, gemv, gemv_nvfp4};
    let (m, k) = (512, 2048);
    // A stream of its own: the device's default (legacy) stream cannot be
    // captured.
    let device = device.new_stream().map_err(|e| e.to_string())?;
    let cuda = device.as_cuda().ok_or("needs a CUDA device")?;
    let (ctx, stream) = (cuda.context().clone(), cuda.stream().clone());
    let (a, b) = gemv_inputs(&mut Rng::new(0x1a7c), m, k, 1, Inputs::Wide).map_err(|e| e.to_string())?;
    let want = gemv_reference(&a, &b);
    let err = |e: nvfp4_kernels::Error| e.to_string();
    let (da, db) = (
        DeviceNvfp4::upload(&device, &a).map_err(err)?,
        DeviceNvfp4::upload(&device, &b).map_err(err)?,
    );
    let mut dc = device.upload(&vec![f16::NAN; m]).map_err(|e| e.to_string())?;
    let bytes = |t: &nvfp4_kernels::nvfp4::Nvfp4Tensor| -> Result<_, String> {
        let data: Vec<u8> = t.data.iter().map(|v| v.0).collect();
        let scales: Vec<u8> = t.scales.iter().map(|v| v.0).collect();
        Ok((
            stream.clone_htod(&data).map_err(|e| e.to_string())?,
            stream.clone_htod(&scales).map_err(|e| e.to_string())?,
        ))
    };
    let ((ad, asc), (bd, bsc)) = (bytes(&a)?, bytes(&b)?);
    let mut c = stream.alloc_zeros::<u16>(m).map_err(|e| e.to_string())?;
    let weights = Nvfp4View::new(m, k, 1, &ad, &asc).map_err(err)?.assume_constant();
    let token = Nvfp4View::new(b.rows, k, 1, &bd, &bsc).map_err(err)?;

    // The same kernel and arguments through cudarc alone.
    let variant = gemv_nvfp4::Kernel::<4, 1>::VARIANT;
    let (major, minor) = device.compute_capability();
    let (_, ptx) = variant.select(major, minor).ok_or("no PTX for this device")?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
        .map_err(|e| e.to_string())?;
    let function = module.load_function(variant.entry).map_err(|e| e.to_string())?;
    let units = (k / 32) as u64;
    let (a_len, b_len, c_len) = (m as u64 * units, b.rows as u64 * units, m as u64);
    let (mm, br, un, ready, alpha) = (m as u32, b.rows as u32, units as u32, true, 1.0f32);
    let config = CudaLaunch {
        grid_dim: ((m / 16) as u32, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };

    gemv(&device, &da, &db, &mut dc).map_err(err)?;
    check_close(&device.download(&dc).map_err(|e| e.to_string())?, &want, 1e-3, 1e-3)?;
    let mut rows = vec![LaunchRow {
        what: "gemv() on DeviceBuffers",
        host_us: Some(host_us(&stream, opts.repeats, || {
            gemv(&device, &da, &db, &mut dc).map_err(err)
        })?),
        gpu_us: None,
    }];
    let bare = |c: &mut cudarc::driver::CudaSlice<u16>| -> Result<(), String> {
        let mut launch = stream.launch_builder(&function);
        launch
            .arg(&ad)
            .arg(&a_len)
            .arg(&asc)
            .arg(&a_len)
            .arg(&bd)
            .arg(&b_len)
            .arg(&bsc)
            .arg(&b_len);
        launch
            .arg(c)
            .arg(&c_len)
            .arg(&mm)
            .arg(&br)
            .arg(&un)
            .arg(&ready)
            .arg(&alpha);
        // SAFETY: the arguments are the kernel's parameters in order, with
        // the lengths and the launch shape `gemv` checks and uses.
        unsafe { launch.launch(config) }.map(drop).map_err(|e| e.to_string())
    };
    rows.push(LaunchRow {
        what: "bare cudarc launch, same PTX",
        host_us: Some(host_us(&stream, opts.repeats, || bare(&mut c))?),
        gpu_us: None,
    });
    check_f16_output(&stream, &c, &want, "bare cudarc launch")?;
    // SAFETY: u16 and f16 have the same size and every bit pattern is valid.
    let mut view = unsafe { c.transmute_mut::<f16>(m) }.ok_or("an f16 view")?;
    rows.insert(
        1,
        LaunchRow {
            what: "gemv() on cudarc buffers",
            host_us: Some(host_us(&stream, opts.repeats, || {
                gemv(&device, weights, token, &mut view).map_err(err)
            })?),
            gpu_us: None,
        },
    );

    // GPU time per GEMV: 20 direct launches between two events, against
    // one replay of a graph of the same 20.
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (
        ctx.new_event(flags).map_err(|e| e.to_string())?,
        ctx.new_event(flags).map_err(|e| e.to_string())?,
    );
    let gpu_us = |work: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
        let mut samples = Vec::with_capacity(opts.repeats);
        for _ in 0..opts.repeats {
            start.record(&stream).map_err(|e| e.to_string())?;
            work()?;
            end.record(&stream).map_err(|e| e.to_string())?;
            end.synchronize().map_err(|e| e.to_string())?;
            samples.push(f64::from(start.elapsed_ms(&end).map_err(|e| e.to_string())?) * 1e3 / LAUNCHES as f64);
        }
        Ok(median(samples))
    };
    let direct = gpu_us(&mut || (0..LAUNCHES).try_for_each(|_| gemv(&device, weights, token, &mut view).map_err(err)))?;
    rows.push(LaunchRow {
        what: "20 direct launches",
        host_us: None,
        gpu_us: Some(direct),
    });
    let graph = capture(&device, || {
        (0..LAUNCHES).try_for_each(|_| gemv(&device, weights, token, &mut view).map_err(err))
    })?;
    let replay = gpu_us(&mut || graph.launch().map_err(|e| e.to_string()))?;
    let replay_host = host_us(&stream, opts.repeats, || graph.launch().map_err(|e| e.to_string()))?;
    rows.push(LaunchRow {
        what: "a graph of the 20, replayed",
        host_us: Some(replay_host / LAUNCHES as f64),
        gpu_us: Some(replay),
    });
    check_f16_output(&stream, &c, &want, "graph replay")?;
    Ok(rows)
}

/// Checks the f16 bits in `c` against `want` within rtol = atol = 1e-3.
fn check_f16_output(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    c: &cudarc::driver::CudaSlice<u16>,
    want: &[f64],
    what: &str,
) -> Result<(), String> {
    let got: Vec<f16> = stream
        .clone_dtoh(c)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(f16::from_bits)
        .collect();
    check_close(&got, want, 1e-3, 1e-3).map_err(|e| format!("{what}: {e}"))
}

/// The geometric mean over `kernel`'s shapes of each shape's fastest
/// variant, by the time `us` picks.
fn geomean_of_best(rows: &[Row], kernel: &str, us: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    let mut best: Vec<(&str, f64)> = Vec::new();
    for (r, t) in rows
        .iter()
        .filter(|r| r.kernel == kernel)
        .filter_map(|r| us(r).map(|t| (r, t)))
    {
        match best.iter_mut().find(|(s, _)| *s == r.shape) {
            Some((_, b)) => *b = b.min(t),
            None => best.push((&r.shape, t)),
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
    // A stream of its own: the legacy default stream cannot be captured
    // into the graphs the GEMM rows replay.
    let device = match Device::cuda(0).and_then(|d| d.new_stream()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("the benchmark needs a CUDA GPU: {e}");
            return ExitCode::FAILURE;
        }
    };
    let gemm_runs = matches!(device.compute_capability(), (9, 0) | (10, 0));
    let runs = |kernel: &str| opts.only.as_deref().is_none_or(|only| only == kernel);
    let run = || -> Result<(f64, Vec<Row>, Vec<LaunchRow>), String> {
        let ceiling = copy_bandwidth(&device, opts.repeats)?;
        let mut rows = Vec::new();
        if runs("gemv") {
            rows.extend(gemv_rows(&device, &opts, ceiling)?);
        }
        if gemm_runs && runs("gemm") {
            rows.extend(gemm_rows(&device, &opts, ceiling)?);
        }
        let launches = if runs("launch") {
            launch_rows(&device, &opts)?
        } else {
            Vec::new()
        };
        Ok((ceiling, rows, launches))
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
            "GEMM: needs compute capability 9.0 or 10.0 (this device is {major}.{minor}); not run: {}",
            shapes.join(", ")
        )
    };
    let (ceiling, rows, launches) = match run() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let geomeans: Vec<(&str, f64)> = ["gemv", "gemm", "cublas"]
        .into_iter()
        .filter_map(|kernel| geomean_of_best(&rows, kernel, |r| Some(r.us)).map(|g| (kernel, g)))
        .chain(
            [("gemm graph", "gemm"), ("cublas graph", "cublas")]
                .into_iter()
                .filter_map(|(name, kernel)| geomean_of_best(&rows, kernel, |r| r.graph_us).map(|g| (name, g))),
        )
        .collect();
    let report = Report {
        device: &device,
        ceiling,
        rows: &rows,
        geomeans: &geomeans,
        launches: &launches,
        gemm_note: &gemm_note,
    };
    if opts.json {
        report.print_json();
    } else {
        report.print_table();
    }
    ExitCode::SUCCESS
}

/// What a run measured, for printing.
struct Report<'a> {
    device: &'a Device,
    ceiling: f64,
    rows: &'a [Row],
    geomeans: &'a [(&'a str, f64)],
    launches: &'a [LaunchRow],
    gemm_note: &'a str,
}

impl Report<'_> {
    /// One JSON object on standard output (`--json`).
    fn print_json(&self) {
        let items: Vec<String> = self.rows
        .iter()
        .map(|r| {
            let gemm = match (r.tflops, r.floor_us, r.error_ratio) {
                (Some(t), Some(f), Some(e)) => format!(
                    ",\"tflop_per_s\":{t:.1},\"percent_of_f16_peak\":{:.1},\"byte_floor_us\":{f:.3},\"percent_of_byte_floor\":{:.1},\"worst_error_over_tolerance\":{e:.3}",
                    100.0 * t * 1e12 / F16_PEAK,
                    100.0 * f / r.us
                ),
                _ => String::new(),
            };
            let graph = r.graph_us.map_or("null".to_string(), |g| format!("{g:.3}"));
            format!(
                "{{\"kernel\":\"{}\",\"shape\":\"{}\",\"variant\":\"{}\",\"us\":{:.3},\"graph_us\":{graph},\"gb_per_s\":{:.1},\"percent_of_copy\":{:.1}{gemm}}}",
                r.kernel, r.shape, r.variant, r.us, r.gbps, r.percent
            )
        })
        .collect();
        let means: Vec<String> = self.geomeans.iter().map(|(k, g)| format!("\"{k}\":{g:.3}")).collect();
        let number = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v:.3}"));
        let launch_items: Vec<String> = self
            .launches
            .iter()
            .map(|l| {
                format!(
                    "{{\"what\":\"{}\",\"host_us_per_gemv\":{},\"gpu_us_per_gemv\":{}}}",
                    l.what,
                    number(l.host_us),
                    number(l.gpu_us)
                )
            })
            .collect();
        println!(
            "{{\"device\":\"{}\",\"copy_gb_per_s\":{:.1},\"results\":[{}],\"geomean_us\":{{{}}},\"launch\":[{}],\"note\":\"{}\"}}",
            self.device.describe(),
            self.ceiling / 1e9,
            items.join(","),
            means.join(","),
            launch_items.join(","),
            self.gemm_note
        );
    }

    /// A table on standard output.
    fn print_table(&self) {
        println!("device: {}", self.device.describe());
        println!("device-to-device copy: {:.1} GB/s (read + write)", self.ceiling / 1e9);
        println!(
            "{:<6} {:<24} {:<22} {:>10} {:>9} {:>8} {:>7} {:>8} {:>8} {:>9} {:>7} {:>7}",
            "kernel",
            "shape",
            "variant",
            "median us",
            "graph us",
            "GB/s",
            "% copy",
            "TFLOP/s",
            "% f16pk",
            "floor us",
            "% floor",
            "err/tol"
        );
        for r in self.rows {
            let gemm = match (r.tflops, r.floor_us, r.error_ratio) {
                (Some(t), Some(f), Some(e)) => format!(
                    " {t:>8.1} {:>7.1}% {f:>9.2} {:>6.1}% {e:>7.2}",
                    100.0 * t * 1e12 / F16_PEAK,
                    100.0 * f / r.us
                ),
                _ => String::new(),
            };
            let graph = r.graph_us.map_or("-".to_string(), |g| format!("{g:.2}"));
            println!(
                "{:<6} {:<24} {:<22} {:>10.2} {graph:>9} {:>8.1} {:>6.1}%{gemm}",
                r.kernel, r.shape, r.variant, r.us, r.gbps, r.percent
            );
        }
        for (kernel, g) in self.geomeans {
            println!("{kernel} geometric mean: {g:.2} us");
        }
        if !self.gemm_note.is_empty() {
            println!("{}", self.gemm_note);
        }
        if !self.launches.is_empty() {
            println!("launch cost of a 512 x 2048 GEMV (medians): host us per GEMV, GPU us per GEMV");
            for l in self.launches {
                let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
                println!("  {:<32} {:>8} {:>8}", l.what, cell(l.host_us), cell(l.gpu_us));
            }
        }
    }
}
