//! The constructs a new kernel author writes on day one: destructuring
//! assignment (nested, with `_`, to array elements at run-time indices),
//! `std::mem::swap` and `core::mem::swap`, `let mut acc = 0; acc += x`
//! (the literal typed by the assignment), sub-slices of a slice parameter
//! (`&inp[a..b]`, `&inp[..b]`, `&inp[a..=b]`, `&inp[a..]`) read by index,
//! walked by an element loop and passed to a device function taking
//! `&[u32]`, `std::cmp::max`/`min` (and `core::cmp::`), and `len()` of a
//! shared array; and, from a stream of their own (`day_one_later`), `loop`
//! values out of nested loops, array patterns in `let`, `match` on a tuple
//! and 64-bit warp shuffles. Each is a top-level statement of the kernel in
//! a block of its own, drawn from a random stream of its own (like
//! `extra`'s), so that the rest of a seed's program stays what it was (new
//! output words aside).

use super::interp::put;
use super::render::out_line;
use super::*;

/// The types the accumulators of `Infer` take from their updates (`f16`
/// and `bf16` have no literals).
const INFERRED: [T; 8] = [U8, U16, U32, U64, I32, I64, F32, F64];
const INT_FOLDS: [Op; 6] = [Op::Add, Op::Sub, Op::Mul, Op::Xor, Op::And, Op::Or];
const FLOAT_FOLDS: [Op; 3] = [Op::Add, Op::Sub, Op::Mul];
/// The lengths of `SharedLen`'s array: at least a block's threads.
const SHARED_LENS: [u32; 3] = [THREADS, THREADS + 32, 2 * THREADS];
/// `Slice`'s start below this, its length at most `VIEW`: always inside
/// `inp`.
const STARTS: u32 = 128;
const VIEW: u32 = 64;
/// Elements of `Elements`' array.
const Q: usize = 4;

#[derive(Clone, Debug)]
pub(super) enum DayOne {
    /// `let (mut x, mut y, mut z) = (a, b, c);` then `steps` times
    /// `(x, y) = (y, x op z); ((z, _), y) = ((y op x, z), z);` and a swap
    /// of `x` and `z` (through `core::mem` when `core`); `x`, `y`, `z` out.
    Rotate {
        slot: usize,
        t: T,
        op: Op,
        init: [E; 3],
        steps: u32,
        core: bool,
    },
    /// `let mut q = [a, a ^ 1, a ^ 2, a ^ 3]; let mut w = v;` then
    /// `(q[i], q[j]) = (q[j], q[i] op w);` (`i == j` included: the
    /// assignments happen in order) and `std::mem::swap(&mut q[k], &mut
    /// w)`; `q[0] ^ q[1] ^ q[2] ^ q[3] ^ w` out (constant indices: a local
    /// array lives in registers).
    Elements {
        slot: usize,
        t: T,
        op: Op,
        init: E,
        v: E,
        index: [usize; 3],
    },
    /// `let mut acc = lit;` (an unsuffixed integer, or `lit.0`), then
    /// `acc op= e` for each update; `acc` out.
    Infer {
        slot: usize,
        t: T,
        lit: u32,
        updates: Vec<(Op, E)>,
    },
    /// `let s = &inp[<form>];` from `st = start % STARTS` and `n = len %
    /// VIEW + 1` (forms: `st..st + n`, `..n`, `st..=st + n - 1`, `st..`),
    /// then `s[pick as usize % s.len()] ^ s.len() as u32` (through device
    /// function `view_pick` when `via`) and an element loop over
    /// `inp[st..st + n % 5]`; both out.
    Slice {
        slot: usize,
        form: u32,
        start: E,
        len: E,
        pick: E,
        via: bool,
    },
    /// `std::cmp::max(a, std::cmp::min(b, c)) ^ std::cmp::min(c, a)`, each
    /// path `core::cmp::` where `core` says so.
    MaxMin {
        slot: usize,
        t: T,
        args: [E; 3],
        core: [bool; 3],
    },
    /// A shared array of `len` words: each thread writes word `tid %
    /// sl.len()`, then reads word `(tid ^ k) % sl.len()` (another
    /// thread's), `^ sl.len()`.
    SharedLen { slot: usize, len: u32, value: E, k: u32 },
    /// `'outer: loop { .. loop { .. break 'outer (k, j); .. } .. }`: the
    /// first `(k, j)` (`k < limit`, `j < 3`) with `s ^ (3k + j)` a
    /// multiple of `d % 7 + 2`, else `(limit, 0)`; `k ^ j << 8` out.
    LoopValue { slot: usize, s: E, d: E, limit: u32 },
    /// `let [a, mut b, _, d] = [e0, e1, e2, e3]; b = b op a;` then `let
    /// ([p, r], w) = ([d, b], q[2]);`, `p ^ r ^ w` out.
    ArrayPattern { slot: usize, t: T, op: Op, elems: [E; 4] },
    /// `match (a % 4, b % 8, flag)` with tuple patterns: literals, a
    /// range, `|`, a guard, names binding parts.
    TupleMatch { slot: usize, a: E, b: E, flag: E },
    /// A 64-bit shuffle of `value` by every thread: `xor` by `lane`,
    /// `down` by `lane`, or `idx` of lane `lane` (as `mode` 0, 1, 2).
    Shuffle64 {
        slot: usize,
        t: T,
        value: E,
        mode: u32,
        lane: u32,
    },
}

/// `view_pick`, the device function of `Slice` with `via`.
pub(super) const VIEW_PICK: &str =
    "fn view_pick(s: &[u32], k: u32) -> u32 {\n    s[k as usize % s.len()] ^ s.len() as u32\n}";

impl Gen<'_> {
    /// One of the constructs.
    pub(super) fn day_one(&mut self) -> DayOne {
        match self.rng.below(6) {
            0 => {
                let t = self.rng.pick(&INTS);
                let op = self.rng.pick(&INT_FOLDS);
                let init = [self.expr(t, 2), self.expr(t, 2), self.expr(t, 2)];
                let slot = self.slot(t);
                self.slot(t);
                self.slot(t);
                DayOne::Rotate {
                    slot,
                    t,
                    op,
                    init,
                    steps: 1 + self.rng.below(3) as u32,
                    core: self.rng.chance(50),
                }
            }
            1 => {
                let t = self.rng.pick(&INTS);
                DayOne::Elements {
                    slot: self.slot(t),
                    t,
                    op: self.rng.pick(&INT_FOLDS),
                    init: self.expr(t, 2),
                    v: self.expr(t, 2),
                    index: [0; 3].map(|_| self.rng.below(Q as u64) as usize),
                }
            }
            2 => {
                let t = self.rng.pick(&INFERRED);
                let folds: &[Op] = if t.is_int() { &INT_FOLDS } else { &FLOAT_FOLDS };
                let updates = (0..1 + self.rng.below(4))
                    .map(|_| (self.rng.pick(folds), self.expr(t, 2)))
                    .collect();
                DayOne::Infer {
                    slot: self.slot(t),
                    t,
                    lit: self.rng.below(10) as u32,
                    updates,
                }
            }
            3 => {
                let slot = self.slot(U32);
                self.slot(U32);
                DayOne::Slice {
                    slot,
                    form: self.rng.below(4) as u32,
                    start: self.expr(U32, 2),
                    len: self.expr(U32, 2),
                    pick: self.expr(U32, 2),
                    via: self.rng.chance(50),
                }
            }
            4 => {
                let t = self.rng.pick(&INTS);
                DayOne::MaxMin {
                    slot: self.slot(t),
                    t,
                    args: [self.expr(t, 2), self.expr(t, 2), self.expr(t, 2)],
                    core: [self.rng.chance(50), self.rng.chance(50), self.rng.chance(50)],
                }
            }
            _ => DayOne::SharedLen {
                slot: self.slot(U32),
                len: self.rng.pick(&SHARED_LENS),
                value: self.expr(U32, 2),
                k: 1 + self.rng.below(u64::from(THREADS) - 1) as u32,
            },
        }
    }
}

impl Gen<'_> {
    /// One of the constructs added after `day_one`'s GPU batches (loop
    /// values, array patterns, tuple matches, 64-bit shuffles), from a
    /// stream of its own so that the others' programs stay what they were.
    pub(super) fn day_one_later(&mut self) -> DayOne {
        match self.rng.below(4) {
            0 => DayOne::LoopValue {
                slot: self.slot(U32),
                s: self.expr(U32, 2),
                d: self.expr(U32, 2),
                limit: 1 + self.rng.below(6) as u32,
            },
            1 => {
                let t = self.rng.pick(&INTS);
                DayOne::ArrayPattern {
                    slot: self.slot(t),
                    t,
                    op: self.rng.pick(&INT_FOLDS),
                    elems: [self.expr(t, 1), self.expr(t, 1), self.expr(t, 1), self.expr(t, 1)],
                }
            }
            2 => DayOne::TupleMatch {
                slot: self.slot(U32),
                a: self.expr(U32, 2),
                b: self.expr(U32, 2),
                flag: self.expr(Bool, 2),
            },
            _ => {
                let t = self.rng.pick(&[U64, I64, F64]);
                let mode = self.rng.below(3) as u32;
                DayOne::Shuffle64 {
                    slot: self.slot(t),
                    t,
                    value: self.expr(t, 2),
                    mode,
                    lane: self.rng.below(32) as u32,
                }
            }
        }
    }
}

/// `std::cmp::` or `core::cmp::`.
fn cmp_path(core: bool, f: &str) -> String {
    format!("{}::cmp::{f}", if core { "core" } else { "std" })
}

impl Render<'_> {
    pub(super) fn day_one(&mut self, x: &DayOne) {
        self.line("{");
        self.indent += 1;
        for line in self.day_one_lines(x) {
            self.line(&line);
        }
        self.indent -= 1;
        self.line("}");
    }

    fn day_one_lines(&self, x: &DayOne) -> Vec<String> {
        match x {
            DayOne::Rotate {
                slot,
                t,
                op,
                init,
                steps,
                core,
            } => {
                let [a, b, c] = init.each_ref().map(|e| self.expr(e));
                let op = op.symbol();
                vec![
                    format!(
                        "let (mut x, mut y, mut z): ({ty}, {ty}, {ty}) = ({a}, {b}, {c});",
                        ty = t.name()
                    ),
                    format!("for _ in 0..{steps}u32 {{"),
                    format!("    (x, y) = (y, x {op} z);"),
                    format!("    ((z, _), y) = ((y {op} x, z), z);"),
                    format!("    {}::mem::swap(&mut x, &mut z);", if *core { "core" } else { "std" }),
                    "}".to_string(),
                    out_line(*slot, *t, "x"),
                    out_line(slot + t.words(), *t, "y"),
                    out_line(slot + 2 * t.words(), *t, "z"),
                ]
            }
            DayOne::Elements {
                slot,
                t,
                op,
                init,
                v,
                index,
            } => {
                let [i, j, k] = index;
                let ty = t.name();
                vec![
                    format!("let a: {ty} = {};", self.expr(init)),
                    format!("let mut q = [a, a ^ 1{ty}, a ^ 2{ty}, a ^ 3{ty}];"),
                    format!("let mut w: {ty} = {};", self.expr(v)),
                    format!("(q[{i}], q[{j}]) = (q[{j}], q[{i}] {} w);", op.symbol()),
                    format!("std::mem::swap(&mut q[{k}], &mut w);"),
                    out_line(*slot, *t, "q[0] ^ q[1] ^ q[2] ^ q[3] ^ w"),
                ]
            }
            DayOne::Infer { slot, t, lit, updates } => {
                let first = if t.is_int() {
                    lit.to_string()
                } else {
                    format!("{lit}.0")
                };
                let mut lines = vec![format!("let mut acc = {first};")];
                for (op, e) in updates {
                    lines.push(format!("acc {}= {};", op.symbol(), self.expr(e)));
                }
                lines.push(out_line(*slot, *t, "acc"));
                lines
            }
            DayOne::Slice {
                slot,
                form,
                start,
                len,
                pick,
                via,
            } => {
                let view = match form {
                    0 => "&inp[st..st + n]",
                    1 => "&inp[..n]",
                    2 => "&inp[st..=st + n - 1]",
                    _ => "&inp[st..]",
                };
                let pick = self.expr(pick);
                let read = if *via {
                    format!("view_pick(s, {pick})")
                } else {
                    format!("s[({pick}) as usize % s.len()] ^ s.len() as u32")
                };
                vec![
                    format!("let st = (({}) % {STARTS}u32) as usize;", self.expr(start)),
                    format!("let n = (({}) % {VIEW}u32 + 1) as usize;", self.expr(len)),
                    format!("let s = {view};"),
                    out_line(*slot, U32, &read),
                    "let mut acc = 0u32;".to_string(),
                    "for v in inp[st..st + n % 5].iter() {".to_string(),
                    "    acc = acc.rotate_left(7) ^ *v;".to_string(),
                    "}".to_string(),
                    out_line(slot + 1, U32, "acc"),
                ]
            }
            DayOne::MaxMin { slot, t, args, core } => {
                let [a, b, c] = args.each_ref().map(|e| self.expr(e));
                let value = format!(
                    "{}({a}, {}({b}, {c})) ^ {}({c}, {a})",
                    cmp_path(core[0], "max"),
                    cmp_path(core[1], "min"),
                    cmp_path(core[2], "min")
                );
                vec![format!("let m: {} = {value};", t.name()), out_line(*slot, *t, "m")]
            }
            DayOne::SharedLen { slot, len, value, k } => vec![
                format!("let sl = shared_array::<u32, {len}>();"),
                format!("sl[tid as usize % sl.len()] = {};", self.expr(value)),
                "sync_threads();".to_string(),
                format!("let r = sl[(tid ^ {k}) as usize % sl.len()] ^ sl.len() as u32;"),
                "sync_threads();".to_string(),
                out_line(*slot, U32, "r"),
            ],
            later => self.later_lines(later),
        }
    }

    /// The statements of `day_one_later`'s constructs.
    fn later_lines(&self, x: &DayOne) -> Vec<String> {
        match x {
            DayOne::LoopValue { slot, s, d, limit } => vec![
                format!("let s0: u32 = {};", self.expr(s)),
                format!("let d0: u32 = ({}) % 7 + 2;", self.expr(d)),
                "let mut k = 0u32;".to_string(),
                "let found = 'outer: loop {".to_string(),
                format!("    if k == {limit} {{ break (k, 0u32); }}"),
                "    let mut j = 0u32;".to_string(),
                "    loop {".to_string(),
                "        if j == 3 { break; }".to_string(),
                "        if (s0 ^ (k * 3 + j)).is_multiple_of(d0) { break 'outer (k, j); }".to_string(),
                "        j += 1;".to_string(),
                "    }".to_string(),
                "    k += 1;".to_string(),
                "};".to_string(),
                out_line(*slot, U32, "found.0 ^ (found.1 << 8)"),
            ],
            DayOne::ArrayPattern { slot, t, op, elems } => {
                let items: Vec<String> = elems.iter().map(|e| self.expr(e)).collect();
                vec![
                    format!("let q: [{}; 4] = [{}];", t.name(), items.join(", ")),
                    "let [a, mut b, _, d] = q;".to_string(),
                    format!("b = b {} a;", op.symbol()),
                    "let ([p, r], w) = ([d, b], q[2]);".to_string(),
                    out_line(*slot, *t, "p ^ r ^ w"),
                ]
            }
            DayOne::TupleMatch { slot, a, b, flag } => vec![
                format!(
                    "let m: u32 = match (({}) % 4, ({}) % 8, {}) {{",
                    self.expr(a),
                    self.expr(b),
                    self.expr(flag)
                ),
                "    (0, 0..=3, _) => 1,".to_string(),
                "    (1 | 2, c, true) if c > 4 => c * 3,".to_string(),
                "    (3, _, false) => 7,".to_string(),
                "    (x, y, _) => x + y * 16,".to_string(),
                "};".to_string(),
                out_line(*slot, U32, "m"),
            ],
            DayOne::Shuffle64 {
                slot,
                t,
                value,
                mode,
                lane,
            } => {
                let f = ["shfl_xor", "shfl_down", "shfl_idx"][*mode as usize];
                vec![
                    format!("let v64: {} = {};", t.name(), self.expr(value)),
                    out_line(*slot, *t, &format!("{f}(v64, {lane}u32)")),
                ]
            }
            _ => unreachable!("a construct of `day_one_later`"),
        }
    }
}

impl Program {
    /// Runs a construct for every thread (`out`: every thread's words).
    pub(super) fn day_one(&self, x: &DayOne, threads: &mut [Thread<'_>], out: &mut [u32]) {
        let slots = self.slots();
        if let DayOne::Shuffle64 {
            slot,
            value,
            mode,
            lane,
            ..
        } = x
        {
            let values: Vec<V> = threads.iter_mut().map(|t| self.eval(value, t)).collect();
            for (i, t) in threads.iter().enumerate() {
                let (warp, own) = (i & !31, (i & 31) as u32);
                let from = match mode {
                    0 => own ^ lane,
                    1 if own + lane < 32 => own + lane,
                    1 => own,
                    _ => *lane,
                };
                let w = t.gid as usize * slots;
                put(&mut out[w..w + slots], *slot, values[warp + from as usize]);
            }
            return;
        }
        if let DayOne::SharedLen { slot, len, value, k } = x {
            for block in threads.chunks_mut(THREADS as usize) {
                let mut words = vec![0u32; *len as usize];
                for t in block.iter_mut() {
                    words[t.tid as usize % *len as usize] = self.eval(value, t).u32();
                }
                for t in block.iter() {
                    let w = t.gid as usize * slots;
                    let r = words[(t.tid ^ k) as usize % *len as usize] ^ len;
                    put(&mut out[w..w + slots], *slot, V::Int(U32, u64::from(r)));
                }
            }
            return;
        }
        for t in threads.iter_mut() {
            let w = t.gid as usize * slots;
            self.day_one_thread(x, t, &mut out[w..w + slots]);
        }
    }

    /// A construct one thread computes alone.
    fn day_one_thread(&self, x: &DayOne, t: &mut Thread<'_>, out: &mut [u32]) {
        match x {
            DayOne::Rotate {
                slot,
                t: ty,
                op,
                init,
                steps,
                ..
            } => {
                let [mut x, mut y, mut z] = init.each_ref().map(|e| self.eval(e, t));
                for _ in 0..*steps {
                    (x, y) = (y, binary(*op, x, z));
                    (z, y) = (binary(*op, y, x), z);
                    std::mem::swap(&mut x, &mut z);
                }
                let w = ty.words();
                put(out, *slot, x);
                put(out, slot + w, y);
                put(out, slot + 2 * w, z);
            }
            DayOne::Elements {
                slot,
                t: ty,
                op,
                init,
                v,
                index,
            } => {
                let a = self.eval(init, t);
                let mut q: Vec<V> = (0..Q as i128).map(|k| binary(Op::Xor, a, V::int(*ty, k))).collect();
                let mut w = self.eval(v, t);
                let [i, j, k] = *index;
                let (qi, qj) = (q[j], binary(*op, q[i], w));
                q[i] = qi;
                q[j] = qj;
                std::mem::swap(&mut q[k], &mut w);
                let all = q.iter().fold(w, |acc, &e| binary(Op::Xor, acc, e));
                put(out, *slot, all);
            }
            DayOne::Infer {
                slot,
                t: ty,
                lit,
                updates,
            } => {
                let mut acc = match ty {
                    F32 => V::F32(*lit as f32),
                    F64 => V::F64(f64::from(*lit)),
                    _ => V::int(*ty, i128::from(*lit)),
                };
                for (op, e) in updates {
                    acc = binary(*op, acc, self.eval(e, t));
                }
                put(out, *slot, acc);
            }
            DayOne::Slice {
                slot,
                form,
                start,
                len,
                pick,
                ..
            } => {
                let st = (self.eval(start, t).u32() % STARTS) as usize;
                let n = (self.eval(len, t).u32() % VIEW + 1) as usize;
                let s = match form {
                    0 | 2 => &t.inputs[st..st + n],
                    1 => &t.inputs[..n],
                    _ => &t.inputs[st..],
                };
                let read = s[self.eval(pick, t).u32() as usize % s.len()] ^ s.len() as u32;
                let walk = t.inputs[st..st + n % 5]
                    .iter()
                    .fold(0u32, |acc, v| acc.rotate_left(7) ^ v);
                put(out, *slot, V::Int(U32, u64::from(read)));
                put(out, slot + 1, V::Int(U32, u64::from(walk)));
            }
            DayOne::MaxMin { slot, args, .. } => {
                let [a, b, c] = args.each_ref().map(|e| self.eval(e, t));
                let (max, min) = (
                    |x: V, y: V| if y.i() >= x.i() { y } else { x },
                    |x: V, y: V| if y.i() < x.i() { y } else { x },
                );
                put(out, *slot, binary(Op::Xor, max(a, min(b, c)), min(c, a)));
            }
            DayOne::LoopValue { slot, s, d, limit } => {
                let s0 = self.eval(s, t).u32();
                let d0 = self.eval(d, t).u32() % 7 + 2;
                let found = (0..*limit)
                    .flat_map(|k| (0..3).map(move |j| (k, j)))
                    .find(|(k, j)| (s0 ^ (k * 3 + j)).is_multiple_of(d0))
                    .unwrap_or((*limit, 0));
                put(out, *slot, V::Int(U32, u64::from(found.0 ^ (found.1 << 8))));
            }
            DayOne::ArrayPattern { slot, op, elems, .. } => {
                let q = elems.each_ref().map(|e| self.eval(e, t));
                let b = binary(*op, q[1], q[0]);
                let pr = binary(Op::Xor, q[3], b);
                put(out, *slot, binary(Op::Xor, pr, q[2]));
            }
            DayOne::TupleMatch { slot, a, b, flag } => {
                let (a, b, flag) = (
                    self.eval(a, t).u32() % 4,
                    self.eval(b, t).u32() % 8,
                    self.eval(flag, t).b(),
                );
                let m = match (a, b, flag) {
                    (0, 0..=3, _) => 1,
                    (1 | 2, c, true) if c > 4 => c * 3,
                    (3, _, false) => 7,
                    (x, y, _) => x + y * 16,
                };
                put(out, *slot, V::Int(U32, u64::from(m)));
            }
            DayOne::SharedLen { .. } | DayOne::Shuffle64 { .. } => unreachable!("every thread's together"),
        }
    }
}
