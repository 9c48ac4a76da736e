//! The H100 probes: small kernels whose outputs the H100 recorded
//! (`data/h100_probes.txt`), replayed bit for bit.

use super::*;

/// The kernel around each probe body of `data/h100_probes.txt`.
const PROBE_HEAD: &str = ".version 8.1
.target sm_90
.address_size 64
.shared .align 16 .b8 sm[64];
.extern .shared .align 1024 .b8 dyn[];
.visible .entry t(.param .u64 t_in,.param .u64 t_out)
{
.reg .pred %p<16>;.reg .b16 %h<16>;.reg .b32 %r<32>;.reg .b64 %rd<32>;.reg .f32 %f<16>;.reg .f64 %fd<16>;
ld.param.u64 %rd30,[t_in];ld.param.u64 %rd31,[t_out];mov.u32 %r30,%tid.x;
mul.wide.u32 %rd29,%r30,32;add.s64 %rd28,%rd30,%rd29;
ld.global.v4.u32 {%r1,%r2,%r3,%r4},[%rd28];ld.global.v4.u32 {%r5,%r6,%r7,%r8},[%rd28+16];
";
const PROBE_TAIL: &str =
    "mul.wide.u32 %rd29,%r30,8;add.s64 %rd27,%rd31,%rd29;st.global.v2.u32 [%rd27],{%r10,%r11};ret;}";

/// Special values the `mix` inputs draw from: integer extremes, f32
/// zeros, infinities, quiet/signalling NaNs with payloads, subnormals;
/// f16 pairs; f64 high words.
const MIX: [u32; 32] = [
    0,
    1,
    0xFFFF_FFFF,
    0x8000_0000,
    0x7FFF_FFFF,
    0x7FC0_0000,
    0xFFC0_0001,
    0x7F80_0001,
    0x7FA0_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x8000_0000,
    1,
    0x807F_FFFF,
    0x3F80_0000,
    0xBF80_0000,
    0x7E00_FE01,
    0x7C01_FC00,
    0x0001_8001,
    0x3C00_BC00,
    0x7FF8_0000,
    0xFFF0_0001,
    0x7F7F_FFFF,
    0x4780_0000,
    0xC3A0_0000,
    0x7D00_FD00,
    5,
    7,
    0x4188_0000,
    0x43E0_0000,
    0x43E8_0000,
    0x3A80_0000,
];

/// 32 threads of inputs: four special values and four pseudo-random words
/// each (the generator the probes were run with).
fn mix_inputs(k: usize) -> Vec<u32> {
    let mut x = 12345u32.wrapping_add(k as u32);
    let mut out = Vec::with_capacity(256);
    for t in 0..32 {
        for j in 0..8 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            out.push(if j < 4 { MIX[(t * 3 + j * 7 + k) % MIX.len()] } else { x });
        }
    }
    out
}

struct Probe {
    name: String,
    ptx: String,
    inputs: Vec<u32>,
    gpu: Vec<u32>,
    ulps: u32,
}

fn hex(s: &str) -> Vec<u32> {
    s.split_whitespace()
        .map(|w| u32::from_str_radix(w, 16).expect("hex"))
        .collect()
}

fn probes() -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    for line in include_str!("../data/h100_probes.txt").lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "probe" => out.push(Probe {
                name: rest.to_string(),
                ptx: String::new(),
                inputs: Vec::new(),
                gpu: Vec::new(),
                ulps: 0,
            }),
            "body" => {
                let p = out.last_mut().expect("a probe");
                p.ptx = format!("{PROBE_HEAD}{}\n{PROBE_TAIL}\n", rest.replace(';', ";\n"));
            }
            "in" => {
                let p = out.last_mut().expect("a probe");
                p.inputs = match rest.split_once(' ') {
                    Some(("mix", k)) => mix_inputs(k.parse().expect("a seed")),
                    Some(("rows", words)) => hex(words).into_iter().cycle().take(256).collect(),
                    _ => panic!("bad input line {line}"),
                };
            }
            "gpu" => out.last_mut().expect("a probe").gpu = hex(rest),
            "ulps" => out.last_mut().expect("a probe").ulps = rest.parse().expect("ulps"),
            _ => assert!(key.starts_with('#') || key.is_empty(), "bad line {line}"),
        }
    }
    out
}

fn emulate_probe(p: &Probe) -> Vec<u32> {
    let module = Module::parse(&p.ptx).unwrap_or_else(|e| panic!("{}: {e}", p.name));
    let mut mem = Memory::new();
    let inp = upload_u32(&mut mem, &p.inputs, false);
    let out = mem.alloc(32 * 8, true);
    module
        .launch(
            "t",
            &linear(1, 32, 256),
            &[ParamValue::U64(inp), ParamValue::U64(out)],
            &mut mem,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.name));
    download_u32(&mem, out, 64)
}

/// Differences between the emulator's and the GPU's outputs of a probe.
fn probe_diffs(p: &Probe, emu: &[u32], gpu: &[u32]) -> Vec<String> {
    let mut d = Vec::new();
    for (k, (e, g)) in emu.iter().zip(gpu).enumerate() {
        if (i64::from(*e) - i64::from(*g)).unsigned_abs() > u64::from(p.ulps) {
            let t = k / 2;
            d.push(format!(
                "{} thread {t} %r1{}: inputs {:08x?}: GPU {g:08x}, emulator {e:08x}",
                p.name,
                k % 2,
                &p.inputs[t * 8..t * 8 + 4]
            ));
        }
    }
    d
}

/// The NaN, division-by-zero, conversion, min/max, testp, shared-address
/// and elect behaviour an H100 showed, replayed bit for bit.
#[test]
fn h100_probes_replay_bit_for_bit() {
    let probes = probes();
    assert_eq!(probes.len(), 98);
    let mut diffs = Vec::new();
    for p in &probes {
        assert_eq!((p.inputs.len(), p.gpu.len()), (256, 64), "{}", p.name);
        diffs.extend(probe_diffs(p, &emulate_probe(p), &p.gpu));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// On a machine with a CUDA GPU (never in CI), runs every probe on the GPU
/// too and compares. Skips when there is no driver or device.
#[test]
fn probes_match_the_gpu_when_one_is_present() {
    use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg, sys};
    // SAFETY: only probes whether the driver library can be opened.
    if !unsafe { sys::is_culib_present() } || CudaContext::device_count().unwrap_or(0) == 0 {
        eprintln!("no CUDA device: skipped");
        return;
    }
    let ctx = CudaContext::new(0).expect("a context");
    let stream = ctx.default_stream();
    let mut diffs = Vec::new();
    for p in &probes() {
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(p.ptx.clone()))
            .unwrap_or_else(|e| panic!("{}: the driver rejected the PTX: {e}", p.name));
        let f = module.load_function("t").expect("entry t");
        let inp = stream.clone_htod(&p.inputs).expect("upload");
        let mut out = stream.alloc_zeros::<u32>(64).expect("alloc");
        let mut launch = stream.launch_builder(&f);
        launch.arg(&inp).arg(&mut out);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 256,
        };
        // SAFETY: the kernel reads 32 x 32 bytes of `inp` and writes 32 x 8
        // bytes of `out`, both that large.
        unsafe { launch.launch(cfg) }.expect("launch");
        let gpu = stream.clone_dtoh(&out).expect("download");
        diffs.extend(probe_diffs(p, &emulate_probe(p), &gpu));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
