use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    #[unroll]
    for i in 0..n {
        x[i as usize] = i;
    }
}

fn main() {}
