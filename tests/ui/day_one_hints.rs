use nvfp4_dsl::prelude::*;

// Rust a new user writes on day one, and what each error says to write
// instead.

#[kernel(targets(sm_90))]
fn sums(x: &[f32], y: &mut [f32]) {
    y[0] = x.iter().map(|v| v * v).sum::<f32>();
}

#[kernel(targets(sm_90))]
fn firsts(x: &[f32], y: &mut [f32]) {
    y[0] = *x.first().unwrap();
}

#[kernel(targets(sm_90))]
fn panics(x: &[u32], y: &mut [u32]) {
    if x[0] > 4 {
        panic!("too large");
    }
    y[0] = x[0];
}

#[kernel(targets(sm_90))]
fn lets_else(x: &[u32], y: &mut [u32]) {
    let pair = (x[0] > 1, x[1]);
    let (true, m) = pair else { return };
    y[0] = m;
}

#[kernel(targets(sm_90))]
fn fills(y: &mut [f32]) {
    y.fill(0.0);
}

fn main() {}
