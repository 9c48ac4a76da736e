//! 2-D shared arrays, `shared_array::<[T; C], R>()`: cells read and
//! written as `tile[r][c]` with `u32`, `i32`, `usize` and constant indices,
//! compound assignment, a row length from a `#[device] const`, device
//! functions taking `&SharedArray<[T; C], R>` and `&mut` (their lengths
//! inferred), against a host model of the same tile; the padded transpose
//! sample on several shapes; an index past the array reported by the
//! emulator.

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::samples::check_transpose;

#[device]
const COLS: u32 = 5;

/// Rows of the tile; each holds `COLS + 1` cells.
const ROWS: usize = 8;
const W: usize = COLS as usize + 1;

/// Adds `v` to every cell of column `c`.
#[device]
fn add_column<const R: usize>(tile: &mut SharedArray<[u32; COLS as usize + 1], R>, c: usize, v: u32) {
    for r in 0..R {
        tile[r][c] += v;
    }
}

/// Row `r`'s cells, each weighted by its column.
#[device]
fn row_sum<const C: usize, const R: usize>(tile: &SharedArray<[u32; C], R>, r: u32) -> u32 {
    let mut s = 0u32;
    for c in 0..C {
        s = s.wrapping_add(tile[r][c].wrapping_mul(c as u32 + 1));
    }
    s
}

/// One thread per cell of an 8 x 6 tile (48 threads).
#[kernel(targets(sm_90))]
pub fn cells(xs: &[u32], out: &mut [u32]) {
    let tile = shared_array::<[u32; COLS as usize + 1], 8>();
    let t = thread_idx_x();
    let (r, c) = (t / (COLS + 1), t % (COLS + 1));
    tile[r][c] = xs[t as usize];
    sync_threads();
    if t < COLS + 1 {
        add_column(tile, t as usize, xs[t as usize] >> 3);
    }
    sync_threads();
    if t == 0 {
        tile[3][COLS] ^= 0xFFFF;
        tile[(COLS - 2) as i32][2i32] = tile[7][0].wrapping_mul(3);
        tile[1][c] <<= 1;
    }
    sync_threads();
    out[t as usize] = tile[7 - r][COLS - c] ^ row_sum(tile, r);
}

/// What `cells` computes, on a host array.
fn cells_host(xs: &[u32]) -> Vec<u32> {
    let mut tile = [[0u32; W]; ROWS];
    for (t, &x) in xs.iter().enumerate() {
        tile[t / W][t % W] = x;
    }
    for (c, &x) in xs.iter().enumerate().take(W) {
        for row in tile.iter_mut() {
            row[c] = row[c].wrapping_add(x >> 3);
        }
    }
    tile[3][W - 1] ^= 0xFFFF;
    tile[3][2] = tile[7][0].wrapping_mul(3);
    tile[1][0] <<= 1;
    let row_sum = |r: usize| (0..W).fold(0u32, |s, c| s.wrapping_add(tile[r][c].wrapping_mul(c as u32 + 1)));
    (0..ROWS * W)
        .map(|t| {
            let (r, c) = (t / W, t % W);
            tile[ROWS - 1 - r][W - 1 - c] ^ row_sum(r)
        })
        .collect()
}

#[test]
fn cells_of_a_2d_shared_array_hold_what_the_host_array_holds() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(23);
    for _ in 0..4 {
        let xs: Vec<u32> = (0..ROWS * W).map(|_| rng.next_u32() | 1).collect();
        let dx = device.upload(&xs).expect("upload");
        let mut out = device.upload(&[0xDEAD_BEEFu32; ROWS * W]).expect("upload");
        // SAFETY: 48 threads, one per cell; `out` has 48 elements.
        unsafe { cells::Kernel::launch(&device, LaunchConfig::linear(1, (ROWS * W) as u32), &dx, &mut out) }
            .expect("launch");
        let got = device.download(&out).expect("download");
        let want = cells_host(&xs);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "element {i}");
        }
    }
}

#[test]
fn the_padded_transpose_matches_the_host_on_several_shapes() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(5);
    for (rows, cols) in [(32, 32), (33, 65), (7, 40), (64, 1)] {
        let report = check_transpose(&device, &mut rng, rows, cols).unwrap_or_else(|e| panic!("{rows} x {cols}: {e}"));
        assert_eq!(report.checked, (rows * cols) as usize);
    }
}

/// Writes row `r` of a 2 x 4 tile, then reads it back.
#[kernel(targets(sm_90))]
pub fn past_the_rows(out: &mut [u32], r: u32) {
    let tile = shared_array::<[u32; 4], 2>();
    tile[r][1] = 7;
    sync_threads();
    out[0] = tile[r][1];
}

#[test]
fn a_row_past_the_array_is_reported_by_the_emulator() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.upload(&[0u32]).expect("upload");
    // SAFETY: one thread; row 1 is inside the tile.
    unsafe { past_the_rows::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut out, 1) }.expect("row 1");
    // SAFETY: the emulator checks the access and fails the launch.
    let e = unsafe { past_the_rows::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut out, 2) }
        .expect_err("row 2 of 2 is past the array");
    let text = e.to_string();
    assert!(text.contains("shared"), "{text}");
}

/// Zeroes row 1's first cell of a 2 x 4 tile and writes cell `c` of row
/// 0, then reads row 1's first cell (which column 4 of row 0 would be).
#[kernel(targets(sm_90))]
pub fn past_a_row(out: &mut [u32], c: u32) {
    let tile = shared_array::<[u32; 4], 2>();
    tile[1u32][0u32] = 0;
    tile[0u32][c] = 7;
    sync_threads();
    out[0] = tile[1][0];
}

#[test]
fn a_column_past_its_row_is_reported_in_a_debug_build() {
    let device = Device::emulator(Target::Sm90);
    let mut out = device.upload(&[0u32]).expect("upload");
    // SAFETY: one thread; column 3 is inside the row.
    unsafe { past_a_row::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut out, 3) }.expect("column 3");
    // Column 4 of row 0 is the address of row 1's first cell: inside the
    // array, so only the debug build's column check sees it.
    // SAFETY: the address stays inside the tile either way.
    let launched = unsafe { past_a_row::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut out, 4) };
    if cfg!(debug_assertions) {
        let text = launched.expect_err("column 4 of a row of 4").to_string();
        assert!(
            text.contains("index out of bounds: a column of `tile` is 4 or more, past its rows of 4 elements"),
            "{text}"
        );
        assert!(
            text.contains("tile[0u32][c] = 7;"),
            "the message names the Rust line: {text}"
        );
    } else {
        launched.expect("release builds check the whole array only, as CUDA");
        assert_eq!(device.download(&out).expect("download"), [7]);
    }
}
