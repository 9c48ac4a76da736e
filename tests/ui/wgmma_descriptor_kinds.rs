use nvfp4_dsl::prelude::*;

// A tcgen05 descriptor where the wgmma expects its own: a type error.
#[kernel(targets(sm_90a))]
fn k(x: &mut [f32]) {
    let mut acc = [0.0f32; 4];
    let a = [f16x2::from_bits(0); 4];
    wgmma_f16_rs(&mut acc, a, SmemDesc::new(0), false);
    x[0] = acc[0];
}

fn main() {}
