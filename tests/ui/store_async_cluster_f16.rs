use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &[f16]) {
    let inbox = shared_array::<f16, 64>();
    let bars = shared_array::<u64, 1>();
    let t = thread_idx_x();
    store_async_cluster(inbox, t, x[t as usize], bars, 0u32, 1u32);
}

fn main() {}
