use nvfp4_dsl::prelude::*;

// A kernel generic over a type launches for the types it lists; host code
// generic over `T` names the bound `scale::Specialized`.
#[kernel(targets(sm_90), specialize(T = [f32]))]
fn scale<T: Float>(x: &mut [T], a: T) {
    x[0] = x[0] * a;
}

fn run<T: scale::Specialized>(device: &Device, x: &mut DeviceBuffer<T>, a: T) {
    unsafe { scale::Kernel::<T>::launch(device, LaunchConfig::linear(1, 1), x, a).unwrap() };
}

fn main() {
    let device = Device::emulator(Target::Sm90);
    let mut x = device.alloc_zeroed::<f64>(1).unwrap();
    run(&device, &mut x, 2.0);
}
