//! Hopper (sm_90a) warpgroup tensor cores: `wgmma.mma_async` with A from
//! registers or from shared memory, its fence / commit / wait, the sm_90
//! shared-memory matrix descriptor's builders, and `setmaxnreg`.
//!
//! The accumulator is a `let mut acc = [0.0f32; N]` passed as `&mut acc`
//! (or a device function's `acc: &mut [f32; N]` parameter, passed on as
//! `acc`): its registers are the instruction's D operands, updated in place
//! (N = n / 2 for an `m64nNk16` MMA, so the shape follows the array).

use super::*;

const WGMMA_DESC: Ty = Ty::WgmmaDesc;
const BOOL: Ty = Ty::Scalar(Scalar::Bool);
/// The register A fragment of an m64nNk16 MMA: four pairs per thread.
const A_F16: ArgTy = ArgTy::ArrayOf(Ty::F16x2, 4);
const A_BF16: ArgTy = ArgTy::ArrayOf(Ty::Bf16x2, 4);

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn wgmma_fence()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, _| simple(l, "wgmma.fence.sync.aligned", 80),
    ),
    row!(
        "fn wgmma_commit_group()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, _| simple(l, "wgmma.commit_group.sync.aligned", 80),
    ),
    row!(
        "fn wgmma_wait_group(pending: u32)",
        params: [ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| {
            let n = const_u32(c, 0, "the number of pending wgmma groups")?;
            if n > 7 {
                return err(
                    c.span,
                    format!("`wgmma_wait_group` leaves 0 to 7 groups pending, not {n}"),
                );
            }
            l.require_ptx(80);
            l.emit("wgmma.wait_group.sync.aligned", vec![Operand::imm(n)]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn wgmma_f16_rs<const N: usize>(acc: &mut [f32; N], a: [f16x2; 4], b: WgmmaDesc, accumulate: bool)",
        params: [ArgTy::AccumMut, A_F16, ArgTy::Is(WGMMA_DESC), ArgTy::Is(BOOL)],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| mma(l, c, "f16", true),
    ),
    row!(
        "fn wgmma_bf16_rs<const N: usize>(acc: &mut [f32; N], a: [bf16x2; 4], b: WgmmaDesc, accumulate: bool)",
        params: [ArgTy::AccumMut, A_BF16, ArgTy::Is(WGMMA_DESC), ArgTy::Is(BOOL)],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| mma(l, c, "bf16", true),
    ),
    row!(
        "fn wgmma_f16_ss<const N: usize>(acc: &mut [f32; N], a: WgmmaDesc, b: WgmmaDesc, accumulate: bool)",
        params: [
            ArgTy::AccumMut,
            ArgTy::Is(WGMMA_DESC),
            ArgTy::Is(WGMMA_DESC),
            ArgTy::Is(BOOL)
        ],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| mma(l, c, "f16", false),
    ),
    row!(
        "fn wgmma_bf16_ss<const N: usize>(acc: &mut [f32; N], a: WgmmaDesc, b: WgmmaDesc, accumulate: bool)",
        params: [
            ArgTy::AccumMut,
            ArgTy::Is(WGMMA_DESC),
            ArgTy::Is(WGMMA_DESC),
            ArgTy::Is(BOOL)
        ],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| mma(l, c, "bf16", false),
    ),
    row!(
        "fn setmaxnreg_inc(registers: u32)",
        params: [ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| setmaxnreg(l, c, "inc"),
    ),
    row!(
        "fn setmaxnreg_dec(registers: u32)",
        params: [ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm90a,
        lower: |l, c| setmaxnreg(l, c, "dec"),
    ),
    // Descriptor builders: integer arithmetic, folded when the inputs are constants.
    row!(
        "fn WgmmaDesc::new(start_address: u32) -> WgmmaDesc",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Is(WGMMA_DESC),
        target: Sm80,
        lower: |l, c| {
            use ast::BinOp::*;
            let start = bin32(l, c, BitAnd, arg(c, 0), int(0x3FFFF))?;
            let start = bin32(l, c, Shr, start, int(4))?;
            Ok(l.cast(start, Scalar::U32, Scalar::U64))
        },
    ),
    row!(
        "fn with_leading_byte_offset(self, bytes: u32) -> WgmmaDesc",
        params: [ArgTy::Is(WGMMA_DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(WGMMA_DESC),
        target: Sm80,
        lower: |l, c| set_desc_field(l, c, arg(c, 0), arg(c, 1), 16),
    ),
    row!(
        "fn with_stride_byte_offset(self, bytes: u32) -> WgmmaDesc",
        params: [ArgTy::Is(WGMMA_DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(WGMMA_DESC),
        target: Sm80,
        lower: |l, c| set_desc_field(l, c, arg(c, 0), arg(c, 1), 32),
    ),
    row!(
        "fn with_base_offset(self, offset: u32) -> WgmmaDesc",
        params: [ArgTy::Is(WGMMA_DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(WGMMA_DESC),
        target: Sm80,
        lower: |l, c| set_base_offset(l, c),
    ),
    row!(
        "fn with_swizzle(self, swizzle: Swizzle) -> WgmmaDesc",
        params: [ArgTy::Is(WGMMA_DESC), ArgTy::SwizzleConst],
        ret: RetTy::Is(WGMMA_DESC),
        target: Sm80,
        lower: |l, c| {
            use ast::BinOp::*;
            let Val::Swizzle(s) = arg(c, 1) else {
                unreachable!("checked: a swizzle")
            };
            let cleared = bin64(l, c, BitAnd, arg(c, 0), int(!(3u64 << 62)))?;
            bin64(l, c, BitOr, cleared, int(s.wgmma_layout_type() << 62))
        },
    ),
    row!(
        "fn offset(self, bytes: u32) -> WgmmaDesc",
        params: [ArgTy::Is(WGMMA_DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(WGMMA_DESC),
        target: Sm80,
        lower: |l, c| desc_offset(l, c),
    ),
    row!(
        "fn bits(self) -> u64",
        params: [ArgTy::Is(WGMMA_DESC)],
        ret: RetTy::Is(U64),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
];

/// `wgmma.mma_async` for `ab` (`f16`/`bf16`) inputs with f32 accumulators:
/// A from registers (`a_regs`) or through a descriptor; K-major A and B,
/// no negation.
fn mma(l: &mut Lower<'_>, c: &Call, ab: &str, a_regs: bool) -> Result<Val> {
    let Val::Parts(acc) = arg(c, 0) else {
        unreachable!("checked: an array accumulator")
    };
    let n = 2 * acc.len();
    if !n.is_multiple_of(8) || !(8..=256).contains(&n) {
        return err(
            c.span,
            format!(
                "the accumulator has {} values; an m64nNk16 wgmma takes N / 2 per thread with N a multiple of 8 from 8 to 256 (4, 8, .., 128 values)",
                acc.len()
            ),
        );
    }
    l.require_ptx(80);
    let d = acc
        .iter()
        .map(|v| match v {
            Val::Reg(r) => Operand::Reg(*r),
            other => unreachable!("a mutable array holds registers, not {other:?}"),
        })
        .collect();
    let a = if a_regs {
        let Val::Parts(parts) = arg(c, 1) else {
            unreachable!("checked: a four-register fragment")
        };
        // A part that is not a 32-bit register yet (a constant) is written
        // into one here, after the caller's `wgmma_fence()`: the MMA must
        // not read a register written since the last fence, so fence it.
        let written = parts
            .iter()
            .any(|p| !matches!(p, Val::Reg(r) if r.class == RegClass::B32));
        let regs = parts
            .iter()
            .map(|p| Operand::Reg(l.bits_reg(p, RegClass::B32)))
            .collect();
        if written {
            l.emit("wgmma.fence.sync.aligned", vec![]);
        }
        Operand::Vec(regs)
    } else {
        Operand::Reg(l.bits_reg(&arg(c, 1), RegClass::B64))
    };
    let b = Operand::Reg(l.bits_reg(&arg(c, 2), RegClass::B64));
    let scale_d = match arg(c, 3) {
        Val::Const(Const::Bool(v)) => Operand::imm(u32::from(v)),
        v => Operand::Reg(l.in_reg(&v, Scalar::Bool)),
    };
    let mut args = vec![Operand::Vec(d), a, b, scale_d, Operand::imm(1), Operand::imm(1)];
    if !a_regs {
        args.push(Operand::imm(0));
    }
    args.push(Operand::imm(0));
    l.emit(format!("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab}"), args);
    Ok(Val::Unit)
}

fn setmaxnreg(l: &mut Lower<'_>, c: &Call, dir: &str) -> Result<Val> {
    let n = const_u32(c, 0, "the register count")?;
    if !(24..=256).contains(&n) || n % 8 != 0 {
        return err(
            c.span,
            format!("`setmaxnreg` takes a multiple of 8 from 24 to 256 registers, not {n}"),
        );
    }
    // ptxas 13.0 drops the instruction (C7508, "unable to determine register
    // count at entry") unless `.maxntid` and `.minnctapersm` fix the count.
    if !matches!(l.func.launch_bounds, Some((_, Some(_)))) {
        return err(
            c.span,
            "`setmaxnreg` moves registers between the warps of a block, counted from what each thread starts with, which only launch bounds with both numbers fix: without them ptxas drops the instruction (C7508); give the kernel its threads and blocks per multiprocessor, e.g. `#[kernel(targets(sm_90a), launch_bounds(384, 1))]` (each thread then starts with 168 registers)",
        );
    }
    l.require_ptx(80);
    l.emit(format!("setmaxnreg.{dir}.sync.aligned.u32"), vec![Operand::imm(n)]);
    Ok(Val::Unit)
}
