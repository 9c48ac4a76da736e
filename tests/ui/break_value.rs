use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let mut i = 0u32;
    while i < 8 {
        if x[i as usize] == 3 {
            break i;
        }
        i += 1;
    }
}

fn main() {}
