//! `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes`:
//! a bulk copy from the issuing block's shared memory into a block of its
//! cluster (another one, or itself), completing on an mbarrier of that
//! block; and `st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32`,
//! the same for 16 bytes of registers (checked and completed alike, but it
//! reads nothing of its block, which may exit before it lands: it is
//! completed then).
//!
//! At the issue the copy is checked (sizes, alignment, both ranges inside
//! one shared variable, the destination and the mbarrier in the same
//! block, which has started and not exited, the mbarrier initialised and
//! published) and put in flight in the issuing block: its source may not be
//! written there, and its destination, poisoned, may not be touched in its
//! block until it completes, at a point the schedule picks. Then it
//! reads its source, writes its destination and completes its transaction
//! bytes on the mbarrier, releasing the issuer's clock at the issue; the
//! issuing block may not exit before (its shared memory would go).

use crate::emu::ctx::{Ctx, Side};
use crate::emu::decode::Dec;
use crate::emu::inst::{Fault, Flow, Inst, Mods, Space, Ty};
use crate::emu::layout::POISON;
use crate::emu::pending::{AsyncOp, PeerCopy, PeerSource, Work};
use crate::emu::state::lanes;

use super::bulk::shared_operand;
use super::mbarrier::check_published;
use super::mem::address_values;

type X = Result<Flow, Fault>;

/// Decodes the operands `[dst], [src], size, [mbar]`.
pub(super) fn decode(d: &Dec<'_>) -> Result<Inst, String> {
    d.count(4)?;
    let mut i = Inst::new(exec);
    i.addrs = vec![d.addr(0, false)?, d.addr(1, false)?, d.addr(3, false)?].into_boxed_slice();
    i.s[0] = d.src(2, Ty::U32)?;
    Ok(i)
}

fn exec(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dst = address_values(c, &i.addrs[0])?;
    let src = address_values(c, &i.addrs[1])?;
    let bar = address_values(c, &i.addrs[2])?;
    let size = c.src(&i.s[0])?;
    for l in lanes(c.exec) {
        let n = (size[l] & 0xFFFF_FFFF) as u32;
        if n == 0 || !n.is_multiple_of(16) {
            return Err(Fault::lane(
                l,
                format!("cp.async.bulk size {n} is not a positive multiple of 16"),
            ));
        }
        let what = ("cp.async.bulk into the cluster", "cp.async.bulk destination");
        let (rank, dst_off, mbar) = destination(c, l, dst[l], bar[l], n, what)?;
        let (_, src_off) = shared_operand(c, l, src[l], Space::Shared, n, 16, "cp.async.bulk source")?;
        let src_offs: Vec<u32> = (0..n / 16).map(|k| src_off as u32 + 16 * k).collect();
        c.check_async(l, &src_offs, false)?;
        let size = c.b.shared.len();
        let src_span = c.b.inflight.add(c.w.group_pc, c.thread_of(l), false, &src_offs, size);
        put_in_flight(
            c,
            l,
            PeerSource::Shared(src_off),
            (rank, dst_off, n),
            mbar,
            vec![src_span],
        )?;
    }
    Ok(Flow::Next)
}

/// Decodes `st.async` (after its name and `.async`): the operands `[dst],
/// {a, b, c, d}, [mbar]` of the only form emulated, 16 bytes.
pub(super) fn decode_store(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    m.take("weak");
    let form = ["shared::cluster", "mbarrier::complete_tx::bytes", "v4", "b32"]
        .iter()
        .all(|p| m.take(p));
    if !form || !m.rest().is_empty() {
        return Err("only `st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32` is emulated".into());
    }
    d.count(3)?;
    let mut i = Inst::new(exec_store);
    i.addrs = vec![d.addr(0, false)?, d.addr(2, false)?].into_boxed_slice();
    let parts = d.vec(1)?;
    if parts.len() != 4 {
        return Err("`.v4` needs 4 values".into());
    }
    i.v = parts
        .iter()
        .map(|p| d.src_arg(p, Ty::B32))
        .collect::<Result<Vec<_>, _>>()?
        .into_boxed_slice();
    Ok(i)
}

fn exec_store(c: &mut Ctx<'_>, i: &Inst) -> X {
    let dst = address_values(c, &i.addrs[0])?;
    let bar = address_values(c, &i.addrs[1])?;
    let mut vals = [[0u64; 32]; 4];
    for (k, op) in i.v.iter().enumerate() {
        vals[k] = c.src(op)?;
    }
    for l in lanes(c.exec) {
        let (rank, dst_off, mbar) = destination(c, l, dst[l], bar[l], 16, ("st.async", "st.async destination"))?;
        let mut bytes = [0u8; 16];
        for (k, v) in vals.iter().enumerate() {
            bytes[4 * k..4 * k + 4].copy_from_slice(&(v[l] as u32).to_le_bytes());
        }
        put_in_flight(c, l, PeerSource::Values(bytes), (rank, dst_off, 16), mbar, Vec::new())?;
    }
    Ok(Flow::Next)
}

/// Checks lane `l`'s destination `dst` of `n` bytes and its mbarrier `bar`
/// (aligned, in one block of the cluster that has started, the mbarrier
/// initialised and published), named in errors by `what`'s operation and
/// destination: that block's rank (`None`: the issuing block), the
/// destination's offset there and the mbarrier's shared-window address.
fn destination(
    c: &mut Ctx<'_>,
    l: usize,
    dst: u64,
    bar: u64,
    n: u32,
    (what, dst_what): (&str, &str),
) -> Result<(Option<u32>, usize, u32), Fault> {
    if !dst.is_multiple_of(16) || !bar.is_multiple_of(8) {
        return Err(Fault::lane(
            l,
            format!("{what}: destination {dst:#x} must be 16-byte aligned and its mbarrier {bar:#x} 8-byte aligned"),
        ));
    }
    let (rank, dst_off) = c.cluster_shared_at(l, dst, n, dst_what)?;
    let (bar_rank, bar_off) = c.cluster_shared_at(l, bar, 8, "mbarrier")?;
    if bar_rank != rank {
        let whose = rank.map_or("the issuing block".to_string(), |r| format!("rank {r}"));
        return Err(Fault::lane(
            l,
            format!("{what}: the mbarrier {bar:#x} must be in the destination's block ({whose}) and is not"),
        ));
    }
    let mbar = bar_off as u32 + crate::emu::layout::SHARED_BASE;
    check_published(c, l, rank, mbar)?;
    Ok((rank, dst_off, mbar))
}

/// Issues lane `l`'s copy of `src` into `n` bytes at offset `dst_off` of
/// block `rank`, completing on `mbar`: the destination poisoned and its
/// write in flight in the block it lives in (this one, or the other,
/// which the completion releases), beside the issuing block's `spans`.
fn put_in_flight(
    c: &mut Ctx<'_>,
    l: usize,
    src: PeerSource,
    (rank, dst_off, n): (Option<u32>, usize, u32),
    mbar: u32,
    mut spans: Vec<u64>,
) -> Result<(), Fault> {
    let dst_offs: Vec<u32> = (0..n / 16).map(|k| dst_off as u32 + 16 * k).collect();
    let pc = c.w.group_pc;
    let thread = c.thread_of(l);
    let dst_span = match rank {
        None => {
            c.check_async(l, &dst_offs, true)?;
            c.b.shared[dst_off..dst_off + n as usize].fill(POISON);
            let size = c.b.shared.len();
            spans.push(c.b.inflight.add(pc, thread, true, &dst_offs, size));
            None
        }
        Some(r) => {
            c.check_peer_async_write(l, r, &dst_offs)?;
            let peer = c.peer(r);
            peer.shared[dst_off..dst_off + n as usize].fill(POISON);
            let size = peer.shared.len();
            Some(peer.inflight.add(pc, thread, true, &dst_offs, size))
        }
    };
    let id = c.b.next_op();
    let copy = PeerCopy {
        rank,
        src,
        dst: dst_off,
        len: n as usize,
        mbar,
        dst_span,
    };
    c.issue(l, id, spans, Work::PeerCopy(copy), true)
}

/// Completes a copy into a block of the cluster: its source read and its
/// destination written by the issuing block's asynchronous unit (which
/// knows what the issuer knew at the issue), then its transaction bytes
/// and the unit's clock reach the destination block's mbarrier.
pub(super) fn complete(s: &mut Side<'_>, op: &AsyncOp, copy: &PeerCopy) -> Result<(), Fault> {
    let agent = s.b.agent;
    s.clocks.acquire(agent, &op.clock);
    let len = copy.len;
    if let PeerSource::Shared(src) = copy.src {
        s.b.shadow.record(s.clocks, agent, op.pc, src, len, false);
    }
    let dst = match (copy.dst_span, s.peer.as_deref_mut()) {
        (None, _) => {
            match &copy.src {
                PeerSource::Shared(src) => s.b.shared.copy_within(*src..*src + len, copy.dst),
                PeerSource::Values(v) => s.b.shared[copy.dst..copy.dst + len].copy_from_slice(&v[..len]),
            }
            &mut *s.b
        }
        (Some(span), Some(peer)) => {
            if peer.exited {
                return Err(Fault::new(format!(
                    "block {} of the cluster exited before this copy into its shared memory completed: it must wait on the mbarrier the copy completes on",
                    peer.id()
                )));
            }
            let bytes = match &copy.src {
                PeerSource::Shared(src) => &s.b.shared[*src..*src + len],
                PeerSource::Values(v) => &v[..len],
            };
            peer.shared[copy.dst..copy.dst + len].copy_from_slice(bytes);
            peer.inflight.remove(span);
            peer
        }
        (Some(_), None) => {
            return Err(Fault::new(
                "internal: a copy into another block of the cluster completed without that block".to_string(),
            ));
        }
    };
    dst.shadow.record(s.clocks, agent, op.pc, copy.dst, len, true);
    let row = s.clocks.row(agent);
    let done = dst.mbar_update(s.env, copy.mbar, |m| {
        m.collect(row);
        m.complete_tx(len as u64)
    });
    s.clocks.tick(agent);
    done.map(drop)
}
