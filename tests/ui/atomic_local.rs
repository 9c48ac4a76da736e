use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn array(x: &mut [u32]) {
    let mut count = [0u32; 4];
    x[0] = atomic_add(&mut count, 0u32, 1, Order::Relaxed, Scope::Cta);
}

#[kernel(targets(sm_90))]
fn scalar(x: &mut [u32]) {
    let count = 0u32;
    x[0] = atomic_add(count, 0u32, 1, Order::Relaxed, Scope::Cta);
}

fn main() {}
