use nvfp4_dsl::prelude::*;

// A closure is bound and called where it is made; a device function
// cannot take one.
#[device]
fn apply(f: impl Fn(f32) -> f32, v: f32) -> f32 {
    f(v)
}

#[kernel(targets(sm_90))]
fn squares(x: &[f32], y: &mut [f32]) {
    let i = thread_idx_x() as usize;
    let sq = |v: f32| v * v;
    y[i] = apply(sq, x[i]);
}

fn main() {}
