//! A program's Rust source: the kernel and its device functions.

use super::*;

use std::fmt::Write;

impl Program {
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
                    defs: &self.defs,
                    slots: self.slots(),
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
            .chain(extra::def_sources(&self.defs))
            .chain(
                self.body
                    .iter()
                    .any(|s| matches!(s, S::DayOne(DayOne::Slice { via: true, .. })))
                    .then(|| ("view_pick".to_string(), day_one::VIEW_PICK.to_string())),
            )
            .chain(generic::generic_sources(&self.generics))
            .collect()
    }

    pub fn kernel_source(&self) -> String {
        let rets: Vec<T> = self.devices.iter().map(|d| d.ret).collect();
        let mut r = Render {
            out: String::new(),
            vars: &self.vars,
            defs: &self.defs,
            slots: self.slots(),
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

impl Render<'_> {
    /// Whether to write the next construct with two spellings the second
    /// way.
    pub(super) fn respell(&self) -> bool {
        let n = self.spellings.get();
        self.spellings.set(n + 1);
        n % 2 == 1
    }

    pub(super) fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    pub(super) fn block(&mut self, stmts: &[S]) {
        self.indent += 1;
        for s in stmts {
            self.stmt(s);
        }
        self.indent -= 1;
    }

    pub(super) fn pat(&self, p: &P) -> String {
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

    pub(super) fn guard(&self, g: &Option<E>) -> String {
        match g {
            Some(g) => format!(" if {}", self.expr(g)),
            None => String::new(),
        }
    }

    /// A `for` loop's iterator (writing `#[unroll]` first where it is one).
    fn for_header(&mut self, range: &Range, rev: &str) -> String {
        match range {
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
        }
    }

    pub(super) fn stmt(&mut self, s: &S) {
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
                let header = self.for_header(range, if *rev { ".rev()" } else { "" });
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
                let line = out_line(*slot, self.ty(e), &self.expr(e));
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
            S::Extra(x) => self.extra(x),
            S::Generic(f, calls) => self.generic(*f, calls),
            S::DayOne(x) => self.day_one(x),
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
    pub(super) fn ty(&self, e: &E) -> T {
        match e {
            E::Lit(v) => v.ty(),
            E::Var(v) => self.vars[*v],
            E::Tid | E::Gid | E::Input(..) => U32,
            E::Bin(_, a, _) | E::Shift(_, a, _) | E::Neg(a) | E::If(_, a, _) => self.ty(a),
            E::Not(a) => self.ty(a),
            E::Cmp(..) | E::Logic(..) => Bool,
            E::Cast(_, t) | E::From(_, t) | E::FromBits(_, t) | E::HalfFrom(_, t) => *t,
            E::ToF32(_) | E::Quantize(..) => F32,
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

    pub(super) fn expr(&self, e: &E) -> String {
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
                format!("({} {} {})", self.expr(a), c.symbol(), self.expr(b))
            }
            E::Logic(and, a, b) => format!("({} {} {})", self.expr(a), if *and { "&&" } else { "||" }, self.expr(b)),
            E::Neg(a) => format!("(-{})", self.expr(a)),
            E::Not(a) => format!("(!{})", self.expr(a)),
            E::Cast(a, t) => format!("({} as {})", self.expr(a), t.name()),
            E::From(a, t) => format!("{}::from({})", t.name(), self.expr(a)),
            E::FromBits(a, t) => format!("{}::from_bits({})", t.name(), self.expr(a)),
            E::HalfFrom(a, t) => format!("{}::from_f32({})", t.name(), self.expr(a)),
            E::ToF32(a) => format!("({}).to_f32()", self.expr(a)),
            E::Quantize(false, a) => format!("E4m3::from_f32({}).to_f32()", self.expr(a)),
            E::Quantize(true, a) => format!("Fp4x2::from_f32s({}, 0.0).to_f16x2().lo().to_f32()", self.expr(a)),
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

pub(super) fn reducer_name(t: T, op: Op) -> String {
    let op = match op {
        Op::Add => "add",
        Op::Mul => "mul",
        _ => "xor",
    };
    format!("reduce_{}_{op}", t.name())
}

/// The statement that writes `value`, of type `t`, to output word `slot`
/// (and the next, for 64 bits).
pub(super) fn out_line(slot: usize, t: T, value: &str) -> String {
    match t {
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
    }
}
