use nvfp4_dsl::prelude::*;

// Constructs outside the subset are reported together, each where it is;
// a `let` that fails still binds its name for the statements after it.
#[kernel(targets(sm_90))]
fn gather(x: &[f32], y: &mut [f32], n: u32) {
    let i = thread_idx_x();
    let scratch: Vec<f32> = Vec::new();
    let v = if i < n { Some(x[i as usize]) } else { None };
    unsafe {
        y[0] = 1.0;
    }
    y[i as usize] = scratch.len() as f32 + v.unwrap_or(0.0);
}

fn main() {}
