use nvfp4_dsl::prelude::*;

#[device]
fn widen<T: Float>(v: T) -> f32 {
    v.to_f32()
}

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    x[0] = widen(x[1]) as u32;
}

fn main() {}
