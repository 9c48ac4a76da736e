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
    /// last block. [`sm90_kernel`] picks it over every multiprocessor where
    /// the tiles leave the last of several waves part-empty, and as a
    /// persistent kernel of whole tiles ([`sm90_persistent_grid`]);
    /// elsewhere cutting tiles measured slower than the split tilings on
    /// the H100 (docs/perf.md, entries 18 to 20).
    Sm90Stream {
        /// Blocks of the launch.
        grid: u32,
    },
}

impl GemmKernel {
    /// The kernel [`gemm`](super::gemm) uses on `device` for this shape:
    /// the sm_100a kernel with 128-column tiles on compute capability 10.0;
    /// on 9.0 the one [`sm90_kernel`] picks for the device's
    /// multiprocessors. `None` on other devices (and on the emulator as
    /// plain sm_90).
    pub fn for_device(device: &Device, m: usize, n: usize, k: usize, l: usize) -> Option<GemmKernel> {
        match device.compute_capability() {
            (10, 0) => Some(GemmKernel::Sm100 { bn: 128 }),
            // An emulator standing in for plain sm_90 cannot run wgmma.
            (9, 0) if device.as_emulator().is_none_or(|e| e.target() == Target::Sm90a) => {
                Some(sm90_kernel(device.multiprocessors() as usize, m, n, k, l))
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

/// How many K stages of 128 fewer than the waves of whole tiles a block of
/// the stream-K kernel must take before it is the faster: what it adds (the
/// partial tiles handed over through L2, the tiles' last blocks adding
/// them) costs about 11 stages on the H100 (docs/perf.md entry 20).
const STREAM_K_OVERHEAD_STAGES: usize = 11;

/// The sm_90a kernel for this shape on a GPU of `sms` multiprocessors, from
/// what the H100 measured (docs/perf.md entries 19 and 20): where 128 x 128
/// tiles come in more than one wave, the stream-K kernel over every
/// multiprocessor when a block of it takes more than
/// `STREAM_K_OVERHEAD_STAGES` (11) fewer K stages than the waves of whole tiles
/// do (the last wave part-empty: 384 x 7168 x 2304 25.2 µs graph-timed
/// against 28.7, 640 x 4096 x 4096 39.1 against 45.8, 512 x 5120 x 2048
/// 23.0 against 25.5); else the persistent kernel of whole tiles where
/// [`sm90_persistent_grid`] gives a grid; else the tiling [`sm90_tiling`]
/// predicts fastest.
pub fn sm90_kernel(sms: usize, m: usize, n: usize, k: usize, l: usize) -> GemmKernel {
    let tiles = l * (m / BM) * (n / 128);
    let stages = k / sm90::BK;
    if n.is_multiple_of(128) && stages > 0 && tiles > sms && sms > 0 {
        let waves = tiles.div_ceil(sms);
        let cut = (tiles * stages).div_ceil(sms);
        if waves * stages > cut + STREAM_K_OVERHEAD_STAGES {
            return GemmKernel::Sm90Stream {
                grid: u32::try_from(sms).unwrap_or(u32::MAX),
            };
        }
    }
    if let Some(grid) = sm90_persistent_grid(sms, m, n, k, l) {
        return GemmKernel::Sm90Stream { grid };
    }
    let (blocks, split) = sm90_tiling(sms, m, n, k, l);
    GemmKernel::Sm90 { blocks, split }
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
/// entries 7 and 9: a sweep of K at fixed N and tiling; entry 19: shapes of
/// several waves; 1 unit is a 128-row stage, 0.65-1 µs as the kernel
/// changed): a block's K stage of 128 costs
/// 1 unit with 128-row tiles and 2.4 with 256-row tiles; a call a fixed 5
/// units (the decode kernel, the launches, the pipeline's start and end);
/// a K split summed on chip adds to every wave its epilogue: 3 units over a
/// cluster of 2 (1.5 with 128-row tiles, whose blocks swap accumulator
/// halves), 11 over a cluster of 4, 8 over pairs of clusters of 2 (5.5
/// with 128-row tiles); through the reduction kernel ([`sm90_reduction`])
/// the call costs 7.8 units plus 0.38 per MB of f32 partial sums written
/// and read back (the second kernel included) instead of 5. Blocks run in
/// waves of one per multiprocessor.
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
            let (per_wave, per_call) = match sm90_reduction(sms, blocks_total as u32, split) {
                Sm90Reduction::None => (0.0, 5.0),
                Sm90Reduction::Cluster if split == 2 && blocks == 1 => (1.5, 5.0),
                Sm90Reduction::Cluster if split == 2 => (3.0, 5.0),
                Sm90Reduction::Cluster => (11.0, 5.0),
                Sm90Reduction::Pairs if blocks == 1 => (5.5, 5.0),
                Sm90Reduction::Pairs => (8.0, 5.0),
                Sm90Reduction::Kernel => (0.0, 7.8 + 0.38 * (split as usize * m * n * l * 8) as f64 / 1e6),
            };
            let waves = blocks_total.div_ceil(sms.max(1)) as f64;
            let per_stage = if blocks == 2 { 2.4 } else { 1.0 };
            let cost = waves * (stages.div_ceil(split as usize) as f64 * per_stage + per_wave) + per_call;
            if cost < best_cost {
                best = (blocks, split);
                best_cost = cost;
            }
        }
    }
    best
}

/// The grid of the stream-K kernel as a persistent kernel of whole tiles,
/// where that is faster than the split tilings on a GPU of `sms`
/// multiprocessors: 128 x 128 tiles in more than one wave, each of at
/// most 16 K stages of 128, and as many tiles in every wave (`tiles / waves` blocks, each taking `waves`
/// whole tiles one after another on one ring: the next tile's stages land
/// while the last one's C is stored, where a block per tile starts each
/// tile with an empty ring). Measured on the H100 (docs/perf.md entry 19,
/// graph-timed, against the fastest split tiling): 2048 x 7168 x 2048 87.9
/// µs on 128 blocks against 92.2, 1024 x 7168 x 2048 48.3 on 112 against
/// 52.4 (where [`sm90_tiling`]'s model picks 256-row tiles, 61.1), 512 x
/// 7168 x 2048 25.5 on 112 against 26.7; with 56 stages (1024 x 4096 x
/// 7168) no faster, so longer tiles keep the split tilings.
pub fn sm90_persistent_grid(sms: usize, m: usize, n: usize, k: usize, l: usize) -> Option<u32> {
    let tiles = l * (m / BM) * (n / 128);
    let waves = tiles.div_ceil(sms.max(1));
    let whole = waves > 1 && tiles.is_multiple_of(waves) && (1..=16).contains(&(k / sm90::BK)) && n.is_multiple_of(128);
    whole.then(|| (tiles / waves) as u32)
}

#[cfg(test)]
mod tests {
    use super::super::{BENCH_SHAPES, TEST_SHAPES};
    use super::*;

    /// The task's test shapes and the benchmark's (M, N, K, L).
    fn every_shape() -> impl Iterator<Item = (usize, usize, usize, usize)> {
        TEST_SHAPES
            .into_iter()
            .chain(BENCH_SHAPES.map(|(m, n, k)| (m, n, k, 1)))
    }

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
    fn the_sm90_tiling_is_the_fastest_measured_on_shapes_of_several_waves() {
        // docs/perf.md entry 19: the fastest of the eight tilings on the H100
        // was 128-row tiles without a split on each of these, where the
        // model once picked 256-row tiles or a split per call (a third to
        // a half slower): 384 x 7168 x 2304 29.0 µs graph-timed against
        // 34.4, 256 x 7168 x 16384 83.9 against 113.3, 128 x 14336 x 4096
        // 24.2 against 35.4, 2304 x 4608 x 7168 219.7 against 347.0,
        // 1024 x 4096 x 7168 82.6 against 99.7 (`sm90_kernel` runs the
        // first as stream-K, faster still).
        for (m, n, k) in [
            (384, 7168, 2304),
            (256, 7168, 16384),
            (128, 14336, 4096),
            (2304, 4608, 7168),
            (1024, 4096, 7168),
        ] {
            assert_eq!(sm90_tiling(132, m, n, k, 1), (1, 1), "M={m} N={n} K={k}");
        }
    }

    #[test]
    fn the_sm90_kernel_is_the_fastest_measured_on_shapes_of_several_waves() {
        // docs/perf.md entry 20 (H100, 132 multiprocessors, graph-timed): the
        // fastest of the split tilings, the persistent kernel of whole tiles
        // and stream-K over every multiprocessor.
        let stream_k = GemmKernel::Sm90Stream { grid: 132 };
        let unsplit = GemmKernel::Sm90 { blocks: 1, split: 1 };
        for (m, n, k, want) in [
            // Stream-K 25.2 µs against 28.7, 34.9 / 38.7, 35.5 / 38.8, 39.1
            // / 45.8, 37.6 / 46.0, 23.0 / 25.5 (the persistent kernel).
            (384, 7168, 2304, stream_k),
            (640, 7168, 2048, stream_k),
            (1280, 3584, 2048, stream_k),
            (640, 4096, 4096, stream_k),
            (384, 7168, 4096, stream_k),
            (512, 5120, 2048, stream_k),
            // The persistent kernel 15.7 against stream-K 17.2, 38.3 / 38.9,
            // 26.2 / 28.2, 49.1 / 51.3, 86.1 / 94.9.
            (2048, 1280, 1024, GemmKernel::Sm90Stream { grid: 80 }),
            (384, 14336, 2048, GemmKernel::Sm90Stream { grid: 112 }),
            (512, 7168, 2048, GemmKernel::Sm90Stream { grid: 112 }),
            (1024, 7168, 2048, GemmKernel::Sm90Stream { grid: 112 }),
            (2048, 7168, 2048, GemmKernel::Sm90Stream { grid: 128 }),
            // 128-row tiles 48.9 against stream-K 56.9, 47.3 / 48.3, 82.6 /
            // 95.9, 219.7 (stream-K not measured: a gap of 5 stages), 23.6 /
            // 26.4 (one wave), 83.9 / 90.1 (one wave).
            (1024, 4096, 4096, unsplit),
            (256, 14336, 4096, unsplit),
            (1024, 4096, 7168, unsplit),
            (2304, 4608, 7168, unsplit),
            (768, 2048, 4096, unsplit),
            (256, 7168, 16384, unsplit),
        ] {
            assert_eq!(sm90_kernel(132, m, n, k, 1), want, "M={m} N={n} K={k}");
        }
        // The benchmark shapes (one wave) keep their split tilings.
        for (m, n, k) in BENCH_SHAPES {
            let (blocks, split) = sm90_tiling(132, m, n, k, 1);
            assert_eq!(sm90_kernel(132, m, n, k, 1), GemmKernel::Sm90 { blocks, split });
        }
    }

    #[test]
    fn the_sm90_kernel_launches_at_most_a_block_per_multiprocessor_or_unit() {
        for (m, n, k, l) in every_shape() {
            for sms in [1, 4, 8, 114, 132] {
                let units = l * (m / BM) * (n / 128) * (k / sm90::BK);
                match sm90_kernel(sms, m, n, k, l) {
                    GemmKernel::Sm90Stream { grid } => {
                        assert!(
                            grid as usize <= sms && grid as usize <= units,
                            "{m}x{n}x{k}x{l} on {sms}: {grid}"
                        );
                    }
                    GemmKernel::Sm90 { blocks, split } => assert_eq!(sm90_tiling(sms, m, n, k, l), (blocks, split)),
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn the_persistent_grid_is_of_whole_tiles_in_more_than_one_wave_of_short_k() {
        // The shapes measured on the H100 (132 multiprocessors).
        assert_eq!(sm90_persistent_grid(132, 2048, 7168, 2048, 1), Some(128));
        assert_eq!(sm90_persistent_grid(132, 1024, 7168, 2048, 1), Some(112));
        assert_eq!(sm90_persistent_grid(132, 512, 7168, 2048, 1), Some(112));
        assert_eq!(sm90_persistent_grid(132, 1024, 4096, 7168, 1), None, "56 stages a tile");
        // One wave (the benchmark shapes), tiles that do not fill every wave
        // alike (133 = 7 x 19 tiles in two waves), batches counted as tiles.
        for (m, n, k) in BENCH_SHAPES {
            assert_eq!(sm90_persistent_grid(132, m, n, k, 1), None, "{m}x{n}x{k}");
        }
        assert_eq!(sm90_persistent_grid(132, 896, 2432, 2048, 1), None);
        assert_eq!(sm90_persistent_grid(132, 128, 7168, 2048, 4), Some(112));
        for (m, n, k, l) in TEST_SHAPES {
            if let Some(grid) = sm90_persistent_grid(132, m, n, k, l) {
                let tiles = l * m / BM * n / 128;
                assert!(
                    tiles.is_multiple_of(grid as usize) && grid <= 132,
                    "{m}x{n}x{k}: {grid}"
                );
            }
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
        for (m, n, k, l) in every_shape() {
            for sms in [1, 8, 114, 132] {
                let (blocks, split) = sm90_tiling(sms, m, n, k, l);
                assert!(split as usize <= k / sm90::BK, "{m}x{n}x{k}: split {split}");
                assert!(n.is_multiple_of(128 * blocks as usize), "{m}x{n}x{k}: blocks {blocks}");
            }
        }
    }
}
