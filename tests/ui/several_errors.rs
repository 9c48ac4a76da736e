use nvfp4_dsl::prelude::*;

// One build shows every error it can: after a float method kernels lack
// (whose type is Rust's) and after a statement that binds nothing, the
// checker goes on.
#[kernel(targets(sm_90))]
fn rotate(x: &mut [f32], base: f32) {
    let i = thread_idx_x() as usize;
    let inv_freq = base.powf(-2.0 * i as f32 / 64.0);
    let (s, c) = (x[i] * inv_freq).sin_cos();
    x[i] = s * c;
}

#[kernel(targets(sm_90))]
fn flags(x: &mut [u32], n: u32) {
    let i = thread_idx_x();
    x[i as usize] = 1.5;
    x[0] = n.leading_ones();
    x[1] = i;
}

fn main() {}
