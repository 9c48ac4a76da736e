//! The kernel that decodes A once into the f16 images the GEMM's MMAs
//! read.

use super::*;

/// Decodes A once for [`gemm_nvfp4_sm90`]: the blocks (kt, tile, part)
/// turn rows `128 tile ..` and K stage `kt` of A into the exact image the
/// GEMM's MMAs read from shared memory — f16 values times 2^-14, K
/// permuted as the module docs say, two 128-byte-swizzled halves — at
/// `images[(tile * K / 128 + kt) * 8192 ..]` (32 KiB), each of the
/// [`DECODE_PARTS`] parts its share. It also zeroes `counters` (the GEMM's tile
/// counters, any length). `map_a`: tensor map over A `[L*M rows][K/2
/// bytes]`, boxes of 64 bytes x [`DECODE_ROWS`] rows, 64-byte swizzle; `sfa` its
/// blocked scales. Grid: (K / 128, L * M / 128, [`DECODE_PARTS`]), 256
/// threads.
///
/// It lets the GEMM after it launch at once (after its wait, when A is not
/// ready), so the GEMM's reads of B before its own wait need the GEMM's
/// `b_ready`. Its first block waits for the previous kernel in the stream
/// before it ends, so that this kernel is complete only once the kernels
/// before it are. The other blocks never wait: when no kernel that may
/// still run writes A (`a_ready`), the whole decode runs beside the kernel
/// before (the GEMM of the previous call, on the multiprocessors it leaves
/// idle), which is sound only where that kernel does not read `images`:
/// the launcher alternates two buffers of images, and the GEMM lets this
/// kernel start only once it waited for the decode before it, which waited
/// for the GEMM that read this buffer last. Otherwise every block waits
/// first. The counters are zeroed by the first block after its wait (the
/// GEMM before uses them).
#[kernel(targets(sm_90a), launch_bounds(THREADS))]
pub fn gemm_sm90_decode_a(
    map_a: TensorMap,
    sfa: &[E4m3],
    images: &mut [u32],
    counters: &mut [u32],
    k: u32,
    a_ready: bool,
) {
    let smem = dynamic_shared::<u8>(0);
    let words = dynamic_shared::<u32>(0);
    let bars = shared_array::<u64, 1>();
    if !a_ready {
        grid_dependency_wait();
    }
    launch_dependents();
    let tid = thread_idx_x();
    let kt = block_idx_x();
    let tile = block_idx_y();
    if tid == 0 {
        mbarrier_init(bars, 0u32, 1);
        fence_mbarrier_init();
    }
    sync_threads();
    // The block's chunks are of rows `row0 .. row0 + DECODE_ROWS` (of one
    // half of the stage's K, see below): only those rows are loaded, all
    // 64 bytes of each, and the stage's scales.
    let first = block_idx_z() * DECODE_CHUNKS as u32 * THREADS;
    let row0 = first % 1024 / 8;
    let scales_at = DECODE_ROWS * 64;
    if tid == 0 {
        mbarrier_arrive_expect_tx(bars, 0u32, scales_at + SCALE_BYTES);
        cp_async_bulk_tensor_2d_global_to_shared(
            smem,
            0u32,
            map_a,
            (kt * 64) as i32,
            (tile * 128 + row0) as i32,
            bars,
            0u32,
        );
        // Blocked scales: 512 bytes per (128 rows, 64 K).
        cp_async_bulk_global_to_shared(
            smem,
            scales_at,
            sfa,
            (tile * (k / 64) + 2 * kt) * 512,
            SCALE_BYTES,
            bars,
            0u32,
        );
    }
    mbarrier_wait_parity(bars, 0u32, 0u32);
    // Each thread writes `DECODE_CHUNKS` 16-byte chunks of the image, a
    // warp 512 consecutive bytes at a time: chunk q, half `ah` (64 K), row
    // `r`, stored at column q % 8, which holds logical column (the decode
    // job) c (128-byte swizzle).
    let image = (tile * (k / BK as u32) + kt) * (IMAGE_BYTES / 4);
    #[unroll]
    for p in 0..DECODE_CHUNKS {
        let q = first + tid + p as u32 * THREADS;
        let ah = q / 1024;
        let r = q % 1024 / 8;
        let c = q % 8 ^ r % 8;
        // Row r's raw K words 2 ah + c / 4 of each 16-byte chunk, in the
        // block's row r - row0 (64-byte swizzle: chunk ch of that row sits
        // at chunk ch ^ ((r - row0) / 2 % 4)), and its
        // scales of groups 4 h + ah and 4 h + 2 + ah (bytes ah, 2 + ah of word
        // h).
        let sel = if ah == 0 { 0x2020u32 } else { 0x3131u32 };
        let mut out = [0u32; 4];
        #[unroll]
        for h in 0..2u32 {
            let sw = words[(scales_at + 512 * h + r % 32 * 16 + r / 32 * 4) / 4];
            let splats = e4m3_pair_splats(sw, sel);
            #[unroll]
            for e in 0..2u32 {
                let ch = 2 * h + e;
                let row = r - row0;
                let word = words[(row * 64 + 16 * (ch ^ (row / 2 % 4)) + 8 * ah + 4 * (c / 4)) / 4];
                out[ch as usize] = hmul2(e2m1_pair_scaled(word, c % 4), splats[e as usize]).to_bits();
            }
        }
        let chunk = u32x4::new(out[0], out[1], out[2], out[3]);
        store_v4(images, (image + q * 4) as usize, chunk, Cache::Default);
    }
    if kt == 0 && tile == 0 && block_idx_z() == 0 {
        grid_dependency_wait();
        // The GEMM's tile counters start at zero (it uses them after this
        // kernel is complete).
        zero_counters(counters, tid, THREADS);
    }
}
