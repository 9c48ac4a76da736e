//! Hopper warpgroup MMA (`wgmma`) on hand-written sm_90a kernels: every
//! shape class, f16 and bf16, A from registers and from shared memory,
//! every shared-memory layout over a K loop, negated operands, scale-d
//! false and true, compared bit for bit with the H100's sum (truncated
//! below the largest term, rounded toward zero), computed here another way
//! than the emulator does; and every error of the asynchronous model with its
//! kernel, block, thread and line.

use nvfp4_dsl::emu::{EmuError, Launch, Memory, Module, Options, ParamValue};

#[path = "../common/mod.rs"]
mod common;
mod errors;
use common::{Rng, assert_error, download_u32, f32_toward_zero, leading_exponent, line_of, upload};

const HEAD: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// Shared address of the dynamic block: after the reserved KiB and the
/// 8-byte `mbar`, at the next 1024-byte boundary.
const DYN: u32 = 0x800;

// ----- the reference -----

/// One K step of the H100's wgmma for one element of D, as f32 bits: the
/// products of `pairs` (f16 or bf16 values, with `least` that format's
/// least normal exponent) plus `d`. Each nonzero term's leading exponent
/// is its factors' summed (a product's significand is in [1, 4)) or d's
/// own; every term is truncated toward zero to a multiple of 2^(emax -
/// 25), the integers are summed (exact in f64: under 2^33) and the sum is
/// rounded toward zero to f32. NaN (`0x7FFFFFFF`) if any term is NaN or
/// infinities of both signs meet, an infinity if one does, +0 for zero.
fn h100_step(pairs: &[(f64, f64)], d: Option<f64>, least: i64) -> u32 {
    let mut xs: Vec<f64> = pairs.iter().map(|(a, b)| a * b).collect();
    xs.extend(d);
    if xs.iter().any(|x| x.is_nan()) {
        return 0x7FFF_FFFF;
    }
    let (pinf, ninf) = (xs.contains(&f64::INFINITY), xs.contains(&f64::NEG_INFINITY));
    if pinf && ninf {
        return 0x7FFF_FFFF;
    }
    if pinf || ninf {
        return if pinf { 0x7F80_0000 } else { 0xFF80_0000 };
    }
    let mut terms: Vec<(f64, i64)> = pairs
        .iter()
        .filter(|(a, b)| *a != 0.0 && *b != 0.0)
        .map(|&(a, b)| (a * b, leading_exponent(a, least) + leading_exponent(b, least)))
        .collect();
    terms.extend(d.filter(|x| *x != 0.0).map(|x| (x, leading_exponent(x, -126))));
    let Some(emax) = terms.iter().map(|t| t.1).max() else {
        return 0;
    };
    let unit = 2f64.powi((emax - 25) as i32);
    let sum: f64 = terms.iter().map(|(x, _)| (x / unit).trunc()).sum();
    if sum == 0.0 {
        return 0;
    }
    f32_toward_zero(sum * unit)
}

#[test]
fn the_reference_truncates_like_the_h100() {
    let f16 = -14;
    let p = |v: &[(f64, f64)]| v.to_vec();
    // 1 + 3 * 2^-25: 25 bits below the largest term are kept, the f32
    // result truncated.
    assert_eq!(
        h100_step(&p(&[(1.0, 1.0), (3.0 * 2f64.powi(-13), 2f64.powi(-12))]), None, f16),
        1f32.to_bits()
    );
    assert_eq!(
        h100_step(
            &p(&[(1.0, 1.0), (3.0 * 2f64.powi(-13), 2f64.powi(-12))]),
            Some(-1.0),
            f16
        ),
        (3.0 * 2f32.powi(-25)).to_bits()
    );
    // Each term below 2^(emax - 25) vanishes.
    let small = vec![(2f64.powi(-13), 2f64.powi(-13)); 15];
    assert_eq!(
        h100_step(&[vec![(1.0, 1.0)], small].concat(), None, f16),
        1f32.to_bits()
    );
    // 1.5 * 1.5 aligns at 2^0: fifteen 2^-25 terms survive.
    let tiny = vec![(2f64.powi(-13), 2f64.powi(-12)); 15];
    assert_eq!(
        h100_step(&[vec![(1.5, 1.5)], tiny].concat(), None, f16),
        (2.25f32 + 2f32.powi(-22)).to_bits()
    );
    // Subnormal factors sit at the least normal exponent.
    assert_eq!(
        h100_step(&p(&[(2f64.powi(-20), 1.0)]), None, f16),
        2f32.powi(-20).to_bits()
    );
    // Toward zero, negative too (-1 - 1.5 * 2^-23); overflow is infinite;
    // zero is +0.
    assert_eq!(
        h100_step(&p(&[(-1.0, 1.0), (-3.0 * 2f64.powi(-13), 2f64.powi(-11))]), None, f16),
        (-1.0f32 - 2f32.powi(-23)).to_bits()
    );
    assert_eq!(
        h100_step(&p(&[(2f64.powi(64), 2f64.powi(64))]), None, -126),
        0x7F80_0000
    );
    assert_eq!(h100_step(&p(&[(-5.0, 1.0), (5.0, 1.0)]), Some(-0.0), f16), 0);
    assert_eq!(h100_step(&p(&[(f64::INFINITY, 0.0)]), None, f16), 0x7FFF_FFFF);
}

// ----- inputs -----

/// f16 or bf16 bits.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    F16,
    Bf16,
}

impl Kind {
    fn value(self, h: u16) -> f64 {
        match self {
            Kind::F16 => f64::from(half::f16::from_bits(h).to_f32()),
            Kind::Bf16 => f64::from(half::bf16::from_bits(h).to_f32()),
        }
    }

    /// The least normal exponent: where subnormals sit.
    fn least_exponent(self) -> i64 {
        match self {
            Kind::F16 => -14,
            Kind::Bf16 => -126,
        }
    }

    /// Random finite bits: mostly moderate magnitudes, one in eight
    /// subnormal, one in eight anywhere in the range.
    fn random(self, r: &mut Rng) -> u16 {
        let x = r.next_u64();
        let (ebits, mbits) = if self == Kind::F16 { (5, 10) } else { (8, 7) };
        let bias = (1u64 << (ebits - 1)) - 1;
        let max_e = (1u64 << ebits) - 2;
        let e = match x % 8 {
            0 => 0,
            1 => (x >> 8) % (max_e + 1),
            _ => bias - 6 + (x >> 8) % 12,
        };
        let m = (x >> 20) & ((1 << mbits) - 1);
        ((x >> 40 & 1) << 15 | e << mbits | m) as u16
    }
}

/// One wgmma configuration.
#[derive(Clone, Copy)]
struct Cfg {
    n: u32,
    kind: Kind,
    /// A from shared memory (else registers).
    ss: bool,
    /// 0 (no swizzle) or the swizzle span.
    layout: u32,
    steps: u32,
    neg_a: bool,
    neg_b: bool,
    /// The first step accumulates into D loaded from memory (else scale-d
    /// is false there).
    acc: bool,
    /// scale-d of the first step as a predicate register (else an
    /// immediate).
    pred: bool,
    warpgroups: u32,
}

impl Cfg {
    fn new(n: u32, kind: Kind, ss: bool, layout: u32, steps: u32) -> Cfg {
        Cfg {
            n,
            kind,
            ss,
            layout,
            steps,
            neg_a: false,
            neg_b: false,
            acc: false,
            pred: false,
            warpgroups: 1,
        }
    }

    fn m(&self) -> u32 {
        64 * self.warpgroups
    }

    fn k(&self) -> u32 {
        16 * self.steps
    }

    /// Bytes per row of a tile (the swizzle span; 32 without a swizzle).
    fn span(&self) -> u32 {
        if self.layout == 0 { 32 } else { self.layout }
    }

    /// SBO: bytes between 8-row groups.
    fn sbo(&self) -> u32 {
        if self.layout == 0 { 128 } else { 8 * self.layout }
    }

    /// The byte offset of element `(r, k)` of a K-major operand of `rows`
    /// rows: tiles of `span` bytes per row one after another along K;
    /// without a swizzle, 8 x 16-byte core matrices, LBO = `rows * 16`
    /// apart along K, SBO apart along the rows.
    fn offset(&self, rows: u32, r: u32, k: u32) -> u32 {
        if self.layout == 0 {
            let (s, h, j) = (k / 16, k % 16 / 8, k % 8);
            return s * rows * 32 + (r / 8) * 128 + h * rows * 16 + (r % 8) * 16 + 2 * j;
        }
        let per = self.layout / 2;
        let lin = r * self.layout + 2 * (k % per);
        let mask = self.layout / 16 - 1;
        (k / per) * rows * self.layout + (lin ^ (((lin >> 7) & mask) << 4))
    }

    /// The descriptor's bits above the start address for an operand of
    /// `rows` rows.
    fn desc_hi(&self, rows: u32) -> u64 {
        let (code, lbo) = match self.layout {
            0 => (0u64, rows * 16),
            128 => (1, 16),
            64 => (2, 16),
            _ => (3, 16),
        };
        (code << 62) | (u64::from(self.sbo() >> 4) << 32) | (u64::from(lbo >> 4) << 16)
    }

    /// Bytes of an operand of `rows` rows: whole tiles.
    fn region_bytes(&self, rows: u32) -> u32 {
        rows * self.span() * (2 * self.k()).div_ceil(self.span())
    }

    /// The offset of B in the shared image.
    fn b_region(&self) -> u32 {
        self.region_bytes(self.m()).div_ceil(1024) * 1024
    }

    /// The offset from an operand's start of its tile for step `s`: K
    /// steps of 16 values are 32 bytes apart inside a tile.
    fn step_offset(&self, rows: u32, s: u32) -> u32 {
        let per = self.span() / 32;
        (s / per) * rows * self.span() + 32 * (s % per)
    }
}

/// Inputs of one run.
struct Data {
    a: Vec<u16>,
    b: Vec<u16>,
    d: Vec<f32>,
}

impl Data {
    /// Random operands; rows of A with `m % 4 == 0` repeat their first 8
    /// values in each step, rows of B with `n % 3 == 0` negate them, so
    /// those dot products cancel (all but the last pair, off by one unit).
    fn random(c: &Cfg, seed: u64) -> Data {
        let mut r = Rng::new(seed);
        let (m, n, k) = (c.m() as usize, c.n as usize, c.k() as usize);
        let mut a: Vec<u16> = (0..m * k).map(|_| c.kind.random(&mut r)).collect();
        let mut b: Vec<u16> = (0..n * k).map(|_| c.kind.random(&mut r)).collect();
        for s in 0..k / 16 {
            for j in 0..8 {
                for row in (0..m).step_by(4) {
                    a[row * k + 16 * s + 8 + j] = a[row * k + 16 * s + j];
                }
                for row in (0..n).step_by(3) {
                    let x = b[row * k + 16 * s + j] ^ 0x8000;
                    b[row * k + 16 * s + 8 + j] = if j == 7 { x.wrapping_add(1) } else { x };
                }
            }
        }
        let d = (0..m * n)
            .map(|_| {
                let x = r.next_u64();
                let e = match x % 8 {
                    0 => 0,
                    1 => 0,
                    _ => 100 + (x >> 8) % 50,
                } as u32;
                f32::from_bits(((x >> 32) as u32 & 0x807F_FFFF) | e << 23)
            })
            .collect();
        Data { a, b, d }
    }

    /// The shared image: A (for A from shared memory) at 0, B at
    /// `b_region`, each in the layout of `c`.
    fn image(&self, c: &Cfg) -> Vec<u8> {
        let (m, n, k) = (c.m(), c.n, c.k());
        let mut img = vec![0u8; (c.b_region() + c.region_bytes(n)) as usize];
        let mut put = |base: u32, rows: u32, vals: &[u16]| {
            for r in 0..rows {
                for kk in 0..k {
                    let o = (base + c.offset(rows, r, kk)) as usize;
                    img[o..o + 2].copy_from_slice(&vals[(r * k + kk) as usize].to_le_bytes());
                }
            }
        };
        if c.ss {
            put(0, m, &self.a);
        }
        put(c.b_region(), n, &self.b);
        img
    }

    /// D after every step, as f32 bits, row-major `m x n`.
    fn reference(&self, c: &Cfg) -> Vec<u32> {
        let (m, n, k) = (c.m() as usize, c.n as usize, c.k() as usize);
        let sa = if c.neg_a { -1.0 } else { 1.0 };
        let sb = if c.neg_b { -1.0 } else { 1.0 };
        let mut d: Vec<u32> = self.d.iter().map(|x| x.to_bits()).collect();
        for s in 0..c.steps as usize {
            for i in 0..m {
                for j in 0..n {
                    let pairs: Vec<(f64, f64)> = (16 * s..16 * s + 16)
                        .map(|kk| {
                            (
                                sa * c.kind.value(self.a[i * k + kk]),
                                sb * c.kind.value(self.b[j * k + kk]),
                            )
                        })
                        .collect();
                    let old = (s > 0 || c.acc).then(|| f64::from(f32::from_bits(d[i * n + j])));
                    d[i * n + j] = h100_step(&pairs, old, c.kind.least_exponent());
                }
            }
        }
        d
    }
}

// ----- the kernel -----

/// The PTX of `c`: `threads = 128 * warpgroups` threads copy the shared
/// image from global memory, load their A fragments (A from registers)
/// and initial D (when accumulating), run the K loop (a commit after every
/// other step, then `wait_group 1` and `wait_group 0`) and store D.
/// `// @name` comments mark where the error tests insert instructions.
fn kernel(c: &Cfg) -> String {
    let (n, k) = (c.n, c.k());
    let nd = n / 2;
    let threads = 128 * c.warpgroups;
    let ty = if c.kind == Kind::F16 { "f16.f16" } else { "bf16.bf16" };
    let mut s = format!(
        "{HEAD}.shared .align 8 .b8 mbar[8];\n.extern .shared .align 1024 .b8 dyn[];\n.visible .entry k(.param .u64 img, .param .u32 img_bytes, .param .u64 in_a, .param .u64 d_in, .param .u64 out, .param .u64 a_hi, .param .u64 b_hi)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<320>;\n\t.reg .b64 %rd<64>;\n\t.reg .f32 %f<{nd}>;\n\t.reg .b32 %a<{}>;\n",
        4 * c.steps
    );
    s += "\tld.param.u64 %rd1, [img];\n\tld.param.u32 %r1, [img_bytes];\n\tld.param.u64 %rd2, [in_a];\n\tld.param.u64 %rd3, [d_in];\n\tld.param.u64 %rd4, [out];\n\tld.param.u64 %rd5, [a_hi];\n\tld.param.u64 %rd6, [b_hi];\n\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r3, dyn;\n\tsetmaxnreg.inc.sync.aligned.u32 240;\n\t// @start\n";
    // Copy the image, 16 bytes per thread and turn.
    s += &format!(
        "\tshl.b32 %r4, %r2, 4;\n$L_copy:\n\tsetp.ge.u32 %p1, %r4, %r1;\n\t@%p1 bra $L_copied;\n\tcvt.u64.u32 %rd7, %r4;\n\tadd.s64 %rd8, %rd1, %rd7;\n\tld.global.v4.u32 {{%r5, %r6, %r7, %r8}}, [%rd8];\n\tadd.u32 %r9, %r3, %r4;\n\tst.shared.v4.u32 [%r9], {{%r5, %r6, %r7, %r8}};\n\tadd.u32 %r4, %r4, {};\n\tbra $L_copy;\n$L_copied:\n\tfence.proxy.async.shared::cta;\n\tbar.sync 0;\n",
        16 * threads
    );
    // Warp, warpgroup, lane quad g and t, and the lane's first row.
    s += "\tshr.u32 %r10, %r2, 5;\n\tand.b32 %r11, %r10, 3;\n\tshr.u32 %r12, %r10, 2;\n\tand.b32 %r13, %r2, 31;\n\tshr.u32 %r14, %r13, 2;\n\tand.b32 %r15, %r13, 3;\n\tmul.lo.u32 %r16, %r12, 64;\n\tmad.lo.u32 %r16, %r11, 16, %r16;\n\tadd.u32 %r16, %r16, %r14;\n";
    if !c.ss {
        // A fragment q of step s: row g + 8 (q % 2), columns 16 s + 2 t +
        // 8 (q / 2) and the next.
        s += &format!(
            "\tmul.lo.u32 %r17, %r16, {k};\n\tshl.b32 %r18, %r15, 1;\n\tadd.u32 %r17, %r17, %r18;\n\tmul.wide.u32 %rd9, %r17, 2;\n\tadd.s64 %rd9, %rd2, %rd9;\n"
        );
        for st in 0..c.steps {
            for q in 0..4 {
                let off = 2 * (8 * (q % 2) * k + 16 * st + 8 * (q / 2));
                s += &format!("\tld.global.u32 %a{}, [%rd9+{off}];\n", 4 * st + q);
            }
        }
    }
    // D register 4 i + q: row g + 8 (q / 2), column 8 i + 2 t + q % 2.
    s += &format!(
        "\tmul.lo.u32 %r19, %r16, {n};\n\tshl.b32 %r18, %r15, 1;\n\tadd.u32 %r19, %r19, %r18;\n\tmul.wide.u32 %rd10, %r19, 4;\n\tadd.s64 %rd11, %rd3, %rd10;\n\tadd.s64 %rd12, %rd4, %rd10;\n"
    );
    let d_off = |j: u32| 4 * (8 * (j % 4 / 2) * n + 8 * (j / 4) + j % 2);
    if c.acc {
        for j in 0..nd {
            s += &format!("\tld.global.f32 %f{j}, [%rd11+{}];\n", d_off(j));
        }
    }
    // Descriptors: start address >> 4 | the high bits. This warpgroup's
    // rows of A start 8 SBO into A.
    s += &format!(
        "\tmul.lo.u32 %r20, %r12, {};\n\tadd.u32 %r20, %r20, %r3;\n\tadd.u32 %r21, %r3, {};\n",
        8 * c.sbo(),
        c.b_region()
    );
    let dregs = (0..nd).map(|j| format!("%f{j}")).collect::<Vec<_>>().join(", ");
    s += "\t// @before_fence\n\twgmma.fence.sync.aligned;\n\t// @after_fence\n";
    if c.pred {
        // No thread has index 100000: true when accumulating.
        s += &format!("\tsetp.{}.u32 %p2, %r2, 100000;\n", if c.acc { "ne" } else { "eq" });
    }
    for st in 0..c.steps {
        let operands = [(30, "%r20", c.m(), "%rd5"), (31, "%r21", n, "%rd6")];
        for &(reg, base, rows, hi) in &operands[usize::from(!c.ss)..] {
            s += &format!(
                "\tadd.u32 %r{reg}, {base}, {};\n\tshr.u32 %r{reg}, %r{reg}, 4;\n\tand.b32 %r{reg}, %r{reg}, 16383;\n\tcvt.u64.u32 %rd{reg}, %r{reg};\n\tor.b64 %rd{reg}, %rd{reg}, {hi};\n",
                c.step_offset(rows, st)
            );
        }
        let a = if c.ss {
            "%rd30".to_string()
        } else {
            format!("{{%a{}, %a{}, %a{}, %a{}}}", 4 * st, 4 * st + 1, 4 * st + 2, 4 * st + 3)
        };
        let scale_d = match (st, c.pred) {
            (0, true) => "%p2".to_string(),
            (0, false) => u32::from(c.acc).to_string(),
            _ => "1".to_string(),
        };
        let sa = if c.neg_a { -1 } else { 1 };
        let sb = if c.neg_b { -1 } else { 1 };
        let trans = if c.ss { "0, 0" } else { "0" };
        s += &format!(
            "\twgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty} {{{dregs}}}, {a}, %rd31, {scale_d}, {sa}, {sb}, {trans};\n"
        );
        if st % 2 == 1 && st + 1 < c.steps {
            s += "\twgmma.commit_group.sync.aligned;\n";
        }
    }
    s += "\t// @after_mma\n\twgmma.commit_group.sync.aligned;\n\t// @before_wait\n\twgmma.wait_group.sync.aligned 1;\n\twgmma.wait_group.sync.aligned 0;\n\t// @after_wait\n";
    for j in 0..nd {
        s += &format!("\tst.global.f32 [%rd12+{}], %f{j};\n", d_off(j));
    }
    s += "\tret;\n}\n";
    s
}

/// Runs `src` (the kernel of `c`, possibly altered) on `d` with the
/// descriptors' high bits `a_hi`, `b_hi`: D (`m x n` f32 bits) or the
/// error.
fn run_with(c: &Cfg, d: &Data, src: &str, a_hi: u64, b_hi: u64, threads: u32) -> Result<Vec<u32>, EmuError> {
    run_opts(c, d, src, (a_hi, b_hi), threads, &Options::default())
}

/// [`run_with`] under `options`.
fn run_opts(
    c: &Cfg,
    d: &Data,
    src: &str,
    (a_hi, b_hi): (u64, u64),
    threads: u32,
    options: &Options,
) -> Result<Vec<u32>, EmuError> {
    let module = Module::parse(src)?;
    let mut mem = Memory::new();
    let img = d.image(c);
    let img_at = upload(&mut mem, &img, false);
    let a_bytes: Vec<u8> = d.a.iter().flat_map(|x| x.to_le_bytes()).collect();
    let a_at = upload(&mut mem, &a_bytes, false);
    let d_bytes: Vec<u8> = d.d.iter().flat_map(|x| x.to_le_bytes()).collect();
    let d_at = upload(&mut mem, &d_bytes, false);
    let out = mem.alloc(d_bytes.len(), true);
    let params = [
        ParamValue::U64(img_at),
        ParamValue::U32(img.len() as u32),
        ParamValue::U64(a_at),
        ParamValue::U64(d_at),
        ParamValue::U64(out),
        ParamValue::U64(a_hi),
        ParamValue::U64(b_hi),
    ];
    let shared = img.len() as u32;
    module.launch_with(
        "k",
        &Launch::new((1, 1, 1), (threads, 1, 1), shared),
        &params,
        &mut mem,
        options,
    )?;
    Ok(download_u32(&mem, out, d.d.len()))
}

fn run(c: &Cfg, d: &Data) -> Result<Vec<u32>, EmuError> {
    run_with(c, d, &kernel(c), c.desc_hi(c.m()), c.desc_hi(c.n), 128 * c.warpgroups)
}

fn check(c: &Cfg, seed: u64) {
    let d = Data::random(c, seed);
    let got = run(c, &d).unwrap_or_else(|e| panic!("{e}"));
    let want = d.reference(c);
    let n = c.n as usize;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            w,
            "N={} {:?} ss={} layout={} steps={}: D[{}][{}] = {:e}, want {:e}",
            c.n,
            if c.kind == Kind::F16 { "f16" } else { "bf16" },
            c.ss,
            c.layout,
            c.steps,
            i / n,
            i % n,
            f32::from_bits(*g),
            f32::from_bits(*w)
        );
    }
}

#[test]
fn wgmma_matches_exact_sums_in_every_layout() {
    let f = Kind::F16;
    let b = Kind::Bf16;
    for (k, c) in [
        Cfg::new(8, f, false, 128, 4),
        Cfg::new(8, b, true, 0, 3),
        Cfg::new(64, b, true, 64, 3),
        Cfg::new(64, f, false, 32, 2),
        Cfg::new(128, f, true, 32, 2),
        Cfg::new(128, b, false, 128, 8),
        Cfg::new(256, b, false, 0, 2),
        Cfg::new(256, f, true, 128, 2),
        Cfg::new(24, f, true, 64, 5),
    ]
    .into_iter()
    .enumerate()
    {
        check(&c, 100 + k as u64);
    }
}

#[test]
fn wgmma_negation_accumulation_and_two_warpgroups() {
    let mut c = Cfg::new(64, Kind::F16, true, 128, 3);
    c.neg_a = true;
    c.acc = true;
    check(&c, 7);
    let mut c = Cfg::new(32, Kind::Bf16, false, 64, 2);
    c.neg_b = true;
    c.pred = true;
    check(&c, 8);
    c.acc = true;
    check(&c, 9);
    let mut c = Cfg::new(16, Kind::F16, true, 0, 2);
    c.warpgroups = 2;
    c.acc = true;
    check(&c, 10);
    let mut c = Cfg::new(40, Kind::Bf16, false, 32, 3);
    c.warpgroups = 2;
    c.neg_a = true;
    c.neg_b = true;
    check(&c, 11);
}

#[test]
fn wgmma_special_values() {
    // NaN, infinities (inf * 0, inf - inf) and the largest values.
    let c = Cfg::new(16, Kind::F16, false, 128, 2);
    let mut d = Data::random(&c, 12);
    let k = c.k() as usize;
    d.a[0] = 0x7E00; // NaN in row 0
    d.a[k + 3] = 0x7C00; // +inf in rows 1 and 2 at k = 3
    d.a[2 * k + 3] = 0x7C00;
    d.b[3] = 0; // ... times 0 in column 0
    d.b[k + 3] = 0x3C00; // ... times 1 in column 1
    d.b[2 * k + 3] = 0xBC00; // ... times -1 in column 2
    d.a[2 * k + 20] = 0xFC00; // -inf in row 2 at k = 20 (step 1)
    d.b[2 * k + 20] = 0xBC00; // ... times -1 in column 2: +inf
    d.a[3 * k] = 0x7BFF; // 65504 in row 3
    d.b[0] = 0x7BFF;
    let got = run(&c, &d).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, d.reference(&c));
    assert_eq!(got[0], 0x7FFF_FFFF, "NaN");
    assert_eq!(got[16], 0x7FFF_FFFF, "inf * 0");
    assert_eq!(got[17], 0x7F80_0000, "inf");
    assert_eq!(got[18], 0xFF80_0000, "-inf");
    assert_eq!(got[34], 0x7FFF_FFFF, "-inf, then + inf");
}

/// Two pending wgmmas read the same A registers and write different
/// accumulators.
#[test]
fn pending_wgmmas_may_share_a_registers() {
    let c = Cfg::new(8, Kind::F16, false, 128, 1);
    let d = Data::random(&c, 13);
    let src = kernel(&c).replace(
        "\t// @after_mma\n",
        "\t.reg .f32 %g<4>;\n\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%g0, %g1, %g2, %g3}, {%a0, %a1, %a2, %a3}, %rd31, 0, -1, 1, 0;\n\t// @after_mma\n",
    );
    let src = src.replace(
        "\t// @after_wait\n",
        "\tadd.f32 %f0, %f0, %g0;\n\tadd.f32 %f1, %f1, %g1;\n\tadd.f32 %f2, %f2, %g2;\n\tadd.f32 %f3, %f3, %g3;\n\t// @after_wait\n",
    );
    let got = run_with(&c, &d, &src, c.desc_hi(64), c.desc_hi(8), 128).unwrap_or_else(|e| panic!("{e}"));
    // round(A B) + round(-A B) = +0.
    assert!(got.iter().all(|&x| x == 0), "{got:x?}");
}

/// A wgmma into other accumulators between two steps of a chain (all
/// pending together): the chain's D, which the emulator keeps out of the
/// registers between its steps, is written back before the other one
/// completes, and the chain's result is unchanged.
#[test]
fn another_accumulator_between_the_steps_of_a_chain() {
    let mut c = Cfg::new(128, Kind::F16, false, 128, 4);
    c.acc = true;
    let d = Data::random(&c, 14);
    let first = "wgmma.mma_async.sync.aligned.m64n128k16";
    let src = kernel(&c);
    let at =
        src.find(first).expect("a wgmma") + src[src.find(first).expect("a wgmma")..].find('\n').expect("a line") + 1;
    let other = "\t.reg .f32 %g<4>;\n\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%g0, %g1, %g2, %g3}, {%a0, %a1, %a2, %a3}, %rd31, 0, 1, 1, 0;\n";
    let src = format!("{}{other}{}", &src[..at], &src[at..]);
    let got = run_with(&c, &d, &src, c.desc_hi(64), c.desc_hi(128), 128).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, d.reference(&c));
}
