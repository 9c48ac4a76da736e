use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn power(x: &mut [f32]) {
    x[0] = x[1].powf(1.5);
}

#[kernel(targets(sm_90))]
fn angle(x: &mut [f32]) {
    x[0] = x[1].atan2(x[2]);
}

fn main() {}
