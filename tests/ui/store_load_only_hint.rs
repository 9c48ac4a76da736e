use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    store(x, 0usize, 1u32, Cache::NonCoherent);
}

fn main() {}
