use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn row_as_value(x: &mut [f32]) {
    let tile = shared_array::<[f32; 33], 32>();
    let row = tile[thread_idx_x()];
    x[0] = row[0];
}

#[kernel(targets(sm_90))]
fn row_assigned(x: &mut [f32]) {
    let tile = shared_array::<[f32; 4], 2>();
    tile[1u32] = [x[0]; 4];
}

#[kernel(targets(sm_90))]
fn bool_rows(x: &mut [u32]) {
    let flags = shared_array::<[bool; 4], 2>();
    x[0] = u32::from(flags[0u32][1u32]);
}

#[kernel(targets(sm_90))]
fn atomic_on_rows(x: &mut [u32]) {
    let hist = shared_array::<[u32; 8], 4>();
    atomic_add(hist, 3u32, 1u32, Order::Relaxed, Scope::Cta);
    x[0] = hist[0u32][3u32];
}

#[kernel(targets(sm_90))]
fn column_past_the_row(x: &mut [u32]) {
    let tile = shared_array::<[u32; 8], 4>();
    x[0] = tile[thread_idx_x()][8];
}

#[kernel(targets(sm_90))]
fn wrong_element(x: &mut [u32]) {
    let tile = shared_array::<[f32; 8], 4>();
    tile[0u32][1u32] = x[0];
}

fn main() {}
