use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90), specialize(T = [f32, f64]))]
fn k<T: Float>(x: &mut [T]) {
    x[0] = T::sqrt(x[1]);
}

fn main() {}
