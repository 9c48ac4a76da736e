use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let s = shared_array::<u32, 32>();
    x[0] = load(s, 0u32, Cache::Streaming);
}

fn main() {}
