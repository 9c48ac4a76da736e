use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let mut counts = [0u32; 4];
    for e in 0..1000 {
        counts[e % 4] += x[e];
    }
    x[0] = counts[0];
}

fn main() {}
