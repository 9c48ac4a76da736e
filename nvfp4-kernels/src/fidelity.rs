//! Runs every kernel of the project that has sm_90 code on fixed random
//! inputs and returns the raw bytes of their outputs, so two devices (the
//! H100 and the emulator) can be compared bit for bit.

use crate::Error;
use crate::gemv::{self, DeviceNvfp4, GemvConfig};
use crate::nvfp4::{Inputs, gemv_inputs};
use crate::rng::Rng;
use crate::samples::{self, bytes_of};
use nvfp4_dsl::prelude::*;

/// One kernel's output on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The kernel and its specialisation.
    pub name: String,
    /// The output buffers' bytes, concatenated.
    pub bytes: Vec<u8>,
}

/// Runs the decode kernel, the sample kernels (checked against the CPU on
/// the way) and every GEMV variant on inputs drawn from `seed` (the same on
/// every device) at sizes small enough for the emulator.
pub fn run_all(device: &Device, seed: u64) -> Result<Vec<Output>, Error> {
    let decoded = crate::decode::decode_every_byte(device)?;
    let mut out = vec![Output {
        name: "decode_all".into(),
        bytes: [
            bytes_of(&decoded.fp4),
            bytes_of(&decoded.fp8),
            bytes_of(&decoded.fp8x2),
            bytes_of(&decoded.x8),
            bytes_of(&decoded.x8_scaled),
        ]
        .concat(),
    }];

    for r in samples::check_all(device, seed, true)? {
        out.push(Output {
            name: format!("{} ({})", r.name, r.what),
            bytes: r.output,
        });
    }

    let mut rng = Rng::new(seed);
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
