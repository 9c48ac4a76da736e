use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let mut s = shared_array::<u32, 4>();
    s[0u32] = 1;
    x[0] = s[0u32];
}

fn main() {}
