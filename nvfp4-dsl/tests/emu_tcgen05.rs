//! Tensor memory and the NVFP4 tensor-core MMA on hand-written sm_100a
//! kernels: allocation rules, `tcgen05.cp .warpx4` placement, `tcgen05.ld`/
//! `st`, one `tcgen05.mma.kind::mxf4nvf4` with N = 8 and N = 128 in every
//! shared-memory layout compared bit for bit with an f64 computation here,
//! and every error, with its kernel, block, thread and line.

use nvfp4_dsl::emu::{EmuError, Memory, Module, Options, ParamValue};

mod common;
use common::{Rng, assert_error, download_u32, e2m1, e4m3, f32_toward_zero, leading_exponent, linear, upload};

const HEAD: &str = ".version 8.7\n.target sm_100a\n.address_size 64\n";

// ----- small kernels -----

/// A module with a 4-byte slot for the tensor-memory address and one
/// entry `k(.param .u64 out)`.
fn small(body: &str) -> (Module, String) {
    let src = format!(
        "{HEAD}.shared .align 16 .b8 slot[4];\n.shared .align 16 .b8 sm[1024];\n.shared .align 8 .b8 mb[8];\n.visible .entry k(.param .u64 out)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<16>;\n\tmov.u32 %r1, %tid.x;\n\tshr.u32 %r2, %r1, 5;\n\tsetp.eq.u32 %p1, %r2, 0;\n\tld.param.u64 %rd1, [out];\n{body}}}\n"
    );
    match Module::parse(&src) {
        Ok(m) => (m, src),
        Err(e) => panic!("{e}\n{src}"),
    }
}

fn run_small(body: &str, blocks: u32, threads: u32) -> (Result<Vec<u32>, EmuError>, String) {
    run_small_with(body, blocks, threads, &Options::default())
}

/// [`run_small`] under `options`.
fn run_small_with(body: &str, blocks: u32, threads: u32, options: &Options) -> (Result<Vec<u32>, EmuError>, String) {
    let (m, src) = small(body);
    let mut mem = Memory::new();
    let out = mem.alloc(4 * 4096, true);
    let l = linear(blocks, threads, 0);
    let r = m
        .launch_with("k", &l, &[ParamValue::U64(out)], &mut mem, options)
        .map(|_| download_u32(&mem, out, 4096));
    (r, src)
}

/// Warp 0 allocates `n` columns; everyone syncs and reads the address
/// into `%r10`.
fn alloc(n: u32) -> String {
    format!(
        "\t@!%p1 bra $L_alloc;\n\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], {n};\n$L_alloc:\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\ttcgen05.fence::after_thread_sync;\n\tld.shared.u32 %r10, [slot];\n"
    )
}

/// Everyone syncs, warp 0 frees `n` columns, all return.
fn dealloc(n: u32) -> String {
    format!(
        "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\t@!%p1 bra $L_end;\n\ttcgen05.fence::after_thread_sync;\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r10, {n};\n$L_end:\n\tret;\n"
    )
}

/// Stores `%r20..%r20+n` of each thread at `out[tid * n ..]`.
fn dump(n: u32) -> String {
    let mut s = format!("\tmul.lo.u32 %r3, %r1, {n};\n\tmul.wide.u32 %rd2, %r3, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n");
    for j in 0..n {
        s += &format!("\tst.global.u32 [%rd3+{}], %r{};\n", 4 * j, 20 + j);
    }
    s
}

fn regs(n: u32) -> String {
    (0..n).map(|j| format!("%r{}", 20 + j)).collect::<Vec<_>>().join(", ")
}

/// Each warp reads `n` columns from `col` of its own lane quarter.
fn ld_quarter(col: u32, n: u32) -> String {
    format!(
        "\tshl.b32 %r4, %r2, 21;\n\tadd.u32 %r5, %r10, %r4;\n\ttcgen05.ld.sync.aligned.32x32b.x{n}.b32 {{{}}}, [%r5+{col}];\n\ttcgen05.wait::ld.sync.aligned;\n",
        regs(n)
    )
}

#[test]
fn tensor_memory_store_load_round_trip() {
    // Every thread stores 8 words (tid * 100 + j) to its lane, reads them
    // back; 512 columns allocated, the last 8 used.
    let body = format!(
        "{}\tshl.b32 %r4, %r2, 21;\n\tadd.u32 %r5, %r10, %r4;\n{}\ttcgen05.st.sync.aligned.32x32b.x8.b32 [%r5+504], {{{}}};\n\ttcgen05.wait::st.sync.aligned;\n{}{}{}",
        alloc(512),
        (0..8)
            .map(|j| format!("\tmad.lo.u32 %r{}, %r1, 100, {j};\n", 20 + j))
            .collect::<String>(),
        regs(8),
        (0..8)
            .map(|j| format!("\tmov.u32 %r{}, 0;\n", 20 + j))
            .collect::<String>()
            + &ld_quarter(504, 8),
        dump(8),
        dealloc(512)
    );
    let (r, _) = run_small(&body, 2, 128);
    let got = r.unwrap_or_else(|e| panic!("{e}"));
    for t in 0..128 {
        for j in 0..8 {
            assert_eq!(got[t * 8 + j], (t * 100 + j) as u32, "thread {t} column {j}");
        }
    }
}

/// `tcgen05.cp.32x128b.warpx4`: row `i` (16 bytes at `start + (i / 8) *
/// SBO + (i % 8) * 16`) lands in columns `col..col + 4` of lanes `i`,
/// `32 + i`, `64 + i` and `96 + i`.
#[test]
fn tcgen05_cp_warpx4_places_rows_in_all_four_quarters() {
    for sbo in [128u32, 256] {
        // Shared word w holds 1000 + w.
        let desc = (1u64 << 46) | (u64::from(sbo >> 4) << 32);
        let body = format!(
            "\tshl.b32 %r6, %r1, 2;\n\tmov.u32 %r7, sm;\n\tadd.u32 %r8, %r7, %r6;\n\tadd.u32 %r9, %r1, 1000;\n\tst.shared.u32 [%r8], %r9;\n\tadd.u32 %r9, %r9, 128;\n\tst.shared.u32 [%r8+512], %r9;\n{}\tsetp.eq.u32 %p2, %r1, 0;\n\t@!%p2 bra $L_nocp;\n\tshr.u32 %r11, %r7, 4;\n\tcvt.u64.u32 %rd4, %r11;\n\tor.b64 %rd4, %rd4, {desc};\n\tadd.u32 %r12, %r10, 36;\n\ttcgen05.cp.cta_group::1.32x128b.warpx4 [%r12], %rd4;\n\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mb];\n$L_nocp:\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n$L_wait:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [mb], 0;\n\t@!%p3 bra $L_wait;\n\ttcgen05.fence::after_thread_sync;\n{}{}{}",
            alloc(64).replace(
                "\t@!%p1 bra $L_alloc;\n",
                "\tsetp.eq.u32 %p4, %r1, 0;\n\t@%p4 mbarrier.init.shared::cta.b64 [mb], 1;\n\tfence.proxy.async.shared::cta;\n\t@!%p1 bra $L_alloc;\n"
            ),
            ld_quarter(36, 4),
            dump(4),
            dealloc(64)
        );
        let (r, _) = run_small(&body, 1, 128);
        let got = r.unwrap_or_else(|e| panic!("{e}"));
        for lane in 0..128usize {
            let i = (lane % 32) as u32;
            let row_word = ((i / 8) * sbo + (i % 8) * 16) / 4;
            for j in 0..4u32 {
                let w = row_word + j;
                assert_eq!(
                    got[lane * 4 + j as usize],
                    1000 + w,
                    "SBO {sbo}, lane {lane}, column {j}"
                );
            }
        }
    }
}

#[test]
fn tensor_memory_errors_are_reported() {
    // The error of a kernel that must fail, and its source. Several warps
    // meet most of these errors; the sequential schedule makes warp 0 the
    // first.
    let fail = |body: &str, blocks, threads| {
        let (r, src) = run_small_with(body, blocks, threads, &Options::sequential());
        (r.unwrap_err(), src)
    };
    // A partial warp allocates.
    let (e, src) = fail(
        "\tsetp.lt.u32 %p2, %r1, 16;\n\t@%p2 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;\n\tret;\n",
        1,
        32,
    );
    assert_error(&e, &src, "tcgen05.alloc", (0, 0, 0), (0, 0, 0), "divergent warp");
    // Not enough columns: warp 0 takes 512, then warp 1 asks for 32.
    let (e, src) = fail(
        "\t@%p1 bra $L_w0;\n\tbra $L_sync;\n$L_w0:\n\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [sm], 512;\n\ttcgen05.fence::before_thread_sync;\n$L_sync:\n\tbar.sync 0;\n\t@%p1 ret;\n\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;\n\tret;\n",
        1,
        64,
    );
    assert_error(&e, &src, "[slot], 32", (0, 0, 0), (32, 0, 0), "cannot be satisfied");
    // After relinquishing the permit.
    let (e, src) = fail(
        "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;\n\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [sm], 32;\n\tret;\n",
        1,
        32,
    );
    assert_error(&e, &src, "[sm], 32", (0, 0, 0), (0, 0, 0), "relinquish");
    // Block 1 forgets to free: named with the allocating thread and line.
    let (e, src) = fail(
        &format!(
            "{}\tmov.u32 %r3, %ctaid.x;\n\tsetp.eq.u32 %p3, %r3, 1;\n\t@%p3 ret;\n{}",
            alloc(128),
            dealloc(128)
        ),
        2,
        64,
    );
    assert_error(
        &e,
        &src,
        "tcgen05.alloc",
        (1, 0, 0),
        (0, 0, 0),
        "tensor memory not freed",
    );
    // A deallocation that does not match the allocation.
    let (e, src) = fail(&format!("{}{}", alloc(128), dealloc(64)), 1, 32);
    assert_error(&e, &src, "tcgen05.dealloc", (0, 0, 0), (0, 0, 0), "does not match");
    // Loads: outside the allocation, from another warp's lanes, of cells
    // never written, without any allocation.
    let (e, src) = fail(&format!("{}{}{}", alloc(32), ld_quarter(16, 32), dealloc(32)), 1, 64);
    assert_error(
        &e,
        &src,
        "tcgen05.ld",
        (0, 0, 0),
        (0, 0, 0),
        "outside this block's allocation",
    );
    let (e, src) = fail(
        &format!(
            "{}\t@%p1 bra $L_skip;\n\ttcgen05.ld.sync.aligned.32x32b.x2.b32 {{%r20, %r21}}, [%r10];\n$L_skip:\n{}",
            alloc(32),
            dealloc(32)
        ),
        1,
        64,
    );
    assert_error(
        &e,
        &src,
        "tcgen05.ld",
        (0, 0, 0),
        (32, 0, 0),
        "warp 1 may access only tensor-memory lanes 32..64",
    );
    let (e, src) = fail(
        &format!(
            "{}\tmov.u32 %r20, 1;\n\tshl.b32 %r4, %r2, 21;\n\tadd.u32 %r5, %r10, %r4;\n\ttcgen05.st.sync.aligned.32x32b.x1.b32 [%r5], {{%r20}};\n{}{}",
            alloc(32),
            ld_quarter(0, 2),
            dealloc(32)
        ),
        1,
        64,
    );
    assert_error(
        &e,
        &src,
        "tcgen05.ld",
        (0, 0, 0),
        (0, 0, 0),
        "read of tensor memory never written: lane 0, column 1",
    );
    let (e, src) = fail(
        "\tmov.u32 %r10, 0;\n\ttcgen05.ld.sync.aligned.32x32b.x1.b32 {%r20}, [%r10];\n\tret;\n",
        1,
        32,
    );
    assert_error(&e, &src, "tcgen05.ld", (0, 0, 0), (0, 0, 0), "has not allocated");
}

#[test]
fn tcgen05_cp_errors_are_reported() {
    let ok = (1u64 << 46) | (8u64 << 32);
    for (desc, off, msg) in [
        (ok, 1u32 << 16, "needs lane 0"),
        (ok, 30, "outside this block's allocation"),
        (ok | (2 << 61), 0, "swizzle is not supported"),
        (ok & !(1 << 46), 0, "must be 0b001"),
    ] {
        let body = format!(
            "{}\tsetp.eq.u32 %p2, %r1, 0;\n\t@!%p2 bra $L_x;\n\tmov.u32 %r7, sm;\n\tshr.u32 %r11, %r7, 4;\n\tcvt.u64.u32 %rd4, %r11;\n\tor.b64 %rd4, %rd4, {desc};\n\tadd.u32 %r12, %r10, {off};\n\ttcgen05.cp.cta_group::1.32x128b.warpx4 [%r12], %rd4;\n$L_x:\n{}",
            alloc(32),
            dealloc(32)
        );
        let (r, src) = run_small(&body, 1, 64);
        assert_error(&r.unwrap_err(), &src, "tcgen05.cp", (0, 0, 0), (0, 0, 0), msg);
    }
}

// ----- the MMA -----

/// How the A scale factors reach tensor memory.
#[derive(Clone, Copy, PartialEq)]
enum Sfa {
    /// `tcgen05.cp .warpx4`, as the GEMM does.
    Cp,
    /// Not at all.
    Skip,
    /// `tcgen05.st` by warp 0: lanes 32..128 stay unwritten.
    WarpZeroSt,
}

/// A one-MMA kernel: 128 threads put A (128 rows) and B (`n` rows) into
/// shared memory in the layout `layout` (0: none, or the swizzle span)
/// with `st.shared`, copy the scales with `tcgen05.cp`, thread 0 issues
/// the MMA (twice, the second accumulating, if `twice`) and commits, and
/// each warp reads its 32 rows of D back with `tcgen05.ld`.
#[derive(Clone, Copy)]
struct Opts {
    n: u32,
    layout: u32,
    twice: bool,
    first_p: bool,
    sfa: Sfa,
    commit: bool,
    d_col: u32,
    ld_cols: u32,
}

impl Opts {
    fn new(n: u32, layout: u32) -> Opts {
        Opts {
            n,
            layout,
            twice: false,
            first_p: false,
            sfa: Sfa::Cp,
            commit: true,
            d_col: 0,
            ld_cols: n,
        }
    }

    /// (SBO, bytes from one row to the next inside an 8-row group, offset
    /// of the second 16-byte chunk, swizzle mask, layout code, LBO).
    fn geometry(&self) -> (u32, u32, u32, u32, u64, u32) {
        match self.layout {
            128 => (1024, 128, 16, 7, 2, 16),
            64 => (512, 64, 16, 3, 4, 16),
            32 => (256, 32, 16, 1, 6, 16),
            _ => (256, 16, 128, 0, 0, 128),
        }
    }

    /// The descriptor bits above the start address.
    fn desc_hi(&self) -> u64 {
        let (sbo, _, _, _, code, lbo) = self.geometry();
        (u64::from(lbo >> 4) << 16) | (u64::from(sbo >> 4) << 32) | (1 << 46) | (code << 61)
    }

    fn idesc(&self) -> u32 {
        0x0800_0480 | ((self.n >> 3) << 17)
    }
}

fn store_rows(o: &Opts, src: &str, off: u32) -> String {
    let (sbo, pitch, hoff, mask, _, _) = o.geometry();
    format!(
        "\tmul.wide.u32 %rd10, %r1, 32;\n\tadd.s64 %rd11, {src}, %rd10;\n\tld.global.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd11];\n\tld.global.v4.u32 {{%r14, %r15, %r16, %r17}}, [%rd11+16];\n\tshr.u32 %r20, %r1, 3;\n\tand.b32 %r21, %r1, 7;\n\tadd.u32 %r22, %r2, {off};\n\tmad.lo.u32 %r22, %r20, {sbo}, %r22;\n\tmad.lo.u32 %r22, %r21, {pitch}, %r22;\n\tadd.u32 %r23, %r22, {hoff};\n\tshr.u32 %r24, %r22, 7;\n\tand.b32 %r24, %r24, {mask};\n\tshl.b32 %r24, %r24, 4;\n\txor.b32 %r22, %r22, %r24;\n\tshr.u32 %r25, %r23, 7;\n\tand.b32 %r25, %r25, {mask};\n\tshl.b32 %r25, %r25, 4;\n\txor.b32 %r23, %r23, %r25;\n\tst.shared.v4.u32 [%r22], {{%r10, %r11, %r12, %r13}};\n\tst.shared.v4.u32 [%r23], {{%r14, %r15, %r16, %r17}};\n"
    )
}

/// A shared-memory descriptor of `dyn + off` in `%rd{reg}`, with the high
/// bits in `hi` (a register or a constant).
fn desc(reg: u32, off: u32, hi: &str) -> String {
    format!(
        "\tadd.u32 %r50, %r2, {off};\n\tshr.u32 %r50, %r50, 4;\n\tand.b32 %r50, %r50, 16383;\n\tcvt.u64.u32 %rd{reg}, %r50;\n\tor.b64 %rd{reg}, %rd{reg}, {hi};\n"
    )
}

fn mma_kernel(o: &Opts) -> String {
    let sf_hi = (1u64 << 46) | (8u64 << 32);
    let mut s = format!(
        "{HEAD}.shared .align 8 .b8 bar[8];\n.shared .align 4 .b8 slot[4];\n.extern .shared .align 1024 .b8 dyn[];\n.visible .entry k(.param .u64 in_a, .param .u64 in_b, .param .u64 in_sf, .param .u64 out, .param .u64 a_hi, .param .u64 b_hi, .param .u32 idesc)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<80>;\n\t.reg .b64 %rd<40>;\n\t.reg .b32 %v<{}>;\n",
        o.ld_cols
    );
    s += "\tld.param.u64 %rd1, [in_a];\n\tld.param.u64 %rd2, [in_b];\n\tld.param.u64 %rd3, [in_sf];\n\tld.param.u64 %rd4, [out];\n\tld.param.u64 %rd5, [a_hi];\n\tld.param.u64 %rd6, [b_hi];\n\tmov.u32 %r1, %tid.x;\n\tshr.u32 %r40, %r1, 5;\n\tmov.u32 %r2, dyn;\n";
    s += &store_rows(o, "%rd1", 0);
    s += &format!("\tsetp.lt.u32 %p1, %r1, {};\n\t@!%p1 bra $L_nob;\n", o.n);
    s += &store_rows(o, "%rd2", 16384);
    s += "$L_nob:\n\tmul.wide.u32 %rd12, %r1, 4;\n\tadd.s64 %rd13, %rd3, %rd12;\n\tld.global.u32 %r30, [%rd13];\n\tld.global.u32 %r31, [%rd13+512];\n\tshl.b32 %r32, %r1, 2;\n\tadd.u32 %r33, %r2, %r32;\n\tst.shared.u32 [%r33+32768], %r30;\n\tst.shared.u32 [%r33+33280], %r31;\n";
    s += "\tsetp.eq.u32 %p2, %r1, 0;\n\t@%p2 mbarrier.init.shared::cta.b64 [bar], 1;\n\tsetp.eq.u32 %p3, %r40, 0;\n\t@!%p3 bra $L_noalloc;\n\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 256;\n\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n$L_noalloc:\n\tfence.proxy.async.shared::cta;\n\tfence.mbarrier_init.release.cluster;\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\ttcgen05.fence::after_thread_sync;\n\tld.shared.u32 %r41, [slot];\n\tadd.u32 %r51, %r41, 128;\n\tadd.u32 %r53, %r41, 132;\n";
    if o.sfa == Sfa::WarpZeroSt {
        s += "\t@!%p3 bra $L_nost;\n\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r51], {%r30, %r30, %r30, %r30};\n$L_nost:\n";
    }
    s += "\t@!%p2 bra $L_noissue;\n";
    s += &desc(20, 32768, &sf_hi.to_string());
    if o.sfa == Sfa::Cp {
        s += "\ttcgen05.cp.cta_group::1.32x128b.warpx4 [%r51], %rd20;\n";
    }
    s += &desc(21, 33280, &sf_hi.to_string());
    s += "\ttcgen05.cp.cta_group::1.32x128b.warpx4 [%r53], %rd21;\n";
    s += &desc(22, 0, "%rd5");
    s += &desc(23, 16384, "%rd6");
    s += &format!(
        "\tld.param.u32 %r55, [idesc];\n\tadd.u32 %r56, %r41, {};\n\tmov.pred %p4, {};\n\ttcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%r56], %rd22, %rd23, %r55, [%r51], [%r53], %p4;\n",
        o.d_col,
        u32::from(o.first_p)
    );
    if o.twice {
        s += "\tsetp.ne.u32 %p5, %r55, 0;\n\ttcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%r56], %rd22, %rd23, %r55, [%r51], [%r53], %p5;\n";
    }
    if o.commit {
        s += "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];\n";
    }
    s += "$L_noissue:\n$L_wait:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p6, [bar], 0;\n\t@!%p6 bra $L_wait;\n\ttcgen05.fence::after_thread_sync;\n";
    let v = (0..o.ld_cols).map(|j| format!("%v{j}")).collect::<Vec<_>>().join(", ");
    s += &format!(
        "\tshl.b32 %r61, %r40, 21;\n\tadd.u32 %r62, %r41, %r61;\n\ttcgen05.ld.sync.aligned.32x32b.x{}.b32 {{{v}}}, [%r62+{}];\n\ttcgen05.wait::ld.sync.aligned;\n\tmul.lo.u32 %r63, %r1, {};\n\tmul.wide.u32 %rd30, %r63, 4;\n\tadd.s64 %rd31, %rd4, %rd30;\n",
        o.ld_cols, o.d_col, o.ld_cols
    );
    for j in 0..o.ld_cols {
        s += &format!("\tst.global.u32 [%rd31+{}], %v{j};\n", 4 * j);
    }
    s += "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\t@!%p3 bra $L_end;\n\ttcgen05.fence::after_thread_sync;\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r41, 256;\n$L_end:\n\tret;\n}\n";
    s
}

/// An unsigned E4M3 scale (the sign bit ignored).
fn ue4m3(b: u8) -> f64 {
    e4m3(b & 0x7F)
}

/// Inputs of one MMA: A 128 x 32 bytes, B n x 32 bytes, per-row scales.
struct Data {
    a: Vec<u8>,
    b: Vec<u8>,
    sfa: Vec<[u8; 4]>,
    sfb: Vec<[u8; 4]>,
}

impl Data {
    fn random(n: u32, seed: u64, nan: bool) -> Data {
        let mut r = Rng::new(seed);
        let mut scale = || {
            let x = r.next_u64();
            (((4 + x % 6) << 3) | ((x >> 8) & 7)) as u8
        };
        let mut sfa: Vec<[u8; 4]> = (0..128).map(|_| [scale(), scale(), scale(), scale()]).collect();
        let sfb: Vec<[u8; 4]> = (0..128).map(|_| [scale(), scale(), scale(), scale()]).collect();
        if nan {
            sfa[5][2] = 0x7F;
            sfa[77][0] = 0xFF;
        }
        let mut r = Rng::new(seed ^ 0x55);
        Data {
            a: (0..128 * 32).map(|_| r.next_u64() as u8).collect(),
            b: (0..n * 32).map(|_| r.next_u64() as u8).collect(),
            sfa,
            sfb,
        }
    }

    /// The scales as `tcgen05.cp` sources: SFA's 512 bytes, then SFB's.
    fn sf_bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; 1024];
        for (k, sf) in [&self.sfa, &self.sfb].into_iter().enumerate() {
            for (row, s) in sf.iter().enumerate() {
                let (i, q) = (row % 32, row / 32);
                for c in 0..4 {
                    out[k * 512 + i * 16 + q * 4 + c] = s[c];
                }
            }
        }
        out
    }

    /// D[m][n] as f32 bits after one MMA into `old` (f32 bits, when
    /// accumulating), summed as MMA-Sim models the B200: each block of 16
    /// gives its exact sum of products times its two scales, with the
    /// scales' summed exponents as its leading exponent (a zero scale drops
    /// it); every term is truncated toward zero to a multiple of 2^(emax -
    /// 35), the integers summed (exact in f64: under 2^50) and the sum
    /// rounded toward zero to f32. Computed in f64, not the emulator's way.
    fn mma(&self, m: usize, n: usize, old: Option<u32>) -> u32 {
        let (sa, sb) = (self.sfa[m].map(ue4m3), self.sfb[n].map(ue4m3));
        if sa.iter().chain(&sb).any(|x| x.is_nan()) {
            return 0x7FFF_FFFF;
        }
        let nib = |bytes: &[u8], r: usize, k: usize| {
            let b = bytes[r * 32 + k / 2];
            if k.is_multiple_of(2) { b & 15 } else { b >> 4 }
        };
        let mut terms: Vec<(f64, i64)> = (0..4)
            .filter(|&c| sa[c] != 0.0 && sb[c] != 0.0)
            .map(|c| {
                let block: f64 = (16 * c..16 * c + 16)
                    .map(|k| e2m1(nib(&self.a, m, k)) * e2m1(nib(&self.b, n, k)))
                    .sum();
                (
                    block * sa[c] * sb[c],
                    leading_exponent(sa[c], -6) + leading_exponent(sb[c], -6),
                )
            })
            .collect();
        let d = old.map_or(0.0, |bits| f64::from(f32::from_bits(bits)));
        if d != 0.0 {
            terms.push((d, leading_exponent(d, -126)));
        }
        let Some(emax) = terms.iter().map(|t| t.1).max() else {
            return 0;
        };
        let unit = 2f64.powi((emax - 35) as i32);
        let sum: f64 = terms.iter().map(|(x, _)| (x / unit).trunc()).sum();
        if sum == 0.0 { 0 } else { f32_toward_zero(sum * unit) }
    }
}

/// Runs the one-MMA kernel of `o` on `d`: the `ld_cols` words read back
/// per lane (or the error), and the PTX.
fn run_mma(o: &Opts, d: &Data) -> (Result<Vec<u32>, EmuError>, String) {
    run_mma_with(o, d, o.desc_hi(), o.idesc(), &Options::default())
}

/// [`run_mma`] with the A descriptor's high bits `a_hi`, the instruction
/// descriptor `idesc` and the emulator options given.
fn run_mma_with(o: &Opts, d: &Data, a_hi: u64, idesc: u32, options: &Options) -> (Result<Vec<u32>, EmuError>, String) {
    let src = mma_kernel(o);
    let m = Module::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut mem = Memory::new();
    let (a, b, sf) = (
        upload(&mut mem, &d.a, false),
        upload(&mut mem, &d.b, false),
        upload(&mut mem, &d.sf_bytes(), false),
    );
    let out = mem.alloc((128 * o.ld_cols * 4) as usize, true);
    let params = [
        ParamValue::U64(a),
        ParamValue::U64(b),
        ParamValue::U64(sf),
        ParamValue::U64(out),
        ParamValue::U64(a_hi),
        ParamValue::U64(o.desc_hi()),
        ParamValue::U32(idesc),
    ];
    let launch = linear(1, 128, 34816);
    let r = m
        .launch_with("k", &launch, &params, &mut mem, options)
        .map(|_| download_u32(&mem, out, (128 * o.ld_cols) as usize));
    (r, src)
}

#[test]
fn one_mma_matches_an_f64_computation_in_every_layout() {
    for (n, layout, seed) in [(8, 128, 1), (128, 128, 2), (8, 64, 3), (128, 32, 4), (64, 0, 5)] {
        for (twice, nan) in [(false, false), (true, true)] {
            let mut o = Opts::new(n, layout);
            o.twice = twice;
            let d = Data::random(n, seed, nan);
            let (r, _) = run_mma(&o, &d);
            let got = r.unwrap_or_else(|e| panic!("N={n} layout {layout}: {e}"));
            for m in 0..128 {
                for j in 0..n as usize {
                    let first = d.mma(m, j, None);
                    let want = if twice { d.mma(m, j, Some(first)) } else { first };
                    assert_eq!(
                        got[m * n as usize + j],
                        want,
                        "N={n} layout {layout} twice {twice}: D[{m}][{j}] = {} want {}",
                        f32::from_bits(got[m * n as usize + j]),
                        f32::from_bits(want)
                    );
                }
            }
            if nan {
                assert_eq!(got[5 * n as usize], 0x7FFF_FFFF, "NaN scale");
                assert_eq!(got[77 * n as usize + 1], 0x7FFF_FFFF, "0xFF scale is NaN too");
            }
        }
    }
}

#[test]
fn mma_errors_are_reported() {
    let d = Data::random(8, 9, false);
    let mma = "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X";
    // Several warps meet the load errors; the sequential schedule makes
    // warp 0 the first.
    let err = |o: &Opts| {
        let (r, src) = run_mma_with(o, &d, o.desc_hi(), o.idesc(), &Options::sequential());
        (r.unwrap_err(), src)
    };
    // Accumulating into D that was never written.
    let mut o = Opts::new(8, 128);
    o.first_p = true;
    let (e, src) = err(&o);
    assert_error(&e, &src, mma, (0, 0, 0), (0, 0, 0), "uninitialised tensor memory");
    // Scale factors never written, or only in lanes 0..32.
    let mut o = Opts::new(8, 128);
    o.sfa = Sfa::Skip;
    let (e, src) = err(&o);
    assert_error(&e, &src, mma, (0, 0, 0), (0, 0, 0), "A scale factors of row 0");
    assert!(e.message().contains("never written"), "{e}");
    o.sfa = Sfa::WarpZeroSt;
    let (e, src) = err(&o);
    assert_error(&e, &src, mma, (0, 0, 0), (0, 0, 0), "differ between lane quarters");
    // D past the allocation's 256 columns.
    let mut o = Opts::new(8, 128);
    o.d_col = 250;
    let (e, src) = err(&o);
    assert_error(&e, &src, mma, (0, 0, 0), (0, 0, 0), "outside this block's allocation");
    // No commit: every thread waits on an mbarrier nobody arrives at.
    let mut o = Opts::new(8, 128);
    o.commit = false;
    let (e, src) = err(&o);
    assert_error(
        &e,
        &src,
        "mbarrier.try_wait",
        (0, 0, 0),
        (0, 0, 0),
        "mbarrier wait can never complete",
    );
    // D must start at lane 0 (M = 128 uses all lanes).
    let mut o = Opts::new(8, 128);
    o.d_col = 1 << 16;
    let (e, src) = err(&o);
    assert_error(&e, &src, mma, (0, 0, 0), (0, 0, 0), "D address 0x00010000 has lane 1");
    // Reading columns the MMA did not write.
    let mut o = Opts::new(8, 128);
    o.ld_cols = 16;
    let (e, src) = err(&o);
    assert_error(
        &e,
        &src,
        "tcgen05.ld",
        (0, 0, 0),
        (0, 0, 0),
        "never written: lane 0, column 8",
    );
}

#[test]
fn bad_descriptors_are_rejected() {
    let d = Data::random(8, 10, false);
    let mma = "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X";
    let o = Opts::new(8, 128);
    let run = |a_hi: u64, idesc: u32| {
        let (r, src) = run_mma_with(&o, &d, a_hi, idesc, &Options::default());
        let e = r.unwrap_err();
        assert_error(&e, &src, mma, (0, 0, 0), (0, 0, 0), "");
        e.message().to_string()
    };
    let good = o.idesc();
    let hi = o.desc_hi();
    for (idesc, msg) in [
        (good & !(7 << 7) | (5 << 7), "must be E2M1"),
        (good & !(3 << 10), "must be E2M1"),
        (good | 1 << 15, "transpose"),
        (good | 1 << 16, "transpose"),
        (good | 1 << 23, "UE8M0"),
        (good & !(3 << 27) | (2 << 27), "must be 128"),
        (good | 1 << 2, "sparse"),
        (good | 1 << 31, "K = 96"),
        (good & !(0x3F << 17), "N = 0"),
        (good | (0x3F << 17), "N = 504"),
        (good | 1 << 13, "negating"),
        (good | 1 << 4, "scale-factor IDs"),
        (good | 1 << 25, "reserved"),
    ] {
        let m = run(hi, idesc);
        assert!(
            m.contains(msg) && m.contains("instruction descriptor"),
            "{idesc:#x}: {m}"
        );
    }
    for (a_hi, msg) in [
        (hi & !(1 << 46), "must be 0b001"),
        (hi | 1 << 47, "must be 0b001"),
        (hi | 1 << 49, "base offset 1"),
        (hi | 1 << 52, "bit 52"),
        (hi & !(7 << 61) | (1 << 61), "unsupported"),
        (hi & !(7 << 61) | (3 << 61), "not a valid layout"),
        (hi | 1 << 56, "reserved"),
    ] {
        let m = run(a_hi, good);
        assert!(
            m.contains(msg) && m.contains("A shared-memory descriptor"),
            "{a_hi:#x}: {m}"
        );
    }
}
