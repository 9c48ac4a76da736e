use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[f32], out: &mut [f32]) {
    out[0] = x.iter().fold(0.0, |acc, v| acc + v);
}

fn main() {}
