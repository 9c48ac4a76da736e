use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32]) -> u32 {
    x[0]
}

fn main() {}
