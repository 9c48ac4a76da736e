use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k<T>(x: &mut [u32]) {
    x[0] = 1;
}

fn main() {}
