//! The fuzzer's programs: a small typed syntax tree, its generator (seeded),
//! its rendering as a kernel's Rust source, and its interpreter with
//! Rust's semantics (release builds: integers wrap, shifts mask their
//! amount; `x / 0` never generated; `MIN / -1` wraps as the kernel
//! documents).
//!
//! A kernel runs `BLOCKS` blocks of `THREADS` threads; each thread writes
//! `slots()` words of `out` (64-bit values as two words). Top-level
//! statements run for every thread before the next one starts, which is
//! what the barriers around the shared-memory exchange and the converged
//! warps of the shuffles guarantee on the device.

use std::fmt::Write;

pub const THREADS: u32 = 64;
pub const BLOCKS: u32 = 2;
pub const INPUTS: usize = 256;

/// xorshift64*: the generator's randomness, a function of the seed alone.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<X: Copy>(&mut self, xs: &[X]) -> X {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// The input words of program `seed`: edge patterns (integer extremes and
/// float specials) and random words.
pub fn inputs(seed: u64) -> Vec<u32> {
    let edges = [
        0,
        1,
        2,
        7,
        0xFF,
        0x100,
        0xFFFF,
        0x7FFF_FFFF,
        0x8000_0000,
        0xFFFF_FFFF,
        0xFFFF_FFFE,
        0x7FC0_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x3F80_0000,
        0xBF00_0000,
        0x0000_0001,
        0x4B00_0000,
        0x4F00_0000,
        0xCF00_0000,
        0x3EFF_FFFF,
    ];
    let mut rng = Rng::new(seed ^ 0xDA7A);
    (0..INPUTS)
        .map(|i| {
            if i % 3 == 0 {
                edges[rng.below(edges.len() as u64) as usize]
            } else {
                rng.next() as u32
            }
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum T {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    F32,
    F64,
    /// `f16`.
    H16,
    /// `bf16`.
    B16,
}

use T::*;

const INTS: [T; 6] = [U8, U16, U32, U64, I32, I64];
const SHUFFLED: [T; 3] = [U32, I32, F32];
/// The types of values a program computes with (`f16`/`bf16` have no
/// casts: they convert through `f32`).
const VALUES: [T; 10] = [U8, U16, U32, U64, I32, I64, F32, F64, H16, B16];

impl T {
    fn name(self) -> &'static str {
        match self {
            Bool => "bool",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            I32 => "i32",
            I64 => "i64",
            F32 => "f32",
            F64 => "f64",
            H16 => "f16",
            B16 => "bf16",
        }
    }

    fn is_int(self) -> bool {
        INTS.contains(&self)
    }

    fn is_float(self) -> bool {
        matches!(self, F32 | F64)
    }

    fn is_half(self) -> bool {
        matches!(self, H16 | B16)
    }

    fn signed(self) -> bool {
        matches!(self, I32 | I64)
    }

    fn bits(self) -> u32 {
        match self {
            Bool => 1,
            U8 => 8,
            U16 | H16 | B16 => 16,
            U32 | I32 | F32 => 32,
            U64 | I64 | F64 => 64,
        }
    }

    fn mask(self) -> u64 {
        if self.bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits()) - 1
        }
    }

    fn range(self) -> (i128, i128) {
        if self.signed() {
            (-(1i128 << (self.bits() - 1)), (1i128 << (self.bits() - 1)) - 1)
        } else {
            (0, i128::from(self.mask()))
        }
    }

    /// Output words a value of this type takes.
    fn words(self) -> usize {
        if self.bits() == 64 { 2 } else { 1 }
    }
}

/// A value, with Rust's semantics for each type.
#[derive(Clone, Copy, Debug)]
pub enum V {
    Bool(bool),
    /// An integer of the type, as its bits.
    Int(T, u64),
    F32(f32),
    F64(f64),
    H16(half::f16),
    B16(half::bf16),
}

impl V {
    fn int(t: T, v: i128) -> V {
        V::Int(t, (v as u64) & t.mask())
    }

    fn ty(self) -> T {
        match self {
            V::Bool(_) => Bool,
            V::Int(t, _) => t,
            V::F32(_) => F32,
            V::F64(_) => F64,
            V::H16(_) => H16,
            V::B16(_) => B16,
        }
    }

    fn i(self) -> i128 {
        match self {
            V::Int(t, bits) if t.signed() => {
                let sh = 64 - t.bits();
                i128::from(((bits << sh) as i64) >> sh)
            }
            V::Int(_, bits) => i128::from(bits),
            V::Bool(b) => i128::from(b),
            other => unreachable!("an integer, not {other:?}"),
        }
    }

    fn bits(self) -> u64 {
        match self {
            V::Int(_, b) => b,
            V::Bool(b) => u64::from(b),
            V::F32(f) => u64::from(f.to_bits()),
            V::F64(f) => f.to_bits(),
            V::H16(h) => u64::from(h.to_bits()),
            V::B16(h) => u64::from(h.to_bits()),
        }
    }

    fn b(self) -> bool {
        match self {
            V::Bool(b) => b,
            other => unreachable!("a bool, not {other:?}"),
        }
    }

    fn f(self) -> f64 {
        match self {
            V::F32(f) => f64::from(f),
            V::F64(f) => f,
            V::H16(h) => h.to_f64(),
            V::B16(h) => h.to_f64(),
            other => unreachable!("a float, not {other:?}"),
        }
    }

    fn u32(self) -> u32 {
        self.bits() as u32
    }

    /// `self as t`, as Rust's `as`.
    fn cast(self, t: T) -> V {
        match (self, t) {
            (V::F32(f), F64) => V::F64(f64::from(f)),
            (V::F64(f), F32) => V::F32(f as f32),
            (V::F32(f), F32) => V::F32(f),
            (V::F64(f), F64) => V::F64(f),
            (V::F32(_) | V::F64(_), t) => {
                let f = self.f();
                V::int(
                    t,
                    match t {
                        U8 => i128::from(f as u8),
                        U16 => i128::from(f as u16),
                        U32 => i128::from(f as u32),
                        U64 => i128::from(f as u64),
                        I32 => i128::from(f as i32),
                        _ => i128::from(f as i64),
                    },
                )
            }
            (v, F32) => V::F32(v.i() as f32),
            (v, F64) => V::F64(v.i() as f64),
            (v, t) => V::int(t, v.i()),
        }
    }
}

/// Whether std has `to::from(x)` for an `x` of type `from` (lossless).
fn lossless(from: T, to: T) -> bool {
    match to {
        U8 => from == Bool,
        U16 => matches!(from, Bool | U8),
        U32 | I32 => matches!(from, Bool | U8 | U16),
        U64 => matches!(from, Bool | U8 | U16 | U32),
        I64 => matches!(from, Bool | U8 | U16 | U32 | I32),
        F32 => matches!(from, Bool | U8 | U16),
        F64 => matches!(from, Bool | U8 | U16 | U32 | I32 | F32),
        _ => false,
    }
}

/// Renders a literal of its type (`-5i32`, `1.5f32`, `f32::NAN`).
fn literal(v: V) -> String {
    match v {
        V::Bool(b) => b.to_string(),
        V::Int(t, _) => format!("{}{}", v.i(), t.name()),
        V::F32(f) => float_literal(f64::from(f), f.is_nan(), "f32", format!("{f:?}")),
        V::F64(f) => float_literal(f, f.is_nan(), "f64", format!("{f:?}")),
        V::H16(h) => format!("f16::from_bits({}u16)", h.to_bits()),
        V::B16(h) => format!("bf16::from_bits({}u16)", h.to_bits()),
    }
}

fn float_literal(f: f64, nan: bool, ty: &str, debug: String) -> String {
    if nan {
        format!("{ty}::NAN")
    } else if f == f64::INFINITY {
        format!("{ty}::INFINITY")
    } else if f == f64::NEG_INFINITY {
        format!("{ty}::NEG_INFINITY")
    } else {
        format!("{debug}{ty}")
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Rem => "%",
            Op::And => "&",
            Op::Or => "|",
            Op::Xor => "^",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug)]
enum E {
    Lit(V),
    Var(usize),
    Tid,
    Gid,
    /// `inp[((gid * a + b) % INPUTS) as usize]`.
    Input(u32, u32),
    Bin(Op, Box<E>, Box<E>),
    /// `a << b` (left) or `a >> b`, `b` of any integer type.
    Shift(bool, Box<E>, Box<E>),
    Cmp(Cmp, Box<E>, Box<E>),
    /// `a && b` (true) or `a || b`.
    Logic(bool, Box<E>, Box<E>),
    Neg(Box<E>),
    Not(Box<E>),
    Cast(Box<E>, T),
    /// `T::from(x)`, a lossless conversion: the value of `x as T`.
    From(Box<E>, T),
    FromBits(Box<E>, T),
    /// `f16::from_f32(x)` or `bf16::from_f32(x)`.
    HalfFrom(Box<E>, T),
    /// `h.to_f32()`.
    ToF32(Box<E>),
    Method(&'static str, Box<E>, Vec<E>),
    If(Box<E>, Box<E>, Box<E>),
    Match(Box<E>, Vec<Arm<E>>),
    Call(usize, Vec<E>),
    /// `(a, b).i`.
    TupleField(Box<E>, Box<E>, usize),
    /// `aN[k]`: element `k` of the local array whose elements are the
    /// variables `N..N + 4`.
    ArrayLoad(usize, usize),
    /// `reduce_<t>_<op>(aN)`: a device function generic over the array's
    /// length (inferred), folding it with `op` in an element loop
    /// (`for (i, &x) in v.iter().enumerate()`, unrolled over the array).
    Reduce(Op, usize),
}

/// The range of a `for` loop: bounds reduced so trip counts stay small.
#[derive(Clone, Debug)]
enum Range {
    /// `0..(n % 5)`.
    Count(E),
    /// `(a % 4)..(b % 9)`, or `..=` with `b % 6`.
    Span(E, E, bool),
    /// `((a % 4)..(b % 12)).step_by((s % 3 + 1) as usize)`.
    Step(E, E, E),
    /// `#[unroll] for v in 0..n`, `n` a constant.
    Unrolled(u32),
}

#[derive(Clone, Debug)]
enum P {
    Lit(V),
    Range(V, V),
    Or(V, V),
    Bind(usize),
    Wild,
}

#[derive(Clone, Debug)]
struct Arm<B> {
    pat: P,
    guard: Option<E>,
    body: B,
}

#[derive(Clone, Debug)]
enum S {
    Let(usize, bool, E),
    LetTuple(usize, usize, E, E),
    Assign(usize, E),
    OpAssign(Op, usize, E),
    /// `v <<= e` (true) or `v >>= e`.
    ShiftAssign(bool, usize, E),
    If(E, Vec<S>, Vec<S>),
    /// `'lD: for v in <range>` over `u32` or `i32` (its variable's type),
    /// D the number of loops around it; reversed (`.rev()`) when true.
    For(usize, Range, Vec<S>, u32, bool),
    /// `let mut c = start % 4; 'lD: while c > 0 { c -= 1; .. }`, or as a
    /// `loop` that breaks at 0 (true).
    While(usize, E, Vec<S>, bool, u32),
    Match(E, Vec<Arm<Vec<S>>>),
    /// `break` or `break 'lD` (the loop D of those around it).
    Break(Option<u32>),
    /// `continue` or `continue 'lD`.
    Continue(Option<u32>),
    Return(E),
    /// `out[base + slot..] = bits of value`.
    Out(usize, E),
    /// `out[base + slot] = x.f().to_bits()`, `f` an approximate function.
    OutApprox(usize, usize, E),
    /// `let mut aN = [init; 4];` (elements: variables `N..N + 4`).
    ArrayLet(usize, E),
    /// `aN[k] = value;`.
    ArrayStore(usize, usize, E),
    /// `#[unroll] for i in 0usize..4usize { aN[i] = aN[i] op value; }`.
    ArrayUpdate(usize, Op, E),
    /// `let dst = shfl_xor(src, mask);` (top level only).
    Shuffle(usize, usize, u32),
    /// `sh[tid] = value; sync; let dst = sh[tid ^ k]; sync;` (top level only).
    Shared(usize, E, u32),
}

/// A device function: parameters are its first variables.
#[derive(Clone, Debug)]
struct Device {
    params: Vec<(T, bool)>,
    ret: T,
    vars: Vec<T>,
    body: Vec<S>,
    tail: E,
}

/// How an output word compares.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    Exact,
    F32,
    /// The low word of an f64; the next slot is its high word.
    F64,
    F64High,
    /// An `f16` (false) or `bf16` (true) in the low half of the word.
    Half(bool),
    /// `f(x)` of an approximate `f32` function (index in
    /// `crate::approx::FUNCTIONS`): the interpreter gives `x`, the
    /// emulator's result must be within the documented bound of `f(x)`.
    Approx(usize),
}

#[derive(Debug)]
pub struct Program {
    devices: Vec<Device>,
    /// The reducing device functions, by element type and op.
    reducers: Vec<(T, Op)>,
    vars: Vec<T>,
    body: Vec<S>,
    slots: Vec<Slot>,
}

/// The generator's state while writing one function.
struct Gen<'a> {
    rng: &'a mut Rng,
    devices: &'a [Device],
    vars: Vec<T>,
    /// Variables in scope, and whether each may be assigned.
    scope: Vec<(usize, bool)>,
    /// The loops around the code being written.
    loops: u32,
    /// The choices of features added after seeds were listed in the GPU
    /// tests (whether a `break` or `continue` names its loop, and which;
    /// whether a `for` range is reversed): a stream of their own, so that
    /// the rest of each program is what it was before them.
    extras: &'a mut Rng,
    /// The return type, in a device function.
    ret: Option<T>,
    kernel: bool,
    slots: Vec<Slot>,
    /// Local arrays in scope, by their first element's variable.
    arrays: Vec<usize>,
    /// The reducing device functions the code uses: element type and op.
    reducers: Vec<(T, Op)>,
}

/// Elements of every local array.
const ARRAY: usize = 4;

/// How many of `crate::approx::FUNCTIONS` there were when the GPU tests'
/// seeds were listed: the main stream picks among those, `extras` among
/// the later ones.
const LISTED_APPROX: usize = 7;

const INT_METHODS: &[&str] = &[
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "saturating_add",
    "saturating_sub",
    "saturating_mul",
    "rotate_left",
    "rotate_right",
    "min",
    "max",
    "clamp",
    "reverse_bits",
    "pow",
    "wrapping_neg",
    "wrapping_shl",
    "wrapping_shr",
];
const FLOAT_METHODS: &[&str] = &[
    "abs", "sqrt", "floor", "ceil", "trunc", "round", "fract", "recip", "min", "max", "mul_add", "powi", "clamp",
];

impl Gen<'_> {
    fn new_var(&mut self, t: T) -> usize {
        self.vars.push(t);
        self.vars.len() - 1
    }

    fn var_of(&mut self, t: T) -> Option<usize> {
        let candidates: Vec<usize> = self
            .scope
            .iter()
            .filter(|(v, _)| self.vars[*v] == t)
            .map(|(v, _)| *v)
            .collect();
        (!candidates.is_empty()).then(|| self.rng.pick(&candidates))
    }

    fn lit(&mut self, t: T) -> V {
        let r = &mut *self.rng;
        match t {
            Bool => V::Bool(r.chance(50)),
            F32 => V::F32(match r.below(6) {
                0 => r.pick(&[
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    0.5,
                    2.5,
                    -2.5,
                    f32::INFINITY,
                    f32::NAN,
                    f32::MAX,
                    1e-40,
                ]),
                1 => f32::from_bits(r.next() as u32),
                _ => (r.below(2001) as f32 - 1000.0) / 8.0,
            }),
            H16 => V::H16(match r.below(4) {
                0 => half::f16::from_bits(r.next() as u16),
                _ => half::f16::from_f32((r.below(2001) as f32 - 1000.0) / 16.0),
            }),
            B16 => V::B16(match r.below(4) {
                0 => half::bf16::from_bits(r.next() as u16),
                _ => half::bf16::from_f32((r.below(2001) as f32 - 1000.0) / 16.0),
            }),
            F64 => V::F64(match r.below(6) {
                0 => r.pick(&[
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    0.5,
                    2.5,
                    -2.5,
                    f64::INFINITY,
                    f64::NAN,
                    f64::MAX,
                    5e-324,
                ]),
                1 => f64::from_bits(r.next()),
                _ => (r.below(2001) as f64 - 1000.0) / 8.0,
            }),
            t => {
                let (lo, hi) = t.range();
                V::int(
                    t,
                    match r.below(4) {
                        0 => r.pick(&[lo, hi, 0, 1, -1, lo + 1, hi - 1, 2]),
                        1 => i128::from(r.next()),
                        _ => r.below(40) as i128 - 8,
                    },
                )
            }
        }
    }

    /// A leaf of type `t`: a literal, a variable, an array element, or an
    /// input.
    fn leaf(&mut self, t: T) -> E {
        let arrays: Vec<usize> = self.arrays.iter().copied().filter(|a| self.vars[*a] == t).collect();
        if !arrays.is_empty() && self.rng.chance(25) {
            let a = self.rng.pick(&arrays);
            return E::ArrayLoad(a, self.rng.below(ARRAY as u64) as usize);
        }
        if !arrays.is_empty() && self.rng.chance(15) {
            let a = self.rng.pick(&arrays);
            let ops: &[Op] = if t.is_int() {
                &[Op::Add, Op::Mul, Op::Xor]
            } else {
                &[Op::Add, Op::Mul]
            };
            let op = self.rng.pick(ops);
            if !self.reducers.contains(&(t, op)) {
                self.reducers.push((t, op));
            }
            return E::Reduce(op, a);
        }
        if self.rng.chance(40)
            && let Some(v) = self.var_of(t)
        {
            return E::Var(v);
        }
        if !self.kernel || self.rng.chance(40) {
            // Device functions see their parameters only.
            return E::Lit(self.lit(t));
        }
        if t == U32 && self.rng.chance(15) {
            return if self.rng.chance(50) { E::Tid } else { E::Gid };
        }
        let input = |r: &mut Rng| E::Input(r.below(97) as u32 + 1, r.below(INPUTS as u64) as u32);
        let word = input(self.rng);
        match t {
            U32 => word,
            Bool => E::Cmp(
                Cmp::Eq,
                Box::new(E::Bin(Op::And, Box::new(word), Box::new(E::Lit(V::Int(U32, 1))))),
                Box::new(E::Lit(V::Int(U32, 1))),
            ),
            U64 | I64 | F64 => {
                let high = E::Shift(
                    true,
                    Box::new(E::Cast(Box::new(word), U64)),
                    Box::new(E::Lit(V::Int(U32, 32))),
                );
                let low = E::Cast(Box::new(input(self.rng)), U64);
                let wide = E::Bin(Op::Or, Box::new(high), Box::new(low));
                match t {
                    U64 => wide,
                    I64 => E::Cast(Box::new(wide), I64),
                    _ if self.rng.chance(50) => E::FromBits(Box::new(wide), F64),
                    _ => E::Cast(Box::new(E::Cast(Box::new(input(self.rng)), I32)), F64),
                }
            }
            H16 | B16 => E::HalfFrom(Box::new(E::FromBits(Box::new(word), F32)), t),
            F32 if self.rng.chance(60) => E::FromBits(Box::new(word), F32),
            t => E::Cast(Box::new(word), t),
        }
    }

    fn expr(&mut self, t: T, depth: u32) -> E {
        if depth == 0 || self.rng.chance(25) {
            return self.leaf(t);
        }
        let d = depth - 1;
        if t == Bool {
            return match self.rng.below(6) {
                0 | 1 => {
                    let ct = self.rng.pick(&VALUES);
                    let cmp = self.rng.pick(&[Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge]);
                    E::Cmp(cmp, Box::new(self.expr(ct, d)), Box::new(self.expr(ct, d)))
                }
                2 => E::Logic(
                    self.rng.chance(50),
                    Box::new(self.expr(Bool, d)),
                    Box::new(self.expr(Bool, d)),
                ),
                3 => E::Not(Box::new(self.expr(Bool, d))),
                4 => {
                    let it = self.rng.pick(&[U8, U16, U32, U64]);
                    E::Method("is_power_of_two", Box::new(self.expr(it, d)), vec![])
                }
                _ => {
                    let ft = self.rng.pick(&[F32, F64]);
                    let m = self.rng.pick(&["is_nan", "is_finite"]);
                    E::Method(m, Box::new(self.expr(ft, d)), vec![])
                }
            };
        }
        if t.is_half() {
            return match self.rng.below(8) {
                0..=2 => {
                    let op = self.rng.pick(&[Op::Add, Op::Sub, Op::Mul, Op::Div]);
                    E::Bin(op, Box::new(self.expr(t, d)), Box::new(self.expr(t, d)))
                }
                3 => E::Neg(Box::new(self.expr(t, d))),
                4 => E::HalfFrom(Box::new(self.expr(F32, d)), t),
                5 => E::If(
                    Box::new(self.expr(Bool, d)),
                    Box::new(self.expr(t, d)),
                    Box::new(self.expr(t, d)),
                ),
                6 => {
                    let other = self.rng.pick(&VALUES);
                    E::TupleField(Box::new(self.expr(t, d)), Box::new(self.expr(other, d)), 0)
                }
                _ => self.leaf(t),
            };
        }
        if t == F32 && self.rng.chance(8) {
            let h = self.rng.pick(&[H16, B16]);
            return E::ToF32(Box::new(self.expr(h, d)));
        }
        match self.rng.below(13) {
            0..=2 => {
                let ops: &[Op] = if t.is_float() {
                    &[Op::Add, Op::Sub, Op::Mul, Op::Div]
                } else {
                    &[Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::And, Op::Or, Op::Xor]
                };
                let op = self.rng.pick(ops);
                let mut rhs = self.expr(t, d);
                if t.is_int() && matches!(op, Op::Div | Op::Rem) {
                    // Never divide by zero (Rust panics; the kernel gives all ones).
                    rhs = E::Bin(Op::Or, Box::new(rhs), Box::new(E::Lit(V::int(t, 1))));
                }
                E::Bin(op, Box::new(self.expr(t, d)), Box::new(rhs))
            }
            3 if t.is_int() => {
                let rt = self.rng.pick(&INTS);
                E::Shift(
                    self.rng.chance(50),
                    Box::new(self.expr(t, d)),
                    Box::new(self.expr(rt, d)),
                )
            }
            4 if t.signed() || t.is_float() => E::Neg(Box::new(self.expr(t, d))),
            4 if t.is_int() => E::Not(Box::new(self.expr(t, d))),
            5 => {
                let from = self.rng.pick(&[Bool, U8, U16, U32, U64, I32, I64, F32, F64]);
                if from == Bool && t.is_float() {
                    return self.leaf(t);
                }
                let x = Box::new(self.expr(from, d));
                if lossless(from, t) && self.extras.chance(40) {
                    E::From(x, t)
                } else {
                    E::Cast(x, t)
                }
            }
            6 | 7 => self.method(t, d),
            8 => E::If(
                Box::new(self.expr(Bool, d)),
                Box::new(self.expr(t, d)),
                Box::new(self.expr(t, d)),
            ),
            9 => {
                let st = self.rng.pick(&[U8, U16, U32, U64, I32, I64, Bool]);
                let scrutinee = self.expr(st, d);
                let arms = self.arms(st, |g| g.expr(t, d));
                E::Match(Box::new(scrutinee), arms)
            }
            10 => {
                let callable: Vec<usize> = (0..self.devices.len()).filter(|i| self.devices[*i].ret == t).collect();
                if callable.is_empty() {
                    return self.leaf(t);
                }
                let i = self.rng.pick(&callable);
                let params: Vec<T> = self.devices[i].params.iter().map(|(t, _)| *t).collect();
                E::Call(i, params.into_iter().map(|p| self.expr(p, d)).collect())
            }
            11 => {
                let other = self.rng.pick(&VALUES);
                if self.rng.chance(50) {
                    E::TupleField(Box::new(self.expr(t, d)), Box::new(self.expr(other, d)), 0)
                } else {
                    E::TupleField(Box::new(self.expr(other, d)), Box::new(self.expr(t, d)), 1)
                }
            }
            _ => self.leaf(t),
        }
    }

    fn method(&mut self, t: T, d: u32) -> E {
        let x = Box::new(self.expr(t, d));
        if t.is_float() {
            let m = self.rng.pick(FLOAT_METHODS);
            let args = match m {
                "min" | "max" => vec![self.expr(t, d)],
                "mul_add" => vec![self.expr(t, d), self.expr(t, d)],
                "powi" if self.rng.chance(50) => vec![E::Lit(V::int(I32, self.rng.below(11) as i128 - 4))],
                "powi" => vec![E::Bin(
                    Op::Rem,
                    Box::new(self.expr(I32, d)),
                    Box::new(E::Lit(V::int(I32, 8))),
                )],
                "clamp" => {
                    let (a, b) = (
                        (self.rng.below(64) as f64 - 32.0) / 4.0,
                        (self.rng.below(64) as f64) / 4.0,
                    );
                    let (lo, hi) = (a.min(b), a.max(b));
                    let lit = |v: f64| E::Lit(if t == F32 { V::F32(v as f32) } else { V::F64(v) });
                    vec![lit(lo), lit(hi)]
                }
                _ => vec![],
            };
            return E::Method(m, x, args);
        }
        let mut methods: Vec<&'static str> = INT_METHODS.to_vec();
        if t.signed() {
            methods.push("abs");
        }
        let m = self.rng.pick(&methods);
        let args = match m {
            "rotate_left" | "rotate_right" | "wrapping_shl" | "wrapping_shr" => vec![self.expr(U32, d)],
            "pow" if self.rng.chance(50) => vec![E::Lit(V::int(U32, self.rng.below(6) as i128))],
            "pow" => vec![E::Bin(
                Op::Rem,
                Box::new(self.expr(U32, d)),
                Box::new(E::Lit(V::int(U32, 9))),
            )],
            "clamp" => {
                let (a, b) = (self.lit(t), self.lit(t));
                let (lo, hi) = if a.i() <= b.i() { (a, b) } else { (b, a) };
                vec![E::Lit(lo), E::Lit(hi)]
            }
            "abs" | "reverse_bits" | "wrapping_neg" => vec![],
            _ => vec![self.expr(t, d)],
        };
        E::Method(m, x, args)
    }

    /// `match` arms on a scrutinee of type `st`, the last one `_`.
    fn arms<B>(&mut self, st: T, mut body: impl FnMut(&mut Self) -> B) -> Vec<Arm<B>> {
        let n = 1 + self.rng.below(4);
        let mut arms = Vec::new();
        for _ in 0..n {
            let pat = if st == Bool {
                P::Lit(V::Bool(self.rng.chance(50)))
            } else {
                match self.rng.below(5) {
                    0 | 1 => P::Lit(self.lit(st)),
                    2 => {
                        let (a, b) = (self.lit(st), self.lit(st));
                        if a.i() <= b.i() { P::Range(a, b) } else { P::Range(b, a) }
                    }
                    3 => P::Or(self.lit(st), self.lit(st)),
                    _ => P::Bind(self.new_var(st)),
                }
            };
            if let P::Bind(v) = pat {
                self.scope.push((v, false));
            }
            let guard = (self.rng.chance(30)).then(|| self.expr(Bool, 1));
            let b = body(self);
            if let P::Bind(_) = pat {
                self.scope.pop();
            }
            arms.push(Arm { pat, guard, body: b });
        }
        let b = body(self);
        arms.push(Arm {
            pat: P::Wild,
            guard: None,
            body: b,
        });
        arms
    }

    fn block(&mut self, n: u64, depth: u32) -> Vec<S> {
        let (mark, arrays) = (self.scope.len(), self.arrays.len());
        let count = 1 + self.rng.below(n);
        let stmts = (0..count).map(|_| self.stmt(depth)).collect();
        self.scope.truncate(mark);
        self.arrays.truncate(arrays);
        stmts
    }

    /// A local array statement: a new array, a store, or an unrolled update.
    fn array_stmt(&mut self) -> S {
        let existing = (!self.arrays.is_empty()).then(|| self.rng.pick(&self.arrays.clone()));
        match existing {
            Some(a) if self.rng.chance(70) => {
                let t = self.vars[a];
                if self.rng.chance(50) {
                    let k = self.rng.below(ARRAY as u64) as usize;
                    S::ArrayStore(a, k, self.expr(t, 2))
                } else {
                    let ops: &[Op] = if t.is_int() {
                        &[Op::Add, Op::Sub, Op::Mul, Op::Xor]
                    } else {
                        &[Op::Add, Op::Sub, Op::Mul]
                    };
                    let op = self.rng.pick(ops);
                    S::ArrayUpdate(a, op, self.expr(t, 2))
                }
            }
            _ => {
                let t = self.rng.pick(&VALUES);
                let init = self.expr(t, 2);
                let a = self.new_var(t);
                for _ in 1..ARRAY {
                    self.new_var(t);
                }
                self.arrays.push(a);
                S::ArrayLet(a, init)
            }
        }
    }

    fn assignable(&mut self) -> Option<usize> {
        let vars: Vec<usize> = self.scope.iter().filter(|(_, m)| *m).map(|(v, _)| *v).collect();
        (!vars.is_empty()).then(|| self.rng.pick(&vars))
    }

    fn out(&mut self, t: T, e: E) -> S {
        let slot = self.slots.len();
        match t {
            F32 => self.slots.push(Slot::F32),
            F64 => self.slots.extend([Slot::F64, Slot::F64High]),
            H16 | B16 => self.slots.push(Slot::Half(t == B16)),
            t => self.slots.extend(std::iter::repeat_n(Slot::Exact, t.words())),
        }
        S::Out(slot, e)
    }

    fn stmt(&mut self, depth: u32) -> S {
        let t = self
            .rng
            .pick(&[Bool, U8, U16, U32, U64, I32, I64, F32, F64, U32, I32, F32, H16, B16]);
        let top = depth == 3 && self.kernel;
        match self.rng.below(19) {
            17 | 18 => self.array_stmt(),
            0..=3 => {
                let e = self.expr(t, 3);
                let v = self.new_var(t);
                let mutable = self.rng.chance(50);
                self.scope.push((v, mutable));
                S::Let(v, mutable, e)
            }
            4 => {
                let t2 = self.rng.pick(&VALUES);
                let (a, b) = (self.expr(t, 2), self.expr(t2, 2));
                let (va, vb) = (self.new_var(t), self.new_var(t2));
                self.scope.push((va, false));
                self.scope.push((vb, true));
                S::LetTuple(va, vb, a, b)
            }
            5 | 6 => match self.assignable() {
                Some(v) => {
                    let vt = self.vars[v];
                    if vt != Bool && !vt.is_half() && self.rng.chance(50) {
                        let ops: &[Op] = if vt.is_float() {
                            &[Op::Add, Op::Sub, Op::Mul, Op::Div]
                        } else {
                            &[Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::And, Op::Or, Op::Xor]
                        };
                        if vt.is_int() && self.rng.chance(20) {
                            let rt = self.rng.pick(&INTS);
                            return S::ShiftAssign(self.rng.chance(50), v, self.expr(rt, 2));
                        }
                        let op = self.rng.pick(ops);
                        let mut rhs = self.expr(vt, 2);
                        if vt.is_int() && matches!(op, Op::Div | Op::Rem) {
                            rhs = E::Bin(Op::Or, Box::new(rhs), Box::new(E::Lit(V::int(vt, 1))));
                        }
                        S::OpAssign(op, v, rhs)
                    } else {
                        S::Assign(v, self.expr(vt, 3))
                    }
                }
                None if self.kernel => {
                    let e = self.expr(t, 3);
                    self.out(t, e)
                }
                None => S::If(self.expr(Bool, 2), vec![], vec![]),
            },
            7 | 8 if depth > 0 => {
                let c = self.expr(Bool, 2);
                let then = self.block(3, depth - 1);
                let els = if self.rng.chance(50) {
                    self.block(3, depth - 1)
                } else {
                    vec![]
                };
                S::If(c, then, els)
            }
            9 if depth > 0 => {
                let vt = if self.rng.chance(30) { I32 } else { U32 };
                let range = match self.rng.below(5) {
                    0 | 1 if vt == U32 => Range::Count(self.expr(U32, 2)),
                    2 => Range::Step(self.expr(vt, 2), self.expr(vt, 2), self.expr(U32, 1)),
                    3 => Range::Unrolled(self.rng.below(5) as u32),
                    _ => Range::Span(self.expr(vt, 2), self.expr(vt, 2), self.rng.chance(50)),
                };
                let vt = if let Range::Unrolled(_) | Range::Count(_) = range {
                    U32
                } else {
                    vt
                };
                let v = self.new_var(vt);
                let rev = self.extras.chance(30);
                self.loops += 1;
                self.scope.push((v, false));
                let body = self.block(3, depth - 1);
                self.scope.pop();
                self.loops -= 1;
                S::For(v, range, body, self.loops, rev)
            }
            10 if depth > 0 => {
                let start = self.expr(U32, 2);
                let c = self.new_var(U32);
                self.loops += 1;
                let body = self.block(3, depth - 1);
                self.loops -= 1;
                S::While(c, start, body, self.rng.chance(40), self.loops)
            }
            11 if depth > 0 => {
                let st = self.rng.pick(&[U8, U16, U32, U64, I32, I64, Bool]);
                let scrutinee = self.expr(st, 2);
                let arms = self.arms(st, |g| g.block(2, depth - 1));
                S::Match(scrutinee, arms)
            }
            12 if self.loops > 0 && depth < 3 => {
                let leave = self.rng.chance(50);
                let target = self
                    .extras
                    .chance(50)
                    .then(|| self.extras.below(u64::from(self.loops)) as u32);
                let jump = if leave { S::Break(target) } else { S::Continue(target) };
                S::If(self.expr(Bool, 1), vec![jump], vec![])
            }
            12 if !self.kernel && depth < 3 => {
                let r = self.ret.expect("a device function");
                S::If(self.expr(Bool, 1), vec![S::Return(self.expr(r, 2))], vec![])
            }
            13 if top => {
                let st = self.rng.pick(&SHUFFLED);
                let src = match self.var_of(st) {
                    Some(v) => v,
                    None => return self.stmt(depth),
                };
                let dst = self.new_var(st);
                self.scope.push((dst, false));
                S::Shuffle(dst, src, 1 + self.rng.below(31) as u32)
            }
            15 if top => {
                let mut f = self.rng.below(LISTED_APPROX as u64) as usize;
                if self.extras.chance(25) {
                    let later = crate::approx::FUNCTIONS.len() - LISTED_APPROX;
                    f = LISTED_APPROX + self.extras.below(later as u64) as usize;
                }
                let slot = self.slots.len();
                self.slots.push(Slot::Approx(f));
                S::OutApprox(slot, f, self.expr(F32, 3))
            }
            14 if top => {
                let e = self.expr(U32, 3);
                let dst = self.new_var(U32);
                self.scope.push((dst, false));
                S::Shared(dst, e, 1 + self.rng.below(63) as u32)
            }
            _ if self.kernel => {
                let e = self.expr(t, 3);
                self.out(t, e)
            }
            _ => {
                let e = self.expr(t, 3);
                let v = self.new_var(t);
                self.scope.push((v, false));
                S::Let(v, false, e)
            }
        }
    }
}

impl Program {
    pub fn generate(seed: u64) -> Program {
        let mut rng = Rng::new(seed);
        let mut extras = Rng::new(seed ^ 0x001A_B315);
        let mut devices: Vec<Device> = Vec::new();
        let mut reducers: Vec<(T, Op)> = Vec::new();
        for _ in 0..rng.below(4) {
            let params: Vec<(T, bool)> = (0..1 + rng.below(3))
                .map(|_| (rng.pick(&VALUES), rng.chance(30)))
                .collect();
            let ret = rng.pick(&VALUES);
            let mut g = Gen {
                rng: &mut rng,
                devices: &devices,
                vars: params.iter().map(|(t, _)| *t).collect(),
                scope: params.iter().enumerate().map(|(i, (_, m))| (i, *m)).collect(),
                loops: 0,
                extras: &mut extras,
                ret: Some(ret),
                kernel: false,
                slots: Vec::new(),
                arrays: Vec::new(),
                reducers: std::mem::take(&mut reducers),
            };
            let body = g.block(4, 2);
            let tail = g.expr(ret, 3);
            reducers = g.reducers;
            let vars = g.vars;
            devices.push(Device {
                params,
                ret,
                vars,
                body,
                tail,
            });
        }
        let mut g = Gen {
            rng: &mut rng,
            devices: &devices,
            vars: Vec::new(),
            scope: Vec::new(),
            loops: 0,
            extras: &mut extras,
            ret: None,
            kernel: true,
            slots: Vec::new(),
            arrays: Vec::new(),
            reducers,
        };
        let count = 4 + g.rng.below(10);
        let mut body: Vec<S> = (0..count).map(|_| g.stmt(3)).collect();
        // Every variable of the top level is an output too.
        let live: Vec<usize> = g.scope.iter().map(|(v, _)| *v).collect();
        for v in live {
            let t = g.vars[v];
            let s = g.out(t, E::Var(v));
            body.push(s);
        }
        for a in g.arrays.clone() {
            let t = g.vars[a];
            for k in 0..ARRAY {
                let s = g.out(t, E::ArrayLoad(a, k));
                body.push(s);
            }
        }
        let (vars, slots, reducers) = (g.vars, g.slots, g.reducers);
        Program {
            devices,
            reducers,
            vars,
            body,
            slots,
        }
    }

    /// The kernel's PTX for sm_90, from the compiler library (no rustc).
    pub fn compile_ptx(&self) -> Result<String, String> {
        let bad = |e: syn::Error| format!("the generator wrote bad Rust: {e}");
        let item: syn::ItemFn = syn::parse_str(&self.kernel_source()).map_err(bad)?;
        let devices: Vec<(String, syn::Item)> = self
            .device_sources()
            .into_iter()
            .map(|(name, src)| syn::parse_str::<syn::Item>(&src).map(|i| (name, i)))
            .collect::<Result<_, _>>()
            .map_err(bad)?;
        let attr: proc_macro2::TokenStream = "targets(sm_90)".parse().expect("attribute tokens");
        let compiled = nvfp4_dsl_compiler::compile(attr, &item, &devices, &nvfp4_dsl_compiler::Options::default())
            .map_err(|e| {
                let at = e.span().start();
                format!("compile error at {}:{}: {e}", at.line, at.column + 1)
            })?;
        Ok(compiled.variants[0].ptx[0].1.clone())
    }

    /// Compares a GPU's words with the emulator's, bit for bit, except the
    /// approximate functions' results, which must be within their bounds
    /// of the exact value at the interpreter's argument (`want`), and f64
    /// NaNs, any NaN equal to any NaN: with two NaN operands the H100
    /// returns the first in SASS operand order, and ptxas commutes `add`,
    /// `mul` and `fma`'s factors (GPU seeds 5000595, 5000682, 5000919,
    /// 5001016, 5001017, 5001031), so the PTX does not say which.
    pub fn compare_gpu(&self, gpu: &[u32], emulator: &[u32], want: &[u32]) -> Result<(), String> {
        let slots = self.slots();
        for thread in 0..(THREADS * BLOCKS) as usize {
            for (k, kind) in self.slots.iter().enumerate() {
                let i = thread * slots + k;
                let ok = match kind {
                    Slot::Approx(_) => self.compare_slot(*kind, gpu, want, i),
                    // An f64 NaN: the payload of the first NaN operand in
                    // SASS order, which ptxas may commute (see the
                    // emulator's Fidelity notes); any NaN for any NaN.
                    Slot::F64 => {
                        let bits = |w: &[u32]| u64::from(w[i]) | u64::from(w[i + 1]) << 32;
                        let (g, e) = (bits(gpu), bits(emulator));
                        g == e || (f64::from_bits(g).is_nan() && f64::from_bits(e).is_nan())
                    }
                    // Compared with the low word.
                    Slot::F64High => true,
                    _ => gpu[i] == emulator[i],
                };
                if !ok {
                    return Err(format!(
                        "thread {thread}, output word {k} ({kind:?}): GPU {:#010x}, emulator {:#010x}",
                        gpu[i], emulator[i]
                    ));
                }
            }
        }
        Ok(())
    }

    /// Output words per thread.
    pub fn slots(&self) -> usize {
        self.slots.len().max(1)
    }

    /// The kernel and its device functions, for a report.
    pub fn source(&self) -> String {
        let mut s = String::new();
        for (_, d) in self.device_sources() {
            s.push_str(&d);
            s.push('\n');
        }
        s.push_str(&self.kernel_source());
        s
    }

    pub fn device_sources(&self) -> Vec<(String, String)> {
        self.devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let rets: Vec<T> = self.devices.iter().map(|d| d.ret).collect();
                let mut r = Render {
                    out: String::new(),
                    vars: &d.vars,
                    rets: &rets,
                    indent: 1,
                    spellings: std::cell::Cell::new(0),
                };
                let params: Vec<String> = d
                    .params
                    .iter()
                    .enumerate()
                    .map(|(i, (t, m))| format!("{}v{i}: {}", if *m { "mut " } else { "" }, t.name()))
                    .collect();
                let mut src = format!("fn d{i}({}) -> {} {{\n", params.join(", "), d.ret.name());
                for s in &d.body {
                    r.stmt(s);
                }
                let tail = r.expr(&d.tail);
                src.push_str(&r.out);
                let _ = writeln!(src, "    {tail}\n}}");
                (format!("d{i}"), src)
            })
            .chain(self.reducers.iter().enumerate().map(|(k, (t, op))| {
                let name = reducer_name(*t, *op);
                let ty = t.name();
                // Every other one walks the array zipped with itself: the
                // same elements.
                let walk = if k % 2 == 0 {
                    "(i, &x) in v.iter().enumerate()"
                } else {
                    "(i, (&x, _)) in v.iter().zip(v.iter()).enumerate()"
                };
                let src = format!(
                    "fn {name}<const N: usize>(v: [{ty}; N]) -> {ty} {{\n    let mut acc = v[0];\n    for {walk} {{\n        if i > 0 {{\n            acc = acc {} x;\n        }}\n    }}\n    acc\n}}\n",
                    op.symbol()
                );
                (name, src)
            }))
            .collect()
    }

    pub fn kernel_source(&self) -> String {
        let rets: Vec<T> = self.devices.iter().map(|d| d.ret).collect();
        let mut r = Render {
            out: String::new(),
            vars: &self.vars,
            rets: &rets,
            indent: 1,
            spellings: std::cell::Cell::new(0),
        };
        for s in &self.body {
            r.stmt(s);
        }
        format!(
            "fn fuzz(inp: &[u32], out: &mut [u32]) {{\n    let tid = thread_idx_x();\n    let gid = block_idx_x() * block_dim_x() + tid;\n    let sh = shared_array::<u32, {THREADS}>();\n    let base = (gid * {}) as usize;\n{}}}\n",
            self.slots(),
            r.out
        )
    }
}

struct Render<'a> {
    out: String,
    vars: &'a [T],
    /// The device functions' result types.
    rets: &'a [T],
    indent: usize,
    /// Counts the constructs Rust can write two ways; every other one is
    /// written the second way (a method as a path call `T::m(x, ..)`, an
    /// unrolled loop over an array literal), which means the same: the
    /// programs, their meaning and the random streams stay as they were.
    spellings: std::cell::Cell<u32>,
}

impl Render<'_> {
    /// Whether to write the next construct with two spellings the second
    /// way.
    fn respell(&self) -> bool {
        let n = self.spellings.get();
        self.spellings.set(n + 1);
        n % 2 == 1
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn block(&mut self, stmts: &[S]) {
        self.indent += 1;
        for s in stmts {
            self.stmt(s);
        }
        self.indent -= 1;
    }

    fn pat(&self, p: &P) -> String {
        let lit = |v: V| match v {
            V::Int(..) => v.i().to_string(),
            other => literal(other),
        };
        match p {
            P::Lit(v) => lit(*v),
            P::Range(a, b) => format!("{}..={}", lit(*a), lit(*b)),
            P::Or(a, b) => format!("{} | {}", lit(*a), lit(*b)),
            P::Bind(v) => format!("v{v}"),
            P::Wild => "_".to_string(),
        }
    }

    fn guard(&self, g: &Option<E>) -> String {
        match g {
            Some(g) => format!(" if {}", self.expr(g)),
            None => String::new(),
        }
    }

    fn stmt(&mut self, s: &S) {
        match s {
            S::Let(v, m, e) => {
                let line = format!(
                    "let {}v{v}: {} = {};",
                    if *m { "mut " } else { "" },
                    self.vars[*v].name(),
                    self.expr(e)
                );
                self.line(&line);
            }
            S::LetTuple(a, b, ea, eb) => {
                let line = format!("let (v{a}, mut v{b}) = ({}, {});", self.expr(ea), self.expr(eb));
                self.line(&line);
            }
            S::Assign(v, e) => {
                let line = format!("v{v} = {};", self.expr(e));
                self.line(&line);
            }
            S::OpAssign(op, v, e) => {
                let line = format!("v{v} {}= {};", op.symbol(), self.expr(e));
                self.line(&line);
            }
            S::ShiftAssign(left, v, e) => {
                let line = format!("v{v} {}= {};", if *left { "<<" } else { ">>" }, self.expr(e));
                self.line(&line);
            }
            S::If(c, then, els) => {
                let line = format!("if {} {{", self.expr(c));
                self.line(&line);
                self.block(then);
                if els.is_empty() {
                    self.line("}");
                } else {
                    self.line("} else {");
                    self.block(els);
                    self.line("}");
                }
            }
            S::For(v, range, body, depth, rev) => {
                let rev = if *rev { ".rev()" } else { "" };
                let header = match range {
                    Range::Count(n) if rev.is_empty() => format!("0..({}) % 5", self.expr(n)),
                    Range::Count(n) => format!("(0..({}) % 5){rev}", self.expr(n)),
                    Range::Span(a, b, inclusive) => {
                        let range = format!(
                            "(({}) % 4)..{}(({}) % {})",
                            self.expr(a),
                            if *inclusive { "=" } else { "" },
                            self.expr(b),
                            if *inclusive { 6 } else { 9 }
                        );
                        if rev.is_empty() {
                            range
                        } else {
                            format!("({range}){rev}")
                        }
                    }
                    Range::Step(a, b, step) => format!(
                        "((({}) % 4)..(({}) % 12)){rev}.step_by((({}) % 3 + 1) as usize)",
                        self.expr(a),
                        self.expr(b),
                        self.expr(step)
                    ),
                    // The same values as an array literal, in their order.
                    Range::Unrolled(n) if *n > 0 && self.respell() => {
                        let mut values: Vec<String> = (0..*n).map(|k| format!("{k}u32")).collect();
                        if !rev.is_empty() {
                            values.reverse();
                        }
                        format!("[{}]", values.join(", "))
                    }
                    Range::Unrolled(n) => {
                        self.line("#[unroll]");
                        if rev.is_empty() {
                            format!("0u32..{n}u32")
                        } else {
                            format!("(0u32..{n}u32){rev}")
                        }
                    }
                };
                self.line(&format!("'l{depth}: for v{v} in {header} {{"));
                self.block(body);
                self.line("}");
            }
            S::While(c, start, body, as_loop, depth) => {
                let line = format!("let mut v{c} = ({}) % 4;", self.expr(start));
                self.line(&line);
                if *as_loop {
                    self.line(&format!("'l{depth}: loop {{"));
                    self.indent += 1;
                    self.line(&format!("if v{c} == 0 {{ break; }}"));
                } else {
                    self.line(&format!("'l{depth}: while v{c} > 0 {{"));
                    self.indent += 1;
                }
                self.line(&format!("v{c} -= 1;"));
                self.indent -= 1;
                self.block(body);
                self.line("}");
            }
            S::Match(e, arms) => {
                let line = format!("match {} {{", self.expr(e));
                self.line(&line);
                self.indent += 1;
                for a in arms {
                    let line = format!("{}{} => {{", self.pat(&a.pat), self.guard(&a.guard));
                    self.line(&line);
                    self.block(&a.body);
                    self.line("}");
                }
                self.indent -= 1;
                self.line("}");
            }
            S::Break(None) => self.line("break;"),
            S::Break(Some(d)) => self.line(&format!("break 'l{d};")),
            S::Continue(None) => self.line("continue;"),
            S::Continue(Some(d)) => self.line(&format!("continue 'l{d};")),
            S::Return(e) => {
                let line = format!("return {};", self.expr(e));
                self.line(&line);
            }
            S::Out(slot, e) => {
                let t = self.ty(e);
                let value = self.expr(e);
                let line = match t {
                    F32 => format!("out[base + {slot}] = ({value}).to_bits();"),
                    H16 | B16 => format!("out[base + {slot}] = ({value}).to_bits() as u32;"),
                    F64 => format!(
                        "{{ let w = ({value}).to_bits(); out[base + {slot}] = w as u32; out[base + {}] = (w >> 32) as u32; }}",
                        slot + 1
                    ),
                    U64 | I64 => format!(
                        "{{ let w = {value}; out[base + {slot}] = w as u32; out[base + {}] = (w >> 32) as u32; }}",
                        slot + 1
                    ),
                    _ => format!("out[base + {slot}] = ({value}) as u32;"),
                };
                self.line(&line);
            }
            S::OutApprox(slot, f, e) => {
                let name = crate::approx::FUNCTIONS[*f].0;
                let line = format!("out[base + {slot}] = ({}).{name}().to_bits();", self.expr(e));
                self.line(&line);
            }
            S::ArrayLet(a, init) => {
                let line = format!("let mut a{a} = [{}; {ARRAY}];", self.expr(init));
                self.line(&line);
            }
            S::ArrayStore(a, k, e) => {
                let line = format!("a{a}[{k}] = {};", self.expr(e));
                self.line(&line);
            }
            S::ArrayUpdate(a, op, e) => {
                self.line("#[unroll]");
                self.line(&format!("for i in 0usize..{ARRAY}usize {{"));
                self.indent += 1;
                let line = format!("a{a}[i] = (a{a}[i] {} {});", op.symbol(), self.expr(e));
                self.line(&line);
                self.indent -= 1;
                self.line("}");
            }
            S::Shuffle(dst, src, mask) => self.line(&format!("let v{dst} = shfl_xor(v{src}, {mask});")),
            S::Shared(dst, e, k) => {
                let line = format!("sh[tid] = {};", self.expr(e));
                self.line(&line);
                self.line("sync_threads();");
                self.line(&format!("let v{dst} = sh[tid ^ {k}];"));
                self.line("sync_threads();");
            }
        }
    }

    /// The type of an expression (the generator built it well typed).
    fn ty(&self, e: &E) -> T {
        match e {
            E::Lit(v) => v.ty(),
            E::Var(v) => self.vars[*v],
            E::Tid | E::Gid | E::Input(..) => U32,
            E::Bin(_, a, _) | E::Shift(_, a, _) | E::Neg(a) | E::If(_, a, _) => self.ty(a),
            E::Not(a) => self.ty(a),
            E::Cmp(..) | E::Logic(..) => Bool,
            E::Cast(_, t) | E::From(_, t) | E::FromBits(_, t) | E::HalfFrom(_, t) => *t,
            E::ToF32(_) => F32,
            E::Method(m, x, _) => match *m {
                "is_power_of_two" | "is_nan" | "is_finite" => Bool,
                _ => self.ty(x),
            },
            E::Match(_, arms) => self.ty(&arms[0].body),
            E::Call(i, _) => self.rets[*i],
            E::TupleField(a, b, i) => self.ty(if *i == 0 { a } else { b }),
            E::ArrayLoad(a, _) | E::Reduce(_, a) => self.vars[*a],
        }
    }

    fn expr(&self, e: &E) -> String {
        match e {
            E::Lit(v) => literal(*v),
            E::Var(v) => format!("v{v}"),
            E::Tid => "tid".to_string(),
            E::Gid => "gid".to_string(),
            E::Input(a, b) => format!("inp[((gid * {a} + {b}) % {INPUTS}) as usize]"),
            E::Bin(op, a, b) => format!("({} {} {})", self.expr(a), op.symbol(), self.expr(b)),
            E::Shift(left, a, b) => format!(
                "({} {} {})",
                self.expr(a),
                if *left { "<<" } else { ">>" },
                self.expr(b)
            ),
            E::Cmp(c, a, b) => {
                let op = match c {
                    Cmp::Eq => "==",
                    Cmp::Ne => "!=",
                    Cmp::Lt => "<",
                    Cmp::Le => "<=",
                    Cmp::Gt => ">",
                    Cmp::Ge => ">=",
                };
                format!("({} {op} {})", self.expr(a), self.expr(b))
            }
            E::Logic(and, a, b) => format!("({} {} {})", self.expr(a), if *and { "&&" } else { "||" }, self.expr(b)),
            E::Neg(a) => format!("(-{})", self.expr(a)),
            E::Not(a) => format!("(!{})", self.expr(a)),
            E::Cast(a, t) => format!("({} as {})", self.expr(a), t.name()),
            E::From(a, t) => format!("{}::from({})", t.name(), self.expr(a)),
            E::FromBits(a, t) => format!("{}::from_bits({})", t.name(), self.expr(a)),
            E::HalfFrom(a, t) => format!("{}::from_f32({})", t.name(), self.expr(a)),
            E::ToF32(a) => format!("({}).to_f32()", self.expr(a)),
            E::Method(m, x, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                if self.respell() {
                    let all = [vec![self.expr(x)], args].concat();
                    format!("{}::{m}({})", self.ty(x).name(), all.join(", "))
                } else {
                    format!("({}).{m}({})", self.expr(x), args.join(", "))
                }
            }
            E::If(c, a, b) => format!(
                "(if {} {{ {} }} else {{ {} }})",
                self.expr(c),
                self.expr(a),
                self.expr(b)
            ),
            E::Match(s, arms) => {
                let arms: Vec<String> = arms
                    .iter()
                    .map(|a| format!("{}{} => {}", self.pat(&a.pat), self.guard(&a.guard), self.expr(&a.body)))
                    .collect();
                format!("(match {} {{ {} }})", self.expr(s), arms.join(", "))
            }
            E::Call(i, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("d{i}({})", args.join(", "))
            }
            E::TupleField(a, b, i) => format!("({}, {}).{i}", self.expr(a), self.expr(b)),
            E::ArrayLoad(a, k) => format!("a{a}[{k}]"),
            E::Reduce(op, a) => format!("{}(a{a})", reducer_name(self.vars[*a], *op)),
        }
    }
}

fn reducer_name(t: T, op: Op) -> String {
    let op = match op {
        Op::Add => "add",
        Op::Mul => "mul",
        _ => "xor",
    };
    format!("reduce_{}_{op}", t.name())
}

/// How control leaves a statement.
enum Flow {
    Next,
    /// `break`, or `break 'lD` (`Some(D)`).
    Break(Option<u32>),
    Continue(Option<u32>),
    Return(V),
}

impl Flow {
    /// What the loop at `depth` does after its body ended with this flow:
    /// `None` to go on with its next iteration, else the loop ends and its
    /// statement's flow is the one returned.
    fn after_body(self, depth: u32) -> Option<Flow> {
        match self {
            Flow::Next => None,
            Flow::Break(t) if t.is_none_or(|t| t == depth) => Some(Flow::Next),
            Flow::Continue(t) if t.is_none_or(|t| t == depth) => None,
            outer => Some(outer),
        }
    }
}

/// One thread's state.
struct Thread<'a> {
    tid: u32,
    gid: u32,
    inputs: &'a [u32],
    /// The types of the current function's variables.
    types: &'a [T],
    vars: Vec<V>,
}

impl Program {
    /// What every thread writes, by the interpreter.
    pub fn interpret(&self, inputs: &[u32]) -> Vec<u32> {
        let slots = self.slots();
        let total = (THREADS * BLOCKS) as usize;
        let mut out = vec![0u32; total * slots];
        let mut threads: Vec<Thread<'_>> = (0..total as u32)
            .map(|gid| Thread {
                tid: gid % THREADS,
                gid,
                inputs,
                types: &self.vars,
                vars: vec![V::Bool(false); self.vars.len()],
            })
            .collect();
        for s in &self.body {
            match s {
                S::Shuffle(dst, src, mask) => {
                    let values: Vec<V> = threads.iter().map(|t| t.vars[*src]).collect();
                    for (i, t) in threads.iter_mut().enumerate() {
                        let from = (i as u32 & !31) | ((i as u32 & 31) ^ mask);
                        t.vars[*dst] = values[from as usize];
                    }
                }
                S::Shared(dst, e, k) => {
                    let mut shared = vec![0u32; total];
                    for t in threads.iter_mut() {
                        let v = self.eval(e, t).u32();
                        shared[t.gid as usize] = v;
                    }
                    for t in threads.iter_mut() {
                        let block = t.gid - t.tid;
                        t.vars[*dst] = V::Int(U32, u64::from(shared[(block + (t.tid ^ k)) as usize]));
                    }
                }
                s => {
                    for t in threads.iter_mut() {
                        let base = t.gid as usize * slots;
                        self.exec(std::slice::from_ref(s), t, &mut out[base..base + slots]);
                    }
                }
            }
        }
        out
    }

    fn exec(&self, stmts: &[S], t: &mut Thread<'_>, out: &mut [u32]) -> Flow {
        for s in stmts {
            let flow = match s {
                S::Let(v, _, e) | S::Assign(v, e) => {
                    t.vars[*v] = self.eval(e, t);
                    Flow::Next
                }
                S::LetTuple(a, b, ea, eb) => {
                    let (va, vb) = (self.eval(ea, t), self.eval(eb, t));
                    t.vars[*a] = va;
                    t.vars[*b] = vb;
                    Flow::Next
                }
                S::OpAssign(op, v, e) => {
                    let r = self.eval(e, t);
                    t.vars[*v] = binary(*op, t.vars[*v], r);
                    Flow::Next
                }
                S::ShiftAssign(left, v, e) => {
                    let r = self.eval(e, t);
                    t.vars[*v] = shift(*left, t.vars[*v], r);
                    Flow::Next
                }
                S::If(c, then, els) => {
                    if self.eval(c, t).b() {
                        self.exec(then, t, out)
                    } else {
                        self.exec(els, t, out)
                    }
                }
                S::For(v, range, body, depth, rev) => {
                    let vt = t.types[*v];
                    let (start, end, step) = match range {
                        Range::Count(n) => (0, i128::from(self.eval(n, t).u32() % 5) - 1, 1),
                        Range::Span(a, b, inclusive) => {
                            let lo = self.eval(a, t).i() % 4;
                            let hi = self.eval(b, t).i() % if *inclusive { 6 } else { 9 };
                            (lo, if *inclusive { hi } else { hi - 1 }, 1)
                        }
                        Range::Step(a, b, st) => {
                            let lo = self.eval(a, t).i() % 4;
                            let hi = self.eval(b, t).i() % 12;
                            (lo, hi - 1, i128::from(self.eval(st, t).u32() % 3 + 1))
                        }
                        Range::Unrolled(n) => (0, i128::from(*n) - 1, 1),
                    };
                    // Forward from the start by the step, or with `.rev()`
                    // down from the last value by it.
                    let values: Vec<i128> = if *rev {
                        (0..).map(|k| end - k * step).take_while(|&i| i >= start).collect()
                    } else {
                        (start..=end).step_by(step as usize).collect()
                    };
                    let mut flow = Flow::Next;
                    for i in values {
                        t.vars[*v] = V::int(vt, i);
                        if let Some(f) = self.exec(body, t, out).after_body(*depth) {
                            flow = f;
                            break;
                        }
                    }
                    flow
                }
                S::While(c, start, body, _, depth) => {
                    let mut left = self.eval(start, t).u32() % 4;
                    let mut flow = Flow::Next;
                    while left > 0 {
                        left -= 1;
                        t.vars[*c] = V::Int(U32, u64::from(left));
                        if let Some(f) = self.exec(body, t, out).after_body(*depth) {
                            flow = f;
                            break;
                        }
                    }
                    flow
                }
                S::Match(e, arms) => {
                    let v = self.eval(e, t);
                    match self.select(arms, v, t) {
                        Some(a) => self.exec(&a.body, t, out),
                        None => Flow::Next,
                    }
                }
                S::Break(target) => Flow::Break(*target),
                S::Continue(target) => Flow::Continue(*target),
                S::Return(e) => Flow::Return(self.eval(e, t)),
                S::Out(slot, e) => {
                    let v = self.eval(e, t);
                    let bits = v.bits();
                    out[*slot] = bits as u32;
                    if v.ty().words() == 2 {
                        out[slot + 1] = (bits >> 32) as u32;
                    }
                    Flow::Next
                }
                S::ArrayLet(a, init) => {
                    let v = self.eval(init, t);
                    t.vars[*a..*a + ARRAY].fill(v);
                    Flow::Next
                }
                S::ArrayStore(a, k, e) => {
                    t.vars[a + k] = self.eval(e, t);
                    Flow::Next
                }
                S::ArrayUpdate(a, op, e) => {
                    for k in 0..ARRAY {
                        let v = self.eval(e, t);
                        t.vars[a + k] = binary(*op, t.vars[a + k], v);
                    }
                    Flow::Next
                }
                S::OutApprox(slot, _, e) => {
                    out[*slot] = self.eval(e, t).u32();
                    Flow::Next
                }
                S::Shuffle(..) | S::Shared(..) => unreachable!("top level only"),
            };
            if !matches!(flow, Flow::Next) {
                return flow;
            }
        }
        Flow::Next
    }

    /// The first arm whose pattern matches `v` and whose guard holds.
    fn select<'a, B>(&self, arms: &'a [Arm<B>], v: V, t: &mut Thread<'_>) -> Option<&'a Arm<B>> {
        for a in arms {
            let hit = match &a.pat {
                P::Wild => true,
                P::Bind(var) => {
                    t.vars[*var] = v;
                    true
                }
                P::Lit(l) => same_value(*l, v),
                P::Or(x, y) => same_value(*x, v) || same_value(*y, v),
                P::Range(lo, hi) => lo.i() <= v.i() && v.i() <= hi.i(),
            };
            if hit && a.guard.as_ref().is_none_or(|g| self.eval(g, t).b()) {
                return Some(a);
            }
        }
        None
    }

    fn eval(&self, e: &E, t: &mut Thread<'_>) -> V {
        match e {
            E::Lit(v) => *v,
            E::Var(v) => t.vars[*v],
            E::Tid => V::Int(U32, u64::from(t.tid)),
            E::Gid => V::Int(U32, u64::from(t.gid)),
            E::Input(a, b) => {
                let i = (t.gid.wrapping_mul(*a).wrapping_add(*b)) as usize % INPUTS;
                V::Int(U32, u64::from(t.inputs[i]))
            }
            E::Bin(op, a, b) => {
                let (x, y) = (self.eval(a, t), self.eval(b, t));
                binary(*op, x, y)
            }
            E::Shift(left, a, b) => {
                let (x, y) = (self.eval(a, t), self.eval(b, t));
                shift(*left, x, y)
            }
            E::Cmp(c, a, b) => {
                let (x, y) = (self.eval(a, t), self.eval(b, t));
                let ord = match (x, y) {
                    (V::F32(_) | V::F64(_) | V::H16(_) | V::B16(_), _) => x.f().partial_cmp(&y.f()),
                    _ => Some(x.i().cmp(&y.i())),
                };
                use std::cmp::Ordering::*;
                V::Bool(match c {
                    Cmp::Eq => ord == Some(Equal),
                    Cmp::Ne => ord != Some(Equal),
                    Cmp::Lt => ord == Some(Less),
                    Cmp::Le => matches!(ord, Some(Less | Equal)),
                    Cmp::Gt => ord == Some(Greater),
                    Cmp::Ge => matches!(ord, Some(Greater | Equal)),
                })
            }
            E::Logic(and, a, b) => {
                let x = self.eval(a, t).b();
                if x == *and { self.eval(b, t) } else { V::Bool(x) }
            }
            E::Neg(a) => match self.eval(a, t) {
                V::H16(h) => V::H16(-h),
                V::B16(h) => V::B16(-h),
                V::F32(f) => V::F32(-f),
                V::F64(f) => V::F64(-f),
                v => V::int(v.ty(), -v.i()),
            },
            E::Not(a) => match self.eval(a, t) {
                V::Bool(b) => V::Bool(!b),
                v => V::Int(v.ty(), !v.bits() & v.ty().mask()),
            },
            E::Cast(a, to) | E::From(a, to) => self.eval(a, t).cast(*to),
            E::HalfFrom(a, to) => {
                let f = self.eval(a, t).f() as f32;
                if *to == H16 {
                    V::H16(half::f16::from_f32(f))
                } else {
                    V::B16(half::bf16::from_f32(f))
                }
            }
            E::ToF32(a) => V::F32(self.eval(a, t).f() as f32),
            E::FromBits(a, to) => {
                let bits = self.eval(a, t).bits();
                if *to == F32 {
                    V::F32(f32::from_bits(bits as u32))
                } else {
                    V::F64(f64::from_bits(bits))
                }
            }
            E::Method(m, x, args) => {
                let x = self.eval(x, t);
                let args: Vec<V> = args.iter().map(|a| self.eval(a, t)).collect();
                method(m, x, &args)
            }
            E::If(c, a, b) => {
                if self.eval(c, t).b() {
                    self.eval(a, t)
                } else {
                    self.eval(b, t)
                }
            }
            E::Match(s, arms) => {
                let v = self.eval(s, t);
                let arm = self.select(arms, v, t).expect("the last arm is `_`");
                self.eval(&arm.body, t)
            }
            E::Call(i, args) => {
                let d = &self.devices[*i];
                let values: Vec<V> = args.iter().map(|a| self.eval(a, t)).collect();
                let mut frame = Thread {
                    tid: t.tid,
                    gid: t.gid,
                    inputs: t.inputs,
                    types: &d.vars,
                    vars: vec![V::Bool(false); d.vars.len()],
                };
                frame.vars[..values.len()].copy_from_slice(&values);
                let mut no_out = [0u32; 0];
                match self.exec(&d.body, &mut frame, &mut no_out) {
                    Flow::Return(v) => v,
                    _ => self.eval(&d.tail, &mut frame),
                }
            }
            E::TupleField(a, b, i) => {
                let (x, y) = (self.eval(a, t), self.eval(b, t));
                if *i == 0 { x } else { y }
            }
            E::ArrayLoad(a, k) => t.vars[a + k],
            E::Reduce(op, a) => (1..ARRAY).fold(t.vars[*a], |acc, k| binary(*op, acc, t.vars[a + k])),
        }
    }

    /// Compares the emulator's words with the interpreter's.
    pub fn compare(&self, got: &[u32], want: &[u32]) -> Result<(), String> {
        let slots = self.slots();
        for thread in 0..(THREADS * BLOCKS) as usize {
            for (k, kind) in self.slots.iter().enumerate() {
                let i = thread * slots + k;
                if !self.compare_slot(*kind, got, want, i) {
                    return Err(format!(
                        "thread {thread}, output word {k} ({kind:?}): emulator {:#010x}, interpreter {:#010x}",
                        got[i], want[i]
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether word `i` of a run agrees with the interpreter's.
    fn compare_slot(&self, kind: Slot, got: &[u32], want: &[u32], i: usize) -> bool {
        match kind {
            Slot::Exact => got[i] == want[i],
            Slot::F32 => {
                let (g, w) = (f32::from_bits(got[i]), f32::from_bits(want[i]));
                got[i] == want[i] || (g.is_nan() && w.is_nan())
            }
            Slot::F64 => {
                let g = f64::from_bits(u64::from(got[i]) | u64::from(got[i + 1]) << 32);
                let w = f64::from_bits(u64::from(want[i]) | u64::from(want[i + 1]) << 32);
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
            }
            Slot::F64High => true,
            Slot::Half(bf16) => {
                let nan = |w: u32| {
                    if bf16 {
                        half::bf16::from_bits(w as u16).is_nan()
                    } else {
                        half::f16::from_bits(w as u16).is_nan()
                    }
                };
                got[i] == want[i] || (nan(got[i]) && nan(want[i]))
            }
            Slot::Approx(f) => {
                let (name, exact, domain) = crate::approx::FUNCTIONS[f];
                let x = f32::from_bits(want[i]);
                let (g, w) = (f32::from_bits(got[i]), exact(f64::from(x)));
                if domain(x) {
                    let (e, bound, _) = crate::approx::documented_error(name, x, g, w);
                    e <= bound
                } else {
                    // Outside the documented domain only NaN must stay NaN.
                    !w.is_nan() || g.is_nan()
                }
            }
        }
    }
}

/// `x << y` or `x >> y` as release Rust: the amount masked to the width.
fn shift(left: bool, x: V, y: V) -> V {
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
fn same_value(lit: V, v: V) -> bool {
    match (lit, v) {
        (V::Bool(a), V::Bool(b)) => a == b,
        (l, v) => V::int(v.ty(), l.i()).bits() == v.bits(),
    }
}

fn binary(op: Op, x: V, y: V) -> V {
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
fn float_min_max(a: f64, b: f64, max: bool) -> f64 {
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

fn method(m: &str, x: V, args: &[V]) -> V {
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
fn clamp_f<F: PartialOrd + Copy>(x: F, lo: F, hi: F) -> F {
    let low = if x < lo { lo } else { x };
    if low > hi { hi } else { low }
}

/// `powi` in the order of Rust's own `__powisf2`: square-and-multiply over
/// |n|, then one division for negative `n`.
fn powi<F: Copy + std::ops::Mul<Output = F> + std::ops::Div<Output = F>>(x: F, n: i32, one: F) -> F {
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
