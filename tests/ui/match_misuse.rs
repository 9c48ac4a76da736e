use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn constant_pattern(x: &mut [u32], n: u32) {
    const LIMIT: u32 = 4;
    x[0] = match n {
        LIMIT => 1,
        _ => 2,
    };
}

#[kernel(targets(sm_90))]
fn binding_in_alternative(x: &mut [u32], n: u32) {
    x[0] = match n {
        0 | m => m,
    };
}

#[kernel(targets(sm_90))]
fn bool_range(x: &mut [u32], b: bool) {
    x[0] = match b {
        false..=true => 1,
    };
}

#[kernel(targets(sm_90))]
fn tuple_arity(x: &mut [u32], n: u32) {
    let (a, b, c) = (n, n);
    x[0] = a + b + c;
}

#[kernel(targets(sm_90))]
fn tuple_field(x: &mut [u32], n: u32) {
    let t = (n, n);
    x[0] = t.2;
}

#[kernel(targets(sm_90))]
fn let_pattern(x: &mut [u32], n: u32) {
    let [a, rest @ ..] = [n, n, n];
    x[0] = a + rest[0];
}

fn main() {}
