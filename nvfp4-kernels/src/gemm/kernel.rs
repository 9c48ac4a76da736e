//! Which GEMM kernel and tiling a call runs: the kernels' choices, and the
//! sm_90a cost model that picks among them.

use super::{BM, sm90};
use nvfp4_dsl::prelude::*;

/// Which kernel computes a GEMM, with its tiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmKernel {
    /// The sm_100a `tcgen05` kernel with tiles of 128 x `bn` (128 or 256).
    Sm100 {
        /// Columns of C (rows of B) per block.
        bn: usize,
    },
    /// The sm_90a `wgmma` kernel: tiles of 128 rows of A x `128 * blocks`
    /// rows of B (`blocks` 1 or 2), K split over `split` blocks (1, 2, 4 or
    /// 8) and their partial sums reduced by a second kernel.
    Sm90 {
        /// m64 blocks of B rows per consumer warpgroup.
        blocks: u32,
        /// Blocks sharing one tile's K.
        split: u32,
    },
    /// The sm_90a stream-K kernel
    /// ([`gemm_nvfp4_sm90_stream`](super::gemm_nvfp4_sm90_stream)): 128 x
    /// 128 tiles, all tiles' K stages of 128 cut evenly over `grid` blocks
    /// (one per multiprocessor is what it is for; at most one per stage of
    /// all tiles), each tile's partial sums added in block order by its
    /// last block. [`GemmKernel::for_device`] does not pick it: on the H100 it
    /// measured slower than the split tilings on every shape tried
    /// (docs/perf.md, entry 18).
    Sm90Stream {
        /// Blocks of the launch.
        grid: u32,
    },
}

impl GemmKernel {
    /// The kernel [`gemm`](super::gemm) uses on `device` for this shape:
    /// the sm_100a kernel with 128-column tiles on compute capability 10.0;
    /// on 9.0 the sm_90a tiling [`sm90_tiling`] predicts fastest. `None` on other
    /// devices (and on the emulator as plain sm_90).
    pub fn for_device(device: &Device, m: usize, n: usize, k: usize, l: usize) -> Option<GemmKernel> {
        match device.compute_capability() {
            (10, 0) => Some(GemmKernel::Sm100 { bn: 128 }),
            // An emulator standing in for plain sm_90 cannot run wgmma.
            (9, 0) if device.as_emulator().is_none_or(|e| e.target() == Target::Sm90a) => {
                let (blocks, split) = sm90_tiling(device.multiprocessors() as usize, m, n, k, l);
                Some(GemmKernel::Sm90 { blocks, split })
            }
            _ => None,
        }
    }

    /// The sm_90a stream-K kernel over every multiprocessor of `device`, or
    /// over one block per (tile, K stage of 128) where that is fewer.
    pub fn stream_k(device: &Device, m: usize, n: usize, k: usize, l: usize) -> GemmKernel {
        let units = l * (m / BM) * (n / 128) * (k / sm90::BK);
        GemmKernel::Sm90Stream {
            grid: device.multiprocessors().min(u32::try_from(units).unwrap_or(u32::MAX)),
        }
    }
}

/// How the sm_90a kernel sums a K split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sm90Reduction {
    /// K is not split.
    None,
    /// The `split` blocks of a tile form a cluster and sum through
    /// distributed shared memory.
    Cluster,
    /// `split` = 4 in clusters of 2: each cluster sums its half of K
    /// through distributed shared memory, and the tile's second cluster to
    /// finish adds the two halves (an atomic counter per tile).
    Pairs,
    /// Every block stores its partial sums and
    /// [`gemm_sm90_reduce`](super::gemm_sm90_reduce), a second kernel, adds
    /// them.
    Kernel,
}

/// How the sm_90a kernel sums a K split over `split` blocks, `blocks` in
/// all: in clusters when they all fit at once (a cluster must fit in one
/// GPC: on the H100 at most 30 clusters of 4 run at once,
/// `cuOccupancyMaxActiveClusters`, 120 of its 132 multiprocessors; clusters
/// of 2 fill them all); a split of 4 that does not fit in clusters of 4 in
/// pairs of clusters of 2; otherwise through the reduction kernel.
pub fn sm90_reduction(sms: usize, blocks: u32, split: u32) -> Sm90Reduction {
    let blocks = blocks as usize;
    match split {
        1 => Sm90Reduction::None,
        2 if blocks <= sms => Sm90Reduction::Cluster,
        4 if blocks / 4 <= sms * 30 / 132 => Sm90Reduction::Cluster,
        4 => Sm90Reduction::Pairs,
        _ => Sm90Reduction::Kernel,
    }
}

/// The sm_90a tiling `(blocks, split)` with the least predicted time on a
/// GPU of `sms` multiprocessors, from a model fitted to the H100 (docs/perf.md
/// entries 7 and 9: a sweep of K at fixed N and tiling, 1 unit about 1
/// µs): a block's K stage of 128 costs 1 unit with 128-row tiles and 1.8
/// with 256-row tiles; a call a fixed 5 units (the decode kernel, the
/// launches, the pipeline's start and end), 8 with K split over a
/// cluster of 2 (6.5 with 128-row tiles, whose blocks swap accumulator
/// halves), 16 over a cluster of 4 (the cluster launch and its reduction),
/// 13 over pairs of clusters of 2 (10.5 with 128-row tiles) and, through
/// the reduction kernel
/// ([`sm90_reduction`]), 7.8 units plus 0.38 per MB of f32 partial sums
/// written and read back (the second kernel included). Blocks run in waves
/// of one per multiprocessor.
pub fn sm90_tiling(sms: usize, m: usize, n: usize, k: usize, l: usize) -> (u32, u32) {
    let stages = (k / sm90::BK).max(1);
    let mut best = (1, 1);
    let mut best_cost = f64::INFINITY;
    for blocks in [1u32, 2] {
        let rows = 128 * blocks as usize;
        if !n.is_multiple_of(rows) {
            continue;
        }
        for split in [1u32, 2, 4, 8] {
            if split as usize > stages {
                continue;
            }
            let blocks_total = (m / BM) * (n / rows) * l * split as usize;
            let fixed = match sm90_reduction(sms, blocks_total as u32, split) {
                Sm90Reduction::None => 5.0,
                Sm90Reduction::Cluster if split == 2 && blocks == 1 => 6.5,
                Sm90Reduction::Cluster if split == 2 => 8.0,
                Sm90Reduction::Cluster => 16.0,
                Sm90Reduction::Pairs if blocks == 1 => 10.5,
                Sm90Reduction::Pairs => 13.0,
                Sm90Reduction::Kernel => 7.8 + 0.38 * (split as usize * m * n * l * 8) as f64 / 1e6,
            };
            let waves = blocks_total.div_ceil(sms.max(1));
            let per_stage = if blocks == 2 { 1.8 } else { 1.0 };
            let cost = (waves * stages.div_ceil(split as usize)) as f64 * per_stage + fixed;
            if cost < best_cost {
                best = (blocks, split);
                best_cost = cost;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::super::{BENCH_SHAPES, TEST_SHAPES};
    use super::*;

    #[test]
    fn the_sm90_tiling_is_the_fastest_measured_on_the_benchmark_shapes() {
        // The fastest of the eight tilings measured on the H100 (132
        // multiprocessors) for each benchmark shape: 128-row tiles in
        // clusters of 2 (within 1% of 256-row tiles in clusters of 4, in
        // either order over three runs), split 4 in pairs of clusters of 2
        // (32 clusters of 4 would not fit at once), in clusters of 2.
        let fastest = [(1, 2), (1, 4), (1, 2)];
        for ((m, n, k), want) in BENCH_SHAPES.into_iter().zip(fastest) {
            assert_eq!(sm90_tiling(132, m, n, k, 1), want, "M={m} N={n} K={k}");
        }
    }

    #[test]
    fn clusters_are_used_only_where_they_all_fit_at_once() {
        use Sm90Reduction::*;
        assert_eq!(sm90_reduction(132, 112, 4), Cluster);
        assert_eq!(sm90_reduction(132, 128, 4), Pairs);
        assert_eq!(sm90_reduction(132, 132, 2), Cluster);
        assert_eq!(sm90_reduction(132, 134, 2), Kernel);
        assert_eq!(sm90_reduction(132, 8, 8), Kernel);
        assert_eq!(sm90_reduction(132, 64, 1), None);
    }

    #[test]
    fn the_sm90_tiling_never_splits_k_finer_than_its_stages_or_tiles_n_unevenly() {
        for (m, n, k, l) in TEST_SHAPES
            .into_iter()
            .chain(BENCH_SHAPES.map(|(m, n, k)| (m, n, k, 1)))
        {
            for sms in [1, 8, 114, 132] {
                let (blocks, split) = sm90_tiling(sms, m, n, k, l);
                assert!(split as usize <= k / sm90::BK, "{m}x{n}x{k}: split {split}");
                assert!(n.is_multiple_of(128 * blocks as usize), "{m}x{n}x{k}: blocks {blocks}");
            }
        }
    }
}
