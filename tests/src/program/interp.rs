//! The reference interpreter: every thread of the program, with Rust's semantics.

use super::*;

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
                S::Extra(x) => self.extra(x, &mut threads, &mut out),
                S::DayOne(x) => self.day_one(x, &mut threads, &mut out),
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

    pub(super) fn exec(&self, stmts: &[S], t: &mut Thread<'_>, out: &mut [u32]) -> Flow {
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
                    put(out, *slot, self.eval(e, t));
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
                S::Generic(f, calls) => {
                    self.generic(*f, calls, t, out);
                    Flow::Next
                }
                S::Shuffle(..) | S::Shared(..) | S::Extra(_) | S::DayOne(_) => unreachable!("top level only"),
            };
            if !matches!(flow, Flow::Next) {
                return flow;
            }
        }
        Flow::Next
    }

    /// The first arm whose pattern matches `v` and whose guard holds.
    pub(super) fn select<'a, B>(&self, arms: &'a [Arm<B>], v: V, t: &mut Thread<'_>) -> Option<&'a Arm<B>> {
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

    pub(super) fn eval(&self, e: &E, t: &mut Thread<'_>) -> V {
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
                V::Bool(compare(*c, x, y))
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
            E::Quantize(fp4, a) => {
                let x = self.eval(a, t).f() as f32;
                V::F32(if *fp4 {
                    nvfp4_dsl::Fp4x2::from_f32s(x, 0.0).to_f16x2().lo().to_f32()
                } else {
                    nvfp4_dsl::E4m3::from_f32(x).to_f32()
                })
            }
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
    pub(super) fn compare_slot(&self, kind: Slot, got: &[u32], want: &[u32], i: usize) -> bool {
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

/// Writes `v` to output word `slot` of a thread (and the next, for 64 bits).
pub(super) fn put(out: &mut [u32], slot: usize, v: V) {
    let bits = v.bits();
    out[slot] = bits as u32;
    if v.ty().words() == 2 {
        out[slot + 1] = (bits >> 32) as u32;
    }
}
