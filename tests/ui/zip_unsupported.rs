use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], y: &[u32], out: &mut [u32]) {
    for (a, b) in x.iter().zip(y.iter().skip(1)) {
        out[0] += a * b;
    }
}

fn main() {}
