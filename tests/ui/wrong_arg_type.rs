use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    x[0] = shfl_down(x[1], 1.5);
}

fn main() {}
