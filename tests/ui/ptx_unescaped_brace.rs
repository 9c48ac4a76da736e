use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_100a))]
fn k(x: &mut [u32], a: f32, b: f32) {
    let v: u8 = ptx!(u8, "{ .reg .b8 t; cvt.rn.satfinite.e2m1x2.f32 t, {1}, {0}; cvt.u32.u8 {d}, t; }", a, b);
    x[0] = v as u32;
}

fn main() {}
