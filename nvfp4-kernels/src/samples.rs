//! Sample kernels that exercise the DSL's subset, each with a CPU reference
//! and a checker: an element-wise kernel, a block reduction, a staged copy
//! through more than 48 KiB of dynamic shared memory with 16-byte vectors,
//! a tour of the operators and intrinsics with Rust's semantics, and a
//! matrix transpose through a padded 2-D shared array.

use crate::Error;
use crate::rng::Rng;
use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{KernelArg, Variant};

/// `y = a * x + y`.
#[kernel(targets(sm_90, sm_100a))]
pub fn saxpy(x: &[f32], y: &mut [f32], a: f32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i >= y.len() {
        return;
    }
    y[i] = a * x[i] + y[i];
}

/// One partial sum per block: each thread adds a grid-strided run of `x`,
/// warps reduce with shuffles, and the block combines its warps through
/// static shared memory.
#[kernel(targets(sm_90, sm_100a), launch_bounds(1024))]
pub fn block_sum(x: &[f32], partial: &mut [f32], n: u32) {
    let warp_sums = shared_array::<f32, 32>();
    let tid = thread_idx_x();
    let stride = grid_dim_x() * block_dim_x();
    let mut acc = 0.0f32;
    for i in (block_idx_x() * block_dim_x() + tid..n).step_by(stride as usize) {
        acc += x[i as usize];
    }
    acc = warp_reduce_sum(acc);
    if lane_id() == 0 {
        warp_sums[tid / 32] = acc;
    }
    sync_threads();
    if tid < 32 {
        let v = if tid < block_dim_x() / 32 { warp_sums[tid] } else { 0.0 };
        let total = warp_reduce_sum(v);
        if tid == 0 {
            partial[block_idx_x() as usize] = total;
        }
    }
}

/// Stages one tile of `words` u32 per block in dynamic shared memory (64
/// KiB for 16384 words) with 16-byte loads, `VECS` per thread and round,
/// then writes `dst[i] = tile[i] + 3 * tile[words - 1 - i]`, reading what
/// other threads staged.
#[kernel(targets(sm_90, sm_100a), specialize(VECS = [2, 4]), launch_bounds(256))]
pub fn tile_mirror<const VECS: usize>(src: &[u32], dst: &mut [u32], words: u32) {
    let tile = dynamic_shared::<u32>(0);
    let base = block_idx_x() * words;
    let threads = block_dim_x();
    let mut chunk = 0u32;
    while chunk < words {
        #[unroll]
        for v in 0..VECS {
            let word = chunk + (v as u32 * threads + thread_idx_x()) * 4;
            if word < words {
                let q = load_v4(src, (base + word) as usize, Cache::NoAllocate);
                store_v4(tile, word, q, Cache::Default);
            }
        }
        chunk += VECS as u32 * threads * 4;
    }
    sync_threads();
    for i in (thread_idx_x()..words).step_by(threads as usize) {
        let mirrored = tile[words - 1 - i];
        store(dst, (base + i) as usize, tile[i] + 3 * mirrored, Cache::Streaming);
    }
}

/// The edge of a `transpose` tile.
#[device]
pub const TILE: u32 = 32;

/// Writes `dst` (`cols` x `rows`) = the transpose of `src` (`rows` x
/// `cols`, row-major), one TILE x TILE tile per block of TILE x 8 threads,
/// staged in a 2-D shared array whose rows are padded to TILE + 1: the
/// column read back (`tile[tx][ty + k]`) then falls in 32 different banks.
#[kernel(targets(sm_90, sm_100a), launch_bounds(256))]
pub fn transpose(src: &[f32], dst: &mut [f32], rows: u32, cols: u32) {
    let tile = shared_array::<[f32; TILE as usize + 1], { TILE as usize }>();
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (bx, by) = (block_idx_x() * TILE, block_idx_y() * TILE);
    for k in (0..TILE).step_by(8) {
        let (r, c) = (by + ty + k, bx + tx);
        if r < rows && c < cols {
            tile[ty + k][tx] = src[(r * cols + c) as usize];
        }
    }
    sync_threads();
    for k in (0..TILE).step_by(8) {
        let (r, c) = (bx + ty + k, by + tx);
        if r < cols && c < rows {
            dst[(r * rows + c) as usize] = tile[tx][ty + k];
        }
    }
}

/// A tour of the subset: integer wrapping, masked shifts, signed division,
/// casts, `while`/`loop`/`break`/`continue`, `step_by` and inclusive
/// ranges, local arrays under `#[unroll]`, warp shuffles, inline PTX, float
/// rounding per operation, `mul_add`, f64, bf16, f16 and half2 arithmetic. Every
/// thread writes 8 words, 4 floats and 3 half pairs; launch whole warps.
#[kernel(targets(sm_90, sm_100a))]
pub fn mixed_ops(xs: &[u32], fs: &[f32], hs: &[f16], out_u: &mut [u32], out_f: &mut [f32], out_h: &mut [f16x2]) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    let x = xs[i as usize];
    let f = fs[i as usize];
    let h = hs[i as usize];
    let o = (i * 8) as usize;
    out_u[o] = x * 2654435761 + (x << (x >> 27));
    let s = (x as i32) >> (x & 7);
    out_u[o + 1] = if (x & 1) == 0 { (s / -3) as u32 } else { (s % 5) as u32 };
    let b = (x as u8) as u32 + ((x >> 8) as u16) as u32;
    let w = ((x as i32) as i64 * -3) as u64;
    // NaN converts to 0 (Rust semantics, whatever the width and source).
    let nan = (f - f) / (f - f);
    let nan_bits = (nan as i64) as u32 ^ ((nan as f64) as i32) as u32 ^ (nan as u32);
    out_u[o + 2] = b ^ (w >> 32) as u32 ^ w as u32 ^ nan_bits;
    let mut acc = 0u32;
    let mut k = 0u32;
    while k < (x & 15) {
        acc += k * k;
        k += 1;
    }
    let mut j = 0u32;
    loop {
        j += 3;
        if j > (x & 31) {
            break;
        }
        if j % 2 == 0 {
            continue;
        }
        acc ^= j << 4;
    }
    out_u[o + 3] = acc;
    let mut bytes = [0u32; 4];
    #[unroll]
    for t in 0..4 {
        bytes[t] = (x >> (8 * t)) & 0xff;
    }
    let mut sum = 0u32;
    for t in (0..(x & 63)).step_by(7) {
        sum += t;
    }
    for t in 1..=(x & 3) {
        sum += t * 100;
    }
    out_u[o + 4] = bytes[0] + (bytes[1] << 8) * 3 + (bytes[3] ^ bytes[2]) + sum;
    out_u[o + 5] = warp_reduce_sum(x & 0xffff);
    out_u[o + 6] = shfl_xor(x, 5) ^ shfl_down(x, 3);
    let lane: u32 = ptx!(u32, "mov.u32 {d}, %laneid;");
    out_u[o + 7] = ptx!(u32, "add.u32 {d}, {0}, {1};", shfl_idx(x, x & 31), lane << 24);

    let fo = (i * 4) as usize;
    out_f[fo] = f * 1.5 + 0.25;
    out_f[fo + 1] = f.mul_add(f, -1.0) / 3.0;
    out_f[fo + 2] = (f * 1000.0) as i32 as f32 + (f as f64 * 3.0) as f32;
    out_f[fo + 3] = f.abs().sqrt().max(0.5).min(1.75) + h.to_f32() + bf16::from_f32(f).to_f32()
        - f32::from_bits((x & 0x007f_ffff) | 0x3f00_0000);

    let ho = (i * 3) as usize;
    let h2 = f16x2::new(h, f16::from_f32(f));
    out_h[ho] = hfma2(h2, h2, f16x2::splat(h));
    out_h[ho + 1] = hadd2(hmul2(h2, f16x2::from_f32s(0.5, -2.0)), shfl_down(h2, 1));
    let neg = if h > f16::from_f32(0.0) { h } else { -h };
    out_h[ho + 2] = f16x2::new(h * h - h, neg / f16::from_f32(3.0));
}

/// What a sample run checked.
#[derive(Debug, Clone)]
pub struct SampleReport {
    /// The kernel.
    pub name: &'static str,
    /// What ran (sizes, specialisation).
    pub what: String,
    /// Output elements compared against the CPU.
    pub checked: usize,
    /// The output buffers' bytes, concatenated: two devices' runs on the
    /// same inputs can be compared bit for bit (see `fidelity`).
    pub output: Vec<u8>,
}

/// The bytes of a slice of device-copyable values.
pub(crate) fn bytes_of<T: nvfp4_dsl::DeviceCopy>(v: &[T]) -> Vec<u8> {
    // SAFETY: `DeviceCopy` types are plain data without padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }.to_vec()
}

fn mismatch(kernel: &str, index: usize, got: impl std::fmt::Debug, want: impl std::fmt::Debug) -> Error {
    Error::Mismatch(format!(
        "{kernel}: element {index} is {got:?}, the CPU computes {want:?}"
    ))
}

/// Runs `saxpy` on `n` random elements and checks every output.
pub fn check_saxpy(device: &Device, rng: &mut Rng, n: usize) -> Result<SampleReport, Error> {
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let a = rng.uniform(-2.0, 2.0);
    let dx = device.upload(&x)?;
    let mut dy = device.upload(&y)?;
    let blocks = n.div_ceil(256) as u32;
    // SAFETY: one thread per element; the kernel checks `i < y.len()`.
    unsafe { saxpy::Kernel::launch(device, LaunchConfig::linear(blocks, 256), &dx, &mut dy, a)? };
    let got = device.download(&dy)?;
    for i in 0..n {
        let want = a * x[i] + y[i];
        if got[i].to_bits() != want.to_bits() {
            return Err(mismatch("saxpy", i, got[i], want));
        }
    }
    Ok(SampleReport {
        name: "saxpy",
        what: format!("n = {n}"),
        checked: n,
        output: bytes_of(&got),
    })
}

/// Runs `block_sum` and checks each block's sum against an f64 sum of its
/// elements, within the f32 rounding bound of any summation order.
pub fn check_block_sum(device: &Device, rng: &mut Rng, n: usize, blocks: u32) -> Result<SampleReport, Error> {
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let dx = device.upload(&x)?;
    let poison = vec![f32::NAN; blocks as usize];
    let mut dp = device.upload(&poison)?;
    let threads = 1024u32;
    // SAFETY: the kernel reads `x[i]` for `i < n` and writes one element per block.
    unsafe { block_sum::Kernel::launch(device, LaunchConfig::linear(blocks, threads), &dx, &mut dp, n as u32)? };
    let got = device.download(&dp)?;
    let stride = (blocks * threads) as usize;
    for (b, &g) in got.iter().enumerate() {
        let (mut sum, mut abs, mut count) = (0f64, 0f64, 0usize);
        for t in 0..threads as usize {
            let mut i = b * threads as usize + t;
            while i < n {
                sum += f64::from(x[i]);
                abs += f64::from(x[i]).abs();
                count += 1;
                i += stride;
            }
        }
        let bound = count as f64 * f64::from(f32::EPSILON) * abs;
        if g.is_nan() || (f64::from(g) - sum).abs() > bound {
            return Err(mismatch("block_sum", b, g, sum));
        }
    }
    Ok(SampleReport {
        name: "block_sum",
        what: format!("n = {n}, {blocks} blocks of {threads}"),
        checked: blocks as usize,
        output: bytes_of(&got),
    })
}

/// Runs `tile_mirror::<VECS>` over `tiles` tiles of `words` u32 (64 KiB of
/// dynamic shared memory for 16384 words) and checks every output word.
pub fn check_tile_mirror(
    device: &Device,
    rng: &mut Rng,
    vecs: usize,
    tiles: u32,
    words: u32,
) -> Result<SampleReport, Error> {
    let n = (tiles * words) as usize;
    let src: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
    let dsrc = device.upload(&src)?;
    let mut ddst = device.upload(&vec![0xDEAD_BEEFu32; n])?;
    let cfg = LaunchConfig::linear(tiles, 256).with_shared_bytes(words * 4);
    // SAFETY: each block reads and writes its own tile of `words` words,
    // `words` is a multiple of 4, and the shared block holds one tile.
    unsafe {
        match vecs {
            2 => tile_mirror::Kernel::<2>::launch(device, cfg, &dsrc, &mut ddst, words)?,
            4 => tile_mirror::Kernel::<4>::launch(device, cfg, &dsrc, &mut ddst, words)?,
            other => {
                return Err(Error::Shape(format!(
                    "tile_mirror is compiled for VECS = 2 or 4, not {other}"
                )));
            }
        }
    }
    let got = device.download(&ddst)?;
    for t in 0..tiles as usize {
        let tile = &src[t * words as usize..(t + 1) * words as usize];
        for i in 0..words as usize {
            let want = tile[i].wrapping_add(tile[words as usize - 1 - i].wrapping_mul(3));
            let k = t * words as usize + i;
            if got[k] != want {
                return Err(mismatch("tile_mirror", k, got[k], want));
            }
        }
    }
    Ok(SampleReport {
        name: "tile_mirror",
        what: format!("VECS = {vecs}, {tiles} tiles of {} KiB", words * 4 / 1024),
        checked: n,
        output: bytes_of(&got),
    })
}

/// Runs `transpose` on a random `rows` x `cols` matrix (edges that are not
/// multiples of the tile included) and checks every output element.
pub fn check_transpose(device: &Device, rng: &mut Rng, rows: u32, cols: u32) -> Result<SampleReport, Error> {
    check_transpose_build(device, rng, rows, cols, transpose::Kernel::VARIANT)
}

/// [`check_transpose`] of another build of the kernel: `variant` holds the
/// PTX (the GPU test runs the debug build's, with its column checks, from
/// a release binary).
pub fn check_transpose_build(
    device: &Device,
    rng: &mut Rng,
    rows: u32,
    cols: u32,
    variant: &'static Variant,
) -> Result<SampleReport, Error> {
    let n = (rows * cols) as usize;
    let src: Vec<f32> = (0..n).map(|_| rng.uniform(-4.0, 4.0)).collect();
    let dsrc = device.upload(&src)?;
    let mut ddst = device.upload(&vec![f32::NAN; n])?;
    let cfg = LaunchConfig::new((cols.div_ceil(TILE), rows.div_ceil(TILE), 1), (TILE, 8, 1));
    let mut args = [
        KernelArg::from(&dsrc),
        KernelArg::from(&mut ddst),
        KernelArg::from(rows),
        KernelArg::from(cols),
    ];
    // SAFETY: `variant` is a build of `transpose` (its parameters in this
    // order); each block reads and writes one tile, inside the matrix.
    unsafe { nvfp4_dsl::launch(device, variant, cfg, &mut args)? };
    let got = device.download(&ddst)?;
    for r in 0..rows as usize {
        for c in 0..cols as usize {
            let (k, want) = (c * rows as usize + r, src[r * cols as usize + c]);
            if got[k].to_bits() != want.to_bits() {
                return Err(mismatch("transpose", k, got[k], want));
            }
        }
    }
    Ok(SampleReport {
        name: "transpose",
        what: format!("{rows} x {cols}"),
        checked: n,
        output: bytes_of(&got),
    })
}

/// The CPU version of `mixed_ops` for one warp-aligned input set.
pub fn mixed_ops_reference(xs: &[u32], fs: &[f32], hs: &[f16]) -> (Vec<u32>, Vec<f32>, Vec<f16x2>) {
    let n = xs.len();
    let mut out_u = vec![0u32; n * 8];
    let mut out_f = vec![0f32; n * 4];
    let mut out_h = vec![f16x2::default(); n * 3];
    let lane_of = |i: usize| i % 32;
    let warp_base = |i: usize| i - i % 32;
    for i in 0..n {
        let (x, f, h) = (xs[i], fs[i], hs[i]);
        let u = &mut out_u[i * 8..i * 8 + 8];
        u[0] = x.wrapping_mul(2654435761).wrapping_add(x << (x >> 27));
        let s = (x as i32) >> (x & 7);
        u[1] = if x & 1 == 0 { (s / -3) as u32 } else { (s % 5) as u32 };
        let b = u32::from(x as u8) + u32::from((x >> 8) as u16);
        let w = i64::from(x as i32).wrapping_mul(-3) as u64;
        let nan = f32::NAN;
        let nan_bits = (nan as i64) as u32 ^ (f64::from(nan) as i32) as u32 ^ (nan as u32);
        u[2] = b ^ (w >> 32) as u32 ^ w as u32 ^ nan_bits;
        let mut acc = 0u32;
        for k in 0..(x & 15) {
            acc = acc.wrapping_add(k * k);
        }
        let mut j = 0u32;
        loop {
            j += 3;
            if j > (x & 31) {
                break;
            }
            if j.is_multiple_of(2) {
                continue;
            }
            acc ^= j << 4;
        }
        u[3] = acc;
        let bytes: Vec<u32> = (0..4).map(|t| (x >> (8 * t)) & 0xff).collect();
        let mut sum = 0u32;
        for t in (0..(x & 63)).step_by(7) {
            sum += t;
        }
        for t in 1..=(x & 3) {
            sum += t * 100;
        }
        u[4] = bytes[0]
            .wrapping_add((bytes[1] << 8).wrapping_mul(3))
            .wrapping_add(bytes[3] ^ bytes[2])
            .wrapping_add(sum);
        let base = warp_base(i);
        let lane = lane_of(i);
        u[5] = (0..32).fold(0u32, |a, l| a.wrapping_add(xs[base + l] & 0xffff));
        let down = if lane + 3 < 32 { xs[base + lane + 3] } else { x };
        u[6] = xs[base + (lane ^ 5)] ^ down;
        u[7] = xs[base + (x & 31) as usize].wrapping_add((lane as u32) << 24);

        let fo = &mut out_f[i * 4..i * 4 + 4];
        fo[0] = f * 1.5 + 0.25;
        fo[1] = f.mul_add(f, -1.0) / 3.0;
        fo[2] = (f * 1000.0) as i32 as f32 + (f64::from(f) * 3.0) as f32;
        fo[3] = f.abs().sqrt().clamp(0.5, 1.75) + h.to_f32() + bf16::from_f32(f).to_f32()
            - f32::from_bits((x & 0x007f_ffff) | 0x3f00_0000);

        let hf = f16::from_f32(f);
        let fma = |a: f16, b: f16, c: f16| f16::from_f64(f64::from(a) * f64::from(b) + f64::from(c));
        out_h[i * 3] = f16x2::new(fma(h, h, h), fma(hf, hf, h));
        let down_lane = if lane + 1 < 32 { base + lane + 1 } else { i };
        let (dh, df) = (hs[down_lane], f16::from_f32(fs[down_lane]));
        out_h[i * 3 + 1] = f16x2::new(h * f16::from_f32(0.5) + dh, hf * f16::from_f32(-2.0) + df);
        let neg = if h > f16::from_f32(0.0) { h } else { -h };
        out_h[i * 3 + 2] = f16x2::new(h * h - h, neg / f16::from_f32(3.0));
    }
    (out_u, out_f, out_h)
}

/// Random inputs for `mixed_ops` (`n` a multiple of 32): halves and floats
/// with magnitudes in [0.25, 4) so half-precision FMAs stay exact in f64.
pub fn mixed_ops_inputs(rng: &mut Rng, n: usize) -> (Vec<u32>, Vec<f32>, Vec<f16>) {
    let signed = |rng: &mut Rng| {
        let m = rng.uniform(0.25, 4.0);
        if rng.next_u32() & 1 == 0 { m } else { -m }
    };
    let xs = (0..n).map(|_| rng.next_u32()).collect();
    let fs = (0..n).map(|_| signed(rng)).collect();
    let hs = (0..n).map(|_| f16::from_f32(signed(rng))).collect();
    (xs, fs, hs)
}

/// Runs `mixed_ops` on `n` threads (a multiple of 32) and checks every
/// output bit for bit against [`mixed_ops_reference`].
pub fn check_mixed_ops(device: &Device, rng: &mut Rng, n: usize) -> Result<SampleReport, Error> {
    if !n.is_multiple_of(256) {
        return Err(Error::Shape(format!(
            "mixed_ops runs whole blocks of 256 threads; {n} is not a multiple"
        )));
    }
    let (xs, fs, hs) = mixed_ops_inputs(rng, n);
    let (want_u, want_f, want_h) = mixed_ops_reference(&xs, &fs, &hs);
    let (dx, df, dh) = (device.upload(&xs)?, device.upload(&fs)?, device.upload(&hs)?);
    let mut du = device.upload(&vec![0xDEAD_BEEFu32; n * 8])?;
    let mut dfo = device.upload(&vec![f32::NAN; n * 4])?;
    let mut dho = device.upload(&vec![f16x2::from_bits(0x7E00_7E00); n * 3])?;
    // SAFETY: one thread per input; outputs are sized 8, 4 and 3 per thread.
    unsafe {
        mixed_ops::Kernel::launch(
            device,
            LaunchConfig::linear((n / 256) as u32, 256),
            &dx,
            &df,
            &dh,
            &mut du,
            &mut dfo,
            &mut dho,
        )?
    };
    let (got_u, got_f, got_h) = (device.download(&du)?, device.download(&dfo)?, device.download(&dho)?);
    for (k, (g, w)) in got_u.iter().zip(&want_u).enumerate() {
        if g != w {
            return Err(mismatch("mixed_ops (u32 outputs)", k, g, w));
        }
    }
    for (k, (g, w)) in got_f.iter().zip(&want_f).enumerate() {
        if g.to_bits() != w.to_bits() {
            return Err(mismatch("mixed_ops (f32 outputs)", k, g, w));
        }
    }
    for (k, (g, w)) in got_h.iter().zip(&want_h).enumerate() {
        if g.to_bits() != w.to_bits() {
            return Err(mismatch(
                "mixed_ops (f16x2 outputs)",
                k,
                (g.lo(), g.hi()),
                (w.lo(), w.hi()),
            ));
        }
    }
    Ok(SampleReport {
        name: "mixed_ops",
        what: format!("{n} threads"),
        checked: want_u.len() + want_f.len() + want_h.len(),
        output: [bytes_of(&got_u), bytes_of(&got_f), bytes_of(&got_h)].concat(),
    })
}

/// Runs every sample: at full size, or `small` (for the emulator).
pub fn check_all(device: &Device, seed: u64, small: bool) -> Result<Vec<SampleReport>, Error> {
    let mut rng = Rng::new(seed);
    let (n, blocks, tiles, threads, edge) = if small {
        (5000, 6, 3, 1024, 70)
    } else {
        (1 << 20, 132, 64, 1 << 14, 4000)
    };
    Ok(vec![
        check_saxpy(device, &mut rng, n)?,
        check_block_sum(device, &mut rng, n * 4, blocks)?,
        check_tile_mirror(device, &mut rng, 2, tiles, 16384)?,
        check_tile_mirror(device, &mut rng, 4, tiles, 16384)?,
        check_mixed_ops(device, &mut rng, threads)?,
        check_transpose(device, &mut rng, edge, edge + 27)?,
    ])
}
