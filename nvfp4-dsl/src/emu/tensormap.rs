//! The emulator's tensor maps: what `cp.async.bulk.tensor.2d` reads at
//! the map address instead of a driver-encoded `CUtensorMap`.

/// The first 8 bytes of an encoded map.
const MAGIC: &[u8; 8] = b"NVFP4EMU";

/// A 2-D tiled tensor map of bytes (the `CU_TENSOR_MAP_DATA_TYPE_UINT8`
/// maps the kernels use), in the emulator's own 128-byte encoding: pass
/// [`encode`](TensorMap2d::encode)'s bytes where a kernel takes a
/// `CUtensorMap` (`ParamValue::Bytes` for a `.param .align 64 .b8 m[128]`,
/// or in global memory).
///
/// A tensor copy with coordinates `{c0, c1}` reads the box of `box_rows`
/// rows of `box_bytes` bytes whose first byte is byte `c0` of row `c1`;
/// bytes outside the tensor (`c0 + j >= row_bytes` or a row `>= rows`, or
/// negative coordinates) read as zero, as the hardware's out-of-bounds fill.
/// Box row `i`, byte `j` lands at shared offset `i * box_bytes + j` from
/// the destination, with the swizzle applied to the absolute shared
/// address (128-byte: `a ^ (((a >> 7) & 7) << 4)`; 64-byte: `& 3`;
/// 32-byte: `& 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap2d {
    /// Device address of byte 0 of row 0 (16-byte aligned).
    pub base: u64,
    /// Bytes per row (the innermost dimension).
    pub row_bytes: u64,
    /// Rows.
    pub rows: u64,
    /// Bytes from one row to the next (a multiple of 16).
    pub row_stride: u64,
    /// Box width in bytes (a multiple of 16, at most 256, and at most the
    /// swizzle span when swizzled).
    pub box_bytes: u32,
    /// Box height in rows (1..=256).
    pub box_rows: u32,
    /// Swizzle span in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u8,
}

impl TensorMap2d {
    /// The 128-byte encoding: `b"NVFP4EMU"`, then `base`, `row_bytes`,
    /// `rows`, `row_stride` (u64), `box_bytes`, `box_rows` (u32) and
    /// `swizzle` (u8), little-endian; the rest is zero.
    pub fn encode(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&self.base.to_le_bytes());
        b[16..24].copy_from_slice(&self.row_bytes.to_le_bytes());
        b[24..32].copy_from_slice(&self.rows.to_le_bytes());
        b[32..40].copy_from_slice(&self.row_stride.to_le_bytes());
        b[40..44].copy_from_slice(&self.box_bytes.to_le_bytes());
        b[44..48].copy_from_slice(&self.box_rows.to_le_bytes());
        b[48] = self.swizzle;
        b
    }

    /// Reads an [`encode`](TensorMap2d::encode)d map back; `None` if the
    /// bytes are not one (no magic, or nonzero padding).
    pub fn decode(bytes: &[u8; 128]) -> Option<TensorMap2d> {
        if &bytes[..8] != MAGIC || bytes[49..].iter().any(|&b| b != 0) {
            return None;
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        Some(TensorMap2d {
            base: u64_at(8),
            row_bytes: u64_at(16),
            rows: u64_at(24),
            row_stride: u64_at(32),
            box_bytes: u32_at(40),
            box_rows: u32_at(44),
            swizzle: bytes[48],
        })
    }

    /// Checks the map against the rules of `cuTensorMapEncodeTiled`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let bad = |m: String| Err(format!("invalid tensor map {self:?}: {m}"));
        if !self.base.is_multiple_of(16) {
            return bad("the base address must be 16-byte aligned".into());
        }
        if self.row_bytes == 0 || self.rows == 0 || self.row_bytes > 1 << 32 || self.rows > 1 << 32 {
            return bad("row_bytes and rows must be in 1..=2^32".into());
        }
        if !self.row_stride.is_multiple_of(16) || self.row_stride >= 1 << 40 {
            return bad("row_stride must be a multiple of 16 below 2^40".into());
        }
        if self.box_bytes == 0 || !self.box_bytes.is_multiple_of(16) || self.box_bytes > 256 {
            return bad("box_bytes must be a multiple of 16 in 16..=256".into());
        }
        if self.box_rows == 0 || self.box_rows > 256 {
            return bad("box_rows must be in 1..=256".into());
        }
        match self.swizzle {
            0 => {}
            32 | 64 | 128 if self.box_bytes <= u32::from(self.swizzle) => {}
            32 | 64 | 128 => {
                return bad(format!(
                    "a {}-byte swizzle needs box_bytes <= {}",
                    self.swizzle, self.swizzle
                ));
            }
            s => return bad(format!("swizzle {s} is not 0, 32, 64 or 128")),
        }
        Ok(())
    }
}

/// The swizzled shared address of linear address `a` for a swizzle span
/// (0, 32, 64, 128 bytes): bits 4.. of the 16-byte chunk index within a
/// span are XORed with the row bits 7.. of the address.
#[inline]
pub(crate) fn swizzle(a: u32, span: u32) -> u32 {
    let mask = match span {
        128 => 7,
        64 => 3,
        32 => 1,
        _ => 0,
    };
    a ^ (((a >> 7) & mask) << 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_decodes_and_validates() {
        let m = TensorMap2d {
            base: 0x7f00_0000_0100,
            row_bytes: 1152,
            rows: 256,
            row_stride: 1152,
            box_bytes: 128,
            box_rows: 128,
            swizzle: 128,
        };
        let b = m.encode();
        assert_eq!(&b[..8], b"NVFP4EMU");
        assert_eq!(TensorMap2d::decode(&b), Some(m));
        m.validate().unwrap();
        let mut junk = b;
        junk[0] = b'X';
        assert_eq!(TensorMap2d::decode(&junk), None);
        assert!(
            TensorMap2d { swizzle: 64, ..m }
                .validate()
                .unwrap_err()
                .contains("box_bytes <= 64")
        );
        assert!(TensorMap2d { base: 8, ..m }.validate().is_err());
        assert!(TensorMap2d { box_rows: 257, ..m }.validate().is_err());
        assert!(TensorMap2d { swizzle: 16, ..m }.validate().is_err());
        assert_eq!(swizzle(0x800 + 0x180 + 0x10, 128), 0x800 + 0x180 + 0x20);
        assert_eq!(swizzle(0x800 + 0x380, 64), 0x800 + 0x380 + 0x30);
        assert_eq!(swizzle(0x80, 32), 0x90);
        assert_eq!(swizzle(0x80, 0), 0x80);
    }
}
