use nvfp4_dsl::prelude::*;

#[device]
fn one<T: Float>() -> f32 {
    T::from_f32(1.0).to_f32()
}

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    x[0] = one();
}

fn main() {}
