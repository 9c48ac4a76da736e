use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let add = |a: u32, b: u32| a + b;
    let g = add;
    x[0] = g(x[1], 2);
}

fn main() {}
