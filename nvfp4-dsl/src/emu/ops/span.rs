//! A warp's `ld`/`st` in one piece. Where every executing lane's access is
//! aligned and lies in one allocation (global) or one shared variable,
//! the checks of the lane-by-lane path reduce to those of the lowest and
//! highest lanes' accesses: bounds and the array or view an address came
//! from (`origin`) are intervals. Shared memory's race and in-flight
//! checks stay per lane, and are skipped only where they cannot fail (the
//! fast mode keeps no clocks; nothing in flight that may conflict spans
//! the accessed bytes).

use super::mem::le;
use crate::emu::ctx::{Ctx, dest_lanes};
use crate::emu::inst::{Fault, Inst};
use crate::emu::layout::SHARED_BASE;
use crate::emu::origin::Origin;
use crate::emu::race::Check;
use crate::emu::state::lanes;

/// The executing lanes' lowest and highest addresses and their lanes, and
/// whether every address is a multiple of `total` (a power of two).
pub(super) struct Extent {
    pub lo: u64,
    pub hi: u64,
    lo_lane: usize,
    hi_lane: usize,
    pub aligned: bool,
}

#[inline]
pub(super) fn extent(c: &Ctx<'_>, addr: &[u64; 32], total: usize) -> Extent {
    let (mut lo, mut hi, mut bits) = (u64::MAX, 0, 0);
    let (mut lo_lane, mut hi_lane) = (0, 0);
    for l in lanes(c.exec) {
        if addr[l] < lo {
            (lo, lo_lane) = (addr[l], l);
        }
        if addr[l] >= hi {
            (hi, hi_lane) = (addr[l], l);
        }
        bits |= addr[l];
    }
    Extent {
        lo,
        hi,
        lo_lane,
        hi_lane,
        aligned: bits & (total as u64 - 1) == 0,
    }
}

/// Whether an executing lane's access of `total` bytes lies outside the
/// shared array or view its address came from (see `Ctx::check_origin`).
/// A view is one interval, and so is an array for addresses inside the
/// shared window's variables (`shared`): the lowest and highest lanes
/// tell; other addresses are checked lane by lane.
#[inline]
pub(super) fn outside_origin(c: &Ctx<'_>, addr: &[u64; 32], x: &Extent, total: usize, shared: bool) -> bool {
    let outside = |l: usize| c.check_origin(l, addr[l], total as u32, "access").is_err();
    match c.env.entry.origins[c.w.group_pc as usize] {
        Origin::None => false,
        Origin::Param(_) => outside(x.lo_lane) || outside(x.hi_lane),
        Origin::Shared(_) if shared => outside(x.lo_lane) || outside(x.hi_lane),
        Origin::Shared(_) => lanes(c.exec).any(outside),
    }
}

/// Whether the executing lanes' `.shared` accesses of `total` bytes at
/// `addr` pass every check of the lane path but the race and in-flight
/// ones: aligned, all in the shared variable of the lowest one, inside the
/// array or view their address came from. Their offsets in the block's
/// buffer are then `addr - SHARED_BASE`; returns the lowest and one past
/// the highest.
fn warp_shared(c: &mut Ctx<'_>, addr: &[u64; 32], total: usize) -> Option<(usize, usize)> {
    let x = extent(c, addr, total);
    if !x.aligned || c.shared_at(x.lo_lane, x.lo, total as u32, "shared access").is_err() {
        return None;
    }
    // `shared_at` left the hint at the variable holding the lowest access.
    let one = c
        .env
        .regions
        .get(c.region_hint)
        .is_some_and(|&(s, e)| x.hi >= u64::from(s) && x.hi + total as u64 <= u64::from(e));
    let base = u64::from(SHARED_BASE);
    (one && !outside_origin(c, addr, &x, total, true)).then(|| ((x.lo - base) as usize, (x.hi - base) as usize + total))
}

/// Whether shared accesses of bytes `lo..hi` (offsets in the block's
/// buffer) need their per-lane race and in-flight checks: the clocks are
/// on, or an operation in flight may conflict with them.
fn checked(c: &Ctx<'_>, (lo, hi): (usize, usize), write: bool) -> bool {
    c.cl.clocks.on() || !c.b.inflight.quiet(lo, hi, write)
}

/// `ld.shared` of a warp in one piece, if [`warp_shared`] takes it: each
/// lane's access checked for races and operations in flight (in lane
/// order, as the lane path does), then each element's lanes read.
pub(super) fn ld_shared(c: &mut Ctx<'_>, i: &Inst, addr: &[u64; 32], check: Check) -> Result<bool, Fault> {
    let esz = i.ty.bytes() as usize;
    let total = esz * i.v.len();
    let Some(range) = warp_shared(c, addr, total) else {
        return Ok(false);
    };
    let base = u64::from(SHARED_BASE);
    if checked(c, range, false) {
        let mut buf = [0u8; 64];
        for l in lanes(c.exec) {
            c.shared_read(l, None, (addr[l] - base) as usize, &mut buf[..total], check)?;
        }
    }
    for (e, d) in i.v.iter().enumerate() {
        if let Some((regs, mask)) = dest_lanes(c.w, c.exec, d, i.ext) {
            for (l, r) in regs.iter_mut().enumerate() {
                let at = (addr[l] - base) as usize + e * esz;
                *r = le(&c.b.shared[at..at + esz]) & mask;
            }
            continue;
        }
        let mut v = [0u64; 32];
        for l in lanes(c.exec) {
            let at = (addr[l] - base) as usize + e * esz;
            v[l] = le(&c.b.shared[at..at + esz]);
        }
        c.write(d, &v, i.ext)?;
    }
    Ok(true)
}

/// `st.shared` of a warp in one piece, if [`warp_shared`] takes it:
/// checked, each lane's access as the lane path does it; in the fast mode
/// each element's lanes written in lane order (lanes' aligned accesses are
/// equal or disjoint: the last lane wins either way).
pub(super) fn st_shared(c: &mut Ctx<'_>, i: &Inst, addr: &[u64; 32], check: Check) -> Result<bool, Fault> {
    let esz = i.ty.bytes() as usize;
    let total = esz * i.v.len();
    let Some(range) = warp_shared(c, addr, total) else {
        return Ok(false);
    };
    let base = u64::from(SHARED_BASE);
    if checked(c, range, true) {
        let vals = i.v.iter().map(|op| c.src(op)).collect::<Result<Vec<_>, _>>()?;
        let mut buf = [0u8; 64];
        for l in lanes(c.exec) {
            for (k, v) in vals.iter().enumerate() {
                put(&mut buf, k * esz, esz, v[l]);
            }
            c.shared_write(l, None, (addr[l] - base) as usize, &buf[..total], check)?;
        }
        return Ok(true);
    }
    for (e, op) in i.v.iter().enumerate() {
        let v = c.src(op)?;
        let exec = c.exec;
        let shared = &mut c.b.shared;
        for l in lanes(exec) {
            put(shared, (addr[l] - base) as usize + e * esz, esz, v[l]);
        }
    }
    Ok(true)
}

/// Writes the low `esz` bytes (1, 2, 4 or 8) of `x` at `bytes[at..]`,
/// little-endian: a store of constant length, not a call to memcpy.
#[inline(always)]
pub(super) fn put(bytes: &mut [u8], at: usize, esz: usize, x: u64) {
    match esz {
        1 => bytes[at] = x as u8,
        2 => bytes[at..at + 2].copy_from_slice(&(x as u16).to_le_bytes()),
        4 => bytes[at..at + 4].copy_from_slice(&(x as u32).to_le_bytes()),
        _ => bytes[at..at + 8].copy_from_slice(&x.to_le_bytes()),
    }
}
