//! A struct kernel parameter with fields of every size and alignment, and
//! the kernel that reads it back: `tests/methods.rs` runs it on the
//! emulator, `tests/gpu/` on a GPU.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{E4m3, f16, f16x2, u32x4};
use nvfp4_kernels::rng::Rng;

/// A struct parameter with fields of many sizes and alignments, padding
/// between them and at the end.
#[device]
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub flag: bool,
    pub scale: f64,
    pub small: u8,
    pub half: f16,
    pub count: u32,
    pub words: [u16; 3],
    pub vector: u32x4,
    pub code: E4m3,
    pub pair: f16x2,
    pub wide: i64,
    pub signed: i32,
    pub flags: [bool; 3],
}

/// Every field's bits, as the kernel read them.
#[kernel(targets(sm_90, sm_100a))]
pub fn struct_parameter(p: Params, out: &mut [u32]) {
    out[0] = u32::from(p.flag);
    out[1] = p.scale.to_bits() as u32;
    out[2] = (p.scale.to_bits() >> 32) as u32;
    out[3] = u32::from(p.small);
    out[4] = u32::from(p.half.to_bits());
    out[5] = p.count;
    out[6] = u32::from(p.words[0]);
    out[7] = u32::from(p.words[1]);
    out[8] = u32::from(p.words[2]);
    out[9] = p.vector.x;
    out[10] = p.vector.y;
    out[11] = p.vector.z;
    out[12] = p.vector.w;
    out[13] = p.code.to_f32().to_bits();
    out[14] = p.pair.to_bits();
    out[15] = p.wide as u32;
    out[16] = (p.wide >> 32) as u32;
    out[17] = p.signed as u32;
    out[18] = u32::from(p.flags[0]) | u32::from(p.flags[1]) << 1 | u32::from(p.flags[2]) << 2;
}

/// What `struct_parameter` writes for `p`, computed on the host.
pub fn params_bits(p: &Params) -> Vec<u32> {
    vec![
        u32::from(p.flag),
        p.scale.to_bits() as u32,
        (p.scale.to_bits() >> 32) as u32,
        u32::from(p.small),
        u32::from(p.half.to_bits()),
        p.count,
        u32::from(p.words[0]),
        u32::from(p.words[1]),
        u32::from(p.words[2]),
        p.vector.x,
        p.vector.y,
        p.vector.z,
        p.vector.w,
        p.code.to_f32().to_bits(),
        p.pair.to_bits(),
        p.wide as u32,
        (p.wide >> 32) as u32,
        p.signed as u32,
        u32::from(p.flags[0]) | u32::from(p.flags[1]) << 1 | u32::from(p.flags[2]) << 2,
    ]
}

impl Params {
    /// Random fields (the E4m3 code not a NaN, whose payload the
    /// conversion may change).
    pub fn random(rng: &mut Rng) -> Params {
        Params {
            flag: rng.below(2) == 1,
            scale: f64::from_bits(rng.next_u64()),
            small: rng.next_u32() as u8,
            half: f16::from_bits(rng.next_u32() as u16),
            count: rng.next_u32(),
            words: [rng.next_u32() as u16, rng.next_u32() as u16, rng.next_u32() as u16],
            vector: u32x4::new(rng.next_u32(), rng.next_u32(), rng.next_u32(), rng.next_u32()),
            code: E4m3::from_bits(rng.below(0x7F) as u8 | (rng.below(2) as u8) << 7),
            pair: f16x2::from_bits(rng.next_u32()),
            wide: rng.next_u64() as i64,
            signed: rng.next_u32() as i32,
            flags: [rng.below(2) == 1, rng.below(2) == 1, rng.below(2) == 1],
        }
    }
}

/// The words `struct_parameter` writes for `p` on `device` (poisoned first).
pub fn read_params(device: &Device, p: Params) -> Vec<u32> {
    let mut out = device.upload(&[0xDEAD_BEEFu32; 19]).expect("upload");
    // SAFETY: one thread writes 19 words.
    unsafe { struct_parameter::Kernel::launch(device, LaunchConfig::linear(1, 1), p, &mut out) }.expect("launch");
    device.download(&out).expect("download")
}
