//! Hopper warpgroup MMA (`wgmma.*`, sm_90a): `fence`, `commit_group`,
//! `wait_group` and `mma_async` with shapes `m64nNk16` (N a multiple of 8
//! in 8..=256), `.f32` accumulators and `.f16.f16` or `.bf16.bf16`
//! operands, A from registers or shared memory and B from shared memory
//! through sm_90 descriptors, K-major only (`setmaxnreg` is in
//! `registers`).
//!
//! # The asynchronous model
//!
//! A warpgroup is four consecutive warps, the first a multiple of 4; warp
//! `w % 4` of it owns rows `16 (w % 4) ..+ 16` of A and D, and its part of
//! D depends only on its rows of A, so each warp's part is computed on its
//! own (the four warps need not be co-scheduled; each uses its own
//! descriptors). `wgmma.mma_async` checks its operands and records the
//! operation (`pending::Mma`) without touching D; `wgmma.commit_group`
//! puts the warp's uncommitted operations into a group; `wgmma.wait_group
//! N` completes the oldest groups until at most N are pending, in issue
//! order: each reads its shared operands then, computes and writes D.
//! Until then its D and A registers are held (a read or write by another
//! instruction is an error; a later `wgmma.mma_async` may accumulate into
//! the same D or read the same A) and the shared bytes it reads may not be
//! stored to (by any store, atomic or copy, from any block of the
//! cluster). Every `wgmma.mma_async` must follow a `wgmma.fence` of its
//! warp with no write of its D or A registers by another instruction in
//! between (reads in between are not checked); a warp may not exit with
//! operations pending.
//!
//! # Numerics
//!
//! The H100's tensor cores do not sum exactly; this module models them bit
//! for bit (the model of Microsoft's MMA-Sim for Hopper, re-derived and
//! checked against an H100: `h100_vectors` below). For each element of D,
//! every nonzero term — the 16 products and D itself when scale-d is true
//! — has a leading exponent: the sum of its factors' exponents for a
//! product (each factor's `floor(log2)`, subnormals at the format's least
//! normal exponent, so a product's significand is in [1, 4)), D's own for
//! D. With `emax` the largest, each term is truncated toward zero to a
//! multiple of `2^(emax - 25)`, the truncated terms are added exactly, and
//! the sum is rounded toward zero to f32 (an overflow is an infinity). A
//! zero sum is +0. NaN operands give the canonical NaN `0x7FFFFFFF`, as do
//! `0 * inf` and `inf - inf`; infinities otherwise follow IEEE.

use super::control::uniform;
use super::desc::SmemDesc;
use super::tcgen05::whole_warp;
use super::tensor_sum::{Chain, Frag, half_rows_frag};
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::diag::statement_of;
use crate::emu::fp::{BF16, F16};
use crate::emu::inst::{Fault, Flow, Inst, Mods, Operand, Ty};
use crate::emu::parse::{Arg, Lit};
use crate::emu::pending::{AsyncRegs, Mma};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

const FENCE: u8 = 0;
const COMMIT: u8 = 1;
const WAIT: u8 = 2;
const MMA: u8 = 3;

/// `flags` bits of `mma_async`.
const F_SS: u32 = 1;
const F_NEG_A: u32 = 2;
const F_NEG_B: u32 = 4;
const F_BF16: u32 = 8;

pub(super) fn wgmma(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ops = ["fence", "commit_group", "wait_group", "mma_async"];
    let k = m
        .take_any(&ops)
        .ok_or("unsupported wgmma operation (supported: fence, commit_group, wait_group, mma_async)")?;
    let (sync, aligned) = (m.take("sync"), m.take("aligned"));
    if !(sync && aligned) {
        return Err(format!("`wgmma.{}` needs `.sync.aligned`", ops[k]));
    }
    let mut i = Inst::new(exec_wgmma);
    i.sub = [FENCE, COMMIT, WAIT, MMA][k];
    match i.sub {
        FENCE | COMMIT => d.count(0)?,
        WAIT => {
            d.count(1)?;
            i.imm = imm(
                d,
                0,
                |v| (0..=7).contains(&v),
                "the group count of wgmma.wait_group must be an immediate in 0..=7",
            )? as u64;
        }
        _ => decode_mma(d, m, &mut i)?,
    }
    Ok(i)
}

/// Integer immediate operand `k`, which `ok` must accept (`rule` says
/// what it must be).
pub(super) fn imm(d: &Dec<'_>, k: usize, ok: fn(i128) -> bool, rule: &str) -> Result<i128, String> {
    match d.arg(k)? {
        Arg::Lit(Lit::Int(v)) if ok(*v) => Ok(*v),
        Arg::Lit(Lit::Int(v)) => Err(format!("{rule}, found {v}")),
        _ => Err(format!("{rule}, found a non-constant operand")),
    }
}

/// A register operand's index (the decoder admits registers only).
fn reg(op: &Operand) -> u32 {
    match *op {
        Operand::Reg { idx, .. } => idx,
        _ => unreachable!("wgmma register operands are 32-bit registers"),
    }
}

/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16.f16,bf16.bf16} d, a, b-desc,
/// scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b`: `v` holds
/// the D registers, then the A registers (A from registers); `s[0]` the A
/// descriptor (A from shared memory), `s[1]` the B descriptor, `s[2]`
/// scale-d; `imm` is N.
fn decode_mma(d: &Dec<'_>, m: &mut Mods<'_>, i: &mut Inst) -> Result<(), String> {
    if m.take("sp") {
        return Err("sparse wgmma (`.sp`) is not supported by the emulator".into());
    }
    let shape = m
        .rest()
        .iter()
        .copied()
        .find(|p| p.starts_with('m') && p.contains('n') && p.contains('k'))
        .ok_or("missing the shape `.m64nNk16`")?;
    m.take(shape);
    let n = shape
        .strip_prefix("m64n")
        .and_then(|r| r.strip_suffix("k16"))
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| n % 8 == 0 && (8..=256).contains(n))
        .ok_or_else(|| {
            format!(
                "shape `.{shape}` is not supported: the emulator supports m64nNk16 with N a multiple of 8 in 8..=256"
            )
        })?;
    let rest = m.rest();
    if rest.len() < 3 {
        return Err("missing the types `.f32.f16.f16` or `.f32.bf16.bf16`".into());
    }
    let [dt, at, bt] = [rest[rest.len() - 3], rest[rest.len() - 2], rest[rest.len() - 1]];
    for t in [dt, at, bt] {
        m.take(t);
    }
    if dt == "f16" {
        return Err("`.f16` accumulators are not supported by the emulator (only .f32)".into());
    }
    if dt != "f32" {
        return Err(format!("accumulator type `.{dt}` is not supported (only .f32)"));
    }
    i.flags = match (at, bt) {
        ("f16", "f16") => 0,
        ("bf16", "bf16") => F_BF16,
        _ => {
            return Err(format!(
                "A and B types `.{at}.{bt}` are not supported by the emulator (supported: .f16.f16 and .bf16.bf16)"
            ));
        }
    };
    let ss = !matches!(d.arg(1)?, Arg::Vec(_));
    d.count(if ss { 8 } else { 7 })?;
    let dregs = d.vec(0)?;
    if dregs.len() != n as usize / 2 {
        return Err(format!(
            "N = {n} needs {} accumulator registers, found {}",
            n / 2,
            dregs.len()
        ));
    }
    let mut v = dregs.iter().map(|r| d.dst_arg(r)).collect::<Result<Vec<_>, _>>()?;
    if ss {
        i.flags |= F_SS;
        i.s[0] = d.src(1, Ty::B64)?;
    } else {
        let aregs = d.vec(1)?;
        if aregs.len() != 4 {
            return Err(format!("A from registers takes 4 registers, found {}", aregs.len()));
        }
        for r in aregs {
            v.push(d.src_arg(r, Ty::B32)?);
        }
    }
    if v.iter().any(|o| !matches!(o, Operand::Reg { bits: 32, .. })) {
        return Err("the D and A operands of wgmma.mma_async must be 32-bit registers".into());
    }
    i.v = v.into_boxed_slice();
    i.s[1] = d.src(2, Ty::B64)?;
    if let Arg::Lit(_) = d.arg(3)? {
        imm(d, 3, |v| v == 0 || v == 1, "scale-d must be a predicate or 0 or 1")?;
    }
    i.s[2] = d.src(3, Ty::Pred)?;
    let unit = |v: i128| v == 1 || v == -1;
    if imm(d, 4, unit, "imm-scale-a must be 1 or -1")? == -1 {
        i.flags |= F_NEG_A;
    }
    if imm(d, 5, unit, "imm-scale-b must be 1 or -1")? == -1 {
        i.flags |= F_NEG_B;
    }
    let trans: &[(usize, &str)] = if ss {
        &[(6, "imm-trans-a"), (7, "imm-trans-b")]
    } else {
        &[(6, "imm-trans-b")]
    };
    for &(k, what) in trans {
        if imm(d, k, |v| v == 0 || v == 1, &format!("{what} must be 0 or 1"))? == 1 {
            return Err(format!(
                "{what} = 1 (a transposed, MN-major operand) is not supported by the emulator; only K-major operands (0)"
            ));
        }
    }
    i.imm = u64::from(n);
    Ok(())
}

const NAMES: [&str; 4] = [
    "wgmma.fence",
    "wgmma.commit_group",
    "wgmma.wait_group",
    "wgmma.mma_async",
];

fn exec_wgmma(c: &mut Ctx<'_>, i: &Inst) -> X {
    whole_warp(c, NAMES[i.sub as usize])?;
    let nregs = c.env.entry.nregs as usize;
    let pc = c.w.group_pc;
    let wg = c.w.held.get_or_insert_with(|| Box::new(AsyncRegs::new(nregs)));
    match i.sub {
        FENCE => wg.fence(pc),
        COMMIT => {
            let group = std::mem::take(&mut wg.open);
            wg.groups.push_back(group);
        }
        WAIT => wait(c, i.imm as usize),
        _ => issue(c, i)?,
    }
    Ok(Flow::Next)
}

/// `wgmma.wait_group keep`: completes the oldest groups, in issue order,
/// until at most `keep` are pending.
fn wait(c: &mut Ctx<'_>, keep: usize) {
    loop {
        let wg = c.w.held.as_deref_mut().expect("held registers");
        if wg.groups.len() <= keep {
            return;
        }
        let group = wg.groups.pop_front().expect("a group");
        for (k, m) in group.iter().enumerate() {
            let wg = c.w.held.as_deref().expect("held registers");
            let held_later = group[k + 1..]
                .iter()
                .chain(wg.pending().map(|(p, _)| p))
                .any(|p| p.d == m.d);
            complete(c, m, held_later);
        }
    }
}

/// `wgmma.mma_async`: checks and records the operation.
fn issue(c: &mut Ctx<'_>, i: &Inst) -> Result<(), Fault> {
    let threads = c.b.threads;
    let w = c.w.index;
    let base = w & !3;
    if (base + 4) * 32 > threads {
        return Err(Fault::new(format!(
            "wgmma.mma_async needs a whole warpgroup: warp {w} belongs to warps {base}..{}, but the block has {threads} threads",
            base + 4
        )));
    }
    let n = i.imm as u32;
    let (d, a) = i.v.split_at(n as usize / 2);
    let (d, a): (Box<[u32]>, Box<[u32]>) = (d.iter().map(reg).collect(), a.iter().map(reg).collect());
    let env = c.env;
    let names = &env.entry.reg_names;
    let pc = c.w.group_pc;
    let wg = c.w.held.as_deref().expect("held registers");
    let Some(fence) = wg.fence else {
        return Err(Fault::new(
            "missing wgmma.fence: this warp executes no wgmma.fence before its first wgmma.mma_async",
        ));
    };
    for &r in d.iter().chain(a.iter()) {
        if let Some(at) = wg.written_since_fence(r) {
            return Err(Fault::new(format!(
                "missing wgmma.fence: {} was written at {} after the last wgmma.fence at {}, before this wgmma.mma_async: call wgmma_fence() after writing an MMA's fragment or accumulator and before the MMA",
                names[r as usize],
                statement_of(env, at),
                statement_of(env, fence)
            ))
            .citing(at)
            .citing(fence));
        }
    }
    // A register of a pending operation may be shared only as the same
    // role: an A operand may not be a pending accumulator, an accumulator
    // not a pending A operand (either would access it before that
    // operation's wait).
    for &r in a.iter() {
        if wg.pending_acc(r)
            && let Some((m, _)) = wg.holder(r).filter(|(m, _)| m.writes(r))
        {
            return Err(Fault::new(format!(
                "A operand {} is the accumulator of the pending wgmma.mma_async at {}: read before the wgmma.wait_group that completes it",
                names[r as usize],
                statement_of(env, m.pc)
            ))
            .citing(m.pc));
        }
        if wg.init_of(&c.w.init, r) != u32::MAX {
            return Err(Fault::new(format!(
                "read of uninitialised register {} (an A operand)",
                names[r as usize]
            )));
        }
    }
    for &r in d.iter() {
        if wg.pending_read(r)
            && let Some((m, _)) = wg.holder(r).filter(|(m, _)| !m.writes(r))
        {
            return Err(Fault::new(format!(
                "register {}, an A operand of the pending wgmma.mma_async at {}, is this wgmma.mma_async's accumulator: overwritten before the wgmma.wait_group that completes it",
                names[r as usize],
                statement_of(env, m.pc)
            ))
            .citing(m.pc));
        }
    }
    let p = c.pred(&i.s[2])?;
    if p != 0 && p != u32::MAX {
        return Err(Fault::new(format!(
            "scale-d differs between the lanes of the warp ({p:#010x}); it must be the same for the whole warpgroup"
        )));
    }
    let scale_d = p != 0;
    if scale_d {
        let wg = c.w.held.as_deref().expect("held registers");
        if let Some(&r) = d
            .iter()
            .find(|&&r| wg.init_of(&c.w.init, r) != u32::MAX && !wg.pending_acc(r))
        {
            return Err(Fault::new(format!(
                "read of uninitialised register {}: wgmma.mma_async accumulates into it (scale-d is true)",
                names[r as usize]
            )));
        }
    }
    // The shared operands: this warp's 16 rows of A, N rows of B.
    let mut chunks = Vec::with_capacity(2 * (16 + n as usize));
    // The names of each operand's descriptor, of the descriptor in its
    // errors and of its read (constants: an issue formats nothing).
    let labels = [
        [
            "the A descriptor",
            "wgmma.mma_async A",
            "wgmma.mma_async A operand read",
        ],
        [
            "the B descriptor",
            "wgmma.mma_async B",
            "wgmma.mma_async B operand read",
        ],
    ];
    let operands = [(&i.s[0], labels[0], 16 * (w % 4), 16), (&i.s[1], labels[1], 0, n)];
    // Whether no operation in flight writes within an operand's bounds
    // (then no chunk needs checking).
    let mut quiet = true;
    let mut bounds = (usize::MAX, 0);
    for &(op, [desc_name, what_desc, what], first, rows) in &operands[usize::from(i.flags & F_SS == 0)..] {
        let bits = uniform(c, op, desc_name)?;
        let desc = SmemDesc::sm90(bits, what_desc).map_err(Fault::new)?;
        let from = chunks.len();
        chunks.extend((first..first + rows).flat_map(|r| [desc.chunk(r, 0), desc.chunk(r, 1)]));
        let (lo, hi) = shared_offsets(c, &mut chunks[from..], what)?;
        quiet &= c.b.inflight.quiet(lo, hi, false);
        bounds = (bounds.0.min(lo), bounds.1.max(hi));
    }
    if c.cl.clocks.on() || (!quiet && c.b.inflight.any_busy(&chunks, false)) {
        c.check_async(0, &chunks, false)?;
    }
    let size = c.b.shared.len();
    let thread = c.thread_of(0);
    let read = c.b.inflight.add_wide_read(pc, thread, &chunks, bounds, size);
    let wg = c.w.held.as_deref_mut().expect("held registers");
    wg.hold_mma(&mut c.w.init, &d, &a);
    wg.open.push(Mma {
        pc,
        n,
        d,
        a,
        chunks: chunks.into_boxed_slice(),
        bf16: i.flags & F_BF16 != 0,
        neg_a: i.flags & F_NEG_A != 0,
        neg_b: i.flags & F_NEG_B != 0,
        scale_d,
        read,
    });
    Ok(())
}

/// The shared addresses `chunks` of 16 bytes each, which an operand reads,
/// as offsets in the block's shared buffer: checked at once where the
/// span from the lowest to the highest lies in one shared variable (then
/// every chunk does), else one by one, which reports the first outside.
/// Returns the offsets' bounds (the lowest, one past the highest byte).
fn shared_offsets(c: &mut Ctx<'_>, chunks: &mut [u32], what: &str) -> Result<(usize, usize), Fault> {
    let (lo, hi) = chunks.iter().fold((u32::MAX, 0), |(l, h), &x| (l.min(x), h.max(x)));
    if !chunks.is_empty()
        && let Ok(off) = c.shared_at(0, u64::from(lo), hi - lo + 16, what)
    {
        for x in chunks.iter_mut() {
            *x = *x - lo + off as u32;
        }
        return Ok((off, off + (hi - lo) as usize + 16));
    }
    let (mut lo, mut hi) = (usize::MAX, 0);
    for x in chunks.iter_mut() {
        *x = c.shared_at(0, u64::from(*x), 16, what)? as u32;
        (lo, hi) = (lo.min(*x as usize), hi.max(*x as usize + 16));
    }
    Ok((lo.min(hi), hi))
}

thread_local! {
    /// [`compute`]'s room for B's rows, kept so that a wgmma allocates
    /// nothing.
    static B_ROWS: std::cell::RefCell<Vec<[u16; 16]>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Completes a pending `wgmma.mma_async`: reads its operands, writes this
/// warp's 16 rows of D and lets go of its registers and shared bytes.
/// Where a later pending one accumulates into the same registers
/// (`held_later`), D stays in the warp's row-major copy for it
/// ([`Chain`]); a copy of other registers is written back first.
fn complete(c: &mut Ctx<'_>, m: &Mma, held_later: bool) {
    let wg = c.w.held.as_deref_mut().expect("held registers");
    let (mut carried, mut rows) = (std::mem::take(&mut wg.carried), std::mem::take(&mut wg.carried_rows));
    let from = *carried == *m.d;
    if !from && !carried.is_empty() {
        Frag {
            regs: &mut c.w.regs,
            d: &carried,
        }
        .scatter(&rows);
    }
    let chain = Chain {
        rows: &mut rows,
        from,
        to: held_later,
    };
    B_ROWS.with_borrow_mut(|b| compute(c, m, b, chain));
    carried.clear();
    if held_later {
        carried.extend_from_slice(&m.d);
    }
    let wg = c.w.held.as_deref_mut().expect("held registers");
    (wg.carried, wg.carried_rows) = (carried, rows);
    wg.release_mma(&mut c.w.init, m);
    // The warp read its operands by now: later writes must be ordered
    // after this wait.
    let t = c.thread_index(0);
    if c.cl.clocks.on() {
        for &off in m.chunks.iter() {
            c.b.shadow.record(&c.cl.clocks, t, m.pc, off as usize, 16, false);
        }
    }
    c.b.inflight.remove(m.read);
}

/// Reads a pending `wgmma.mma_async`'s operands, computes and writes this
/// warp's 16 rows of D in its registers or `chain`'s copy (`b`: room for
/// B's rows).
fn compute(c: &mut Ctx<'_>, m: &Mma, b: &mut Vec<[u16; 16]>, chain: Chain<'_>) {
    let f = if m.bf16 { BF16 } else { F16 };
    // A: 16 rows x 16 values; B: N rows x 16 values (K-major).
    let mut a = [[0u16; 16]; 16];
    let b_chunks = if m.a.is_empty() {
        read_rows(&c.b.shared, &m.chunks[..32], &mut a);
        &m.chunks[32..]
    } else {
        for l in 0..32 {
            let (g, t) = (l / 4, l % 4);
            for (q, &r) in m.a.iter().enumerate() {
                let word = c.w.regs[r as usize * 32 + l];
                let (row, col) = (g + 8 * (q % 2), 2 * t + 8 * (q / 2));
                a[row][col] = word as u16;
                a[row][col + 1] = (word >> 16) as u16;
            }
        }
        &m.chunks[..]
    };
    b.resize(m.n as usize, [0; 16]);
    read_rows(&c.b.shared, b_chunks, b);
    let frag = Frag {
        regs: &mut c.w.regs,
        d: &m.d,
    };
    half_rows_frag(&a, b, f, (m.neg_a, m.neg_b), frag, m.scale_d, chain);
}

/// Rows of 16 f16 or bf16 values from shared memory, each two 16-byte
/// chunks (`chunks`: their offsets, in order).
fn read_rows(shared: &[u8], chunks: &[u32], rows: &mut [[u16; 16]]) {
    for (row, offs) in rows.iter_mut().zip(chunks.chunks_exact(2)) {
        for (values, &off) in row.chunks_exact_mut(8).zip(offs) {
            let bytes: &[u8; 16] = shared[off as usize..][..16].try_into().expect("16 bytes");
            for (x, pair) in values.iter_mut().zip(bytes.chunks_exact(2)) {
                *x = u16::from_le_bytes([pair[0], pair[1]]);
            }
        }
    }
}
