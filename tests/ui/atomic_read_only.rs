use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[u32], y: &mut [u32]) {
    y[0] = atomic_add(x, 0u32, 1, Order::Relaxed, Scope::Gpu);
}

fn main() {}
