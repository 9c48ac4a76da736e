//! Memory: `ld`/`ldu`/`st` in the global, shared (`::cta` and `::cluster`),
//! param, const (loads) and generic spaces (scalars and `.v2`/`.v4`/`.v8`),
//! `cvta`, and hints that do nothing here (`prefetch`, `createpolicy`).
//! Cache and eviction qualifiers are accepted and ignored. Every access is
//! checked: alignment (the whole access, vectors included), bounds,
//! writability. `.shared::cluster` and generic accesses reach the shared
//! memory of any block of the cluster through `mapa` addresses; `.shared`
//! and `.shared::cta` only the executing block's.

use super::span::{extent, ld_shared, outside_origin, put, st_shared};
use crate::emu::ctx::{Ctx, dest_lanes};
use crate::emu::decode::Dec;
use crate::emu::gorder::{order_flags, order_kind};
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Space, Ty};
use crate::emu::layout::{PARAM_WINDOW, SHARED_WINDOW, const_table};
use crate::emu::origin::Origin;
use crate::emu::race::Check;
use crate::emu::state::lanes;

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

/// `flags` bit of `ld`/`st`: a volatile, relaxed, acquire or release
/// access, which the race check leaves alone.
const F_STRONG: u32 = 1;

/// The global-memory race check (`gorder`) of the executing lanes'
/// accesses of `len` bytes at `addr` that reach global memory, in lane
/// order (`atomic`: an `atom` or `red`).
pub(super) fn check_global(
    c: &mut Ctx<'_>,
    i: &Inst,
    addr: &[u64; 32],
    len: usize,
    write: bool,
    atomic: bool,
) -> Result<(), Fault> {
    let kind = order_kind(i.flags, atomic || i.flags & F_STRONG != 0, write);
    for l in lanes(c.exec) {
        if i.space == Space::Global || (i.space == Space::Generic && addr[l] < SHARED_WINDOW) {
            c.global_order(l, addr[l], len, kind)?;
        }
    }
    Ok(())
}

/// Removes the qualifiers that change nothing for a single-threaded
/// emulator (memory order, scope, cache and eviction hints) and returns
/// whether an `.L2::cache_hint` operand follows and whether the access is
/// strong (volatile, relaxed, acquire or release: not a data race when it
/// meets another one).
pub(super) fn drop_hints(m: &mut Mods<'_>) -> (bool, bool) {
    let hint = m.take("L2::cache_hint");
    let strong = m
        .rest()
        .iter()
        .any(|p| matches!(*p, "volatile" | "relaxed" | "acquire" | "release" | "acq_rel"));
    m.drop_where(|p| {
        matches!(
            p,
            "weak"
                | "volatile"
                | "relaxed"
                | "acquire"
                | "release"
                | "acq_rel"
                | "cta"
                | "cluster"
                | "gpu"
                | "sys"
                | "ca"
                | "cg"
                | "cs"
                | "lu"
                | "cv"
                | "wb"
                | "wt"
                | "nc"
                | "unified"
        ) || p.starts_with("L1::")
            || p.starts_with("L2::")
    });
    (hint, strong)
}

/// The state space of an access; `load`: the read-only spaces (`.param`,
/// `.const`) too.
pub(super) fn space(m: &mut Mods<'_>, load: bool) -> Result<Space, String> {
    if m.take("global") {
        Ok(Space::Global)
    } else if m.take("shared") || m.take("shared::cta") {
        Ok(Space::Shared)
    } else if m.take("shared::cluster") {
        Ok(Space::SharedCluster)
    } else if load && (m.take("param") || m.take("param::entry")) {
        Ok(Space::Param)
    } else if load && m.take("const") {
        Ok(Space::Const)
    } else if m.take("local") || m.take("const") || m.take("param::func") || m.take("param") {
        Err(format!("`{}`: this state space is not supported by the emulator", m.op))
    } else {
        Ok(Space::Generic)
    }
}

fn vec_len(m: &mut Mods<'_>) -> usize {
    match m.take_any(&["v2", "v4", "v8"]) {
        Some(0) => 2,
        Some(1) => 4,
        Some(2) => 8,
        _ => 1,
    }
}

fn mem_ty(m: &mut Mods<'_>) -> Result<Ty, String> {
    let t = m.ty()?;
    match t {
        Ty::B128 => Err("128-bit registers are not supported by the emulator".into()),
        Ty::Pred | Ty::F16x2 | Ty::Bf16x2 | Ty::Tf32 => Err(format!("bad memory type in `{}`", m.op)),
        t if t.bits() < 8 || t.bits() > 64 => Err(format!("bad memory type in `{}`", m.op)),
        t => Ok(t),
    }
}

pub(super) fn ld(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let order = order_flags(m);
    let (hint, strong) = drop_hints(m);
    let sp = space(m, true)?;
    let n = vec_len(m);
    let ty = mem_ty(m)?;
    d.count(if hint { 3 } else { 2 })?;
    let mut i = Inst::new(exec_ld);
    i.space = sp;
    i.ty = ty;
    if strong {
        i.flags |= F_STRONG | order;
    }
    i.v = if n == 1 {
        vec![d.reg_dst(0)?]
    } else {
        let parts = d.vec(0)?;
        if parts.len() != n {
            return Err(format!("`.v{n}` needs {n} registers"));
        }
        parts.iter().map(|p| d.dst_arg(p)).collect::<Result<Vec<_>, _>>()?
    }
    .into_boxed_slice();
    if i.v.iter().any(|o| matches!(o, Operand::Pred { .. })) {
        return Err("cannot load into a predicate".into());
    }
    i.addr = d.addr(1, sp == Space::Param)?;
    if ty.is_signed() {
        i.ext = Ext::Sign(ty.bits() as u8);
    }
    if hint {
        d.reg_src(2)?;
    }
    Ok(i)
}

pub(super) fn st(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if m.take("async") {
        return super::cluster_copy::decode_store(d, m);
    }
    let order = order_flags(m);
    let (hint, strong) = drop_hints(m);
    let sp = space(m, false)?;
    let n = vec_len(m);
    let ty = mem_ty(m)?;
    d.count(if hint { 3 } else { 2 })?;
    let mut i = Inst::new(exec_st);
    i.space = sp;
    i.ty = ty;
    if strong {
        i.flags |= F_STRONG | order;
    }
    i.addr = d.addr(0, false)?;
    i.v = if n == 1 {
        vec![d.src(1, ty)?]
    } else {
        let parts = d.vec(1)?;
        if parts.len() != n {
            return Err(format!("`.v{n}` needs {n} values"));
        }
        parts.iter().map(|p| d.src_arg(p, ty)).collect::<Result<Vec<_>, _>>()?
    }
    .into_boxed_slice();
    if hint {
        d.reg_src(2)?;
    }
    Ok(i)
}

/// Where one lane's access goes.
#[derive(Clone, Copy)]
pub(super) enum Loc {
    Global(u64),
    Shared(usize),
    /// An offset in the shared buffer of another block of the cluster
    /// (by rank).
    Remote(u32, usize),
    /// An offset in the kernel's parameter buffer (read-only).
    Param(usize),
    /// A `.const` variable (by its index) and an offset in it.
    Const(usize, usize),
}

/// The `.const` variable and offset of `[addr, addr + len)`: an access
/// outside the variable it points into is an error naming it.
fn const_at(c: &Ctx<'_>, lane: usize, addr: u64, len: u32, what: &str) -> Result<Loc, Fault> {
    let tables = &c.env.entry.tables;
    let Some((t, off)) = const_table(addr).filter(|(t, _)| *t < tables.len()) else {
        return Err(Fault::lane(
            lane,
            format!("{what} of {len} bytes at const address {addr:#x}: no `.const` variable there"),
        ));
    };
    let table = &tables[t];
    let size = table.data.len() as u64;
    if off > size || size - off < u64::from(len) {
        return Err(Fault::lane(
            lane,
            format!(
                "{what} of {len} bytes at byte {} of the `.const` variable `{}` ({size} bytes) is out of its bounds",
                off as u32 as i32, table.name
            ),
        ));
    }
    Ok(Loc::Const(t, off as usize))
}

/// The parameter-buffer offset of `[addr, addr + len)` in the .param space.
fn param_at(c: &Ctx<'_>, lane: usize, addr: u64, len: u32, what: &str) -> Result<usize, Fault> {
    let n = c.env.params.len() as u64;
    if addr > n || n - addr < u64::from(len) {
        return Err(Fault::lane(
            lane,
            format!(
                "{what} of {len} bytes at parameter offset {} is outside the kernel's {n} bytes of parameters",
                addr as i64
            ),
        ));
    }
    Ok(addr as usize)
}

/// Checks alignment and resolves the space of one lane's access.
#[inline]
pub(super) fn locate(c: &mut Ctx<'_>, sp: Space, lane: usize, addr: u64, len: u32, what: &str) -> Result<Loc, Fault> {
    if !addr.is_multiple_of(u64::from(len)) {
        return Err(Fault::lane(
            lane,
            format!("misaligned {what} of {len} bytes at {addr:#x}: the address must be a multiple of {len}"),
        ));
    }
    if c.env.entry.origins[c.w.group_pc as usize] != Origin::None {
        c.check_origin(lane, addr, len, what)?;
    }
    match sp {
        Space::Global => Ok(Loc::Global(addr)),
        Space::Shared => Ok(Loc::Shared(c.shared_at(lane, addr, len, what)?)),
        Space::SharedCluster => cluster_loc(c, lane, addr, len, what),
        Space::Param => Ok(Loc::Param(param_at(c, lane, addr, len, what)?)),
        Space::Const => const_at(c, lane, addr, len, what),
        Space::Generic => {
            if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&addr) {
                cluster_loc(c, lane, addr - SHARED_WINDOW, len, what)
            } else if (PARAM_WINDOW..PARAM_WINDOW + (1 << 32)).contains(&addr) {
                Ok(Loc::Param(param_at(c, lane, addr - PARAM_WINDOW, len, what)?))
            } else {
                Ok(Loc::Global(addr))
            }
        }
    }
}

/// A shared::cluster access: the executing block's or another's.
#[inline]
fn cluster_loc(c: &mut Ctx<'_>, lane: usize, addr: u64, len: u32, what: &str) -> Result<Loc, Fault> {
    Ok(match c.cluster_shared_at(lane, addr, len, what)? {
        (None, off) => Loc::Shared(off),
        (Some(rank), off) => Loc::Remote(rank, off),
    })
}

/// Reads one lane's access; shared memory is checked for accesses in
/// flight and, as `check` says, for races.
#[inline]
pub(super) fn read(
    c: &mut Ctx<'_>,
    lane: usize,
    loc: Loc,
    buf: &mut [u8],
    check: Check,
    what: &str,
) -> Result<(), Fault> {
    match loc {
        Loc::Global(a) => c.global_read(lane, a, buf, what),
        Loc::Shared(o) => c.shared_read(lane, None, o, buf, check),
        Loc::Remote(r, o) => c.shared_read(lane, Some(r), o, buf, check),
        Loc::Param(o) => {
            buf.copy_from_slice(&c.env.params[o..o + buf.len()]);
            Ok(())
        }
        Loc::Const(t, o) => {
            buf.copy_from_slice(&c.env.entry.tables[t].data[o..o + buf.len()]);
            Ok(())
        }
    }
}

/// Writes one lane's access, checked as [`read`] is.
#[inline]
pub(super) fn write(
    c: &mut Ctx<'_>,
    lane: usize,
    loc: Loc,
    data: &[u8],
    check: Check,
    what: &str,
) -> Result<(), Fault> {
    match loc {
        Loc::Global(a) => c.global_write(lane, a, data, what),
        Loc::Shared(o) => c.shared_write(lane, None, o, data, check),
        Loc::Remote(r, o) => c.shared_write(lane, Some(r), o, data, check),
        Loc::Param(o) => Err(Fault::lane(
            lane,
            format!(
                "{what} of {} bytes at parameter offset {o} writes to the kernel's parameters, which are read-only",
                data.len()
            ),
        )),
        Loc::Const(t, o) => Err(Fault::lane(
            lane,
            format!(
                "{what} of {} bytes at byte {o} of the `.const` variable `{}` writes to constant memory, which is read-only",
                data.len(),
                c.env.entry.tables[t].name
            ),
        )),
    }
}

/// Per-lane addresses of an instruction's address operand.
#[inline(always)]
pub(super) fn addresses(c: &Ctx<'_>, i: &Inst) -> Result<[u64; 32], Fault> {
    address_values(c, &i.addr)
}

/// Per-lane values of an address operand (`base + off`).
#[inline(always)]
pub(super) fn address_values(c: &Ctx<'_>, addr: &crate::emu::inst::Addr) -> Result<[u64; 32], Fault> {
    let off = addr.off as u64;
    let mut a = [off; 32];
    let base = match addr.base {
        Operand::None => return Ok(a),
        Operand::Reg { idx, .. } => c.reg(idx)?,
        op => &c.src(&op)?,
    };
    for (x, b) in a.iter_mut().zip(base) {
        *x = b.wrapping_add(off);
    }
    Ok(a)
}

#[inline]
pub(super) fn le(bytes: &[u8]) -> u64 {
    match *bytes {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        _ => {
            let mut b = [0u8; 8];
            b[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(b)
        }
    }
}

/// A warp's global access in one piece, when every executing lane's
/// `total` bytes are aligned and all of them lie in one allocation (a
/// warp's usual access): the allocation, the lowest address and the
/// length from there to the end of the highest access. `None` for any
/// other access (one outside the view its address came from included),
/// which the lane-by-lane path checks and reports.
#[inline]
fn warp_global(c: &mut Ctx<'_>, space: Space, addr: &[u64; 32], total: usize) -> Option<(usize, u64, usize)> {
    if !matches!(space, Space::Global | Space::Generic) {
        return None;
    }
    let x = extent(c, addr, total);
    let (lo, hi) = (x.lo, x.hi);
    // Generic addresses below the shared window are global. An access
    // outside the view its address came from goes the lane path, which
    // reports it.
    if !x.aligned || hi >= SHARED_WINDOW || outside_origin(c, addr, &x, total, false) {
        return None;
    }
    let len = (hi - lo) as usize + total;
    let k = c.mem.locate(lo, len as u64, &mut c.hint).ok()?;
    Some((k, lo, len))
}

/// How an `ld` or `st` meets the race check.
fn strength(i: &Inst) -> Check {
    if i.flags & F_STRONG != 0 {
        Check::Strong
    } else {
        Check::Plain
    }
}

fn exec_ld(c: &mut Ctx<'_>, i: &Inst) -> X {
    let n = i.v.len();
    let esz = i.ty.bytes() as usize;
    let total = esz * n;
    if matches!(i.space, Space::Global | Space::Generic) {
        let addr = addresses(c, i)?;
        if let Some((k, lo, len)) = warp_global(c, i.space, &addr, total) {
            // The memory order first (an acquire load of a flag the launch
            // before released: see `exec_atom`).
            if c.mem.order.on() {
                check_global(c, i, &addr, total, false, false)?;
            }
            c.touch_warp(k, &addr, total, false, "global load")?;
            for (e, d) in i.v.iter().enumerate() {
                let bytes = c.mem.bytes(k, lo, len);
                if let Some((regs, mask)) = dest_lanes(c.w, c.exec, d, i.ext) {
                    for (l, r) in regs.iter_mut().enumerate() {
                        let at = (addr[l] - lo) as usize + e * esz;
                        *r = le(&bytes[at..at + esz]) & mask;
                    }
                    continue;
                }
                let mut v = [0u64; 32];
                for l in lanes(c.exec) {
                    let at = (addr[l] - lo) as usize + e * esz;
                    v[l] = le(&bytes[at..at + esz]);
                }
                c.write(d, &v, i.ext)?;
            }
            return Ok(Flow::Next);
        }
    }
    if i.space == Space::Param && i.addr.base == Operand::None {
        return ld_param(c, i);
    }
    if i.space == Space::Shared && ld_shared(c, i, &addresses(c, i)?, strength(i))? {
        return Ok(Flow::Next);
    }
    ld_by_lane(c, i)
}

/// `ld.param` of a parameter by name: one value for every lane.
fn ld_param(c: &mut Ctx<'_>, i: &Inst) -> X {
    let esz = i.ty.bytes() as usize;
    let total = esz * i.v.len();
    let what = "param load";
    let (po, pb) = i.addr.param;
    let off = i.addr.off as u64;
    if off < u64::from(po) || off + total as u64 > u64::from(po + pb) {
        return Err(Fault::new(format!(
            "{what} of {total} bytes at offset {} is outside the parameter ({pb} bytes)",
            off as i64 - i64::from(po)
        )));
    }
    if !off.is_multiple_of(total as u64) {
        return Err(Fault::new(format!(
            "misaligned {what} of {total} bytes at parameter offset {off}: must be a multiple of {total}"
        )));
    }
    for (k, d) in i.v.iter().enumerate() {
        let at = off as usize + k * esz;
        let v = le(&c.env.params[at..at + esz]);
        c.write(d, &[v; 32], i.ext)?;
    }
    Ok(Flow::Next)
}

/// An `ld` lane by lane: every space but a parameter by name, and the
/// global and shared accesses that [`warp_global`] and [`ld_shared`] do
/// not take. Out of line: its 2 KiB of values, zeroed, would cost the
/// warp-wide paths as much as the load itself.
#[inline(never)]
fn ld_by_lane(c: &mut Ctx<'_>, i: &Inst) -> X {
    let n = i.v.len();
    let esz = i.ty.bytes() as usize;
    let total = esz * n;
    let check = strength(i);
    let what = match i.space {
        Space::Global => "global load",
        Space::Shared => "shared load",
        Space::SharedCluster => "shared::cluster load",
        Space::Param => "param load",
        Space::Const => "const load",
        Space::Generic => "generic load",
    };
    let mut vals = [[0u64; 32]; 8];
    let mut buf = [0u8; 64];
    if i.space == Space::Param && i.addr.base != Operand::None {
        // Through a register holding a .param-space address.
        let addr = addresses(c, i)?;
        for l in lanes(c.exec) {
            let loc = locate(c, Space::Param, l, addr[l], total as u32, what)?;
            read(c, l, loc, &mut buf[..total], check, what)?;
            for (k, v) in vals.iter_mut().enumerate().take(n) {
                v[l] = le(&buf[k * esz..(k + 1) * esz]);
            }
        }
    } else {
        let addr = addresses(c, i)?;
        if c.mem.order.on() {
            check_global(c, i, &addr, total, false, false)?;
        }
        for l in lanes(c.exec) {
            let loc = locate(c, i.space, l, addr[l], total as u32, what)?;
            read(c, l, loc, &mut buf[..total], check, what)?;
            for (k, v) in vals.iter_mut().enumerate().take(n) {
                v[l] = le(&buf[k * esz..(k + 1) * esz]);
            }
        }
    }
    for (k, d) in i.v.iter().enumerate() {
        c.write(d, &vals[k], i.ext)?;
    }
    Ok(Flow::Next)
}

fn exec_st(c: &mut Ctx<'_>, i: &Inst) -> X {
    let n = i.v.len();
    let esz = i.ty.bytes() as usize;
    let total = esz * n;
    let what = match i.space {
        Space::Shared => "shared store",
        Space::SharedCluster => "shared::cluster store",
        Space::Generic => "generic store",
        _ => "global store",
    };
    let addr = addresses(c, i)?;
    if n == 1
        && let Some((k, lo, len)) = warp_global(c, i.space, &addr, total)
    {
        let exec = c.exec;
        let (v, mem) = c.src_mem(&i.v[0])?;
        // A read-only allocation: the lane-by-lane path reports it.
        if let Ok(dst) = mem.bytes_mut(k, lo, len) {
            for l in lanes(exec) {
                put(dst, (addr[l] - lo) as usize, esz, v[l]);
            }
            c.touch_warp(k, &addr, total, true, "global store")?;
            if c.mem.order.on() {
                check_global(c, i, &addr, total, true, false)?;
            }
            return Ok(Flow::Next);
        }
    }
    if i.space == Space::Shared && st_shared(c, i, &addr, strength(i))? {
        return Ok(Flow::Next);
    }
    let mut vals = [[0u64; 32]; 8];
    for (k, op) in i.v.iter().enumerate() {
        vals[k] = c.src(op)?;
    }
    let mut buf = [0u8; 64];
    for l in lanes(c.exec) {
        let loc = locate(c, i.space, l, addr[l], total as u32, what)?;
        for (k, v) in vals.iter().enumerate().take(n) {
            buf[k * esz..(k + 1) * esz].copy_from_slice(&v[l].to_le_bytes()[..esz]);
        }
        write(c, l, loc, &buf[..total], strength(i), what)?;
    }
    if c.mem.order.on() {
        check_global(c, i, &addr, total, true, false)?;
    }
    Ok(Flow::Next)
}

// ----- cvta -----

pub(super) fn cvta(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let to = m.take("to");
    let sp = if m.take("global") {
        Space::Global
    } else if m.take("shared") || m.take("shared::cta") || m.take("shared::cluster") {
        Space::Shared
    } else if m.take("param") || m.take("param::entry") {
        Space::Param
    } else {
        return Err("`cvta` supports the .global, .shared and .param spaces".into());
    };
    let ty = m.ty()?;
    if !matches!(ty, Ty::U32 | Ty::U64) {
        return Err("`cvta` needs .u32 or .u64".into());
    }
    if sp == Space::Param && ty != Ty::U64 {
        return Err("`cvta.param` needs .u64 (generic addresses are 64-bit)".into());
    }
    d.count(2)?;
    let mut i = Inst::new(exec_cvta);
    i.ty = ty;
    i.space = sp;
    i.sub = u8::from(to);
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    Ok(i)
}

/// Global addresses are the same in both views; shared-window addresses
/// move by `SHARED_WINDOW`, parameter addresses by `PARAM_WINDOW`.
fn exec_cvta(c: &mut Ctx<'_>, i: &Inst) -> X {
    let m = i.ty.mask();
    match (i.space, i.sub == 1) {
        (Space::Param, true) => super::lanes1(c, i, |a| a.wrapping_sub(PARAM_WINDOW)),
        (Space::Param, false) => super::lanes1(c, i, |a| (a & 0xFFFF_FFFF).wrapping_add(PARAM_WINDOW)),
        (Space::Shared, true) => super::lanes1(c, i, |a| a.wrapping_sub(SHARED_WINDOW) & m),
        (Space::Shared, false) => super::lanes1(c, i, |a| (a & 0xFFFF_FFFF).wrapping_add(SHARED_WINDOW) & m),
        _ => super::lanes1(c, i, |a| a & m),
    }
}

// ----- hints -----

pub(super) fn prefetch(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    drop_hints(m);
    let _ = space(m, false);
    m.take("tensormap");
    d.count(1)?;
    Ok(Inst::new(exec_nop))
}

/// `createpolicy`: the policy value is opaque; the emulator writes 0.
pub(super) fn createpolicy(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    m.drop_where(|p| matches!(p, "fractional" | "range" | "cvt" | "global") || p.starts_with("L2::"));
    let ty = m.ty()?;
    if ty != Ty::B64 {
        return Err("`createpolicy` produces a .b64".into());
    }
    if d.args.is_empty() {
        return Err("missing destination".into());
    }
    let mut i = Inst::new(exec_zero);
    i.d[0] = d.reg_dst(0)?;
    Ok(i)
}

fn exec_nop(_: &mut Ctx<'_>, _: &Inst) -> X {
    Ok(Flow::Next)
}

fn exec_zero(c: &mut Ctx<'_>, i: &Inst) -> X {
    c.write(&i.d[0], &[0; 32], Ext::Zero)?;
    Ok(Flow::Next)
}
