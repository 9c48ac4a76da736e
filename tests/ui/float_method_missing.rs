use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn power(x: &mut [f32]) {
    x[0] = x[1].powf(1.5);
}

#[kernel(targets(sm_90))]
fn angle(x: &mut [f32]) {
    x[0] = x[1].atan2(x[2]);
}

#[kernel(targets(sm_90))]
fn rotate(x: &mut [f32]) {
    let (s, c) = x[1].sin_cos();
    x[0] = s * c;
}

fn main() {}
