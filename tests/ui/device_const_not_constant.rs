use nvfp4_dsl::prelude::*;

const fn make() -> u32 {
    3
}

#[device]
const FROM_CALL: u32 = make();

#[device]
const FROM_METHOD: u32 = 1u32.wrapping_add(2);

#[device]
const FROM_IF: u32 = if FROM_CALL > 2 { 1 } else { 2 };

#[device]
const LENGTH: [u32; make() as usize] = [1, 2, 3];

fn main() {}
