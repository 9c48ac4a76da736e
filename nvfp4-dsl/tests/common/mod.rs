//! Helpers shared by the emulator's integration tests (`tests/emu*.rs`)
//! and its bench (`benches/emu.rs`, which includes this file by path):
//! snapshot PTX, deterministic inputs (the seeded generator and the NVFP4
//! decoders are the workspace's, from `nvfp4-testkit`), emulator memory
//! and launch shapes, and error checks.

// Each test binary and the bench use only some of these.
#![allow(dead_code, unused_imports)]

use nvfp4_dsl::emu::{EmuError, Launch, Memory};

/// The workspace's seeded generator and NVFP4 decoders.
pub use nvfp4_testkit::{Rng, e2m1, e4m3};

/// A snapshot's PTX: everything after the insta header's second `---`.
pub fn ptx(snap: &str) -> String {
    let mut dashes = 0;
    let mut out = String::new();
    for line in snap.lines() {
        if dashes >= 2 {
            out.push_str(line);
            out.push('\n');
        } else if line == "---" {
            dashes += 1;
        }
    }
    out
}

/// `n` pseudo-random words (xorshift32 from `seed | 1`).
pub fn xorshift(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

/// `n` deterministic bytes: the low byte of each [`xorshift`] word.
pub fn pattern(n: usize, seed: u32) -> Vec<u8> {
    xorshift(n, seed).into_iter().map(|x| x as u8).collect()
}

/// `grid` blocks of `threads` threads in x, with `shared` bytes of dynamic
/// shared memory.
pub fn linear(grid: u32, threads: u32, shared: u32) -> Launch {
    Launch::new((grid, 1, 1), (threads, 1, 1), shared)
}

/// Words as little-endian bytes.
pub fn le_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A new allocation holding `bytes`; its address.
pub fn upload(mem: &mut Memory, bytes: &[u8], writable: bool) -> u64 {
    let a = mem.alloc(bytes.len(), writable);
    mem.write(a, bytes).expect("upload");
    a
}

/// A new allocation holding `words`, little-endian; its address.
pub fn upload_u32(mem: &mut Memory, words: &[u32], writable: bool) -> u64 {
    upload(mem, &le_bytes(words), writable)
}

/// The `n` little-endian words at `addr`.
pub fn download_u32(mem: &Memory, addr: u64, n: usize) -> Vec<u32> {
    mem.read(addr, 4 * n)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

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
