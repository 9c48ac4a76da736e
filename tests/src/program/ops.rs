//! Rust's semantics of the operators and methods on the interpreter's values.

use super::*;

/// `x << y` or `x >> y` as release Rust: the amount masked to the width.
pub(super) fn shift(left: bool, x: V, y: V) -> V {
    let ty = x.ty();
    let n = (y.bits() as u32) & (ty.bits() - 1);
    if left {
        V::Int(ty, (x.bits() << n) & ty.mask())
    } else if ty.signed() {
        V::int(ty, x.i() >> n)
    } else {
        V::Int(ty, x.bits() >> n)
    }
}

/// Whether a pattern literal equals a value of the scrutinee's type.
pub(super) fn same_value(lit: V, v: V) -> bool {
    match (lit, v) {
        (V::Bool(a), V::Bool(b)) => a == b,
        (l, v) => V::int(v.ty(), l.i()).bits() == v.bits(),
    }
}

/// `x cmp y` (a NaN is unordered: only `!=` holds).
pub(super) fn compare(c: Cmp, x: V, y: V) -> bool {
    let ord = match x {
        V::F32(_) | V::F64(_) | V::H16(_) | V::B16(_) => x.f().partial_cmp(&y.f()),
        _ => Some(x.i().cmp(&y.i())),
    };
    use std::cmp::Ordering::*;
    match c {
        Cmp::Eq => ord == Some(Equal),
        Cmp::Ne => ord != Some(Equal),
        Cmp::Lt => ord == Some(Less),
        Cmp::Le => matches!(ord, Some(Less | Equal)),
        Cmp::Gt => ord == Some(Greater),
        Cmp::Ge => matches!(ord, Some(Greater | Equal)),
    }
}

pub(super) fn binary(op: Op, x: V, y: V) -> V {
    match (x, y) {
        (V::F32(a), V::F32(b)) => V::F32(match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            _ => a / b,
        }),
        (V::F64(a), V::F64(b)) => V::F64(match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            _ => a / b,
        }),
        (V::H16(a), V::H16(b)) => V::H16(match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            _ => a / b,
        }),
        (V::B16(a), V::B16(b)) => V::B16(match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            _ => a / b,
        }),
        (V::Bool(a), V::Bool(b)) => V::Bool(match op {
            Op::And => a & b,
            Op::Or => a | b,
            _ => a ^ b,
        }),
        _ => {
            let t = x.ty();
            let (a, b) = (x.i(), y.i());
            match op {
                Op::Add => V::int(t, a + b),
                Op::Sub => V::int(t, a - b),
                Op::Mul => V::int(t, a.wrapping_mul(b)),
                Op::Div => V::int(t, a / b),
                Op::Rem => V::int(t, a % b),
                Op::And => V::Int(t, x.bits() & y.bits()),
                Op::Or => V::Int(t, x.bits() | y.bits()),
                Op::Xor => V::Int(t, x.bits() ^ y.bits()),
            }
        }
    }
}

/// PTX's (and the kernel's) `min`/`max` of floats: a NaN operand is
/// ignored, -0.0 orders below +0.0 (Rust leaves the zeros unspecified).
pub(super) fn float_min_max(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        let a_first = a.is_sign_negative() != max;
        return if a_first { a } else { b };
    }
    if (a < b) != max { a } else { b }
}

pub(super) fn method(m: &str, x: V, args: &[V]) -> V {
    let t = x.ty();
    if let V::F32(_) | V::F64(_) = x {
        let f = |v: f64| if t == F32 { V::F32(v as f32) } else { V::F64(v) };
        // Computed in the value's own type: f32 methods round in f32.
        if let V::F32(a) = x {
            let arg = |i: usize| args[i].f() as f32;
            return match m {
                "abs" => V::F32(a.abs()),
                "sqrt" => V::F32(a.sqrt()),
                "floor" => V::F32(a.floor()),
                "ceil" => V::F32(a.ceil()),
                "trunc" => V::F32(a.trunc()),
                "round" => V::F32(a.round()),
                "fract" => V::F32(a - a.trunc()),
                "recip" => V::F32(1.0 / a),
                "min" => f(float_min_max(x.f(), args[0].f(), false)),
                "max" => f(float_min_max(x.f(), args[0].f(), true)),
                "mul_add" => V::F32(a.mul_add(arg(0), arg(1))),
                "powi" => V::F32(powi(a, args[0].i() as i32, 1.0)),
                "clamp" => V::F32(clamp_f(a, arg(0), arg(1))),
                "is_nan" => V::Bool(a.is_nan()),
                _ => V::Bool(a.is_finite()),
            };
        }
        let a = x.f();
        return match m {
            "abs" => V::F64(a.abs()),
            "sqrt" => V::F64(a.sqrt()),
            "floor" => V::F64(a.floor()),
            "ceil" => V::F64(a.ceil()),
            "trunc" => V::F64(a.trunc()),
            "round" => V::F64(a.round()),
            "fract" => V::F64(a - a.trunc()),
            "recip" => V::F64(1.0 / a),
            "min" => V::F64(float_min_max(a, args[0].f(), false)),
            "max" => V::F64(float_min_max(a, args[0].f(), true)),
            "mul_add" => V::F64(a.mul_add(args[0].f(), args[1].f())),
            "powi" => V::F64(powi(a, args[0].i() as i32, 1.0)),
            "clamp" => V::F64(clamp_f(a, args[0].f(), args[1].f())),
            "is_nan" => V::Bool(a.is_nan()),
            _ => V::Bool(a.is_finite()),
        };
    }
    let (lo, hi) = t.range();
    let a = x.i();
    let bits = t.bits();
    let rotate = |k: u32| {
        let k = k % bits;
        let p = x.bits();
        V::Int(t, ((p << k) | if k == 0 { 0 } else { p >> (bits - k) }) & t.mask())
    };
    match m {
        "wrapping_add" => V::int(t, a + args[0].i()),
        "wrapping_sub" => V::int(t, a - args[0].i()),
        "wrapping_mul" => V::int(t, a.wrapping_mul(args[0].i())),
        "saturating_add" => V::int(t, (a + args[0].i()).clamp(lo, hi)),
        "saturating_sub" => V::int(t, (a - args[0].i()).clamp(lo, hi)),
        "saturating_mul" => V::int(t, a.saturating_mul(args[0].i()).clamp(lo, hi)),
        "rotate_left" => rotate(args[0].u32()),
        "rotate_right" => rotate((bits - args[0].u32() % bits) % bits),
        "min" => V::int(t, a.min(args[0].i())),
        "max" => V::int(t, a.max(args[0].i())),
        "clamp" => V::int(t, a.max(args[0].i()).min(args[1].i())),
        "reverse_bits" => V::Int(t, x.bits().reverse_bits() >> (64 - bits)),
        "pow" => {
            let mut r: i128 = 1;
            for _ in 0..args[0].u32() {
                r = V::int(t, r.wrapping_mul(a)).i();
            }
            V::int(t, r)
        }
        "wrapping_neg" => V::int(t, -a),
        "wrapping_shl" => V::Int(t, (x.bits() << (args[0].u32() & (bits - 1))) & t.mask()),
        "wrapping_shr" if t.signed() => V::int(t, a >> (args[0].u32() & (bits - 1))),
        "wrapping_shr" => V::Int(t, x.bits() >> (args[0].u32() & (bits - 1))),
        "abs" => V::int(t, a.abs()),
        "is_power_of_two" => V::Bool(x.bits().count_ones() == 1),
        other => unreachable!("no method {other}"),
    }
}

/// Rust's `clamp` on floats with `lo <= hi`: NaN stays NaN.
pub(super) fn clamp_f<F: PartialOrd + Copy>(x: F, lo: F, hi: F) -> F {
    let low = if x < lo { lo } else { x };
    if low > hi { hi } else { low }
}

/// `powi` in the order of Rust's own `__powisf2`: square-and-multiply over
/// |n|, then one division for negative `n`.
pub(super) fn powi<F: Copy + std::ops::Mul<Output = F> + std::ops::Div<Output = F>>(x: F, n: i32, one: F) -> F {
    let (mut r, mut b, mut e) = (one, x, n.unsigned_abs());
    loop {
        if e & 1 == 1 {
            r = r * b;
        }
        e >>= 1;
        if e == 0 {
            break;
        }
        b = b * b;
    }
    if n < 0 { one / r } else { r }
}
