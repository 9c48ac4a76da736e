use core::sync::atomic::Ordering;
use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn std_ordering(x: &mut [u32]) {
    atomic_add(x, 0u32, 1, Ordering::Relaxed, Scope::Gpu);
}

#[kernel(targets(sm_90))]
fn seq_cst(x: &mut [u32]) {
    atomic_add(x, 0u32, 1, Order::SeqCst, Scope::Gpu);
}

#[kernel(targets(sm_90))]
fn order_variable(x: &mut [u32]) {
    let order = Order::Relaxed;
    atomic_add(x, 0u32, 1, order, Scope::Gpu);
}

#[kernel(targets(sm_90))]
fn order_from_a_parameter(x: &mut [u32], sync: bool) {
    atomic_add(x, 0u32, 1, if sync { Order::AcqRel } else { Order::Relaxed }, Scope::Gpu);
}

fn main() {}
