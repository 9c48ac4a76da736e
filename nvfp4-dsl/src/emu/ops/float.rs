//! Floating-point arithmetic: f32 and f64 (`add sub mul fma div rcp sqrt
//! min max neg abs copysign testp` and the `.approx` functions), and the
//! half types f16, bf16, f16x2 and bf16x2 (`add sub mul fma min max neg
//! abs`).
//!
//! Round-to-nearest f32/f64 arithmetic uses the host's IEEE operations;
//! every other rounding mode, and every half-precision operation, goes
//! through the exact routines of `fp` (one rounding, canonical NaN).

use super::{dsrc, lanes1};
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::fp::{self, Fmt, Rnd, canon32};
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Ty};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

pub(super) const FTZ: u32 = 1;
pub(super) const SAT: u32 = 2;
const NAN: u32 = 4;
const XORSIGN: u32 = 8;
pub(super) const RELU: u32 = 16;
const APPROX: u32 = 32;
const THREE: u32 = 64;
const APPROX_DIV: u32 = 128;

pub(super) const ADD: u8 = 0;
pub(super) const SUB: u8 = 1;
pub(super) const MUL: u8 = 2;
const FMA: u8 = 3;
const DIV: u8 = 4;

fn float_ty(m: &mut Mods<'_>, allowed: &[Ty]) -> Result<Ty, String> {
    let t = m.ty()?;
    if allowed.contains(&t) {
        Ok(t)
    } else {
        Err(format!(
            "type .{} is not supported by `{}`",
            format!("{t:?}").to_lowercase(),
            m.op
        ))
    }
}

const ALL: &[Ty] = &[Ty::F32, Ty::F64, Ty::F16, Ty::F16x2, Ty::Bf16, Ty::Bf16x2];

/// Is `x` a subnormal of format `f`?
fn subnormal(x: u64, f: Fmt) -> bool {
    let exp = (x >> f.man) & ((1 << f.exp) - 1);
    exp == 0 && x & ((1 << f.man) - 1) != 0
}

fn sign_bit(f: Fmt) -> u64 {
    1 << (f.exp + f.man)
}

/// Flushes a subnormal to a zero of the same sign.
#[inline]
pub(super) fn flush(x: u64, f: Fmt) -> u64 {
    if subnormal(x, f) { x & sign_bit(f) } else { x }
}

/// `.ftz` on the result, then `.sat` (clamp to [0, 1], NaN -> +0) or
/// `.relu` (negative -> +0, NaN -> canonical NaN).
pub(super) fn post(x: u64, f: Fmt, flags: u32) -> u64 {
    let x = if flags & FTZ != 0 { flush(x, f) } else { x };
    if flags & SAT != 0 {
        return match fp::unpack(x, f) {
            fp::Val::Nan => 0,
            fp::Val::Zero(_) => 0,
            fp::Val::Inf(s) | fp::Val::Fin { s, .. } if s => 0,
            _ => {
                let one = fp::from_f64(1.0, f, Rnd::Rn);
                if fp::to_f64(x, f) > 1.0 { one } else { x }
            }
        };
    }
    if flags & RELU != 0 {
        return match fp::unpack(x, f) {
            fp::Val::Nan => f.nan(),
            fp::Val::Zero(_) => 0,
            fp::Val::Inf(s) | fp::Val::Fin { s, .. } if s => 0,
            _ => x,
        };
    }
    x
}

/// The NaN an H100 returns for f64 arithmetic: the first NaN among
/// `ops` (listed in the hardware's priority order), quieted, with its sign
/// and payload; an invalid operation on numbers (inf - inf, 0 * inf, ...)
/// gives the default NaN `0xFFF8000000000000`. (f32 and the half types
/// return their canonical NaN instead.)
pub(super) fn nan64(ops: &[u64]) -> u64 {
    ops.iter()
        .find(|x| is_nan64(**x))
        .map_or(F64_DEFAULT_NAN, |x| x | F64_QUIET)
}

pub(super) const F64_DEFAULT_NAN: u64 = 0xFFF8_0000_0000_0000;
pub(super) const F64_QUIET: u64 = 0x0008_0000_0000_0000;

#[inline]
pub(super) fn is_nan64(x: u64) -> bool {
    x & 0x7FFF_FFFF_FFFF_FFFF > 0x7FF0_0000_0000_0000
}

/// f64 NaN operand priority per operation: add/sub/mul take b first, fma
/// b, c, a, div a first.
#[inline]
fn nan64_op(op: u8, a: u64, b: u64, c: u64) -> u64 {
    match op {
        FMA => nan64(&[b, c, a]),
        DIV => nan64(&[a, b]),
        _ => nan64(&[b, a]),
    }
}

/// One element of `add/sub/mul/fma/div` in any format and mode.
fn arith(op: u8, a: u64, b: u64, c: u64, f: Fmt, rnd: Rnd, flags: u32) -> u64 {
    let (a, b, c) = if flags & FTZ != 0 {
        (flush(a, f), flush(b, f), flush(c, f))
    } else {
        (a, b, c)
    };
    let half = f != fp::F32 && f != fp::F64;
    let r = match op {
        ADD | SUB | MUL if f == fp::F16 && rnd == Rnd::Rn => super::f16_host::arith(op, a, b),
        FMA if f == fp::F16 && rnd == Rnd::Rn => super::f16_host::fma(a, b, c),
        ADD if half && rnd == Rnd::Rn => fp::add_half(a, b, f),
        SUB if half && rnd == Rnd::Rn => fp::add_half(a, b ^ sign_bit(f), f),
        MUL if half && rnd == Rnd::Rn => fp::mul_half(a, b, f),
        FMA if half && rnd == Rnd::Rn => fp::fma_half(a, b, c, f),
        ADD => fp::add(a, b, f, rnd),
        SUB => fp::sub(a, b, f, rnd),
        MUL => fp::mul(a, b, f, rnd),
        FMA => fp::fma(a, b, c, f, rnd),
        _ if flags & APPROX_DIV != 0
            && f == fp::F32
            && (b & 0x7FFF_FFFF) > 0x7E80_0000
            && (b & 0x7FFF_FFFF) < 0x7F80_0000 =>
        {
            // div.approx.f32 computes a * (1/b); for 2^126 < |b| < 2^128 the
            // reciprocal flushes: a sign-preserving zero, or NaN for inf.
            if (a & 0x7FFF_FFFF) == 0x7F80_0000 || f.is_nan(a) {
                f.nan()
            } else {
                (a ^ b) & 0x8000_0000
            }
        }
        _ => fp::div(a, b, f, rnd),
    };
    if f == fp::F64 && is_nan64(r) {
        return nan64_op(op, a, b, c);
    }
    post(r, f, flags)
}

fn decode_arith(d: &Dec<'_>, m: &mut Mods<'_>, op: u8) -> R {
    let rnd = m.rnd(false);
    let mut flags = m.flags(&[("ftz", FTZ), ("sat", SAT), ("relu", RELU)]);
    if op == DIV {
        if m.take("approx") {
            flags |= APPROX | APPROX_DIV;
        } else if m.take("full") {
            flags |= APPROX;
        } else if rnd.is_none() {
            return Err("`div` on floats needs `.rn`, `.rz`, `.rm`, `.rp`, `.approx` or `.full`".into());
        }
    }
    let ty = float_ty(m, ALL)?;
    if matches!(ty, Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2) && rnd.is_some_and(|r| r != Rnd::Rn) {
        return Err("half-precision arithmetic rounds with `.rn` only".into());
    }
    if op == DIV && !matches!(ty, Ty::F32 | Ty::F64) {
        return Err("`div` supports .f32 and .f64".into());
    }
    let n = if op == FMA { 3 } else { 2 };
    let mut i = dsrc(d, exec_arith, ty, n)?;
    i.sub = op;
    i.rnd = rnd.unwrap_or(Rnd::Rn);
    i.flags = flags;
    Ok(i)
}

pub(super) fn add(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    decode_arith(d, m, ADD)
}
pub(super) fn sub(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    decode_arith(d, m, SUB)
}
pub(super) fn mul(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    decode_arith(d, m, MUL)
}
pub(super) fn fma(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    decode_arith(d, m, FMA)
}
pub(super) fn div(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    decode_arith(d, m, DIV)
}

/// Applies `f` to each half of packed x2 values, or to the scalar.
#[inline(always)]
fn per_half(ty: Ty, a: u64, b: u64, c: u64, f: impl Fn(u64, u64, u64) -> u64) -> u64 {
    if matches!(ty, Ty::F16x2 | Ty::Bf16x2) {
        let lo = f(a & 0xFFFF, b & 0xFFFF, c & 0xFFFF);
        let hi = f((a >> 16) & 0xFFFF, (b >> 16) & 0xFFFF, (c >> 16) & 0xFFFF);
        lo | (hi << 16)
    } else {
        f(a & ty.mask(), b & ty.mask(), c & ty.mask())
    }
}

/// `g` on every lane's f32 sources (one loop per operation: a choice in
/// the loop stops it vectorising), the NaNs canonical.
#[inline(always)]
fn f32_lanes(d: &mut [u64; 32], [a, b, x]: [&[u64; 32]; 3], g: impl Fn(f32, f32, f32) -> f32) {
    let f = |v: u64| f32::from_bits(v as u32);
    for l in 0..32 {
        d[l] = u64::from(canon32(g(f(a[l]), f(b[l]), f(x[l])).to_bits()));
    }
}

fn exec_arith(c: &mut Ctx<'_>, i: &Inst) -> X {
    let exec = c.exec;
    let [a, b, x] = if i.sub == FMA {
        c.srcs([&i.s[0], &i.s[1], &i.s[2]])?
    } else {
        let [a, b] = c.srcs([&i.s[0], &i.s[1]])?;
        [a, b, a]
    };
    let mut d = [0u64; 32];
    let (op, rnd, flags, ty) = (i.sub, i.rnd, i.flags, i.ty);
    let fast = rnd == Rnd::Rn && flags == 0;
    match ty {
        Ty::F32 if fast => match op {
            ADD => f32_lanes(&mut d, [a, b, x], |p, q, _| p + q),
            SUB => f32_lanes(&mut d, [a, b, x], |p, q, _| p - q),
            MUL => f32_lanes(&mut d, [a, b, x], |p, q, _| p * q),
            FMA => f32_lanes(&mut d, [a, b, x], f32::mul_add),
            _ => f32_lanes(&mut d, [a, b, x], |p, q, _| p / q),
        },
        Ty::F64 if fast => {
            let f = f64::from_bits;
            for l in 0..32 {
                let (p, q) = (f(a[l]), f(b[l]));
                let r = match op {
                    ADD => p + q,
                    SUB => p - q,
                    MUL => p * q,
                    FMA => p.mul_add(q, f(x[l])),
                    _ => p / q,
                };
                d[l] = if r.is_nan() {
                    nan64_op(op, a[l], b[l], x[l])
                } else {
                    r.to_bits()
                };
            }
        }
        Ty::F16 | Ty::F16x2 if fast && op <= MUL => {
            super::f16_host::arith_lanes(&mut d, op, ty == Ty::F16x2, a, b);
        }
        _ => {
            let fmt = ty.fmt().expect("a float type");
            for l in crate::emu::state::lanes(exec) {
                d[l] = per_half(ty, a[l], b[l], x[l], |p, q, r| arith(op, p, q, r, fmt, rnd, flags));
            }
        }
    }
    c.write(&i.d[0], &d, Ext::Zero)?;
    Ok(Flow::Next)
}

// ----- one-operand functions -----

const RCP: u8 = 0;
const SQRT: u8 = 1;
const RSQRT: u8 = 2;
const EX2: u8 = 3;
const LG2: u8 = 4;
const SIN: u8 = 5;
const COS: u8 = 6;
const TANH: u8 = 7;

fn unary(d: &Dec<'_>, m: &mut Mods<'_>, op: u8, types: &[Ty], rounded: bool) -> R {
    let approx = m.take("approx");
    let rnd = if rounded { m.rnd(false) } else { None };
    if !approx && rnd.is_none() {
        return Err(if rounded {
            format!("`{}` needs a rounding modifier or `.approx`", m.op)
        } else {
            format!("`{}` needs `.approx`", m.op)
        });
    }
    let mut flags = if approx { APPROX } else { 0 };
    if m.take("ftz") {
        flags |= FTZ;
    }
    let ty = float_ty(m, types)?;
    let mut i = dsrc(d, exec_unary, ty, 1)?;
    i.sub = op;
    i.rnd = rnd.unwrap_or(Rnd::Rn);
    i.flags = flags;
    Ok(i)
}

pub(super) fn rcp(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, RCP, &[Ty::F32, Ty::F64], true)
}
pub(super) fn sqrt(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, SQRT, &[Ty::F32, Ty::F64], true)
}
pub(super) fn rsqrt(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, RSQRT, &[Ty::F32, Ty::F64], false)
}
pub(super) fn ex2(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, EX2, ALL, false)
}
pub(super) fn lg2(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, LG2, &[Ty::F32], false)
}
pub(super) fn sin(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, SIN, &[Ty::F32], false)
}
pub(super) fn cos(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, COS, &[Ty::F32], false)
}
pub(super) fn tanh(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    unary(d, m, TANH, ALL, false)
}

fn unary_one(op: u8, x: u64, f: Fmt, rnd: Rnd, flags: u32) -> u64 {
    let x = if flags & FTZ != 0 { flush(x, f) } else { x };
    if f == fp::F64 && is_nan64(x) {
        return nan64(&[x]);
    }
    let one = fp::from_f64(1.0, f, Rnd::Rn);
    let r = match op {
        RCP if flags & APPROX == 0 => fp::div(one, x, f, rnd),
        SQRT if flags & APPROX == 0 => fp::sqrt(x, f, rnd),
        _ => {
            // The `.approx` functions: accurate here, not bit-exact with
            // the hardware's approximations.
            let v = fp::to_f64(x, f);
            let r = match op {
                RCP => 1.0 / v,
                SQRT => v.sqrt(),
                RSQRT => 1.0 / v.sqrt(),
                EX2 => v.exp2(),
                LG2 => v.log2(),
                SIN => v.sin(),
                COS => v.cos(),
                _ => v.tanh(),
            };
            if r.is_nan() {
                f.nan()
            } else {
                fp::from_f64(r, f, Rnd::Rn)
            }
        }
    };
    if f == fp::F64 && is_nan64(r) {
        return F64_DEFAULT_NAN;
    }
    post(r, f, flags & FTZ)
}

fn exec_unary(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (op, rnd, flags, ty) = (i.sub, i.rnd, i.flags, i.ty);
    let fmt = ty.fmt().expect("a float type");
    if ty == Ty::F32 && op == SQRT && rnd == Rnd::Rn && flags == 0 {
        return lanes1(c, i, |a| u64::from(canon32(f32::from_bits(a as u32).sqrt().to_bits())));
    }
    lanes1(c, i, |a| {
        per_half(ty, a, 0, 0, |p, _, _| unary_one(op, p, fmt, rnd, flags))
    })
}

// ----- sign operations -----

pub(super) fn neg(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    sign_op(d, m, 0)
}
pub(super) fn abs(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    sign_op(d, m, 1)
}

fn sign_op(d: &Dec<'_>, m: &mut Mods<'_>, op: u8) -> R {
    let ftz = m.take("ftz");
    let ty = float_ty(m, ALL)?;
    let mut i = dsrc(d, exec_sign, ty, 1)?;
    i.sub = op;
    i.flags = if ftz { FTZ } else { 0 };
    Ok(i)
}

/// `neg`/`abs` flip or clear the sign bit of numbers. A NaN comes back as
/// the canonical NaN for f32 and the half types, and quieted but otherwise
/// unchanged (sign included) for f64 — what an H100 does.
fn exec_sign(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (ty, op, ftz) = (i.ty, i.sub, i.flags & FTZ != 0);
    let fmt = ty.fmt().expect("a float type");
    let s = sign_bit(fmt);
    lanes1(c, i, |a| {
        per_half(ty, a, 0, 0, |x, _, _| {
            let x = if ftz { flush(x, fmt) } else { x };
            if fmt.is_nan(x) {
                if fmt == fp::F64 { nan64(&[x]) } else { fmt.nan() }
            } else if op == 0 {
                x ^ s
            } else {
                x & !s
            }
        })
    })
}

pub(super) fn copysign(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = float_ty(m, &[Ty::F32, Ty::F64])?;
    dsrc(d, exec_copysign, ty, 2)
}

fn exec_copysign(c: &mut Ctx<'_>, i: &Inst) -> X {
    let s = sign_bit(i.ty.fmt().expect("float"));
    super::lanes2(c, i, |a, b| (b & !s) | (a & s))
}

pub(super) fn testp(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let op = m
        .take_any(&["finite", "infinite", "number", "notanumber", "normal", "subnormal"])
        .ok_or("`testp` needs a test (.finite, .infinite, .number, .notanumber, .normal, .subnormal)")?;
    let ty = float_ty(m, &[Ty::F32, Ty::F64])?;
    d.count(2)?;
    let mut i = Inst::new(exec_testp);
    i.ty = ty;
    i.sub = op as u8;
    i.d[0] = d.pred_dst_arg(d.arg(0)?)?;
    i.s[0] = d.src(1, ty)?;
    Ok(i)
}

fn exec_testp(c: &mut Ctx<'_>, i: &Inst) -> X {
    let a = c.src(&i.s[0])?;
    let f = i.ty.fmt().expect("float");
    let mut bits = 0u32;
    for (l, x) in a.iter().enumerate() {
        let v = fp::unpack(*x, f);
        let t = match i.sub {
            0 => matches!(v, fp::Val::Zero(_) | fp::Val::Fin { .. }),
            1 => matches!(v, fp::Val::Inf(_)),
            2 => !matches!(v, fp::Val::Nan),
            3 => matches!(v, fp::Val::Nan),
            // Zeros count as normal numbers (PTX ISA).
            4 => matches!(v, fp::Val::Zero(_) | fp::Val::Fin { .. }) && !subnormal(*x, f),
            _ => subnormal(*x, f),
        };
        bits |= u32::from(t) << l;
    }
    c.write_pred(&i.d[0], bits);
    Ok(Flow::Next)
}

// ----- min / max -----

pub(super) fn minmax(d: &Dec<'_>, m: &mut Mods<'_>, max: bool) -> R {
    let mut flags = m.flags(&[("ftz", FTZ), ("NaN", NAN), ("relu", RELU)]);
    if m.take("xorsign") {
        if !m.take("abs") {
            return Err("`.xorsign` needs `.abs`".into());
        }
        flags |= XORSIGN;
    } else if m.take("abs") {
        return Err("`.abs` on min/max is supported with `.xorsign` only".into());
    }
    let ty = float_ty(m, ALL)?;
    let three = d.args.len() == 4;
    if three && (ty != Ty::F32 || flags & XORSIGN != 0) {
        return Err("three-input min/max is .f32 only, without .xorsign".into());
    }
    let mut i = dsrc(d, exec_minmax, ty, if three { 3 } else { 2 })?;
    i.sub = u8::from(max);
    i.flags = flags | if three { THREE } else { 0 };
    Ok(i)
}

/// PTX min/max: NaN operands are ignored unless both are NaN (or `.NaN`
/// is given), -0 orders below +0.
fn min_max_one(a: u64, b: u64, f: Fmt, max: bool, flags: u32) -> u64 {
    let (a, b) = if flags & FTZ != 0 {
        (flush(a, f), flush(b, f))
    } else {
        (a, b)
    };
    let xs = (a ^ b) & sign_bit(f);
    let (a, b) = if flags & XORSIGN != 0 {
        (a & !sign_bit(f), b & !sign_bit(f))
    } else {
        (a, b)
    };
    let (na, nb) = (f.is_nan(a), f.is_nan(b));
    let r = if na && nb || (flags & NAN != 0 && (na || nb)) {
        return if f == fp::F64 { nan64(&[b, a]) } else { f.nan() };
    } else if na {
        b
    } else if nb {
        a
    } else {
        let (x, y) = (fp::to_f64(a, f), fp::to_f64(b, f));
        let a_less = x < y || (x == y && a & sign_bit(f) != 0 && b & sign_bit(f) == 0);
        if a_less == max { b } else { a }
    };
    let r = if flags & XORSIGN != 0 { r | xs } else { r };
    post(r, f, flags & (FTZ | RELU))
}

fn exec_minmax(c: &mut Ctx<'_>, i: &Inst) -> X {
    let a = c.src(&i.s[0])?;
    let b = c.src(&i.s[1])?;
    let three = i.flags & THREE != 0;
    let x = if three { c.src(&i.s[2])? } else { [0; 32] };
    let (ty, max, flags) = (i.ty, i.sub == 1, i.flags);
    let fmt = ty.fmt().expect("float");
    let mut d = [0u64; 32];
    for l in crate::emu::state::lanes(c.exec) {
        d[l] = per_half(ty, a[l], b[l], 0, |p, q, _| min_max_one(p, q, fmt, max, flags));
        if three {
            d[l] = min_max_one(d[l], x[l], fmt, max, flags);
        }
    }
    c.write(&i.d[0], &d, Ext::Zero)?;
    Ok(Flow::Next)
}
