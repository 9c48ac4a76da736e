//! Shared-memory matrix descriptors: the 64-bit words through which the
//! tensor cores read a K-major operand from shared memory, in their sm_90
//! (`wgmma`) and sm_100 (`tcgen05`) encodings, and the addressing both
//! share.
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
    /// 32..46, each in units of 16 bytes), common to both encodings.
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

    /// Decodes and checks an sm_90 (`wgmma`) descriptor: bits 49..52 the
    /// matrix base offset (only 0 is supported), 62..64 the layout (0 no
    /// swizzle, 1 128-byte, 2 64-byte, 3 32-byte swizzle); every other bit
    /// outside the address fields must be zero.
    pub(crate) fn sm90(bits: u64, what: &str) -> Result<SmemDesc, String> {
        let bad = |m: String| Err(format!("{what} shared-memory descriptor {bits:#018x}: {m}"));
        let reserved = [(14, 16), (30, 32), (46, 49), (52, 62)];
        let set: Vec<String> = reserved
            .iter()
            .filter(|&&(lo, hi)| bits >> lo & ((1 << (hi - lo)) - 1) != 0)
            .map(|(lo, hi)| format!("{lo}..{hi}"))
            .collect();
        if !set.is_empty() {
            let hint = if bits >> 46 & 7 == 1 {
                " (0b001 at bits 46..49 is the sm_100 tcgen05 encoding; wgmma descriptors have none)"
            } else {
                ""
            };
            return bad(format!("reserved bits {} are set{hint}", set.join(", ")));
        }
        let base = (bits >> 49) & 7;
        if base != 0 {
            return bad(format!(
                "matrix base offset {base} (bits 49..52) is not supported (only 0)"
            ));
        }
        let swizzle = [0, 128, 64, 32][(bits >> 62) as usize];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm90_descriptors_decode_and_address() {
        // The layout checked on an H100: 128-byte swizzle, SBO 1024, LBO
        // field 1, a K step of 16 elements = start + 32 bytes.
        let bits = (1u64 << 62) | (64u64 << 32) | (1 << 16) | (0x2400 >> 4);
        let d = SmemDesc::sm90(bits, "B").unwrap();
        assert_eq!(
            d,
            SmemDesc {
                start: 0x2400,
                lbo: 16,
                sbo: 1024,
                swizzle: 128
            }
        );
        // Row 9 (group 1, row 1): 0x2400 + 1024 + 128, its second chunk
        // XORed with row bits 1.
        assert_eq!(d.chunk(9, 0), 0x2400 + 1024 + 128 + 16);
        assert_eq!(d.chunk(9, 1), 0x2400 + 1024 + 128);
        let k1 = SmemDesc::sm90(bits + 2, "B").unwrap();
        assert_eq!(k1.chunk(9, 0), (0x2400 + 1024 + 128 + 32) ^ 16);
        for (code, span) in [(0u64, 0), (2, 64), (3, 32)] {
            assert_eq!(SmemDesc::sm90((code << 62) | 0x40, "A").unwrap().swizzle, span);
        }
        let none = SmemDesc::sm90((8 << 16) | (16 << 32) | 0x40, "A").unwrap();
        assert_eq!(
            (none.chunk(10, 1), none.chunk(3, 0)),
            (0x400 + 256 + 128 + 32, 0x400 + 48)
        );
        for (b, msg) in [
            (1u64 << 46, "reserved bits 46..49 are set (0b001"),
            (1 << 15, "reserved bits 14..16"),
            ((1 << 31) | (1 << 55), "reserved bits 30..32, 52..62"),
            (2 << 49, "matrix base offset 2"),
        ] {
            let e = SmemDesc::sm90(b, "B").unwrap_err();
            assert!(e.contains(msg) && e.starts_with("B shared-memory descriptor"), "{e}");
        }
    }
}
