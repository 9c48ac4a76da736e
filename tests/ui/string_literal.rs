use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let s = "hello";
    let _ = s;
    x[0] = 1;
}

fn main() {}
