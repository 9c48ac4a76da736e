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

mod day_one;
mod extra;
mod gen_expr;
mod gen_stmt;
mod generic;
mod interp;
mod ops;
mod render;

use day_one::DayOne;
use extra::{Def, X};
use generic::{Call, Generic};
use ops::*;

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

impl Cmp {
    fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
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
    /// `x` rounded through an NVFP4 format and back: e4m3
    /// (`E4m3::from_f32(x).to_f32()`, false) or e2m1
    /// (`Fp4x2::from_f32s(x, 0.0).to_f16x2().lo().to_f32()`, true).
    Quantize(bool, Box<E>),
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
    /// A construct of `extra` (top level only).
    Extra(X),
    /// Calls of generic function `K` of `generic` at two or more types.
    Generic(usize, Vec<Call>),
    /// A construct of `day_one` (top level only).
    DayOne(DayOne),
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
    /// The items `extra`'s constructs use.
    defs: Vec<Def>,
    /// The generic device functions.
    generics: Vec<Generic>,
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

struct Render<'a> {
    out: String,
    vars: &'a [T],
    defs: &'a [Def],
    /// Output words per thread.
    slots: usize,
    /// The device functions' result types.
    rets: &'a [T],
    indent: usize,
    /// Counts the constructs Rust can write two ways; every other one is
    /// written the second way (a method as a path call `T::m(x, ..)`, an
    /// unrolled loop over an array literal), which means the same: the
    /// programs, their meaning and the random streams stay as they were.
    spellings: std::cell::Cell<u32>,
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
}
