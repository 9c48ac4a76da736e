use nvfp4_dsl::prelude::*;

#[device]
#[derive(Clone, Copy)]
struct WithTuple {
    pair: (u32, f32),
}

#[device]
#[derive(Clone, Copy)]
struct Large {
    values: [u32; 33],
}

#[device]
#[derive(Clone, Copy)]
struct NotInKernels {
    small: i8,
}

#[kernel(targets(sm_90))]
fn tuple_field(p: WithTuple, x: &mut [u32]) {
    x[0] = p.pair.0;
}

#[kernel(targets(sm_90))]
fn too_large(p: Large, x: &mut [u32]) {
    x[0] = p.values[0];
}

fn main() {}
