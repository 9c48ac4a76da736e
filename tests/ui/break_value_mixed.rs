use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let mut i = 0u32;
    let v = loop {
        if i == 8 {
            break;
        }
        if x[i as usize] == 3 {
            break i;
        }
        i += 1;
    };
    x[0] = v;
}

fn main() {}
