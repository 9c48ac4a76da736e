use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let v: u32 = ptx!(u32, "add.u32 {d}, {0}, {1};", x[1]);
    x[0] = v;
}

fn main() {}
