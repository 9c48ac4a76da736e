use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], y: &[u32], out: &mut [u32]) {
    for ((i, a), b) in x.iter().enumerate().zip(y.iter()) {
        out[i] = a + b;
    }
}

fn main() {}
