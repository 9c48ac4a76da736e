use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], out: &mut [u32]) {
    out[0] = u32::from(matches!(x[0], 1 | 2));
}

fn main() {}
