use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let v = [x[0], x[1], x[2]];
    let [a, b] = v;
    x[0] = a + b;
}

fn main() {}
