use nvfp4_dsl::prelude::*;

#[device]
fn fill<const N: usize>(v: f32) -> [f32; N] {
    [v; N]
}

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    let r = fill(x[0]);
    x[1] = r[0];
}

fn main() {}
