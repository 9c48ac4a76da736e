//! The executors' memory accesses through `Ctx`: shared memory (of the
//! executing block, or of another block of its cluster), checked against
//! asynchronous operations in flight and for races, and global memory.

use super::{Ctx, Peers};
use crate::emu::diag::{
    busy_message, describe_regions, global_race_message, global_unfenced_message, hazard_message, pdl_message,
};
use crate::emu::gorder;
use crate::emu::inst::Fault;
use crate::emu::layout::{CLUSTER_SHIFT, SHARED_BASE, SHARED_WINDOW};
use crate::emu::origin::Origin;
use crate::emu::race::{Check, Clocks, Kind};
use crate::emu::state::{Block, lanes};

impl Ctx<'_> {
    /// Checks a generic access of bytes `off..off + len` by `lane` of the
    /// shared memory of the executing block (`rank` None) or of block
    /// `rank` of the cluster: it may not touch bytes an asynchronous
    /// operation in flight writes (or, writing, reads), and, as `check`
    /// says, it may not race with another thread's access.
    #[inline]
    fn check_shared(
        &mut self,
        lane: usize,
        rank: Option<u32>,
        off: usize,
        len: usize,
        write: bool,
        check: Check,
    ) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let pc = self.w.group_pc;
        let me = self.b.rank;
        let b = match rank {
            None => &mut *self.b,
            Some(r) => peer_in(&mut self.peers, me, r),
        };
        if b.inflight.active()
            && let Some(busy) = b.inflight.conflict(off, len, write)
        {
            let whose = rank.map(|_| b.id());
            return Err(Fault::lane(lane, busy_message(self.env, &busy, pc, write, whose)).citing(busy.pc));
        }
        let kind = match (check, write) {
            (Check::Strong, _) => {
                return b.shadow.strong(&self.cl.clocks, off, len, write).map_err(|h| {
                    let whose = rank.map(|_| b.id());
                    Fault::lane(lane, hazard_message(self.env, me, &h, pc, Kind::Read, whose))
                });
            }
            (Check::Atomic, _) => Kind::Atomic,
            (Check::Plain, true) => Kind::Write,
            (Check::Plain, false) => Kind::Read,
        };
        match b.shadow.access(&self.cl.clocks, t, pc, off, len, kind) {
            Ok(()) => Ok(()),
            Err(h) => {
                let whose = rank.map(|_| b.id());
                Err(Fault::lane(lane, hazard_message(self.env, me, &h, pc, kind, whose)).citing(h.cited_pc()))
            }
        }
    }

    /// Reads `buf.len()` bytes at offset `off` of the shared buffer of the
    /// executing block (`rank` None) or of block `rank` of the cluster,
    /// for `lane`, after [`check_shared`](Ctx::check_shared).
    #[inline]
    pub fn shared_read(
        &mut self,
        lane: usize,
        rank: Option<u32>,
        off: usize,
        buf: &mut [u8],
        check: Check,
    ) -> Result<(), Fault> {
        self.check_shared(lane, rank, off, buf.len(), false, check)?;
        let me = self.b.rank;
        let b = match rank {
            None => &*self.b,
            Some(r) => &*peer_in(&mut self.peers, me, r),
        };
        buf.copy_from_slice(&b.shared[off..off + buf.len()]);
        Ok(())
    }

    /// Writes `data` for `lane` at offset `off` of the shared buffer of the
    /// executing block (`rank` None) or of block `rank` of the cluster,
    /// after [`check_shared`](Ctx::check_shared).
    #[inline]
    pub fn shared_write(
        &mut self,
        lane: usize,
        rank: Option<u32>,
        off: usize,
        data: &[u8],
        check: Check,
    ) -> Result<(), Fault> {
        self.check_shared(lane, rank, off, data.len(), true, check)?;
        let me = self.b.rank;
        let b = match rank {
            None => &mut *self.b,
            Some(r) => peer_in(&mut self.peers, me, r),
        };
        b.shared[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Checks an asynchronous operation's access, at its issue by `lane`,
    /// of the executing block's shared bytes at offsets `offs` (16 bytes
    /// each): no operation in flight may write them (or, for a write,
    /// read them), and the issuing thread must be ordered after every
    /// earlier access (and, reading, after a `fence.proxy.async` that
    /// follows every generic write of them).
    pub fn check_async(&mut self, lane: usize, offs: &[u32], write: bool) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let pc = self.w.group_pc;
        let kind = if write { Kind::AsyncWrite } else { Kind::AsyncRead };
        // Without the clocks (the fast mode) the shadow checks nothing.
        let clocks = self.cl.clocks.on();
        for &off in offs {
            let off = off as usize;
            if self.b.inflight.active()
                && let Some(busy) = self.b.inflight.conflict(off, 16, write)
            {
                return Err(Fault::lane(lane, busy_message(self.env, &busy, pc, write, None)).citing(busy.pc));
            }
            if clocks && let Err(h) = self.b.shadow.access(&self.cl.clocks, t, pc, off, 16, kind) {
                return Err(
                    Fault::lane(lane, hazard_message(self.env, self.b.rank, &h, pc, kind, None)).citing(h.cited_pc()),
                );
            }
        }
        Ok(())
    }

    /// [`check_async`](Ctx::check_async) for a write of block `rank`'s
    /// shared bytes at offsets `offs` by an asynchronous operation that
    /// `lane` issues now (a bulk copy into another block of the cluster).
    pub fn check_peer_async_write(&mut self, lane: usize, rank: u32, offs: &[u32]) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let pc = self.w.group_pc;
        let me = self.b.rank;
        let clocks = self.cl.clocks.on();
        let b = peer_in(&mut self.peers, me, rank);
        let whose = Some(b.id());
        for &off in offs {
            let off = off as usize;
            if b.inflight.active()
                && let Some(busy) = b.inflight.conflict(off, 16, true)
            {
                return Err(Fault::lane(lane, busy_message(self.env, &busy, pc, true, whose)).citing(busy.pc));
            }
            if clocks && let Err(h) = b.shadow.access(&self.cl.clocks, t, pc, off, 16, Kind::AsyncWrite) {
                return Err(
                    Fault::lane(lane, hazard_message(self.env, me, &h, pc, Kind::AsyncWrite, whose))
                        .citing(h.cited_pc()),
                );
            }
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes of global memory for a lane.
    #[inline]
    pub fn global_read(&mut self, lane: usize, addr: u64, buf: &mut [u8], what: &str) -> Result<(), Fault> {
        let n = buf.len();
        match self.mem.locate(addr, n as u64, &mut self.hint) {
            Ok(i) => {
                self.touch(lane, i, addr, n, false, what)?;
                buf.copy_from_slice(self.mem.bytes(i, addr, n));
                Ok(())
            }
            Err(f) => Err(Fault::lane(lane, f.describe(what, addr, n))),
        }
    }

    /// Checks `lane`'s access of `len` bytes of global memory at `addr`
    /// for a race with another thread of the launch, and does what its
    /// memory order asks (see `gorder`).
    pub fn global_order(&mut self, lane: usize, addr: u64, len: usize, kind: gorder::Kind) -> Result<(), Fault> {
        let t = self.thread_index(lane);
        let pc = self.w.group_pc;
        match self.mem.order.access(&mut self.cl.clocks, t, pc, addr, len, kind) {
            Ok(()) => Ok(()),
            Err(race) => Err(
                Fault::lane(lane, global_race_message(self.env, &self.mem.order, &race, kind)).citing(race.earlier.pc),
            ),
        }
    }

    /// Checks that `len` bytes of global memory at `addr`, which an
    /// asynchronous operation of `lane` will access later, are inside one
    /// live allocation (and writable, if `write`). Where the launch's
    /// global memory is race-checked (`gorder`), a read (a bulk or tensor
    /// copy's source) is checked there as the lane's plain read at its
    /// issue: bytes another thread of the launch wrote must be ordered
    /// before it (a release that thread made and this lane acquired), and
    /// so must the writer's `fence.proxy.async` of global memory after
    /// its write.
    pub fn global_check(&mut self, lane: usize, addr: u64, len: usize, write: bool, what: &str) -> Result<(), Fault> {
        if !write && self.mem.order.on() {
            self.global_order(lane, addr, len, gorder::Kind::Read)?;
            let t = self.thread_index(lane);
            if let Err(u) = self.mem.order.proxy_check(&self.cl.clocks, t, addr, len) {
                return Err(
                    Fault::lane(lane, global_unfenced_message(self.env, &self.mem.order, &u, what))
                        .citing(u.write.pc)
                        .citing(u.fence_pc),
                );
            }
        }
        let r = self.mem.locate(addr, len as u64, &mut self.hint).and_then(|i| {
            if write {
                self.mem.bytes_mut(i, addr, len).map(|_| i)
            } else {
                Ok(i)
            }
        });
        let i = r.map_err(|f| Fault::lane(lane, f.describe(what, addr, len)))?;
        self.touch(lane, i, addr, len, write, what)
    }

    /// Writes bytes of global memory for a lane.
    #[inline]
    pub fn global_write(&mut self, lane: usize, addr: u64, data: &[u8], what: &str) -> Result<(), Fault> {
        let n = data.len();
        let r = self
            .mem
            .locate(addr, n as u64, &mut self.hint)
            .and_then(|i| self.mem.bytes_mut(i, addr, n));
        match r {
            Ok(dst) => {
                dst.copy_from_slice(data);
                let i = self.hint;
                self.touch(lane, i, addr, n, true, what)
            }
            Err(f) => Err(Fault::lane(lane, f.describe(what, addr, n))),
        }
    }

    /// Records `lane`'s access of `len` bytes of global memory at `addr`
    /// (in allocation `i`) for the next launch, and fails if the launch is
    /// a programmatic dependent, the lane is not ordered after a
    /// `griddepcontrol.wait` (its own, or one of a thread it synchronised
    /// with since: the vector clocks tell), and the bytes conflict with
    /// its predecessor's accesses (see `pdl`). The fast mode, which keeps
    /// no clocks, neither records nor checks.
    #[inline]
    pub fn touch(
        &mut self,
        lane: usize,
        i: usize,
        addr: u64,
        len: usize,
        write: bool,
        what: &str,
    ) -> Result<(), Fault> {
        let check = self.mem.pdl.before.any() && self.w.pdl_waited & (1 << lane) == 0;
        let Some(c) = self.mem.touch(i, addr, len, write, check) else {
            return Ok(());
        };
        if !c.unfinished && self.cl.after_pdl_wait(self.thread_index(lane)) {
            self.w.pdl_waited |= 1 << lane;
            return Ok(());
        }
        if !c.unfinished
            && self
                .mem
                .predecessor_acquired(i, addr, len, write, self.thread_index(lane))
        {
            return Ok(());
        }
        let pdl = &self.mem.pdl;
        let running = if c.unfinished { &pdl.unfinished } else { &pdl.before };
        Err(Fault::lane(
            lane,
            pdl_message(what, (addr, len, write), &c, &running.entries),
        ))
    }

    /// [`touch`](Ctx::touch) for every executing lane's `len` bytes at
    /// `addr[lane]`, all in allocation `i`: one range when nothing is
    /// checked and the lanes' accesses lie back to back in lane order (a
    /// warp's usual access).
    #[inline]
    pub fn touch_warp(&mut self, i: usize, addr: &[u64; 32], len: usize, write: bool, what: &str) -> Result<(), Fault> {
        if !self.mem.pdl.on {
            return Ok(());
        }
        let exec = self.exec;
        if !self.mem.pdl.unfinished.any() && (!self.mem.pdl.before.any() || exec & !self.w.pdl_waited == 0) {
            let mut ls = lanes(exec);
            if let Some(first) = ls.next() {
                let mut end = addr[first] + len as u64;
                if ls.all(|l| {
                    let next = addr[l] == end;
                    end += len as u64;
                    next
                }) {
                    self.mem
                        .touch(i, addr[first], (end - addr[first]) as usize, write, false);
                    return Ok(());
                }
            }
        }
        for l in lanes(exec) {
            self.touch(l, i, addr[l], len, write, what)?;
        }
        Ok(())
    }

    /// Checks an `ld`/`st`/`atom`/`red` of `[addr, addr + len)` (or a bulk
    /// copy's global bytes) against the shared array or the view its
    /// address was computed from (see `origin`); an address of another
    /// block of the cluster, or a parameter that holds no view of this
    /// launch, is not checked here.
    pub fn check_origin(&self, lane: usize, addr: u64, len: u32, what: &str) -> Result<(), Fault> {
        let end = addr + u64::from(len);
        match self.env.entry.origins[self.w.group_pc as usize] {
            Origin::None => Ok(()),
            Origin::Shared(k) => {
                let a = if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&addr) {
                    addr - SHARED_WINDOW
                } else {
                    addr
                };
                let Some(&(s, e)) = self.env.regions.get(usize::from(k)).filter(|_| a >> CLUSTER_SHIFT == 0) else {
                    return Ok(());
                };
                if a >= u64::from(s) && a + u64::from(len) <= u64::from(e) {
                    return Ok(());
                }
                let names = &self.env.entry.shared_names;
                let lands = self
                    .env
                    .regions
                    .iter()
                    .zip(names)
                    .find(|((s, e), _)| a >= u64::from(*s) && a < u64::from(*e))
                    .map_or(String::new(), |(_, n)| format!(", in `{n}`"));
                let name = &names[usize::from(k)];
                // The dynamic block's regions follow the static ones.
                let dynamic = usize::from(k) >= self.env.entry.regions.len();
                let hint = if s == e && dynamic {
                    "; the launch gave the kernel no dynamic shared memory: launch with `LaunchConfig::with_shared_bytes(bytes)`"
                } else {
                    ""
                };
                Err(Fault::lane(
                    lane,
                    format!(
                        "{what} of {len} bytes at shared address {a:#x} is out of bounds of `{name}` ({s:#x}..{e:#x}, {} bytes), the shared array its address was computed from: byte offset {} of it{lands}{hint}",
                        e - s,
                        a as i64 - i64::from(s)
                    ),
                ))
            }
            Origin::Param(p) => {
                let param = &self.env.entry.params[usize::from(p)];
                let at = param.offset as usize;
                let mut word = [0u8; 8];
                word.copy_from_slice(&self.env.params[at..at + 8]);
                let Some((s, e)) = self.mem.view_at(u64::from_le_bytes(word)) else {
                    return Ok(());
                };
                if addr >= s && end <= e {
                    return Ok(());
                }
                let name = param
                    .name
                    .rsplit_once("_param_")
                    .map_or(param.name.as_str(), |(_, n)| n);
                // A copy of many bytes may start inside the view and end past it.
                let start = addr as i128 - i128::from(s);
                let at = if (0..i128::from(e - s)).contains(&start) {
                    format!("bytes {start}..{} of it, past its end", start + i128::from(len))
                } else {
                    format!("byte offset {start} of it")
                };
                Err(Fault::lane(
                    lane,
                    format!(
                        "{what} of {len} bytes at {addr:#x} is out of bounds of the view passed as `{name}` ({s:#x}..{e:#x}, {} bytes), which its address was computed from: {at}",
                        e - s,
                    ),
                ))
            }
        }
    }

    /// Another block of the cluster, by rank.
    pub fn peer(&mut self, rank: u32) -> &mut Block {
        peer_in(&mut self.peers, self.b.rank, rank)
    }

    /// The executing block (`rank` None) or block `rank` of the cluster,
    /// with the cluster's vector clocks.
    pub fn block_and_clocks(&mut self, rank: Option<u32>) -> (&mut Block, &mut Clocks) {
        let me = self.b.rank;
        let b = match rank {
            None => &mut *self.b,
            Some(r) => peer_in(&mut self.peers, me, r),
        };
        (b, &mut self.cl.clocks)
    }

    /// Whether `[addr, addr + len)` lies in the shared region that the
    /// last access found.
    #[inline]
    fn hint_fits(&self, addr: u64, len: u32) -> bool {
        self.env
            .regions
            .get(self.region_hint)
            .is_some_and(|&(s, e)| addr >= u64::from(s) && addr + u64::from(len) <= u64::from(e))
    }

    /// The offset in the executing block's shared buffer of `[addr, addr +
    /// len)` (a shared::cta address, or a shared::cluster address of this
    /// block), which must lie inside one shared variable (or the dynamic
    /// block).
    #[inline]
    pub fn shared_at(&mut self, lane: usize, addr: u64, len: u32, what: &str) -> Result<usize, Fault> {
        if self.hint_fits(addr, len) {
            return Ok((addr - u64::from(SHARED_BASE)) as usize);
        }
        match self.shared_find(lane, addr, len, what)? {
            (None, off) => Ok(off),
            (Some(r), _) => {
                let id = self.peer(r).id();
                Err(Fault::lane(
                    lane,
                    format!(
                        "{what} at shared::cluster address {addr:#x} is in block {id} of the cluster; the emulator reaches another block's shared memory only through ld, st, atom and red (.shared::cluster or generic), mbarrier.arrive.shared::cluster and cp.async.bulk.shared::cluster.shared::cta"
                    ),
                ))
            }
        }
    }

    /// Where `[addr, addr + len)` of the shared::cluster window lives:
    /// `(None, offset)` in the executing block, `(Some(rank), offset)` in
    /// the shared buffer of another block of the cluster.
    #[inline]
    pub fn cluster_shared_at(
        &mut self,
        lane: usize,
        addr: u64,
        len: u32,
        what: &str,
    ) -> Result<(Option<u32>, usize), Fault> {
        if self.hint_fits(addr, len) {
            return Ok((None, (addr - u64::from(SHARED_BASE)) as usize));
        }
        self.shared_find(lane, addr, len, what)
    }

    #[cold]
    fn shared_find(&mut self, lane: usize, addr: u64, len: u32, what: &str) -> Result<(Option<u32>, usize), Fault> {
        let tag = addr >> CLUSTER_SHIFT;
        let (rank, a) = if (1..=u64::from(self.env.cluster_size)).contains(&tag) {
            let r = tag as u32 - 1;
            let a = addr & ((1 << CLUSTER_SHIFT) - 1);
            if r == self.b.rank {
                (None, a)
            } else {
                if self.w.cl_waited & (1 << lane) == 0 {
                    return Err(Fault::lane(
                        lane,
                        format!(
                            "{what} of {len} bytes at shared::cluster address {addr:#x} reaches block {} of the cluster before this thread has waited on a cluster barrier, so that block may not have started yet (its shared memory is there only once every block of the cluster has arrived at the barrier once); call `cluster_sync()` first, or `cluster_arrive_relaxed()` at the kernel's start and `cluster_wait()` before the first access",
                            self.peer(r).id()
                        ),
                    ));
                }
                let p = self.peer(r);
                if p.exited {
                    return Err(Fault::lane(
                        lane,
                        format!(
                            "{what} of {len} bytes at shared::cluster address {addr:#x}: block {} of the cluster has exited; its shared memory no longer exists",
                            p.id()
                        ),
                    ));
                }
                (Some(r), a)
            }
        } else {
            (None, addr)
        };
        let regions = &self.env.regions;
        let fits = |&(s, e): &(u32, u32)| a >= u64::from(s) && a + u64::from(len) <= u64::from(e);
        if let Some(k) = regions.iter().position(fits) {
            self.region_hint = k;
            return Ok((rank, (a - u64::from(SHARED_BASE)) as usize));
        }
        let names = &self.env.entry.shared_names;
        let near = regions
            .iter()
            .zip(names.iter())
            .find(|((s, e), _)| a >= u64::from(*s) && a < u64::from(*e))
            .map(|((s, e), n)| format!(" (it starts inside `{n}`, {:#x}..{e:#x})", s))
            .unwrap_or_default();
        let whose = match rank {
            Some(r) => format!(" (offset {a:#x} in block {} of the cluster)", self.peer(r).id()),
            None => String::new(),
        };
        Err(Fault::lane(
            lane,
            format!(
                "{what} of {len} bytes at shared address {addr:#x}{whose} is out of bounds{near}; shared variables: {}",
                describe_regions(&self.env.regions, &self.env.entry.shared_names)
            ),
        ))
    }
}

/// Block `rank` of the cluster, seen from block `me` (another one).
pub(super) fn peer_in<'p>(peers: &'p mut Peers<'_>, me: u32, rank: u32) -> &'p mut Block {
    if rank < me {
        &mut peers.before[rank as usize]
    } else {
        &mut peers.after[(rank - me - 1) as usize]
    }
}
