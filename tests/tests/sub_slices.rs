//! Sub-slices with an end, as Rust writes them: `&x[a..b]`, `&x[..b]`,
//! `&x[a..=b]`, `&x[..]`, `&mut y[a..b]`, and `x[a..b].iter()` in a loop:
//! each view's `len()` is `end - start` and its element loops stop there.
//! Run on the emulator against the same functions on the host.

use nvfp4_dsl::prelude::*;

/// The sum of a view, in order.
#[device]
fn total(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for v in x.iter() {
        s += *v;
    }
    s
}

/// Row `r` of `x` (rows of `cols`) doubled into row `r` of `y`, and the
/// view lengths and sums a row's thread sees.
// `&x[..]` is one of the forms under test.
#[allow(clippy::redundant_slicing)]
#[device]
fn row_views(x: &[f32], y: &mut [f32], r: usize, cols: usize) -> ([u32; 4], [f32; 3]) {
    let row = &x[r * cols..(r + 1) * cols];
    let head = &x[..r + 1];
    let three = &x[r..=r + 2];
    let all = &x[..];
    let out = &mut y[r * cols..(r + 1) * cols];
    for (o, v) in out.iter_mut().zip(row) {
        *o = *v * 2.0;
    }
    let mut strided = 0.0;
    for v in x[r..r + 5].iter().rev() {
        strided = strided * 0.5 + *v;
    }
    (
        [
            row.len() as u32,
            head.len() as u32,
            three.len() as u32,
            all.len() as u32,
        ],
        [total(row), total(three) + total(head), strided],
    )
}

#[kernel(targets(sm_90))]
pub fn sub_slices(x: &[f32], y: &mut [f32], lens: &mut [u32], sums: &mut [f32], cols: u32) {
    let r = thread_idx_x() as usize;
    let (l, s) = row_views(x, y, r, cols as usize);
    #[unroll]
    for k in 0..4 {
        lens[4 * r + k] = l[k];
    }
    #[unroll]
    for k in 0..3 {
        sums[3 * r + k] = s[k];
    }
}

#[test]
fn sub_slices_with_an_end_match_the_host() {
    let device = Device::emulator(Target::Sm90);
    let (rows, cols) = (24usize, 7usize);
    let x: Vec<f32> = (0..rows * cols + 8)
        .map(|i| ((i as u32).wrapping_mul(0x9E37_79B9) >> 20) as f32 * 0.125 - 250.0)
        .collect();
    let dx = device.upload(&x).expect("upload");
    let mut dy = device.upload(&vec![f32::NAN; rows * cols + 3]).expect("upload");
    let mut dlens = device.upload(&vec![0xdead_beef_u32; 4 * rows]).expect("upload");
    let mut dsums = device.upload(&vec![f32::NAN; 3 * rows]).expect("upload");
    // SAFETY: thread r reads x[..(r + 1) * cols + 5] and writes row r of y and its own lens and sums.
    unsafe {
        sub_slices::Kernel::launch(
            &device,
            LaunchConfig::linear(1, rows as u32),
            &dx,
            &mut dy,
            &mut dlens,
            &mut dsums,
            cols as u32,
        )
    }
    .expect("launch");
    let (y, lens, sums) = (
        device.download(&dy).expect("download"),
        device.download(&dlens).expect("download"),
        device.download(&dsums).expect("download"),
    );
    let mut want_y = vec![f32::NAN; rows * cols + 3];
    for r in 0..rows {
        let (l, s) = row_views(&x, &mut want_y, r, cols);
        assert_eq!(lens[4 * r..4 * r + 4], l, "lengths of row {r}");
        for k in 0..3 {
            assert_eq!(sums[3 * r + k].to_bits(), s[k].to_bits(), "sum {k} of row {r}");
        }
    }
    for (i, (g, w)) in y.iter().zip(&want_y).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "y[{i}]");
    }
}

/// Copies element `i` of row `r` (rows of `cols`) of `x`, through a
/// sub-slice of the row.
#[kernel(targets(sm_90))]
pub fn row_element(x: &[u32], out: &mut [u32], r: u32, cols: u32, i: i32) {
    let row = &x[(r * cols) as usize..((r + 1) * cols) as usize];
    out[0] = row[i as usize];
}

#[test]
fn an_index_past_a_sub_slice_is_reported_in_a_debug_build() {
    let device = Device::emulator(Target::Sm90);
    let x: Vec<u32> = (100..116).collect();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&[0u32]).expect("upload");
    let launch = |out: &mut DeviceBuffer<u32>, i: i32| {
        // SAFETY: x holds rows 0 and 1 of 8; the emulator checks every
        // access against the view of x.
        unsafe { row_element::Kernel::launch(&device, LaunchConfig::linear(1, 1), &dx, out, 0, 8, i) }
    };
    launch(&mut out, 7).expect("the last element of row 0");
    // Row 0's element 8 is row 1's first: inside x, so only the debug
    // build's check sees it; -1 is a huge usize.
    for i in [8, -1] {
        let launched = launch(&mut out, i);
        if cfg!(debug_assertions) {
            let text = launched.expect_err("past the row").to_string();
            assert!(
                text.contains("index out of bounds: the index is past the end of the sub-slice `row`"),
                "{text}"
            );
            assert!(
                text.contains("out[0] = row[i as usize];"),
                "the message names the Rust line: {text}"
            );
        } else if i == 8 {
            launched.expect("release builds check the parameter's whole view only");
            assert_eq!(device.download(&out).expect("download"), [108]);
        } else {
            launched.expect_err("-1 is outside x's view");
        }
    }
}

/// Sums `x[a..b]`, or `x[a..]` where `b` is `u32::MAX`, through a
/// sub-slice.
#[kernel(targets(sm_90))]
pub fn range_sum(x: &[u32], out: &mut [u32], a: u32, b: u32) {
    let mut s = 0u32;
    if b == u32::MAX {
        let tail = &x[a as usize..];
        for i in 0..tail.len() {
            s += tail[i];
        }
    } else {
        let part = &x[a as usize..b as usize];
        for i in 0..part.len() {
            s += part[i];
        }
    }
    out[0] = s;
}

#[test]
fn a_sub_slice_past_its_slice_is_reported_in_a_debug_build() {
    let device = Device::emulator(Target::Sm90);
    let x: Vec<u32> = (100..116).collect();
    let dx = device.upload(&x).expect("upload");
    let mut out = device.upload(&[0u32]).expect("upload");
    let mut launch = |a: u32, b: u32| {
        // SAFETY: the emulator checks every access against the view of x.
        let launched = unsafe { range_sum::Kernel::launch(&device, LaunchConfig::linear(1, 1), &dx, &mut out, a, b) };
        launched.map(|()| device.download(&out).expect("download")[0])
    };
    let sum = |range: std::ops::Range<usize>| x[range].iter().sum::<u32>();
    assert_eq!(launch(2, 10).expect("inside x"), sum(2..10));
    assert_eq!(launch(16, 16).expect("empty, at the end"), 0);
    assert_eq!(launch(5, u32::MAX).expect("the tail"), sum(5..16));
    let part = "let part = &x[a as usize..b as usize];";
    let tail = "let tail = &x[a as usize..];";
    for (a, b, debug_message, line) in [
        (
            2,
            17,
            "slice range out of bounds: `&x[a..b]` ends past the end of `x`",
            part,
        ),
        (
            10,
            4,
            "slice range out of bounds: `&x[a..b]` of `x` starts after it ends",
            part,
        ),
        (
            20,
            u32::MAX,
            "slice range out of bounds: `&x[a..b]` of `x` starts after it ends",
            tail,
        ),
    ] {
        let text = launch(a, b).expect_err("outside x").to_string();
        if cfg!(debug_assertions) {
            assert!(text.contains(debug_message) && text.contains(line), "{a}..{b}: {text}");
        } else {
            // Release builds check the parameter's view only: the sum runs
            // past it.
            assert!(text.contains("`x`"), "{a}..{b}: {text}");
        }
    }
}
