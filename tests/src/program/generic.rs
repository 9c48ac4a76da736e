//! Generic device functions: `fn gK<T: Int>(..) -> T` (or `Float`,
//! `Half`), called from the kernel at two or more types, `T` read off the
//! arguments, off the type the call's context expects (`let r: f16 =
//! gK(x)`) or written with a turbofish. Each call is a top-level statement
//! drawn from a random stream of its own (as `extra`'s constructs are), so
//! that the rest of a seed's program stays what it was.
//!
//! What a body computes is exact in the interpreter: integer operators and
//! methods wrap, float operators round in `T` as the kernel's do (`f16` and
//! `bf16` division through `f32`, which rounds the same), and conversions
//! round to nearest even.

use super::interp::put;
use super::render::out_line;
use super::*;

/// A trait of the prelude bounding `T`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Bound {
    Int,
    Float,
    Half,
}

impl Bound {
    fn name(self) -> &'static str {
        match self {
            Bound::Int => "Int",
            Bound::Float => "Float",
            Bound::Half => "Half",
        }
    }

    /// The fuzzer's types of the bound (`usize` is not one of them).
    fn types(self) -> &'static [T] {
        match self {
            Bound::Int => &INTS,
            Bound::Float => &[H16, B16, F32, F64],
            Bound::Half => &[H16, B16],
        }
    }

    /// The type of the parameters that are not `T`, which a call whose `T`
    /// the context gives passes alone.
    fn aux(self) -> T {
        match self {
            Bound::Int => U32,
            Bound::Float => F32,
            Bound::Half => U16,
        }
    }
}

const INT_CONSTS: [&str; 2] = ["MIN", "MAX"];
const FLOAT_CONSTS: [&str; 6] = ["MAX", "MIN", "INFINITY", "NEG_INFINITY", "NAN", "EPSILON"];
const INT_OPS: [Op; 6] = [Op::Add, Op::Sub, Op::Mul, Op::And, Op::Or, Op::Xor];
const FLOAT_OPS: [Op; 4] = [Op::Add, Op::Sub, Op::Mul, Op::Div];
const INT_GENERIC_METHODS: [&str; 5] = ["wrapping_add", "wrapping_sub", "wrapping_mul", "min", "max"];
const COUNTS: [&str; 3] = ["count_ones", "leading_zeros", "trailing_zeros"];
const CMPS: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge];

/// An expression of type `T` in a generic body.
#[derive(Clone, Debug)]
pub(super) enum G {
    /// `tK`, parameter `K` of type `T`.
    Param(usize),
    /// `mK`, the body's `K`th `let`.
    Let(usize),
    /// `T::NAME`.
    Const(&'static str),
    Bin(Op, Box<G>, Box<G>),
    /// `a.m(b)` (`Int`).
    Method(&'static str, Box<G>, Box<G>),
    /// `!a` (`Int`).
    Not(Box<G>),
    /// `-a` (`Float`, `Half`).
    Neg(Box<G>),
    /// `(a << (n % T::BITS))` (left) or `>>` (`Int`).
    Shift(bool, Box<G>, Box<A>),
    /// `if a cmp b { c } else { d }`.
    Select(Cmp, Box<[G; 4]>),
    /// `T::from_f32(x)` (`Float`, `Half`).
    FromF32(Box<A>),
    /// `T::from_bits(x)` (`Half`).
    FromBits(Box<A>),
}

/// An expression of a type other than `T` in a generic body: `u32`, `f32`
/// or `u16`.
#[derive(Clone, Debug)]
pub(super) enum A {
    /// `aK`, parameter `K` of the bound's `aux` type.
    Param(usize),
    Lit(V),
    /// `x.count_ones()` and the other counts (`u32`).
    Count(&'static str, Box<G>),
    /// `T::BITS`.
    Bits,
    /// `x.to_f32()`.
    ToF32(Box<G>),
    /// `x.to_bits()` (`u16`).
    ToBits(Box<G>),
}

/// `fn gK<T: bound>(t0: T, .., a0: aux, ..) -> T { let m0 = ..; .. tail }`.
#[derive(Clone, Debug)]
pub(super) struct Generic {
    bound: Bound,
    params: usize,
    aux: usize,
    lets: Vec<G>,
    tail: G,
}

/// How a call gives `T`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum How {
    /// Read off its arguments: `gK(x, y)`.
    Args,
    /// `let r: ty = gK(..);`.
    Context,
    /// `gK::<ty>(..)`.
    Turbofish,
}

/// One call of a generic function at type `t`, its result written to
/// output word `slot`; `args`: the `T` arguments, then the others.
#[derive(Clone, Debug)]
pub(super) struct Call {
    t: T,
    how: How,
    slot: usize,
    args: Vec<E>,
}

/// The names of the generic functions.
fn generic_name(k: usize) -> String {
    format!("g{k}")
}

/// The body's types: the parameters and lets it may read.
struct Scope {
    bound: Bound,
    params: usize,
    aux: usize,
    lets: usize,
}

impl Gen<'_> {
    /// A statement calling a generic function (new, or one of `fns`) at
    /// two or more types.
    pub(super) fn generic(&mut self, fns: &mut Vec<Generic>) -> S {
        let f = if !fns.is_empty() && self.rng.chance(30) {
            self.rng.below(fns.len() as u64) as usize
        } else {
            let f = self.generic_fn();
            fns.push(f);
            fns.len() - 1
        };
        let g = fns[f].clone();
        let types = g.bound.types();
        let first = self.rng.pick(types);
        let second = loop {
            let t = self.rng.pick(types);
            if t != first {
                break t;
            }
        };
        let mut ts = vec![first, second];
        if self.rng.chance(40) {
            ts.push(self.rng.pick(types));
        }
        let calls = ts
            .into_iter()
            .map(|t| {
                let how = match self.rng.below(3) {
                    0 if g.params > 0 => How::Args,
                    0 | 1 => How::Context,
                    _ => How::Turbofish,
                };
                let aux = g.bound.aux();
                let args = (0..g.params + g.aux)
                    .map(|k| self.expr(if k < g.params { t } else { aux }, 2))
                    .collect();
                Call {
                    t,
                    how,
                    slot: self.slot(t),
                    args,
                }
            })
            .collect();
        S::Generic(f, calls)
    }

    fn generic_fn(&mut self) -> Generic {
        let bound = match self.rng.below(5) {
            0 | 1 => Bound::Int,
            2 | 3 => Bound::Float,
            _ => Bound::Half,
        };
        // A third of them take no `T`: the call's context or turbofish
        // gives it.
        let params = if self.rng.chance(33) {
            0
        } else {
            1 + self.rng.below(3) as usize
        };
        let aux = usize::from(params == 0) + self.rng.below(2) as usize;
        let mut scope = Scope {
            bound,
            params,
            aux,
            lets: 0,
        };
        let lets = (0..self.rng.below(3))
            .map(|_| {
                let e = self.g(&scope, 3);
                scope.lets += 1;
                e
            })
            .collect();
        let tail = self.g(&scope, 3);
        Generic {
            bound,
            params,
            aux,
            lets,
            tail,
        }
    }

    /// An expression of type `T`.
    fn g(&mut self, s: &Scope, depth: u32) -> G {
        let int = s.bound == Bound::Int;
        if depth == 0 || self.rng.chance(20) {
            let leaves = s.params + s.lets;
            return match self.rng.below(4) {
                0 | 1 if leaves > 0 => {
                    let k = self.rng.below(leaves as u64) as usize;
                    if k < s.params {
                        G::Param(k)
                    } else {
                        G::Let(k - s.params)
                    }
                }
                0..=2 if !int => G::FromF32(Box::new(self.a(s, F32, depth))),
                _ if s.bound == Bound::Half && self.rng.chance(50) => G::FromBits(Box::new(self.a(s, U16, depth))),
                _ if int => G::Const(self.rng.pick(&INT_CONSTS)),
                _ => G::Const(self.rng.pick(&FLOAT_CONSTS)),
            };
        }
        let d = depth - 1;
        let sub = |g: &mut Self| Box::new(g.g(s, d));
        match self.rng.below(6) {
            0 | 1 => {
                let op = self.rng.pick(if int { &INT_OPS[..] } else { &FLOAT_OPS[..] });
                G::Bin(op, sub(self), sub(self))
            }
            2 if int => G::Method(self.rng.pick(&INT_GENERIC_METHODS), sub(self), sub(self)),
            3 if int => G::Shift(self.rng.chance(50), sub(self), Box::new(self.a(s, U32, d))),
            2 | 3 => G::FromF32(Box::new(self.a(s, F32, d))),
            4 if int => G::Not(sub(self)),
            4 => G::Neg(sub(self)),
            _ => {
                let c = self.rng.pick(&CMPS);
                G::Select(c, Box::new([self.g(s, d), self.g(s, d), self.g(s, d), self.g(s, d)]))
            }
        }
    }

    /// An expression of type `ty` (`u32`, `f32` or `u16`).
    fn a(&mut self, s: &Scope, ty: T, depth: u32) -> A {
        let d = depth.saturating_sub(1);
        match self.rng.below(4) {
            0 if s.aux > 0 && ty == s.bound.aux() => A::Param(self.rng.below(s.aux as u64) as usize),
            1 if depth > 0 => {
                let x = Box::new(self.g(s, d));
                match ty {
                    U32 => A::Count(self.rng.pick(&COUNTS), x),
                    F32 => A::ToF32(x),
                    _ => A::ToBits(x),
                }
            }
            2 if ty == U32 => A::Bits,
            _ => A::Lit(self.lit(ty)),
        }
    }
}

/// The generic functions' sources, for the compiler.
pub(super) fn generic_sources(fns: &[Generic]) -> Vec<(String, String)> {
    fns.iter()
        .enumerate()
        .map(|(k, f)| {
            let name = generic_name(k);
            let params: Vec<String> = (0..f.params)
                .map(|i| format!("t{i}: T"))
                .chain((0..f.aux).map(|i| format!("a{i}: {}", f.bound.aux().name())))
                .collect();
            let mut src = format!("fn {name}<T: {}>({}) -> T {{\n", f.bound.name(), params.join(", "));
            for (i, e) in f.lets.iter().enumerate() {
                src.push_str(&format!("    let m{i} = {};\n", g_source(e)));
            }
            src.push_str(&format!("    {}\n}}\n", g_source(&f.tail)));
            (name, src)
        })
        .collect()
}

fn g_source(e: &G) -> String {
    match e {
        G::Param(k) => format!("t{k}"),
        G::Let(k) => format!("m{k}"),
        G::Const(c) => format!("T::{c}"),
        G::Bin(op, a, b) => format!("({} {} {})", g_source(a), op.symbol(), g_source(b)),
        G::Method(m, a, b) => format!("{}.{m}({})", g_source(a), g_source(b)),
        G::Not(a) => format!("(!{})", g_source(a)),
        G::Neg(a) => format!("(-{})", g_source(a)),
        G::Shift(left, a, n) => format!(
            "({} {} ({} % T::BITS))",
            g_source(a),
            if *left { "<<" } else { ">>" },
            a_source(n)
        ),
        G::Select(c, x) => format!(
            "(if {} {} {} {{ {} }} else {{ {} }})",
            g_source(&x[0]),
            c.symbol(),
            g_source(&x[1]),
            g_source(&x[2]),
            g_source(&x[3])
        ),
        G::FromF32(a) => format!("T::from_f32({})", a_source(a)),
        G::FromBits(a) => format!("T::from_bits({})", a_source(a)),
    }
}

fn a_source(a: &A) -> String {
    match a {
        A::Param(k) => format!("a{k}"),
        A::Lit(v) => literal(*v),
        A::Count(m, x) => format!("{}.{m}()", g_source(x)),
        A::Bits => "T::BITS".to_string(),
        A::ToF32(x) => format!("{}.to_f32()", g_source(x)),
        A::ToBits(x) => format!("{}.to_bits()", g_source(x)),
    }
}

impl Render<'_> {
    pub(super) fn generic(&mut self, f: usize, calls: &[Call]) {
        self.line("{");
        self.indent += 1;
        let name = generic_name(f);
        for (i, c) in calls.iter().enumerate() {
            let args: Vec<String> = c.args.iter().map(|e| self.expr(e)).collect();
            let (ty, args) = (c.t.name(), args.join(", "));
            let line = match c.how {
                How::Args => out_line(c.slot, c.t, &format!("{name}({args})")),
                How::Turbofish => out_line(c.slot, c.t, &format!("{name}::<{ty}>({args})")),
                How::Context => {
                    self.line(&format!("let r{i}: {ty} = {name}({args});"));
                    out_line(c.slot, c.t, &format!("r{i}"))
                }
            };
            self.line(&line);
        }
        self.indent -= 1;
        self.line("}");
    }
}

/// A generic body's values at one instantiation.
struct Frame<'a> {
    t: T,
    params: &'a [V],
    lets: Vec<V>,
}

impl Program {
    /// One thread's calls of generic function `f`.
    pub(super) fn generic(&self, f: usize, calls: &[Call], t: &mut Thread<'_>, out: &mut [u32]) {
        let g = &self.generics[f];
        for c in calls {
            let values: Vec<V> = c.args.iter().map(|e| self.eval(e, t)).collect();
            let mut frame = Frame {
                t: c.t,
                params: &values,
                lets: Vec::new(),
            };
            for e in &g.lets {
                let v = g_eval(e, &frame, g.params);
                frame.lets.push(v);
            }
            put(out, c.slot, g_eval(&g.tail, &frame, g.params));
        }
    }
}

/// The value of `T::name`.
fn constant(t: T, name: &str) -> V {
    let (lo, hi) = t.range();
    match (t, name) {
        (_, "MIN") if t.is_int() => V::int(t, lo),
        (_, "MAX") if t.is_int() => V::int(t, hi),
        (H16, _) => V::H16(match name {
            "MAX" => half::f16::MAX,
            "MIN" => half::f16::MIN,
            "INFINITY" => half::f16::INFINITY,
            "NEG_INFINITY" => half::f16::NEG_INFINITY,
            "NAN" => half::f16::NAN,
            _ => half::f16::EPSILON,
        }),
        (B16, _) => V::B16(match name {
            "MAX" => half::bf16::MAX,
            "MIN" => half::bf16::MIN,
            "INFINITY" => half::bf16::INFINITY,
            "NEG_INFINITY" => half::bf16::NEG_INFINITY,
            "NAN" => half::bf16::NAN,
            _ => half::bf16::EPSILON,
        }),
        (F32, _) => V::F32(match name {
            "MAX" => f32::MAX,
            "MIN" => f32::MIN,
            "INFINITY" => f32::INFINITY,
            "NEG_INFINITY" => f32::NEG_INFINITY,
            "NAN" => f32::NAN,
            _ => f32::EPSILON,
        }),
        _ => V::F64(match name {
            "MAX" => f64::MAX,
            "MIN" => f64::MIN,
            "INFINITY" => f64::INFINITY,
            "NEG_INFINITY" => f64::NEG_INFINITY,
            "NAN" => f64::NAN,
            _ => f64::EPSILON,
        }),
    }
}

fn g_eval(e: &G, f: &Frame<'_>, params: usize) -> V {
    let ev = |x: &G| g_eval(x, f, params);
    match e {
        G::Param(k) => f.params[*k],
        G::Let(k) => f.lets[*k],
        G::Const(c) => constant(f.t, c),
        G::Bin(op, a, b) => binary(*op, ev(a), ev(b)),
        G::Method(m, a, b) => method(m, ev(a), &[ev(b)]),
        G::Not(a) => {
            let v = ev(a);
            V::Int(v.ty(), !v.bits() & v.ty().mask())
        }
        G::Neg(a) => match ev(a) {
            V::H16(h) => V::H16(-h),
            V::B16(h) => V::B16(-h),
            V::F32(x) => V::F32(-x),
            v => V::F64(-v.f()),
        },
        G::Shift(left, a, n) => {
            let n = a_eval(n, f, params).u32() % f.t.bits();
            shift(*left, ev(a), V::Int(U32, u64::from(n)))
        }
        G::Select(c, x) => {
            if compare(*c, ev(&x[0]), ev(&x[1])) {
                ev(&x[2])
            } else {
                ev(&x[3])
            }
        }
        G::FromF32(a) => {
            let v = a_eval(a, f, params).f() as f32;
            match f.t {
                H16 => V::H16(half::f16::from_f32(v)),
                B16 => V::B16(half::bf16::from_f32(v)),
                F32 => V::F32(v),
                _ => V::F64(f64::from(v)),
            }
        }
        G::FromBits(a) => {
            let bits = a_eval(a, f, params).bits() as u16;
            match f.t {
                H16 => V::H16(half::f16::from_bits(bits)),
                _ => V::B16(half::bf16::from_bits(bits)),
            }
        }
    }
}

fn a_eval(a: &A, f: &Frame<'_>, params: usize) -> V {
    let ev = |x: &G| g_eval(x, f, params);
    match a {
        A::Param(k) => f.params[params + k],
        A::Lit(v) => *v,
        A::Count(m, x) => {
            let v = ev(x);
            let (bits, width) = (v.bits(), v.ty().bits());
            let n = match *m {
                "count_ones" => bits.count_ones(),
                "leading_zeros" => bits.leading_zeros() - (64 - width),
                _ => bits.trailing_zeros().min(width),
            };
            V::Int(U32, u64::from(n))
        }
        A::Bits => V::Int(U32, u64::from(f.t.bits())),
        A::ToF32(x) => V::F32(ev(x).f() as f32),
        A::ToBits(x) => V::Int(U16, ev(x).bits()),
    }
}
