use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    let double = |v: f32| v * 2.0;
    x[0] = double(x[0]);
}

fn main() {}
