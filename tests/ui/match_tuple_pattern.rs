use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn arity(x: &mut [u32], a: u32, b: u32) {
    x[0] = match (a, b) {
        (0, _, _) => 1,
        _ => 2,
    };
}

#[kernel(targets(sm_90))]
fn float_part(x: &mut [u32], a: u32, f: f32) {
    x[0] = match (a, f) {
        (0, _) => 1,
        _ => 2,
    };
}

#[kernel(targets(sm_90))]
fn bound_in_one(x: &mut [u32], a: u32, b: u32) {
    x[0] = match (a, b) {
        (0, n) | (n, 0) => n,
        _ => 2,
    };
}

fn main() {}
