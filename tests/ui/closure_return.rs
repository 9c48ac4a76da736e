use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let clamp = |v: u32| {
        if v > 7 {
            return 7;
        }
        v
    };
    x[0] = clamp(x[1]);
}

fn main() {}
