//! `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes`:
//! a bulk copy from the issuing block's shared memory into a block of its
//! cluster (another one, or itself), completing on an mbarrier of that
//! block.
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
use crate::emu::inst::{Fault, Flow, Inst, Space, Ty};
use crate::emu::layout::POISON;
use crate::emu::pending::{AsyncOp, PeerCopy, Work};
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
        if !dst[l].is_multiple_of(16) || !bar[l].is_multiple_of(8) {
            return Err(Fault::lane(
                l,
                format!(
                    "cp.async.bulk into the cluster: destination {:#x} must be 16-byte aligned and its mbarrier {:#x} 8-byte aligned",
                    dst[l], bar[l]
                ),
            ));
        }
        let (rank, dst_off) = c.cluster_shared_at(l, dst[l], n, "cp.async.bulk destination")?;
        let (bar_rank, bar_off) = c.cluster_shared_at(l, bar[l], 8, "mbarrier")?;
        if bar_rank != rank {
            let whose = rank.map_or("the issuing block".to_string(), |r| format!("rank {r}"));
            return Err(Fault::lane(
                l,
                format!(
                    "cp.async.bulk into the cluster: the mbarrier {:#x} must be in the destination's block ({whose}) and is not",
                    bar[l]
                ),
            ));
        }
        let (_, src_off) = shared_operand(c, l, src[l], Space::Shared, n, 16, "cp.async.bulk source")?;
        let src_offs: Vec<u32> = (0..n / 16).map(|k| src_off as u32 + 16 * k).collect();
        let dst_offs: Vec<u32> = (0..n / 16).map(|k| dst_off as u32 + 16 * k).collect();
        let mbar = bar_off as u32 + crate::emu::layout::SHARED_BASE;
        check_published(c, l, rank, mbar)?;
        c.check_async(l, &src_offs, false)?;
        let pc = c.w.group_pc;
        let thread = c.thread_of(l);
        let size = c.b.shared.len();
        let src_span = c.b.inflight.add(pc, thread, false, &src_offs, size);
        let mut spans = vec![src_span];
        // The destination's write in flight: in the block the copy lives in
        // (its own), or in the other block, which the completion releases.
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
            src: src_off,
            dst: dst_off,
            len: n as usize,
            mbar,
            dst_span,
        };
        c.issue(l, id, spans, Work::PeerCopy(copy), true)?;
    }
    Ok(Flow::Next)
}

/// Completes a copy into a block of the cluster: its source read and its
/// destination written by the issuing block's asynchronous unit (which
/// knows what the issuer knew at the issue), then its transaction bytes
/// and the unit's clock reach the destination block's mbarrier.
pub(super) fn complete(s: &mut Side<'_>, op: &AsyncOp, copy: &PeerCopy) -> Result<(), Fault> {
    let agent = s.b.agent;
    s.clocks.acquire(agent, &op.clock);
    s.b.shadow.record(s.clocks, agent, op.pc, copy.src, copy.len, false);
    let (src, len) = (copy.src, copy.len);
    let dst = match (copy.dst_span, s.peer.as_deref_mut()) {
        (None, _) => {
            s.b.shared.copy_within(src..src + len, copy.dst);
            &mut *s.b
        }
        (Some(span), Some(peer)) => {
            if peer.exited {
                return Err(Fault::new(format!(
                    "block {} of the cluster exited before this copy into its shared memory completed: it must wait on the mbarrier the copy completes on",
                    peer.id()
                )));
            }
            peer.shared[copy.dst..copy.dst + len].copy_from_slice(&s.b.shared[src..src + len]);
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
