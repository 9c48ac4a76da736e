use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], y: &[u32], out: &mut [u32]) {
    for pair in x.iter().zip(y.iter()) {
        out[0] += *pair.0;
    }
}

fn main() {}
