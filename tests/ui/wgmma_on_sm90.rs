use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90, sm_90a))]
fn k(x: &mut [f32]) {
    let mut acc = [0.0f32; 4];
    let a = [f16x2::from_bits(0); 4];
    wgmma_fence();
    wgmma_f16_rs(&mut acc, a, WgmmaDesc::new(0), false);
    wgmma_commit_group();
    wgmma_wait_group(0);
    x[0] = acc[0];
}

fn main() {}
