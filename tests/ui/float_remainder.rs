use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    x[0] = x[1] % 2.0;
}

fn main() {}
