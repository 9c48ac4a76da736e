use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    atomic_max(x, 0u32, 1.0, Order::Relaxed, Scope::Gpu);
}

fn main() {}
