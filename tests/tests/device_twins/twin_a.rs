use nvfp4_dsl::prelude::*;

/// The same source, at the same line and column, as the other twin's.
#[device]
pub const WIDTH: u32 = 64;

#[kernel(targets(sm_90))]
pub fn fill_a(out: &mut [u32]) {
    let t = thread_idx_x();
    out[t as usize] = WIDTH + t;
}
