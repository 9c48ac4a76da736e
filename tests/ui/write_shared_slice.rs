use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32]) {
    x[0] = 1;
}

fn main() {}
