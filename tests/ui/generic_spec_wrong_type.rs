use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90), specialize(T = [f16, u32]))]
fn k<T: Float>(x: &mut [T]) {
    x[0] = T::from_f32(1.0);
}

fn main() {}
