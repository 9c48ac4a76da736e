//! The host side of [`super::gemm_scaled_with`], one function per kernel:
//! the device check, the tensor maps, the workspace and the launches.

use super::{
    BM, GemmKernel, GemmOperand, MapTile, STAGES, Sm90Reduction, gemm_nvfp4, gemm_nvfp4_sm90, gemm_nvfp4_sm90_stream,
    gemm_sm90_decode_a, gemm_sm90_reduce, launch_prearrange, prearranged_words, shared_bytes, sm90, sm90_reduction,
};
use crate::Error;
use crate::quantize::{Activations, global_scales, quantize_image};
use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{DeviceView, DeviceViewMut};

/// Launches the sm_100a kernel with `bn`-column tiles (shapes checked by
/// the caller).
pub(super) fn sm100(
    device: &Device,
    a: &GemmOperand<'_>,
    b: &GemmOperand<'_>,
    mut c: DeviceViewMut<'_, f16>,
    bn: usize,
    alpha: f32,
) -> Result<(), Error> {
    let (m, n, k, l) = (a.rows, b.rows, a.k, a.batches);
    let (mm, nn, kk) = (m as u32, n as u32, k as u32);
    let (major, minor) = device.compute_capability();
    if (major, minor) != (10, 0) {
        return Err(Error::Unsupported(format!(
            "the sm_100a GEMM kernel needs a compute capability 10.0 device; {} is {major}.{minor}",
            device.describe()
        )));
    }
    if bn != 128 && bn != 256 {
        return Err(Error::Shape(format!(
            "the sm_100a kernel's tiles are 128 or 256 columns, not {bn}"
        )));
    }
    let map_a = a.map(MapTile::Sm100 { rows: 128 }, "a")?;
    let map_b = b.map(MapTile::Sm100 { rows: bn as u32 }, "b")?;
    let launch = LaunchConfig::new(((n / bn) as u32, (m / BM) as u32, l as u32), (128, 1, 1))
        .with_shared_bytes(shared_bytes(bn));
    // SAFETY: shapes checked above and by the maps: every tile is
    // inside a and b (rows are multiples of the tiles, K of 256), the
    // scale blocks exist for every (128 rows, 256 K) tile, and every
    // row and column of c is in bounds.
    unsafe {
        macro_rules! launch {
            ($bn:literal) => {
                gemm_nvfp4::Kernel::<$bn, STAGES>::launch(
                    device,
                    launch,
                    map_a,
                    map_b,
                    a.scales,
                    b.scales,
                    c.reborrow(),
                    mm,
                    nn,
                    kk,
                    alpha,
                )?
            };
        }
        if bn == 128 { launch!(128) } else { launch!(256) }
    }
    Ok(())
}

/// Where the sm_90a GEMM's A comes from.
pub(crate) enum Sm90A<'o, 'a> {
    /// An NVFP4 operand, decoded into A's images by [`gemm_sm90_decode_a`].
    Operand(&'o GemmOperand<'a>),
    /// `rows` rows of activations `[rows][k]` quantized straight into A's
    /// images ([`crate::quantize::quantize_image_sm90`]) for `rows_out`
    /// rows (a multiple of 128), one batch.
    Activations {
        x: Activations<'a>,
        rows: usize,
        rows_out: usize,
        input_scale: f32,
    },
}

/// The sm_90a GEMM's launch for a tiling: its configuration, its
/// `clustered` argument, the split the reduction kernel sums after it (if
/// one runs), and its workspace's f32 partial sums and counters (words).
struct Sm90Plan {
    launch: LaunchConfig,
    clustered: u32,
    reduce: Option<u32>,
    partial_words: usize,
    counter_words: usize,
}

/// [`Sm90Plan`] of `kernel` (an sm_90a one) for `(m, n, k, l)` (shapes
/// checked by the caller) on `device`.
fn sm90_plan(
    device: &Device,
    kernel: GemmKernel,
    (m, n, k, l): (usize, usize, usize, usize),
) -> Result<Sm90Plan, Error> {
    let values = m * n * l;
    let tiles = m / BM * l * (n / 128);
    let k_stages = k / sm90::BK;
    match kernel {
        GemmKernel::Sm90 { blocks, split } => {
            if !matches!(blocks, 1 | 2) || !matches!(split, 1 | 2 | 4 | 8) || split as usize > k_stages {
                return Err(Error::Shape(format!(
                    "the sm_90a kernel takes 1 or 2 blocks of 64 B rows per warpgroup and splits K over 1, 2, 4 or 8 blocks, at most one per stage of {} ({k_stages} stages); not {blocks} and {split}",
                    sm90::BK,
                )));
            }
            let grid = (split, (n / (128 * blocks as usize)) as u32, ((m / BM) * l) as u32);
            let reduction = sm90_reduction(device.multiprocessors() as usize, grid.0 * grid.1 * grid.2, split);
            let launch =
                LaunchConfig::new(grid, (sm90::BLOCK_THREADS, 1, 1)).with_shared_bytes(sm90::shared_bytes(blocks));
            // The partial sums of a split K reduced by the second kernel
            // (one copy of C per block of a tile) or in pairs of clusters
            // (one per half of K; a few words otherwise: the kernel does
            // not touch them then), two counters per tile in pairs.
            let (launch, clustered, partial_words) = match reduction {
                Sm90Reduction::Cluster => (launch.with_cluster((split, 1, 1)), 1, 4),
                Sm90Reduction::Pairs => (launch.with_cluster((2, 1, 1)), 2, 2 * values),
                Sm90Reduction::Kernel => (launch, 0, split as usize * values),
                Sm90Reduction::None => (launch, 0, 4),
            };
            let counter_words = if reduction == Sm90Reduction::Pairs {
                2 * tiles / blocks as usize
            } else {
                1
            };
            Ok(Sm90Plan {
                launch,
                clustered,
                reduce: (reduction == Sm90Reduction::Kernel).then_some(split),
                partial_words,
                counter_words,
            })
        }
        GemmKernel::Sm90Stream { grid } => {
            let units = tiles * k_stages;
            if grid == 0 || grid as usize > units || u32::try_from(units * grid as usize).is_err() {
                return Err(Error::Shape(format!(
                    "the stream-K kernel runs 1 to {units} blocks (the tiles' K stages of {}), and fewer than 2^32 / {units}; not {grid}",
                    sm90::BK
                )));
            }
            let launch = LaunchConfig::new((grid, 1, 1), (sm90::BLOCK_THREADS, 1, 1))
                .with_shared_bytes(sm90::STREAM_SHARED_BYTES);
            // Each block's first and last segment's partial sums (a tile
            // of f32 each), a counter per tile; none (a few words) where
            // the grid divides the tiles: every block's range is then
            // tiles / grid whole tiles, which the kernel stores as C alone.
            let whole_tiles = tiles.is_multiple_of(grid as usize);
            Ok(Sm90Plan {
                launch,
                clustered: 0,
                reduce: None,
                partial_words: if whole_tiles { 4 } else { 2 * grid as usize * 128 * 128 },
                counter_words: if whole_tiles { 1 } else { tiles },
            })
        }
        GemmKernel::Sm100 { .. } => Err(Error::Unsupported("the sm_100a kernel is no sm_90a tiling".into())),
    }
}

/// Launches the sm_90a kernels with `kernel`'s tiling (shapes checked by
/// the caller): A's decode (or the activations' quantization into A's
/// images), B's pre-arrangement when the operand has none, the GEMM and,
/// for a split through global memory, the reduction.
pub(crate) fn sm90(
    device: &Device,
    a: Sm90A<'_, '_>,
    b: &GemmOperand<'_>,
    mut c: DeviceViewMut<'_, f16>,
    kernel: GemmKernel,
    alpha: f32,
) -> Result<(), Error> {
    let (m, n, k, l) = match &a {
        Sm90A::Operand(a) => (a.rows, b.rows, a.k, a.batches),
        Sm90A::Activations { rows_out, .. } => (*rows_out, b.rows, b.k, 1),
    };
    let (mm, nn, kk) = (m as u32, n as u32, k as u32);
    if device.compute_capability() != (9, 0) {
        let (major, minor) = device.compute_capability();
        return Err(Error::Unsupported(format!(
            "the sm_90a GEMM kernel needs a compute capability 9.0 device; {} is {major}.{minor}",
            device.describe()
        )));
    }
    let plan = sm90_plan(device, kernel, (m, n, k, l))?;
    let a_kernel = a_kernel(device, &a, k)?;
    // The workspace: the plan's partial sums and counters (zeroed by the
    // kernel that makes A's images), A decoded once for every tile of B
    // (2 bytes per value; two buffers, used in turn) and B pre-arranged
    // when the caller has not; kept for the next call on this stream. The
    // kernel that makes A's images writes them while the previous call's
    // GEMM may still run (when A, or the activations, are ready), so each
    // call's go to the buffer that GEMM does not read; its first block
    // zeroes the counters after waiting for the previous kernel in the
    // stream, and this call's GEMM and reduction touch the workspace only
    // after their own wait, which makes that kernel complete; the
    // pre-arrangement is no programmatic launch: it starts once the
    // kernels before it are done.
    if i32::try_from(m * l * k / 2).is_err() {
        return Err(Error::Shape("the problem is too large for 32-bit indices".into()));
    }
    let image_words = m * l * k / 2;
    // B pre-arranged here when the caller has not.
    let weight_words = if b.prearranged.is_some() {
        1
    } else {
        prearranged_words(n, k, l)
    };
    if u32::try_from(weight_words).is_err() {
        return Err(Error::Shape("the problem is too large for 32-bit indices".into()));
    }
    let [image_bytes, partial_bytes, counter_bytes, weight_bytes] =
        [image_words, plan.partial_words, plan.counter_words, weight_words].map(|words| 4 * words);
    let bytes = [image_bytes, image_bytes, partial_bytes, counter_bytes, weight_bytes];
    device.with_workspace("nvfp4_kernels::gemm::sm90", &bytes, |buffers| {
        let [image_buffer, other_image_buffer, partials, counters, scratch_weights] = buffers else {
            unreachable!("with_workspace gives one buffer per size")
        };
        let mut images = image_buffer.slice_mut(0..image_bytes)?.cast::<u32>()?;
        let mut partials = partials.slice_mut(0..partial_bytes)?.cast::<f32>()?;
        let mut counters = counters.slice_mut(0..counter_bytes)?.cast::<u32>()?;
        let mut scratch_weights = scratch_weights.slice_mut(0..weight_bytes)?.cast::<u32>()?;
        if b.prearranged.is_none() {
            launch_prearrange(device, b, scratch_weights.reborrow())?;
        }
        let weights = b.prearranged.unwrap_or(scratch_weights.as_view());
        launch_a(device, &a_kernel, (m, k, l), images.reborrow(), counters.reborrow())?;
        // The A kernel lets the GEMM launch before the kernels before it
        // are complete: the pre-arrangement just before, say.
        let b_ready = !device.written_by_running_kernel(weights);
        // SAFETY: shapes checked above and by the maps: every tile is
        // inside a and b (rows are multiples of 128 and of the tile, K
        // of 256), the scale blocks exist for every (128 rows, 64 K)
        // block, every row and column of c is in bounds, partials
        // holds what the plan says (`split` copies of C for the
        // reduction kernel, 2 in pairs of clusters, two tiles per block
        // for stream-K), and counters 2 per tile in pairs and 1 per tile
        // for stream-K (zeroed by the A kernel, which completes before
        // this kernel's first counter update: that comes after its wait).
        unsafe {
            let launch = plan.launch;
            macro_rules! launch {
                ($b:literal, $s:literal) => {
                    gemm_nvfp4_sm90::Kernel::<$b, $s>::launch(
                        device,
                        launch,
                        images.as_view(),
                        weights,
                        c.reborrow(),
                        partials.reborrow(),
                        counters.reborrow(),
                        plan.clustered,
                        mm,
                        nn,
                        kk,
                        alpha,
                        b_ready,
                    )?
                };
            }
            match kernel {
                GemmKernel::Sm90Stream { .. } => gemm_nvfp4_sm90_stream::Kernel::launch(
                    device,
                    launch,
                    images.as_view(),
                    weights,
                    c.reborrow(),
                    partials.reborrow(),
                    counters.reborrow(),
                    l as u32,
                    mm,
                    nn,
                    kk,
                    alpha,
                    b_ready,
                )?,
                GemmKernel::Sm90 { blocks: 1, split: 1 } => launch!(1, 1),
                GemmKernel::Sm90 { blocks: 1, split: 2 } => launch!(1, 2),
                GemmKernel::Sm90 { blocks: 1, split: 4 } => launch!(1, 4),
                GemmKernel::Sm90 { blocks: 1, split: _ } => launch!(1, 8),
                GemmKernel::Sm90 { blocks: _, split: 1 } => launch!(2, 1),
                GemmKernel::Sm90 { blocks: _, split: 2 } => launch!(2, 2),
                GemmKernel::Sm90 { blocks: _, split: 4 } => launch!(2, 4),
                _ => launch!(2, 8),
            }
        }
        // The next call's images go to the buffer this GEMM does not read.
        std::mem::swap(image_buffer, other_image_buffer);
        if let Some(split) = plan.reduce {
            reduce(device, partials.as_view(), c.reborrow(), split, m * n * l, alpha)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The kernel that makes A's images for the sm_90a GEMM, with what it
/// needs: the decode kernel's tensor map, scales and whether no kernel
/// that may still run writes A (it then requests A before its wait), or the
/// quantization's activations, their rows and global scales.
enum AKernel<'a> {
    Decode(TensorMap, DeviceView<'a, E4m3>, bool),
    Quantize(Activations<'a>, usize, (f32, f32)),
}

/// [`AKernel`] of `a` (K = `k`) launched on `device`, its shapes checked.
fn a_kernel<'a>(device: &Device, a: &Sm90A<'_, 'a>, k: usize) -> Result<AKernel<'a>, Error> {
    match a {
        Sm90A::Operand(a) => {
            let ready = !device.written_by_running_kernel(a.data) && !device.written_by_running_kernel(a.scales);
            Ok(AKernel::Decode(a.map(MapTile::Sm90A, "a")?, a.scales, ready))
        }
        Sm90A::Activations {
            x,
            rows,
            rows_out,
            input_scale,
        } => {
            if x.len() != rows * k || rows > rows_out || !rows_out.is_multiple_of(BM) || !k.is_multiple_of(256) {
                return Err(Error::Shape(format!(
                    "{} activations for {rows} rows of K = {k} into {rows_out} rows of A (a multiple of 128, K of 256)",
                    x.len()
                )));
            }
            Ok(AKernel::Quantize(*x, *rows, global_scales(*input_scale)?))
        }
    }
}

/// Launches `a`'s kernel: A's images of `(m, k, l)` (rows, K, batches)
/// into `images`, the GEMM's `counters` zeroed.
fn launch_a(
    device: &Device,
    a: &AKernel<'_>,
    (m, k, l): (usize, usize, usize),
    images: DeviceViewMut<'_, u32>,
    counters: DeviceViewMut<'_, u32>,
) -> nvfp4_dsl::Result<()> {
    match a {
        AKernel::Decode(map_a, scales, a_ready) => {
            let decode = LaunchConfig::new(
                ((k / sm90::BK) as u32, ((m / BM) * l) as u32, sm90::DECODE_PARTS),
                (sm90::THREADS, 1, 1),
            )
            .with_shared_bytes(sm90::DECODE_SHARED_BYTES);
            // SAFETY: every (128 rows, 128 K) tile of A is inside a (rows a
            // multiple of 128, K of 256), its scale blocks exist, and
            // images holds one 32 KiB image per tile.
            unsafe {
                gemm_sm90_decode_a::Kernel::launch(
                    device, decode, *map_a, *scales, images, counters, k as u32, *a_ready,
                )
            }
        }
        AKernel::Quantize(x, rows, scales) => quantize_image(device, *x, (*rows, m, k), *scales, images, counters),
    }
}

/// Launches [`gemm_sm90_reduce`]: C from the `split` f32 partial sums of
/// `values` outputs each.
fn reduce(
    device: &Device,
    partials: nvfp4_dsl::DeviceView<'_, f32>,
    mut c: DeviceViewMut<'_, f16>,
    split: u32,
    values: usize,
    alpha: f32,
) -> nvfp4_dsl::Result<()> {
    let items = (values / 8) as u32;
    let config = LaunchConfig::linear(items.div_ceil(256), 256);
    // SAFETY: partials holds `split` x `values` f32 and c at least `values`
    // f16 (checked by the caller); values is a multiple of 8 (N of 128).
    unsafe {
        macro_rules! reduce {
            ($s:literal) => {
                gemm_sm90_reduce::Kernel::<$s>::launch(device, config, partials, c.reborrow(), items, alpha)
            };
        }
        match split {
            2 => reduce!(2),
            4 => reduce!(4),
            _ => reduce!(8),
        }
    }
}
