//! `#[device] const`s in kernels: from the same module, another module
//! (`tables::`) and another crate (`nvfp4_kernels`); in expressions,
//! conditions that fold, `match` patterns, array lengths (a device
//! function's result type included), a shared array's length (a const-block
//! turbofish), `#[unroll]` bounds and `specialize` lists; and arrays of
//! numbers as tables indexed at run time (`.const` data, bounds-checked by
//! the emulator) and by constants (folded); in methods, closures, array
//! literals iterated and assertions. Run on the emulator against the
//! same functions and the same consts on the host.

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::gemm::sm90;
use nvfp4_kernels::nvfp4::e2m1_to_f32;

/// A tile's edge, and the pitch of a padded tile row in shared memory.
#[device]
const TILE: u32 = 16;
#[device]
const PITCH: usize = TILE as usize + 1;
#[device]
const HALF: u32 = TILE / 2;
#[device]
const ROUNDS: usize = 3;
/// The results of [`scalars`] per thread.
#[device]
const OUTPUTS: usize = 2 * ROUNDS + 5;
#[device]
const THIRD: f32 = 1.0 / 3.0;
#[device]
const NEG: i32 = -7 * TILE as i32;
#[device]
const WIDE: u64 = u64::MAX / 3;
#[device]
const BIG: bool = TILE > 8 && ROUNDS < 4;

/// Mixing words, indexed at run time (more than a PTX line's 16).
#[device]
const MIX: [u32; 20] = [
    0x9E37_79B9,
    0x85EB_CA6B,
    0xC2B2_AE35,
    0x27D4_EB2F,
    0x1656_67B1,
    TILE,
    HALF << 20,
    !0,
    0x2545_F491,
    0x5BD1_E995,
    0,
    1,
    0x8000_0000,
    0x7FFF_FFFF,
    0xDEAD_BEEF,
    0x0123_4567,
    0x89AB_CDEF,
    3,
    5,
    0xFFFF_0000,
];
#[device]
const WEIGHTS: [f32; 5] = [0.5, -1.25, THIRD, f32::MAX, -0.0];
#[device]
const BYTES: [u8; 4] = [1, 2, 250, TILE as u8 * 3];
#[device]
const SIGNED: [i64; 3] = [NEG as i64, i64::MIN, 12_345_678_901];

mod tables {
    use nvfp4_dsl::prelude::*;

    /// Another module's table.
    #[device]
    pub const PRIMES: [u32; 8] = [2, 3, 5, 7, 11, 13, 17, 19];
    /// Defined by the parent module's const.
    #[device]
    pub const STEP: u32 = super::TILE * 3;

    /// Names its own module's consts by bare names (fetched as
    /// `tables::PRIMES`, the path the caller reached it by).
    #[device]
    pub fn prime_mix(x: u32) -> u32 {
        x.wrapping_mul(PRIMES[(x % 8) as usize]) ^ STEP
    }
}

/// A struct with methods whose field lengths and bodies name consts of
/// its own module and of the parent.
mod hashing {
    use nvfp4_dsl::prelude::*;

    #[device]
    pub const LANES: usize = 4;
    #[device]
    pub const SALT: [u32; LANES] = [0x243F_6A88, 0x85A3_08D3, 0x1319_8A2E, 0x0370_7344];

    #[device(methods)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Hasher {
        pub lanes: [u32; LANES],
    }

    #[device]
    impl Hasher {
        pub fn new() -> Self {
            Hasher { lanes: SALT }
        }

        pub fn push(&mut self, x: u32) {
            #[unroll]
            for l in 0..LANES {
                self.lanes[l] = (self.lanes[l] ^ x).wrapping_mul(super::MIX[(x % 20) as usize] | 1);
            }
        }

        pub fn finish(&self) -> u32 {
            self.lanes[0] ^ self.lanes[1].rotate_left(super::HALF) ^ self.lanes[2] ^ self.lanes[3]
        }
    }
}

/// Consts in methods, in a closure, in an array literal iterated and in
/// an assertion.
#[device]
fn hashed(seed: u32) -> u32 {
    let mut h = hashing::Hasher::new();
    let scaled = |x: u32| x.wrapping_mul(TILE) ^ tables::PRIMES[(x % 8) as usize];
    for step in [HALF, TILE, tables::STEP] {
        h.push(scaled(seed ^ step));
    }
    assert!(seed % TILE < TILE);
    h.finish()
}

#[kernel(targets(sm_90))]
pub fn hashes(seeds: &[u32], out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    out[i] = hashed(seeds[i]);
}

/// Scalar consts in expressions, conditions, patterns, an array length and
/// `#[unroll]` bounds; tables of every element type indexed at run time,
/// and one iterated.
#[device]
fn scalars(seed: u32) -> [u32; OUTPUTS] {
    let mut out = [0u32; OUTPUTS];
    #[unroll]
    for r in 0..ROUNDS {
        out[2 * r] = seed.rotate_left(r as u32 * HALF + 1);
        out[2 * r + 1] = MIX[((seed >> (4 * r)) % 20) as usize];
    }
    let branch = if BIG { seed / HALF } else { seed };
    let pattern = match seed % (2 * TILE) {
        TILE => 1u32,
        0..=HALF => 2,
        _ => 3,
    };
    let wide = (seed as u64).wrapping_mul(WIDE);
    let signed = SIGNED[(seed % 3) as usize].wrapping_mul(seed as i64);
    let weight = WEIGHTS[(seed % 5) as usize] * seed as f32;
    out[2 * ROUNDS] = branch ^ pattern << 28 ^ (seed as f32 * THIRD).to_bits();
    out[2 * ROUNDS + 1] = wide as u32 ^ (wide >> 32) as u32 ^ (seed as i32).wrapping_mul(NEG) as u32;
    out[2 * ROUNDS + 2] = BYTES[(seed % 4) as usize] as u32 ^ (signed as u32 ^ (signed >> 32) as u32);
    out[2 * ROUNDS + 3] = weight.to_bits();
    // An element loop over a table: unrolled, each element a constant.
    let mut primes = seed;
    for (k, &p) in tables::PRIMES.iter().enumerate() {
        primes = primes.wrapping_mul(p) ^ (seed >> k);
    }
    out[2 * ROUNDS + 4] = tables::prime_mix(seed) ^ primes;
    out
}

#[kernel(targets(sm_90))]
pub fn scalar_consts(seeds: &[u32], out: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let r = scalars(seeds[i]);
    #[unroll]
    for k in 0..OUTPUTS {
        out[OUTPUTS * i + k] = r[k];
    }
}

/// Each block transposes a `TILE` x `TILE` tile through shared memory whose
/// rows are padded to `PITCH` (the length a const-block turbofish).
#[kernel(targets(sm_90))]
pub fn transpose(x: &[u32], y: &mut [u32]) {
    let tile = shared_array::<u32, { TILE as usize * PITCH }>();
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let base = block_idx_x() * TILE * TILE;
    tile[ty * PITCH as u32 + tx] = x[(base + ty * TILE + tx) as usize];
    sync_threads();
    y[(base + ty * TILE + tx) as usize] = tile[tx * PITCH as u32 + ty];
}

/// Another crate's table (the e2m1 values) and scalar consts (the sm_90
/// GEMM's shared-memory layout, which that crate's kernels and host code
/// both read).
#[kernel(targets(sm_90))]
pub fn cross_crate(codes: &[u8], values: &mut [f32], layout: &mut [u32]) {
    let i = thread_idx_x() as usize;
    values[i] = nvfp4_kernels::nvfp4::E2M1_VALUES[(codes[i] & 0xF) as usize];
    if i == 0 {
        layout[0] = sm90::IMAGE_BYTES;
        layout[1] = sm90::RAW_BYTES;
        layout[2] = sm90::BK as u32;
    }
}

/// A const generic specialised to consts' values.
#[kernel(targets(sm_90), specialize(W = [HALF, TILE * 2]))]
pub fn widths<const W: u32>(out: &mut [u32]) {
    out[thread_idx_x() as usize] = W * thread_idx_x() + tables::STEP;
}

/// A table read at indices the caller gives.
#[kernel(targets(sm_90))]
pub fn lookup(idx: &[u32], out: &mut [u32]) {
    let i = thread_idx_x() as usize;
    out[i] = tables::PRIMES[idx[i] as usize];
}

/// Consts whose conditions and products fold: a single store of 272.
#[kernel(targets(sm_90))]
pub fn folded(out: &mut [u32]) {
    if TILE > HALF && BIG {
        out[0] = TILE * PITCH as u32;
    } else {
        out[0] = MIX[2];
    }
}

const POISON: u32 = 0xDEAD_BEEF;

fn seeds(n: u32) -> Vec<u32> {
    (0..n)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ (i >> 3).wrapping_mul(0x85EB_CA6B))
        .collect()
}

#[test]
fn scalar_consts_and_tables_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let seeds = seeds(256);
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.upload(&vec![POISON; OUTPUTS * seeds.len()]).expect("upload");
    // SAFETY: one thread per seed, `OUTPUTS` words each.
    unsafe { scalar_consts::Kernel::launch(&device, LaunchConfig::linear(2, 128), &ds, &mut out) }.expect("launch");
    let out = device.download(&out).expect("download");
    let mut weights = std::collections::HashSet::new();
    for (i, &s) in seeds.iter().enumerate() {
        let want = scalars(s);
        assert_eq!(out[OUTPUTS * i..OUTPUTS * (i + 1)], want, "seed {s:#x}");
        weights.insert(s % 5);
    }
    // Every element of `WEIGHTS` is read.
    assert_eq!(weights.len(), 5);
}

#[test]
fn consts_in_methods_closures_and_array_literals_compute_what_the_host_computes() {
    let device = Device::emulator(Target::Sm90);
    let seeds = seeds(256);
    let ds = device.upload(&seeds).expect("upload");
    let mut out = device.upload(&vec![POISON; seeds.len()]).expect("upload");
    // SAFETY: one thread per seed.
    unsafe { hashes::Kernel::launch(&device, LaunchConfig::linear(2, 128), &ds, &mut out) }.expect("launch");
    let want: Vec<u32> = seeds.iter().map(|&s| hashed(s)).collect();
    assert_eq!(device.download(&out).expect("download"), want);
}

#[test]
fn a_shared_array_sized_by_consts_transposes_tiles() {
    let device = Device::emulator(Target::Sm90);
    let tiles = 3;
    let x = seeds(tiles * TILE * TILE);
    let dx = device.upload(&x).expect("upload");
    let mut y = device.upload(&vec![POISON; x.len()]).expect("upload");
    let config = LaunchConfig::new((tiles, 1, 1), (TILE, TILE, 1));
    // SAFETY: one thread per element of `tiles` tiles.
    unsafe { transpose::Kernel::launch(&device, config, &dx, &mut y) }.expect("launch");
    let y = device.download(&y).expect("download");
    let n = TILE as usize;
    for t in 0..tiles as usize {
        for r in 0..n {
            for c in 0..n {
                assert_eq!(
                    y[t * n * n + r * n + c],
                    x[t * n * n + c * n + r],
                    "tile {t} ({r}, {c})"
                );
            }
        }
    }
    let ptx = transpose::VARIANTS[0].ptx[0].1;
    assert!(ptx.contains(".shared .align 16 .b8 transpose_smem0[1088];"), "{ptx}");
}

#[test]
fn another_crates_consts_are_the_host_values() {
    let device = Device::emulator(Target::Sm90);
    let codes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0xA0).collect();
    let dc = device.upload(&codes).expect("upload");
    let mut values = device
        .upload(&vec![f32::from_bits(POISON); codes.len()])
        .expect("upload");
    let mut layout = device.upload(&[POISON; 3]).expect("upload");
    // SAFETY: one thread per code; thread 0 writes the three layout words.
    unsafe {
        cross_crate::Kernel::launch(
            &device,
            LaunchConfig::linear(1, codes.len() as u32),
            &dc,
            &mut values,
            &mut layout,
        )
    }
    .expect("launch");
    let values = device.download(&values).expect("download");
    for (code, v) in codes.iter().zip(&values) {
        assert_eq!(v.to_bits(), e2m1_to_f32(*code).to_bits(), "code {code:#x}");
    }
    let layout = device.download(&layout).expect("download");
    assert_eq!(layout, [sm90::IMAGE_BYTES, sm90::RAW_BYTES, sm90::BK as u32]);
    assert_eq!(layout, [32768, 9216, 128]);
}

#[test]
fn specialisations_listed_by_consts_run() {
    let device = Device::emulator(Target::Sm90);
    let names: Vec<&str> = widths::VARIANTS.iter().map(|v| v.entry).collect();
    assert_eq!(names, ["widths__w_8", "widths__w_32"]);
    let mut out = device.upload(&[POISON; 32]).expect("upload");
    // SAFETY: one thread per word.
    unsafe { widths::Kernel::<HALF>::launch(&device, LaunchConfig::linear(1, 32), &mut out) }.expect("launch");
    let want: Vec<u32> = (0..32).map(|t| HALF * t + tables::STEP).collect();
    assert_eq!(device.download(&out).expect("download"), want);
}

#[test]
fn a_table_read_at_run_time_is_const_data_and_bounds_checked() {
    let device = Device::emulator(Target::Sm90);
    let idx: Vec<u32> = (0..32).map(|i| (i * 5) % 8).collect();
    let di = device.upload(&idx).expect("upload");
    let mut out = device.upload(&[POISON; 32]).expect("upload");
    // SAFETY: one thread per index.
    unsafe { lookup::Kernel::launch(&device, LaunchConfig::linear(1, 32), &di, &mut out) }.expect("launch");
    let want: Vec<u32> = idx.iter().map(|&i| tables::PRIMES[i as usize]).collect();
    assert_eq!(device.download(&out).expect("download"), want);

    let mix = scalar_consts::VARIANTS[0].ptx[0].1;
    assert!(
        mix.contains("3735928559, 19088743,\n\t2309737967, 3, 5, 4294901760};"),
        "{mix}"
    );
    let ptx = lookup::VARIANTS[0].ptx[0].1;
    assert!(
        ptx.contains(".const .align 4 .u32 lookup_PRIMES[8] = {2, 3, 5, 7, 11, 13, 17, 19};"),
        "{ptx}"
    );
    assert!(ptx.contains("ld.const.u32"), "{ptx}");

    // One past the end: the emulator names the table (the GPU would read
    // whatever follows it).
    let bad = device.upload(&[1u32, 8]).expect("upload");
    // SAFETY: thread 1 reads past the table, which the emulator reports.
    let e = unsafe { lookup::Kernel::launch(&device, LaunchConfig::linear(1, 2), &bad, &mut out) }
        .expect_err("an index past the table");
    let msg = e.to_string();
    assert!(
        msg.contains(
            "const load of 4 bytes at byte 32 of the `.const` variable `lookup_PRIMES` (32 bytes) is out of its bounds"
        ),
        "{msg}"
    );
}

#[test]
fn consts_fold_and_constant_indices_need_no_table() {
    let ptx = folded::VARIANTS[0].ptx[0].1;
    let code: Vec<&str> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && l.ends_with(';') && !l.starts_with('.'))
        .collect();
    assert_eq!(
        code,
        [
            "ld.param.u64 %rd1, [folded_param_out];",
            "cvta.to.global.u64 %rd2, %rd1;",
            "st.global.u32 [%rd2], 272;",
            "ret;"
        ],
        "{ptx}"
    );
    assert!(!ptx.contains(".const"), "{ptx}");
}

#[test]
fn the_test_kernels_assemble_with_ptxas() {
    let Some(ptxas) = nvfp4_tests::find_ptxas() else {
        assert!(!nvfp4_tests::in_ci(), "ptxas is required in CI");
        eprintln!("ptxas not found: skipping");
        return;
    };
    let variants = [
        scalar_consts::VARIANTS,
        transpose::VARIANTS,
        cross_crate::VARIANTS,
        widths::VARIANTS,
        lookup::VARIANTS,
        folded::VARIANTS,
        hashes::VARIANTS,
    ];
    for v in variants.iter().flat_map(|v| v.iter()) {
        for (target, ptx) in v.ptx {
            nvfp4_tests::assemble(&ptxas, ptx, target.name()).unwrap_or_else(|e| panic!("{}: {e}", v.entry));
        }
    }
}
