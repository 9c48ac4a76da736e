use nvfp4_dsl::prelude::*;

#[device]
fn twice(x: u32) -> u32 {
    x * 2
}

#[device]
fn wrong_body(x: u32) -> u32 {
    x as f32
}

#[device]
fn takes_shared_by_value(t: SharedArray<u32, 4>) -> u32 {
    0
}

#[device(inline)]
fn with_argument(x: u32) -> u32 {
    x
}

#[device]
static LIMIT: u32 = 4;

#[kernel(targets(sm_90))]
fn arity(x: &mut [u32]) {
    x[0] = twice(x[1], x[2]);
}

#[kernel(targets(sm_90))]
fn argument_type(x: &mut [u32]) {
    x[0] = twice(1.5f32);
}

#[kernel(targets(sm_90))]
fn body_type(x: &mut [u32]) {
    x[0] = wrong_body(x[1]);
}

#[kernel(targets(sm_90))]
fn parameter_type(x: &mut [u32]) {
    x[0] = takes_shared_by_value(x[1]);
}

#[kernel(targets(sm_90))]
fn turbofish_on_plain(x: &mut [u32]) {
    x[0] = twice::<3>(x[1]);
}

fn main() {}
