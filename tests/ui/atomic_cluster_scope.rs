use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_80, sm_90))]
fn k(x: &mut [u32]) {
    atomic_add(x, 0u32, 1, Order::Relaxed, Scope::Cluster);
}

fn main() {}
