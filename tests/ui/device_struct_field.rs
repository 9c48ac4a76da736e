use nvfp4_dsl::prelude::*;

#[device]
#[derive(Clone, Copy)]
struct Pair {
    lo: u32,
    hi: u32,
}

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let p = Pair { lo: 1, hi: 2 };
    x[0] = p.mid;
}

fn main() {}
