//! The NVFP4 GEMV from host code that already uses cudarc: on the caller's
//! context, stream and `CudaSlice`s (no copies), replayed from a CUDA graph,
//! and from threads on streams of their own. Without a GPU the same calls
//! run on the PTX emulator, on `DeviceBuffer`s; graph capture is skipped.

use cudarc::driver::CudaContext;
use nvfp4_dsl::{Device, Target, f16};
use nvfp4_kernels::gemv::{Nvfp4View, gemv};
use nvfp4_kernels::nvfp4::{Inputs, Nvfp4Tensor, check_close, gemv_inputs, gemv_reference};
use nvfp4_kernels::rng::Rng;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;
const M: usize = 512;
const K: usize = 2048;

/// The packed e2m1 bytes and the e4m3 scale bytes, as a checkpoint holds them.
fn bytes(t: &Nvfp4Tensor) -> [Vec<u8>; 2] {
    [
        t.data.iter().map(|b| b.0).collect(),
        t.scales.iter().map(|s| s.0).collect(),
    ]
}

fn report(got: &[f16], want: &[f64], what: &str) -> Result<()> {
    check_close(got, want, 1e-3, 1e-3)?;
    println!(
        "GEMV {M}x{K} {what}: all {} outputs within 1e-3 of the f64 reference",
        got.len()
    );
    Ok(())
}

/// Four threads, each on a stream of its own; the loaded kernel is shared.
fn threads(device: &Device, w: Nvfp4View<'_>, x: Nvfp4View<'_>, want: &[f64]) -> Result<()> {
    let streams = (0..4)
        .map(|_| device.new_stream())
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let outputs = std::thread::scope(|s| {
        let runs: Vec<_> = streams
            .iter()
            .map(|d| {
                s.spawn(move || -> std::result::Result<Vec<f16>, nvfp4_kernels::Error> {
                    let mut y = d.alloc_zeroed::<f16>(M)?;
                    gemv(d, w, x, &mut y)?;
                    Ok(d.download(&y)?)
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("thread"))
            .collect::<std::result::Result<Vec<_>, _>>()
    })?;
    for y in &outputs {
        check_close(y, want, 1e-3, 1e-3)?;
    }
    println!(
        "GEMV {M}x{K} from 4 threads on their own streams: all match; modules loaded: {}",
        device.module_loads()
    );
    Ok(())
}

fn main() -> Result<()> {
    let (w, x) = gemv_inputs(&mut Rng::new(1), M, K, 1, Inputs::Wide)?;
    let want = gemv_reference(&w, &x);
    let ([wd, ws], [xd, xs]) = (bytes(&w), bytes(&x));
    // SAFETY: only probes whether libcuda can be opened.
    if !(unsafe { cudarc::driver::sys::is_culib_present() } && CudaContext::device_count().unwrap_or(0) > 0) {
        let device = Device::emulator(Target::Sm100a);
        println!("No GPU: {}; DeviceBuffers stand in for CudaSlices.", device.describe());
        let (wd, ws, xd, xs) = (
            device.upload(&wd)?,
            device.upload(&ws)?,
            device.upload(&xd)?,
            device.upload(&xs)?,
        );
        let weights = Nvfp4View::new(M, K, 1, &wd, &ws)?.assume_constant();
        let token = Nvfp4View::new(x.rows, K, 1, &xd, &xs)?;
        let mut y = device.alloc_zeroed::<f16>(M)?;
        gemv(&device, weights, token, &mut y)?;
        report(&device.download(&y)?, &want, "on the emulator")?;
        println!("CUDA graph capture: skipped (it needs a GPU)");
        return threads(&device, weights, token, &want);
    }
    // The caller's context and stream. One stream orders the work, so no
    // cudarc events: a capture cannot wait on events recorded outside it.
    let ctx = CudaContext::new(0)?;
    // SAFETY: every buffer below is used on `stream` only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    let (wd, ws, xd, xs) = (
        stream.clone_htod(&wd)?,
        stream.clone_htod(&ws)?,
        stream.clone_htod(&xd)?,
        stream.clone_htod(&xs)?,
    );
    let mut y = stream.alloc_zeros::<f16>(M)?;
    let device = Device::from_cuda_stream(stream.clone())?;
    let weights = Nvfp4View::new(M, K, 1, &wd, &ws)?.assume_constant();
    let token = Nvfp4View::new(x.rows, K, 1, &xd, &xs)?;
    gemv(&device, weights, token, &mut y)?;
    report(&stream.clone_dtoh(&y)?, &want, "on the caller's stream and CudaSlices")?;
    // Library calls captured through `capture_graph` keep their workspaces
    // from one call to the next, as on the stream.
    let graph = device.capture_graph(|| (0..10).try_for_each(|_| gemv(&device, weights, token, &mut y)))?;
    stream.memset_zeros(&mut y)?;
    graph.launch()?;
    report(&stream.clone_dtoh(&y)?, &want, "x10 replayed from a CUDA graph")?;
    threads(&device, weights, token, &want)
}
