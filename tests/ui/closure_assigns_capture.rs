use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let mut count = 0u32;
    let mut bump = |v: u32| count += v;
    bump(x[1]);
    x[0] = count;
}

fn main() {}
