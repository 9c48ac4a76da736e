use nvfp4_dsl::prelude::*;

#[device]
#[derive(Clone, Copy)]
struct Pair {
    lo: u32,
    hi: u32,
}

#[device]
#[derive(Clone, Copy)]
struct Wrapped(u32);

#[device]
#[derive(Clone, Copy)]
struct Generic<const N: usize> {
    v: [u32; N],
}

#[kernel(targets(sm_90))]
fn missing_field(x: &mut [u32]) {
    let p = Pair { lo: 1 };
    x[0] = p.lo;
}

#[kernel(targets(sm_90))]
fn field_twice(x: &mut [u32]) {
    let p = Pair { lo: 1, lo: 2, hi: 3 };
    x[0] = p.lo;
}

#[kernel(targets(sm_90))]
fn functional_update(x: &mut [u32]) {
    let p = Pair { lo: 1, hi: 2 };
    let q = Pair { lo: 3, ..p };
    x[0] = q.hi;
}

#[kernel(targets(sm_90))]
fn tuple_struct(x: &mut [u32]) {
    let w: Wrapped = Wrapped(1);
    x[0] = w.0;
}

#[kernel(targets(sm_90))]
fn generic_struct(x: &mut [u32]) {
    let g = Generic::<2> { v: [1, 2] };
    x[0] = g.v[0];
}

fn main() {}
