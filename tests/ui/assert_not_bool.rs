use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    assert!(x[0], "x[0] is set");
}

fn main() {}
