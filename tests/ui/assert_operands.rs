use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    assert_eq!(x[0]);
}

fn main() {}
