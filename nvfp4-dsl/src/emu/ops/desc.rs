//! Shared-memory matrix descriptors: the 64-bit words through which the
//! tensor cores read a K-major operand from shared memory, their sm_100
//! (`tcgen05`) encoding, and the addressing of the operand.
//!
//! A K-major operand is a matrix of rows of 32 bytes (16 f16/bf16 values,
//! 64 E2M1 values) stored in 8-row groups `SBO` bytes apart. Without a
//! swizzle, a group is two "core matrices" of 8 rows x 16 bytes, `LBO`
//! bytes apart, each row 16 bytes after the previous. With a swizzle of
//! span `S` (32, 64 or 128 bytes), row `r % 8` of a group starts `S * (r %
//! 8)` bytes into it and its 16-byte chunks are permuted by the XOR of the
//! absolute shared address that tensor copies apply (`tensormap::swizzle`);
//! `LBO` is not used.

use crate::emu::tensormap::swizzle;

/// A decoded shared-memory matrix descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SmemDesc {
    pub start: u32,
    pub lbo: u32,
    pub sbo: u32,
    /// Swizzle span in bytes (0: none).
    pub swizzle: u32,
}

impl SmemDesc {
    /// The start address, LBO and SBO fields (bits 0..14, 16..30 and
    /// 32..46, each in units of 16 bytes).
    fn fields(bits: u64, swizzle: u32) -> SmemDesc {
        SmemDesc {
            start: ((bits & 0x3FFF) << 4) as u32,
            lbo: (((bits >> 16) & 0x3FFF) << 4) as u32,
            sbo: (((bits >> 32) & 0x3FFF) << 4) as u32,
            swizzle,
        }
    }

    /// Decodes and checks an sm_100 (`tcgen05`) descriptor (`what` names
    /// the operand).
    pub(crate) fn sm100(bits: u64, what: &str) -> Result<SmemDesc, String> {
        let bad = |m: String| Err(format!("{what} shared-memory descriptor {bits:#018x}: {m}"));
        if (bits >> 46) & 7 != 1 {
            return bad(format!("bits 46..49 are {:#b}, must be 0b001", (bits >> 46) & 7));
        }
        let base = (bits >> 49) & 7;
        if base != 0 {
            return bad(format!("matrix base offset {base} is not supported (only 0)"));
        }
        if bits >> 52 & 1 != 0 {
            return bad("the absolute leading-byte-offset mode (bit 52) is not supported".into());
        }
        let reserved = bits & (0xC000 | (0xC000 << 16) | (0xFF << 53));
        if reserved != 0 {
            return bad(format!("reserved bits set ({reserved:#x})"));
        }
        let swizzle = match bits >> 61 {
            0 => 0,
            2 => 128,
            4 => 64,
            6 => 32,
            1 => return bad("128-byte swizzle with 32-byte atoms (mode 1) is unsupported".into()),
            s => return bad(format!("swizzle mode {s} is not a valid layout")),
        };
        Ok(SmemDesc::fields(bits, swizzle))
    }

    /// The shared address of bytes `16 * half .. 16 * half + 16` of row
    /// `r` of a K-major operand (32 bytes per row); swizzling only
    /// permutes 16-byte chunks, so they stay contiguous.
    pub(crate) fn chunk(&self, r: u32, half: u32) -> u32 {
        let kb = 16 * half;
        if self.swizzle == 0 {
            self.start + (r / 8) * self.sbo + (kb / 16) * self.lbo + (r % 8) * 16
        } else {
            let a = self.start + (r / 8) * self.sbo + (r % 8) * self.swizzle + kb;
            swizzle(a, self.swizzle)
        }
    }
}
