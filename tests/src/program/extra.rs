//! The constructs of issue 23: `#[device] const` scalars and arrays
//! (indexed at run time), atomics whose final value is deterministic (on a
//! word of `out` and on a shared cell), `#[device(methods)]` structs with
//! `self`, `&self` and `&mut self` methods, `zip`/`enumerate` over arrays,
//! closures capturing by value, `for` over array literals, device
//! functions taking `&mut [T; N]` and a 2-D shared array, and 2-D shared
//! arrays. Each is a top-level statement of the kernel drawn from a random
//! stream of its own (`fresh`), inserted between the others, so that the
//! rest of a seed's program stays what it was (new output words aside).

use super::interp::put;
use super::render::out_line;
use super::*;

/// The integer types of these constructs (their operators wrap).
const WIDE: [T; 4] = [U32, I32, U64, I64];
const FOLDS: [Op; 6] = [Op::Add, Op::Sub, Op::Mul, Op::Xor, Op::And, Op::Or];
/// The atomics; `exch` and `cas` (from the cell's first value) store a
/// constant, the same from every thread, so their final value is known
/// too.
const ATOMICS: [&str; 8] = ["add", "min", "max", "and", "or", "xor", "exch", "cas"];
const ORDERS: [&str; 4] = ["Relaxed", "Acquire", "Release", "AcqRel"];
const SCOPES: [&str; 3] = ["Cta", "Gpu", "Sys"];
/// Elements of the arrays the constructs walk.
const N: usize = 4;
/// Threads whose output word an atomic on global memory updates.
const CELLS: u32 = 4;

/// A program-level item the constructs use; item `k` is named by `k`.
#[derive(Clone, Debug)]
pub(super) enum Def {
    /// `#[device] const Kk: T = v;`
    Scalar(V),
    /// `#[device] const Lk: [T; n] = [..];`
    Table(Vec<V>),
    /// `#[device(methods)] struct Pk { a: T, b: u32 }` and its methods.
    Struct(T, Op),
    /// `fn acck(acc: &mut [T; 4], v: T)`: `*a = *a op v` for each element.
    Accumulate(T, Op),
    /// `fn cellk<const C: usize, const R: usize>(tile: &SharedArray<[u32;
    /// C], R>, r: u32, c: u32) -> u32`.
    Cell,
    /// `fn atomk(q: &mut SharedArray<T, 1>, v: T)` (`e: T, v: T` for
    /// `cas`): the atomic (op, order, scope) of a `SharedAtomic`, in a
    /// device function.
    Atomic(T, usize, usize, usize),
}

#[derive(Clone, Debug)]
pub(super) enum X {
    /// Every thread where `cond`: `atomic_<op>(out, cell, value, ..)` on
    /// word `slot` of thread `gid % CELLS` (`u32`, from zero).
    GlobalAtomic {
        slot: usize,
        op: usize,
        order: usize,
        scope: usize,
        cond: E,
        value: E,
    },
    /// A shared cell set to `init` by thread 0, then updated by every
    /// thread where `cond` (through device function `via` when given),
    /// then read by all (by `atomic_load` with `load`'s order, `Relaxed`
    /// or `Acquire`, and scope when given); of `f32`, an `add` of multiples
    /// of 1/4 below 16 (exact in any order).
    SharedAtomic {
        slot: usize,
        via: Option<usize>,
        load: Option<(usize, usize)>,
        t: T,
        op: usize,
        order: usize,
        scope: usize,
        init: V,
        cond: E,
        value: E,
    },
    /// `(Lt[(index % n) as usize] op Ks) ^ Lt[0]`.
    Const {
        slot: usize,
        table: usize,
        scalar: usize,
        op: Op,
        index: E,
    },
    /// `let mut p = Pk::new(a, b); p.bump(v);` then `p.get()` and
    /// `p.into_b()`.
    Methods { slot: usize, def: usize, a: E, b: E, v: E },
    /// `acc = (acc op (*x ^ *y)) ^ i` over `xs.iter().zip(..).enumerate()`.
    Zip {
        slot: usize,
        t: T,
        op: Op,
        xs: Vec<E>,
        ys: Vec<E>,
    },
    /// `let mut c = c0; let f = move |v: T| v op c; c = c1; f(arg) ^ c`.
    Closure {
        slot: usize,
        t: T,
        op: Op,
        c0: E,
        c1: E,
        arg: E,
    },
    /// `let mut acc = init; for s in [items..] { acc = acc op s; }`.
    Literal {
        slot: usize,
        t: T,
        op: Op,
        init: E,
        items: Vec<E>,
    },
    /// `let mut q = [i, i ^ 1, i ^ 2, i ^ 3]; acck(&mut q, v);` then
    /// again with `q[2]`; `q[0] ^ q[3]`.
    Accumulate { slot: usize, def: usize, init: E, v: E },
    /// A 2-D shared array of `THREADS / width` rows of `width + pad`
    /// (`cols`: a `#[device] const` for the row length): each thread
    /// writes its cell and adds `add` to it, then reads thread `tid ^ k`'s
    /// (through device function `cell` when given).
    Tile {
        slot: usize,
        width: u32,
        pad: bool,
        cols: Option<usize>,
        value: E,
        add: E,
        k: u32,
        cell: Option<usize>,
    },
}

/// The items' names.
fn def_name(defs: &[Def], k: usize) -> String {
    let prefix = match defs[k] {
        Def::Scalar(_) => "K",
        Def::Table(_) => "L",
        Def::Struct(..) => "P",
        Def::Accumulate(..) => "acc",
        Def::Cell => "cell",
        Def::Atomic(..) => "atom",
    };
    format!("{prefix}{k}")
}

impl Gen<'_> {
    /// Runs `f` on a generator of the same kernel that draws from `stream`
    /// (and, for its `extras`, a stream seeded from it), leaving this one's
    /// streams as they were.
    pub(super) fn with_stream<R>(&mut self, stream: &mut Rng, f: impl FnOnce(&mut Gen<'_>) -> R) -> R {
        let mut side = Rng::new(stream.next());
        let mut g = Gen {
            rng: stream,
            devices: self.devices,
            vars: std::mem::take(&mut self.vars),
            scope: self.scope.clone(),
            loops: 0,
            extras: &mut side,
            ret: None,
            kernel: true,
            slots: std::mem::take(&mut self.slots),
            arrays: self.arrays.clone(),
            reducers: std::mem::take(&mut self.reducers),
        };
        let r = f(&mut g);
        (self.vars, self.slots, self.reducers) = (g.vars, g.slots, g.reducers);
        r
    }

    /// One of the constructs, and the items it needs added to `defs`.
    pub(super) fn extra(&mut self, defs: &mut Vec<Def>) -> X {
        let t = self.rng.pick(&WIDE);
        let op = self.rng.pick(&FOLDS);
        let mut def = |d: Def| {
            defs.push(d);
            defs.len() - 1
        };
        match self.rng.below(9) {
            0 => X::GlobalAtomic {
                slot: self.slot(U32),
                op: self.rng.below(6) as usize,
                order: self.rng.below(4) as usize,
                scope: self.rng.below(3) as usize,
                cond: self.expr(Bool, 2),
                value: self.expr(U32, 2),
            },
            1 => {
                let t = if self.rng.chance(20) { F32 } else { t };
                let (op, order, scope) = (
                    if t == F32 { 0 } else { self.rng.below(8) as usize },
                    self.rng.below(4) as usize,
                    self.rng.below(3) as usize,
                );
                let value = match ATOMICS[op] {
                    _ if t == F32 => {
                        let quarters = E::Bin(Op::Rem, Box::new(self.expr(U32, 2)), Box::new(E::Lit(V::Int(U32, 64))));
                        E::Bin(
                            Op::Mul,
                            Box::new(E::Cast(Box::new(quarters), F32)),
                            Box::new(E::Lit(V::F32(0.25))),
                        )
                    }
                    "exch" | "cas" => E::Lit(self.lit(t)),
                    _ => self.expr(t, 2),
                };
                X::SharedAtomic {
                    via: self.rng.chance(40).then(|| def(Def::Atomic(t, op, order, scope))),
                    load: (t != F32 && self.rng.chance(50))
                        .then(|| (self.rng.below(2) as usize, self.rng.below(3) as usize)),
                    slot: self.slot(t),
                    t,
                    op,
                    order,
                    scope,
                    init: if t == F32 {
                        V::F32(self.rng.below(64) as f32 - 32.0)
                    } else {
                        self.lit(t)
                    },
                    cond: self.expr(Bool, 2),
                    value,
                }
            }
            2 => {
                let len = 2 + self.rng.below(7) as usize;
                let values = (0..len).map(|_| self.lit(t)).collect();
                let table = def(Def::Table(values));
                let scalar = def(Def::Scalar(self.lit(t)));
                X::Const {
                    slot: self.slot(t),
                    table,
                    scalar,
                    op,
                    index: self.expr(U32, 2),
                }
            }
            3 => X::Methods {
                def: def(Def::Struct(t, op)),
                slot: {
                    let s = self.slot(t);
                    self.slot(U32);
                    s
                },
                a: self.expr(t, 2),
                b: self.expr(U32, 2),
                v: self.expr(t, 2),
            },
            4 => X::Zip {
                slot: self.slot(t),
                t,
                op,
                xs: (0..N).map(|_| self.expr(t, 1)).collect(),
                ys: (0..N).map(|_| self.expr(t, 1)).collect(),
            },
            5 => X::Closure {
                slot: self.slot(t),
                t,
                op,
                c0: self.expr(t, 2),
                c1: self.expr(t, 2),
                arg: self.expr(t, 2),
            },
            6 => X::Literal {
                slot: self.slot(t),
                t,
                op,
                init: self.expr(t, 2),
                items: (0..1 + self.rng.below(4)).map(|_| self.expr(t, 1)).collect(),
            },
            7 => X::Accumulate {
                def: def(Def::Accumulate(t, op)),
                slot: self.slot(t),
                init: self.expr(t, 2),
                v: self.expr(t, 2),
            },
            _ => {
                let width = self.rng.pick(&[8, 16, 32]);
                let pad = self.rng.chance(50);
                let cols = self
                    .rng
                    .chance(50)
                    .then(|| def(Def::Scalar(V::int(U32, i128::from(width + u32::from(pad))))));
                let cell = self.rng.chance(50).then(|| def(Def::Cell));
                X::Tile {
                    slot: self.slot(U32),
                    width,
                    pad,
                    cols,
                    value: self.expr(U32, 2),
                    add: self.expr(U32, 2),
                    k: 1 + self.rng.below(THREADS as u64 - 1) as u32,
                    cell,
                }
            }
        }
    }
}

impl Render<'_> {
    pub(super) fn extra(&mut self, x: &X) {
        self.line("{");
        self.indent += 1;
        for line in self.extra_lines(x) {
            self.line(&line);
        }
        self.indent -= 1;
        self.line("}");
    }

    /// The atomics' statements.
    fn atomic_lines(&self, x: &X) -> Vec<String> {
        match x {
            X::GlobalAtomic {
                slot,
                op,
                order,
                scope,
                cond,
                value,
            } => {
                let index = format!("(gid % {CELLS}) as usize * {} + {slot}", self.slots);
                let call = atomic_call(*op, "out", &index, &self.expr(value), *order, *scope);
                vec![format!("if {} {{ {call} }}", self.expr(cond))]
            }
            X::SharedAtomic {
                slot,
                via,
                load,
                t,
                op,
                order,
                scope,
                init,
                cond,
                value,
            } => {
                let value = match ATOMICS[*op] {
                    "cas" => format!("{}, {}", literal(*init), self.expr(value)),
                    _ => self.expr(value),
                };
                let call = match via {
                    Some(f) => format!("{}(q, {value});", def_name(self.defs, *f)),
                    None => atomic_call(*op, "q", "0u32", &value, *order, *scope),
                };
                vec![
                    format!("let q = shared_array::<{}, 1>();", t.name()),
                    format!("if tid == 0 {{ q[0u32] = {}; }}", literal(*init)),
                    "sync_threads();".to_string(),
                    format!("if {} {{ {call} }}", self.expr(cond)),
                    "sync_threads();".to_string(),
                    match load {
                        Some((order, scope)) => out_line(
                            *slot,
                            *t,
                            &format!(
                                "atomic_load(q, 0u32, Order::{}, Scope::{})",
                                ORDERS[*order], SCOPES[*scope]
                            ),
                        ),
                        None => out_line(*slot, *t, "q[0u32]"),
                    },
                ]
            }
            _ => unreachable!("an atomic"),
        }
    }

    fn extra_lines(&self, x: &X) -> Vec<String> {
        match x {
            X::GlobalAtomic { .. } | X::SharedAtomic { .. } => self.atomic_lines(x),
            X::Const {
                slot,
                table,
                scalar,
                op,
                index,
            } => {
                let (l, k) = (def_name(self.defs, *table), def_name(self.defs, *scalar));
                let Def::Table(values) = &self.defs[*table] else {
                    unreachable!("a table")
                };
                let t = values[0].ty();
                let value = format!(
                    "({l}[(({}) % {}u32) as usize] {} {k}) ^ {l}[0]",
                    self.expr(index),
                    values.len(),
                    op.symbol()
                );
                vec![out_line(*slot, t, &value)]
            }
            X::Methods { slot, def, a, b, v } => {
                let Def::Struct(t, _) = self.defs[*def] else {
                    unreachable!("a struct")
                };
                let p = def_name(self.defs, *def);
                vec![
                    format!("let mut p = {p}::new({}, {});", self.expr(a), self.expr(b)),
                    format!("p.bump({});", self.expr(v)),
                    out_line(*slot, t, "p.get()"),
                    out_line(slot + t.words(), U32, "p.into_b()"),
                ]
            }
            X::Zip { slot, t, op, xs, ys } => {
                let list = |es: &[E]| es.iter().map(|e| self.expr(e)).collect::<Vec<_>>().join(", ");
                let ty = t.name();
                vec![
                    format!("let xs: [{ty}; {N}] = [{}];", list(xs)),
                    format!("let ys: [{ty}; {N}] = [{}];", list(ys)),
                    "let mut acc = xs[0];".to_string(),
                    format!(
                        "for (i, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {{ acc = (acc {} (*x ^ *y)) ^ (i as {ty}); }}",
                        op.symbol()
                    ),
                    out_line(*slot, *t, "acc"),
                ]
            }
            X::Closure {
                slot,
                t,
                op,
                c0,
                c1,
                arg,
            } => vec![
                format!("let mut c: {} = {};", t.name(), self.expr(c0)),
                format!("let f = move |v: {}| v {} c;", t.name(), op.symbol()),
                format!("c = {};", self.expr(c1)),
                out_line(*slot, *t, &format!("f({}) ^ c", self.expr(arg))),
            ],
            X::Literal {
                slot,
                t,
                op,
                init,
                items,
            } => {
                let items: Vec<String> = items.iter().map(|e| self.expr(e)).collect();
                vec![
                    format!("let mut acc: {} = {};", t.name(), self.expr(init)),
                    format!("for s in [{}] {{ acc = acc {} s; }}", items.join(", "), op.symbol()),
                    out_line(*slot, *t, "acc"),
                ]
            }
            X::Accumulate { slot, def, init, v } => {
                let Def::Accumulate(t, _) = self.defs[*def] else {
                    unreachable!("an accumulator")
                };
                let (f, ty) = (def_name(self.defs, *def), t.name());
                vec![
                    format!("let i0: {ty} = {};", self.expr(init)),
                    format!("let mut q = [i0, i0 ^ 1{ty}, i0 ^ 2{ty}, i0 ^ 3{ty}];"),
                    format!("{f}(&mut q, {});", self.expr(v)),
                    "let q2 = q[2];".to_string(),
                    format!("{f}(&mut q, q2);"),
                    out_line(*slot, t, "q[0] ^ q[3]"),
                ]
            }
            X::Tile {
                slot,
                width,
                pad,
                cols,
                value,
                add,
                k,
                cell,
            } => {
                let row = match cols {
                    Some(c) => format!("{} as usize", def_name(self.defs, *c)),
                    None => (width + u32::from(*pad)).to_string(),
                };
                let read = match cell {
                    Some(c) => format!("{}(t2, o / {width}, o % {width})", def_name(self.defs, *c)),
                    None => format!("t2[o / {width}][o % {width}]"),
                };
                vec![
                    format!("let t2 = shared_array::<[u32; {row}], {}>();", THREADS / width),
                    format!("t2[tid / {width}][tid % {width}] = {};", self.expr(value)),
                    format!("t2[tid / {width}][tid % {width}] += {};", self.expr(add)),
                    "sync_threads();".to_string(),
                    format!("let o = tid ^ {k};"),
                    out_line(*slot, U32, &read),
                    "sync_threads();".to_string(),
                ]
            }
        }
    }
}

/// The items' sources, for the compiler: `(key, item)`, a struct with
/// methods twice (the struct, then its impl block).
pub(super) fn def_sources(defs: &[Def]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, d) in defs.iter().enumerate() {
        let name = def_name(defs, k);
        match d {
            Def::Scalar(v) => out.push((name.clone(), format!("const {name}: {} = {};", v.ty().name(), literal(*v)))),
            Def::Table(values) => {
                let items: Vec<String> = values.iter().map(|v| literal(*v)).collect();
                let src = format!(
                    "const {name}: [{}; {}] = [{}];",
                    values[0].ty().name(),
                    values.len(),
                    items.join(", ")
                );
                out.push((name.clone(), src));
            }
            Def::Struct(t, op) => {
                let (ty, op) = (t.name(), op.symbol());
                out.push((
                    name.clone(),
                    format!("#[device(methods)]\n#[derive(Clone, Copy)]\nstruct {name} {{ a: {ty}, b: u32 }}"),
                ));
                out.push((
                    name.clone(),
                    format!(
                        "#[device]\nimpl {name} {{\n    fn new(a: {ty}, b: u32) -> Self {{ {name} {{ a, b }} }}\n    fn get(&self) -> {ty} {{ self.a {op} (self.b as {ty}) }}\n    fn bump(&mut self, v: {ty}) {{ self.a = self.a {op} v; self.b ^= 0x5bd1; }}\n    fn into_b(self) -> u32 {{ self.b.rotate_left(3) }}\n}}"
                    ),
                ));
            }
            Def::Accumulate(t, op) => out.push((
                name.clone(),
                format!(
                    "fn {name}(acc: &mut [{ty}; {N}], v: {ty}) {{\n    for a in acc.iter_mut() {{\n        *a = *a {} v;\n    }}\n}}",
                    op.symbol(),
                    ty = t.name()
                ),
            )),
            Def::Atomic(t, op, order, scope) => {
                let (params, value) = if ATOMICS[*op] == "cas" {
                    (format!("e: {}, v: {}", t.name(), t.name()), "e, v")
                } else {
                    (format!("v: {}", t.name()), "v")
                };
                let call = atomic_call(*op, "q", "0u32", value, *order, *scope);
                let src = format!(
                    "fn {name}(q: &mut SharedArray<{}, 1>, {params}) {{\n    {call}\n}}",
                    t.name()
                );
                out.push((name.clone(), src));
            }
            Def::Cell => out.push((
                name.clone(),
                format!(
                    "fn {name}<const C: usize, const R: usize>(tile: &SharedArray<[u32; C], R>, r: u32, c: u32) -> u32 {{\n    tile[r][c]\n}}"
                ),
            )),
        }
    }
    out
}

/// `atomic_<op>(mem, index, value, ..);` (`value`: `expected, new` for
/// `cas`).
fn atomic_call(op: usize, mem: &str, index: &str, value: &str, order: usize, scope: usize) -> String {
    format!(
        "atomic_{}({mem}, {index}, {value}, Order::{}, Scope::{});",
        ATOMICS[op], ORDERS[order], SCOPES[scope]
    )
}

/// `atomic_<op>`'s new value of a cell (`init`: the cell's first value,
/// which `cas` expects).
fn atomic_update(op: usize, cell: V, v: V, init: V) -> V {
    match ATOMICS[op] {
        "add" => match (cell, v) {
            (V::F32(a), V::F32(b)) => V::F32(a + b),
            _ => binary(Op::Add, cell, v),
        },
        "exch" => v,
        "cas" if cell.bits() == init.bits() => v,
        "cas" => cell,
        "min" => {
            if v.i() < cell.i() {
                v
            } else {
                cell
            }
        }
        "max" => {
            if v.i() > cell.i() {
                v
            } else {
                cell
            }
        }
        "and" => binary(Op::And, cell, v),
        "or" => binary(Op::Or, cell, v),
        _ => binary(Op::Xor, cell, v),
    }
}

impl Program {
    /// Runs a construct for every thread (`out`: every thread's words).
    pub(super) fn extra(&self, x: &X, threads: &mut [Thread<'_>], out: &mut [u32]) {
        let slots = self.slots();
        let window = |gid: u32| gid as usize * slots;
        match x {
            X::GlobalAtomic {
                slot, op, cond, value, ..
            } => {
                for t in threads.iter_mut() {
                    if self.eval(cond, t).b() {
                        let v = self.eval(value, t);
                        let i = window(t.gid % CELLS) + slot;
                        out[i] = atomic_update(*op, V::Int(U32, u64::from(out[i])), v, V::Int(U32, 0)).u32();
                    }
                }
            }
            X::SharedAtomic {
                slot,
                op,
                init,
                cond,
                value,
                ..
            } => {
                for block in threads.chunks_mut(THREADS as usize) {
                    let mut cell = *init;
                    for t in block.iter_mut() {
                        if self.eval(cond, t).b() {
                            cell = atomic_update(*op, cell, self.eval(value, t), *init);
                        }
                    }
                    for t in block.iter() {
                        let w = window(t.gid);
                        put(&mut out[w..w + slots], *slot, cell);
                    }
                }
            }
            X::Tile {
                slot, value, add, k, ..
            } => {
                for block in threads.chunks_mut(THREADS as usize) {
                    let cells: Vec<V> = block
                        .iter_mut()
                        .map(|t| {
                            let v = self.eval(value, t);
                            binary(Op::Add, v, self.eval(add, t))
                        })
                        .collect();
                    for t in block.iter() {
                        let w = window(t.gid);
                        put(&mut out[w..w + slots], *slot, cells[(t.tid ^ k) as usize]);
                    }
                }
            }
            x => {
                for t in threads.iter_mut() {
                    let w = window(t.gid);
                    self.extra_thread(x, t, &mut out[w..w + slots]);
                }
            }
        }
    }

    /// A construct one thread computes alone.
    fn extra_thread(&self, x: &X, t: &mut Thread<'_>, out: &mut [u32]) {
        match x {
            X::Const {
                slot,
                table,
                scalar,
                op,
                index,
            } => {
                let (Def::Table(values), Def::Scalar(k)) = (&self.defs[*table], &self.defs[*scalar]) else {
                    unreachable!("a table and a scalar")
                };
                let i = self.eval(index, t).u32() as usize % values.len();
                let v = binary(Op::Xor, binary(*op, values[i], *k), values[0]);
                put(out, *slot, v);
            }
            X::Methods { slot, def, a, b, v } => {
                let Def::Struct(ty, op) = self.defs[*def] else {
                    unreachable!("a struct")
                };
                let (a, b) = (self.eval(a, t), self.eval(b, t).u32());
                let a = binary(op, a, self.eval(v, t));
                let b = b ^ 0x5bd1;
                put(out, *slot, binary(op, a, V::Int(U32, u64::from(b)).cast(ty)));
                put(out, slot + ty.words(), V::Int(U32, u64::from(b.rotate_left(3))));
            }
            X::Zip {
                slot,
                t: ty,
                op,
                xs,
                ys,
            } => {
                let xs: Vec<V> = xs.iter().map(|e| self.eval(e, t)).collect();
                let ys: Vec<V> = ys.iter().map(|e| self.eval(e, t)).collect();
                let mut acc = xs[0];
                for (i, (x, y)) in xs.iter().zip(&ys).enumerate() {
                    acc = binary(
                        Op::Xor,
                        binary(*op, acc, binary(Op::Xor, *x, *y)),
                        V::int(*ty, i as i128),
                    );
                }
                put(out, *slot, acc);
            }
            X::Closure {
                slot, op, c0, c1, arg, ..
            } => {
                let c = self.eval(c0, t);
                let c1 = self.eval(c1, t);
                let v = binary(*op, self.eval(arg, t), c);
                put(out, *slot, binary(Op::Xor, v, c1));
            }
            X::Literal {
                slot, op, init, items, ..
            } => {
                let mut acc = self.eval(init, t);
                let items: Vec<V> = items.iter().map(|e| self.eval(e, t)).collect();
                for s in items {
                    acc = binary(*op, acc, s);
                }
                put(out, *slot, acc);
            }
            X::Accumulate { slot, def, init, v } => {
                let Def::Accumulate(ty, op) = self.defs[*def] else {
                    unreachable!("an accumulator")
                };
                let i0 = self.eval(init, t);
                let mut q: Vec<V> = (0..N as i128).map(|k| binary(Op::Xor, i0, V::int(ty, k))).collect();
                let v = self.eval(v, t);
                for a in q.iter_mut() {
                    *a = binary(op, *a, v);
                }
                let q2 = q[2];
                for a in q.iter_mut() {
                    *a = binary(op, *a, q2);
                }
                put(out, *slot, binary(Op::Xor, q[0], q[3]));
            }
            X::GlobalAtomic { .. } | X::SharedAtomic { .. } | X::Tile { .. } => {
                unreachable!("every thread's together")
            }
        }
    }
}
