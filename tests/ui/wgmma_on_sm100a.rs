use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90a, sm_100a), launch_bounds(384, 1))]
fn k(x: &mut [u32]) {
    if thread_idx_x() < 128 {
        setmaxnreg_dec(40);
    }
    x[0] = 1;
}

fn main() {}
