use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let counts = shared_array::<u32, 4>();
    x[0] = atomic_add_acq_rel_gpu(counts, 0u32, 1);
}

fn main() {}
