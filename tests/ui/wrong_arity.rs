use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    x[0] = thread_idx_x(1u32);
}

fn main() {}
