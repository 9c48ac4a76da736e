use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    let a = [1u32, 2, 3, 4];
    x[0] = a[n as usize];
}

fn main() {}
