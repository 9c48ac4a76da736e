//! Helpers shared by the emulator's integration tests (`tests/emu*.rs`)
//! and its bench (`benches/emu.rs`, which includes this file by path):
//! snapshot PTX, deterministic inputs, NVFP4/FP8 decoders, emulator memory
//! and launch shapes, and error checks.

// Each test binary and the bench use only some of these.
#![allow(dead_code)]

use nvfp4_dsl::emu::{EmuError, Launch, Memory};

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

/// SplitMix64, as in nvfp4-kernels' test inputs; the field is the state
/// (the seed).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The high 32 bits of the next 64.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A float in `[lo, hi)` from the next 24 high bits.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }
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

/// E2M1 nibble (the low 4 bits of `n`) -> value: sign, 2 exponent bits,
/// 1 mantissa bit, bias 1.
pub fn e2m1(n: u8) -> f64 {
    let v = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][usize::from(n & 7)];
    if n & 8 != 0 { -v } else { v }
}

/// FP8 E4M3 byte -> value: bias 7, subnormals, no infinities, `0x7F` and
/// `0xFF` NaN.
pub fn e4m3(b: u8) -> f64 {
    let (e, m) = (i32::from((b >> 3) & 15), f64::from(b & 7));
    let mag = if b & 0x7F == 0x7F {
        f64::NAN
    } else if e == 0 {
        m / 8.0 * 2f64.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    };
    if b & 0x80 != 0 { -mag } else { mag }
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
