use nvfp4_dsl::prelude::*;

// A device function's `acc: &mut [f32; N]` parameter is passed on as `acc`,
// as Rust reborrows it.
#[device]
fn step(acc: &mut [f32; 4], a: [f16x2; 4]) {
    wgmma_f16_rs(&mut acc, a, WgmmaDesc::new(0), false);
}

#[kernel(targets(sm_90a))]
fn k(x: &mut [f32]) {
    let mut acc = [0.0f32; 4];
    step(&mut acc, [f16x2::from_bits(0); 4]);
    x[0] = acc[0];
}

fn main() {}
