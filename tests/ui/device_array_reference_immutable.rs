use nvfp4_dsl::prelude::*;

#[device]
fn bump(acc: &mut [f32; 2]) {
    acc[0] += 1.0;
}

#[kernel(targets(sm_90))]
fn k(out: &mut [f32]) {
    let acc = [0.0f32; 2];
    bump(&mut acc);
    out[0] = acc[0];
}

fn main() {}
