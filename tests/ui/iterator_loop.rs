use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    for v in x.iter_mut().skip(1) {
        *v = 1;
    }
}

fn main() {}
