use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_75))]
fn k(x: &mut [u32]) {
    x[0] = 1;
}

fn main() {}
