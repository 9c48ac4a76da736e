use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: Vec<f32>) {
    let _ = x;
}

fn main() {}
