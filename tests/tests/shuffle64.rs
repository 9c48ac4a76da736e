//! Warp shuffles and reductions of 64-bit values on the emulator
//! (`nvfp4_tests::shuffle64` has the kernel and the host's lane exchanges;
//! `tests/gpu/main.rs` runs the same on a GPU).

use nvfp4_dsl::{Device, Target};

#[test]
fn shuffles_and_warp_reductions_of_64_bit_values_match_the_host() {
    let words = nvfp4_tests::shuffle64::check(&Device::emulator(Target::Sm90), 64).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(words, 1280);
}
