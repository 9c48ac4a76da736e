//! Thread and block indices, targets, synchronisation and warp-level
//! operations (shuffles, votes, elections, reductions).

use super::*;

pub(super) static TABLE: &[Intrinsic] = &[
    row!(
        "fn thread_idx_x() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%tid.x"))),
    ),
    row!(
        "fn thread_idx_y() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%tid.y"))),
    ),
    row!(
        "fn thread_idx_z() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%tid.z"))),
    ),
    row!(
        "fn block_idx_x() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%ctaid.x"))),
    ),
    row!(
        "fn block_idx_y() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%ctaid.y"))),
    ),
    row!(
        "fn block_idx_z() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%ctaid.z"))),
    ),
    row!(
        "fn block_dim_x() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%ntid.x"))),
    ),
    row!(
        "fn block_dim_y() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%ntid.y"))),
    ),
    row!(
        "fn block_dim_z() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%ntid.z"))),
    ),
    row!(
        "fn grid_dim_x() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%nctaid.x"))),
    ),
    row!(
        "fn grid_dim_y() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%nctaid.y"))),
    ),
    row!(
        "fn grid_dim_z() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%nctaid.z"))),
    ),
    row!(
        "fn lane_id() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm80,
        lower: |l, _| Ok(Val::Reg(special(l, "%laneid"))),
    ),
    row!(
        "fn target_at_least(target: Target) -> bool",
        params: [ArgTy::TargetConst],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        target: Sm80,
        lower: |l, c| match arg(c, 0) {
            Val::Target(t) => Ok(Val::Const(Const::Bool(l.target.has(t)))),
            other => unreachable!("checked: a target, not {other:?}"),
        },
    ),
    row!(
        "fn launch_dependents()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| {
            l.emit("griddepcontrol.launch_dependents", vec![]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn grid_dependency_wait()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| {
            l.func.programmatic = true;
            l.emit("griddepcontrol.wait", vec![]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn sync_threads()",
        params: [],
        ret: RetTy::Unit,
        target: Sm80,
        lower: |l, _| {
            l.emit("bar.sync", vec![Operand::imm(0)]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn sync_warp()",
        params: [],
        ret: RetTy::Unit,
        target: Sm80,
        lower: |l, _| {
            l.emit("bar.warp.sync", vec![Operand::Imm("-1".into())]);
            Ok(Val::Unit)
        },
    ),
    row!(
        "fn named_barrier_sync(id: u32, threads: u32)",
        params: [ArgTy::ConstU32, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm80,
        lower: |l, c| named_barrier(l, c, "bar.sync"),
    ),
    row!(
        "fn named_barrier_arrive(id: u32, threads: u32)",
        params: [ArgTy::ConstU32, ArgTy::Is(U32)],
        ret: RetTy::Unit,
        target: Sm80,
        lower: |l, c| named_barrier(l, c, "bar.arrive"),
    ),
    row!(
        "fn cluster_cta_rank() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm90,
        lower: |l, _| Ok(Val::Reg(special(l, "%cluster_ctarank"))),
    ),
    row!(
        "fn cluster_size() -> u32",
        params: [],
        ret: RetTy::Is(U32),
        target: Sm90,
        lower: |l, _| Ok(Val::Reg(special(l, "%cluster_nctarank"))),
    ),
    row!(
        "fn global_timer() -> u64",
        params: [],
        ret: RetTy::Is(U64),
        target: Sm80,
        lower: |l, _| {
            let r = l.reg(RegClass::B64);
            l.emit("mov.u64", vec![r.into(), Operand::Sym("%globaltimer".into())]);
            Ok(Val::Reg(r))
        },
    ),
    row!(
        "fn cluster_arrive()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "barrier.cluster.arrive.release.aligned", 80),
    ),
    row!(
        "fn cluster_arrive_relaxed()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "barrier.cluster.arrive.relaxed.aligned", 80),
    ),
    row!(
        "fn cluster_wait()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| simple(l, "barrier.cluster.wait.acquire.aligned", 80),
    ),
    row!(
        "fn cluster_sync()",
        params: [],
        ret: RetTy::Unit,
        target: Sm90,
        lower: |l, _| {
            simple(l, "barrier.cluster.arrive.release.aligned", 80)?;
            simple(l, "barrier.cluster.wait.acquire.aligned", 80)
        },
    ),
    row!(
        "fn elect_sync() -> bool",
        params: [],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        target: Sm90,
        lower: |l, _| {
            l.require_ptx(80);
            let p = l.reg(RegClass::Pred);
            let dest = Operand::Pair(Box::new(Operand::Sink), Box::new(Operand::Reg(p)));
            l.emit("elect.sync", vec![dest, Operand::Imm("-1".into())]);
            Ok(Val::Reg(p))
        },
    ),
    row!(
        "fn shfl_down<T: Shuffle>(value: T, delta: u32) -> T",
        params: [ArgTy::T, ArgTy::Is(U32)],
        types: SHFL_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| shfl(l, c, "down", false),
    ),
    row!(
        "fn shfl_xor<T: Shuffle>(value: T, lane_mask: u32) -> T",
        params: [ArgTy::T, ArgTy::Is(U32)],
        types: SHFL_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| shfl(l, c, "bfly", false),
    ),
    row!(
        "fn shfl_idx<T: Shuffle>(value: T, src_lane: u32) -> T",
        params: [ArgTy::T, ArgTy::Is(U32)],
        types: SHFL_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| shfl(l, c, "idx", false),
    ),
    row!(
        "fn shfl_down_sync<T: Shuffle>(mask: u32, value: T, delta: u32) -> T",
        params: [ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        types: SHFL_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| shfl(l, c, "down", true),
    ),
    row!(
        "fn shfl_xor_sync<T: Shuffle>(mask: u32, value: T, lane_mask: u32) -> T",
        params: [ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        types: SHFL_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| shfl(l, c, "bfly", true),
    ),
    row!(
        "fn shfl_idx_sync<T: Shuffle>(mask: u32, value: T, src_lane: u32) -> T",
        params: [ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        types: SHFL_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| shfl(l, c, "idx", true),
    ),
    row!(
        "fn warp_reduce_sum<T: WarpReduce>(value: T) -> T",
        params: [ArgTy::T],
        types: WARP_REDUCE_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| warp_reduce(l, c, Reduce::Add),
    ),
    row!(
        "fn warp_reduce_max<T: WarpReduce>(value: T) -> T",
        params: [ArgTy::T],
        types: WARP_REDUCE_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| warp_reduce(l, c, Reduce::MinMax("max")),
    ),
    row!(
        "fn warp_reduce_min<T: WarpReduce>(value: T) -> T",
        params: [ArgTy::T],
        types: WARP_REDUCE_TYPES,
        ret: RetTy::T,
        target: Sm80,
        lower: |l, c| warp_reduce(l, c, Reduce::MinMax("min")),
    ),
];

fn special(l: &mut Lower<'_>, reg: &str) -> ir::Reg {
    let r = l.reg(RegClass::B32);
    l.emit("mov.u32", vec![r.into(), Operand::Sym(reg.to_string())]);
    r
}

fn shfl(l: &mut Lower<'_>, c: &Call, mode: &str, with_mask: bool) -> Result<Val> {
    let base = usize::from(with_mask);
    let mask = if with_mask {
        b32(l, c, 0)
    } else {
        Operand::Imm("-1".into())
    };
    let class = class_of(&c.args[base].1);
    let v = if matches!(class, RegClass::B64 | RegClass::F64) {
        Operand::Reg(l.in_reg(&arg(c, base), scalar(c, base)))
    } else {
        b32(l, c, base)
    };
    let lane = b32(l, c, base + 1);
    Ok(Val::Reg(shuffle(l, class, v, mode, lane, mask)))
}

/// `shfl.sync.<mode>.b32` of `v` (a register of `class`, or a 32-bit
/// operand) into a fresh register; a 64-bit value moves as its two 32-bit
/// halves, as CUDA's `__shfl_sync` moves a `long long` or a `double`.
fn shuffle(l: &mut Lower<'_>, class: RegClass, v: Operand, mode: &str, lane: Operand, mask: Operand) -> ir::Reg {
    let op = format!("shfl.sync.{mode}.b32");
    // `c` = 0x1f: clamp at lane 31 (down, bfly, idx); `up` would use 0.
    let clamp = Operand::imm("0x1f");
    if !matches!(class, RegClass::B64 | RegClass::F64) {
        let d = l.reg(class);
        l.emit(op, vec![d.into(), v, lane, clamp, mask]);
        return d;
    }
    let halves = [l.reg(RegClass::B32), l.reg(RegClass::B32)];
    l.emit("mov.b64", vec![Operand::Vec(halves.map(Operand::from).to_vec()), v]);
    let moved = halves.map(|h| {
        let d = l.reg(RegClass::B32);
        l.emit(
            op.clone(),
            vec![d.into(), h.into(), lane.clone(), clamp.clone(), mask.clone()],
        );
        Operand::from(d)
    });
    let d = l.reg(class);
    l.emit("mov.b64", vec![d.into(), Operand::Vec(moved.to_vec())]);
    d
}

/// How a warp reduction combines two values.
#[derive(Clone, Copy)]
enum Reduce {
    /// `+`, as the operator (wrapping; `add.rn` for floats).
    Add,
    /// PTX `min`/`max` (on floats NaN-ignoring, as Rust's, `-0.0` below
    /// `+0.0`).
    MinMax(&'static str),
}

/// A butterfly over the warp: lanes 16 apart combined, then 8, 4, 2, 1, so
/// every lane ends with the same value.
fn warp_reduce(l: &mut Lower<'_>, c: &Call, op: Reduce) -> Result<Val> {
    let s = scalar(c, 0);
    let mut v = Val::Reg(l.in_reg(&arg(c, 0), s));
    for off in [16, 8, 4, 2, 1] {
        let src = l.operand(&v, s);
        let t = shuffle(
            l,
            s.reg_class(),
            src,
            "bfly",
            Operand::imm(off),
            Operand::Imm("-1".into()),
        );
        v = match op {
            Reduce::Add => l.binary(ast::BinOp::Add, v, Val::Reg(t), s, None, None, c.span)?,
            Reduce::MinMax(name) => {
                let (a, d) = (l.operand(&v, s), l.reg(s.reg_class()));
                l.emit(format!("{name}.{}", s.ptx_arith()), vec![d.into(), a, t.into()]);
                Val::Reg(d)
            }
        };
    }
    Ok(v)
}

/// `bar.sync id, threads` / `bar.arrive id, threads`: barrier `id` (0..16)
/// among `threads` threads (whole warps).
fn named_barrier(l: &mut Lower<'_>, c: &Call, op: &str) -> Result<Val> {
    let id = const_u32(c, 0, "the barrier id")?;
    if id > 15 {
        return err(c.span, format!("a block has barriers 0 to 15, not {id}"));
    }
    if let Val::Const(Const::Int(n)) = arg(c, 1)
        && (n <= 0 || n % 32 != 0)
    {
        return err(
            c.span,
            format!("a named barrier counts whole warps: the thread count must be a positive multiple of 32, not {n}"),
        );
    }
    let threads = l.operand(&arg(c, 1), Scalar::U32);
    l.emit(op, vec![Operand::imm(id), threads]);
    Ok(Val::Unit)
}
