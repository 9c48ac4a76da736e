use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], a: u32, b: u32) {
    x[0] = match (a, b) {
        (0, _) => 1,
        _ => 2,
    };
}

fn main() {}
