use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f32], n: u32) {
    x[0] = f32::max(n, x[1]);
}

fn main() {}
