//! `cvt`: integer <-> integer (truncate, extend, saturate), integer <->
//! float with rounding, float <-> float (f64/f32/f16/bf16, rounding to
//! integral values), and the packed forms (`f16x2`/`bf16x2` from two f32,
//! the 8/6/4-bit formats to and from `f16x2`, tf32).

use super::float::{FTZ, RELU, SAT, flush, post};
use crate::emu::ctx::Ctx;
use crate::emu::decode::Dec;
use crate::emu::fp::{self, Fmt, Rnd, canon32};
use crate::emu::inst::{Ext, Fault, Flow, Inst, Mods, Ty};
use crate::emu::parse::Arg;
use crate::emu::state::lanes;

const INT_INT: u8 = 0;
const FLOAT_INT: u8 = 1; // float -> int
const INT_FLOAT: u8 = 2; // int -> float
const FLOAT_FLOAT: u8 = 3;
const ROUND_INTEGRAL: u8 = 4;
const PACK: u8 = 5; // two f32 -> x2
const UNPACK: u8 = 6; // packed small formats -> f16x2
const NARROW_X2: u8 = 7; // f16x2 -> e4m3x2/e5m2x2
const TF32: u8 = 8;

const SATFINITE: u32 = 32;

/// The element format and width of a packed type.
fn packed(t: Ty) -> Option<(Fmt, u32)> {
    Some(match t {
        Ty::F16x2 => (fp::F16, 16),
        Ty::Bf16x2 => (fp::BF16, 16),
        Ty::E4m3x2 => (fp::E4M3, 8),
        Ty::E5m2x2 => (fp::E5M2, 8),
        Ty::E2m1x2 => (fp::E2M1, 4),
        Ty::E2m3x2 => (fp::E2M3, 8),
        Ty::E3m2x2 => (fp::E3M2, 8),
        _ => return None,
    })
}

/// The f16 bits of every code of the packed small format `t` (one of
/// `UNPACK`'s sources), made once per format by `fp::convert`: the
/// conversion is exact and depends on the code alone.
fn unpack_table(t: Ty) -> &'static [u64; 256] {
    static TABLES: [std::sync::OnceLock<[u64; 256]>; 5] = [const { std::sync::OnceLock::new() }; 5];
    let k = match t {
        Ty::E4m3x2 => 0,
        Ty::E5m2x2 => 1,
        Ty::E2m1x2 => 2,
        Ty::E2m3x2 => 3,
        Ty::E3m2x2 => 4,
        other => unreachable!("decode makes UNPACK only of the packed small formats, not {other:?}"),
    };
    TABLES[k].get_or_init(|| {
        let (ef, w) = packed(t).expect("a packed small format");
        std::array::from_fn(|x| fp::convert(x as u64 & ((1 << w) - 1), ef, fp::F16, Rnd::Rn, false))
    })
}

const TF32_FMT: Fmt = Fmt {
    exp: 8,
    man: 10,
    kind: fp::Kind::Ieee,
};

pub(super) fn cvt(d: &Dec<'_>, m: &mut Mods<'_>) -> Result<Inst, String> {
    let irnd = m.irnd();
    let frnd = m.rnd(true);
    let flags = m.flags(&[("ftz", FTZ), ("sat", SAT), ("relu", RELU), ("satfinite", SATFINITE)]);
    let at = m.ty()?;
    let dt = m.ty()?;
    if irnd.is_some() && frnd.is_some() {
        return Err("`cvt` takes one rounding modifier".into());
    }
    let src_of = |d: &Dec<'_>, k: usize, t: Ty| d.src(k, t);
    let (sub, nsrc) = if matches!(
        dt,
        Ty::F16x2 | Ty::Bf16x2 | Ty::E4m3x2 | Ty::E5m2x2 | Ty::E2m1x2 | Ty::E2m3x2 | Ty::E3m2x2
    ) && at == Ty::F32
    {
        let small = !matches!(dt, Ty::F16x2 | Ty::Bf16x2);
        if small && (frnd != Some(Rnd::Rn) || flags & SATFINITE == 0) {
            return Err(format!("conversion to .{dt:?} needs `.rn.satfinite`").to_lowercase());
        }
        if !small && !matches!(frnd, Some(Rnd::Rn | Rnd::Rz)) {
            return Err("conversion to a packed half type needs `.rn` or `.rz`".into());
        }
        (PACK, 2)
    } else if dt == Ty::F16x2 && matches!(at, Ty::E4m3x2 | Ty::E5m2x2 | Ty::E2m1x2 | Ty::E2m3x2 | Ty::E3m2x2) {
        if frnd != Some(Rnd::Rn) {
            return Err("conversion to .f16x2 needs `.rn`".into());
        }
        (UNPACK, 1)
    } else if matches!(dt, Ty::E4m3x2 | Ty::E5m2x2) && at == Ty::F16x2 {
        if frnd != Some(Rnd::Rn) || flags & SATFINITE == 0 {
            return Err("conversion from .f16x2 needs `.rn.satfinite`".into());
        }
        (NARROW_X2, 1)
    } else if dt == Ty::Tf32 && at == Ty::F32 {
        if !matches!(frnd, Some(Rnd::Rna | Rnd::Rn | Rnd::Rz)) {
            return Err("conversion to .tf32 needs `.rna`, `.rn` or `.rz`".into());
        }
        (TF32, 1)
    } else if dt.is_int() && at.is_int() {
        if irnd.is_some() || frnd.is_some() {
            return Err("integer-to-integer `cvt` takes no rounding modifier".into());
        }
        (INT_INT, 1)
    } else if dt.is_int() && at.is_float() {
        if irnd.is_none() {
            return Err("float-to-integer `cvt` needs `.rni`, `.rzi`, `.rmi` or `.rpi`".into());
        }
        (FLOAT_INT, 1)
    } else if dt.is_float() && at.is_int() {
        if frnd.is_none() || frnd == Some(Rnd::Rna) {
            return Err("integer-to-float `cvt` needs `.rn`, `.rz`, `.rm` or `.rp`".into());
        }
        (INT_FLOAT, 1)
    } else if dt.is_float() && at.is_float() {
        if irnd.is_some() {
            if dt != at {
                return Err("rounding to an integral value needs equal types".into());
            }
            (ROUND_INTEGRAL, 1)
        } else {
            if dt.bits() < at.bits() && frnd.is_none() {
                return Err("a narrowing float conversion needs `.rn`, `.rz`, `.rm` or `.rp`".into());
            }
            if dt == Ty::Bf16 && at == Ty::F16 && frnd.is_none() {
                return Err("f16 -> bf16 needs a rounding modifier".into());
            }
            (FLOAT_FLOAT, 1)
        }
    } else {
        return Err(format!("conversion .{dt:?} <- .{at:?} is not supported").to_lowercase());
    };
    check_packed_registers(d, sub, dt, at)?;
    let mut i = Inst::new(if sub == INT_INT { exec_cvt_int } else { exec_cvt });
    i.ty = dt;
    i.ty2 = at;
    i.flags = flags;
    i.sub = sub;
    i.rnd = irnd.or(frnd).unwrap_or(Rnd::Rn);
    d.count(nsrc + 1)?;
    i.d[0] = d.reg_dst(0)?;
    let st = if sub == PACK { Ty::F32 } else { at };
    for k in 0..nsrc {
        i.s[k] = src_of(d, k + 1, st)?;
    }
    if dt.is_signed() && dt.bits() < 64 {
        i.ext = Ext::Sign(dt.bits() as u8);
    }
    Ok(i)
}

/// The registers of a conversion to or from a packed small format, whose
/// types ptxas checks exactly (`Arguments mismatch for instruction
/// 'cvt'`): `.e2m1x2` in a `.b8` register, the 8-bit pairs in a `.b16`
/// one, the `f16x2` they unpack to in a `.b32` or `.f16x2` one.
fn check_packed_registers(d: &Dec<'_>, sub: u8, dt: Ty, at: Ty) -> Result<(), String> {
    let small = |t: Ty| if t == Ty::E2m1x2 { ".b8" } else { ".b16" };
    let checks: &[(usize, &[&str])] = match sub {
        PACK if !matches!(dt, Ty::F16x2 | Ty::Bf16x2) => &[(0, &[small(dt)])],
        NARROW_X2 => &[(0, &[small(dt)])],
        UNPACK => &[(0, &[".b32", ".f16x2"]), (1, &[small(at)])],
        _ => return Ok(()),
    };
    for &(k, allowed) in checks {
        let found = match d.arg(k)? {
            // An unknown name is reported where the operand is decoded.
            Arg::Name(n) => match d.reg_type(n) {
                Some(t) if allowed.contains(&t) => continue,
                Some(t) => format!("`{n}` is `{t}`"),
                None => continue,
            },
            Arg::Sink => continue,
            _ => "this is not a register".to_string(),
        };
        let want = allowed.join("` or `");
        let hint = match (k, allowed) {
            (0, [w @ (".b8" | ".b16")]) => format!(
                "; in a `ptx!` template, convert into a temporary declared in a block and widen it into the result: `{{{{ .reg {w} t; cvt.. t, ..; cvt.u32.u{} {{d}}, t; }}}}`",
                &w[2..]
            ),
            (1, [".b8"]) => "; in a `ptx!` template, narrow the input into a temporary declared in a block first: `{{ .reg .b8 t; mov.b32 {{t, _, _, _}}, {0}; cvt.. {d}, t; }}`".to_string(),
            (1, _) => "; in a `ptx!` template, narrow the input into a temporary declared in a block first: `{{ .reg .b16 t; mov.b32 {{t, _}}, {0}; cvt.. {d}, t; }}`".to_string(),
            _ => String::new(),
        };
        let role = if k == 0 { "destination" } else { "source" };
        return Err(format!(
            "its {role} must be a `{want}` register, and {found} (ptxas: `Arguments mismatch for instruction 'cvt'`){hint}"
        ));
    }
    Ok(())
}

fn int_of(x: u64, t: Ty) -> i128 {
    let w = t.bits();
    if t.is_signed() {
        i128::from(super::sx(x, w))
    } else {
        i128::from(x & t.mask())
    }
}

/// `cvt` between integer types into `d`: the source's value, saturated to
/// the destination's range with `.sat`, cut to its width.
#[inline(always)]
fn int_to_int(d: &mut [u64; 32], a: &[u64; 32], at: Ty, dt: Ty, sat: bool) {
    let (w, am, dm) = (at.bits(), at.mask(), dt.mask());
    if sat {
        let (lo, hi) = if dt.is_signed() {
            (-(1i128 << (dt.bits() - 1)), (1i128 << (dt.bits() - 1)) - 1)
        } else {
            (0, (1i128 << dt.bits()) - 1)
        };
        for (d, a) in d.iter_mut().zip(a) {
            *d = int_of(*a, at).clamp(lo, hi) as u64 & dm;
        }
    } else if at.is_signed() {
        // What `int_of`'s i128 truncates to, in u64.
        for (d, a) in d.iter_mut().zip(a) {
            *d = super::sx(*a, w) as u64 & dm;
        }
    } else {
        for (d, a) in d.iter_mut().zip(a) {
            *d = *a & am & dm;
        }
    }
}

/// `cvt` between integer types, the most common `cvt` (index widening),
/// on its own: no choice of family, no second source.
fn exec_cvt_int(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let [a] = c.srcs([&i.s[0]])?;
    // Filled in place: a returned array is copied (a call to `memmove`).
    let mut d = [0u64; 32];
    int_to_int(&mut d, a, i.ty2, i.ty, i.flags & SAT != 0);
    c.write(&i.d[0], &d, i.ext)?;
    Ok(Flow::Next)
}

fn exec_cvt(c: &mut Ctx<'_>, i: &Inst) -> Result<Flow, Fault> {
    let exec = c.exec;
    let [a, b] = if i.sub == PACK {
        c.srcs([&i.s[0], &i.s[1]])?
    } else {
        let [a] = c.srcs([&i.s[0]])?;
        [a, a]
    };
    let (dt, at, rnd, flags) = (i.ty, i.ty2, i.rnd, i.flags);
    let mut d = [0u64; 32];
    if flags == 0 && rnd == Rnd::Rn && super::f16_host::cvt(&mut d, at, dt, a, b) {
        c.write(&i.d[0], &d, i.ext)?;
        return Ok(Flow::Next);
    }
    match i.sub {
        FLOAT_INT => {
            let af = at.fmt().expect("float");
            if at == Ty::F32 && rnd == Rnd::Rz && flags & FTZ == 0 && matches!(dt, Ty::S32 | Ty::U32) {
                for (d, a) in d.iter_mut().zip(a) {
                    let x = f32::from_bits(*a as u32);
                    *d = if dt == Ty::S32 { x as i32 as u32 } else { x as u32 } as u64;
                }
            } else {
                for l in lanes(exec) {
                    let x = a[l] & at.mask();
                    let x = if flags & FTZ != 0 && at == Ty::F32 {
                        flush(x, af)
                    } else {
                        x
                    };
                    d[l] = fp::to_int(x, af, rnd, dt.bits(), dt.is_signed());
                }
            }
        }
        INT_FLOAT => {
            let df = dt.fmt().expect("float");
            if rnd == Rnd::Rn && flags == 0 && dt == Ty::F32 && matches!(at, Ty::S32 | Ty::U32) {
                for (d, a) in d.iter_mut().zip(a) {
                    let v = if at == Ty::S32 {
                        *a as u32 as i32 as f32
                    } else {
                        *a as u32 as f32
                    };
                    *d = u64::from(v.to_bits());
                }
            } else {
                for l in lanes(exec) {
                    let v = int_of(a[l], at);
                    let r = fp::from_int(v < 0, v.unsigned_abs() as u64, rnd, df);
                    d[l] = post(r, df, flags & (FTZ | SAT));
                }
            }
        }
        ROUND_INTEGRAL => {
            let f = dt.fmt().expect("float");
            for l in lanes(exec) {
                let x = if flags & FTZ != 0 {
                    flush(a[l] & at.mask(), f)
                } else {
                    a[l] & at.mask()
                };
                d[l] = if f == fp::F64 && f.is_nan(x) {
                    super::float::nan64(&[x])
                } else {
                    post(fp::round_to_integral(x, f, rnd), f, flags & (FTZ | SAT))
                };
            }
        }
        FLOAT_FLOAT => {
            let (af, df) = (at.fmt().expect("float"), dt.fmt().expect("float"));
            let satfinite = flags & SATFINITE != 0;
            let wide = af == fp::F64 || df == fp::F64;
            for l in lanes(exec) {
                let mut x = a[l] & at.mask();
                if flags & FTZ != 0 && at == Ty::F32 {
                    x = flush(x, af);
                }
                let r = if at == Ty::Bf16 && dt == Ty::F32 {
                    // bf16 is the top half of an f32: a plain shift, NaNs
                    // included (H100).
                    x << 16
                } else if wide && af.is_nan(x) {
                    nan_payload(x, af, df)
                } else if at == Ty::F32 && dt == Ty::F64 {
                    f64::from(f32::from_bits(x as u32)).to_bits()
                } else if at == Ty::F64 && dt == Ty::F32 && rnd == Rnd::Rn && !satfinite {
                    u64::from(canon32((f64::from_bits(x) as f32).to_bits()))
                } else {
                    fp::convert(x, af, df, rnd, satfinite)
                };
                let post_flags = if dt == Ty::F32 {
                    flags & (FTZ | SAT | RELU)
                } else {
                    flags & (SAT | RELU)
                };
                d[l] = post(r, df, post_flags);
            }
        }
        PACK => {
            let (ef, w) = packed(dt).expect("packed type");
            let satfinite = flags & SATFINITE != 0;
            let one = |x: u64| {
                let r = fp::convert(x & 0xFFFF_FFFF, fp::F32, ef, rnd, satfinite);
                relu_small(r, ef, flags)
            };
            for l in lanes(exec) {
                d[l] = (one(a[l]) << w) | one(b[l]);
            }
        }
        UNPACK => {
            let (_, w) = packed(at).expect("packed type");
            let (mask, table) = ((1u64 << w) - 1, unpack_table(at));
            let one = |x: u64| relu_small(table[(x & mask) as usize], fp::F16, flags);
            for l in lanes(exec) {
                d[l] = one(a[l]) | (one(a[l] >> w) << 16);
            }
        }
        NARROW_X2 => {
            let (ef, _) = packed(dt).expect("packed type");
            let one = |x: u64| relu_small(fp::convert(x & 0xFFFF, fp::F16, ef, rnd, true), ef, flags);
            for l in lanes(exec) {
                d[l] = one(a[l]) | (one(a[l] >> 16) << 8);
            }
        }
        _ => {
            // tf32: f32 rounded to a 10-bit mantissa, low 13 bits zero. An
            // H100 turns a NaN into 0x7FFFE000, and with `.satfinite` maps
            // NaN and infinity bits `x` to `(x & !0x1FFF) - 0x2000`.
            let satfinite = flags & SATFINITE != 0;
            for l in lanes(exec) {
                let x = a[l] & 0xFFFF_FFFF;
                if x & 0x7F80_0000 == 0x7F80_0000 && (satfinite || x & 0x007F_FFFF != 0) {
                    d[l] = if satfinite { (x & !0x1FFF) - 0x2000 } else { 0x7FFF_E000 };
                    continue;
                }
                let r = fp::convert(x, fp::F32, TF32_FMT, rnd, satfinite);
                // Re-expand to the f32 layout (exponent widths agree).
                d[l] = relu_small(r, TF32_FMT, flags) << 13;
            }
        }
    }
    c.write(&i.d[0], &d, i.ext)?;
    Ok(Flow::Next)
}

/// A NaN converted to or from f64 keeps its sign and the top bits of its
/// payload, and is quieted (H100); other float conversions of a NaN give
/// the canonical NaN.
fn nan_payload(x: u64, from: Fmt, to: Fmt) -> u64 {
    let sign = (x >> (from.exp + from.man)) & 1;
    let man = x & ((1 << from.man) - 1);
    let man = if to.man >= from.man {
        man << (to.man - from.man)
    } else {
        man >> (from.man - to.man)
    };
    let quiet = 1 << (to.man - 1);
    (sign << (to.exp + to.man)) | (((1 << to.exp) - 1) << to.man) | man | quiet
}

/// `.relu` for packed outputs: negative values become +0 (NaN stays).
fn relu_small(r: u64, f: Fmt, flags: u32) -> u64 {
    if flags & RELU == 0 {
        return r;
    }
    match fp::unpack(r, f) {
        fp::Val::Nan => f.nan(),
        fp::Val::Zero(_) => 0,
        fp::Val::Inf(true) | fp::Val::Fin { s: true, .. } => 0,
        _ => r,
    }
}
