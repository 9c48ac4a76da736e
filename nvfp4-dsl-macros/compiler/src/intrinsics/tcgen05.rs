//! Blackwell (sm_100a) tensor memory and tensor cores: `tcgen05.*`, and
//! the builders of its shared-memory and instruction descriptors.

use super::*;

const DESC: Ty = Ty::SmemDesc;
const TMEM_LD_LENGTHS: &[u64] = &[1, 2, 4, 8, 16, 32, 64, 128];

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn tcgen05_alloc<M: SharedMemory<Elem = u32>, I: DeviceIndex>(slot: &M, index: I, columns: u32)",
        params: [SLOT, ArgTy::Index, ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, c| {
            let cols = tmem_columns(c, 2)?;
            let addr = shared_operand(l, c, 0, 1)?;
            l.emit(
                "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                vec![addr, Operand::imm(cols)],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn tcgen05_dealloc(tmem_address: u32, columns: u32)",
        params: [ArgTy::Is(U32), ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, c| {
            let cols = tmem_columns(c, 1)?;
            let t = l.operand(&arg(c, 0), Scalar::U32);
            l.emit(
                "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
                vec![t, Operand::imm(cols)],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn tcgen05_relinquish_alloc_permit()",
        params: [],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, _| simple(l, "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned", 86),
    ),
    row!(
        "fn tcgen05_cp_32x128b_warpx4(tmem_address: u32, src: SmemDesc)",
        params: [ArgTy::Is(U32), ArgTy::Is(DESC)],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, c| {
            let t = l.in_reg(&arg(c, 0), Scalar::U32);
            let d = l.bits_reg(&arg(c, 1), RegClass::B64);
            l.emit(
                "tcgen05.cp.cta_group::1.32x128b.warpx4",
                vec![Operand::Addr(Box::new(t.into()), 0), d.into()],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn tcgen05_mma_mxf4nvf4(d_tmem: u32, a: SmemDesc, b: SmemDesc, idesc: InstrDesc, sfa_tmem: u32, sfb_tmem: u32, accumulate: bool)",
        params: [
            ArgTy::Is(U32),
            ArgTy::Is(DESC),
            ArgTy::Is(DESC),
            ArgTy::Is(Ty::InstrDesc),
            ArgTy::Is(U32),
            ArgTy::Is(U32),
            ArgTy::Is(Ty::Scalar(Scalar::Bool))
        ],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, c| {
            l.require_ptx(87);
            let d = l.in_reg(&arg(c, 0), Scalar::U32);
            let a = l.bits_reg(&arg(c, 1), RegClass::B64);
            let b = l.bits_reg(&arg(c, 2), RegClass::B64);
            let i = l.bits_reg(&arg(c, 3), RegClass::B32);
            let sfa = l.in_reg(&arg(c, 4), Scalar::U32);
            let sfb = l.in_reg(&arg(c, 5), Scalar::U32);
            let acc = l.in_reg(&arg(c, 6), Scalar::Bool);
            let at = |r: ir::Reg| Operand::Addr(Box::new(r.into()), 0);
            l.emit(
                "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X",
                vec![at(d), a.into(), b.into(), i.into(), at(sfa), at(sfb), acc.into()],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn tcgen05_commit<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I)",
        params: [BARS, ArgTy::Index],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            l.emit(
                "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
                vec![addr],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn tcgen05_ld_32x32b<const N: usize>(tmem_address: u32) -> [u32; N]",
        generics: Generics::Len(TMEM_LD_LENGTHS),
        params: [ArgTy::Is(U32)],
        ret: RetTy::ArrayOfGenericLen(U32),
        target: Sm100a,
        lower: |l, c| {
            let n = c.generic_len.unwrap_or(0);
            if !TMEM_LD_LENGTHS.contains(&n) {
                return err(
                    c.span,
                    format!("`tcgen05_ld_32x32b` loads one of {TMEM_LD_LENGTHS:?} columns, not {n}"),
                );
            }
            let t = l.in_reg(&arg(c, 0), Scalar::U32);
            let regs: Vec<ir::Reg> = (0..n).map(|_| l.reg(RegClass::B32)).collect();
            l.emit(
                format!("tcgen05.ld.sync.aligned.32x32b.x{n}.b32"),
                vec![
                    Operand::Vec(regs.iter().map(|r| (*r).into()).collect()),
                    Operand::Addr(Box::new(t.into()), 0),
                ],
            );
            Ok(Val::Parts(regs.into_iter().map(Val::Reg).collect()))
        },
    ),
    row!(
        "fn tcgen05_wait_ld()",
        params: [],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, _| simple(l, "tcgen05.wait::ld.sync.aligned", 86),
    ),
    row!(
        "fn tcgen05_fence_before_thread_sync()",
        params: [],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, _| simple(l, "tcgen05.fence::before_thread_sync", 86),
    ),
    row!(
        "fn tcgen05_fence_after_thread_sync()",
        params: [],
        ret: RetTy::Unit,
        target: Sm100a,
        lower: |l, _| simple(l, "tcgen05.fence::after_thread_sync", 86),
    ),
    row!(
        "fn SmemDesc::new(start_address: u32) -> SmemDesc",
        params: [ArgTy::Is(U32)],
        ret: RetTy::Is(DESC),
        target: Sm80,
        lower: |l, c| {
            use ast::BinOp::*;
            let start = bin32(l, c, BitAnd, arg(c, 0), int(0x3FFFF))?;
            let start = bin32(l, c, Shr, start, int(4))?;
            let wide = l.cast(start, Scalar::U32, Scalar::U64);
            bin64(l, c, BitOr, wide, int(1 << 46))
        },
    ),
    row!(
        "fn with_leading_byte_offset(self, bytes: u32) -> SmemDesc",
        params: [ArgTy::Is(DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(DESC),
        target: Sm80,
        lower: |l, c| set_desc_field(l, c, arg(c, 0), arg(c, 1), 16),
    ),
    row!(
        "fn with_stride_byte_offset(self, bytes: u32) -> SmemDesc",
        params: [ArgTy::Is(DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(DESC),
        target: Sm80,
        lower: |l, c| set_desc_field(l, c, arg(c, 0), arg(c, 1), 32),
    ),
    row!(
        "fn with_base_offset(self, offset: u32) -> SmemDesc",
        params: [ArgTy::Is(DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(DESC),
        target: Sm80,
        lower: |l, c| set_base_offset(l, c),
    ),
    row!(
        "fn with_swizzle(self, swizzle: Swizzle) -> SmemDesc",
        params: [ArgTy::Is(DESC), ArgTy::SwizzleConst],
        ret: RetTy::Is(DESC),
        target: Sm80,
        lower: |l, c| {
            use ast::BinOp::*;
            let Val::Swizzle(s) = arg(c, 1) else {
                unreachable!("checked: a swizzle")
            };
            let cleared = bin64(l, c, BitAnd, arg(c, 0), int(!(7u64 << 61)))?;
            bin64(l, c, BitOr, cleared, int(s.layout_type() << 61))
        },
    ),
    row!(
        "fn offset(self, bytes: u32) -> SmemDesc",
        params: [ArgTy::Is(DESC), ArgTy::Is(U32)],
        ret: RetTy::Is(DESC),
        target: Sm80,
        lower: |l, c| desc_offset(l, c),
    ),
    row!(
        "fn bits(self) -> u64",
        params: [ArgTy::Is(DESC)],
        ret: RetTy::Is(U64),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
    row!(
        "fn InstrDesc::mxf4nvf4(m: u32, n: u32) -> InstrDesc",
        params: [ArgTy::Is(U32), ArgTy::Is(U32)],
        ret: RetTy::Is(Ty::InstrDesc),
        target: Sm80,
        lower: |l, c| {
            use ast::BinOp::*;
            let n = bin32(l, c, Shr, arg(c, 1), int(3))?;
            let n = bin32(l, c, Shl, n, int(17))?;
            let m = bin32(l, c, Shr, arg(c, 0), int(7))?;
            let m = bin32(l, c, Shl, m, int(27))?;
            let d = bin32(l, c, BitOr, n, m)?;
            bin32(l, c, BitOr, d, int(0x480))
        },
    ),
    row!(
        "fn bits(self) -> u32",
        params: [ArgTy::Is(Ty::InstrDesc)],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |_, c| Ok(arg(c, 0)),
    ),
];

/// `tcgen05` column counts: a power of two in 32..=512.
fn tmem_columns(c: &Call, i: usize) -> Result<u32> {
    let n = const_u32(c, i, "the number of tensor memory columns")?;
    if !(32..=512).contains(&n) || !n.is_power_of_two() {
        return err(
            c.span,
            format!("tensor memory is allocated in powers of two from 32 to 512 columns, not {n}"),
        );
    }
    Ok(n)
}
