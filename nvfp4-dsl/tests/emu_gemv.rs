//! The NVFP4 GEMV snapshots (K split 1, 2 and 8; sm_90 with `dp4a`,
//! `prmt` and `griddepcontrol`, sm_100a with `cvt.rn.f16x2.e2m1x2`) run on
//! the emulator, every element checked against an f64 reference.

use half::f16;
use nvfp4_dsl::emu::{Memory, Module, ParamValue};

mod common;
use common::{Rng, linear, ptx, upload};
use nvfp4_testkit::{Nvfp4Dot, Nvfp4Rows};

/// `[L][rows][K/2]` packed values and `[L][rows][K/16]` scales.
struct Tensor {
    rows: usize,
    k: usize,
    data: Vec<u8>,
    scales: Vec<u8>,
}

impl Tensor {
    fn random(rng: &mut Rng, rows: usize, k: usize, l: usize) -> Tensor {
        Tensor {
            rows,
            k,
            data: (0..l * rows * k / 2).map(|_| rng.next_u64() as u8).collect(),
            scales: (0..l * rows * k / 16)
                .map(|_| {
                    let r = rng.next_u64();
                    (((5 + r % 4) << 3) | ((r >> 8) & 7)) as u8
                })
                .collect(),
        }
    }

    /// The rows as the reference reads them.
    fn rows(&self) -> Nvfp4Rows<'_> {
        Nvfp4Rows {
            rows: self.rows,
            k: self.k,
            data: &self.data,
            scales: &self.scales,
        }
    }
}

fn run(snap: &str, entry: &str, ksplit: u32, warps: u32) {
    let (m, k, l, b_rows) = (128usize, 1536usize, 2usize, 2usize);
    let mut rng = Rng::new(u64::from(ksplit) * 7 + warps as u64);
    let a = Tensor::random(&mut rng, m, k, l);
    let b = Tensor::random(&mut rng, b_rows, k, l);
    let module = Module::parse(&ptx(snap)).unwrap();
    let mut mem = Memory::new();
    let units = k / 32;
    let da = upload(&mut mem, &a.data, false);
    let dsa = upload(&mut mem, &a.scales, false);
    let db = upload(&mut mem, &b.data, false);
    let dsb = upload(&mut mem, &b.scales, false);
    let poison: Vec<u8> = (0..m * l).flat_map(|_| f16::NAN.to_bits().to_le_bytes()).collect();
    let dc = upload(&mut mem, &poison, true);
    let groups = (m * l / 4) as u32;
    let per_block = warps / ksplit;
    let launch = linear(groups.div_ceil(per_block), 32 * warps, 0);
    let params = [
        ParamValue::U64(da),
        ParamValue::U64((m * l * units) as u64),
        ParamValue::U64(dsa),
        ParamValue::U64((m * l * units) as u64),
        ParamValue::U64(db),
        ParamValue::U64((b_rows * l * units) as u64),
        ParamValue::U64(dsb),
        ParamValue::U64((b_rows * l * units) as u64),
        ParamValue::U64(dc),
        ParamValue::U64((m * l) as u64),
        ParamValue::U32(m as u32),
        ParamValue::U32(b_rows as u32),
        ParamValue::U32(units as u32),
        ParamValue::U8(1),
        ParamValue::F32(1.0),
    ];
    module
        .launch(entry, &launch, &params, &mut mem)
        .unwrap_or_else(|e| panic!("{e}"));
    let got = mem.read(dc, m * l * 2).unwrap();
    let dot = Nvfp4Dot::new(false);
    for ll in 0..l {
        for r in 0..m {
            let ((x, sx), (y, sy)) = (a.rows().row(ll, r), b.rows().row(ll, 0));
            let want = dot.dot(x, sx, y, sy);
            let i = ll * m + r;
            let g = f64::from(f16::from_bits(u16::from_le_bytes([got[2 * i], got[2 * i + 1]])).to_f32());
            assert!(
                (g - want).abs() <= 1e-3 + 1e-3 * want.abs(),
                "{entry}: c[{ll}][{r}] = {g}, want {want}"
            );
        }
    }
}

#[test]
fn gemv_snapshots_on_the_emulator() {
    macro_rules! snap {
        ($n:literal) => {
            include_str!(concat!("../../snapshots/", $n, ".snap"))
        };
    }
    for (snap, ksplit, warps) in [
        (snap!("gemv_nvfp4__rows_4_ksplit_1__sm_90"), 1, 4),
        (snap!("gemv_nvfp4__rows_4_ksplit_2__sm_90"), 2, 8),
        (snap!("gemv_nvfp4__rows_4_ksplit_8__sm_90"), 8, 8),
        (snap!("gemv_nvfp4__rows_4_ksplit_1__sm_100a"), 1, 4),
        (snap!("gemv_nvfp4__rows_4_ksplit_2__sm_100a"), 2, 8),
        (snap!("gemv_nvfp4__rows_4_ksplit_8__sm_100a"), 8, 8),
    ] {
        let entry = format!("gemv_nvfp4__rows_4_ksplit_{ksplit}");
        run(snap, &entry, ksplit, warps);
    }
}
