use nvfp4_dsl::prelude::*;

// A shared array's elements are swapped through a local.
#[kernel(targets(sm_90))]
fn swaps(out: &mut [u32]) {
    let s = shared_array::<u32, 4>();
    let t = thread_idx_x();
    s[t] = t;
    sync_threads();
    if t == 0 {
        s.swap(0, 1);
    }
    out[t as usize] = s[t];
}

fn main() {}
