use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[f16], y: &mut [f32]) {
    y[0] = x[0] as f32;
}

fn main() {}
