//! Runs every kernel of the project on fixed random inputs and returns the
//! raw bytes of their outputs, so two devices (the H100 and the emulator)
//! can be compared bit for bit.

use crate::Error;
use crate::gemv::{self, DeviceNvfp4, GemvConfig};
use crate::nvfp4::{Inputs, gemv_inputs};
use crate::rng::Rng;
use crate::samples::{block_sum, mixed_ops, mixed_ops_inputs, saxpy, tile_mirror};
use nvfp4_dsl::DeviceCopy;
use nvfp4_dsl::prelude::*;

/// One kernel's output on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The kernel and its specialisation.
    pub name: String,
    /// The output buffers' bytes, concatenated.
    pub bytes: Vec<u8>,
}

fn bytes_of<T: DeviceCopy>(v: &[T]) -> Vec<u8> {
    // SAFETY: `DeviceCopy` types are plain data without padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }.to_vec()
}

/// Runs the sample kernels, the decode kernel and every GEMV variant on
/// inputs drawn from `seed` (the same on every device) at sizes small
/// enough for the emulator.
pub fn run_all(device: &Device, seed: u64) -> Result<Vec<Output>, Error> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();

    let decoded = crate::decode::decode_every_byte(device)?;
    let mut bytes = bytes_of(&decoded.fp4);
    bytes.extend(bytes_of(&decoded.fp8));
    bytes.extend(bytes_of(&decoded.fp8x2));
    bytes.extend(bytes_of(&decoded.x8));
    bytes.extend(bytes_of(&decoded.x8_scaled));
    out.push(Output {
        name: "decode_all".into(),
        bytes,
    });

    let n = 3000usize;
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let a = rng.uniform(-2.0, 2.0);
    let (dx, mut dy) = (device.upload(&x)?, device.upload(&y)?);
    // SAFETY: one thread per element; the kernel checks the length.
    unsafe {
        saxpy::Kernel::launch(
            device,
            LaunchConfig::linear(n.div_ceil(256) as u32, 256),
            &dx,
            &mut dy,
            a,
        )?
    };
    out.push(Output {
        name: "saxpy".into(),
        bytes: bytes_of(&device.download(&dy)?),
    });

    let blocks = 5u32;
    let mut partial = device.upload(&vec![f32::NAN; blocks as usize])?;
    // SAFETY: reads x[i] for i < n, writes one element per block.
    unsafe { block_sum::Kernel::launch(device, LaunchConfig::linear(blocks, 1024), &dx, &mut partial, n as u32)? };
    out.push(Output {
        name: "block_sum".into(),
        bytes: bytes_of(&device.download(&partial)?),
    });

    let (tiles, words) = (2u32, 16384u32);
    let src: Vec<u32> = (0..tiles * words).map(|_| rng.next_u32()).collect();
    let dsrc = device.upload(&src)?;
    for vecs in [2, 4] {
        let mut dst = device.upload(&vec![0u32; src.len()])?;
        let cfg = LaunchConfig::linear(tiles, 256).with_shared_bytes(words * 4);
        // SAFETY: each block reads and writes its own tile of `words` words.
        unsafe {
            if vecs == 2 {
                tile_mirror::Kernel::<2>::launch(device, cfg, &dsrc, &mut dst, words)?
            } else {
                tile_mirror::Kernel::<4>::launch(device, cfg, &dsrc, &mut dst, words)?
            }
        }
        out.push(Output {
            name: format!("tile_mirror<{vecs}>"),
            bytes: bytes_of(&device.download(&dst)?),
        });
    }

    let threads = 512usize;
    let (xs, fs, hs) = mixed_ops_inputs(&mut rng, threads);
    let (dxs, dfs, dhs) = (device.upload(&xs)?, device.upload(&fs)?, device.upload(&hs)?);
    let mut du = device.upload(&vec![0u32; threads * 8])?;
    let mut dfo = device.upload(&vec![0f32; threads * 4])?;
    let mut dho = device.upload(&vec![f16x2::default(); threads * 3])?;
    // SAFETY: one thread per input; outputs sized 8, 4 and 3 per thread.
    unsafe {
        mixed_ops::Kernel::launch(
            device,
            LaunchConfig::linear((threads / 256) as u32, 256),
            &dxs,
            &dfs,
            &dhs,
            &mut du,
            &mut dfo,
            &mut dho,
        )?
    };
    let mut bytes = bytes_of(&device.download(&du)?);
    bytes.extend(bytes_of(&device.download(&dfo)?));
    bytes.extend(bytes_of(&device.download(&dho)?));
    out.push(Output {
        name: "mixed_ops".into(),
        bytes,
    });

    let (m, k, l) = (64, 1024, 2);
    let (ta, tb) = gemv_inputs(&mut rng, m, k, l, Inputs::Wide)?;
    let (da, db) = (DeviceNvfp4::upload(device, &ta)?, DeviceNvfp4::upload(device, &tb)?);
    for (ksplit, warps) in [(1, 4), (2, 4), (8, 8)] {
        let cfg = GemvConfig { rows: 4, ksplit, warps };
        let mut c = device.upload(&vec![f16::NAN; m * l])?;
        gemv::gemv_with(device, cfg, &da, &db, &mut c)?;
        out.push(Output {
            name: format!("gemv ksplit={ksplit} warps={warps}"),
            bytes: bytes_of(&device.download(&c)?),
        });
    }
    Ok(out)
}

/// Compares two runs: the kernels whose outputs differ, with the first
/// differing byte.
pub fn differences(a: &[Output], b: &[Output]) -> Vec<String> {
    let mut diffs = Vec::new();
    for (x, y) in a.iter().zip(b) {
        if x.bytes != y.bytes {
            let at = x
                .bytes
                .iter()
                .zip(&y.bytes)
                .position(|(p, q)| p != q)
                .unwrap_or(x.bytes.len().min(y.bytes.len()));
            diffs.push(format!(
                "{}: first difference at byte {at} of {}",
                x.name,
                x.bytes.len()
            ));
        }
    }
    if a.len() != b.len() {
        diffs.push(format!("{} outputs against {}", a.len(), b.len()));
    }
    diffs
}
