use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let add = |a: u32, b: u32| a + b;
    x[0] = add(x[1]);
}

fn main() {}
