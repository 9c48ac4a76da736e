use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    x[0] = match n {
        0 => 1,
        _ => 2,
    };
}

fn main() {}
