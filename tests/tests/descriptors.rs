//! The compiler's descriptor builders against the runtime types: a kernel
//! builds `SmemDesc`, `WgmmaDesc` (every `Swizzle`) and `InstrDesc` from
//! run-time fields on the emulator, and every result must be the bits the
//! host-side `nvfp4_dsl` types compute, for every value of every field
//! (the other fields random, bits outside each field's range included), so
//! that the two implementations cannot drift apart.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, InstrDesc, LaunchConfig, SmemDesc, Swizzle, Target, WgmmaDesc};
use nvfp4_kernels::rng::Rng;

/// Descriptors per case: no swizzle set, each swizzle, and an offset one.
const PER_CASE: usize = 6;

/// Per case `[start, lbo, sbo, base | offset << 8]`: the `SmemDesc` and
/// `WgmmaDesc` bits built from those fields, and `InstrDesc::mxf4nvf4(start,
/// lbo)`.
#[kernel(targets(sm_90))]
pub fn descriptor_bits(fields: &[u32x4], smem: &mut [u64], wgmma: &mut [u64], idesc: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i >= fields.len() {
        return;
    }
    let f = fields[i];
    let o = 6 * i;
    let s = SmemDesc::new(f.x)
        .with_leading_byte_offset(f.y)
        .with_stride_byte_offset(f.z)
        .with_base_offset(f.w & 0xFF);
    smem[o] = s.bits();
    smem[o + 1] = s.with_swizzle(Swizzle::None).bits();
    smem[o + 2] = s.with_swizzle(Swizzle::B32).bits();
    smem[o + 3] = s.with_swizzle(Swizzle::B64).bits();
    smem[o + 4] = s.with_swizzle(Swizzle::B128).bits();
    smem[o + 5] = s.with_swizzle(Swizzle::B128).offset(f.w >> 8).bits();
    let w = WgmmaDesc::new(f.x)
        .with_leading_byte_offset(f.y)
        .with_stride_byte_offset(f.z)
        .with_base_offset(f.w & 0xFF);
    wgmma[o] = w.bits();
    wgmma[o + 1] = w.with_swizzle(Swizzle::None).bits();
    wgmma[o + 2] = w.with_swizzle(Swizzle::B32).bits();
    wgmma[o + 3] = w.with_swizzle(Swizzle::B64).bits();
    wgmma[o + 4] = w.with_swizzle(Swizzle::B128).bits();
    wgmma[o + 5] = w.with_swizzle(Swizzle::B128).offset(f.w >> 8).bits();
    idesc[i] = InstrDesc::mxf4nvf4(f.x, f.y).bits();
}

/// The cases: each field (start address, LBO, SBO: all 2^14 values of
/// their 14-bit fields; base offset: every value of its byte) walks its
/// range with random low bits (below the 16-byte granule) and high bits
/// (beyond the field) while the others are random; then M and N of the
/// instruction descriptor over every value of their fields.
fn cases() -> Vec<[u32; 4]> {
    let mut rng = Rng::new(17);
    let field = |rng: &mut Rng, v: u32| (v << 4) | (rng.next_u32() & 0xF) | (rng.next_u32() & !0x3_FFFF);
    let mut out = Vec::new();
    for v in 0..1 << 14 {
        for k in 0..3 {
            let mut c = [0u32; 4].map(|_| rng.next_u32());
            c[3] &= 0xFFFF_FF07;
            c[k] = field(&mut rng, v);
            out.push(c);
        }
    }
    for base in 0..256 {
        let offset = rng.next_u32() & 0x00FF_FFF0;
        out.push([rng.next_u32(), rng.next_u32(), rng.next_u32(), (offset << 8) | base]);
    }
    for m in 0..8u32 {
        for n in 0..512u32 {
            out.push([(m << 7) | (rng.next_u32() & 0x7F), n, 0, 0]);
        }
    }
    out
}

#[test]
fn descriptor_builders_match_the_runtime_types_over_every_field_value() {
    let cases = cases();
    let device = Device::emulator(Target::Sm90);
    let fields: Vec<u32x4> = cases.iter().map(|c| u32x4::new(c[0], c[1], c[2], c[3])).collect();
    let fields = device.upload(&fields).expect("upload");
    let mut smem = device.upload(&vec![u64::MAX; PER_CASE * cases.len()]).expect("upload");
    let mut wgmma = device.upload(&vec![u64::MAX; PER_CASE * cases.len()]).expect("upload");
    let mut idesc = device.upload(&vec![u32::MAX; cases.len()]).expect("upload");
    let blocks = cases.len().div_ceil(256) as u32;
    // SAFETY: one thread per case; each writes its own 6, 6 and 1 values.
    unsafe {
        descriptor_bits::Kernel::launch(
            &device,
            LaunchConfig::linear(blocks, 256),
            &fields,
            &mut smem,
            &mut wgmma,
            &mut idesc,
        )
        .expect("launch");
    }
    let (smem, wgmma, idesc) = (
        device.download(&smem).expect("download"),
        device.download(&wgmma).expect("download"),
        device.download(&idesc).expect("download"),
    );
    let swizzles = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];
    for (i, &[start, lbo, sbo, w]) in cases.iter().enumerate() {
        let s = SmemDesc::new(start)
            .with_leading_byte_offset(lbo)
            .with_stride_byte_offset(sbo)
            .with_base_offset(w & 0xFF);
        let mut want_s = vec![s.bits()];
        want_s.extend(swizzles.map(|z| s.with_swizzle(z).bits()));
        want_s.push(s.with_swizzle(Swizzle::B128).offset(w >> 8).bits());
        assert_eq!(
            smem[PER_CASE * i..PER_CASE * (i + 1)],
            want_s,
            "SmemDesc, case {:?}",
            cases[i]
        );
        let g = WgmmaDesc::new(start)
            .with_leading_byte_offset(lbo)
            .with_stride_byte_offset(sbo)
            .with_base_offset(w & 0xFF);
        let mut want_g = vec![g.bits()];
        want_g.extend(swizzles.map(|z| g.with_swizzle(z).bits()));
        want_g.push(g.with_swizzle(Swizzle::B128).offset(w >> 8).bits());
        assert_eq!(
            wgmma[PER_CASE * i..PER_CASE * (i + 1)],
            want_g,
            "WgmmaDesc, case {:?}",
            cases[i]
        );
        assert_eq!(
            idesc[i],
            InstrDesc::mxf4nvf4(start, lbo).bits(),
            "InstrDesc, case {:?}",
            cases[i]
        );
    }
}
