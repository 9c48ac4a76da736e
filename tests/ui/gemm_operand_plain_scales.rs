use nvfp4_dsl::{Device, Target};
use nvfp4_kernels::gemm::GemmOperand;

// The GEMM reads its scales in the blocked 128x4 layout, and plain scales
// have the same length: the caller must say the layout with `BlockedScales`.
fn main() {
    let device = Device::emulator(Target::Sm90a);
    let data = device.upload(&[0u8; 128 * 128]).expect("upload");
    let scales = device.upload(&[0x38u8; 128 * 16]).expect("upload");
    let _ = GemmOperand::new(&device, 128, 256, 1, &data, &scales);
}
