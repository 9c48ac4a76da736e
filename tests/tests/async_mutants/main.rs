//! How strong is "verified on the emulator"? A mutation test of the
//! emulator's checks of asynchronous and synchronising code.
//!
//! Every synchronising instruction of the block-scaled GEMMs (sm_100a and
//! sm_90a), the GEMV and the samples that synchronise is removed or given a
//! wrong operand, one mutant at a time: mbarrier waits (skipped, parity
//! flipped), arrives (removed, `expect_tx` bytes off by 16 either way),
//! `fence.proxy.async`, `fence.mbarrier_init`, `tcgen05.commit` /
//! `wait::ld` / the `tcgen05` fences, `wgmma.fence` / `commit_group` /
//! `wait_group` (removed, or waiting for one group fewer), and the CTA,
//! warp and cluster barriers; `griddepcontrol.wait` and `fence.acq_rel`
//! removed, a release or acquire (a cluster arrive's, an atomic's) made
//! relaxed; and the arrives and commits on a ring's barriers are moved to
//! the next stage's barrier.
//! Each mutant runs through the kernel's own host code (its PTX swapped in
//! with `EmuDevice::replace_ptx`; called twice in a row where the kernel's
//! predecessor in the stream is the previous call's last kernel) on small
//! shapes under three seeds of the adversarial schedule (one with
//! independent thread scheduling), one of the priority (PCT) schedule and
//! one of the adversarial schedule with starvation, and is
//! killed when the emulator reports an
//! error or the output differs from the CPU reference. Every survivor
//! must be listed in [`SURVIVORS`] with the reason it is benign (or the
//! subject whose run kills it); a new survivor, a listed mutant that is
//! now killed, or a killed share under 90% fails the test. It prints one
//! line per mutant and `killed K of N mutants`:
//!
//! ```text
//! cargo test --release -p nvfp4-tests --test async_mutants -- --nocapture
//! ```

use nvfp4_dsl::emu::{Options, Schedule};
use nvfp4_dsl::{Device, Target, f16};
use nvfp4_kernels::gemm::{self, GemmKernel};
use nvfp4_kernels::gemv::{self, GemvConfig};
use nvfp4_kernels::nvfp4::{self, Inputs};
use nvfp4_kernels::rng::Rng;
use nvfp4_kernels::samples;

mod mutants;
mod survivors;

use mutants::{Mutant, mutants};
use survivors::{SURVIVORS, Why, listed};

/// The schedules each mutant runs under (until one kills it): three
/// seeds of the adversarial schedule, the third with independent thread
/// scheduling (a diverged warp stays diverged until the program
/// reconverges it), one of the priority schedule, which runs a warp or
/// block as far ahead as the synchronisation allows, and (item 5 of issue
/// 24) one of the adversarial schedule with starvation, where
/// asynchronous operations complete at once while one warp at a time
/// waits its turn.
fn schedules() -> [Options; 5] {
    [
        Options::adversarial(1),
        Options::adversarial(2),
        Options::adversarial(3).with_independent_threads(),
        Options::priority(4),
        Options::adversarial(0).with_starvation(),
    ]
}

/// A schedule's seed (that of the check's inputs too).
fn seed(options: &Options) -> u64 {
    match options.schedule {
        Schedule::Adversarial { seed } | Schedule::Priority { seed } => seed,
        Schedule::Sequential => 0,
    }
}

/// A schedule as the report names it.
fn label(options: &Options) -> String {
    let schedule = match options.schedule {
        Schedule::Adversarial { seed } if options.independent_threads => {
            format!("seed {seed}, independent threads")
        }
        Schedule::Adversarial { seed } => format!("seed {seed}"),
        Schedule::Priority { seed } => format!("priority seed {seed}"),
        Schedule::Sequential => "sequential".into(),
    };
    if options.starve {
        format!("{schedule} starving")
    } else {
        schedule
    }
}

/// A run of a kernel's host code on inputs made once, checked against
/// the CPU reference computed once.
type Check = Box<dyn Fn(&Device) -> Result<(), String>>;

/// A kernel under test: its PTX entry and text for one target, and one
/// check per schedule.
struct Subject {
    name: &'static str,
    target: Target,
    entry: &'static str,
    ptx: &'static str,
    checks: Vec<(Options, Check)>,
    /// The multiprocessors the emulator reports (`None`: the target's).
    multiprocessors: Option<u32>,
    /// Which mutants (by instruction text and change) this subject runs
    /// (`None`: all).
    only: Option<fn(&str, &str) -> bool>,
}

/// The PTX of entry `entry` for `target`.
fn ptx_of(entry: &str, target: Target) -> (&'static str, &'static str) {
    let all = nvfp4_kernels::registry::all_variants();
    let v = all
        .iter()
        .find(|v| v.entry == entry)
        .unwrap_or_else(|| panic!("no variant {entry}"));
    (
        v.entry,
        v.ptx_for(target)
            .unwrap_or_else(|| panic!("{entry} has no {target} PTX")),
    )
}

/// A host-code error as text.
fn err(e: nvfp4_kernels::Error) -> String {
    e.to_string()
}

/// A subject with the check `make(seed)` for each schedule's seed.
fn subject(name: &'static str, target: Target, entry: &str, make: impl Fn(u64) -> Check) -> Subject {
    let (entry, ptx) = ptx_of(entry, target);
    Subject {
        name,
        target,
        entry,
        ptx,
        checks: schedules().into_iter().map(|o| (o, make(seed(&o)))).collect(),
        multiprocessors: None,
        only: None,
    }
}

impl Subject {
    /// The emulator options for this subject under `options`' schedule.
    fn options(&self, options: Options) -> Options {
        match self.multiprocessors {
            Some(n) => options.with_multiprocessors(n),
            None => options,
        }
    }
}

/// The GEMM `kernel` on an M x N x K problem of random inputs from `seed`.
fn gemm_check(kernel: GemmKernel, (m, n, k): (usize, usize, usize), seed: u64) -> Check {
    let (a, b) = nvfp4::gemm_inputs(&mut Rng::new(seed), m, n, k, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4::gemm_reference(&a, &b);
    Box::new(move |d| {
        let got = gemm::gemm_outputs(d, &a, &b, Some(kernel), None).map_err(err)?;
        nvfp4::check_close(&got, &want, 1e-3, 1e-3)
    })
}

fn subjects() -> Vec<Subject> {
    vec![
        // One 128 x 128 tile, 8 K tiles: the 4-stage ring wraps, so every
        // parity is used both ways, and a commit on the wrong stage's
        // barrier lets a stage's barrier run two phases ahead of its
        // producer's wait (the ring's second round).
        subject("gemm sm_100a", Target::Sm100a, "gemm_nvfp4__bn_128_stages_4", |seed| {
            gemm_check(GemmKernel::Sm100 { bn: 128 }, (128, 128, 2048), seed)
        }),
        // K split over a cluster of 2: 9 stages per block, two wgmma
        // chains of 4 stages and one of 1 (the ring wraps twice, each of the
        // 4 unrolled stages of a chain refills a slot at least once), the
        // cluster reduction.
        subject(
            "gemm sm_90a",
            Target::Sm90a,
            "gemm_nvfp4_sm90__blocks_1_split_2",
            |seed| gemm_check(GemmKernel::Sm90 { blocks: 1, split: 2 }, (128, 128, 2304), seed),
        ),
        // Stream-K: 4 blocks over 3 tiles of 10 stages (blocks with two
        // partial segments, the ring wrapping twice), then 2 blocks over 5
        // tiles of 4 stages (two whole tiles in a row, each C staged by the
        // block, with no more stages between them than the ring holds).
        // The blocks run in an order drawn from the seed, so a tile is
        // summed by any of its blocks, from registers or from memory.
        subject(
            "gemm sm_90a stream-K",
            Target::Sm90a,
            "gemm_nvfp4_sm90_stream",
            |seed| {
                let four = gemm_check(GemmKernel::Sm90Stream { grid: 4 }, (128, 384, 1280), seed);
                let two = gemm_check(GemmKernel::Sm90Stream { grid: 2 }, (128, 640, 512), seed + 100);
                Box::new(move |d| four(d).and_then(|()| two(d)))
            },
        ),
        // The kernel that decodes A for it, in the same GEMM.
        subject("gemm sm_90a decode", Target::Sm90a, "gemm_sm90_decode_a", |seed| {
            gemm_check(GemmKernel::Sm90 { blocks: 1, split: 2 }, (128, 128, 1280), seed)
        }),
        // The same kernel on an emulated GPU of one multiprocessor: the two
        // blocks' clusters would not fit, so the split goes through global
        // memory and the reduction kernel.
        Subject {
            multiprocessors: Some(1),
            ..subject(
                "gemm sm_90a global split",
                Target::Sm90a,
                "gemm_nvfp4_sm90__blocks_1_split_2",
                |seed| gemm_check(GemmKernel::Sm90 { blocks: 1, split: 2 }, (128, 128, 2304), seed),
            )
        },
        subject("gemv", Target::Sm100a, "gemv_nvfp4__rows_4_ksplit_2", |seed| {
            let cfg = GemvConfig {
                rows: 4,
                ksplit: 2,
                warps: 8,
            };
            Box::new(move |d| {
                gemv::check_gemv(d, &mut Rng::new(seed), (64, 512, 2), Inputs::Wide, Some(cfg)).map_err(err)
            })
        }),
        subject("block_sum", Target::Sm100a, "block_sum", |seed| {
            Box::new(move |d| {
                samples::check_block_sum(d, &mut Rng::new(seed), 3000, 2)
                    .map(drop)
                    .map_err(err)
            })
        }),
        subject("tile_mirror", Target::Sm100a, "tile_mirror__vecs_2", |seed| {
            Box::new(move |d| {
                samples::check_tile_mirror(d, &mut Rng::new(seed), 2, 2, 4096)
                    .map(drop)
                    .map_err(err)
            })
        }),
    ]
    .into_iter()
    .chain(pdl_and_order_subjects())
    .collect()
}

/// Item 5 of issue 24 (programmatic dependent launch, memory order): the
/// kernels run as the host code runs them (twice in a row where the
/// kernel's predecessor is the previous call's last kernel); only the
/// mutants of that item.
fn pdl_and_order_subjects() -> Vec<Subject> {
    vec![
        Subject {
            only: Some(pdl_or_order),
            ..subject(
                "gemm sm_90a decode, twice",
                Target::Sm90a,
                "gemm_sm90_decode_a",
                |seed| gemm_twice_check(GemmKernel::Sm90 { blocks: 1, split: 2 }, (128, 128, 1280), seed),
            )
        },
        // A quantized by the kernel before the GEMM: the decode kernel waits
        // for it before it requests A (its first, conditional wait).
        Subject {
            only: Some(pdl_or_order),
            ..subject(
                "gemm sm_90a decode after a quantizer",
                Target::Sm90a,
                "gemm_sm90_decode_a",
                gemm_after_quantizer_check,
            )
        },
        Subject {
            multiprocessors: Some(1),
            only: Some(pdl_or_order),
            ..subject(
                "gemm sm_90a reduce",
                Target::Sm90a,
                "gemm_sm90_reduce__split_2",
                |seed| gemm_check(GemmKernel::Sm90 { blocks: 1, split: 2 }, (128, 128, 1280), seed),
            )
        },
        // Split 4 on one multiprocessor: the tile's two clusters of two
        // hand their partial sums over through global memory and a counter.
        Subject {
            multiprocessors: Some(1),
            only: Some(pdl_or_order),
            ..subject(
                "gemm sm_90a pairs",
                Target::Sm90a,
                "gemm_nvfp4_sm90__blocks_1_split_4",
                |seed| gemm_check(GemmKernel::Sm90 { blocks: 1, split: 4 }, (128, 128, 1024), seed),
            )
        },
        // Split 4 over a cluster of four (enough multiprocessors): the
        // reduction in distributed shared memory of other tile shapes.
        Subject {
            only: Some(|text, change| text.starts_with("barrier.cluster.arrive") && change == "made relaxed"),
            ..subject(
                "gemm sm_90a cluster of 4",
                Target::Sm90a,
                "gemm_nvfp4_sm90__blocks_1_split_4",
                |seed| gemm_check(GemmKernel::Sm90 { blocks: 1, split: 4 }, (128, 128, 1024), seed),
            )
        },
        Subject {
            only: Some(pdl_or_order),
            ..subject("gemv, twice", Target::Sm100a, "gemv_nvfp4__rows_4_ksplit_2", |seed| {
                let cfg = GemvConfig {
                    rows: 4,
                    ksplit: 2,
                    warps: 8,
                };
                let (m, k, l) = (64, 512, 2);
                let (a, b) = nvfp4::gemv_inputs(&mut Rng::new(seed), m, k, l, Inputs::Wide).expect("inputs");
                let want = nvfp4::gemv_reference(&a, &b);
                Box::new(move |d| {
                    let (da, db) = (
                        gemv::DeviceNvfp4::upload(d, &a).map_err(err)?,
                        gemv::DeviceNvfp4::upload(d, &b).map_err(err)?,
                    );
                    let mut dc = d.upload(&vec![f16::NAN; m * l]).map_err(|e| e.to_string())?;
                    for _ in 0..2 {
                        gemv::gemv_with(d, cfg, &da, &db, &mut dc).map_err(err)?;
                    }
                    nvfp4::check_close(&d.download(&dc).map_err(|e| e.to_string())?, &want, 1e-3, 1e-3)
                })
            })
        },
        // The linear layer's Hopper path: the activations quantized into
        // A's images by a programmatic launch that the previous forward's
        // GEMM (which reads the images) precedes.
        Subject {
            only: Some(pdl_or_order),
            ..subject(
                "linear sm_90a, twice",
                Target::Sm90a,
                "quantize_image_sm90__t_f16",
                linear_twice_check,
            )
        },
        // Its activations written by the GEMM just before (the previous
        // layer's output): the quantizer starts once that GEMM is complete.
        Subject {
            only: Some(pdl_or_order),
            ..subject(
                "linear sm_90a after a layer",
                Target::Sm90a,
                "quantize_image_sm90__t_f16",
                linear_chain_check,
            )
        },
    ]
}

/// Two layers in a row (3 tokens, K = 512; N = 512, then 128), the second
/// on the first's output, against the f64 product of that output
/// quantized and the second layer's weights.
fn linear_chain_check(seed: u64) -> Check {
    use nvfp4_kernels::linear::Linear;
    use nvfp4_kernels::quantize::quantize_reference;
    let (tokens, k) = (3, 512);
    let mut rng = Rng::new(seed);
    let (_, w1) = nvfp4::gemm_inputs(&mut rng, 128, k, k, 1, Inputs::Task).expect("weights");
    let (_, w2) = nvfp4::gemm_inputs(&mut rng, 128, 128, k, 1, Inputs::Task).expect("weights");
    let x: Vec<f16> = (0..tokens * k).map(|_| f16::from_f32(rng.uniform(-1.0, 1.0))).collect();
    let x32: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
    let first_scale = 1.0 / 2688.0;
    // The second layer's input scale from the first's exact output (the
    // GPU's differs in the last bits; the reference below quantizes the
    // GPU's with the same scale).
    let y1 = nvfp4::gemm_reference(
        &quantize_reference(&x32, tokens, k, first_scale).expect("quantize"),
        &w1,
    );
    let second_scale = y1.iter().fold(0.0f64, |m, v| m.max((v * f64::from(first_scale)).abs())) as f32 / 2688.0;
    let bytes = |w: &nvfp4::Nvfp4Tensor| -> (Vec<u8>, Vec<u8>) {
        (
            w.data.iter().map(|v| v.0).collect(),
            w.scales.iter().map(|v| v.0).collect(),
        )
    };
    let ((d1, s1), (d2, s2)) = (bytes(&w1), bytes(&w2));
    Box::new(move |d| {
        let first = Linear::new(d, k, k, &d1, &s1, 1.0, first_scale).map_err(err)?;
        let second = Linear::new(d, 128, k, &d2, &s2, 1.0, second_scale).map_err(err)?;
        let dx = d.upload(&x).map_err(|e| e.to_string())?;
        let y1 = first.forward(d, &dx, tokens).map_err(err)?;
        let y2 = second.forward(d, &y1, tokens).map_err(err)?;
        let y1: Vec<f32> = d
            .download(&y1)
            .map_err(|e| e.to_string())?
            .iter()
            .map(|v| v.to_f32())
            .collect();
        let aq = quantize_reference(&y1, tokens, k, second_scale).map_err(err)?;
        let want: Vec<f64> = nvfp4::gemm_reference(&aq, &w2)
            .iter()
            .map(|v| v * f64::from(second_scale))
            .collect();
        nvfp4::check_close(&d.download(&y2).map_err(|e| e.to_string())?, &want, 1e-3, 1e-3)
    })
}

/// Two forwards in a row of a linear layer (3 tokens, N = 128, K = 512)
/// into the same output, against the f64 product of the quantized
/// activations and the weights.
fn linear_twice_check(seed: u64) -> Check {
    use nvfp4_kernels::linear::Linear;
    use nvfp4_kernels::quantize::quantize_reference;
    let (tokens, n, k, input_scale) = (3, 128, 512, 0.01f32);
    let mut rng = Rng::new(seed);
    let (_, w) = nvfp4::gemm_inputs(&mut rng, 128, n, k, 1, Inputs::Wide).expect("weights");
    let x: Vec<f16> = (0..tokens * k).map(|_| f16::from_f32(rng.uniform(-1.0, 1.0))).collect();
    let x32: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
    let aq = quantize_reference(&x32, tokens, k, input_scale).expect("quantize");
    let want: Vec<f64> = nvfp4::gemm_reference(&aq, &w)
        .iter()
        .map(|v| v * f64::from(input_scale))
        .collect();
    let data: Vec<u8> = w.data.iter().map(|v| v.0).collect();
    let scales: Vec<u8> = w.scales.iter().map(|v| v.0).collect();
    Box::new(move |d| {
        let layer = Linear::new(d, n, k, &data, &scales, 1.0, input_scale).map_err(err)?;
        let dx = d.upload(&x).map_err(|e| e.to_string())?;
        let mut workspace = layer.workspace(d, tokens).map_err(err)?;
        let rows = layer.output_rows(d, tokens);
        let mut y = d.upload(&vec![f16::NAN; rows * n]).map_err(|e| e.to_string())?;
        for _ in 0..2 {
            layer
                .forward_into(d, &dx, tokens, &mut workspace, &mut y)
                .map_err(err)?;
        }
        let got = d.download(&y).map_err(|e| e.to_string())?;
        nvfp4::check_close(&got[..tokens * n], &want, 1e-3, 1e-3)
    })
}

/// Activations (128 tokens, K = 512) quantized into A by a kernel, then the
/// GEMM on them (N = 128), against the f64 product of the quantized
/// activations and the weights.
fn gemm_after_quantizer_check(seed: u64) -> Check {
    use nvfp4_kernels::gemm::{BlockedScales, GemmOperand};
    use nvfp4_kernels::quantize::{self, ScaleLayout, quantize_reference};
    let (m, n, k) = (128, 128, 512);
    let mut rng = Rng::new(seed);
    let (_, b) = nvfp4::gemm_inputs(&mut rng, m, n, k, 1, Inputs::Wide).expect("weights");
    let x: Vec<f16> = (0..m * k).map(|_| f16::from_f32(rng.uniform(-2.0, 2.0))).collect();
    let x32: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
    let want = nvfp4::gemm_reference(&quantize_reference(&x32, m, k, 1.0).expect("quantize"), &b);
    Box::new(move |d| {
        let db = gemm::DeviceGemmOperand::upload_weights(d, &b).map_err(err)?;
        let dx = d.upload(&x).map_err(|e| e.to_string())?;
        let mut codes = d.alloc_zeroed::<u8>(m * k / 2).map_err(|e| e.to_string())?;
        let mut scales = d
            .alloc_zeroed::<u8>(nvfp4::blocked_scale_len(m, k / 16, 1))
            .map_err(|e| e.to_string())?;
        let mut dc = d.upload(&vec![f16::NAN; m * n]).map_err(|e| e.to_string())?;
        let layout = ScaleLayout::Blocked;
        quantize::quantize(d, &dx, m, m, k, 1.0, layout, &mut codes, &mut scales).map_err(err)?;
        let a = GemmOperand::new(d, m, k, 1, &codes, BlockedScales(&scales)).map_err(err)?;
        gemm::gemm(d, a, &db, &mut dc).map_err(err)?;
        nvfp4::check_close(&d.download(&dc).map_err(|e| e.to_string())?, &want, 1e-3, 1e-3)
    })
}

/// The mutants of item 5 of issue 24: a `griddepcontrol.wait` removed, a
/// release or acquire made relaxed, a `fence.acq_rel` removed.
fn pdl_or_order(text: &str, change: &str) -> bool {
    text.starts_with("griddepcontrol.wait") || text.starts_with("fence.acq_rel") || change == "made relaxed"
}

/// The GEMM twice in a row into the same C, as a model's layers call it:
/// the second call's decode kernel is a programmatic dependent launch of
/// the first call's GEMM.
fn gemm_twice_check(kernel: GemmKernel, (m, n, k): (usize, usize, usize), seed: u64) -> Check {
    let (a, b) = nvfp4::gemm_inputs(&mut Rng::new(seed), m, n, k, 1, Inputs::Wide).expect("inputs");
    let want = nvfp4::gemm_reference(&a, &b);
    Box::new(move |d| {
        let da = gemm::DeviceGemmOperand::upload(d, &a).map_err(err)?;
        let db = gemm::DeviceGemmOperand::upload_weights(d, &b).map_err(err)?;
        let mut dc = d.upload(&vec![f16::NAN; m * n]).map_err(|e| e.to_string())?;
        for _ in 0..2 {
            gemm::gemm_with(d, &da, &db, &mut dc, kernel).map_err(err)?;
        }
        nvfp4::check_close(&d.download(&dc).map_err(|e| e.to_string())?, &want, 1e-3, 1e-3)
    })
}

/// Runs one mutant under every schedule until one kills it: the first
/// failure, or `None` if it survives them all.
fn kill(s: &Subject, m: &Mutant) -> Option<String> {
    for (schedule, check) in &s.checks {
        let options = s.options(*schedule).with_max_warp_instructions(50_000_000);
        let device = Device::emulator_with(s.target, options);
        let emu = device.as_emulator().expect("an emulator");
        if let Err(e) = emu.replace_ptx(s.entry, &m.ptx) {
            return Some(format!("{}: {e}", label(schedule)));
        }
        if let Err(e) = check(&device) {
            return Some(format!("{}: {e}", label(schedule)));
        }
    }
    None
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release-mode test: cargo test --release -p nvfp4-tests --test async_mutants"
)]
fn the_emulator_kills_the_mutants_of_every_synchronising_instruction() {
    let (mut killed, mut total, mut equivalent, mut elsewhere) = (0, 0, 0, 0);
    let mut problems = Vec::new();
    // Per listed survivor: the occurrences it was seen for.
    let mut seen: Vec<Vec<usize>> = vec![Vec::new(); SURVIVORS.len()];
    for s in subjects() {
        for (schedule, check) in &s.checks {
            let device = Device::emulator_with(s.target, s.options(*schedule));
            check(&device).unwrap_or_else(|e| panic!("{} (not mutated), {}: {e}", s.name, label(schedule)));
        }
        for m in mutants(s.ptx) {
            if s.only.is_some_and(|only| !only(&m.text, m.change)) {
                continue;
            }
            total += 1;
            let listed = listed(s.name, &m);
            if let Some((k, _)) = listed {
                seen[k].push(m.occurrence);
            }
            let what = format!("{} line {} `{}` ({})", s.name, m.line, m.text, m.change);
            match (kill(&s, &m), listed) {
                (Some(why), listed) => {
                    killed += 1;
                    let why: String = why.chars().take(200).collect();
                    println!("killed    {what}: {why}");
                    if listed.is_some() {
                        problems.push(format!("{what} is listed in SURVIVORS but was killed"));
                    }
                }
                (None, Some((_, Why::Equivalent(reason)))) => {
                    equivalent += 1;
                    println!("survived  {what}: equivalent: {reason}");
                }
                (None, Some((_, Why::Elsewhere(reason)))) => {
                    elsewhere += 1;
                    println!("survived  {what}: not reached here; killed in {reason}");
                }
                (None, None) => {
                    println!("SURVIVED  {what}: not in SURVIVORS");
                    problems.push(format!("{what} survived and is not in SURVIVORS"));
                }
            }
        }
    }
    let share = 100.0 * f64::from(killed) / f64::from(total - equivalent - elsewhere);
    println!(
        "killed {killed} of {total} mutants ({equivalent} equivalent mutants survive, {elsewhere} are killed in another subject's run; of the other {}, {share:.1}% killed)",
        total - equivalent - elsewhere
    );
    for (e, seen) in SURVIVORS.iter().zip(&seen) {
        if e.occurrences.iter().flat_map(|r| r.clone()).any(|o| !seen.contains(&o)) {
            problems.push(format!(
                "SURVIVORS lists {} `{}` #{:?} ({}), but not every one of those is a mutant any more",
                e.subjects.join(", "),
                e.text,
                e.occurrences,
                e.change
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        share >= 90.0,
        "only {share:.1}% of the non-equivalent mutants killed: under 90%"
    );
}
