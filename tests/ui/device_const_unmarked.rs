use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    x[0] = TILE;
}

const TILE: u32 = 4;

fn main() {}
