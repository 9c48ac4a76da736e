use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90a), launch_bounds(256, 1))]
fn k(x: &mut [u32]) {
    setmaxnreg_inc(230);
    x[0] = 1;
}

fn main() {}
