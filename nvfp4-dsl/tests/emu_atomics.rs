//! `atom.add`/`red.add` on floats against what an H100 computed for the
//! same inputs (recorded with a CUDA C++ probe of these instructions on
//! global and shared memory, driver 580.159.04), and the atomic forms the
//! decoder refuses because ptxas does.

use nvfp4_dsl::emu::{Memory, Module, ParamValue};

mod common;
use common::{download_u32, linear, upload_u32};

/// Thread `t` stores `a = ab[2t]` to its word of global memory (`out[2t]`)
/// and of shared memory, adds `b = ab[2t + 1]` to both with `head` (`atom`
/// into a register or `red`), and writes the shared sum to `out[2t + 1]`.
/// Words of `bits` (32 or 64) bits, `ty` the add's type.
fn kernel(head: &str, ty: &str, bits: u32) -> String {
    let (bytes, r) = (bits / 8, if bits == 32 { "%r" } else { "%rd" });
    let old = if head == "atom" {
        format!("{r}8, ")
    } else {
        String::new()
    };
    format!(
        "
.version 8.0
.target sm_90
.address_size 64
.shared .align 8 .b8 sm[1024];
.visible .entry k(.param .u64 ab, .param .u64 out)
{{
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<12>;
\tld.param.u64 %rd1, [ab];
\tld.param.u64 %rd2, [out];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd3, %r1, {two};
\tadd.s64 %rd4, %rd1, %rd3;
\tadd.s64 %rd5, %rd2, %rd3;
\tld.global.b{bits} {r}6, [%rd4];
\tld.global.b{bits} {r}7, [%rd4+{bytes}];
\tmul.lo.u32 %r2, %r1, {bytes};
\tmov.u32 %r3, sm;
\tadd.u32 %r3, %r3, %r2;
\tst.global.b{bits} [%rd5], {r}6;
\tst.shared.b{bits} [%r3], {r}6;
\t{head}.relaxed.gpu.global.add.{ty} {old}[%rd5], {r}7;
\t{head}.relaxed.cta.shared.add.{ty} {old}[%r3], {r}7;
\tld.shared.b{bits} {r}9, [%r3];
\tst.global.b{bits} [%rd5+{bytes}], {r}9;
\tret;
}}
",
        two = 2 * bytes
    )
}

/// Runs [`kernel`] on `ab` (pairs of values, each of `words` 32-bit words,
/// low first) and returns `out`.
fn run(src: &str, ab: &[u32], words: usize) -> Vec<u32> {
    let module = Module::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut mem = Memory::new();
    let din = upload_u32(&mut mem, ab, false);
    let dout = upload_u32(&mut mem, &vec![0xDEAD_BEEF; ab.len()], true);
    let lanes = (ab.len() / (2 * words)) as u32;
    module
        .launch(
            "k",
            &linear(1, lanes, 0),
            &[ParamValue::U64(din), ParamValue::U64(dout)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{e}\n{src}"));
    download_u32(&mem, dout, ab.len())
}

/// `a`, `b`, and the H100's sums: `f32` on global, `f32` on shared,
/// `f16x2` and `bf16x2` (the same on both).
const RECORDED_32: &[[u32; 6]] = &[
    [
        0x0000_0001,
        0x0000_0001,
        0x0000_0000,
        0x0000_0002,
        0x0000_0002,
        0x0000_0002,
    ],
    [
        0x0040_0000,
        0x0040_0000,
        0x0000_0000,
        0x0080_0000,
        0x0080_0000,
        0x0080_0000,
    ],
    [
        0x8000_0001,
        0x0000_0001,
        0x0000_0000,
        0x0000_0000,
        0x0000_0002,
        0x0000_0002,
    ],
    [
        0x0080_0000,
        0x8000_0001,
        0x0080_0000,
        0x007F_FFFF,
        0x0080_0001,
        0x0080_0001,
    ],
    [
        0x3F80_0000,
        0x3380_0000,
        0x3F80_0000,
        0x3F80_0000,
        0x4038_0000,
        0x3F80_0000,
    ],
    [
        0x7FC0_0001,
        0x3F80_0000,
        0x7FFF_FFFF,
        0x7FFF_FFFF,
        0x7FFF_0001,
        0x7FFF_0001,
    ],
    [
        0xFF80_0000,
        0x7F80_0000,
        0x7FFF_FFFF,
        0x7FFF_FFFF,
        0x7FFF_0000,
        0x7FFF_0000,
    ],
    [
        0x0000_0000,
        0x8000_0000,
        0x0000_0000,
        0x0000_0000,
        0x0000_0000,
        0x0000_0000,
    ],
    [
        0x3C00_3C00,
        0x0001_3C00,
        0x3C00_3C00,
        0x3C00_3C00,
        0x3C00_4000,
        0x3C00_3C80,
    ],
    [
        0x0001_0001,
        0x0001_0001,
        0x0000_0000,
        0x0002_0002,
        0x0002_0002,
        0x0002_0002,
    ],
    [
        0x7BFF_7BFF,
        0x3C00_3C00,
        0x7BFF_7BFF,
        0x7BFF_7BFF,
        0x7BFF_7BFF,
        0x7BFF_7BFF,
    ],
    [
        0x03FF_8001,
        0x0001_8001,
        0x03FF_8001,
        0x03FF_8601,
        0x0400_8002,
        0x03FF_8002,
    ],
    [
        0x7FC1_7FC1,
        0x3C00_3C00,
        0x7FFF_FFFF,
        0x7FFF_FFFF,
        0x7FFF_7FFF,
        0x7FFF_7FFF,
    ],
    [
        0x3F80_3F80,
        0x0001_3F80,
        0x3F80_3F80,
        0x3F80_3F80,
        0x3F80_4380,
        0x3F80_4000,
    ],
    [
        0x0001_8001,
        0x8001_0001,
        0x0000_0000,
        0x0000_8000,
        0x0000_0000,
        0x0000_0000,
    ],
    [
        0x8000_0000,
        0x8000_0000,
        0x8000_0000,
        0x8000_0000,
        0x8000_0000,
        0x8000_0000,
    ],
];

/// `a`, `b`, and the H100's `f64` sums on global and (where recorded) on
/// shared memory.
const RECORDED_64: &[(u64, u64, u64, Option<u64>)] = &[
    (
        0x7FF8_0000_0000_0001,
        0x7FF8_0000_0000_0002,
        0x7FF8_0000_0000_0002,
        Some(0x7FF8_0000_0000_0001),
    ),
    (
        0x7FF0_0000_0000_0001,
        0x7FF8_0000_0000_0002,
        0x7FF8_0000_0000_0002,
        Some(0x7FF8_0000_0000_0001),
    ),
    (
        0x7FF8_0000_0000_0001,
        0x7FF0_0000_0000_0002,
        0x7FF0_0000_0000_0002,
        Some(0x7FF8_0000_0000_0001),
    ),
    (
        0xFFF8_0000_0000_0005,
        0x3FF0_0000_0000_0000,
        0xFFF8_0000_0000_0005,
        Some(0xFFF8_0000_0000_0005),
    ),
    (
        0x3FF0_0000_0000_0000,
        0xFFF0_0000_0000_0003,
        0xFFF0_0000_0000_0003,
        Some(0xFFF8_0000_0000_0003),
    ),
    (
        0x7FF0_0000_0000_0000,
        0x7FF0_0000_0000_0000,
        0x7FF0_0000_0000_0000,
        Some(0x7FF0_0000_0000_0000),
    ),
    (
        0x0000_0000_0000_0001,
        0x8000_0000_0000_0001,
        0x0000_0000_0000_0000,
        Some(0x0000_0000_0000_0000),
    ),
    (
        0x7FF0_0000_0000_0002,
        0x3FF0_0000_0000_0000,
        0x7FF0_0000_0000_0002,
        Some(0x7FF8_0000_0000_0002),
    ),
    (
        0x0000_0000_0000_0001,
        0x0000_0000_0000_0001,
        0x0000_0000_0000_0002,
        None,
    ),
    (
        0x7FF0_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        0xFFF8_0000_0000_0000,
        None,
    ),
    (
        0x8000_0000_0000_0000,
        0x8000_0000_0000_0000,
        0x8000_0000_0000_0000,
        None,
    ),
    (
        0x3FF0_0000_0000_0000,
        0x3CA0_0000_0000_0000,
        0x3FF0_0000_0000_0000,
        None,
    ),
];

#[test]
fn float_atomic_adds_compute_what_the_h100_did() {
    let ab: Vec<u32> = RECORDED_32.iter().flat_map(|r| [r[0], r[1]]).collect();
    for head in ["atom", "red"] {
        for (ty, global, shared) in [("f32", 2, 3), ("noftz.f16x2", 4, 4), ("noftz.bf16x2", 5, 5)] {
            let got = run(&kernel(head, ty, 32), &ab, 1);
            for (k, r) in RECORDED_32.iter().enumerate() {
                let want = [r[global], r[shared]];
                assert_eq!(
                    got[2 * k..2 * k + 2],
                    want,
                    "{head}.add.{ty} {:#010x} + {:#010x}: got {:#010x?}, the H100 {want:#010x?}",
                    r[0],
                    r[1],
                    &got[2 * k..2 * k + 2]
                );
            }
        }
        let words = |x: u64| [x as u32, (x >> 32) as u32];
        let ab: Vec<u32> = RECORDED_64
            .iter()
            .flat_map(|r| [words(r.0), words(r.1)])
            .flatten()
            .collect();
        let got = run(&kernel(head, "f64", 64), &ab, 2);
        for (k, &(a, b, global, shared)) in RECORDED_64.iter().enumerate() {
            let at = |w: usize| u64::from(got[4 * k + 2 * w]) | u64::from(got[4 * k + 2 * w + 1]) << 32;
            assert_eq!(at(0), global, "{head}.global.add.f64 {a:#018x} + {b:#018x}");
            if let Some(s) = shared {
                assert_eq!(at(1), s, "{head}.shared.add.f64 {a:#018x} + {b:#018x}");
            }
        }
    }
}

#[test]
fn forms_ptxas_refuses_are_errors() {
    for (inst, msg) in [
        (
            "red.acquire.gpu.global.add.u32 [%rd1], %r1;",
            "`red` is .relaxed or .release",
        ),
        (
            "red.acq_rel.gpu.global.add.u32 [%rd1], %r1;",
            "`red` is .relaxed or .release",
        ),
        ("red.relaxed.gpu.global.exch.b32 [%rd1], %r1;", "`red` has no `.exch`"),
        (
            "red.relaxed.gpu.global.cas.b32 [%rd1], %r1, %r1;",
            "`red` has no `.cas`",
        ),
        ("atom.global.add.s64 %rd2, [%rd1], %rd2;", "`.add` with .s64"),
        ("atom.global.and.u32 %r2, [%rd1], %r1;", "`.and` with .u32"),
        ("atom.global.exch.u32 %r2, [%rd1], %r1;", "`.exch` with .u32"),
        ("atom.global.add.f16x2 %r2, [%rd1], %r1;", "`.add` with .f16x2"),
        ("atom.global.add.noftz.u32 %r2, [%rd1], %r1;", "`.add.noftz` with .u32"),
        ("atom.global.add.noftz.f32 %r2, [%rd1], %r1;", "`.add.noftz` with .f32"),
    ] {
        let src = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, 1;\n\t{inst}\n\tret;\n}}\n"
        );
        let e = Module::parse(&src)
            .err()
            .unwrap_or_else(|| panic!("`{inst}` was accepted"));
        assert!(e.to_string().contains(msg), "`{inst}`: {e}");
    }
}
