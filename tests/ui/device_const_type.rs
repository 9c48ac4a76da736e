use nvfp4_dsl::prelude::*;

#[device]
const ONE: f16 = f16::from_bits(0x3C00);

#[device]
const FLAGS: [bool; 2] = [true, false];

#[device]
const NAME: &str = "tile";

#[device]
const GRID: [[u32; 2]; 2] = [[1, 2], [3, 4]];

#[device]
const SMALL: i8 = 1;

fn main() {}
