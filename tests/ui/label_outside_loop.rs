use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    'fill: for i in 0..4 {
        x[i] = 1;
    }
    loop {
        break 'fill;
    }
}

fn main() {}
