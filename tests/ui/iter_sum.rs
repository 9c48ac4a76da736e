use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[f32], out: &mut [f32]) {
    let acc = [x[0], x[1], x[2]];
    out[0] = acc.iter().sum();
}

fn main() {}
