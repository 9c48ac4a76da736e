use nvfp4_dsl::{Device, Target};
use nvfp4_kernels::gemm::{BlockedScales, GemmOperand};

// A GEMM operand's scales are e4m3 bytes (`E4m3` or `u8`): f32 "scales" of
// the right byte length are a compile error, not a wrong answer.
fn main() {
    let device = Device::emulator(Target::Sm90a);
    let data = device.upload(&[0u8; 128 * 128]).expect("upload");
    let scales = device.upload(&[1.0f32; 128 * 16 / 4]).expect("upload");
    let _ = GemmOperand::new(&device, 128, 256, 1, &data, BlockedScales(&scales));
}
