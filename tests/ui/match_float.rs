use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f32], v: f32) {
    x[0] = match v {
        0.0 => 1.0,
        _ => 2.0,
    };
}

fn main() {}
