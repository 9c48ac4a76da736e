use nvfp4_dsl::prelude::*;

#[kernel(targets(sm_90), specialize(N = [1, 2]))]
fn fill<const N: u32>(x: &mut [u32]) {
    x[0] = N;
}

fn main() {
    let device = Device::cuda(0).unwrap();
    let mut x = device.alloc_zeroed::<u32>(1).unwrap();
    unsafe { fill::Kernel::<3>::launch(&device, LaunchConfig::linear(1, 1), &mut x).unwrap() };
}
