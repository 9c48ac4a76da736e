use nvfp4_dsl::prelude::*;

// Kernels have no `Option` or `Result`: each variant says what to write.
#[kernel(targets(sm_90))]
fn first(x: &[f32], y: &mut [f32]) {
    let v = Some(x[0]);
    y[0] = v.unwrap_or(0.0);
}

#[kernel(targets(sm_90))]
fn guarded(x: &[f32], y: &mut [f32], n: u32) {
    let i = thread_idx_x();
    let v = if i < n { Some(x[i as usize]) } else { None };
    y[0] = v.unwrap_or(0.0);
}

#[kernel(targets(sm_90))]
fn status(y: &mut [u32]) {
    let r = Ok::<u32, u32>(1);
    y[0] = r.unwrap_or(0);
}

fn main() {}
