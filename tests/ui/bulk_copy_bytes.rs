use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90))]
fn k(x: &mut [u32]) {
    let tile = shared_array::<u32, 16>();
    tile[thread_idx_x()] = 1;
    fence_proxy_async_shared();
    sync_threads();
    if thread_idx_x() == 0 {
        cp_async_bulk_shared_to_global(x, 0u32, tile, 0u32, 60);
        cp_async_bulk_commit_group();
        cp_async_bulk_wait_group(0);
    }
}

fn main() {}
