//! The emulator's errors name the Rust statement (`file:line: statement`,
//! and the inlined device function's) before the PTX line: kernels written
//! here fail on purpose and the error text is asserted.

use nvfp4_dsl::prelude::*;
use nvfp4_dsl::{Device, Error, Target};

/// This file, to find the lines the errors must name.
const SOURCE: &str = include_str!("emu_errors.rs");

/// `file:line: `statement`` of the one line of this file holding `statement`.
fn at(statement: &str) -> String {
    let lines: Vec<usize> = SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == statement)
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "`{statement}` must be on one line of this file");
    format!("tests/emu_errors.rs:{}: `{statement}`", lines[0])
}

/// The emulator's error of a launch that must fail.
fn failure(result: Result<(), Error>) -> nvfp4_dsl::emu::EmuError {
    match result {
        Err(Error::Emulator(e)) => *e,
        Err(other) => panic!("not an emulator error: {other}"),
        Ok(()) => panic!("the launch must fail"),
    }
}

#[device]
fn load_at(x: &[u32], i: usize) -> u32 {
    let v = x[i + 1];
    v * 2
}

#[kernel(targets(sm_90))]
pub fn reads_one_past(x: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    out[i] = load_at(x, i);
}

#[test]
fn an_out_of_bounds_read_names_the_kernel_statement_and_the_device_function() {
    let device = Device::emulator(Target::Sm90);
    let x = device.upload(&[7u32; 64]).expect("upload");
    let mut out = device.alloc_zeroed::<u32>(64).expect("alloc");
    // SAFETY: the emulator checks every access; thread 63 reads x[64].
    let e = failure(unsafe { reads_one_past::Kernel::launch(&device, LaunchConfig::linear(1, 64), &x, &mut out) });
    let text = e.to_string();
    let want = format!(
        "at {}, inlined `load_at` at {}, line ",
        at("out[i] = load_at(x, i);"),
        at("let v = x[i + 1];")
    );
    assert!(text.contains(&want), "{text}\nwants {want}");
    assert!(e.message().contains("out of bounds"), "{text}");
}
