//! Integer arithmetic, logic and shifts (and `.pred` logic, `selp`); bit
//! counting, fields and selection are in `bits`.

use super::{dsrc, lanes1, lanes2, lanes3, sx};
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Ty};

type R = Result<Inst, String>;
type X = Result<Flow, Fault>;

pub(super) fn int_ty(m: &mut Mods<'_>, allowed: &[Ty]) -> Result<Ty, String> {
    let t = m.ty()?;
    if allowed.contains(&t) {
        Ok(t)
    } else {
        Err(format!("type .{t:?} is not supported by `{}`", m.op).to_lowercase())
    }
}

const ARITH: &[Ty] = &[Ty::U16, Ty::U32, Ty::U64, Ty::S16, Ty::S32, Ty::S64];
const BITS: &[Ty] = &[
    Ty::B16,
    Ty::B32,
    Ty::B64,
    Ty::U16,
    Ty::U32,
    Ty::U64,
    Ty::S16,
    Ty::S32,
    Ty::S64,
];
const ARITH_B: &[Ty] = &[
    Ty::U16,
    Ty::U32,
    Ty::U64,
    Ty::S16,
    Ty::S32,
    Ty::S64,
    Ty::B16,
    Ty::B32,
    Ty::B64,
];

const SAT: u32 = 1;

// ----- add / sub -----

pub(super) fn add(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    addsub(d, m, exec_add)
}

pub(super) fn sub(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    addsub(d, m, exec_sub)
}

fn addsub(d: &Dec<'_>, m: &mut Mods<'_>, f: crate::emu::inst::ExecFn) -> R {
    if m.take("cc") {
        return Err("carry (`.cc`, `addc`, `subc`) is not supported by the emulator".into());
    }
    let sat = m.take("sat");
    let ty = int_ty(m, ARITH_B)?;
    if sat && ty != Ty::S32 {
        return Err("`.sat` applies to .s32 only".into());
    }
    let mut i = dsrc(d, f, ty, 2)?;
    i.flags = if sat { SAT } else { 0 };
    Ok(i)
}

fn exec_add(c: &mut Ctx<'_>, i: &Inst) -> X {
    if i.flags & SAT != 0 {
        return lanes2(c, i, |a, b| {
            (i64::from(a as i32) + i64::from(b as i32)).clamp(i32::MIN.into(), i32::MAX.into()) as u32 as u64
        });
    }
    let m = i.ty.mask();
    lanes2(c, i, |a, b| a.wrapping_add(b) & m)
}

fn exec_sub(c: &mut Ctx<'_>, i: &Inst) -> X {
    if i.flags & SAT != 0 {
        return lanes2(c, i, |a, b| {
            (i64::from(a as i32) - i64::from(b as i32)).clamp(i32::MIN.into(), i32::MAX.into()) as u32 as u64
        });
    }
    let m = i.ty.mask();
    lanes2(c, i, |a, b| a.wrapping_sub(b) & m)
}

// ----- mul / mad -----

const LO: u8 = 0;
const HI: u8 = 1;
const WIDE: u8 = 2;

fn mode(m: &mut Mods<'_>) -> Result<u8, String> {
    match m.take_any(&["lo", "hi", "wide"]) {
        Some(k) => Ok(k as u8),
        None => Err(format!("`{}` needs `.lo`, `.hi` or `.wide`", m.op)),
    }
}

fn wide_ty(t: Ty) -> Result<Ty, String> {
    Ok(match t {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        _ => return Err("`.wide` needs a 16- or 32-bit type".into()),
    })
}

/// The full product of `a` and `b` as `ty` values: two's-complement bits
/// of the exact (at most 128-bit) result.
#[inline(always)]
fn product(a: u64, b: u64, ty: Ty) -> u128 {
    let w = ty.bits();
    if ty.is_signed() {
        (i128::from(sx(a, w)) * i128::from(sx(b, w))) as u128
    } else {
        let m = ty.mask();
        u128::from(a & m) * u128::from(b & m)
    }
}

/// `.hi`, `.wide` or `.lo` of a full product (the product has at most
/// `2 * w` significant bits, so a logical shift gives the high half).
#[inline(always)]
fn mul_mode(p: u128, ty: Ty, mode: u8) -> u64 {
    let w = ty.bits();
    match mode {
        HI => (p >> w) as u64 & ty.mask(),
        WIDE => p as u64 & if w >= 32 { u64::MAX } else { (1u64 << (2 * w)) - 1 },
        _ => p as u64 & ty.mask(),
    }
}

pub(super) fn mul(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let md = mode(m)?;
    let ty = int_ty(m, ARITH)?;
    let mut i = dsrc(d, exec_mul, ty, 2)?;
    i.sub = md;
    if md == WIDE {
        i.ty2 = wide_ty(ty)?;
    }
    Ok(i)
}

fn exec_mul(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (ty, md) = (i.ty, i.sub);
    match (md, ty) {
        (LO, Ty::U32 | Ty::S32) => lanes2(c, i, |a, b| (a as u32).wrapping_mul(b as u32) as u64),
        (WIDE, Ty::U32) => lanes2(c, i, |a, b| (a & 0xFFFF_FFFF) * (b & 0xFFFF_FFFF)),
        (WIDE, Ty::S32) => lanes2(c, i, |a, b| (i64::from(a as i32) * i64::from(b as i32)) as u64),
        (LO, Ty::U64 | Ty::S64) => lanes2(c, i, |a, b| a.wrapping_mul(b)),
        _ => lanes2(c, i, |a, b| mul_mode(product(a, b, ty), ty, md)),
    }
}

pub(super) fn mad(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    if m.take("cc") {
        return Err("carry (`mad.cc`, `madc`) is not supported by the emulator".into());
    }
    let md = mode(m)?;
    let sat = m.take("sat");
    let ty = int_ty(m, ARITH)?;
    if sat && (md != HI || ty != Ty::S32) {
        return Err("`.sat` applies to mad.hi.s32 only".into());
    }
    d.count(4)?;
    let mut i = Inst::new(exec_mad);
    i.ty = ty;
    i.sub = md;
    i.flags = if sat { SAT } else { 0 };
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, ty)?;
    i.s[2] = d.src(3, if md == WIDE { wide_ty(ty)? } else { ty })?;
    Ok(i)
}

fn exec_mad(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (ty, md) = (i.ty, i.sub);
    if md == LO && matches!(ty, Ty::U32 | Ty::S32) {
        return lanes3(c, i, |a, b, x| {
            (a as u32).wrapping_mul(b as u32).wrapping_add(x as u32) as u64
        });
    }
    let sat = i.flags & SAT != 0;
    lanes3(c, i, move |a, b, x| {
        let w = ty.bits();
        let p = product(a, b, ty);
        match md {
            WIDE => {
                let wt = if w == 32 { 64 } else { 32 };
                let m = if wt == 64 { u64::MAX } else { 0xFFFF_FFFF };
                (mul_mode(p, ty, WIDE).wrapping_add(x)) & m
            }
            HI => {
                let hi = if w == 64 { 0 } else { sx((p >> w) as u64, w) };
                if sat {
                    (hi + i64::from(x as i32)).clamp(i32::MIN.into(), i32::MAX.into()) as u32 as u64
                } else {
                    mul_mode(p, ty, HI).wrapping_add(x) & ty.mask()
                }
            }
            _ => (p as u64).wrapping_add(x) & ty.mask(),
        }
    })
}

pub(super) fn mul24(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let md = mode(m)?;
    if md == WIDE {
        return Err("mul24 has no `.wide`".into());
    }
    let ty = int_ty(m, &[Ty::U32, Ty::S32])?;
    let mut i = dsrc(d, exec_mul24, ty, 2)?;
    i.sub = md;
    Ok(i)
}

#[inline(always)]
fn prod24(a: u64, b: u64, signed: bool) -> i64 {
    if signed {
        sx(a, 24) * sx(b, 24)
    } else {
        ((a & 0xFF_FFFF) * (b & 0xFF_FFFF)) as i64
    }
}

fn exec_mul24(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (s, hi) = (i.ty.is_signed(), i.sub == HI);
    lanes2(c, i, |a, b| {
        let p = prod24(a, b, s);
        (if hi { (p >> 16) as u64 } else { p as u64 }) & 0xFFFF_FFFF
    })
}

pub(super) fn mad24(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let md = mode(m)?;
    if md == WIDE || m.take("sat") {
        return Err("mad24 supports `.lo` and `.hi` only".into());
    }
    let ty = int_ty(m, &[Ty::U32, Ty::S32])?;
    let mut i = dsrc(d, exec_mad24, ty, 3)?;
    i.sub = md;
    Ok(i)
}

fn exec_mad24(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (s, hi) = (i.ty.is_signed(), i.sub == HI);
    lanes3(c, i, |a, b, x| {
        let p = prod24(a, b, s);
        (if hi { (p >> 16) as u64 } else { p as u64 }).wrapping_add(x) & 0xFFFF_FFFF
    })
}

pub(super) fn sad(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, ARITH)?;
    dsrc(d, exec_sad, ty, 3)
}

fn exec_sad(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let w = ty.bits();
    lanes3(c, i, |a, b, x| {
        let diff = if ty.is_signed() {
            sx(a, w).abs_diff(sx(b, w))
        } else {
            (a & ty.mask()).abs_diff(b & ty.mask())
        };
        diff.wrapping_add(x) & ty.mask()
    })
}

// ----- div / rem -----

pub(super) fn div(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, ARITH)?;
    dsrc(d, exec_div, ty, 2)
}

pub(super) fn rem(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, ARITH)?;
    dsrc(d, exec_rem, ty, 2)
}

/// Division by zero gives all ones, for signed and unsigned types alike
/// (as an H100 does); `MIN / -1` wraps to `MIN`.
fn exec_div(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let w = ty.bits();
    let m = ty.mask();
    if ty.is_signed() {
        lanes2(c, i, |a, b| {
            let (a, b) = (sx(a, w), sx(b, w));
            // MIN / -1 wraps (in the type's width, or in i64's).
            if b == 0 { m } else { (a.wrapping_div(b) as u64) & m }
        })
    } else {
        lanes2(c, i, |a, b| (a & m).checked_div(b & m).unwrap_or(m))
    }
}

/// Remainder by zero gives all ones too (H100); `MIN % -1` is 0.
fn exec_rem(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let w = ty.bits();
    let m = ty.mask();
    if ty.is_signed() {
        lanes2(c, i, |a, b| {
            let (a, b) = (sx(a, w), sx(b, w));
            if b == 0 { m } else { (a.wrapping_rem(b) as u64) & m }
        })
    } else {
        lanes2(c, i, |a, b| (a & m).checked_rem(b & m).unwrap_or(m))
    }
}

// ----- min / max / abs / neg -----

pub(super) fn minmax(d: &Dec<'_>, m: &mut Mods<'_>, max: bool) -> R {
    let relu = m.take("relu");
    let ty = int_ty(m, ARITH)?;
    if relu && ty != Ty::S32 {
        return Err("`.relu` applies to .s32 only".into());
    }
    let mut i = dsrc(d, exec_minmax, ty, 2)?;
    i.sub = u8::from(max);
    i.flags = u32::from(relu);
    Ok(i)
}

fn exec_minmax(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let w = ty.bits();
    let (max, relu) = (i.sub == 1, i.flags != 0);
    let m = ty.mask();
    if ty.is_signed() {
        lanes2(c, i, |a, b| {
            let (a, b) = (sx(a, w), sx(b, w));
            let r = if max { a.max(b) } else { a.min(b) };
            let r = if relu { r.max(0) } else { r };
            (r as u64) & m
        })
    } else {
        lanes2(c, i, |a, b| if max { (a & m).max(b & m) } else { (a & m).min(b & m) })
    }
}

pub(super) fn abs(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::S16, Ty::S32, Ty::S64])?;
    dsrc(d, exec_abs, ty, 1)
}

fn exec_abs(c: &mut Ctx<'_>, i: &Inst) -> X {
    let w = i.ty.bits();
    let m = i.ty.mask();
    lanes1(c, i, |a| (sx(a, w).wrapping_abs() as u64) & m)
}

pub(super) fn neg(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, &[Ty::S16, Ty::S32, Ty::S64])?;
    dsrc(d, exec_neg, ty, 1)
}

fn exec_neg(c: &mut Ctx<'_>, i: &Inst) -> X {
    let m = i.ty.mask();
    lanes1(c, i, |a| a.wrapping_neg() & m)
}

// ----- logic -----

const AND: u8 = 0;
const OR: u8 = 1;
const XOR: u8 = 2;

fn logic(d: &Dec<'_>, m: &mut Mods<'_>, op: u8) -> R {
    let ty = m.ty()?;
    if ty == Ty::Pred {
        d.count(3)?;
        let mut i = Inst::new(exec_logic_pred);
        i.ty = ty;
        i.sub = op;
        i.d[0] = d.pred_dst_arg(d.arg(0)?)?;
        i.s[0] = d.src(1, Ty::Pred)?;
        i.s[1] = d.src(2, Ty::Pred)?;
        return Ok(i);
    }
    if !BITS.contains(&ty) {
        return Err(format!("`{}` needs a .b16/.b32/.b64 or .pred type", m.op));
    }
    let mut i = dsrc(d, exec_logic, ty, 2)?;
    i.sub = op;
    Ok(i)
}

pub(super) fn and(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    logic(d, m, AND)
}
pub(super) fn or(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    logic(d, m, OR)
}
pub(super) fn xor(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    logic(d, m, XOR)
}

fn exec_logic(c: &mut Ctx<'_>, i: &Inst) -> X {
    match i.sub {
        AND => lanes2(c, i, |a, b| a & b),
        OR => lanes2(c, i, |a, b| a | b),
        _ => lanes2(c, i, |a, b| a ^ b),
    }
}

fn exec_logic_pred(c: &mut Ctx<'_>, i: &Inst) -> X {
    let a = c.pred(&i.s[0])?;
    let b = c.pred(&i.s[1])?;
    let r = match i.sub {
        AND => a & b,
        OR => a | b,
        _ => a ^ b,
    };
    c.write_pred(&i.d[0], r);
    Ok(Flow::Next)
}

pub(super) fn not(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = m.ty()?;
    if ty == Ty::Pred {
        d.count(2)?;
        let mut i = Inst::new(exec_not_pred);
        i.d[0] = d.pred_dst_arg(d.arg(0)?)?;
        i.s[0] = d.src(1, Ty::Pred)?;
        return Ok(i);
    }
    if !BITS.contains(&ty) {
        return Err("`not` needs a .b16/.b32/.b64 or .pred type".into());
    }
    dsrc(d, exec_not, ty, 1)
}

fn exec_not(c: &mut Ctx<'_>, i: &Inst) -> X {
    let m = i.ty.mask();
    lanes1(c, i, |a| !a & m)
}

fn exec_not_pred(c: &mut Ctx<'_>, i: &Inst) -> X {
    let a = c.pred(&i.s[0])?;
    c.write_pred(&i.d[0], !a);
    Ok(Flow::Next)
}

pub(super) fn cnot(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, BITS)?;
    dsrc(d, exec_cnot, ty, 1)
}

fn exec_cnot(c: &mut Ctx<'_>, i: &Inst) -> X {
    let m = i.ty.mask();
    lanes1(c, i, |a| u64::from(a & m == 0))
}

// ----- shifts -----

pub(super) fn shl(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, BITS)?;
    shift(d, ty, exec_shl)
}

pub(super) fn shr(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = int_ty(m, BITS)?;
    shift(d, ty, exec_shr)
}

fn shift(d: &Dec<'_>, ty: Ty, f: crate::emu::inst::ExecFn) -> R {
    d.count(3)?;
    let mut i = Inst::new(f);
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, Ty::U32)?;
    Ok(i)
}

/// Shift amounts at or beyond the width give 0 (or the sign fill).
fn exec_shl(c: &mut Ctx<'_>, i: &Inst) -> X {
    let w = u64::from(i.ty.bits());
    let m = i.ty.mask();
    lanes2(c, i, |a, b| {
        let n = b & 0xFFFF_FFFF;
        if n >= w { 0 } else { (a << n) & m }
    })
}

fn exec_shr(c: &mut Ctx<'_>, i: &Inst) -> X {
    let ty = i.ty;
    let w = ty.bits();
    let m = ty.mask();
    if ty.is_signed() {
        lanes2(c, i, |a, b| {
            let n = (b & 0xFFFF_FFFF).min(u64::from(w) - 1);
            ((sx(a, w) >> n) as u64) & m
        })
    } else {
        lanes2(c, i, |a, b| {
            let n = b & 0xFFFF_FFFF;
            if n >= u64::from(w) { 0 } else { (a & m) >> n }
        })
    }
}

pub(super) fn shf(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let left = match m.take_any(&["l", "r"]) {
        Some(k) => k == 0,
        None => return Err("`shf` needs `.l` or `.r`".into()),
    };
    let wrap = match m.take_any(&["wrap", "clamp"]) {
        Some(k) => k == 0,
        None => return Err("`shf` needs `.wrap` or `.clamp`".into()),
    };
    int_ty(m, &[Ty::B32])?;
    let mut i = dsrc(d, exec_shf, Ty::B32, 3)?;
    i.sub = u8::from(left) | (u8::from(wrap) << 1);
    Ok(i)
}

fn exec_shf(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (left, wrap) = (i.sub & 1 != 0, i.sub & 2 != 0);
    lanes3(c, i, |a, b, n| {
        let n = if wrap { n & 31 } else { (n & 0xFFFF_FFFF).min(32) };
        let x = (a & 0xFFFF_FFFF) | ((b & 0xFFFF_FFFF) << 32);
        if left {
            ((x << n) >> 32) & 0xFFFF_FFFF
        } else {
            (x >> n) & 0xFFFF_FFFF
        }
    })
}

// ----- selp -----

pub(super) fn selp(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let ty = m.ty()?;
    if ty == Ty::Pred || ty.bits() > 64 || ty.bits() < 16 {
        return Err("`selp` needs a 16-, 32- or 64-bit type".into());
    }
    d.count(4)?;
    let mut i = Inst::new(exec_selp);
    i.ty = ty;
    i.d[0] = d.reg_dst(0)?;
    i.s[0] = d.src(1, ty)?;
    i.s[1] = d.src(2, ty)?;
    i.s[2] = d.src(3, Ty::Pred)?;
    Ok(i)
}

fn exec_selp(c: &mut Ctx<'_>, i: &Inst) -> X {
    let a = c.src(&i.s[0])?;
    let b = c.src(&i.s[1])?;
    let p = c.pred(&i.s[2])?;
    let mut d = [0u64; 32];
    for (l, d) in d.iter_mut().enumerate() {
        *d = if p >> l & 1 != 0 { a[l] } else { b[l] };
    }
    c.write(&i.d[0], &d, Ext::Zero)?;
    Ok(Flow::Next)
}

// ----- dp4a / dp2a -----

/// `dp4a.atype.btype d, a, b, c` and `dp2a.{lo,hi}.atype.btype d, a, b, c`
/// (types `.u32`/`.s32`): the sum of byte (and, for `dp2a`, half-word)
/// products plus `c`, wrapping to 32 bits. `imm`: bit 0 `a` signed, bit 1
/// `b` signed; `sub`: 0 `dp4a`, 1 `dp2a.lo`, 2 `dp2a.hi`.
fn dp_decode(d: &Dec<'_>, m: &mut Mods<'_>, sub: u8) -> R {
    let bt = int_ty(m, &[Ty::U32, Ty::S32])?;
    let at = int_ty(m, &[Ty::U32, Ty::S32])?;
    let ty = if at.is_signed() || bt.is_signed() {
        Ty::S32
    } else {
        Ty::U32
    };
    let mut i = dsrc(d, exec_dp, ty, 3)?;
    i.sub = sub;
    i.imm = u64::from(at.is_signed()) | (u64::from(bt.is_signed()) << 1);
    Ok(i)
}

pub(super) fn dp4a(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    dp_decode(d, m, 0)
}

pub(super) fn dp2a(d: &Dec<'_>, m: &mut Mods<'_>) -> R {
    let sub = match m.take_any(&["lo", "hi"]) {
        Some(k) => k as u8 + 1,
        None => return Err("`dp2a` needs `.lo` or `.hi`".into()),
    };
    dp_decode(d, m, sub)
}

/// One lane of `dp4a`/`dp2a` (see [`dp_decode`] for `sub` and `signs`).
pub(crate) fn dot_product(sub: u8, signs: u64, a: u32, b: u32, c: u32) -> u32 {
    let (sa, sb) = (signs & 1 != 0, signs & 2 != 0);
    let byte = |x: u32, k: u32, s: bool| -> i64 {
        let v = (x >> (8 * k)) & 0xFF;
        if s { i64::from(v as u8 as i8) } else { i64::from(v) }
    };
    let half = |x: u32, k: u32, s: bool| -> i64 {
        let v = (x >> (16 * k)) & 0xFFFF;
        if s { i64::from(v as u16 as i16) } else { i64::from(v) }
    };
    let mut acc = i64::from(c);
    if sub == 0 {
        for k in 0..4 {
            acc += byte(a, k, sa) * byte(b, k, sb);
        }
    } else {
        let base = if sub == 1 { 0 } else { 2 };
        for k in 0..2 {
            acc += half(a, k, sa) * byte(b, base + k, sb);
        }
    }
    acc as u32
}

fn exec_dp(c: &mut Ctx<'_>, i: &Inst) -> X {
    let (sub, signs) = (i.sub, i.imm);
    lanes3(c, i, |a, b, x| {
        u64::from(dot_product(sub, signs, a as u32, b as u32, x as u32))
    })
}
