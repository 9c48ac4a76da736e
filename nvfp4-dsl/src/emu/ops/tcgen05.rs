//! Blackwell tensor memory and tensor cores (`tcgen05.*`, `.cta_group::1`):
//! `alloc`/`dealloc`/`relinquish_alloc_permit`, `cp.32x128b.warpx4`,
//! `mma.kind::mxf4nvf4.block_scale.scale_vec::4X` (the NVFP4 block-scaled
//! MMA, A and B from shared memory), `commit`, `ld`/`st.32x32b`, the waits
//! and the fences.
//!
//! # The asynchronous model
//!
//! `tcgen05.cp`, `tcgen05.mma` and `tcgen05.commit`'s arrive are checked
//! when issued and put in flight (`pending::TcOp`); they complete in issue
//! order (the block's tensor core runs them one after another), at points
//! the schedule picks. Until then the shared bytes they read may not be
//! written and the tensor-memory columns they write (or read) may not be
//! loaded, stored or freed. A `tcgen05.ld` reads tensor memory when
//! issued, but its registers are held until `tcgen05.wait::ld`.
//!
//! The fences are checked as the PTX ISA prescribes them: a thread that
//! gets past a synchronisation (a barrier, an mbarrier wait) needs
//! `tcgen05.fence::after_thread_sync` before its next `tcgen05`
//! instruction, and one that issued `tcgen05` instructions needs
//! `tcgen05.fence::before_thread_sync` (or, for `cp`/`mma`, a
//! `tcgen05.commit`) before its next release (an arrive at a barrier or on
//! an mbarrier).
//!
//! # The MMA model
//!
//! `D[m][n]` (f32 at tensor-memory lane `m`, column `d + n`; M = 128,
//! N = 8..=256, K = 64) is summed as Microsoft's MMA-Sim models the
//! B200's block-scaled FP4 MMA (its model of the H100's wgmma matched all
//! 45056 results we recorded on an H100, see `wgmma.rs`; this one no
//! Blackwell GPU here has confirmed). Each 16-element block `c` gives one
//! term, its products' exact sum times `sfa[m][c] * sfb[n][c]`, whose
//! leading exponent is the sum of the two scales' exponents (whatever the
//! block sum; a zero scale drops the term); D is a term too when
//! accumulating. With `emax` the largest leading exponent, each term is
//! truncated toward zero to a multiple of `2^(emax - 35)`, the terms are
//! added exactly and the sum is rounded toward zero to f32 (an overflow
//! is an infinity). A zero sum is +0; a NaN scale (UE4M3 `0x7F`, and
//! `0xFF`: the sign bit of a UE4M3 scale is ignored) or a NaN D makes the
//! result the canonical NaN `0x7FFFFFFF`; an infinite D stays infinite.

use super::bulk::shared_operand;
use super::control::uniform;
use super::desc::SmemDesc;
use super::mbarrier::check_published;
use super::mem::address_values;
use super::tensor_sum::BlockScaledB;
use crate::emu::ctx::{Ctx, Side};
use crate::emu::decode::Dec;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Space, Ty};
use crate::emu::parse::Arg;
use crate::emu::pending::{AsyncOp, AsyncRegs, TcLoad, TcOp, Work};
use crate::emu::race::{Access, Check};
use crate::emu::state::lanes;
use crate::emu::tmem::{TBusy, Tmem};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

const ALLOC: u8 = 0;
const DEALLOC: u8 = 1;
const RELINQUISH: u8 = 2;
const CP: u8 = 3;
const MMA: u8 = 4;
const COMMIT: u8 = 5;
const LD: u8 = 6;
const ST: u8 = 7;
const WAIT_LD: u8 = 8;
const WAIT_ST: u8 = 9;
const FENCE_BEFORE: u8 = 10;
const FENCE_AFTER: u8 = 11;

pub(super) fn tcgen05(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ops = [
        "alloc",
        "dealloc",
        "relinquish_alloc_permit",
        "cp",
        "mma",
        "commit",
        "ld",
        "st",
        "wait::ld",
        "wait::st",
        "fence::before_thread_sync",
        "fence::after_thread_sync",
    ];
    let k = m.take_any(&ops).ok_or("unsupported tcgen05 operation")?;
    let op = [
        ALLOC,
        DEALLOC,
        RELINQUISH,
        CP,
        MMA,
        COMMIT,
        LD,
        ST,
        WAIT_LD,
        WAIT_ST,
        FENCE_BEFORE,
        FENCE_AFTER,
    ][k];
    if m.take("cta_group::2") {
        return Err("`.cta_group::2` is not supported by the emulator (no CTA pairs)".into());
    }
    let group = m.take("cta_group::1");
    if matches!(op, ALLOC | DEALLOC | RELINQUISH | CP | MMA | COMMIT) && !group {
        return Err(format!("`tcgen05.{}` needs `.cta_group::1`", ops[k]));
    }
    let sync = m.take("sync");
    let aligned = m.take("aligned");
    let needs_sync = matches!(op, ALLOC | DEALLOC | RELINQUISH | LD | ST | WAIT_LD | WAIT_ST);
    if needs_sync && !(sync && aligned) {
        return Err(format!("`tcgen05.{}` needs `.sync.aligned`", ops[k]));
    }
    let mut i = Inst::new(exec_tcgen05);
    i.sub = op;
    match op {
        ALLOC => {
            i.space = if m.take("shared::cta") {
                Space::Shared
            } else {
                Space::Generic
            };
            if m.ty()? != Ty::B32 {
                return Err("`tcgen05.alloc` needs `.b32`".into());
            }
            d.count(2)?;
            i.addr = d.addr(0, false)?;
            i.s[0] = d.src(1, Ty::U32)?;
        }
        DEALLOC => {
            if m.ty()? != Ty::B32 {
                return Err("`tcgen05.dealloc` needs `.b32`".into());
            }
            d.count(2)?;
            i.s[0] = d.src(0, Ty::B32)?;
            i.s[1] = d.src(1, Ty::U32)?;
        }
        RELINQUISH | WAIT_LD | WAIT_ST | FENCE_BEFORE | FENCE_AFTER => d.count(0)?,
        CP => {
            if !m.take("32x128b") {
                return Err("only the `.32x128b.warpx4` shape of `tcgen05.cp` is supported".into());
            }
            if !m.take("warpx4") {
                return Err("`tcgen05.cp.32x128b` needs `.warpx4`".into());
            }
            d.count(2)?;
            i.addr = d.addr(0, false)?;
            i.s[0] = d.src(1, Ty::B64)?;
        }
        MMA => {
            if !m.take("kind::mxf4nvf4") {
                return Err("only `.kind::mxf4nvf4` is supported by the emulator's tcgen05.mma".into());
            }
            if !m.take("block_scale") {
                return Err("`.kind::mxf4nvf4` needs `.block_scale`".into());
            }
            if m.take_any(&["scale_vec::4X", "block16"]).is_none() {
                return Err("`.kind::mxf4nvf4` is supported with `.scale_vec::4X` (`.block16`) only".into());
            }
            d.count(7)?;
            if matches!(d.arg(1)?, Arg::Addr(..)) {
                return Err("A in tensor memory (`[a_tmem]`) is not supported; pass a shared-memory descriptor".into());
            }
            i.addrs = vec![d.addr(0, false)?, d.addr(4, false)?, d.addr(5, false)?].into_boxed_slice();
            i.s[0] = d.src(1, Ty::B64)?;
            i.s[1] = d.src(2, Ty::B64)?;
            i.s[2] = d.src(3, Ty::B32)?;
            i.s[3] = d.src(6, Ty::Pred)?;
        }
        COMMIT => {
            if m.take("multicast::cluster") {
                return Err("`.multicast::cluster` is not supported (no clusters)".into());
            }
            if !m.take("mbarrier::arrive::one") {
                return Err("`tcgen05.commit` needs `.mbarrier::arrive::one`".into());
            }
            i.space = if m.take("shared::cluster") {
                Space::Shared
            } else {
                Space::Generic
            };
            if m.ty()? != Ty::B64 {
                return Err("`tcgen05.commit` needs `.b64`".into());
            }
            d.count(1)?;
            i.addr = d.addr(0, false)?;
        }
        _ => {
            // ld / st
            if !m.take("32x32b") {
                return Err("only the `.32x32b` shape of `tcgen05.ld`/`tcgen05.st` is supported".into());
            }
            let nums = ["x1", "x2", "x4", "x8", "x16", "x32", "x64", "x128"];
            let n = 1usize << m.take_any(&nums).ok_or("missing `.xN` (N = 1, 2, 4, ..., 128)")?;
            if m.ty()? != Ty::B32 {
                return Err("`tcgen05.ld`/`st` need `.b32`".into());
            }
            d.count(2)?;
            let (vi, ai) = if op == LD { (0, 1) } else { (1, 0) };
            let regs = d.vec(vi)?;
            if regs.len() != n {
                return Err(format!("`.x{n}` needs {n} registers, found {}", regs.len()));
            }
            let v = regs
                .iter()
                .map(|r| if op == LD { d.dst_arg(r) } else { d.src_arg(r, Ty::B32) })
                .collect::<Result<Vec<_>, _>>()?;
            if v.iter().any(|o| !matches!(o, Operand::Reg { bits: 32, .. })) {
                return Err("every register of `tcgen05.ld`/`st` must be a 32-bit register".into());
            }
            i.v = v.into_boxed_slice();
            i.addr = d.addr(ai, false)?;
        }
    }
    Ok(i)
}

fn exec_tcgen05(c: &mut Ctx<'_>, i: &Inst) -> X {
    match i.sub {
        ALLOC | DEALLOC | RELINQUISH => exec_alloc(c, i),
        CP => exec_cp(c, i),
        MMA => exec_mma(c, i),
        COMMIT => exec_commit(c, i),
        WAIT_LD => {
            whole_warp(c, "tcgen05.wait::ld")?;
            if let Some(held) = c.w.held.as_deref_mut() {
                for ld in std::mem::take(&mut held.loads) {
                    for &r in ld.regs.iter() {
                        held.release(&mut c.w.init, r, false);
                    }
                }
            }
            Ok(Flow::Next)
        }
        WAIT_ST => whole_warp(c, "tcgen05.wait::st").map(|()| Flow::Next),
        FENCE_BEFORE => {
            for l in lanes(c.exec) {
                c.w.tc_unfenced[l] = 0;
                c.w.tc_uncommitted[l] = 0;
            }
            Ok(Flow::Next)
        }
        FENCE_AFTER => {
            for l in lanes(c.exec) {
                c.w.tc_synced[l] = 0;
            }
            Ok(Flow::Next)
        }
        _ => exec_ld_st(c, i),
    }
}

/// `tcgen05.commit`: an arrive on the mbarrier once every `tcgen05`
/// operation issued before it has completed.
fn exec_commit(c: &mut Ctx<'_>, i: &Inst) -> X {
    let bar = address_values(c, &i.addr)?;
    for l in lanes(c.exec) {
        let (a, _) = shared_operand(c, l, bar[l], i.space, 8, 8, "tcgen05.commit mbarrier")?;
        check_published(c, l, None, a)?;
        c.w.tc_uncommitted[l] = 0;
        let id = c.b.next_op();
        c.issue(l, id, Vec::new(), Work::Tc(TcOp::Arrive { mbar: a }), true)?;
    }
    Ok(Flow::Next)
}

/// Marks the tensor-memory columns `col..col + n` busy with operation
/// `id` of `lane` until it completes.
fn busy(c: &mut Ctx<'_>, lane: usize, id: u64, col: u32, ncols: u32, write: bool) {
    let (pc, thread) = (c.w.group_pc, c.thread_of(lane));
    c.b.tmem().busy.push(TBusy {
        id,
        pc,
        thread,
        col,
        ncols,
        write,
    });
}

/// The error for an instruction that meets columns an operation in
/// flight writes (or reads).
fn busy_error(c: &Ctx<'_>, lane: usize, what: &str, b: &TBusy) -> Fault {
    let e = c.env.entry;
    let (x, y, z) = b.thread;
    Fault::lane(
        lane,
        format!(
            "{what} meets tensor-memory columns {}..{} that the {} at {} (issued by thread ({x},{y},{z})) still {}: wait on the mbarrier that a later tcgen05.commit arrives on first",
            b.col,
            b.col + b.ncols,
            crate::emu::diag::op_name(&e.texts[b.pc as usize]),
            crate::emu::diag::statement_of(c.env, b.pc),
            if b.write { "writes" } else { "reads" }
        ),
    )
    .citing(b.pc)
}

/// `.sync.aligned` instructions: the whole warp, converged.
pub(super) fn whole_warp(c: &Ctx<'_>, what: &str) -> Result<(), Fault> {
    if c.exec != u32::MAX {
        return Err(Fault::new(format!(
            "{what} is `.sync.aligned`: all 32 lanes of the warp must execute it together (executing lanes: {:#010x})",
            c.exec
        )));
    }
    Ok(())
}

fn exec_alloc(c: &mut Ctx<'_>, i: &Inst) -> X {
    let name = ["tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit"][i.sub as usize];
    whole_warp(c, name)?;
    let first = c.exec.trailing_zeros() as usize;
    match i.sub {
        ALLOC => {
            let slot = address_values(c, &i.addr)?;
            let ncols = uniform(c, &i.s[0], "the column count")? as u32;
            if slot.iter().any(|&s| s != slot[0]) {
                return Err(Fault::new("tcgen05.alloc: the lanes give different slot addresses"));
            }
            let (_, off) = shared_operand(c, first, slot[0], i.space, 4, 4, "tcgen05.alloc address slot")?;
            let thread = c.thread_of(first);
            let pc = c.w.group_pc;
            let col = c.b.tmem().alloc(ncols, thread, pc).map_err(Fault::new)?;
            c.shared_write(first, None, off, &col.to_le_bytes(), Check::Plain)?;
            mark_unfenced(c);
        }
        DEALLOC => {
            for l in lanes(c.exec) {
                c.tc_after_check(l)?;
            }
            let t = uniform(c, &i.s[0], "the tensor-memory address")? as u32;
            let ncols = uniform(c, &i.s[1], "the column count")? as u32;
            if let Some(b) = c.b.tmem().busy_at(t & 0xFFFF, ncols, true).copied() {
                return Err(busy_error(c, first, "tcgen05.dealloc", &b));
            }
            for q in 0..4 {
                ordered_after_writes(c, q, t & 0xFFFF, ncols, "tcgen05.dealloc")?;
            }
            c.b.tmem().dealloc(t >> 16, t & 0xFFFF, ncols).map_err(Fault::new)?;
            mark_unfenced(c);
        }
        _ => c.b.tmem().relinquished = true,
    }
    Ok(Flow::Next)
}

/// The executing lanes issued a `tcgen05` instruction that a
/// `tcgen05.fence::before_thread_sync` must order before their next
/// release.
fn mark_unfenced(c: &mut Ctx<'_>) {
    let pc = c.w.group_pc;
    for l in lanes(c.exec) {
        c.w.tc_unfenced[l] = pc + 1;
    }
}

/// The block's tensor memory, which must have been allocated.
fn tmem<'a>(c: &'a mut Ctx<'_>, lane: usize, what: &str) -> Result<&'a mut Tmem, Fault> {
    match c.b.tmem.as_deref_mut() {
        Some(t) => Ok(t),
        None => Err(Fault::lane(
            lane,
            format!("{what}: this block has not allocated tensor memory (tcgen05.alloc)"),
        )),
    }
}

/// The N of an instruction descriptor for `.kind::mxf4nvf4`, checking
/// every other field.
pub(crate) fn idesc_n(idesc: u32) -> Result<u32, String> {
    let bad = |m: &str| Err(format!("instruction descriptor {idesc:#010x}: {m}"));
    if idesc & 0b11 != 0 || idesc >> 3 & 1 != 0 || idesc >> 6 & 1 != 0 || idesc >> 12 & 1 != 0 || idesc >> 24 & 7 != 0 {
        return bad("reserved bits are set");
    }
    if idesc >> 2 & 1 != 0 {
        return bad("sparse MMA (bit 2) is not supported");
    }
    if idesc >> 4 & 3 != 0 || idesc >> 29 & 3 != 0 {
        return bad("scale-factor IDs (bits 4..6, 29..31) must be 0 with .scale_vec::4X");
    }
    if (idesc >> 7) & 7 != 1 || (idesc >> 10) & 3 != 1 {
        return bad("A and B types (bits 7..10, 10..12) must be E2M1 (1) for .kind::mxf4nvf4");
    }
    if idesc >> 13 & 3 != 0 {
        return bad("negating A or B (bits 13, 14) is not supported");
    }
    if idesc >> 15 & 3 != 0 {
        return bad("transposed A or B (bits 15, 16) is not allowed: .kind::mxf4nvf4 is K-major only");
    }
    if idesc >> 23 & 1 != 0 {
        return bad("UE8M0 scales (bit 23) are not supported with .scale_vec::4X: scales are UE4M3");
    }
    if (idesc >> 27) & 3 != 1 {
        return bad("M (bits 27..29, M >> 7) must be 128 for .cta_group::1");
    }
    if idesc >> 31 != 0 {
        return bad("K = 96 (bit 31) exists only on sm_103a; K is 64");
    }
    let n = ((idesc >> 17) & 0x3F) << 3;
    if n == 0 || n > 256 {
        return bad(&format!("N = {n} is not in 8..=256 (bits 17..23 hold N >> 3)"));
    }
    Ok(n)
}

fn exec_cp(c: &mut Ctx<'_>, i: &Inst) -> X {
    let t = address_values(c, &i.addr)?;
    let desc = c.src(&i.s[0])?;
    for l in lanes(c.exec) {
        c.tc_after_check(l)?;
        let f = |m: String| Fault::lane(l, m);
        let sd = SmemDesc::sm100(desc[l], "tcgen05.cp source").map_err(f)?;
        if sd.swizzle != 0 {
            return Err(f(format!(
                "tcgen05.cp.32x128b source with a {}-byte swizzle is not supported (only no swizzle)",
                sd.swizzle
            )));
        }
        let mut rows = [0u32; 32];
        for (r, row) in rows.iter_mut().enumerate() {
            let r = r as u32;
            let a = sd.start + (r / 8) * sd.sbo + (r % 8) * 16;
            *row = c.shared_at(l, u64::from(a), 16, "tcgen05.cp source read")? as u32;
        }
        let (lane, col) = ((t[l] >> 16) as u32 & 0xFFFF, t[l] as u32 & 0xFFFF);
        if lane != 0 {
            return Err(f(format!(
                "tcgen05.cp.32x128b.warpx4 destination has lane {lane}; .warpx4 writes all 128 lanes and needs lane 0"
            )));
        }
        let tm = tmem(c, l, "tcgen05.cp")?;
        tm.check(0, 128, col, 4, "tcgen05.cp destination").map_err(f)?;
        c.check_async(l, &rows, false)?;
        let id = c.b.next_op();
        let size = c.b.shared.len();
        let span = c.b.inflight.add(c.w.group_pc, c.thread_of(l), false, &rows, size);
        busy(c, l, id, col, 4, true);
        c.w.tc_uncommitted[l] = c.w.group_pc + 1;
        let cp = TcOp::Cp {
            rows: Box::new(rows),
            col,
        };
        c.issue(l, id, vec![span], Work::Tc(cp), false)?;
    }
    Ok(Flow::Next)
}

/// Completes a `tcgen05` operation (the ones before it in the block
/// have), as the block's asynchronous unit: what it reads and writes is
/// recorded at the unit's clock, which then goes up.
pub(super) fn complete(s: &mut Side<'_>, op: &AsyncOp, tc: &TcOp) -> Result<(), Fault> {
    let agent = s.b.agent;
    let done = run(s, op, tc);
    s.clocks.tick(agent);
    done
}

fn run(s: &mut Side<'_>, op: &AsyncOp, tc: &TcOp) -> Result<(), Fault> {
    let agent = s.b.agent;
    let unit = Access::now(s.clocks, agent, op.pc, true);
    match tc {
        TcOp::Cp { rows, col } => {
            for &off in rows.iter() {
                s.b.shadow.record(s.clocks, agent, op.pc, off as usize, 16, false);
            }
            let tm = s.b.tmem.as_deref_mut().ok_or("tcgen05.cp: the tensor memory is gone")?;
            for (r, &off) in rows.iter().enumerate() {
                let off = off as usize;
                for j in 0..4 {
                    let w = u32::from_le_bytes(s.b.shared[off + 4 * j..off + 4 * j + 4].try_into().expect("4 bytes"));
                    for q in 0..4 {
                        tm.set(r as u32 + 32 * q, col + j as u32, w);
                    }
                }
            }
            tm.record(0xF, *col, 4, unit);
            Ok(())
        }
        TcOp::Mma {
            d,
            sfa,
            sfb,
            n,
            a,
            b,
            accumulate,
        } => {
            let rows = |chunks: &[u32]| -> Vec<[u8; 32]> {
                chunks
                    .chunks(2)
                    .map(|pair| {
                        let mut row = [0u8; 32];
                        for (h, &off) in pair.iter().enumerate() {
                            let off = off as usize;
                            row[16 * h..16 * h + 16].copy_from_slice(&s.b.shared[off..off + 16]);
                        }
                        row
                    })
                    .collect()
            };
            let (rows_a, rows_b) = (rows(a), rows(b));
            for &off in a.iter().chain(b.iter()) {
                s.b.shadow.record(s.clocks, agent, op.pc, off as usize, 16, false);
            }
            let tm =
                s.b.tmem
                    .as_deref_mut()
                    .ok_or("tcgen05.mma: the tensor memory is gone")?;
            mma(tm, [*d, *sfa, *sfb], *n, &rows_a, &rows_b, *accumulate)?;
            tm.record(0xF, *d, *n, unit);
            Ok(())
        }
        TcOp::Arrive { mbar } => {
            s.clocks.acquire(agent, &op.clock);
            let row = s.clocks.row(agent);
            s.b.mbar_update(s.env, *mbar, |m| {
                m.collect(row);
                m.arrive(1)
            })
            .map(drop)
        }
    }
}

/// Fails unless every write of columns `col..col + n` of lane quarter `q`
/// happens before the access of the executing lanes (`what`). A
/// `tcgen05.st` of the executing warp counts as ordered: the warp
/// executes these instructions as one, in order.
fn ordered_after_writes(c: &mut Ctx<'_>, q: u32, col: u32, n: u32, what: &str) -> Result<(), Fault> {
    let base = c.b.rank * c.b.threads;
    let warp = c.w.index;
    for l in lanes(c.exec) {
        let t = c.thread_index(l);
        let row = c.cl.clocks.row(t);
        let same_warp = |a: &Access| !a.asynchronous && (a.thread() - base) / 32 == warp;
        let racing = |a: &Access| !a.before(t, row) && !same_warp(a);
        let Some(w) = c.b.tmem.as_deref().and_then(|tm| tm.unordered(q, col, n, racing)) else {
            continue;
        };
        let e = c.env.entry;
        let by = if w.asynchronous {
            format!(
                "the {} at {} wrote (wait on the mbarrier of a tcgen05.commit issued after it, then tcgen05.fence::after_thread_sync)",
                crate::emu::diag::op_name(&e.texts[w.pc as usize]),
                crate::emu::diag::statement_of(c.env, w.pc)
            )
        } else {
            format!(
                "another thread wrote at {} (a barrier between them, with the tcgen05 fences, orders them)",
                crate::emu::diag::statement_of(c.env, w.pc)
            )
        };
        return Err(Fault::lane(
            l,
            format!(
                "tensor-memory race: this {what} touches columns {col}..{} of lanes {}..{} that {by}, and nothing orders the two",
                col + n,
                32 * q,
                32 * q + 32
            ),
        )
        .citing(w.pc));
    }
    Ok(())
}

/// The scale-factor word of row/column `r` (column `col + r / 32`, lane
/// `r % 32`), which must be the same in all four lane quarters.
fn sf_word(tm: &Tmem, col: u32, r: u32, what: &str) -> Result<u32, String> {
    let (c, l) = (col + r / 32, r % 32);
    let Some(w) = tm.get(l, c) else {
        return Err(format!(
            "uninitialised tensor memory: the {what} scale factors of row {r} (lane {l}, column {c}) were never written"
        ));
    };
    for q in 1..4 {
        match tm.get(l + 32 * q, c) {
            Some(v) if v == w => {}
            got => {
                return Err(format!(
                    "the {what} scale factors of row {r} (column {c}) differ between lane quarters: lane {l} holds {w:#010x}, lane {} {} (tcgen05.cp .warpx4 copies each word to all four)",
                    l + 32 * q,
                    got.map_or("was never written".to_string(), |v| format!("holds {v:#010x}"))
                ));
            }
        }
    }
    Ok(w)
}

/// The four UE4M3 scales of every row of an operand (from its
/// scale-factor words in tensor memory).
fn operand_scales(rows: u32, tm: &Tmem, sf_col: u32, what: &str) -> Result<Vec<[u8; 4]>, String> {
    (0..rows)
        .map(|r| Ok(sf_word(tm, sf_col, r, what)?.to_le_bytes()))
        .collect()
}

fn exec_mma(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dv = address_values(c, &i.addrs[0])?;
    let sfav = address_values(c, &i.addrs[1])?;
    let sfbv = address_values(c, &i.addrs[2])?;
    let adv = c.src(&i.s[0])?;
    let bdv = c.src(&i.s[1])?;
    let idv = c.src(&i.s[2])?;
    let acc = c.pred(&i.s[3])?;
    for l in lanes(c.exec) {
        c.tc_after_check(l)?;
        issue_mma(
            c,
            l,
            [dv[l], sfav[l], sfbv[l]].map(|x| x as u32),
            adv[l],
            bdv[l],
            idv[l] as u32,
            acc >> l & 1 != 0,
        )?;
    }
    Ok(Flow::Next)
}

/// The shared-buffer offsets of the 16-byte chunks of an operand's rows
/// (two per row).
fn operand_chunks(c: &mut Ctx<'_>, lane: usize, sd: &SmemDesc, rows: u32, what: &str) -> Result<Vec<u32>, Fault> {
    let mut out = Vec::with_capacity(2 * rows as usize);
    for r in 0..rows {
        for h in 0..2 {
            out.push(c.shared_at(lane, u64::from(sd.chunk(r, h)), 16, what)? as u32);
        }
    }
    Ok(out)
}

/// Checks one MMA of `lane` and puts it in flight: `t` = the D, SFA and
/// SFB tensor-memory addresses.
fn issue_mma(
    c: &mut Ctx<'_>,
    l: usize,
    t: [u32; 3],
    adesc: u64,
    bdesc: u64,
    idesc: u32,
    acc: bool,
) -> Result<(), Fault> {
    let f = |m: String| Fault::lane(l, m);
    let n = idesc_n(idesc).map_err(f)?;
    let ad = SmemDesc::sm100(adesc, "A").map_err(f)?;
    let bd = SmemDesc::sm100(bdesc, "B").map_err(f)?;
    let a = operand_chunks(c, l, &ad, 128, "tcgen05.mma A operand read")?;
    let b = operand_chunks(c, l, &bd, n, "tcgen05.mma B operand read")?;
    for (k, name) in [(0, "D"), (1, "scale factor A"), (2, "scale factor B")] {
        if t[k] >> 16 != 0 {
            return Err(f(format!(
                "tcgen05.mma {name} address {:#010x} has lane {}; it must be lane 0",
                t[k],
                t[k] >> 16
            )));
        }
    }
    let (dc, sac, sbc) = (t[0] & 0xFFFF, t[1] & 0xFFFF, t[2] & 0xFFFF);
    let tm = tmem(c, l, "tcgen05.mma")?;
    tm.check(0, 128, dc, n, "tcgen05.mma D").map_err(f)?;
    tm.check(0, 128, sac, 4, "tcgen05.mma scale factors of A").map_err(f)?;
    tm.check(0, 128, sbc, n.div_ceil(32), "tcgen05.mma scale factors of B")
        .map_err(f)?;
    let chunks: Vec<u32> = a.iter().chain(&b).copied().collect();
    c.check_async(l, &chunks, false)?;
    let id = c.b.next_op();
    let size = c.b.shared.len();
    let span = c.b.inflight.add(c.w.group_pc, c.thread_of(l), false, &chunks, size);
    busy(c, l, id, dc, n, true);
    busy(c, l, id, sac, 4, false);
    busy(c, l, id, sbc, n.div_ceil(32), false);
    c.w.tc_uncommitted[l] = c.w.group_pc + 1;
    let op = TcOp::Mma {
        d: dc,
        sfa: sac,
        sfb: sbc,
        n,
        a: a.into_boxed_slice(),
        b: b.into_boxed_slice(),
        accumulate: acc,
    };
    c.issue(l, id, vec![span], Work::Tc(op), false)
}

/// Completes one MMA: `t` = the D, SFA and SFB columns; `a`, `b` the
/// operands' rows.
fn mma(tm: &mut Tmem, t: [u32; 3], n: u32, a: &[[u8; 32]], b: &[[u8; 32]], acc: bool) -> Result<(), String> {
    let [dc, sac, sbc] = t;
    let sa = operand_scales(128, tm, sac, "A")?;
    let sb = operand_scales(n, tm, sbc, "B")?;
    let mut rows = BlockScaledB::new(b, &sb);
    for m in 0..128u32 {
        if acc && let Some(col) = tm.first_unwritten(m, dc, n) {
            return Err(format!(
                "uninitialised tensor memory: tcgen05.mma accumulates (enable-input-d true) into D at lane {m}, column {col}, which was never written"
            ));
        }
        rows.row(&a[m as usize], sa[m as usize], tm.row_mut(m, dc, n), acc);
    }
    Ok(())
}

fn exec_ld_st(c: &mut Ctx<'_>, i: &Inst) -> X {
    let what = if i.sub == LD { "tcgen05.ld" } else { "tcgen05.st" };
    whole_warp(c, what)?;
    for l in lanes(c.exec) {
        c.tc_after_check(l)?;
    }
    let v = address_values(c, &i.addr)?;
    let t = v[c.exec.trailing_zeros() as usize] as u32;
    if let Some(l) = lanes(c.exec).find(|&l| v[l] as u32 != t) {
        return Err(Fault::lane(
            l,
            format!(
                "{what}: the lanes give different tensor-memory addresses ({t:#x} and {:#x})",
                v[l] as u32
            ),
        ));
    }
    let (lane0, col) = (t >> 16, t & 0xFFFF);
    let w = c.w.index;
    let q = 32 * (w % 4);
    if lane0 != q {
        return Err(Fault::new(format!(
            "{what}: warp {w} may access only tensor-memory lanes {q}..{} (warp % 4 = {}), but the address {t:#010x} starts at lane {lane0}",
            q + 32,
            w % 4
        )));
    }
    let n = i.v.len() as u32;
    let first = c.exec.trailing_zeros() as usize;
    let tm = tmem(c, first, what)?;
    tm.check(lane0, 32, col, n, what).map_err(Fault::new)?;
    if let Some(b) = tm.busy_at(col, n, i.sub == ST).copied() {
        return Err(busy_error(c, first, what, &b));
    }
    ordered_after_writes(c, w % 4, col, n, what)?;
    if i.sub == ST {
        let unit = Access::now(&c.cl.clocks, c.thread_index(first), c.w.group_pc, false);
        c.b.tmem().record(1 << (w % 4), col, n, unit);
    }
    mark_unfenced(c);
    let tm = tmem(c, first, what)?;
    if i.sub == LD {
        let mut vals = vec![[0u64; 32]; n as usize];
        for (k, vk) in vals.iter_mut().enumerate() {
            for (l, x) in vk.iter_mut().enumerate() {
                match tm.get(lane0 + l as u32, col + k as u32) {
                    Some(v) => *x = u64::from(v),
                    None => {
                        return Err(Fault::lane(
                            l,
                            format!(
                                "read of tensor memory never written: lane {}, column {} (tcgen05.ld of columns {col}..{})",
                                lane0 + l as u32,
                                col + k as u32,
                                col + n
                            ),
                        ));
                    }
                }
            }
        }
        for (d, vk) in i.v.iter().zip(&vals) {
            c.write(d, vk, Ext::Zero)?;
        }
        // The registers wait for tcgen05.wait::ld.
        let nregs = c.env.entry.nregs as usize;
        let held = c.w.held.get_or_insert_with(|| Box::new(AsyncRegs::new(nregs)));
        let regs: Box<[u32]> =
            i.v.iter()
                .filter_map(|o| match *o {
                    Operand::Reg { idx, .. } => Some(idx),
                    _ => None,
                })
                .collect();
        for &r in regs.iter() {
            held.hold(&mut c.w.init, r);
        }
        held.loads.push(TcLoad { pc: c.w.group_pc, regs });
    } else {
        let mut vals = Vec::with_capacity(n as usize);
        for op in i.v.iter() {
            vals.push(c.src(op)?);
        }
        let tm = tmem(c, first, what)?;
        for (k, vk) in vals.iter().enumerate() {
            for (l, x) in vk.iter().enumerate() {
                tm.set(lane0 + l as u32, col + k as u32, *x as u32);
            }
        }
    }
    Ok(Flow::Next)
}
