use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[f32], out: &mut [u32]) {
    let best = (x[lane_id() as usize], lane_id());
    let other = shfl_xor(best, 16);
    out[0] = other.1;
}

fn main() {}
