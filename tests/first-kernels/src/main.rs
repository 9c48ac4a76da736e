//! First kernels of a user's crate, each checked against the CPU on the
//! emulator (or a GPU, with `Device::best()`): a histogram with shared and
//! global atomics, a tiled row sum through device functions that take a
//! shared array and a `&mut` accumulator, a struct with methods, `zip` and
//! a closure, module constants shared by host and kernel, and a kernel
//! generic over its element type (`T: Float`, for `f16` and `bf16`); and a
//! new user's first three: a block scan (`scan`), a tiled matrix multiply
//! (`matmul`) and a row argmax with warp shuffles (`argmax`); and row
//! statistics with an `f64` warp sum, a `loop` that gives its value and a
//! `match` on a pair (`row_stats`); and an NVFP4 quantize-dequantize
//! round trip with the encoding intrinsics (`nvfp4_round_trip`); and each
//! row's maximum and sum written once for `u32` and `f32` (`T: Num +
//! WarpReduce`, no `targets(..)`: `row_max_sum`); column sums across the
//! two blocks of a cluster (`cluster_sum`: a bulk copy of a tile, or each
//! thread's asynchronous store), and handed from one to the
//! other through global memory, a flag and a bulk copy (`handoff`); and a
//! producer thread feeding
//! two consumer warpgroups through a ring of bulk copies, its warpgroup's
//! registers given to them with `setmaxnreg` (`pipeline`, sm_90a: an
//! emulated Hopper where there is no GPU).

use nvfp4_dsl::DeviceCopy;
use nvfp4_dsl::prelude::*;

mod argmax;
mod cluster_sum;
mod handoff;
mod matmul;
mod nvfp4_round_trip;
mod pipeline;
mod row_max_sum;
mod row_stats;
mod scan;

/// A reproducible stream of pseudo-random numbers (xorshift64*), so the
/// checks need no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    /// A value in `[-range, range)` on a grid of `1/256`, never all zeros.
    pub fn f32(&mut self, range: f32) -> f32 {
        (self.next_u32() % (512 * range as u32)) as f32 / 256.0 - range
    }
}

/// Threads per block, shared by the host's launch and the kernels.
#[device]
pub const THREADS: u32 = 128;

/// Elements each thread of `row_sums` adds up.
#[device]
pub const PER_THREAD: usize = 4;

/// Byte histogram: per-block counts in shared memory, merged with global
/// atomics whose results are dropped (`red`).
#[kernel(targets(sm_90), launch_bounds(THREADS))]
pub fn histogram(bytes: &[u8], hist: &mut [u32]) {
    let counts = shared_array::<u32, 256>();
    let t = thread_idx_x();
    for k in (t..256).step_by(THREADS as usize) {
        counts[k as usize] = 0;
    }
    sync_threads();
    let stride = grid_dim_x() * THREADS;
    for i in (block_idx_x() * THREADS + t..bytes.len() as u32).step_by(stride as usize) {
        atomic_add(counts, u32::from(bytes[i as usize]), 1u32, Order::Relaxed, Scope::Cta);
    }
    sync_threads();
    for k in (t..256).step_by(THREADS as usize) {
        atomic_add(hist, k, counts[k as usize], Order::Relaxed, Scope::Gpu);
    }
}

/// Adds this thread's `PER_THREAD` elements of `x` from `start` into `acc`.
#[device]
fn accumulate(acc: &mut [f32; PER_THREAD], x: &[f32], start: usize) {
    for (a, v) in acc.iter_mut().zip(&x[start..]) {
        *a += *v;
    }
}

/// Stores this thread's partial sum in the block's tile.
#[device]
fn publish(tile: &mut SharedArray<f32, 128>, v: f32) {
    tile[thread_idx_x() as usize] = v;
}

/// A running minimum and maximum.
#[device(methods)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub lo: f32,
    pub hi: f32,
}

#[device]
impl Range {
    pub fn new(v: f32) -> Range {
        Range { lo: v, hi: v }
    }

    pub fn add(&mut self, v: f32) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    pub fn width(&self) -> f32 {
        self.hi - self.lo
    }
}

/// Per block, the sum of its `THREADS * PER_THREAD` elements (thread 0 adds
/// the tile in order) and the width of their range; each element is
/// squared first by a closure.
#[kernel(targets(sm_90), launch_bounds(THREADS))]
pub fn row_sums(x: &[f32], sums: &mut [f32], widths: &mut [f32]) {
    let tile = shared_array::<f32, 128>();
    let square = |v: f32| v * v;
    let start = (block_idx_x() * THREADS + thread_idx_x()) as usize * PER_THREAD;
    let mut acc = [0.0f32; PER_THREAD];
    accumulate(&mut acc, x, start);
    let mut range = Range::new(acc[0]);
    let mut sum = 0.0f32;
    for v in acc {
        range.add(v);
        sum += square(v);
    }
    publish(tile, sum);
    sync_threads();
    if thread_idx_x() == 0 {
        let mut total = 0.0f32;
        for i in 0..THREADS as usize {
            total += tile[i];
        }
        sums[block_idx_x() as usize] = total;
    }
    widths[(block_idx_x() * THREADS + thread_idx_x()) as usize] = range.width();
}

/// Element `i` of `x`, widened to `f32` (a generic device function: `T`
/// is read off `x`).
#[device]
fn load_f32<T: Float>(x: &[T], i: usize) -> f32 {
    x[i].to_f32()
}

/// RMS normalisation of each row of `n` values (one thread per row), in
/// `f32`, rounded back to the element type: one PTX entry per listed type.
#[kernel(targets(sm_90), specialize(T = [f16, bf16]))]
pub fn rms_norm<T: Float>(x: &[T], y: &mut [T], rows: u32, n: u32) {
    let row = block_idx_x() * block_dim_x() + thread_idx_x();
    if row >= rows {
        return;
    }
    let start = (row * n) as usize;
    let mut squares = 0.0f32;
    for i in 0..n as usize {
        let v = load_f32(x, start + i);
        squares += v * v;
    }
    let inv = 1.0 / (squares / n as f32 + 1.0e-6).sqrt();
    for i in 0..n as usize {
        y[start + i] = T::from_f32(load_f32(x, start + i) * inv);
    }
}

/// `rms_norm` on the CPU: the same generic function, the same `f32`
/// operations in the same order.
fn rms_norm_reference<T: Float>(x: &[T], n: usize) -> Vec<T> {
    let mut y = Vec::with_capacity(x.len());
    for start in (0..x.len()).step_by(n) {
        let mut squares = 0.0f32;
        for i in 0..n {
            let v = load_f32(x, start + i);
            squares += v * v;
        }
        let inv = 1.0 / (squares / n as f32 + 1.0e-6).sqrt();
        y.extend((0..n).map(|i| T::from_f32(load_f32(x, start + i) * inv)));
    }
    y
}

/// Runs `launch` (the kernel for `T`) on rows of values exact in `T`,
/// against [`rms_norm_reference`].
fn check_rms_norm<T: Float + DeviceCopy + std::fmt::Debug>(
    device: &Device,
    launch: impl FnOnce(&DeviceBuffer<T>, &mut DeviceBuffer<T>, u32, u32) -> Result<(), nvfp4_dsl::Error>,
) -> Result<(), nvfp4_dsl::Error> {
    let (rows, n) = (200u32, 24u32);
    let x: Vec<T> = (0..rows * n)
        .map(|i| T::from_f32(((i * 53) % 97) as f32 * 0.125 - 6.0))
        .collect();
    let dx = device.upload(&x)?;
    let mut dy = device.upload(&vec![T::NAN; x.len()])?;
    launch(&dx, &mut dy, rows, n)?;
    let got = device.download(&dy)?;
    let want = rms_norm_reference(&x, n as usize);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_f32().to_bits(),
            w.to_f32().to_bits(),
            "rms_norm element {i}: {g:?} != {w:?}"
        );
    }
    Ok(())
}

fn main() -> Result<(), nvfp4_dsl::Error> {
    let device = Device::best();
    println!("running on {}", device.describe());

    // The histogram, against a count on the CPU.
    let bytes: Vec<u8> = (0..100_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let d_bytes = device.upload(&bytes)?;
    let mut d_hist = device.upload(&vec![0u32; 256])?;
    // Counted in two halves, each a view of the bytes, into one view of the
    // counters that both launches borrow (`&half`, `&mut counts`).
    let halves = [d_bytes.slice(0..50_000)?, d_bytes.slice(50_000..100_000)?];
    let mut counts = d_hist.slice_mut(0..256)?;
    for half in &halves {
        // SAFETY: the kernel reads `half` inside its length and adds into 256 counters.
        unsafe { histogram::Kernel::launch(&device, LaunchConfig::linear(8, THREADS), half, &mut counts)? };
    }
    let mut want = vec![0u32; 256];
    for b in &bytes {
        want[*b as usize] += 1;
    }
    assert_eq!(device.download(&d_hist)?, want, "histogram");

    // The tiled sums, against the same arithmetic in the same order.
    let blocks = 6usize;
    let per_block = THREADS as usize * PER_THREAD;
    let x: Vec<f32> = (0..blocks * per_block)
        .map(|i| ((i * 37) % 113) as f32 * 0.25 - 14.0)
        .collect();
    let dx = device.upload(&x)?;
    let mut d_sums = device.upload(&vec![f32::NAN; blocks])?;
    let mut d_widths = device.upload(&vec![f32::NAN; blocks * THREADS as usize])?;
    // SAFETY: thread t of block b reads x[(b * THREADS + t) * PER_THREAD..][..PER_THREAD] and writes its own width; thread 0 writes its block's sum.
    unsafe {
        row_sums::Kernel::launch(
            &device,
            LaunchConfig::linear(blocks as u32, THREADS),
            &dx,
            &mut d_sums,
            &mut d_widths,
        )?
    };
    let sums = device.download(&d_sums)?;
    let widths = device.download(&d_widths)?;
    for (b, sum) in sums.iter().enumerate() {
        let mut total = 0.0f32;
        for t in 0..THREADS as usize {
            let i = b * THREADS as usize + t;
            let mut acc = [0.0f32; PER_THREAD];
            accumulate(&mut acc, &x, i * PER_THREAD);
            let mut range = Range::new(acc[0]);
            let mut sum = 0.0f32;
            for v in acc {
                range.add(v);
                sum += v * v;
            }
            total += sum;
            assert_eq!(widths[i], range.width(), "width of thread {i}");
        }
        assert_eq!(*sum, total, "sum of block {b}");
    }
    // The generic kernel, launched for each type it lists.
    let config = LaunchConfig::linear(4, 64);
    check_rms_norm::<f16>(&device, |x, y, rows, n| {
        // SAFETY: thread `row` below `rows` reads and writes row `row` of `n` values.
        unsafe { rms_norm::Kernel::<f16>::launch(&device, config, x, y, rows, n) }
    })?;
    check_rms_norm::<bf16>(&device, |x, y, rows, n| {
        // SAFETY: as above.
        unsafe { rms_norm::Kernel::<bf16>::launch(&device, config, x, y, rows, n) }
    })?;
    scan::check(&device, &mut Rng(0x9e37_79b9_7f4a_7c15))?;
    matmul::check(&device, &mut Rng(0x2545_f491_4f6c_dd1d))?;
    argmax::check(&device, &mut Rng(0x1234_5678_9abc_def1))?;
    row_stats::check(&device, &mut Rng(0x0fed_cba9_8765_4321))?;
    nvfp4_round_trip::check(&device, &mut Rng(0x5851_f42d_4c95_7f2d))?;
    row_max_sum::check(&device, &mut Rng(0x9e37_79b9_7f4a_7c15))?;
    cluster_sum::check(&device, &mut Rng(0x2545_f491_4f6c_dd1d))?;
    handoff::check(&device, &mut Rng(0x1234_5678_9abc_def1))?;
    // sm_90a only: on Hopper, or an emulated one where there is no GPU.
    if device.compute_capability() == (9, 0) {
        pipeline::check(&device, &mut Rng(0x9e37_79b9_7f4a_7c15))?;
    } else if device.is_emulator() {
        pipeline::check(&Device::emulator(Target::Sm90a), &mut Rng(0x9e37_79b9_7f4a_7c15))?;
    }
    println!(
        "block scan, tiled matmul, row argmax, row statistics, the NVFP4 round trip, generic row maxima and sums, column sums across a cluster (in shared and in global memory) and a warp-specialised pipeline match the CPU"
    );
    println!(
        "histogram of {} bytes, {blocks} tiled sums and rms_norm for f16 and bf16 match the CPU",
        bytes.len()
    );
    Ok(())
}
