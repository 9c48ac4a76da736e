use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], out: &mut [u32]) {
    out[0] = std::cmp::max(x[0], x[1], x[2]);
}

fn main() {}
