use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90), specialize(T = [f16, bf16]))]
fn k<T: Half>(x: &mut [T]) {
    x[0] = x[1].sqrt();
}

fn main() {}
