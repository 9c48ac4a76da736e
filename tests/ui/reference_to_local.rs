use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let v = 3u32;
    let r = &v;
    x[0] = r.wrapping_add(1);
}

fn main() {}
