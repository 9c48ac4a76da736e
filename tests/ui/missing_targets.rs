use nvfp4_dsl::prelude::*;

// A kernel that lists no targets compiles for sm_90 and sm_100a; one that
// needs sm_90a is told to list it.
#[kernel]
fn k(x: &mut [u32]) {
    wgmma_fence();
    x[0] = 1;
}

fn main() {}
