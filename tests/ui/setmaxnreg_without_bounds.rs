use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90a))]
fn no_bounds(x: &mut [u32]) {
    if thread_idx_x() >= 256 {
        setmaxnreg_dec(40);
    }
    x[0] = 1;
}

#[kernel(targets(sm_90a), launch_bounds(384))]
fn no_blocks_per_multiprocessor(x: &mut [u32]) {
    if thread_idx_x() < 256 {
        setmaxnreg_inc(232);
    }
    x[0] = 1;
}

fn main() {}
