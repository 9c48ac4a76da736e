use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90, sm_100a))]
fn k(x: &mut [u32]) {
    let slot = shared_array::<u32, 1>();
    tcgen05_alloc(slot, 0u32, 32);
    x[0] = slot[0u32];
}

fn main() {}
