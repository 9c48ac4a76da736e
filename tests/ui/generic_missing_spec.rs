use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k<T: Half>(x: &mut [T]) {
    x[0] = T::from_f32(1.0);
}

fn main() {}
