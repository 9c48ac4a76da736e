use nvfp4_dsl::prelude::*;

// The check goes on past a statement that failed to parse (the `fold`)
// and past a `let` with a type error (the `sum`): one build shows both,
// and the error after them; the statement that uses their names adds none.
#[kernel(targets(sm_90))]
fn row_stats(x: &[f32], out: &mut [f32], n: u32) {
    let row = [x[0], x[1], x[2], x[3]];
    let s = row.iter().sum();
    let m = row.iter().fold(0.0, |a, &b| a.max(b));
    out[0] = s / m;
    out[1] = n;
}

fn main() {}
