use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let s = shared_array::<u32, 16384>();
    s[thread_idx_x()] = 1;
    x[0] = s[0u32];
}

fn main() {}
