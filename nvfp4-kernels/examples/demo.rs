//! The main command: lists the kernels' PTX (compiled at build time,
//! nothing is compiled now), then runs the sample kernels, the NVFP4 GEMV
//! and the block-scaled GEMM (on compute capability 9.0 and 10.0 devices)
//! on a CUDA GPU, or on the PTX emulator when there is none, checking every
//! output against the CPU.
//!
//! `demo [--emulator sm_90|sm_90a|sm_100a]` picks the emulator even when a
//! GPU is present.

use nvfp4_dsl::{Device, Target};
use nvfp4_kernels::gemv::{self, BENCH_SHAPES};
use nvfp4_kernels::nvfp4::Inputs;
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::{gemm, registry, samples};
use std::process::ExitCode;

fn parse_args() -> Result<Option<Target>, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(None),
        [flag, target] if flag == "--emulator" => match target.as_str() {
            "sm_90" => Ok(Some(Target::Sm90)),
            "sm_90a" => Ok(Some(Target::Sm90a)),
            "sm_100a" => Ok(Some(Target::Sm100a)),
            other => Err(format!("the emulator runs sm_90, sm_90a or sm_100a, not `{other}`")),
        },
        _ => Err("usage: demo [--emulator sm_90|sm_90a|sm_100a]".into()),
    }
}

fn main() -> ExitCode {
    let forced = match parse_args() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!("nvfp4-dsl kernels (PTX generated at compile time):");
    for v in registry::all_variants() {
        for (target, ptx) in v.ptx {
            println!("  {:<34} {:<8} {:>7} bytes of PTX", v.entry, target.name(), ptx.len());
        }
    }
    let device = match forced {
        Some(target) => Device::emulator(target),
        None => Device::best(),
    };
    let small = device.is_emulator();
    if forced.is_some() {
        println!("\nRunning on {}, at small sizes:", device.describe());
    } else if small {
        println!("\nNo GPU was found: running on {}, at small sizes.", device.describe());
    } else {
        println!("\nRunning on {}:", device.describe());
    }
    match run(&device, small) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("  FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(device: &Device, small: bool) -> Result<(), nvfp4_kernels::Error> {
    for r in samples::check_all(device, 2026, small)? {
        println!("  {:<12} {:<36} {:>9} outputs match the CPU", r.name, r.what, r.checked);
    }
    let mut rng = Rng::new(2026);
    let gemv_shapes: Vec<(usize, usize, usize)> = if small {
        vec![(256, 1024, 2)]
    } else {
        BENCH_SHAPES.to_vec()
    };
    for (m, k, l) in gemv_shapes {
        gemv::check_gemv(device, &mut rng, (m, k, l), Inputs::Wide, None)?;
        println!(
            "  {:<12} {:<36} every output within 1e-3 of the f64 reference",
            "gemv",
            format!("M={m} K={k} L={l}")
        );
    }
    if gemm::GemmKernel::for_device(device, 128, 256, 256, 1).is_none() {
        println!(
            "  {:<12} not run: needs sm_90a (compute capability 9.0) or sm_100a (10.0); this is {} (try --emulator sm_90a)",
            "gemm",
            device.describe()
        );
        return Ok(());
    }
    let gemm_shapes: Vec<(usize, usize, usize, usize)> = if small {
        vec![(256, 256, 1280, 1)]
    } else {
        gemm::BENCH_SHAPES.iter().map(|&(m, n, k)| (m, n, k, 1)).collect()
    };
    for (m, n, k, l) in gemm_shapes {
        let kernel = gemm::GemmKernel::for_device(device, m, n, k, l);
        gemm::check_gemm(device, &mut rng, (m, n, k, l), Inputs::Wide, kernel, None)?;
        println!(
            "  {:<12} {:<36} every output within 1e-3 of the f64 reference ({})",
            "gemm",
            format!("M={m} N={n} K={k} L={l}"),
            match kernel {
                Some(gemm::GemmKernel::Sm90 { blocks, split }) =>
                    format!("sm_90a wgmma, {}-row tiles, K split {split}", 128 * blocks),
                Some(gemm::GemmKernel::Sm90Stream { grid }) => format!("sm_90a wgmma, stream-K over {grid} blocks"),
                Some(gemm::GemmKernel::Sm100 { bn }) => format!("sm_100a tcgen05, BN={bn}"),
                None => "no kernel".into(),
            }
        );
    }
    Ok(())
}
