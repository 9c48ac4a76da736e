use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    'done: {
        if x[0] == 0 {
            break 'done;
        }
        x[0] = 1;
    }
}

fn main() {}
