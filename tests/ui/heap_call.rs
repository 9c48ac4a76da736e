use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let scratch = Vec::with_capacity(16);
    x[0] = scratch.len() as u32;
}

fn main() {}
