use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(out: &mut [u32]) {
    let (mut a, mut b) = (1u32, 2u32);
    std::mem::swap(a, &mut b);
    out[0] = a + b;
}

fn main() {}
