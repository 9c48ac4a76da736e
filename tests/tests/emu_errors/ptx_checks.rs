//! PTX that ptxas rejects is an error on the emulator too, naming the
//! `ptx!` that wrote it: a `.reg` declared twice in one scope (a template
//! with a fixed register name, used twice) and a conversion to e2m1x2
//! whose result is a 32-bit register.

use super::{at, failure};
use nvfp4_dsl::prelude::*;

/// A fixed register name outside a block: one use is fine, two in one
/// kernel declare `t` twice.
#[device]
fn through_t(x: u32) -> u32 {
    ptx!(u32, ".reg .b32 t; mov.b32 t, {0}; mov.b32 {d}, t;", x)
}

#[kernel(targets(sm_90))]
pub fn declared_twice(x: &[u32], out: &mut [u32]) {
    out[0] = through_t(x[0]).wrapping_add(through_t(x[1]));
}

/// A `u8` result is a `.b32` register, which `.e2m1x2` cannot be written to.
#[kernel(targets(sm_100a))]
pub fn e2m1_in_a_word(x: &[f32], out: &mut [u32]) {
    let v = ptx!(u8, "cvt.rn.satfinite.e2m1x2.f32 {d}, {1}, {0};", x[0], x[1]);
    out[0] = v as u32;
}

#[test]
fn ptx_that_ptxas_rejects_is_an_error_naming_the_rust_line() {
    let device = Device::emulator(Target::Sm100a);
    let x = device.upload(&[1u32, 2]).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(1).expect("alloc");
    // SAFETY: one thread reads x[0..2] and writes out[0].
    let e = failure(unsafe { declared_twice::Kernel::launch(&device, LaunchConfig::linear(1, 1), &x, &mut out) });
    let text = e.to_string();
    assert!(text.contains("`t` is declared twice in this scope"), "{text}");
    assert!(text.contains("Duplicate definition of variable"), "{text}");
    assert!(text.contains("`{{ .reg .b32 t; .. }}`"), "{text}");
    assert!(
        text.contains(&format!(
            "at {}, inlined `through_t` at {}, line",
            at(
                "declared_twice",
                "out[0] = through_t(x[0]).wrapping_add(through_t(x[1]));"
            ),
            at(
                "through_t",
                "ptx!(u32, \".reg .b32 t; mov.b32 t, {0}; mov.b32 {d}, t;\", x)"
            )
        )),
        "{text}"
    );

    let x = device.upload(&[1.0f32, 2.0]).expect("upload");
    // SAFETY: one thread reads x[0..2] and writes out[0].
    let e = failure(unsafe { e2m1_in_a_word::Kernel::launch(&device, LaunchConfig::linear(1, 1), &x, &mut out) });
    let text = e.to_string();
    assert!(
        text.contains(
            "`cvt.rn.satfinite.e2m1x2.f32`: its destination must be a `.b8` register, and `%r1` is `.b32` (ptxas: `Arguments mismatch for instruction 'cvt'`)"
        ),
        "{text}"
    );
    assert!(text.contains("cvt.u32.u8 {d}, t; }}`"), "{text}");
    let statement = "let v = ptx!(u8, \"cvt.rn.satfinite.e2m1x2.f32 {d}, {1}, {0};\", x[0], x[1]);";
    assert!(
        text.contains(&format!("at {}, line", at("e2m1_in_a_word", statement))),
        "{text}"
    );
}

/// ptxas rejects both kernels, for the reasons the emulator gives.
#[test]
fn ptxas_rejects_them_too() {
    let Some(ptxas) = nvfp4_tests::find_ptxas() else {
        assert!(!nvfp4_tests::in_ci(), "ptxas is required in CI");
        eprintln!("ptxas not found: skipping");
        return;
    };
    for (variants, says) in [
        (declared_twice::VARIANTS, "Duplicate definition of variable 't'"),
        (e2m1_in_a_word::VARIANTS, "Arguments mismatch for instruction 'cvt'"),
    ] {
        for v in variants {
            for (target, ptx) in v.ptx {
                let e = nvfp4_tests::assemble(&ptxas, ptx, target.name()).expect_err(v.entry);
                assert!(e.contains(says), "{}: {e}", v.entry);
            }
        }
    }
}
