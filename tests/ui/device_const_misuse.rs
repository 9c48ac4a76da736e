use nvfp4_dsl::prelude::*;

#[device]
const LUT: [u32; 4] = [1, 2, 3, 4];

const fn make() -> u32 {
    3
}

#[kernel(targets(sm_90))]
fn assign(i: u32) {
    LUT[i as usize] = 0;
}

#[kernel(targets(sm_90))]
fn past_end(x: &mut [u32]) {
    x[0] = LUT[4];
}

#[kernel(targets(sm_90), specialize(N = [4]))]
fn generic_length<const N: usize>(x: &mut [f32]) {
    let s = shared_array::<f32, { N * 2 }>();
    s[0u32] = x[0];
}

#[kernel(targets(sm_90), specialize(N = [make()]))]
fn spec_call<const N: u32>(x: &mut [u32]) {
    x[0] = N;
}

fn main() {}
