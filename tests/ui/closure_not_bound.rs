use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let f = { |v: u32| v + 1 };
    x[0] = f(x[1]);
}

fn main() {}
