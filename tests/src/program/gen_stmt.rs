//! The generator's statements and whole programs.

use super::*;

impl Gen<'_> {
    pub(super) fn block(&mut self, n: u64, depth: u32) -> Vec<S> {
        let (mark, arrays) = (self.scope.len(), self.arrays.len());
        let count = 1 + self.rng.below(n);
        let stmts = (0..count).map(|_| self.stmt(depth)).collect();
        self.scope.truncate(mark);
        self.arrays.truncate(arrays);
        stmts
    }

    /// A local array statement: a new array, a store, or an unrolled update.
    pub(super) fn array_stmt(&mut self) -> S {
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

    pub(super) fn assignable(&mut self) -> Option<usize> {
        let vars: Vec<usize> = self.scope.iter().filter(|(_, m)| *m).map(|(v, _)| *v).collect();
        (!vars.is_empty()).then(|| self.rng.pick(&vars))
    }

    pub(super) fn out(&mut self, t: T, e: E) -> S {
        S::Out(self.slot(t), e)
    }

    /// The output words of a value of type `t`: the first one's index.
    pub(super) fn slot(&mut self, t: T) -> usize {
        let slot = self.slots.len();
        match t {
            F32 => self.slots.push(Slot::F32),
            F64 => self.slots.extend([Slot::F64, Slot::F64High]),
            H16 | B16 => self.slots.push(Slot::Half(t == B16)),
            t => self.slots.extend(std::iter::repeat_n(Slot::Exact, t.words())),
        }
        slot
    }

    pub(super) fn stmt(&mut self, depth: u32) -> S {
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
        // The constructs of `extra` come from a stream of their own.
        let mut fresh = Rng::new(seed ^ 0x0023_F00D);
        // And the calls of generic functions from another.
        let mut generic = Rng::new(seed ^ 0x0024_6E4E);
        // And the constructs of `day_one` from a fourth.
        let mut day_one = Rng::new(seed ^ 0x0025_DA1E);
        let mut day_one_later = Rng::new(seed ^ 0x0026_1A7E);
        let mut defs = Vec::new();
        let mut generics = Vec::new();
        let mut body = Vec::new();
        for _ in 0..count {
            body.push(g.stmt(3));
            if fresh.chance(40) {
                let x = g.with_stream(&mut fresh, |g| g.extra(&mut defs));
                body.push(S::Extra(x));
            }
            if generic.chance(15) {
                let s = g.with_stream(&mut generic, |g| g.generic(&mut generics));
                body.push(s);
            }
            if day_one.chance(30) {
                let x = g.with_stream(&mut day_one, |g| g.day_one());
                body.push(S::DayOne(x));
            }
            if day_one_later.chance(25) {
                let x = g.with_stream(&mut day_one_later, |g| g.day_one_later());
                body.push(S::DayOne(x));
            }
        }
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
            defs,
            generics,
            vars,
            body,
            slots,
        }
    }
}
