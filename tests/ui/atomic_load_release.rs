use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(flags: &mut [u32], out: &mut [u32]) {
    let t = thread_idx_x() as usize;
    out[t] = atomic_load(flags, 0u32, Order::Release, Scope::Gpu);
}

fn main() {}
