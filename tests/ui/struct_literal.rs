use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32x4]) {
    x[0] = u32x4 { x: 1, y: 2, z: 3, w: 4 };
}

fn main() {}
