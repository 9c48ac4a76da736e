//! The block-scaled NVFP4 GEMM kernel for Hopper (sm_90a): FP4 decoded
//! exactly to f16 in registers and shared memory, multiplied by the
//! warpgroup tensor cores (`wgmma`) with f32 accumulation.
//!
//! Hopper has no FP4 tensor cores, so both operands are decoded to f16:
//! `e2m1 * e4m3` is exact in f16 (at most 6 significant bits), the products
//! of two such values are exact in f32, and the only roundings are the f32
//! accumulation and the final f16. Each e2m1 code is moved into an f16 bit
//! pattern that reads as its value times 2^-14 (sign to bit 15, exponent
//! and mantissa to bits 9..12; the subnormal 0.5 lands on an f16 subnormal)
//! and multiplied by its block's scale in one `mul.f16x2`, exact as well;
//! the accumulator is scaled back by 2^28 in the epilogue.
//!
//! The kernel computes `C^T = B x A^T` per tile: B (the `N` rows, the
//! weights of a linear layer) is the wgmma's A operand, decoded straight
//! into register fragments; A (the `M` rows, 128 tokens per tile) is the
//! wgmma's B operand, decoded once per K stage into 128-byte-swizzled
//! shared memory. A block of 384 threads computes 256 rows of B x 128 rows
//! of A over a range of K:
//! - warpgroup 0 (registers lowered to 40) is the producer: one elected
//!   thread streams K in stages of 128 through a four-stage ring — B's
//!   256 x 64-byte tile and A's 128 x 64-byte tile (64-byte swizzle) by the
//!   tensor copy engine, their 1 KiB blocks of scales by bulk copies — each
//!   completing on the stage's `full` mbarrier;
//! - warpgroups 1 and 2 (registers raised to 232) are the consumers, each
//!   owning 128 rows of B (two m64 accumulators of 64 f32 per thread). Per
//!   stage a thread loads its rows' 32 B values and scales into registers
//!   and releases the stage (`empty`); then for each of the 8 K steps of 16
//!   it decodes its A fragments, issues two `wgmma.m64n128k16` and, while
//!   they run, decodes one sixteenth of the next stage's A tile into the
//!   next of three f16 buffers. A named barrier between the two consumer
//!   warpgroups and a proxy fence publish each decoded tile to the tensor
//!   cores; three buffers let a warpgroup run one stage ahead of the other's
//!   last MMA.
//!
//! K is split among the blocks of a cluster (`cluster_size()` blocks along
//! grid x), each taking a contiguous range of stages. Every block writes
//! its f32 partial tile to its shared memory; after a cluster barrier,
//! block `r` sums the partials of its share of the tile's rows of C from
//! all blocks of the cluster in rank order (distributed shared memory), so
//! the result is the same bits on every run, and stores f16 C.
//!
//! K inside a 128-wide stage is permuted the same way for both operands
//! (a dot product does not depend on the order of K): a thread of the
//! fragment layout owns 32 consecutive values of each of its rows, and the
//! MMA's K step `s` column `c` reads value `32 t + 8 (s / 2) + j + 4 h`
//! (`t = c % 8 / 2`, `h = c % 2`, `j = 2 (s % 2) + c / 8`), which makes every
//! register of a fragment two nibbles of one 32-bit word.

use nvfp4_dsl::prelude::*;

/// Rows of B per block (two consumer warpgroups of two m64 MMAs).
pub const BN: usize = 256;
/// K per pipeline stage.
pub const BK: usize = 128;
/// Dynamic shared memory per block: three decoded A tiles and four raw
/// stages.
pub const SHARED_BYTES: u32 = 3 * 32768 + 4 * 27648;

/// Threads per block: the producer warpgroup and two consumer warpgroups.
pub const THREADS: u32 = 384;

/// NVFP4 GEMM tile kernel (sm_90a). `map_a`: tensor map over A `[L*M
/// rows][K/2 bytes]`, boxes of 64 bytes x 128 rows, 64-byte swizzle;
/// `map_b`: over B `[L*N rows][K/2 bytes]`, boxes of 64 bytes x 256 rows,
/// no swizzle; `sfa`, `sfb`: the blocked scale layouts; `c`: `[L][M][N]`.
/// Grid: (blocks per cluster, N / 256, L * M / 128), clusters along x.
#[kernel(targets(sm_90a), launch_bounds(384, 1))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_nvfp4_sm90(
    map_a: TensorMap,
    map_b: TensorMap,
    sfa: &[E4m3],
    sfb: &[E4m3],
    c: &mut [f16],
    m: u32,
    n: u32,
    k: u32,
) {
    // Dynamic shared memory: three decoded A tiles (f16, 128 rows x 128 K,
    // two 128-byte-swizzled 64-wide halves of 16 KiB), then four raw
    // stages: B 256 x 64 bytes, B's scales (two 128-row blocks x 1 KiB), A
    // 128 x 64 bytes (64-byte swizzle), A's scales (1 KiB).
    const DEC_BYTES: u32 = 32768;
    const RAW_BASE: u32 = 3 * DEC_BYTES;
    const RAW_BYTES: u32 = 27648;
    const B_RAW: u32 = 0;
    const SFB_RAW: u32 = 16384;
    const A_RAW: u32 = 18432;
    const SFA_RAW: u32 = 26624;
    // The partial tile, f32 [128 rows of A][256 rows of B] with rows of
    // 260 values (the padding spreads a warp's stores over all banks).
    const PITCH: u32 = 260;
    // 2^28: the decoded operands are their values times 2^-14 each.
    const UNSCALE: f32 = 268435456.0;

    let smem = dynamic_shared::<u8>(0);
    let words = dynamic_shared::<u32x4>(0);
    let pairs = dynamic_shared::<u64>(0);
    let scale_words = dynamic_shared::<u32>(0);
    let scale_pairs = dynamic_shared::<u16>(0);
    let partial = dynamic_shared::<f32>(0);
    // mbarriers: full[s] (stage s landed), empty[4 + s] (stage s consumed).
    let bars = shared_array::<u64, 8>();

    let tid = thread_idx_x();
    let warp = tid / 32;
    let lane = lane_id();
    let rank = cluster_cta_rank();
    let ranks = cluster_size();
    let n0 = block_idx_y() * 256;
    let m_tiles = m / 128;
    let batch = block_idx_z() / m_tiles;
    let m0 = block_idx_z() % m_tiles * 128;
    let k_stages = k / 128;
    let first = rank * k_stages / ranks;
    let stages = (rank + 1) * k_stages / ranks - first;
    let k_blocks = k / 64;

    if tid == 0 {
        #[unroll]
        for s in 0..4u32 {
            mbarrier_init(bars, s, 1);
            mbarrier_init(bars, 4 + s, 256);
        }
        fence_mbarrier_init();
    }
    sync_threads();

    if warp < 4 {
        setmaxnreg_dec(40);
        if warp == 0 && elect_sync() {
            let a_row = (batch * m + m0) as i32;
            let b_row = (batch * n + n0) as i32;
            let sfa_block = (batch * m_tiles + m0 / 128) * k_blocks;
            let sfb_block = (batch * (n / 128) + n0 / 128) * k_blocks;
            for i in 0..stages {
                let kt = first + i;
                let s = i % 4;
                mbarrier_wait_parity(bars, 4 + s, (i / 4 & 1) ^ 1);
                mbarrier_arrive_expect_tx(bars, s, RAW_BYTES);
                let stage = RAW_BASE + s * RAW_BYTES;
                let k_byte = (kt * 64) as i32;
                cp_async_bulk_tensor_2d_global_to_shared(smem, stage + B_RAW, map_b, k_byte, b_row, bars, s);
                cp_async_bulk_tensor_2d_global_to_shared(smem, stage + A_RAW, map_a, k_byte, a_row, bars, s);
                #[unroll]
                for rb in 0..2u32 {
                    cp_async_bulk_global_to_shared(
                        smem,
                        stage + SFB_RAW + rb * 1024,
                        sfb,
                        (sfb_block + rb * k_blocks + 2 * kt) * 512,
                        1024,
                        bars,
                        s,
                    );
                }
                cp_async_bulk_global_to_shared(smem, stage + SFA_RAW, sfa, (sfa_block + 2 * kt) * 512, 1024, bars, s);
            }
        }
        // Converge warp 0 (the `.aligned` cluster barrier needs the whole
        // warp), then the consumers' two cluster barriers (partials written,
        // partials read).
        sync_warp();
        cluster_sync();
        cluster_sync();
    } else {
        setmaxnreg_inc(232);
        let ct = tid - 128;
        // Fragment layout: warpgroup `wg` owns B rows 128 wg .. 128 wg + 128.
        let wg = ct / 128;
        let w = warp % 4;
        let g = lane / 4;
        let t = lane % 4;
        // A decoding: row `ar` of the tile, K words 2 ah and 2 ah + 1 of
        // each 16-byte chunk (so warpgroup `ah` fills the `ah`-th 64-wide
        // half of the decoded tile).
        let ar = ct % 128;
        let ah = ct / 128;
        let mut acc0 = [0.0f32; 64];
        let mut acc1 = [0.0f32; 64];

        // Where row `ar`'s K words 2 ah, 2 ah + 1 of raw chunk c are (64-byte
        // swizzle: chunk c of row r sits at chunk c ^ (r / 2 % 4)), and where
        // its decoded values go: the `ah`-th 64-wide half, 128-byte swizzle.
        let a_raw_row = A_RAW + ar * 64 + 8 * ah;
        let a_swz = ar / 2 % 4;
        let a_dec_row = ah * 16384 + ar / 8 * 1024 + ar % 8 * 128;
        // A's raw words and scales (f16, both halves) of the stage being decoded.
        let mut aw = [0u32; 8];
        let mut asc = [f16x2::from_bits(0); 4];
        mbarrier_wait_parity(bars, 0u32, 0u32);
        #[unroll]
        for chunk in 0..4usize {
            let p = pairs[(RAW_BASE + a_raw_row + 16 * (chunk as u32 ^ a_swz)) / 8];
            aw[2 * chunk] = p as u32;
            aw[2 * chunk + 1] = (p >> 32) as u32;
        }
        #[unroll]
        for half in 0..2usize {
            // Scales of groups 4 half + ah and 4 half + 2 + ah (bytes ah, 2 + ah).
            let sw = scale_words[(RAW_BASE + SFA_RAW + 512 * half as u32 + ar % 32 * 16 + ar / 32 * 4) / 4];
            let sel = if ah == 0 { 0x2020u32 } else { 0x3131u32 };
            let two = E4m3x2::from_bits(byte_perm(sw, 0, sel) as u16).to_f16x2().to_bits();
            asc[2 * half] = f16x2::from_bits(byte_perm(two, 0, 0x1010));
            asc[2 * half + 1] = f16x2::from_bits(byte_perm(two, 0, 0x3232));
        }
        #[unroll]
        for job in 0..8usize {
            let j = job as u32 % 4;
            let mut out = [0u32; 4];
            #[unroll]
            for chunk in 0..4usize {
                let word = aw[2 * chunk + job / 4];
                let magnitude = if j == 3 { word >> 3 } else { word << (9 - 4 * j) };
                let sign = word << (12 - 4 * j);
                let bits = (magnitude & 0x0E00_0E00) | (sign & 0x8000_8000);
                out[chunk] = hmul2(f16x2::from_bits(bits), asc[chunk]).to_bits();
            }
            // The 16-byte column of logical K 32 q + 16 (j / 2) + 8 (j % 2)
            // within the half (q = 2 ah + job / 4).
            let column = 4 * (job as u32 / 4) + 2 * (j / 2) + j % 2;
            words[(a_dec_row + (column ^ (ar % 8)) * 16) / 16] = u32x4::new(out[0], out[1], out[2], out[3]);
        }
        fence_proxy_async_shared();
        named_barrier_sync(1, 256);

        for i in 0..stages {
            let s = i % 4;
            let stage = RAW_BASE + s * RAW_BYTES;
            // This thread's B rows: r and r + 8 of each m64 block; 32 values
            // (16 bytes) and the two scales of each.
            let mut bw = [u32x4::new(0, 0, 0, 0); 4];
            let mut bsc = [f16x2::from_bits(0); 4];
            #[unroll]
            for q in 0..4usize {
                let row = 128 * wg + 64 * (q as u32 / 2) + 16 * w + g + 8 * (q as u32 % 2);
                bw[q] = words[(stage + B_RAW + row * 64 + 16 * t) / 16];
                let sf =
                    stage + SFB_RAW + row / 128 * 1024 + t / 2 * 512 + row % 32 * 16 + row % 128 / 32 * 4 + 2 * (t % 2);
                bsc[q] = E4m3x2::from_bits(scale_pairs[sf / 2]).to_f16x2();
            }
            mbarrier_arrive(bars, 4 + s);
            // The next stage's A, decoded during this stage's MMAs.
            let next = i + 1 < stages;
            let ns = (i + 1) % 4;
            let next_stage = RAW_BASE + ns * RAW_BYTES;
            let dec = (i % 3) * DEC_BYTES;
            let next_dec = ((i + 1) % 3) * DEC_BYTES;
            if next {
                mbarrier_wait_parity(bars, ns, (i + 1) / 4 & 1);
                #[unroll]
                for chunk in 0..4usize {
                    let p = pairs[(next_stage + a_raw_row + 16 * (chunk as u32 ^ a_swz)) / 8];
                    aw[2 * chunk] = p as u32;
                    aw[2 * chunk + 1] = (p >> 32) as u32;
                }
                #[unroll]
                for half in 0..2usize {
                    let sw = scale_words[(next_stage + SFA_RAW + 512 * half as u32 + ar % 32 * 16 + ar / 32 * 4) / 4];
                    let sel = if ah == 0 { 0x2020u32 } else { 0x3131u32 };
                    let two = E4m3x2::from_bits(byte_perm(sw, 0, sel) as u16).to_f16x2().to_bits();
                    asc[2 * half] = f16x2::from_bits(byte_perm(two, 0, 0x1010));
                    asc[2 * half + 1] = f16x2::from_bits(byte_perm(two, 0, 0x3232));
                }
            }
            #[unroll]
            for step in 0..8usize {
                // Fragments: word step / 2 of each row, nibble pairs
                // (j0, j0 + 4) and (j0 + 1, j0 + 5).
                let j0 = 2 * (step as u32 % 2);
                let mut frag0 = [f16x2::from_bits(0); 4];
                let mut frag1 = [f16x2::from_bits(0); 4];
                #[unroll]
                for r in 0..8usize {
                    // r: m64 block (r / 4), row (r % 2: g or g + 8), pair (r / 2 % 2).
                    let row = 2 * (r / 4) + r % 2;
                    let j = j0 + r as u32 / 2 % 2;
                    let v = bw[row];
                    let vw = [v.x, v.y, v.z, v.w];
                    let word = vw[step / 2];
                    let sc = bsc[row].to_bits();
                    let sel = if step / 4 == 0 { 0x1010u32 } else { 0x3232u32 };
                    let scale = f16x2::from_bits(byte_perm(sc, 0, sel));
                    let magnitude = if j == 3 { word >> 3 } else { word << (9 - 4 * j) };
                    let sign = word << (12 - 4 * j);
                    let bits = (magnitude & 0x0E00_0E00) | (sign & 0x8000_8000);
                    let value = hmul2(f16x2::from_bits(bits), scale);
                    if r / 4 == 0 {
                        frag0[r % 4] = value;
                    } else {
                        frag1[r % 4] = value;
                    }
                }
                let desc = WgmmaDesc::new(shared_address(smem, dec + step as u32 / 4 * 16384))
                    .with_leading_byte_offset(16)
                    .with_stride_byte_offset(1024)
                    .with_swizzle(Swizzle::B128)
                    .offset(step as u32 % 4 * 32);
                let accumulate = step > 0 || i > 0;
                wgmma_fence();
                wgmma_f16_rs(&mut acc0, frag0, desc, accumulate);
                wgmma_f16_rs(&mut acc1, frag1, desc, accumulate);
                wgmma_commit_group();
                if next {
                    let j = step as u32 % 4;
                    let mut out = [0u32; 4];
                    #[unroll]
                    for chunk in 0..4usize {
                        let word = aw[2 * chunk + step / 4];
                        let magnitude = if j == 3 { word >> 3 } else { word << (9 - 4 * j) };
                        let sign = word << (12 - 4 * j);
                        let bits = (magnitude & 0x0E00_0E00) | (sign & 0x8000_8000);
                        out[chunk] = hmul2(f16x2::from_bits(bits), asc[chunk]).to_bits();
                    }
                    let column = 4 * (step as u32 / 4) + 2 * (j / 2) + j % 2;
                    words[(next_dec + a_dec_row + (column ^ (ar % 8)) * 16) / 16] =
                        u32x4::new(out[0], out[1], out[2], out[3]);
                }
                wgmma_wait_group(1);
            }
            fence_proxy_async_shared();
            named_barrier_sync(1, 256);
        }
        wgmma_wait_group(0);
        // Both warpgroups' MMAs are done with the decoded tiles before the
        // partial tile overwrites them.
        named_barrier_sync(1, 256);
        #[unroll]
        for x in 0..128usize {
            let blk = x / 64;
            let i = x % 64;
            let b_row = 128 * wg + 64 * blk as u32 + 16 * w + g + 8 * (i as u32 % 4 / 2);
            let a_row = 8 * (i as u32 / 4) + 2 * t + i as u32 % 2;
            let v = if blk == 0 { acc0[i] } else { acc1[i] };
            partial[a_row * PITCH + b_row] = v * UNSCALE;
        }
        cluster_sync();
        // Block `rank` sums A rows [rank * rows, (rank + 1) * rows) of the
        // tile over the cluster, 8 values (B rows) per thread and item.
        let rows = 128 / ranks;
        for item in (ct..rows * 32).step_by(256) {
            let a_row = rank * rows + item / 32;
            let b_row = item % 32 * 8;
            let at = (a_row * PITCH + b_row) / 4;
            let mut sum = [0.0f32; 8];
            for src in 0..ranks {
                let lo = load_cluster(words, at, src);
                let hi = load_cluster(words, at + 1, src);
                let v = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w];
                #[unroll]
                for e in 0..8 {
                    sum[e] += f32::from_bits(v[e]);
                }
            }
            let mut h = [0u32; 4];
            #[unroll]
            for e in 0..4 {
                h[e] = f16x2::from_f32s(sum[2 * e], sum[2 * e + 1]).to_bits();
            }
            let out = ((batch * m + m0 + a_row) * n + n0 + b_row) as usize;
            store_v4(c, out, u32x4::new(h[0], h[1], h[2], h[3]), Cache::Default);
        }
        cluster_sync();
    }
}
