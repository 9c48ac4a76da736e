use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    fn inner() -> u32 {
        1
    }
    x[0] = inner();
}

fn main() {}
