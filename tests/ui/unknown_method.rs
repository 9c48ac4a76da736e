use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    x[0] = x[1].to_be();
}

fn main() {}
