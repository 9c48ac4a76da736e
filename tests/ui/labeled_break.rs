use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    'outer: loop {
        loop {
            break 'outer;
        }
    }
    x[0] = 1;
}

fn main() {}
