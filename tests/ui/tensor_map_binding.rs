use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_100a))]
fn k(map: TensorMap, x: &mut [u32]) {
    let copy = map;
    x[0] = 1;
}

fn main() {}
