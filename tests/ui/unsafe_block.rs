use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    unsafe {
        x[0] = 1;
    }
}

fn main() {}
