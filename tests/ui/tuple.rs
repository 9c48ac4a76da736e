use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let pair = (1u32, 2u32);
    x[0] = pair.0;
}

fn main() {}
