//! The main command: lists the sample kernels' PTX (compiled at build time,
//! nothing is compiled now) and runs them on a GPU when one is present,
//! checking every output against the CPU.

use nvfp4_dsl::Device;
use nvfp4_kernels::samples;
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("nvfp4-dsl sample kernels (PTX generated at compile time):");
    for v in samples::variants() {
        for (target, ptx) in v.ptx {
            println!("  {:<32} {:<8} {:>7} bytes of PTX", v.entry, target.name(), ptx.len());
        }
    }
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("\nNo GPU was found ({e}); the kernels were not run.");
            return ExitCode::SUCCESS;
        }
    };
    println!("\nRunning on {}:", device.describe());
    match samples::check_all(&device, 2026) {
        Ok(reports) => {
            for r in reports {
                println!("  {:<12} {:<36} {:>9} outputs match the CPU", r.name, r.what, r.checked);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("  FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
