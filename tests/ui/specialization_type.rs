use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90), specialize(N = [true]))]
fn k<const N: u32>(x: &mut [u32]) {
    x[0] = N;
}

fn main() {}
