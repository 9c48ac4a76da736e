use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f64]) {
    x[0] = x[1].rsqrt_approx();
}

fn main() {}
