//! How a kernel is launched: its grid, block, shared memory and cluster
//! ([`LaunchConfig`]), and the 2-D tensor maps of bulk tensor copies
//! ([`TileMap2d`]).

use super::*;

/// A 2-D tensor of bytes as a bulk tensor copy sees it: `rows` rows of
/// `row_bytes` bytes, `row_stride` bytes apart, copied in boxes of
/// `box_rows` rows x `box_bytes` bytes, written to shared memory with
/// `swizzle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileMap2d {
    /// Bytes per row (the innermost dimension).
    pub row_bytes: u64,
    /// Rows.
    pub rows: u64,
    /// Bytes between consecutive rows (a multiple of 16).
    pub row_stride: u64,
    /// Bytes per row of a box (at most 256; at most the swizzle span).
    pub box_bytes: u32,
    /// Rows per box (at most 256).
    pub box_rows: u32,
    /// The shared-memory swizzle.
    pub swizzle: crate::types::Swizzle,
}

impl TileMap2d {
    /// Checks the rules the driver checks, against a buffer of `buffer_bytes`.
    pub(super) fn validate(&self, buffer_bytes: u64) -> Result<()> {
        let span = match self.swizzle {
            crate::types::Swizzle::None => 256,
            crate::types::Swizzle::B32 => 32,
            crate::types::Swizzle::B64 => 64,
            crate::types::Swizzle::B128 => 128,
        };
        let bad = |why: String| Err(Error::InvalidLaunch(format!("tensor map {self:?}: {why}")));
        if self.row_bytes == 0 || self.rows == 0 || self.box_bytes == 0 || self.box_rows == 0 {
            return bad("every dimension must be positive".into());
        }
        if self.box_bytes > span || self.box_rows > 256 || !self.box_bytes.is_multiple_of(16) {
            return bad(format!(
                "a box row must be a multiple of 16 bytes, at most {span}, with at most 256 rows"
            ));
        }
        if !self.row_stride.is_multiple_of(16) || self.row_stride < self.row_bytes {
            return bad("the row stride must be a multiple of 16 and at least a row".into());
        }
        if (self.rows - 1) * self.row_stride + self.row_bytes > buffer_bytes {
            return bad(format!("the tensor needs more than the buffer's {buffer_bytes} bytes"));
        }
        Ok(())
    }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z); at most 1024 in all.
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block (`dynamic_shared`).
    pub shared_bytes: u32,
    /// Blocks per thread-block cluster (x, y, z); `(1, 1, 1)` for none.
    /// The grid must be a multiple of it, and a cluster has at most 8
    /// blocks (sm_90 and newer).
    pub cluster: (u32, u32, u32),
    /// Whether a kernel that waits for its predecessor in the stream
    /// (`grid_dependency_wait()`) is launched as a programmatic dependent
    /// of it, so that it may start before the predecessor is complete
    /// (the default), or starts once it is, like any other launch.
    pub programmatic: bool,
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` threads, no dynamic shared
    /// memory, no clusters.
    pub fn new(grid: (u32, u32, u32), block: (u32, u32, u32)) -> LaunchConfig {
        LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
            cluster: (1, 1, 1),
            programmatic: true,
        }
    }

    /// A 1-D launch of `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig::new((grid, 1, 1), (block, 1, 1))
    }

    /// The same launch with `bytes` of dynamic shared memory.
    pub fn with_shared_bytes(self, bytes: u32) -> LaunchConfig {
        LaunchConfig {
            shared_bytes: bytes,
            ..self
        }
    }

    /// The same launch in clusters of `blocks` (x, y, z) blocks, which run
    /// at the same time and can read each other's shared memory
    /// ([`load_cluster`](crate::intrinsics::load_cluster)).
    pub fn with_cluster(self, blocks: (u32, u32, u32)) -> LaunchConfig {
        LaunchConfig {
            cluster: blocks,
            ..self
        }
    }

    /// The same launch, as a programmatic dependent of the kernel before it
    /// (`on`, the default for a kernel that waits for it) or not (it then
    /// starts once that kernel is complete: where its blocks, all waiting
    /// first, would only sit on the multiprocessors the kernel before
    /// leaves idle).
    pub fn with_programmatic_launch(self, on: bool) -> LaunchConfig {
        LaunchConfig {
            programmatic: on,
            ..self
        }
    }

    /// Whether `variant` goes out as a programmatic dependent launch: it
    /// waits for its predecessor and this launch allows it.
    pub(super) fn programmatic_launch(&self, variant: &crate::Variant) -> bool {
        variant.programmatic && self.programmatic
    }

    /// Blocks per cluster.
    pub fn cluster_blocks(&self) -> u32 {
        self.cluster.0 * self.cluster.1 * self.cluster.2
    }

    pub(super) fn validate(&self) -> Result<()> {
        let (bx, by, bz) = self.block;
        let (gx, gy, gz) = self.grid;
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        if threads == 0 || threads > 1024 {
            return Err(Error::InvalidLaunch(format!(
                "a block has {threads} threads; it must have 1..=1024"
            )));
        }
        if gx == 0 || gy == 0 || gz == 0 {
            return Err(Error::InvalidLaunch("a grid dimension is 0".into()));
        }
        if gy > 65535 || gz > 65535 || bz > 64 {
            return Err(Error::InvalidLaunch(
                "grid y and z are limited to 65535 and block z to 64".into(),
            ));
        }
        let (cx, cy, cz) = self.cluster;
        let blocks = u64::from(cx) * u64::from(cy) * u64::from(cz);
        if blocks == 0 || blocks > 8 || gx % cx != 0 || gy % cy != 0 || gz % cz != 0 {
            return Err(Error::InvalidLaunch(format!(
                "clusters of {:?} blocks: a cluster has 1 to 8 blocks and the grid {:?} must be a multiple of it",
                self.cluster, self.grid
            )));
        }
        Ok(())
    }
}
