//! The instruction families, one module each, and the table that maps an
//! opcode's name (the part before the first dot) to its decoder.
//!
//! A decoder reads the modifiers (`Mods`) and operands (`Dec`), checks
//! them, and returns an [`Inst`] whose `exec` is one of its family's
//! executors. To add an instruction, write its decoder and executor in the
//! family's module (or a new module) and add a row to [`TABLE`].

use super::ctx::{Ctx, Side};
use super::decode::{Dec, Decoder};
use super::inst::{Fault, Flow, Inst, Mods, Operand, Ty};
use super::pending::{AsyncOp, Work};

/// Defines `fn $name`, whose body runs compiled for AVX2 where the CPU has
/// it and for the baseline otherwise (the same IEEE and integer operations
/// on wider vectors: the same bits).
macro_rules! vectorised {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if crate::emu::ops::tensor_sum::use_avx2() {
                // SAFETY: `use_avx2` is true only where the CPU has AVX2.
                return unsafe { avx2($($arg),*) };
            }
            body($($arg),*)
        }
    };
}

mod atomic;
mod bits;
mod bulk;
mod cluster;
mod cluster_copy;
mod cmp;
mod control;
mod cvt;
mod desc;
mod f16_host;
mod float;
mod int;
mod mbarrier;
mod mem;
mod mov;
mod registers;
pub(crate) use registers::release_registers;
mod span;
mod tcgen05;
mod tensor_sum;
mod warp;
mod wgmma;

/// Opcode name -> decoder.
static TABLE: &[(&str, Decoder)] = &[
    // Arithmetic shared by integer and float types: the type picks.
    ("add", add),
    ("sub", sub),
    ("mul", mul),
    ("mad", mad),
    ("div", div),
    ("min", min),
    ("max", max),
    ("neg", neg),
    ("abs", abs),
    // Integer.
    ("rem", int::rem),
    ("mul24", int::mul24),
    ("mad24", int::mad24),
    ("sad", int::sad),
    ("popc", bits::popc),
    ("clz", bits::clz),
    ("brev", bits::brev),
    ("bfind", bits::bfind),
    ("bfe", bits::bfe),
    ("bfi", bits::bfi),
    ("prmt", bits::prmt),
    ("lop3", bits::lop3),
    ("and", int::and),
    ("or", int::or),
    ("xor", int::xor),
    ("not", int::not),
    ("cnot", int::cnot),
    ("shl", int::shl),
    ("shr", int::shr),
    ("shf", int::shf),
    ("dp4a", int::dp4a),
    ("dp2a", int::dp2a),
    // Float.
    ("fma", float::fma),
    ("rcp", float::rcp),
    ("sqrt", float::sqrt),
    ("rsqrt", float::rsqrt),
    ("ex2", float::ex2),
    ("lg2", float::lg2),
    ("sin", float::sin),
    ("cos", float::cos),
    ("tanh", float::tanh),
    ("copysign", float::copysign),
    ("testp", float::testp),
    // Comparison and selection.
    ("setp", cmp::setp),
    ("selp", int::selp),
    // Data movement and conversion.
    ("mov", mov::mov),
    ("cvt", cvt::cvt),
    ("cvta", mem::cvta),
    ("ld", mem::ld),
    ("ldu", mem::ld),
    ("st", mem::st),
    ("atom", atomic::atom),
    ("red", atomic::red),
    ("prefetch", mem::prefetch),
    ("prefetchu", mem::prefetch),
    ("createpolicy", mem::createpolicy),
    // Control flow and synchronisation.
    ("bra", control::bra),
    ("ret", control::ret),
    ("exit", control::ret),
    ("bar", control::bar),
    ("barrier", control::barrier),
    ("membar", control::fence),
    ("fence", control::fence),
    ("nanosleep", control::nanosleep),
    ("trap", control::trap),
    ("griddepcontrol", control::griddepcontrol),
    // Thread-block clusters.
    ("mapa", cluster::mapa),
    // Asynchronous copies, mbarriers, tensor memory and tensor cores.
    ("mbarrier", mbarrier::mbarrier),
    ("cp", bulk::cp),
    ("tcgen05", tcgen05::tcgen05),
    ("wgmma", wgmma::wgmma),
    ("setmaxnreg", registers::setmaxnreg),
    // Warp-level.
    ("shfl", warp::shfl),
    ("elect", warp::elect),
    ("vote", warp::vote),
    ("activemask", warp::activemask),
    ("redux", warp::redux),
];

/// The decoder of an opcode name.
pub(crate) fn lookup(name: &str) -> Option<Decoder> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// Completes an asynchronous operation that has left its block's queue:
/// the family that issued it does what it does.
pub(crate) fn complete(s: &mut Side<'_>, op: &AsyncOp) -> Result<(), Fault> {
    match &op.work {
        Work::Copy(copy) => bulk::complete_copy(s, op, copy),
        Work::Store(store) => bulk::complete_store(s, op, store),
        Work::PeerCopy(copy) => cluster_copy::complete(s, op, copy),
        Work::Tc(tc) => tcgen05::complete(s, op, tc),
    }
}

/// The instruction type (last modifier) without consuming it.
fn peek_ty(m: &Mods<'_>) -> Option<Ty> {
    m.rest().last().and_then(|t| Ty::parse(t))
}

fn is_float(m: &Mods<'_>) -> bool {
    matches!(
        peek_ty(m),
        Some(Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2 | Ty::F32 | Ty::F64)
    )
}

fn add(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::add(d, m) } else { int::add(d, m) }
}
fn sub(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::sub(d, m) } else { int::sub(d, m) }
}
fn mul(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::mul(d, m) } else { int::mul(d, m) }
}
fn mad(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::fma(d, m) } else { int::mad(d, m) }
}
fn div(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::div(d, m) } else { int::div(d, m) }
}
fn min(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) {
        float::minmax(d, m, false)
    } else {
        int::minmax(d, m, false)
    }
}
fn max(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) {
        float::minmax(d, m, true)
    } else {
        int::minmax(d, m, true)
    }
}
fn neg(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::neg(d, m) } else { int::neg(d, m) }
}
fn abs(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    if is_float(m) { float::abs(d, m) } else { int::abs(d, m) }
}

/// Runs `f` on every lane of two sources and writes the first destination.
/// An immediate second source (`add r, r, 1`, `shl r, r, 2`: most of
/// them) stays one value, not 32 copies in memory, and `f` of a constant
/// often simplifies (a shift by a constant).
#[inline(always)]
fn lanes2(c: &mut Ctx<'_>, i: &Inst, f: impl Fn(u64, u64) -> u64) -> Result<Flow, Fault> {
    let mut d = [0u64; 32];
    if let Operand::Imm(y) = i.s[1] {
        let [a] = c.srcs([&i.s[0]])?;
        for (d, a) in d.iter_mut().zip(a) {
            *d = f(*a, y);
        }
    } else {
        let [a, b] = c.srcs([&i.s[0], &i.s[1]])?;
        for ((d, a), b) in d.iter_mut().zip(a).zip(b) {
            *d = f(*a, *b);
        }
    }
    c.write(&i.d[0], &d, i.ext)?;
    Ok(Flow::Next)
}

/// Runs `f` on every lane of one source.
#[inline(always)]
fn lanes1(c: &mut Ctx<'_>, i: &Inst, f: impl Fn(u64) -> u64) -> Result<Flow, Fault> {
    let [a] = c.srcs([&i.s[0]])?;
    let mut d = [0u64; 32];
    for (d, a) in d.iter_mut().zip(a) {
        *d = f(*a);
    }
    c.write(&i.d[0], &d, i.ext)?;
    Ok(Flow::Next)
}

/// Runs `f` on every lane of three sources.
#[inline(always)]
fn lanes3(c: &mut Ctx<'_>, i: &Inst, f: impl Fn(u64, u64, u64) -> u64) -> Result<Flow, Fault> {
    let [a, b, x] = c.srcs([&i.s[0], &i.s[1], &i.s[2]])?;
    let mut d = [0u64; 32];
    for l in 0..32 {
        d[l] = f(a[l], b[l], x[l]);
    }
    c.write(&i.d[0], &d, i.ext)?;
    Ok(Flow::Next)
}

/// Sign-extends the low `bits` of `x`.
#[inline(always)]
fn sx(x: u64, bits: u32) -> i64 {
    let sh = 64 - bits;
    ((x << sh) as i64) >> sh
}

/// Decodes `op d, a, b, ...` with `n` sources of type `ty`.
fn dsrc(d: &Dec<'_>, exec: super::inst::ExecFn, ty: Ty, n: usize) -> Result<Inst, String> {
    d.count(n + 1)?;
    let mut i = Inst::new(exec);
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    for k in 0..n {
        i.s[k] = d.src(k + 1, ty)?;
    }
    Ok(i)
}
