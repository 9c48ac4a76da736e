//! Timing on the GPU: medians of CUDA-event intervals around back-to-back
//! launches, or around replays of a captured CUDA graph.

use super::LAUNCHES;
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use nvfp4_dsl::Device;

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
    // One call outside the capture, so that lazy loading and workspaces
    // happen before it.
    work(0)?;
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(|e| e.to_string())?;
    let captured = (0..LAUNCHES).try_for_each(&mut work);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0));
    captured.map_err(|e| format!("a call under graph capture: {e}"))?;
    let graph = graph
        .map_err(|e| format!("ending the graph capture: {e}"))?
        .ok_or("nothing was captured")?;
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
