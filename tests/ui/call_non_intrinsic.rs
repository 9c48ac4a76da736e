use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    x[0] = helper();
}

fn helper() -> u32 {
    7
}

fn main() {}
