use nvfp4_dsl::prelude::*;

// The warp reductions take u32, i32, f32, u64, i64 and f64: `Num +
// WarpReduce` narrows `Num` to those, and no half type is among them.
#[kernel(targets(sm_90), specialize(T = [f32, u8]))]
fn sums<T: Num + WarpReduce>(x: &mut [T]) {
    x[0] = warp_reduce_sum(x[1]);
}

#[kernel(targets(sm_90), specialize(T = [f16]))]
fn halves<T: Half + WarpReduce>(x: &mut [T]) {
    x[0] = warp_reduce_sum(x[1]);
}

fn main() {}
