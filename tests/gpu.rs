//! Correctness of the sample kernels on a CUDA GPU against the CPU. Needs a
//! GPU: run with `--ignored` on the GPU host (see the README).

use nvfp4_dsl::Device;
use nvfp4_kernels::samples;

#[test]
#[ignore = "needs a CUDA GPU; run with --ignored on a GPU host"]
fn samples_match_the_cpu_on_the_gpu() {
    let device = Device::cuda(0).expect("a CUDA device");
    for seed in [1, 2, 3] {
        let reports = samples::check_all(&device, seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for r in reports {
            println!("seed {seed}: {} ({}): {} outputs match", r.name, r.what, r.checked);
        }
    }
}
