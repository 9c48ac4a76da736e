use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f64], v: f64) {
    x[0] = v.exp();
}

fn main() {}
