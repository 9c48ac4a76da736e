use nvfp4_dsl::prelude::*;

// A constant index past a shared array is a compile error, as rustc's for
// an array (a run-time one is the emulator's to report).
#[kernel(targets(sm_90))]
fn last_plus_one(x: &[f32], y: &mut [f32]) {
    let buf = shared_array::<f32, 32>();
    let i = thread_idx_x();
    buf[i] = x[i as usize];
    sync_threads();
    y[i as usize] = buf[32];
}

#[kernel(targets(sm_90))]
fn row_past_the_tile(y: &mut [u32]) {
    let tile = shared_array::<[u32; 4], 2>();
    tile[2u32][0u32] = 1;
    y[0] = 0;
}

fn main() {}
