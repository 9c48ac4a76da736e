use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90), specialize(T = [1, 2]))]
fn k<T: Float>(x: &mut [T]) {
    x[0] = T::from_f32(1.0);
}

fn main() {}
