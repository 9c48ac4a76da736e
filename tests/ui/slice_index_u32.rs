use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let i = thread_idx_x();
    x[i] = 1;
}

fn main() {}
