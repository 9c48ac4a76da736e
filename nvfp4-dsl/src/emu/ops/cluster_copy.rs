//! `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes`:
//! a bulk copy from the issuing block's shared memory into another block of
//! its cluster, completing on an mbarrier of that block.
//!
//! At the issue the copy is checked (sizes, alignment, both ranges inside
//! one shared variable, the destination and the mbarrier in the same other
//! block, which has started and not exited, the mbarrier initialised and
//! published) and put in flight in the issuing block: its source may not be
//! written there, and its destination, poisoned, may not be touched in the
//! other block until it completes, at a point the schedule picks. Then it
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
        let Some(rank) = rank else {
            return Err(Fault::lane(
                l,
                "cp.async.bulk into the cluster: the destination is in the issuing block; the emulator supports this copy into another block of the cluster only (within a block, copy with loads and stores)".to_string(),
            ));
        };
        if bar_rank != Some(rank) {
            return Err(Fault::lane(
                l,
                format!(
                    "cp.async.bulk into the cluster: the mbarrier {:#x} must be in the destination's block (rank {rank}) and is not",
                    bar[l]
                ),
            ));
        }
        let (_, src_off) = shared_operand(c, l, src[l], Space::Shared, n, 16, "cp.async.bulk source")?;
        let src_offs: Vec<u32> = (0..n / 16).map(|k| src_off as u32 + 16 * k).collect();
        let dst_offs: Vec<u32> = (0..n / 16).map(|k| dst_off as u32 + 16 * k).collect();
        let mbar = bar_off as u32 + crate::emu::layout::SHARED_BASE;
        check_published(c, l, Some(rank), mbar)?;
        c.check_async(l, &src_offs, false)?;
        c.check_peer_async_write(l, rank, &dst_offs)?;
        let pc = c.w.group_pc;
        let thread = c.thread_of(l);
        let peer = c.peer(rank);
        peer.shared[dst_off..dst_off + n as usize].fill(POISON);
        let size = peer.shared.len();
        let dst_span = peer.inflight.add(pc, thread, true, &dst_offs, size);
        let id = c.b.next_op();
        let size = c.b.shared.len();
        let src_span = c.b.inflight.add(pc, thread, false, &src_offs, size);
        let copy = PeerCopy {
            rank,
            src: src_off,
            dst: dst_off,
            len: n as usize,
            mbar,
            dst_span,
        };
        c.issue(l, id, vec![src_span], Work::PeerCopy(copy), true)?;
    }
    Ok(Flow::Next)
}

/// Completes a copy into another block: its source read and its
/// destination written by the issuing block's asynchronous unit (which
/// knows what the issuer knew at the issue), then its transaction bytes
/// and the unit's clock reach the other block's mbarrier.
pub(super) fn complete(s: &mut Side<'_>, op: &AsyncOp, copy: &PeerCopy) -> Result<(), Fault> {
    let Some(peer) = s.peer.as_deref_mut() else {
        return Err(Fault::new(
            "internal: a copy into another block of the cluster completed without that block".to_string(),
        ));
    };
    if peer.exited {
        return Err(Fault::new(format!(
            "block {} of the cluster exited before this copy into its shared memory completed: it must wait on the mbarrier the copy completes on",
            peer.id()
        )));
    }
    let agent = s.b.agent;
    s.clocks.acquire(agent, &op.clock);
    s.b.shadow.record(s.clocks, agent, op.pc, copy.src, copy.len, false);
    peer.shared[copy.dst..copy.dst + copy.len].copy_from_slice(&s.b.shared[copy.src..copy.src + copy.len]);
    peer.shadow.record(s.clocks, agent, op.pc, copy.dst, copy.len, true);
    peer.inflight.remove(copy.dst_span);
    let row = s.clocks.row(agent);
    let done = peer.mbar_update(s.env, copy.mbar, |m| {
        m.collect(row);
        m.complete_tx(copy.len as u64)
    });
    s.clocks.tick(agent);
    done.map(drop)
}
