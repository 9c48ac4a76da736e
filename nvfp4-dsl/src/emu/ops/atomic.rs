//! Atomics: `atom` and `red` in the global and shared spaces, with the
//! operations and types ptxas accepts, checked as `ld`/`st` are.

use super::float::{F64_DEFAULT_NAN, F64_QUIET, flush, is_nan64};
use super::mem::{Loc, addresses, check_global, drop_hints, le, locate, read, space, write};
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::fp::{self, Rnd};
use crate::emu::gorder::order_flags;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Operand, Ty};
use crate::emu::race::Check;
use crate::emu::state::lanes;

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

const OPS: &[&str] = &["add", "and", "or", "xor", "exch", "cas", "inc", "dec", "min", "max"];

/// `atom` (`returns`) or `red`: `{.sem}{.scope}{.space}.op{.noftz}.type`,
/// with the operations and types ptxas accepts.
fn atomic(d: &Dec<'_>, m: &mut Mods<'_>, returns: bool) -> R {
    if !returns && m.rest().iter().any(|p| matches!(*p, "acquire" | "acq_rel")) {
        return Err("`red` is .relaxed or .release; an acquire needs `atom`".into());
    }
    let order = order_flags(m);
    let (hint, _) = drop_hints(m);
    let sp = space(m, false)?;
    let op = m.take_any(OPS).ok_or("missing or unsupported atomic operation")?;
    let noftz = m.take("noftz");
    let ty = m.ty()?;
    let ok = match OPS[op] {
        "add" if noftz => matches!(ty, Ty::F16x2 | Ty::Bf16x2),
        "add" => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::F32 | Ty::F64),
        _ if noftz => false,
        "and" | "or" | "xor" => matches!(ty, Ty::B32 | Ty::B64),
        "exch" | "cas" if !returns => return Err(format!("`red` has no `.{}`; use `atom`", OPS[op])),
        "exch" | "cas" => matches!(ty, Ty::B32 | Ty::B64),
        "inc" | "dec" => ty == Ty::U32,
        _ => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64),
    };
    if !ok {
        return Err(format!(
            "`.{}{}` with .{} is not an atomic operation that ptxas accepts",
            OPS[op],
            if noftz { ".noftz" } else { "" },
            format!("{ty:?}").to_lowercase()
        ));
    }
    let cas = OPS[op] == "cas";
    let first = usize::from(returns);
    let n = first + 2 + usize::from(cas) + usize::from(hint);
    d.count(n)?;
    let mut i = Inst::new(exec_atom);
    i.space = sp;
    i.ty = ty;
    i.sub = op as u8;
    i.flags = order;
    if returns {
        i.d[0] = d.reg_dst(0)?;
    } else {
        i.d[0] = Operand::Sink;
    }
    i.addr = d.addr(first, false)?;
    i.s[0] = d.src(first + 1, ty)?;
    if cas {
        i.s[1] = d.src(first + 2, ty)?;
    }
    Ok(i)
}

pub(super) fn atom(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    atomic(d, m, true)
}

pub(super) fn red(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    atomic(d, m, false)
}

/// `a + b` (`a` from memory) as the H100's `atom.add`/`red.add` compute
/// it: integers wrap; floats round to nearest even, `f16x2`/`bf16x2` half
/// by half keeping subnormals; `f32` on `global` memory
/// flushes subnormal inputs and result to zero of the same sign. NaNs:
/// `f32` and the halves give their canonical NaN; `f64` gives a NaN
/// operand as it is on global memory (`b` first), quieted on shared
/// memory (`a` first), and `0xFFF8000000000000` for an invalid sum.
fn atomic_add(ty: Ty, a: u64, b: u64, global: bool) -> u64 {
    match ty {
        Ty::F32 if global => flush(fp::add(flush(a, fp::F32), flush(b, fp::F32), fp::F32, Rnd::Rn), fp::F32),
        Ty::F32 => fp::add(a, b, fp::F32, Rnd::Rn),
        Ty::F64 => match (is_nan64(a), is_nan64(b)) {
            (_, true) if global => b,
            (true, _) if global => a,
            (true, _) => a | F64_QUIET,
            (_, true) => b | F64_QUIET,
            _ => {
                let s = fp::add(a, b, fp::F64, Rnd::Rn);
                if is_nan64(s) { F64_DEFAULT_NAN } else { s }
            }
        },
        Ty::F16x2 | Ty::Bf16x2 => {
            let f = ty.fmt().expect("a half type");
            let lo = fp::add_half(a & 0xFFFF, b & 0xFFFF, f);
            let hi = fp::add_half(a >> 16, b >> 16, f);
            lo | hi << 16
        }
        _ => a.wrapping_add(b) & ty.mask(),
    }
}

/// Lanes perform their atomics one after another in lane order. Each is
/// one access for the race check (an atomic never races with another).
fn exec_atom(c: &mut Ctx<'_>, i: &Inst) -> X {
    let b = c.src(&i.s[0])?;
    let cv = if OPS[i.sub as usize] == "cas" {
        c.src(&i.s[1])?
    } else {
        [0; 32]
    };
    let addr = addresses(c, i)?;
    let (ty, esz) = (i.ty, i.ty.bytes() as usize);
    let m = ty.mask();
    let w = ty.bits();
    let mut old = [0u64; 32];
    let mut buf = [0u8; 8];
    // The memory order first: an acquire of a flag that the launch before
    // released orders this thread's access of that flag, and what follows,
    // after that launch's writes (`pdl`).
    if c.mem.order.on() {
        check_global(c, i, &addr, esz, true, true)?;
    }
    for l in lanes(c.exec) {
        let loc = locate(c, i.space, l, addr[l], esz as u32, "atomic")?;
        read(c, l, loc, &mut buf[..esz], Check::Atomic, "atomic")?;
        let o = le(&buf[..esz]);
        let x = b[l] & m;
        let new = match OPS[i.sub as usize] {
            "add" => atomic_add(ty, o, x, matches!(loc, Loc::Global(_))),
            "and" => o & x,
            "or" => o | x,
            "xor" => o ^ x,
            "exch" => x,
            "cas" => {
                if o == x {
                    cv[l] & m
                } else {
                    o
                }
            }
            "inc" => {
                if o >= x {
                    0
                } else {
                    o + 1
                }
            }
            "dec" => {
                if o == 0 || o > x {
                    x
                } else {
                    o - 1
                }
            }
            op => {
                let less = if ty.is_signed() {
                    super::sx(x, w) < super::sx(o, w)
                } else {
                    x < o
                };
                if (op == "min") == less { x } else { o }
            }
        };
        write(c, l, loc, &new.to_le_bytes()[..esz], Check::Strong, "atomic")?;
        old[l] = o;
    }
    c.write(&i.d[0], &old, Ext::Zero)?;
    Ok(Flow::Next)
}
