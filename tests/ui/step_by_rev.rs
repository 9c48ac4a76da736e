use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    for i in (0..8).step_by(2).rev() {
        x[i] = 1;
    }
}

fn main() {}
