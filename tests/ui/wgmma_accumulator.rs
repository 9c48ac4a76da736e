use nvfp4_dsl::prelude::*;

// The accumulator must be a `let mut` local `[f32; N]` with N / 2 = n a
// multiple of 8 up to 256 (here 6 values: n = 12).
#[kernel(targets(sm_90a))]
fn k(x: &mut [f32]) {
    let mut acc = [0.0f32; 6];
    let a = [f16x2::from_bits(0); 4];
    wgmma_f16_rs(&mut acc, a, WgmmaDesc::new(0), false);
    x[0] = acc[0];
}

fn main() {}
