//! Timing on the GPU: medians of CUDA-event intervals around back-to-back
//! launches, or around replays of a captured CUDA graph.

use super::LAUNCHES;
use cudarc::driver::CudaGraph;
use cudarc::driver::sys::CUevent_flags;
use nvfp4_dsl::Device;

/// What `work` launches on `device`'s stream, captured into a CUDA graph by
/// [`Device::capture_graph`] (library calls keep their workspaces from one
/// captured call to the next, as users who capture through it get).
pub fn capture(device: &Device, work: impl FnOnce() -> Result<(), String>) -> Result<CudaGraph, String> {
    device
        .capture_graph(|| work().map_err(CaptureError::Call))
        .map_err(|e| match e {
            CaptureError::Call(e) => format!("a call under graph capture: {e}"),
            CaptureError::Device(e) => e.to_string(),
        })
}

/// Why [`capture`] failed: a captured call, or the capture itself.
enum CaptureError {
    Call(String),
    Device(nvfp4_dsl::Error),
}

impl From<nvfp4_dsl::Error> for CaptureError {
    fn from(e: nvfp4_dsl::Error) -> Self {
        CaptureError::Device(e)
    }
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds per call of `work`, timed with CUDA events around
/// `LAUNCHES` back-to-back calls.
pub fn time_ms(
    device: &Device,
    repeats: usize,
    mut work: impl FnMut(usize) -> Result<(), String>,
) -> Result<f64, String> {
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

/// Median milliseconds per call of `work` when `LAUNCHES` calls (`work(0)`
/// .. `work(LAUNCHES - 1)`) are captured into a CUDA graph once and the
/// graph is replayed: what a user who replays graphs measures (no host
/// launch cost between calls).
pub fn time_graph_ms(
    device: &Device,
    repeats: usize,
    mut work: impl FnMut(usize) -> Result<(), String>,
) -> Result<f64, String> {
    let cuda = device.as_cuda().ok_or("timing needs a CUDA device")?;
    let stream = cuda.stream();
    // One call outside the capture, so that lazy loading happens before it.
    work(0)?;
    let graph = capture(device, || (0..LAUNCHES).try_for_each(&mut work))?;
    let ctx = cuda.context();
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = ctx.new_event(flags).map_err(|e| e.to_string())?;
    let end = ctx.new_event(flags).map_err(|e| e.to_string())?;
    for _ in 0..3 {
        graph.launch().map_err(|e| e.to_string())?;
    }
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        start.record(stream).map_err(|e| e.to_string())?;
        graph.launch().map_err(|e| e.to_string())?;
        end.record(stream).map_err(|e| e.to_string())?;
        end.synchronize().map_err(|e| e.to_string())?;
        let ms = start.elapsed_ms(&end).map_err(|e| e.to_string())?;
        samples.push(f64::from(ms) / LAUNCHES as f64);
    }
    Ok(median(samples))
}
