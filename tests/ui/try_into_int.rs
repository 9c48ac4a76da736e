use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], out: &mut [u32]) {
    let t = thread_idx_x() as usize;
    let i: u32 = t.try_into().unwrap();
    out[t] = x[t] + i;
}

fn main() {}
