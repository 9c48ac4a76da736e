use nvfp4_dsl::prelude::*;

#[device]
fn even(n: u32) -> bool {
    if n == 0 { true } else { odd(n - 1) }
}

#[device]
fn odd(n: u32) -> bool {
    if n == 0 { false } else { even(n - 1) }
}

#[kernel(targets(sm_90))]
fn k(x: &mut [u32], n: u32) {
    x[0] = even(n) as u32;
}

fn main() {}
