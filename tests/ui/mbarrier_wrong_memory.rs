use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let bars = shared_array::<u32, 2>();
    mbarrier_init(bars, 0u32, 1);
    x[0] = 1;
}

fn main() {}
