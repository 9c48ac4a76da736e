//! Which `for` loops are unrolled without `#[unroll]`. A local array
//! lives in registers, so only a constant index reaches an element: a loop
//! with constant bounds whose body indexes one by the loop's variable, or
//! by a value computed from it (in the body, in a closure the body calls,
//! in a device function the body passes it to), is unrolled as
//! `#[unroll]` would unroll it. Any other loop stays a run-time loop, so
//! the PTX of loops that compiled before is unchanged.

use super::emit::{Lower, Val};
use crate::ast::*;
use crate::types::Ty;
use std::collections::HashSet;

/// The most iterations a loop is unrolled without `#[unroll]`: more copies
/// than a thread has registers is rarely what the author meant.
pub(super) const MAX_AUTO_UNROLL: u64 = 256;

/// The error for a local array indexed by a value known only at run time.
pub(super) const REGISTER_INDEX: &str = "a local array lives in registers and can only be indexed by constants; index it by the variable of a `for` loop with constant bounds (`for i in 0..4`, `0..N` with a `#[device] const` or a const generic), which is then unrolled, or by that of a loop marked `#[unroll]`; or use shared memory";

/// The function a name belongs to: the loop's own, or a device function
/// (its index in `Kernel::devices`) the loop's body calls.
type Func = Option<usize>;

/// A name in scope while scanning: whether its value depends on the loop
/// variable, and the closure a `let` bound to it.
struct Name<'a> {
    name: &'a str,
    tainted: bool,
    closure: Option<&'a Expr>,
}

struct Scan<'a, 'k> {
    lower: &'a Lower<'k>,
    names: Vec<Name<'a>>,
    /// Variables assigned a value that depends on the loop variable, by
    /// function: a later iteration reads them anywhere in the body.
    assigned: HashSet<(Func, &'a str)>,
    func: Func,
    /// Device functions entered, against a cycle (which `check` rejects).
    depth: usize,
    /// The local array indexed by the loop variable, once found.
    found: Option<String>,
}

impl Lower<'_> {
    /// The local array `f`'s body indexes by `f`'s variable, if any: the
    /// array's name, or a description where it has none.
    pub(super) fn indexes_local_array<'a>(&'a self, f: &'a ForLoop) -> Option<String> {
        let mut scan = Scan {
            lower: self,
            names: Vec::new(),
            assigned: HashSet::new(),
            func: None,
            depth: 0,
            found: None,
        };
        // Until no more variables are found to be assigned from the loop
        // variable: an assignment late in the body reaches uses before it.
        loop {
            let assigned = scan.assigned.len();
            scan.names = vec![Name {
                name: &f.var,
                tainted: true,
                closure: None,
            }];
            scan.block(&f.body);
            if scan.found.is_some() || scan.assigned.len() == assigned {
                return scan.found;
            }
        }
    }
}

impl<'a> Scan<'a, '_> {
    fn tainted(&self, name: &str) -> bool {
        self.assigned.contains(&(self.func, name))
            || self
                .names
                .iter()
                .rev()
                .find(|n| n.name == name)
                .is_some_and(|n| n.tainted)
    }

    fn bind(&mut self, name: &'a str, tainted: bool, closure: Option<&'a Expr>) {
        self.names.push(Name { name, tainted, closure });
    }

    /// Whether the block's value may depend on the loop variable (any of
    /// its statements' values: a safe approximation).
    fn block(&mut self, b: &'a Block) -> bool {
        let scope = self.names.len();
        let mut tainted = false;
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Let { pat, init, .. } => {
                    let t = self.expr(init);
                    let closure = matches!(init.kind, ExprKind::Closure { .. }).then_some(init);
                    for name in pat.names() {
                        self.bind(name, t, closure);
                    }
                }
                StmtKind::Const { name, init, .. } => {
                    self.expr(init);
                    self.bind(name, false, None);
                }
                StmtKind::Expr(e, _) => tainted |= self.expr(e),
            }
        }
        self.names.truncate(scope);
        tainted
    }

    /// Whether `e`'s value may depend on the loop variable; notes a local
    /// array indexed by such a value.
    fn expr(&mut self, e: &'a Expr) -> bool {
        if self.found.is_some() {
            return false;
        }
        match &e.kind {
            ExprKind::Var(name) => self.tainted(name),
            ExprKind::Index(base, index) => {
                let (b, i) = (self.expr(base), self.expr(index));
                if i && self.found.is_none() && self.is_local_array(base) {
                    self.found = Some(match &base.kind {
                        ExprKind::Var(name) => format!("`{name}`"),
                        _ => "a local array".to_string(),
                    });
                }
                b || i
            }
            ExprKind::Assign(place, value) | ExprKind::AssignOp(_, place, value) => {
                if self.expr(value) {
                    let mut roots = Vec::new();
                    assigned_roots(place, &mut roots);
                    self.assigned.extend(roots.into_iter().map(|n| (self.func, n)));
                }
                self.expr(place);
                false
            }
            ExprKind::For(l) => {
                let bounds = [Some(&*l.start), Some(&*l.end), l.step.as_deref()];
                let t = self.any(bounds.into_iter().flatten());
                let scope = self.names.len();
                self.bind(&l.var, t, None);
                self.block(&l.body);
                self.names.truncate(scope);
                false
            }
            ExprKind::Match { scrutinee, arms } => {
                let s = self.expr(scrutinee);
                let mut t = false;
                for arm in arms {
                    let scope = self.names.len();
                    bind_pattern(&arm.pat, &mut |name| self.bind(name, s, None));
                    if let Some(g) = &arm.guard {
                        self.expr(g);
                    }
                    t |= self.expr(&arm.body);
                    self.names.truncate(scope);
                }
                s || t
            }
            ExprKind::If { cond, then, els } => {
                let c = self.expr(cond);
                let t = self.block(then);
                c | t | els.as_deref().is_some_and(|x| self.expr(x))
            }
            ExprKind::While { cond, body, .. } => self.expr(cond) | self.block(body),
            ExprKind::Loop(b, _) | ExprKind::Block(b) => self.block(b),
            // Scanned where it is called, with its arguments.
            ExprKind::Closure { .. } => false,
            ExprKind::ClosureCall { name, args } => self.closure_call(name, args),
            ExprKind::Call { args, .. } => self.call(e, None, args),
            ExprKind::MethodCall { receiver, args, .. } => self.call(e, Some(receiver), args),
            ExprKind::Unary(_, a)
            | ExprKind::Cast(a, _)
            | ExprKind::Field(a, _)
            | ExprKind::TupleField(a, _)
            | ExprKind::Repeat(a, _)
            | ExprKind::RefMut(a)
            | ExprKind::Ref(a)
            | ExprKind::Assert { cond: a, .. } => self.expr(a),
            ExprKind::Break(_, a) | ExprKind::Return(a) => {
                if let Some(a) = a {
                    self.expr(a);
                }
                false
            }
            ExprKind::Binary(_, a, b) => self.expr(a) | self.expr(b),
            ExprKind::SliceFrom { base, start, end, .. } => {
                self.any([&**base, &**start].into_iter().chain(end.as_deref()))
            }
            ExprKind::Array(items) | ExprKind::Tuple(items) | ExprKind::InlinePtx { args: items, .. } => {
                self.any(items)
            }
            ExprKind::StructLit { fields, .. } => self.any(fields.iter().map(|(_, x, _)| x)),
            ExprKind::Lit(_)
            | ExprKind::CacheHint(_)
            | ExprKind::Target(_)
            | ExprKind::Swizzle(_)
            | ExprKind::Order(_)
            | ExprKind::Scope(_)
            | ExprKind::Table(_)
            | ExprKind::Continue(_) => false,
        }
    }

    /// Whether any of `es` depends on the loop variable (each scanned).
    fn any(&mut self, es: impl IntoIterator<Item = &'a Expr>) -> bool {
        es.into_iter().fold(false, |t, x| self.expr(x) | t)
    }

    /// An array in registers: not a `#[device] const` table (read from
    /// constant memory at a run-time index), nor a row of a 2-D shared
    /// array (whose type is an array too).
    fn is_local_array(&self, base: &Expr) -> bool {
        match (self.lower.ty(base), &base.kind) {
            (_, ExprKind::Table(_)) => false,
            (Ty::Array { .. }, ExprKind::Index(outer, _)) => self.is_local_array(outer),
            (t, _) => matches!(t, Ty::Array { .. }),
        }
    }

    /// A call: an intrinsic's value depends on its arguments; a device
    /// function's body is scanned with its parameters given its
    /// arguments' dependence.
    fn call(&mut self, e: &'a Expr, receiver: Option<&'a Expr>, args: &'a [Expr]) -> bool {
        let taints: Vec<bool> = receiver.into_iter().chain(args).map(|a| self.expr(a)).collect();
        let any = taints.contains(&true);
        let Some(&idx) = self.lower.types.devices.get(&e.id) else {
            return any;
        };
        const MAX_DEPTH: usize = 64;
        if !any || self.depth >= MAX_DEPTH {
            return any;
        }
        let d: &'a DeviceFn = &self.lower.kernel.devices[idx];
        let names = std::mem::take(&mut self.names);
        let func = self.func.replace(idx);
        self.depth += 1;
        for (p, t) in d.params.iter().zip(taints) {
            self.bind(&p.name, t, None);
        }
        let t = self.block(&d.body);
        self.depth -= 1;
        self.func = func;
        self.names = names;
        t
    }

    /// A closure's call: its body, where it was bound in the loop's body
    /// or before the loop, with its parameters given the arguments'
    /// dependence.
    fn closure_call(&mut self, name: &str, args: &'a [Expr]) -> bool {
        let taints: Vec<bool> = args.iter().map(|a| self.expr(a)).collect();
        let closure = match self.names.iter().rev().find(|n| n.name == name) {
            Some(n) => n.closure,
            None => match self.lower.lookup(name) {
                Some(Val::Closure(c)) => find_expr(self.lower.kernel, c.id),
                _ => None,
            },
        };
        let Some(ExprKind::Closure { params, body, .. }) = closure.map(|c| &c.kind) else {
            return taints.contains(&true);
        };
        let scope = self.names.len();
        for ((pat, _), t) in params.iter().zip(taints) {
            for n in pat.names() {
                self.bind(n, t, None);
            }
        }
        let t = self.expr(body);
        self.names.truncate(scope);
        t
    }
}

/// The variables an assignment to `place` writes: `a` of `a`, `a[i]`,
/// `a.f`, `a.0`, each part of a tuple of places.
fn assigned_roots<'a>(place: &'a Expr, out: &mut Vec<&'a str>) {
    match &place.kind {
        ExprKind::Var(name) => out.push(name),
        ExprKind::Index(base, _) | ExprKind::Field(base, _) | ExprKind::TupleField(base, _) => {
            assigned_roots(base, out)
        }
        ExprKind::Tuple(items) => items.iter().for_each(|x| assigned_roots(x, out)),
        _ => {}
    }
}

/// Calls `f` on each name a `match` pattern binds.
fn bind_pattern<'a>(p: &'a Pat, f: &mut impl FnMut(&'a str)) {
    match p {
        Pat::Ident(name, _) => f(name),
        Pat::Or(pats) | Pat::Tuple(pats, _) => pats.iter().for_each(|q| bind_pattern(q, f)),
        Pat::Wild | Pat::Lit(_) | Pat::Range { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::driver::{Options, compile};

    /// The sm_90 PTX of `body` in `fn k(x: &[u32], y: &mut [u32], n: u32)`,
    /// without its comments (which quote the source), or the error.
    fn ptx(body: &str) -> Result<String, String> {
        let src = format!("fn k(x: &[u32], y: &mut [u32], n: u32) {{ {body} }}");
        let item: syn::ItemFn = syn::parse_str(&src).expect("test source parses");
        let c = compile("targets(sm_90)".parse().expect("attr"), &item, &[], &Options::default())
            .map_err(|e| e.to_string())?;
        let text = c.variants[0].ptx[0]
            .1
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"));
        Ok(text.collect::<Vec<_>>().join("\n"))
    }

    #[test]
    fn a_constant_range_indexing_a_local_array_is_unrolled_as_unroll_would() {
        for (auto, asked) in [
            (
                "let mut a = [0u32; 4]; for e in 0..4 { a[e] = x[e]; } y[0] = a[1] + a[3];",
                "let mut a = [0u32; 4]; #[unroll] for e in 0..4 { a[e] = x[e]; } y[0] = a[1] + a[3];",
            ),
            (
                "let mut a = [0u32; 8]; for e in (0..8).rev().step_by(3) { let j = e; a[j] = x[j]; } y[0] = a[7];",
                "let mut a = [0u32; 8]; #[unroll] for e in (0..8).rev().step_by(3) { let j = e; a[j] = x[j]; } y[0] = a[7];",
            ),
            (
                "let mut a = [1u32; 6]; for r in 0..=1 { for c in 0..3 { a[r * 3 + c] += n; } } y[0] = a[5];",
                "let mut a = [1u32; 6]; #[unroll] for r in 0..=1 { #[unroll] for c in 0..3 { a[r * 3 + c] += n; } } y[0] = a[5];",
            ),
        ] {
            assert_eq!(ptx(auto).unwrap(), ptx(asked).unwrap(), "{auto}");
        }
    }

    #[test]
    fn other_loops_stay_run_time_loops() {
        for body in [
            // No local array indexed by the variable.
            "for e in 0..4 { y[e] = x[e]; }",
            "let a = [1u32, 2]; for e in 0..4 { y[e] = a[1]; }",
            // The inner loop's `e` shadows the outer one.
            "let mut a = [0u32; 4]; for e in 0..9 { #[unroll] for e in 0..4 { a[e] += x[e]; } } y[0] = a[2];",
            // A `let` shadows the variable with a constant.
            "let a = [3u32; 4]; for e in 0..9 { let e = 2; y[e] = a[e]; }",
        ] {
            let text = ptx(body).unwrap();
            assert!(text.contains("$L_loop"), "{body}:\n{text}");
        }
    }

    #[test]
    fn more_iterations_than_the_limit_need_unroll() {
        let e = ptx("let mut a = [0u32; 4]; for e in 0..300 { a[e % 4] += 1; } y[0] = a[0];").unwrap_err();
        assert!(
            e.contains("this loop indexes `a` by `e`") && e.contains("write `#[unroll]` on it"),
            "{e}"
        );
        ptx("let mut a = [0u32; 4]; #[unroll] for e in 0..300 { a[e % 4] += 1; } y[0] = a[0];").unwrap();
    }

    #[test]
    fn run_time_bounds_still_say_what_to_write() {
        let e = ptx("let mut a = [0u32; 4]; for e in 0..n { a[e as usize] = 1; } y[0] = a[0];").unwrap_err();
        assert!(
            e.contains("a `for` loop with constant bounds") && e.contains("`#[unroll]`"),
            "{e}"
        );
    }
}
