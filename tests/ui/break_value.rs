use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let v = loop {
        break 5u32;
    };
    x[0] = v;
}

fn main() {}
