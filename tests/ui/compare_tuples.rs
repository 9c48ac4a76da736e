use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[f32], out: &mut [u32]) {
    let (v, i) = (x[0], 3u32);
    let best = (x[1], 4u32);
    out[0] = u32::from((v, i) > best);
}

fn main() {}
