//! Helpers shared by the emulator's integration tests (`tests/emu*.rs`):
//! error checks and the tensor cores' sums in f64, with the workspace's
//! test support from `nvfp4-testkit` (the seeded generator, the NVFP4
//! decoders, and the emulator harness its bench uses too: snapshot PTX,
//! deterministic inputs, emulator memory and launch shapes).

// Each test binary uses only some of these.
#![allow(dead_code, unused_imports)]

use nvfp4_dsl::emu::EmuError;

/// The emulator harness.
pub use nvfp4_testkit::emu::{download_u32, le_bytes, linear, pattern, ptx, upload, upload_u32, xorshift};
/// The workspace's seeded generator and NVFP4 decoders.
pub use nvfp4_testkit::{Rng, e2m1, e4m3};

/// The 1-based line of the first line of `src` that contains `needle`.
pub fn line_of(src: &str, needle: &str) -> u32 {
    src.lines().position(|l| l.contains(needle)).expect("needle") as u32 + 1
}

/// Checks that `e` names kernel `k`, the block, the thread, and the line
/// and instruction of the first line of `src` containing `needle`.
pub fn assert_located(e: &EmuError, src: &str, needle: &str, block: (u32, u32, u32), thread: (u32, u32, u32)) {
    let text = e.to_string();
    assert_eq!(e.kernel(), Some("k"), "{text}");
    assert_eq!(e.block(), Some(block), "{text}");
    assert_eq!(e.thread(), Some(thread), "{text}");
    assert_eq!(e.line(), Some(line_of(src, needle)), "{text}");
    assert!(e.instruction().unwrap().contains(needle), "{text}");
}

/// [`assert_located`], and that the text names the kernel and the line and
/// the message contains `msg`.
pub fn assert_error(e: &EmuError, src: &str, needle: &str, block: (u32, u32, u32), thread: (u32, u32, u32), msg: &str) {
    assert_located(e, src, needle, block, thread);
    let text = e.to_string();
    assert!(
        text.contains("kernel `k`") && text.contains(&format!("line {}", line_of(src, needle))),
        "{text}"
    );
    assert!(e.message().contains(msg), "expected `{msg}` in: {text}");
}

// ----- the tensor cores' sums, computed in f64 (not the emulator's way) -----

/// `floor(log2 |x|)` of a finite nonzero `x` that f64 holds as a normal
/// number, but at least `least` (a format's least normal exponent).
pub fn leading_exponent(x: f64, least: i64) -> i64 {
    (((x.abs().to_bits() >> 52) as i64) - 1023).max(least)
}

/// `x` (finite, below 2^1000) rounded toward zero to f32, an infinity
/// beyond f32's range: the nearest f32, stepped one ulp toward zero when
/// it lies farther from zero than `x`.
pub fn f32_toward_zero(x: f64) -> u32 {
    if x.abs() >= 2f64.powi(128) {
        return if x > 0.0 { 0x7F80_0000 } else { 0xFF80_0000 };
    }
    let nearest = x as f32;
    if f64::from(nearest).abs() > x.abs() {
        nearest.to_bits() - 1
    } else {
        nearest.to_bits()
    }
}
