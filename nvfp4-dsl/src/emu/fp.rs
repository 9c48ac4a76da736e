//! Exact floating-point arithmetic for any small binary format.
//!
//! Every operation here computes the exact result (as an integer mantissa
//! times a power of two, with a sticky bit jammed into the lowest bit when a
//! quotient or root is not exact) and rounds it once with [`round`]. That
//! gives correctly rounded results in every rounding mode, with subnormals,
//! for f64, f32, f16, bf16 and the 8/6/4-bit formats. The executors use
//! native `f32`/`f64` arithmetic where it is provably the same (IEEE
//! round-to-nearest-even) and fall back to these routines otherwise.
//!
//! NaN results are NVIDIA's canonical NaN of the format (all payload bits
//! set, sign clear): f32 `0x7FFFFFFF`, f16 and bf16 `0x7FFF`, e4m3/e5m2
//! `0x7F` (and `0x7FFFFFFFFFFFFFFF` for f64, which the f64 executors
//! replace with the hardware's NaN propagation).

use super::fp_rn::{narrow_to_f64, round_rn};

/// A rounding mode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rnd {
    /// To nearest, ties to even (`.rn`, `.rni`).
    Rn,
    /// To nearest, ties away from zero (`.rna`).
    Rna,
    /// Toward zero (`.rz`, `.rzi`).
    Rz,
    /// Toward negative infinity (`.rm`, `.rmi`).
    Rm,
    /// Toward positive infinity (`.rp`, `.rpi`).
    Rp,
}

/// What the all-ones exponent means in a format.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// IEEE 754: infinities and NaNs.
    Ieee,
    /// e4m3 ("fn"): no infinities; only all-ones exponent and mantissa is NaN.
    Fn,
    /// e2m1, e2m3, e3m2: every encoding is finite.
    Finite,
}

/// A binary floating-point format.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Fmt {
    pub exp: u32,
    pub man: u32,
    pub kind: Kind,
}

pub(crate) const F64: Fmt = Fmt {
    exp: 11,
    man: 52,
    kind: Kind::Ieee,
};
pub(crate) const F32: Fmt = Fmt {
    exp: 8,
    man: 23,
    kind: Kind::Ieee,
};
pub(crate) const F16: Fmt = Fmt {
    exp: 5,
    man: 10,
    kind: Kind::Ieee,
};
pub(crate) const BF16: Fmt = Fmt {
    exp: 8,
    man: 7,
    kind: Kind::Ieee,
};
pub(crate) const E4M3: Fmt = Fmt {
    exp: 4,
    man: 3,
    kind: Kind::Fn,
};
pub(crate) const E5M2: Fmt = Fmt {
    exp: 5,
    man: 2,
    kind: Kind::Ieee,
};
pub(crate) const E2M1: Fmt = Fmt {
    exp: 2,
    man: 1,
    kind: Kind::Finite,
};
pub(crate) const E2M3: Fmt = Fmt {
    exp: 2,
    man: 3,
    kind: Kind::Finite,
};
pub(crate) const E3M2: Fmt = Fmt {
    exp: 3,
    man: 2,
    kind: Kind::Finite,
};

impl Fmt {
    pub(crate) fn bias(self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }
    fn sign_bit(self) -> u64 {
        1 << (self.exp + self.man)
    }
    fn exp_ones(self) -> u64 {
        (1 << self.exp) - 1
    }
    /// The canonical NaN (for finite-only formats, which have none: the
    /// largest positive value, as `.satfinite` produces).
    pub fn nan(self) -> u64 {
        match self.kind {
            Kind::Finite => self.max(false),
            _ => self.sign_bit() - 1,
        }
    }
    pub fn inf(self, neg: bool) -> u64 {
        match self.kind {
            Kind::Ieee => (self.exp_ones() << self.man) | self.sign(neg),
            _ => self.max(neg),
        }
    }
    pub fn zero(self, neg: bool) -> u64 {
        self.sign(neg)
    }
    /// The largest finite value.
    pub fn max(self, neg: bool) -> u64 {
        let mag = match self.kind {
            Kind::Ieee => ((self.exp_ones() - 1) << self.man) | ((1 << self.man) - 1),
            Kind::Fn => (self.exp_ones() << self.man) | ((1 << self.man) - 2),
            Kind::Finite => (self.exp_ones() << self.man) | ((1 << self.man) - 1),
        };
        mag | self.sign(neg)
    }
    fn sign(self, neg: bool) -> u64 {
        if neg { self.sign_bit() } else { 0 }
    }
    pub fn is_nan(self, bits: u64) -> bool {
        matches!(unpack(bits, self), Val::Nan)
    }
}

/// A decoded value: `Fin` is `(-1)^s * m * 2^e` with `m != 0`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Val {
    Nan,
    Inf(bool),
    Zero(bool),
    Fin { s: bool, m: u64, e: i32 },
}

pub(crate) fn unpack(bits: u64, f: Fmt) -> Val {
    let s = bits & f.sign_bit() != 0;
    let be = (bits >> f.man) & f.exp_ones();
    let frac = bits & ((1 << f.man) - 1);
    if be == f.exp_ones() {
        match f.kind {
            Kind::Ieee => return if frac == 0 { Val::Inf(s) } else { Val::Nan },
            Kind::Fn if frac == (1 << f.man) - 1 => return Val::Nan,
            _ => {}
        }
    }
    if be == 0 {
        if frac == 0 {
            return Val::Zero(s);
        }
        return Val::Fin {
            s,
            m: frac,
            e: 1 - f.bias() - f.man as i32,
        };
    }
    Val::Fin {
        s,
        m: frac | (1 << f.man),
        e: be as i32 - f.bias() - f.man as i32,
    }
}

/// Rounds `(-1)^s * m * 2^e` to format `f`. Values beyond the largest
/// finite one become infinity (or the largest finite value where the
/// rounding mode says so); with `satfinite` they become the largest finite
/// value. Formats without infinities always saturate.
pub(crate) fn round(s: bool, m: u128, e: i32, rnd: Rnd, f: Fmt, satfinite: bool) -> u64 {
    if m == 0 {
        return f.zero(s);
    }
    let p = f.man as i32 + 1;
    let emin = 1 - f.bias();
    let msb = 127 - m.leading_zeros() as i32;
    let top = e + msb;
    let mut q = top.max(emin) - (p - 1);
    let shift = q - e;
    let (mut k, rem_cmp, inexact) = if shift <= 0 {
        (m << (-shift) as u32, std::cmp::Ordering::Less, false)
    } else if shift >= 128 {
        // Everything is below the rounding position; the whole value is
        // under half a unit unless it reaches the half point exactly.
        let half_cmp = if shift == 128 && msb == 127 && m == 1 << 127 {
            std::cmp::Ordering::Equal
        } else if shift == 128 && msb == 127 {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Less
        };
        (0, half_cmp, true)
    } else {
        let k = m >> shift;
        let rem = m & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        (k, rem.cmp(&half), rem != 0)
    };
    let up = match rnd {
        Rnd::Rn => rem_cmp == std::cmp::Ordering::Greater || (rem_cmp == std::cmp::Ordering::Equal && k & 1 == 1),
        Rnd::Rna => rem_cmp != std::cmp::Ordering::Less,
        Rnd::Rz => false,
        Rnd::Rm => inexact && s,
        Rnd::Rp => inexact && !s,
    };
    if up {
        k += 1;
        if k == 1 << p {
            k >>= 1;
            q += 1;
        }
    }
    let sign = f.sign(s);
    if k < 1 << (p - 1) {
        // Subnormal (or zero after rounding down).
        return sign | k as u64;
    }
    let be = (q + (p - 1) + f.bias()) as i64;
    let frac = (k as u64) & ((1 << f.man) - 1);
    let overflow = match f.kind {
        Kind::Ieee => be >= f.exp_ones() as i64,
        Kind::Fn => be > f.exp_ones() as i64 || (be == f.exp_ones() as i64 && frac == (1 << f.man) - 1),
        Kind::Finite => be > f.exp_ones() as i64,
    };
    if overflow {
        if satfinite || f.kind != Kind::Ieee {
            return match f.kind {
                Kind::Fn if !satfinite => f.nan(),
                _ => f.max(s),
            };
        }
        let to_max = match rnd {
            Rnd::Rn | Rnd::Rna => false,
            Rnd::Rz => true,
            Rnd::Rm => !s,
            Rnd::Rp => s,
        };
        return if to_max { f.max(s) } else { f.inf(s) };
    }
    sign | ((be as u64) << f.man) | frac
}

/// Converts between formats (`cvt` float to float).
pub(crate) fn convert(bits: u64, from: Fmt, to: Fmt, rnd: Rnd, satfinite: bool) -> u64 {
    match unpack(bits, from) {
        Val::Nan => to.nan(),
        Val::Inf(s) => {
            if satfinite {
                to.max(s)
            } else {
                to.inf(s)
            }
        }
        Val::Zero(s) => to.zero(s),
        Val::Fin { s, m, e } if rnd == Rnd::Rn && !satfinite && to.kind == Kind::Ieee => round_rn(s, m, e, to),
        Val::Fin { s, m, e } => round(s, m as u128, e, rnd, to, satfinite),
    }
}

/// Rounds an integer (`neg` gives its sign) to a float format.
pub(crate) fn from_int(neg: bool, mag: u64, rnd: Rnd, to: Fmt) -> u64 {
    if mag == 0 {
        return to.zero(false);
    }
    round(neg, mag as u128, 0, rnd, to, false)
}

/// Float to integer with PTX's semantics: rounded with `rnd`, saturated to
/// the destination range; NaN gives 0, except that an f64 source or a
/// 64-bit destination gives `1 << (bits - 1)`.
pub(crate) fn to_int(bits: u64, from: Fmt, rnd: Rnd, dbits: u32, signed: bool) -> u64 {
    let mask = if dbits == 64 { u64::MAX } else { (1u64 << dbits) - 1 };
    let (min, max): (i128, i128) = if signed {
        (-(1i128 << (dbits - 1)), (1i128 << (dbits - 1)) - 1)
    } else {
        (0, (1i128 << dbits) - 1)
    };
    let v: i128 = match unpack(bits, from) {
        Val::Nan => {
            return if from == F64 || dbits == 64 {
                1u64 << (dbits - 1)
            } else {
                0
            };
        }
        Val::Inf(s) => {
            if s {
                min
            } else {
                max
            }
        }
        Val::Zero(_) => 0,
        Val::Fin { s, m, e } => {
            let mag = round_integral(s, m, e, rnd);
            let mag = mag.min(1u128 << 100) as i128;
            if s { -mag } else { mag }
        }
    };
    (v.clamp(min, max) as u64) & mask
}

/// The magnitude of `(-1)^s * m * 2^e` rounded to an integer.
fn round_integral(s: bool, m: u64, e: i32, rnd: Rnd) -> u128 {
    if e >= 0 {
        return if e >= 64 { 1u128 << 100 } else { (m as u128) << e };
    }
    let sh = (-e) as u32;
    if sh >= 66 {
        // |value| < 2^-2: only directed modes can round it away from zero.
        return match rnd {
            Rnd::Rm if s => 1,
            Rnd::Rp if !s => 1,
            _ => 0,
        };
    }
    let m = m as u128;
    let k = m >> sh;
    let rem = m & ((1u128 << sh) - 1);
    let half = 1u128 << (sh - 1);
    let up = match rnd {
        Rnd::Rn => rem > half || (rem == half && k & 1 == 1),
        Rnd::Rna => rem >= half,
        Rnd::Rz => false,
        Rnd::Rm => rem != 0 && s,
        Rnd::Rp => rem != 0 && !s,
    };
    k + u128::from(up)
}

/// Rounds a float to an integral value in the same format (`cvt.rni.f32.f32`).
pub(crate) fn round_to_integral(bits: u64, f: Fmt, rnd: Rnd) -> u64 {
    match unpack(bits, f) {
        Val::Nan => f.nan(),
        Val::Inf(_) | Val::Zero(_) => bits,
        Val::Fin { s, m, e } => {
            if e >= 0 {
                return bits;
            }
            let k = round_integral(s, m, e, rnd);
            round(s, k, 0, Rnd::Rn, f, false)
        }
    }
}

/// An exact finite term `(-1)^s * m * 2^e`.
#[derive(Clone, Copy, Debug)]
struct Term {
    s: bool,
    m: u128,
    e: i32,
}

/// Normalises so that the leading one is at bit 125.
fn norm(t: Term) -> Term {
    let lz = t.m.leading_zeros() as i32 - 2;
    if lz >= 0 {
        Term {
            m: t.m << lz,
            e: t.e - lz,
            ..t
        }
    } else {
        let sh = (-lz) as u32;
        let sticky = u128::from(t.m & ((1 << sh) - 1) != 0);
        Term {
            m: (t.m >> sh) | sticky,
            e: t.e + sh as i32,
            ..t
        }
    }
}

/// Rounds `x + y` (both exact, nonzero).
fn sum_round(x: Term, y: Term, rnd: Rnd, f: Fmt) -> u64 {
    let (mut x, mut y) = (norm(x), norm(y));
    if x.e < y.e {
        std::mem::swap(&mut x, &mut y);
    }
    let d = (x.e - y.e) as u32;
    let ys = if d == 0 {
        y.m
    } else if d < 126 {
        (y.m >> d) | u128::from(y.m & ((1u128 << d) - 1) != 0)
    } else {
        1
    };
    let (s, m) = if x.s == y.s {
        (x.s, x.m + ys)
    } else if x.m >= ys {
        (x.s, x.m - ys)
    } else {
        (y.s, ys - x.m)
    };
    if m == 0 {
        return f.zero(rnd == Rnd::Rm);
    }
    round(s, m, x.e, rnd, f, false)
}

/// `a + b`, correctly rounded.
pub(crate) fn add(a: u64, b: u64, f: Fmt, rnd: Rnd) -> u64 {
    match (unpack(a, f), unpack(b, f)) {
        (Val::Nan, _) | (_, Val::Nan) => f.nan(),
        (Val::Inf(x), Val::Inf(y)) => {
            if x == y {
                f.inf(x)
            } else {
                f.nan()
            }
        }
        (Val::Inf(x), _) | (_, Val::Inf(x)) => f.inf(x),
        (Val::Zero(x), Val::Zero(y)) => f.zero(if x == y { x } else { rnd == Rnd::Rm }),
        (Val::Zero(_), Val::Fin { .. }) => b,
        (Val::Fin { .. }, Val::Zero(_)) => a,
        (Val::Fin { s: sa, m: ma, e: ea }, Val::Fin { s: sb, m: mb, e: eb }) => sum_round(
            Term {
                s: sa,
                m: ma as u128,
                e: ea,
            },
            Term {
                s: sb,
                m: mb as u128,
                e: eb,
            },
            rnd,
            f,
        ),
    }
}

/// `a - b`, correctly rounded.
pub(crate) fn sub(a: u64, b: u64, f: Fmt, rnd: Rnd) -> u64 {
    add(a, b ^ f.sign_bit(), f, rnd)
}

/// `a * b`, correctly rounded.
pub(crate) fn mul(a: u64, b: u64, f: Fmt, rnd: Rnd) -> u64 {
    match (unpack(a, f), unpack(b, f)) {
        (Val::Nan, _) | (_, Val::Nan) => f.nan(),
        (Val::Inf(_), Val::Zero(_)) | (Val::Zero(_), Val::Inf(_)) => f.nan(),
        (Val::Inf(x), Val::Inf(y)) => f.inf(x != y),
        (Val::Inf(x), Val::Fin { s: y, .. }) | (Val::Fin { s: x, .. }, Val::Inf(y)) => f.inf(x != y),
        (Val::Zero(x), Val::Zero(y) | Val::Fin { s: y, .. }) | (Val::Fin { s: x, .. }, Val::Zero(y)) => f.zero(x != y),
        (Val::Fin { s: sa, m: ma, e: ea }, Val::Fin { s: sb, m: mb, e: eb }) => {
            round(sa != sb, ma as u128 * mb as u128, ea + eb, rnd, f, false)
        }
    }
}

/// `a * b + c` with a single rounding.
pub(crate) fn fma(a: u64, b: u64, c: u64, f: Fmt, rnd: Rnd) -> u64 {
    let (va, vb, vc) = (unpack(a, f), unpack(b, f), unpack(c, f));
    if matches!(va, Val::Nan) || matches!(vb, Val::Nan) || matches!(vc, Val::Nan) {
        return f.nan();
    }
    let sign = |v: Val| match v {
        Val::Inf(s) | Val::Zero(s) | Val::Fin { s, .. } => s,
        Val::Nan => false,
    };
    let ps = sign(va) != sign(vb);
    let p_inf = matches!(va, Val::Inf(_)) || matches!(vb, Val::Inf(_));
    let p_zero = matches!(va, Val::Zero(_)) || matches!(vb, Val::Zero(_));
    if p_inf && p_zero {
        return f.nan();
    }
    if p_inf {
        return match vc {
            Val::Inf(cs) if cs != ps => f.nan(),
            _ => f.inf(ps),
        };
    }
    if let Val::Inf(cs) = vc {
        return f.inf(cs);
    }
    if p_zero {
        return match vc {
            Val::Zero(cs) => f.zero(if cs == ps { ps } else { rnd == Rnd::Rm }),
            _ => c,
        };
    }
    let (Val::Fin { m: ma, e: ea, .. }, Val::Fin { m: mb, e: eb, .. }) = (va, vb) else {
        unreachable!("finite operands")
    };
    let p = Term {
        s: ps,
        m: ma as u128 * mb as u128,
        e: ea + eb,
    };
    match vc {
        Val::Fin { s, m, e } => sum_round(p, Term { s, m: m as u128, e }, rnd, f),
        _ => round(p.s, p.m, p.e, rnd, f, false),
    }
}

/// `a / b`, correctly rounded.
pub(crate) fn div(a: u64, b: u64, f: Fmt, rnd: Rnd) -> u64 {
    match (unpack(a, f), unpack(b, f)) {
        (Val::Nan, _) | (_, Val::Nan) => f.nan(),
        (Val::Inf(_), Val::Inf(_)) | (Val::Zero(_), Val::Zero(_)) => f.nan(),
        (Val::Inf(x), Val::Zero(y) | Val::Fin { s: y, .. }) => f.inf(x != y),
        (Val::Zero(x) | Val::Fin { s: x, .. }, Val::Inf(y)) => f.zero(x != y),
        (Val::Fin { s: x, .. }, Val::Zero(y)) => f.inf(x != y),
        (Val::Zero(x), Val::Fin { s: y, .. }) => f.zero(x != y),
        (Val::Fin { s: sa, m: ma, e: ea }, Val::Fin { s: sb, m: mb, e: eb }) => {
            let sh = 125 - (63 - ma.leading_zeros() as i32);
            let n = (ma as u128) << sh;
            let q = n / mb as u128;
            let r = n % mb as u128;
            round(sa != sb, q | u128::from(r != 0), ea - eb - sh, rnd, f, false)
        }
    }
}

/// `sqrt(a)`, correctly rounded.
pub(crate) fn sqrt(a: u64, f: Fmt, rnd: Rnd) -> u64 {
    match unpack(a, f) {
        Val::Nan | Val::Inf(true) => f.nan(),
        Val::Inf(false) | Val::Zero(_) => a,
        Val::Fin { s: true, .. } => f.nan(),
        Val::Fin { m, e, .. } => {
            // m * 2^e with e even and m shifted to ~124 bits.
            let mut sh = 124 - (63 - m.leading_zeros() as i32);
            if (e - sh) % 2 != 0 {
                sh -= 1;
            }
            let n = (m as u128) << sh;
            let r = isqrt(n);
            let exact = r * r == n;
            round(false, r | u128::from(!exact), (e - sh) / 2, rnd, f, false)
        }
    }
}

/// Floor of the square root.
fn isqrt(n: u128) -> u128 {
    if n == 0 {
        return 0;
    }
    // Newton's method from above (an f64 estimate plus a margin), then an
    // exact correction.
    let est = (n as f64).sqrt() as u128;
    let mut x = est + (est >> 40) + 2;
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            break;
        }
        x = y;
    }
    while x * x > n {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= n {
        x += 1;
    }
    x
}

/// Canonicalises a native f32 result.
#[inline(always)]
pub(crate) fn canon32(bits: u32) -> u32 {
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        0x7FFF_FFFF
    } else {
        bits
    }
}

/// Canonicalises a native f64 result.
#[cfg(test)]
pub(crate) fn canon64(bits: u64) -> u64 {
    if bits & 0x7FFF_FFFF_FFFF_FFFF > 0x7FF0_0000_0000_0000 {
        0x7FFF_FFFF_FFFF_FFFF
    } else {
        bits
    }
}

/// Rounds an f64 value (exact, or NaN) to f16/bf16/f32 with `rnd`.
#[inline]
pub(crate) fn from_f64(x: f64, to: Fmt, rnd: Rnd) -> u64 {
    convert(x.to_bits(), F64, to, rnd, false)
}

/// The value of a format's bits as f64 (exact for every format narrower
/// than f64).
#[inline]
pub(crate) fn to_f64(bits: u64, f: Fmt) -> f64 {
    if f == F64 {
        return f64::from_bits(bits);
    }
    if f == F32 {
        return f64::from(f32::from_bits(bits as u32));
    }
    narrow_to_f64(bits, f)
}

/// `a + b` for f16/bf16 round to nearest: the f64 sum is exact for f16; for
/// bf16 it is checked with TwoSum and recomputed exactly when it is not.
pub(crate) fn add_half(a: u64, b: u64, f: Fmt) -> u64 {
    let (x, y) = (to_f64(a, f), to_f64(b, f));
    let s = x + y;
    if s.is_nan() {
        return f.nan();
    }
    let bb = s - x;
    let err = (x - (s - bb)) + (y - bb);
    if err == 0.0 || !s.is_finite() {
        if s == 0.0 && x == 0.0 && y == 0.0 {
            return f.zero(x.is_sign_negative() && y.is_sign_negative());
        }
        return from_f64(s, f, Rnd::Rn);
    }
    add(a, b, f, Rnd::Rn)
}

/// `a * b` for f16/bf16 round to nearest (the f64 product is exact).
pub(crate) fn mul_half(a: u64, b: u64, f: Fmt) -> u64 {
    let p = to_f64(a, f) * to_f64(b, f);
    if p.is_nan() {
        return f.nan();
    }
    from_f64(p, f, Rnd::Rn)
}

/// `a * b + c` for f16/bf16 round to nearest: the f64 product is exact;
/// the sum is used when TwoSum shows it exact, else the exact path runs.
pub(crate) fn fma_half(a: u64, b: u64, c: u64, f: Fmt) -> u64 {
    let (x, y, z) = (to_f64(a, f), to_f64(b, f), to_f64(c, f));
    let p = x * y;
    let s = p + z;
    if s.is_nan() {
        return f.nan();
    }
    if s.is_finite() && p.is_finite() && s != 0.0 {
        let bb = s - p;
        let err = (p - (s - bb)) + (z - bb);
        if err == 0.0 {
            return from_f64(s, f, Rnd::Rn);
        }
    }
    fma(a, b, c, f, Rnd::Rn)
}

#[cfg(test)]
mod tests;
