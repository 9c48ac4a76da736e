use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90a))]
fn k(x: &mut [u32]) {
    tcgen05_fence_after_thread_sync();
    x[0] = 1;
}

fn main() {}
