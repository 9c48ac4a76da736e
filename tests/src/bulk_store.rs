//! A tile stored from shared to global memory by bulk copies (TMA stores),
//! shared by the emulator tests (`tests/tests/bulk_store.rs`) and the GPU
//! test.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, Error};

/// Each block doubles its 64 values of `x` into a shared tile and stores
/// the tile to `y` with one bulk copy, then reuses the tile for `x + 1`
/// and stores that to `z`. `mistake`: 0 none, 1 no proxy fence before the
/// first copy, 2 no wait for the first copy to read the tile before it is
/// written again.
#[kernel(targets(sm_90))]
pub fn stage_and_store(x: &[u32], y: &mut [u32], z: &mut [u32], mistake: u32) {
    let tile = shared_array::<u32, 64>();
    let t = thread_idx_x();
    let i = (block_idx_x() * 64 + t) as usize;
    tile[t] = x[i] * 2;
    // Each writer orders its store before the async proxy's read, then the
    // barrier orders them before the copy.
    if mistake != 1 {
        fence_proxy_async_shared();
    }
    sync_threads();
    if t == 0 {
        cp_async_bulk_shared_to_global(y, block_idx_x() * 64, tile, 0u32, 256);
        cp_async_bulk_commit_group();
        if mistake != 2 {
            cp_async_bulk_wait_group_read(0);
        }
    }
    sync_threads();
    tile[t] = x[i] + 1;
    fence_proxy_async_shared();
    sync_threads();
    if t == 0 {
        cp_async_bulk_shared_to_global(z, block_idx_x() * 64, tile, 0u32, 256);
        cp_async_bulk_commit_group();
        cp_async_bulk_wait_group(0);
    }
}

/// Runs `stage_and_store` over `x` (a multiple of 64 values) on `device`:
/// `y` and `z` as it left them.
pub fn launch(device: &Device, x: &[u32], mistake: u32) -> Result<(Vec<u32>, Vec<u32>), Error> {
    let dx = device.upload(x)?;
    let mut y = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let mut z = device.upload(&vec![0xDEAD_BEEFu32; x.len()])?;
    let blocks = (x.len() / 64) as u32;
    // SAFETY: block b reads x[64b..64b + 64] and its bulk copies write the
    // same 256 bytes of y and z; the emulator checks every access.
    unsafe { stage_and_store::Kernel::launch(device, LaunchConfig::linear(blocks, 64), &dx, &mut y, &mut z, mistake)? };
    Ok((device.download(&y)?, device.download(&z)?))
}

/// [`launch`] without a mistake on `x = 0..n` (scrambled), compared with
/// the host: `y = 2x` and `z = x + 1`, every element.
pub fn check(device: &Device, n: usize) -> Result<(), String> {
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9) >> 7).collect();
    let (y, z) = launch(device, &x, 0).map_err(|e| e.to_string())?;
    for (i, v) in x.iter().enumerate() {
        if y[i] != v * 2 || z[i] != v + 1 {
            return Err(format!(
                "element {i}: y {} z {}, want {} and {}",
                y[i],
                z[i],
                v * 2,
                v + 1
            ));
        }
    }
    Ok(())
}
