use nvfp4_dsl::prelude::*;

#[device]
const PAGE: u32 = 64;

// Launched with arguments of the wrong types: rustc's notes point at the
// kernel's parameters, not at the `#[device] const` the kernel uses.
#[kernel(targets(sm_90))]
fn gather(table: &[f16], out: &mut [f32], pages: u32) {
    let i = thread_idx_x();
    if i < pages * PAGE {
        out[i as usize] = table[i as usize].to_f32();
    }
}

// Without a `#[device]` item they point at the parameters too.
#[kernel(targets(sm_90))]
fn fill(out: &mut [f32], n: u32) {
    let i = thread_idx_x();
    if i < n {
        out[i as usize] = 1.0;
    }
}

mod host {
    use super::*;

    pub fn run() -> Result<(), nvfp4_dsl::Error> {
        let device = Device::emulator(Target::Sm90);
        let table = device.upload(&[1.0f32; 64])?;
        let mut out = device.alloc_zeroed::<f32>(64)?;
        // SAFETY: never runs; the arguments do not compile.
        unsafe {
            gather::Kernel::launch(&device, LaunchConfig::linear(1, 64), &table, &mut out, 64i32)?;
            fill::Kernel::launch(&device, LaunchConfig::linear(1, 64), &mut out, 64i32)?;
        }
        Ok(())
    }
}

fn main() {
    host::run().expect("launch");
}
