//! Harness pieces for running snapshot PTX on the PTX emulator, shared by
//! the emulator's tests and its bench: a snapshot's PTX, deterministic
//! input words, emulator memory and launch shapes.

use nvfp4_dsl::emu::{Launch, Memory};

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
