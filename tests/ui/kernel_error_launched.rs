use nvfp4_dsl::prelude::*;

// A kernel with an error in its body keeps its launcher, so host code that
// launches it adds no error of its own: the one shown is the kernel's.
#[kernel(targets(sm_90))]
fn rotate(x: &mut [f32]) {
    let (s, c) = x[1].sin_cos();
    x[0] = s * c;
}

#[kernel(targets(sm_90), specialize(N = [2, 4]))]
fn scale<const N: u32>(x: &mut [f32]) {
    x[0] *= (N as f32).powf(2.0);
}

mod host {
    use super::*;

    pub fn run() {
        let device = Device::emulator(Target::Sm90);
        let mut x = device.upload(&[1.0f32; 4]).expect("upload");
        // SAFETY: never runs; the kernels do not compile.
        let _ = unsafe { rotate::Kernel::launch(&device, LaunchConfig::linear(1, 1), &mut x) };
        let _ = unsafe { scale::Kernel::<4>::launch(&device, LaunchConfig::linear(1, 1), &mut x) };
    }
}

fn main() {
    host::run();
}
