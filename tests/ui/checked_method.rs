use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    x[0] = n.checked_add(1).unwrap_or(0);
}

fn main() {}
