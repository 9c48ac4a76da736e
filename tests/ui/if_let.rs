use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    if let 3 = n {
        x[0] = 1;
    }
}

fn main() {}
