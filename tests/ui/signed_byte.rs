use nvfp4_dsl::prelude::*;

// An int8 kernel written as in CUDA: `i8` is not a kernel type; the error
// says to hold the bytes as `u8` and sign-extend.
#[kernel(targets(sm_90))]
fn dot_i8(w: &[i8], x: &[u32], y: &mut [i32]) {
    let i = thread_idx_x() as usize;
    y[i] = w[i] as i32 * x[i] as i32;
}

fn main() {}
