use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    if n > 0 {
        k(x, n - 1);
    }
}

fn main() {}
