//! Two modules whose `#[device] pub const WIDTH` is the same source at the
//! same line and column: their exported macros (at the crate root) must
//! not collide, and each kernel gets its own module's constant.

mod twin_a;
mod twin_b;

use nvfp4_dsl::{Device, LaunchConfig, Target};

#[test]
fn device_items_alike_in_two_files_each_reach_their_kernel() {
    let device = Device::emulator(Target::Sm90);
    let mut a = device.upload(&[u32::MAX; 64]).unwrap();
    let mut b = device.upload(&[u32::MAX; 64]).unwrap();
    let config = LaunchConfig::linear(1, 64);
    // SAFETY: thread t writes element t of a 64-element buffer.
    unsafe {
        twin_a::fill_a::Kernel::launch(&device, config, &mut a).unwrap();
        twin_b::fill_b::Kernel::launch(&device, config, &mut b).unwrap();
    }
    let (a, b) = (device.download(&a).unwrap(), device.download(&b).unwrap());
    for t in 0..64u32 {
        assert_eq!((a[t as usize], b[t as usize]), (64 + t, 128 + t), "thread {t}");
    }
}
