//! The generator's expressions: literals, leaves, operators, methods and `match` arms.

use super::*;

impl Gen<'_> {
    pub(super) fn new_var(&mut self, t: T) -> usize {
        self.vars.push(t);
        self.vars.len() - 1
    }

    pub(super) fn var_of(&mut self, t: T) -> Option<usize> {
        let candidates: Vec<usize> = self
            .scope
            .iter()
            .filter(|(v, _)| self.vars[*v] == t)
            .map(|(v, _)| *v)
            .collect();
        (!candidates.is_empty()).then(|| self.rng.pick(&candidates))
    }

    pub(super) fn lit(&mut self, t: T) -> V {
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
    pub(super) fn leaf(&mut self, t: T) -> E {
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

    pub(super) fn expr(&mut self, t: T, depth: u32) -> E {
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
        if t == F32 && self.extras.chance(4) {
            return E::Quantize(self.extras.chance(50), Box::new(self.expr(F32, d)));
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

    pub(super) fn method(&mut self, t: T, d: u32) -> E {
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
    pub(super) fn arms<B>(&mut self, st: T, mut body: impl FnMut(&mut Self) -> B) -> Vec<Arm<B>> {
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
}
