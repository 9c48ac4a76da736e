use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], y: &[u32]) {
    let (a, b) = (y, 1u32);
    x[0] = a[0] + b;
}

fn main() {}
