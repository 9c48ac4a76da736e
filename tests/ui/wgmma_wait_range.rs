use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90a))]
fn k(x: &mut [u32]) {
    wgmma_wait_group(8);
    x[0] = 1;
}

fn main() {}
