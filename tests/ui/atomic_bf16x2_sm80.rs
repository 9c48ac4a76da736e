use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_80, sm_90))]
fn k(x: &mut [bf16x2]) {
    atomic_add(x, 0u32, x[1], Order::Relaxed, Scope::Gpu);
}

fn main() {}
