//! Memory: global and shared loads and stores, shared arrays, and the
//! sm_90 asynchronous copies with their mbarriers and proxy fences.

use super::*;

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn load<M: Memory, I: Index>(src: &M, index: I, hint: Cache) -> M::Elem",
        params: [ArgTy::Mem, ArgTy::Index, ArgTy::Hint],
        ret: RetTy::Elem,
        target: Sm80,
        lower: lower_load,
    ),
    row!(
        "fn store<M: MemoryMut, I: Index>(dst: &mut M, index: I, value: M::Elem, hint: Cache)",
        params: [ArgTy::MemMut, ArgTy::Index, ArgTy::Elem, ArgTy::Hint],
        ret: RetTy::Unit,
        target: Sm80,
        lower: lower_store,
    ),
    row!(
        "fn load_v4<M: Memory, I: Index>(src: &M, index: I, hint: Cache) -> u32x4",
        params: [ArgTy::Mem, ArgTy::Index, ArgTy::Hint],
        ret: RetTy::Is(Ty::U32x4),
        target: Sm80,
        lower: lower_load_v4,
    ),
    row!(
        "fn store_v4<M: MemoryMut, I: Index>(dst: &mut M, index: I, value: u32x4, hint: Cache)",
        params: [ArgTy::MemMut, ArgTy::Index, ArgTy::Is(Ty::U32x4), ArgTy::Hint],
        ret: RetTy::Unit,
        target: Sm80,
        lower: lower_store_v4,
    ),
    row!(
        "fn len(&self) -> usize",
        params: [ArgTy::Global],
        ret: RetTy::Is(USIZE),
        target: Sm80,
        lower: |_, c| match mem(c, 0).len {
            Some(len) => Ok(*len),
            None => err(c.span, "the length of this view is not known"),
        },
    ),
    row!(
        "fn shared_array<T: SharedElement, const N: usize>() -> &'static mut SharedArray<T, N>",
        generics: Generics::TypeLen,
        params: [],
        ret: RetTy::SharedArray,
        target: Sm80,
        lower: |l, c| {
            let elem = c.generic_ty.clone().expect("checked: a type argument");
            let len = c.generic_len.unwrap_or(0);
            if len == 0 {
                return err(c.span, "a shared array needs at least one element");
            }
            Ok(Val::Mem(l.declare_shared(&elem, len, c.span)?))
        },
    ),
    row!(
        "fn dynamic_shared<T: Element>(byte_offset: u32) -> &'static mut SharedSlice<T>",
        generics: Generics::Type,
        params: [ArgTy::Is(U32)],
        ret: RetTy::SharedSlice,
        target: Sm80,
        lower: |l, c| {
            let elem = c.generic_ty.clone().expect("checked: a type argument");
            if let Val::Const(Const::Int(o)) = arg(c, 0) {
                let align = elem.mem_layout().map_or(1, |m| m.bytes) as i128;
                if o % align != 0 {
                    return err(
                        c.span,
                        format!("byte offset {o} is not a multiple of the element size {align}"),
                    );
                }
            }
            Ok(Val::Mem(l.dynamic_shared(&elem, arg(c, 0))))
        },
    ),
    row!(
        "fn shared_address<M: SharedMemory, I: DeviceIndex>(mem: &M, index: I) -> u32",
        params: [ArgTy::Shared, ArgTy::Index],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, c| Ok(Val::Reg(shared_address_reg(l, c, 0, 1)?)),
    ),
    row!(
        "fn load_cluster<M: SharedMemory, I: DeviceIndex>(src: &M, index: I, cta_rank: u32) -> M::Elem",
        params: [ArgTy::Shared, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Elem,
        target: Sm90,
        lower: |l, c| {
            let (m, at) = cluster_element(l, c, 2)?;
            l.load(&m, at, CacheHint::Default, c.span)
        },
    ),
    row!(
        "fn store_cluster<M: SharedMemory, I: DeviceIndex>(dst: &M, index: I, value: M::Elem, cta_rank: u32)",
        params: [ArgTy::Shared, ArgTy::Index, ArgTy::Elem, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            let (m, at) = cluster_element(l, c, 3)?;
            l.store(&m, at, arg(c, 2), CacheHint::Default, c.span)?;
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn mbarrier_init<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, count: u32)",
        params: [BARS, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            let count = l.operand(&arg(c, 2), Scalar::U32);
            l.emit("mbarrier.init.shared::cta.b64", vec![addr, count]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn fence_mbarrier_init()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "fence.mbarrier_init.release.cluster", 80),
    ),
    row!(
        "fn mbarrier_arrive<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I)",
        params: [BARS, ArgTy::Index],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            l.emit("mbarrier.arrive.shared::cta.b64", vec![Operand::Sink, addr]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn mbarrier_arrive_cluster<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, cta_rank: u32)",
        params: [BARS, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            l.require_ptx(80);
            let remote = cluster_address(l, c, 0, 1, 2)?;
            l.emit(
                "mbarrier.arrive.release.cluster.shared::cluster.b64",
                vec![Operand::Sink, Operand::Addr(Box::new(remote.into()), 0)],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn mbarrier_arrive_expect_tx<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, bytes: u32)",
        params: [BARS, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            l.require_ptx(80);
            let addr = shared_operand(l, c, 0, 1)?;
            let bytes = l.operand(&arg(c, 2), Scalar::U32);
            l.emit(
                "mbarrier.arrive.expect_tx.shared::cta.b64",
                vec![Operand::Sink, addr, bytes],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn mbarrier_try_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32) -> bool",
        params: [BARS, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        target: Sm90,
        lower: |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            let parity = l.operand(&arg(c, 2), Scalar::U32);
            let p = l.reg(RegClass::Pred);
            l.emit("mbarrier.try_wait.parity.shared::cta.b64", vec![p.into(), addr, parity]);
            Ok(Val::Reg(p))
        },
    ),
    row!(
        "fn mbarrier_wait_parity<M: SharedMemory<Elem = u64>, I: DeviceIndex>(bars: &M, index: I, parity: u32)",
        params: [BARS, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            let addr = shared_operand(l, c, 0, 1)?;
            let parity = l.operand(&arg(c, 2), Scalar::U32);
            let p = l.reg(RegClass::Pred);
            let id = l.label();
            let body = vec![
                ir::Node::Inst(ir::Inst {
                    guard: None,
                    op: "mbarrier.try_wait.parity.shared::cta.b64".into(),
                    args: vec![p.into(), addr, parity],
                }),
                ir::Node::If {
                    cond: p,
                    negate: false,
                    then: vec![ir::Node::Break(id)],
                    els: vec![],
                },
            ];
            l.push(ir::Node::Loop {
                id,
                body,
                continuing: vec![],
            });
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn fence_acq_rel_gpu()",
        params: [],
        ret: RetTy::Unit,
        target: Sm80,
        lower: |l, _| simple(l, "fence.acq_rel.gpu", 70),
    ),
    row!(
        "fn fence_proxy_async_shared()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "fence.proxy.async.shared::cta", 80),
    ),
    row!(
        "fn fence_proxy_async_global()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "fence.proxy.async.global", 80),
    ),
    row!(
        "fn cp_async_bulk_global_to_shared<D: SharedMemory, I: DeviceIndex, T: Element, J: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(dst: &D, dst_index: I, src: &[T], src_index: J, bytes: u32, bars: &B, bar_index: K)",
        params: [
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Global,
            ArgTy::Index,
            ArgTy::Is(U32),
            BARS,
            ArgTy::Index
        ],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            l.require_ptx(80);
            let dst = shared_operand(l, c, 0, 1)?;
            let g = mem(c, 2);
            let (base, offset) = l.element_addr(&g, arg(c, 3), &c.args[3].1, c.span)?;
            let bytes = bulk_bytes(l, c, 4)?;
            let bar = shared_operand(l, c, 5, 6)?;
            l.emit(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                vec![dst, Operand::Addr(Box::new(base), offset), bytes, bar],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn cp_async_bulk_shared_to_global<T: Element, I: DeviceIndex, S: SharedMemory, J: DeviceIndex>(dst: &mut [T], dst_index: I, src: &S, src_index: J, bytes: u32)",
        params: [ArgTy::MemMut, ArgTy::Index, ArgTy::Shared, ArgTy::Index, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            l.require_ptx(80);
            let g = mem(c, 0);
            if g.space != Space::Global {
                return err(
                    c.span,
                    "the destination of `cp_async_bulk_shared_to_global` is a `&mut [T]` slice parameter (global memory); between shared arrays, copy with loads and stores",
                );
            }
            let (base, offset) = l.element_addr(&g, arg(c, 1), &c.args[1].1, c.span)?;
            let src = shared_operand(l, c, 2, 3)?;
            let bytes = bulk_bytes(l, c, 4)?;
            l.emit(
                "cp.async.bulk.global.shared::cta.bulk_group",
                vec![Operand::Addr(Box::new(base), offset), src, bytes],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn cp_async_bulk_shared_to_cluster<D: SharedMemory, I: DeviceIndex, S: SharedMemory, J: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(dst: &D, dst_index: I, src: &S, src_index: J, bytes: u32, bars: &B, bar_index: K, cta_rank: u32)",
        params: [
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Is(U32),
            BARS,
            ArgTy::Index,
            ArgTy::Is(U32)
        ],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            l.require_ptx(80);
            // The destination and its mbarrier in block `cta_rank`.
            let dst = cluster_address(l, c, 0, 1, 7)?;
            let src = shared_operand(l, c, 2, 3)?;
            let bytes = bulk_bytes(l, c, 4)?;
            let bar = cluster_address(l, c, 5, 6, 7)?;
            l.emit(
                "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
                vec![
                    Operand::Addr(Box::new(dst.into()), 0),
                    src,
                    bytes,
                    Operand::Addr(Box::new(bar.into()), 0),
                ],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn store_async_cluster<M: SharedMemory, I: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(dst: &M, index: I, value: M::Elem, bars: &B, bar_index: K, cta_rank: u32)",
        params: [
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Elem,
            BARS,
            ArgTy::Index,
            ArgTy::Is(U32)
        ],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            let elem = mem(c, 0).elem;
            let layout = elem.mem_layout().expect("checked: a memory element type");
            let value = arg(c, 2);
            // 16 bytes a store: the granule the emulator tracks copies in.
            if layout.vec != 4 {
                return err(
                    c.span,
                    format!(
                        "`store_async_cluster` stores `u32x4` values (16 bytes), not `{elem}`; view the shared memory as `u32x4` words"
                    ),
                );
            }
            let parts = l.parts(&value, 4);
            let src = Operand::Vec(parts.iter().map(|p| l.operand(p, Scalar::U32)).collect());
            l.require_ptx(81);
            // The element and its mbarrier in block `cta_rank`.
            let dst = cluster_address(l, c, 0, 1, 5)?;
            let bar = cluster_address(l, c, 3, 4, 5)?;
            l.emit(
                "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32",
                vec![
                    Operand::Addr(Box::new(dst.into()), 0),
                    src,
                    Operand::Addr(Box::new(bar.into()), 0),
                ],
            );
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn cp_async_bulk_commit_group()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "cp.async.bulk.commit_group", 80),
    ),
    row!(
        "fn cp_async_bulk_wait_group(pending: u32)",
        params: [ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| bulk_wait_group(l, c, "cp.async.bulk.wait_group"),
    ),
    row!(
        "fn cp_async_bulk_wait_group_read(pending: u32)",
        params: [ArgTy::ConstU32],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| bulk_wait_group(l, c, "cp.async.bulk.wait_group.read"),
    ),
    row!(
        "fn cp_async_bulk_tensor_2d_global_to_shared<D: SharedMemory, I: DeviceIndex, B: SharedMemory<Elem = u64>, K: DeviceIndex>(dst: &D, dst_index: I, map: TensorMap, c0: i32, c1: i32, bars: &B, bar_index: K)",
        params: [
            ArgTy::Shared,
            ArgTy::Index,
            ArgTy::Is(Ty::TensorMap),
            ArgTy::Is(I32),
            ArgTy::Is(I32),
            BARS,
            ArgTy::Index
        ],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, c| {
            l.require_ptx(80);
            let dst = shared_operand(l, c, 0, 1)?;
            let Val::TensorMap(name) = arg(c, 2) else {
                unreachable!("checked: a tensor map parameter")
            };
            let raw = l.reg(RegClass::B64);
            l.emit("mov.b64", vec![raw.into(), Operand::Sym(name)]);
            let map = l.reg(RegClass::B64);
            l.emit("cvta.param.u64", vec![map.into(), raw.into()]);
            let c0 = l.operand(&arg(c, 3), Scalar::I32);
            let c1 = l.operand(&arg(c, 4), Scalar::I32);
            let bar = shared_operand(l, c, 5, 6)?;
            l.emit(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                vec![dst, Operand::TensorCoords(Box::new(map.into()), vec![c0, c1]), bar],
            );
            Ok(Val::Unit)
        },
    ),
];

/// Element `index` (argument 1) of the shared memory (argument 0) of the
/// cluster's block whose rank is argument `rank`: its `mapa` address, as
/// the memory reference and address a load or store takes.
fn cluster_element(l: &mut Lower<'_>, c: &Call, rank: usize) -> Result<(MemRef, (Operand, i64))> {
    let remote = cluster_address(l, c, 0, 1, rank)?;
    let m = MemRef {
        space: Space::SharedCluster,
        base: Operand::Reg(remote),
        offset: 0,
        len: None,
        ..mem(c, 0)
    };
    Ok((m, (Operand::Reg(remote), 0)))
}

/// The byte count of a bulk copy (argument `i`): a constant one must be a
/// positive multiple of 16, as the copy moves 16-byte units (a count known
/// only at run time is the emulator's to check).
fn bulk_bytes(l: &mut Lower<'_>, c: &Call, i: usize) -> Result<Operand> {
    let bytes = arg(c, i);
    if let Val::Const(Const::Int(n)) = bytes
        && (n <= 0 || n % 16 != 0)
    {
        return err(
            c.span,
            format!("a bulk copy moves a positive multiple of 16 bytes, not {n} (pad the copy to 16-byte units)"),
        );
    }
    Ok(l.operand(&bytes, Scalar::U32))
}

/// The shared::cluster address of element `index_arg` of the shared memory
/// `mem_arg` in the cluster's block whose rank is argument `rank_arg`
/// (`mapa`).
fn cluster_address(l: &mut Lower<'_>, c: &Call, mem_arg: usize, index_arg: usize, rank_arg: usize) -> Result<ir::Reg> {
    let local = shared_address_reg(l, c, mem_arg, index_arg)?;
    let rank = l.operand(&arg(c, rank_arg), Scalar::U32);
    let remote = l.reg(RegClass::B32);
    l.emit("mapa.shared::cluster.u32", vec![remote.into(), local.into(), rank]);
    Ok(remote)
}

fn lower_load(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let m = mem(c, 0);
    let addr = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    l.load(&m, addr, hint(c, 2), c.span)
}

fn lower_store(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let m = mem(c, 0);
    let addr = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    l.store(&m, addr, arg(c, 2), hint(c, 3), c.span)?;
    Ok(Val::Unit)
}

/// The memory view re-typed as 16-byte vectors at the element's address.
fn as_v4(l: &mut Lower<'_>, c: &Call) -> Result<(MemRef, (Operand, i64))> {
    let m = mem(c, 0);
    let addr = l.element_addr(&m, arg(c, 1), &c.args[1].1, c.span)?;
    Ok((MemRef { elem: Ty::U32x4, ..m }, addr))
}

fn lower_load_v4(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let (m, addr) = as_v4(l, c)?;
    l.load(&m, addr, hint(c, 2), c.span)
}

fn lower_store_v4(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let (m, addr) = as_v4(l, c)?;
    l.store(&m, addr, arg(c, 2), hint(c, 3), c.span)?;
    Ok(Val::Unit)
}

/// `cp.async.bulk.wait_group{.read} N` for a constant N (the PTX takes an
/// immediate).
fn bulk_wait_group(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let n = const_u32(c, 0, "the number of pending bulk groups")?;
    if n > 63 {
        return err(c.span, format!("at most 63 bulk groups can be left pending, not {n}"));
    }
    l.require_ptx(80);
    l.emit(op, vec![Operand::imm(n)]);
    Ok(Val::Unit)
}
