use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_80, sm_90))]
fn k(x: &mut [u32]) {
    if elect_sync() {
        x[0] = 1;
    }
}

fn main() {}
