//! What a launch is: its shape (`Launch`), its arguments (`ParamValue`)
//! and what it did (`LaunchStats`).

/// The shape of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in the grid, `(x, y, z)`.
    pub grid: (u32, u32, u32),
    /// Threads in a block, `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory (the `.extern .shared` block).
    pub shared_bytes: u32,
    /// Blocks in a thread-block cluster, `(x, y, z)`: every dimension of
    /// the grid must be a multiple of it, and a cluster has at most 16
    /// blocks. `(1, 1, 1)` launches without clusters (each block is a
    /// cluster of one).
    pub cluster: (u32, u32, u32),
}

impl Launch {
    /// A launch of `grid` blocks of `block` threads with `shared_bytes` of
    /// dynamic shared memory, without clusters.
    pub fn new(grid: (u32, u32, u32), block: (u32, u32, u32), shared_bytes: u32) -> Launch {
        Launch {
            grid,
            block,
            shared_bytes,
            cluster: (1, 1, 1),
        }
    }
}

/// One kernel argument, in `.param` order. Its size must match the
/// parameter's declaration (`B128` for `.param .align 16 .b8 x[16]`,
/// `Bytes` of the right length for any other byte array, such as a
/// 128-byte tensor map from [`TensorMap2d::encode`](super::TensorMap2d::encode)).
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// A `.u8`/`.s8`/`.b8` parameter.
    U8(u8),
    /// A 16-bit parameter.
    U16(u16),
    /// A 32-bit integer parameter.
    U32(u32),
    /// A 64-bit parameter (pointers and slice lengths).
    U64(u64),
    /// An `.f32` parameter.
    F32(f32),
    /// An `.f64` parameter.
    F64(f64),
    /// A 16-byte parameter (`u32x4`).
    B128([u8; 16]),
    /// Raw bytes, for a parameter of exactly that many bytes (a
    /// `.param .align 64 .b8 map[128]` tensor map, for instance).
    Bytes(Vec<u8>),
}

impl ParamValue {
    pub(super) fn bytes(&self) -> Vec<u8> {
        match *self {
            ParamValue::U8(v) => vec![v],
            ParamValue::U16(v) => v.to_le_bytes().to_vec(),
            ParamValue::U32(v) => v.to_le_bytes().to_vec(),
            ParamValue::U64(v) => v.to_le_bytes().to_vec(),
            ParamValue::F32(v) => v.to_le_bytes().to_vec(),
            ParamValue::F64(v) => v.to_le_bytes().to_vec(),
            ParamValue::B128(v) => v.to_vec(),
            ParamValue::Bytes(ref v) => v.clone(),
        }
    }
}

/// What a launch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Instructions issued, counted once per thread of the issuing group
    /// (predicated-off threads included).
    pub thread_instructions: u64,
    /// Instructions issued, counted once per warp.
    pub warp_instructions: u64,
    /// Blocks run.
    pub blocks: u64,
    /// Threads run.
    pub threads: u64,
}
