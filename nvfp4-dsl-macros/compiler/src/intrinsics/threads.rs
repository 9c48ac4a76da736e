//! Thread and block indices, targets, synchronisation and warp-level
//! operations (shuffles, votes, elections, reductions).

use super::*;

pub(super) static TABLE: &[Intrinsic] = &[
    sreg!("thread_idx_x", "%tid.x"),
    sreg!("thread_idx_y", "%tid.y"),
    sreg!("thread_idx_z", "%tid.z"),
    sreg!("block_idx_x", "%ctaid.x"),
    sreg!("block_idx_y", "%ctaid.y"),
    sreg!("block_idx_z", "%ctaid.z"),
    sreg!("block_dim_x", "%ntid.x"),
    sreg!("block_dim_y", "%ntid.y"),
    sreg!("block_dim_z", "%ntid.z"),
    sreg!("grid_dim_x", "%nctaid.x"),
    sreg!("grid_dim_y", "%nctaid.y"),
    sreg!("grid_dim_z", "%nctaid.z"),
    sreg!("lane_id", "%laneid"),
    Intrinsic {
        name: "target_at_least",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::TargetConst],
        t_set: &[],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        min_target: Target::Sm80,
        sig: "fn target_at_least(target: Target) -> bool",
        lower: |l, c| match arg(c, 0) {
            Val::Target(t) => Ok(Val::Const(Const::Bool(l.target.has(t)))),
            other => unreachable!("checked: a target, not {other:?}"),
        },
    },
    Intrinsic {
        name: "launch_dependents",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm90,
        sig: "fn launch_dependents()",
        lower: |l, _| {
            l.emit("griddepcontrol.launch_dependents", vec![]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "grid_dependency_wait",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm90,
        sig: "fn grid_dependency_wait()",
        lower: |l, _| {
            l.func.programmatic = true;
            l.emit("griddepcontrol.wait", vec![]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "sync_threads",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm80,
        sig: "fn sync_threads()",
        lower: |l, _| {
            l.emit("bar.sync", vec![Operand::imm(0)]);
            Ok(Val::Unit)
        },
    },
    Intrinsic {
        name: "sync_warp",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Unit,
        min_target: Target::Sm80,
        sig: "fn sync_warp()",
        lower: |l, _| {
            l.emit("bar.warp.sync", vec![Operand::Imm("-1".into())]);
            Ok(Val::Unit)
        },
    },
    intrinsic!(
        "named_barrier_sync",
        Form::Free,
        [ArgTy::ConstU32, ArgTy::Is(U32)],
        RetTy::Unit,
        Sm80,
        "fn named_barrier_sync(id: u32, threads: u32)",
        |l, c| named_barrier(l, c, "bar.sync")
    ),
    intrinsic!(
        "named_barrier_arrive",
        Form::Free,
        [ArgTy::ConstU32, ArgTy::Is(U32)],
        RetTy::Unit,
        Sm80,
        "fn named_barrier_arrive(id: u32, threads: u32)",
        |l, c| named_barrier(l, c, "bar.arrive")
    ),
    intrinsic!(
        "cluster_cta_rank",
        Form::Free,
        [],
        RetTy::Is(U32),
        Sm90,
        "fn cluster_cta_rank() -> u32",
        |l, _| Ok(Val::Reg(special(l, "%cluster_ctarank")))
    ),
    intrinsic!(
        "cluster_size",
        Form::Free,
        [],
        RetTy::Is(U32),
        Sm90,
        "fn cluster_size() -> u32",
        |l, _| Ok(Val::Reg(special(l, "%cluster_nctarank")))
    ),
    intrinsic!(
        "global_timer",
        Form::Free,
        [],
        RetTy::Is(U64),
        Sm80,
        "fn global_timer() -> u64",
        |l, _| {
            let r = l.reg(RegClass::B64);
            l.emit("mov.u64", vec![r.into(), Operand::Sym("%globaltimer".into())]);
            Ok(Val::Reg(r))
        }
    ),
    intrinsic!(
        "cluster_arrive",
        Form::Free,
        [],
        RetTy::Unit,
        Sm90,
        "fn cluster_arrive()",
        |l, _| simple(l, "barrier.cluster.arrive.release.aligned", 80)
    ),
    intrinsic!(
        "cluster_arrive_relaxed",
        Form::Free,
        [],
        RetTy::Unit,
        Sm90,
        "fn cluster_arrive_relaxed()",
        |l, _| simple(l, "barrier.cluster.arrive.relaxed.aligned", 80)
    ),
    intrinsic!(
        "cluster_wait",
        Form::Free,
        [],
        RetTy::Unit,
        Sm90,
        "fn cluster_wait()",
        |l, _| simple(l, "barrier.cluster.wait.acquire.aligned", 80)
    ),
    intrinsic!(
        "cluster_sync",
        Form::Free,
        [],
        RetTy::Unit,
        Sm90,
        "fn cluster_sync()",
        |l, _| {
            simple(l, "barrier.cluster.arrive.release.aligned", 80)?;
            simple(l, "barrier.cluster.wait.acquire.aligned", 80)
        }
    ),
    Intrinsic {
        name: "elect_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[],
        t_set: &[],
        ret: RetTy::Is(Ty::Scalar(Scalar::Bool)),
        min_target: Target::Sm90,
        sig: "fn elect_sync() -> bool",
        lower: |l, _| {
            l.require_ptx(80);
            let p = l.reg(RegClass::Pred);
            let dest = Operand::Pair(Box::new(Operand::Sink), Box::new(Operand::Reg(p)));
            l.emit("elect.sync", vec![dest, Operand::Imm("-1".into())]);
            Ok(Val::Reg(p))
        },
    },
    Intrinsic {
        name: "shfl_down",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_down<T: Shuffle>(value: T, delta: u32) -> T",
        lower: |l, c| shfl(l, c, "down", false),
    },
    Intrinsic {
        name: "shfl_xor",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_xor<T: Shuffle>(value: T, lane_mask: u32) -> T",
        lower: |l, c| shfl(l, c, "bfly", false),
    },
    Intrinsic {
        name: "shfl_idx",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_idx<T: Shuffle>(value: T, src_lane: u32) -> T",
        lower: |l, c| shfl(l, c, "idx", false),
    },
    Intrinsic {
        name: "shfl_down_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_down_sync<T: Shuffle>(mask: u32, value: T, delta: u32) -> T",
        lower: |l, c| shfl(l, c, "down", true),
    },
    Intrinsic {
        name: "shfl_xor_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_xor_sync<T: Shuffle>(mask: u32, value: T, lane_mask: u32) -> T",
        lower: |l, c| shfl(l, c, "bfly", true),
    },
    Intrinsic {
        name: "shfl_idx_sync",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::Is(U32), ArgTy::T, ArgTy::Is(U32)],
        t_set: SHFL_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn shfl_idx_sync<T: Shuffle>(mask: u32, value: T, src_lane: u32) -> T",
        lower: |l, c| shfl(l, c, "idx", true),
    },
    Intrinsic {
        name: "warp_reduce_sum",
        form: Form::Free,
        generics: Generics::None,
        params: &[ArgTy::T],
        t_set: SUM_TYPES,
        ret: RetTy::T,
        min_target: Target::Sm80,
        sig: "fn warp_reduce_sum<T: WarpSum>(value: T) -> T",
        lower: lower_warp_reduce_sum,
    },
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
    let v = b32(l, c, base);
    let lane = b32(l, c, base + 1);
    // `c` = 0x1f: clamp at lane 31 (down, bfly, idx); `up` would use 0.
    let d = l.reg(class_of(&c.args[base].1));
    l.emit(
        format!("shfl.sync.{mode}.b32"),
        vec![d.into(), v, lane, Operand::imm("0x1f"), mask],
    );
    Ok(Val::Reg(d))
}

fn lower_warp_reduce_sum(l: &mut Lower<'_>, c: &Call) -> Result<Val> {
    let s = scalar(c, 0);
    let mut v = Val::Reg(l.in_reg(&arg(c, 0), s));
    for off in [16, 8, 4, 2, 1] {
        let t = l.reg(s.reg_class());
        let src = l.operand(&v, s);
        l.emit(
            "shfl.sync.bfly.b32",
            vec![
                t.into(),
                src,
                Operand::imm(off),
                Operand::imm("0x1f"),
                Operand::Imm("-1".into()),
            ],
        );
        v = l.binary(ast::BinOp::Add, v, Val::Reg(t), s, None, None, c.span)?;
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
