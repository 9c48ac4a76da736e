//! The Hopper/Blackwell asynchronous model's bulk copies
//! (`cp.async.bulk`, `cp.async.bulk.tensor.2d` through an emulator
//! [`TensorMap2d`](crate::emu::TensorMap2d)); their mbarriers are in
//! `mbarrier.rs`.
//!
//! A copy is checked when it is issued (sizes, alignment, bounds: its
//! global bytes inside the view passed in the parameter their address came
//! from, as a plain load's are; the mbarrier) and put in flight
//! (`pending::Copy`): its destination holds poison (`layout::POISON`) and
//! no other access may touch it until it completes, at a point the
//! schedule picks; then it reads its source,
//! writes its destination and completes its transaction bytes on the
//! mbarrier. A bulk copy to global memory reads its shared source when it
//! completes: at the `cp.async.bulk.wait_group` that covers it at the
//! latest; until then its source may not be written. A lane whose
//! `mbarrier.try_wait`/`test_wait` would fail blocks (the warp's other
//! lanes and the block's other warps run) until the phase completes; see
//! `run::Run::stuck` for a block that cannot progress.
//!
//! mbarriers take part in the race check: an arrive releases the thread's
//! clock into the current phase, a completed copy its issuer's clock at
//! the issue, and a successful wait acquires every completed phase.

use crate::emu::ctx::{Ctx, Side};
use crate::emu::decode::Dec;
use crate::emu::inst::{Addr, Fault, Flow, Inst, Mods, Space, Ty};
use crate::emu::layout::{POISON, SHARED_BASE, SHARED_WINDOW};
use crate::emu::pending::{AsyncOp, Chunk, Copy, Store, Work};
use crate::emu::race::Check;
use crate::emu::state::lanes;
use crate::emu::tensormap::{TensorMap2d, swizzle};

use super::mbarrier::check_published;
use super::mem::address_values;

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

/// The shared::cta address and the offset in the block's shared buffer of
/// `[v, v + len)`, given as a `.shared` address (`space` Shared; a
/// shared::cluster address of the executing block is one too) or a
/// generic one; checks alignment and bounds.
pub(super) fn shared_operand(
    c: &mut Ctx<'_>,
    lane: usize,
    v: u64,
    space: Space,
    len: u32,
    align: u32,
    what: &str,
) -> Result<(u32, usize), Fault> {
    let a = if space == Space::Generic {
        if !(SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&v) {
            return Err(Fault::lane(
                lane,
                format!("{what}: generic address {v:#x} is not in shared memory"),
            ));
        }
        v - SHARED_WINDOW
    } else {
        v & 0xFFFF_FFFF
    };
    if !a.is_multiple_of(u64::from(align)) {
        return Err(Fault::lane(
            lane,
            format!("{what}: shared address {a:#x} is not {align}-byte aligned"),
        ));
    }
    let off = c.shared_at(lane, a, len, what)?;
    Ok((off as u32 + SHARED_BASE, off))
}

/// Removes memory-order and scope qualifiers (nothing to order here).
pub(super) fn drop_sem(m: &mut Mods<'_>) {
    m.drop_where(|p| matches!(p, "release" | "acquire" | "relaxed" | "cta" | "cluster"));
}

/// `.shared`, `.shared::cta`, `.shared::cluster` (a CTA's own shared
/// addresses are valid cluster addresses in a launch without clusters) or
/// generic.
pub(super) fn shared_space(m: &mut Mods<'_>) -> Space {
    if m.take("shared") || m.take("shared::cta") || m.take("shared::cluster") {
        Space::Shared
    } else {
        Space::Generic
    }
}

// ----- cp.async.bulk -----

/// `sub` values.
const G2S: u8 = 0;
const S2G: u8 = 1;
const TENSOR_G2S: u8 = 2;

pub(super) fn cp(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if !m.take("async") {
        return Err("only the `cp.async.bulk` forms are supported by the emulator".into());
    }
    if !m.take("bulk") {
        return Err("only the `cp.async.bulk` forms are supported by the emulator (not sm_80 `cp.async`)".into());
    }
    if m.take("commit_group") {
        d.count(0)?;
        return Ok(Inst::new(exec_commit_group));
    }
    if m.take("wait_group") {
        m.take("read");
        d.count(1)?;
        let mut i = Inst::new(exec_wait_group);
        i.imm = match d.arg(0)? {
            crate::emu::parse::Arg::Lit(crate::emu::parse::Lit::Int(n)) if (0..=63).contains(n) => *n as u64,
            _ => return Err("the group count of cp.async.bulk.wait_group must be an immediate in 0..=63".into()),
        };
        return Ok(i);
    }
    let tensor = m.take("tensor");
    if tensor {
        match m.take_any(&["1d", "2d", "3d", "4d", "5d"]) {
            Some(1) => {}
            Some(_) => {
                return Err(
                    "only 2-D tensor copies are supported by the emulator (its tensor maps are TensorMap2d)".into(),
                );
            }
            None => return Err("missing the tensor dimension (`.2d`)".into()),
        }
    }
    let spaces: Vec<&str> = m.rest().iter().take(2).copied().collect();
    let is_shared = |p: &str| matches!(p, "shared::cluster" | "shared::cta");
    let g2s = spaces.len() == 2 && is_shared(spaces[0]) && spaces[1] == "global";
    let s2g = spaces.len() == 2 && spaces[0] == "global" && spaces[1] == "shared::cta";
    let s2c = spaces.len() == 2 && spaces[0] == "shared::cluster" && spaces[1] == "shared::cta";
    let supported = g2s || ((s2g || s2c) && !tensor);
    if !supported {
        return Err(format!(
            "unsupported direction `.{}`: the emulator supports global to shared{}",
            spaces.join("."),
            if tensor {
                ""
            } else {
                ", shared::cta to global and shared::cta to shared::cluster"
            }
        ));
    }
    m.take(spaces[0]);
    m.take(spaces[1]);
    if s2c {
        if !m.take("mbarrier::complete_tx::bytes") {
            return Err("expected `.mbarrier::complete_tx::bytes`".into());
        }
        return super::cluster_copy::decode(d);
    }
    if m.take("multicast::cluster") {
        return Err(
            "`.multicast::cluster` is not supported by the emulator: have each block of the cluster load its own copy"
                .into(),
        );
    }
    let hint = m.take("L2::cache_hint");
    let mut i;
    if g2s {
        if tensor {
            if m.take_any(&["im2col", "im2col::w", "im2col::w::128", "tile::gather4"])
                .is_some()
            {
                return Err("only the `.tile` load mode is supported".into());
            }
            m.take("tile");
        }
        if !m.take("mbarrier::complete_tx::bytes") {
            return Err("expected `.mbarrier::complete_tx::bytes`".into());
        }
        d.count(3 + usize::from(!tensor) + usize::from(hint))?;
        if tensor {
            i = Inst::new(exec_tensor);
            i.sub = TENSOR_G2S;
            let (map, coords) = d.tensor_addr(1)?;
            if coords.len() != 2 {
                return Err(format!("a 2-D tensor copy takes 2 coordinates, found {}", coords.len()));
            }
            i.addrs = vec![d.addr(0, false)?, map, d.addr(2, false)?].into_boxed_slice();
            i.v = coords.into_boxed_slice();
            if hint {
                d.reg_src(3)?;
            }
        } else {
            i = Inst::new(exec_bulk);
            i.sub = G2S;
            i.addrs = vec![d.addr(0, false)?, d.addr(1, false)?, d.addr(3, false)?].into_boxed_slice();
            i.s[0] = d.src(2, Ty::U32)?;
            if hint {
                d.reg_src(4)?;
            }
        }
    } else {
        if !m.take("bulk_group") {
            return Err("expected `.bulk_group`".into());
        }
        d.count(3 + usize::from(hint))?;
        i = Inst::new(exec_bulk);
        i.sub = S2G;
        i.addrs = vec![d.addr(0, false)?, d.addr(1, false)?].into_boxed_slice();
        i.s[0] = d.src(2, Ty::U32)?;
        if hint {
            d.reg_src(3)?;
        }
    }
    Ok(i)
}

/// Whether `op` is a bulk copy to global memory by lane `lane` of warp `w`.
fn store_of(op: &AsyncOp, w: u32, lane: usize) -> Option<&Store> {
    match &op.work {
        Work::Store(st) if op.warp == w && op.lane as usize == lane => Some(st),
        _ => None,
    }
}

/// `cp.async.bulk.commit_group`: each lane's bulk copies to global memory
/// not yet in a group form a new one.
fn exec_commit_group(c: &mut Ctx<'_>, _: &Inst) -> X {
    let w = c.w.index;
    for l in lanes(c.exec) {
        let group = c.b.next_group;
        c.b.next_group += 1;
        for op in &mut c.b.ops {
            if let Work::Store(st) = &mut op.work
                && op.warp == w
                && op.lane as usize == l
                && st.group.is_none()
            {
                st.group = Some(group);
            }
        }
    }
    Ok(Flow::Next)
}

/// `cp.async.bulk.wait_group{.read} N`: each lane's oldest groups complete
/// until at most N are pending; the lane then knows what the block's
/// asynchronous unit did.
fn exec_wait_group(c: &mut Ctx<'_>, i: &Inst) -> X {
    let w = c.w.index;
    for l in lanes(c.exec) {
        let mut groups: Vec<u64> =
            c.b.ops
                .iter()
                .filter_map(|op| store_of(op, w, l).and_then(|st| st.group))
                .collect();
        groups.sort_unstable();
        groups.dedup();
        let over = groups.len().saturating_sub(i.imm as usize);
        for &g in &groups[..over] {
            while let Some(k) =
                c.b.ops
                    .iter()
                    .position(|op| store_of(op, w, l).is_some_and(|st| st.group == Some(g)))
            {
                c.complete_op(k)?;
            }
        }
        let t = c.thread_index(l);
        c.cl.clocks.acquire_from(t, c.b.agent);
    }
    Ok(Flow::Next)
}

fn values(c: &Ctx<'_>, a: &Addr) -> Result<[u64; 32], Fault> {
    address_values(c, a)
}

/// Puts lane `lane`'s copy into shared memory in flight: its destination
/// is checked (nothing in flight touches it, the issuing thread is
/// ordered after its earlier accesses) and poisoned.
fn copy_in(c: &mut Ctx<'_>, lane: usize, chunks: Vec<Chunk>, mbar: u32, bytes: u64) -> Result<(), Fault> {
    check_published(c, lane, None, mbar)?;
    let offs: Vec<u32> = chunks.iter().map(|ch| ch.off).collect();
    c.check_async(lane, &offs, true)?;
    for &off in &offs {
        c.b.shared[off as usize..off as usize + 16].fill(POISON);
    }
    let id = c.b.next_op();
    let size = c.b.shared.len();
    let span = c.b.inflight.add(c.w.group_pc, c.thread_of(lane), true, &offs, size);
    c.issue(lane, id, vec![span], Work::Copy(Copy { chunks, mbar, bytes }), true)
}

/// Completes a copy into shared memory: its bytes land (written by the
/// block's asynchronous unit, which knows what the issuer knew at the
/// issue), then its transaction bytes and the unit's clock reach the
/// mbarrier.
pub(super) fn complete_copy(s: &mut Side<'_>, op: &AsyncOp, copy: &Copy) -> Result<(), Fault> {
    let agent = s.b.agent;
    s.clocks.acquire(agent, &op.clock);
    let mut hint = 0;
    for ch in &copy.chunks {
        // Sixteen bytes straight into shared memory: copies of a constant
        // length, not calls to memmove.
        let mut buf = [0u8; 16];
        if ch.len > 0 {
            let (at, len) = (usize::from(ch.at), usize::from(ch.len));
            let k = s
                .mem
                .locate(ch.src, len as u64, &mut hint)
                .map_err(|f| f.describe("asynchronous copy source read", ch.src, len))?;
            let src = s.mem.bytes(k, ch.src, len);
            match <&[u8; 16]>::try_from(src) {
                Ok(whole) => buf = *whole,
                Err(_) => buf[at..at + len].copy_from_slice(src),
            }
        }
        let off = ch.off as usize;
        let dst: &mut [u8; 16] = (&mut s.b.shared[off..off + 16]).try_into().expect("16 bytes");
        *dst = buf;
        s.b.shadow.record(s.clocks, agent, op.pc, off, 16, true);
    }
    let row = s.clocks.row(agent);
    let done = s.b.mbar_update(s.env, copy.mbar, |m| {
        m.collect(row);
        m.complete_tx(copy.bytes)
    });
    s.clocks.tick(agent);
    done.map(drop)
}

/// Completes a bulk copy to global memory: reads its shared source now,
/// as the block's asynchronous unit.
pub(super) fn complete_store(s: &mut Side<'_>, op: &AsyncOp, st: &Store) -> Result<(), Fault> {
    let agent = s.b.agent;
    s.b.shadow.record(s.clocks, agent, op.pc, st.src, st.len, false);
    s.clocks.tick(agent);
    let mut hint = 0;
    let k = s
        .mem
        .locate(st.dst, st.len as u64, &mut hint)
        .map_err(|f| f.describe("cp.async.bulk destination write", st.dst, st.len))?;
    let dst = s
        .mem
        .bytes_mut(k, st.dst, st.len)
        .map_err(|f| f.describe("cp.async.bulk destination write", st.dst, st.len))?;
    dst.copy_from_slice(&s.b.shared[st.src..st.src + st.len]);
    s.mem.order.async_write(st.dst, st.len);
    Ok(())
}

/// Non-tensor bulk copies, one per executing lane.
fn exec_bulk(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dst = values(c, &i.addrs[0])?;
    let src = values(c, &i.addrs[1])?;
    let size = c.src(&i.s[0])?;
    let bar = if i.sub == G2S { values(c, &i.addrs[2])? } else { [0; 32] };
    for l in lanes(c.exec) {
        let n = (size[l] & 0xFFFF_FFFF) as u32;
        if !n.is_multiple_of(16) {
            return Err(Fault::lane(
                l,
                format!("cp.async.bulk size {n} is not a multiple of 16"),
            ));
        }
        if i.sub == G2S {
            if !src[l].is_multiple_of(16) {
                return Err(Fault::lane(
                    l,
                    format!("cp.async.bulk source {:#x} is not 16-byte aligned", src[l]),
                ));
            }
            let (_, off) = shared_operand(c, l, dst[l], Space::Shared, n, 16, "cp.async.bulk destination")?;
            c.check_origin(l, src[l], n, "cp.async.bulk source read")?;
            c.global_check(l, src[l], n as usize, false, "cp.async.bulk source read")?;
            let b = mbar_at_shared(c, l, bar[l])?;
            let chunks = (0..n / 16)
                .map(|k| Chunk {
                    off: (off as u32) + 16 * k,
                    src: src[l] + u64::from(16 * k),
                    at: 0,
                    len: 16,
                })
                .collect();
            copy_in(c, l, chunks, b, u64::from(n))?;
        } else {
            if !dst[l].is_multiple_of(16) {
                return Err(Fault::lane(
                    l,
                    format!("cp.async.bulk destination {:#x} is not 16-byte aligned", dst[l]),
                ));
            }
            let (_, off) = shared_operand(c, l, src[l], Space::Shared, n, 16, "cp.async.bulk source")?;
            c.check_origin(l, dst[l], n, "cp.async.bulk destination write")?;
            c.global_check(l, dst[l], n as usize, true, "cp.async.bulk destination write")?;
            c.global_write(l, dst[l], &vec![POISON; n as usize], "cp.async.bulk destination write")?;
            let offs: Vec<u32> = (0..n / 16).map(|k| off as u32 + 16 * k).collect();
            c.check_async(l, &offs, false)?;
            let id = c.b.next_op();
            let size = c.b.shared.len();
            let span = c.b.inflight.add(c.w.group_pc, c.thread_of(l), false, &offs, size);
            let store = Store {
                src: off,
                dst: dst[l],
                len: n as usize,
                group: None,
            };
            c.issue(l, id, vec![span], Work::Store(store), false)?;
        }
    }
    Ok(Flow::Next)
}

fn mbar_at_shared(c: &mut Ctx<'_>, lane: usize, v: u64) -> Result<u32, Fault> {
    Ok(shared_operand(c, lane, v, Space::Shared, 8, 8, "mbarrier")?.0)
}

/// Reads the tensor map at a generic address (parameter space, global
/// memory or shared memory).
fn read_map(c: &mut Ctx<'_>, lane: usize, addr: u64) -> Result<TensorMap2d, Fault> {
    if !addr.is_multiple_of(64) {
        return Err(Fault::lane(
            lane,
            format!("the tensor map address {addr:#x} is not 64-byte aligned"),
        ));
    }
    let mut bytes = [0u8; 128];
    for half in 0..2 {
        let a = addr + 64 * half as u64;
        let loc = super::mem::locate(c, Space::Generic, lane, a, 64, "tensor map read")?;
        super::mem::read(
            c,
            lane,
            loc,
            &mut bytes[64 * half..64 * half + 64],
            Check::Plain,
            "tensor map read",
        )?;
    }
    let map = TensorMap2d::decode(&bytes).ok_or_else(|| {
        Fault::lane(
            lane,
            format!(
                "the 128 bytes at {addr:#x} are not an emulator tensor map (build it with nvfp4_dsl::emu::TensorMap2d::encode)"
            ),
        )
    })?;
    map.validate().map_err(|m| Fault::lane(lane, m))?;
    Ok(map)
}

/// `cp.async.bulk.tensor.2d` global -> shared, one copy per executing
/// lane: the box at `{c0, c1}` with out-of-bounds bytes zero, written with
/// the map's swizzle, then `complete_tx` of the full box on the mbarrier.
fn exec_tensor(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dst = values(c, &i.addrs[0])?;
    let map_at = values(c, &i.addrs[1])?;
    let bar = values(c, &i.addrs[2])?;
    let c0 = c.src(&i.v[0])?;
    let c1 = c.src(&i.v[1])?;
    for l in lanes(c.exec) {
        let map = read_map(c, l, map_at[l])?;
        let (x0, y0) = (i64::from(c0[l] as u32 as i32), i64::from(c1[l] as u32 as i32));
        let (bw, bh) = (map.box_bytes, map.box_rows);
        let total = bw * bh;
        let align = if map.swizzle == 128 { 1024 } else { 128 };
        let d = (dst[l] & 0xFFFF_FFFF) as u32;
        if !d.is_multiple_of(align) {
            return Err(Fault::lane(
                l,
                format!(
                    "tensor copy destination {d:#x} is not {align}-byte aligned{}",
                    if align == 1024 { " (128-byte swizzle)" } else { "" }
                ),
            ));
        }
        let mut chunks = Vec::with_capacity((total / 16) as usize);
        for r in 0..bh {
            let y = y0 + i64::from(r);
            for chunk in 0..bw / 16 {
                let lin = d + r * bw + chunk * 16;
                let a = swizzle(lin, u32::from(map.swizzle));
                let off = c.shared_at(l, u64::from(a), 16, "tensor copy write")? as u32;
                let x = x0 + i64::from(chunk * 16);
                let (lo, hi) = (x.max(0), (x + 16).min(map.row_bytes as i64));
                let mut ch = Chunk {
                    off,
                    src: 0,
                    at: 0,
                    len: 0,
                };
                if (0..map.rows as i64).contains(&y) && lo < hi {
                    ch.src = map.base + y as u64 * map.row_stride + lo as u64;
                    ch.at = (lo - x) as u8;
                    ch.len = (hi - lo) as u8;
                    c.global_check(l, ch.src, usize::from(ch.len), false, "tensor copy read")?;
                }
                chunks.push(ch);
            }
        }
        let b = mbar_at_shared(c, l, bar[l])?;
        copy_in(c, l, chunks, b, u64::from(total))?;
    }
    Ok(Flow::Next)
}
