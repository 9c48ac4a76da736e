use nvfp4_dsl::prelude::*;

#[device]
fn halve(v: f32) -> f32 {
    let m = v.mantissa();
    v * 0.5
}

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    x[0] = halve(x[1]);
}

fn main() {}
