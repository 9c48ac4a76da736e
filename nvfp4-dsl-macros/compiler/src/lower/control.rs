//! Control flow: `if` and `match` (also as values, with their patterns),
//! `for` loops at run time and unrolled (`#[unroll]`, or where `unroll`
//! finds they must be), and the targets of `break` and `continue`.

use super::emit::{LoopTarget, Lower, Val};
use super::fold::wrap_int;
use super::fold::{Const, Result, err};
use super::unroll::MAX_AUTO_UNROLL;
use crate::ASSERTION_FAILED;
use crate::ast::*;
use crate::ir::*;
use crate::types::{Scalar, Ty};

/// Unrolling more copies than this is almost certainly a mistake (and would
/// make ptxas crawl).
pub(super) const MAX_UNROLL: u64 = 4096;

/// A `for` loop's bounds and step (`step_by`), as values.
pub(super) struct Range {
    start: Val,
    end: Val,
    step: Option<Val>,
}

/// The values of an unrolled loop, where its bounds and step are
/// constants: the first, the difference to the next, the count.
fn trip(f: &ForLoop, start: &Val, end: &Val, step: Option<&Val>) -> Option<(i128, i128, u64)> {
    let (Val::Const(Const::Int(a)), Val::Const(Const::Int(b))) = (start, end) else {
        return None;
    };
    let st = match step {
        None => 1,
        Some(Val::Const(Const::Int(st))) if *st > 0 => *st,
        Some(_) => return None,
    };
    let last = if f.inclusive { *b } else { *b - 1 };
    let count = if last < *a {
        0
    } else {
        u64::try_from((last - *a) / st + 1).unwrap_or(u64::MAX)
    };
    // Forward from the start, or with `.rev()` down from the last value.
    Some(if f.rev { (last, -st, count) } else { (*a, st, count) })
}

pub(super) fn diverges(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Break(..) | ExprKind::Continue(_) | ExprKind::Return(_)
    )
}

impl Lower<'_> {
    pub(super) fn if_expr(&mut self, e: &Expr, cond: &Expr, then: &Block, els: Option<&Expr>) -> Result<Val> {
        let t = self.ty(e);
        let c = self.expr(cond)?;
        if let Val::Const(Const::Bool(b)) = c {
            return if b {
                self.block_stmts(then)
            } else {
                match els {
                    Some(e) => self.expr(e),
                    None => Ok(Val::Unit),
                }
            };
        }
        let p = self.in_reg(&c, Scalar::Bool);
        let result = if t == Ty::Unit { Val::Unit } else { self.fresh(&t)? };
        let (then_nodes, ()) = self.nested(|l| {
            let v = l.block_stmts(then)?;
            l.assign_regs(&result, &v, &t);
            Ok(())
        })?;
        let (else_nodes, ()) = self.nested(|l| {
            if let Some(e) = els {
                let v = l.expr(e)?;
                l.assign_regs(&result, &v, &t);
            }
            Ok(())
        })?;
        self.push(Node::If {
            cond: p,
            negate: false,
            then: then_nodes,
            els: else_nodes,
        });
        Ok(result)
    }

    /// `match`: each arm in a block that a failed pattern or guard exits
    /// to the next arm; the matching arm's value goes to the result and
    /// exits the whole match. Patterns on a constant fold, so only the arm
    /// taken is emitted.
    pub(super) fn match_expr(&mut self, e: &Expr, scrutinee: &Expr, arms: &[Arm]) -> Result<Val> {
        let t = self.ty(e);
        let st = self.ty(scrutinee);
        let v = self.expr(scrutinee)?;
        let result = if t == Ty::Unit { Val::Unit } else { self.fresh(&t)? };
        let whole = self.label();
        let (nodes, ()) = self.nested(|l| {
            for arm in arms {
                let test = l.pattern_test(&arm.pat, &v, &st, e.span)?;
                if let Val::Const(Const::Bool(false)) = test {
                    continue;
                }
                let block = l.label();
                let (body, always) = l.nested(|l| {
                    let mut always = true;
                    if !matches!(test, Val::Const(Const::Bool(true))) {
                        always = false;
                        let p = l.in_reg(&test, Scalar::Bool);
                        l.push(Node::If {
                            cond: p,
                            negate: true,
                            then: vec![Node::ExitBlock(block)],
                            els: vec![],
                        });
                    }
                    l.scopes.push(Vec::new());
                    l.bind_pattern(&arm.pat, &v, &st)?;
                    if let Some(g) = &arm.guard {
                        match l.expr(g)? {
                            Val::Const(Const::Bool(true)) => {}
                            Val::Const(Const::Bool(false)) => {
                                always = false;
                                l.push(Node::ExitBlock(block));
                            }
                            gv => {
                                always = false;
                                let p = l.in_reg(&gv, Scalar::Bool);
                                l.push(Node::If {
                                    cond: p,
                                    negate: true,
                                    then: vec![Node::ExitBlock(block)],
                                    els: vec![],
                                });
                            }
                        }
                    }
                    let value = l.expr(&arm.body)?;
                    l.assign_regs(&result, &value, &t);
                    l.scopes.pop();
                    l.push(Node::ExitBlock(whole));
                    Ok(always)
                })?;
                l.push(Node::Block { id: block, body });
                if always {
                    // Later arms cannot be reached.
                    break;
                }
            }
            Ok(())
        })?;
        self.push(Node::Block { id: whole, body: nodes });
        Ok(result)
    }

    /// Whether `v` (of type `t`) matches `p`, as a `bool` value.
    pub(super) fn pattern_test(&mut self, p: &Pat, v: &Val, t: &Ty, span: Loc) -> Result<Val> {
        let yes = Val::Const(Const::Bool(true));
        if let Pat::Tuple(pats, _) = p {
            let Ty::Tuple(elems) = t else {
                unreachable!("checked: a tuple")
            };
            let mut test = yes;
            for ((q, part), elem) in pats.iter().zip(self.parts(v, pats.len())).zip(elems) {
                let matches = self.pattern_test(q, &part, elem, span)?;
                test = self.binary(BinOp::BitAnd, test, matches, Scalar::Bool, None, None, span)?;
            }
            return Ok(test);
        }
        let s = match p {
            Pat::Wild | Pat::Ident(..) | Pat::Or(_) => Scalar::Bool,
            _ => self.scalar_of(t),
        };
        Ok(match p {
            Pat::Wild | Pat::Ident(..) | Pat::Tuple(..) => yes,
            Pat::Lit(x) => {
                let k = self.expr(x)?;
                self.binary(BinOp::Eq, v.clone(), k, s, None, None, span)?
            }
            Pat::Range { lo, hi, inclusive } => {
                let mut test = yes;
                if let Some(lo) = lo {
                    let k = self.expr(lo)?;
                    let above = self.binary(BinOp::Ge, v.clone(), k, s, None, None, span)?;
                    test = self.binary(BinOp::BitAnd, test, above, Scalar::Bool, None, None, span)?;
                }
                if let Some(hi) = hi {
                    let k = self.expr(hi)?;
                    let op = if *inclusive { BinOp::Le } else { BinOp::Lt };
                    let below = self.binary(op, v.clone(), k, s, None, None, span)?;
                    test = self.binary(BinOp::BitAnd, test, below, Scalar::Bool, None, None, span)?;
                }
                test
            }
            Pat::Or(ps) => {
                let mut test = Val::Const(Const::Bool(false));
                for q in ps {
                    let matches = self.pattern_test(q, v, t, span)?;
                    test = self.binary(BinOp::BitOr, test, matches, Scalar::Bool, None, None, span)?;
                }
                test
            }
        })
    }

    pub(super) fn bind_pattern(&mut self, p: &Pat, v: &Val, t: &Ty) -> Result<()> {
        match (p, t) {
            (Pat::Ident(name, _), _) => {
                let v = self.copy_if_var(v.clone(), t)?;
                self.bind(name, v);
            }
            (Pat::Tuple(pats, _), Ty::Tuple(elems)) => {
                for ((q, part), elem) in pats.iter().zip(self.parts(v, pats.len())).zip(elems) {
                    self.bind_pattern(q, &part, elem)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A run-time `for` loop. Forward, the counter starts at the start and
    /// runs to the end; reversed (`.rev()`), it starts at the end and is
    /// decremented before the body, so it never passes below the start (no
    /// overflow at `MIN`). With `step_by`, the loop ends where the next value
    /// would pass the other bound, without overflowing: exact for any
    /// bounds, as Rust's `StepBy`.
    pub(super) fn for_loop(&mut self, f: &ForLoop, e: &Expr, range: Range) -> Result<Val> {
        let vt = self.ty(&f.start);
        let s = self.scalar_of(&vt);
        let Range { start, end, step } = range;
        // The counter starts at one bound; the other is evaluated once, as
        // Rust does.
        let (first, bound) = if f.rev { (end, start) } else { (start, end) };
        let bound = self.copy_if_var(bound, &vt)?;
        let i = self.reg(s.reg_class());
        self.assign_regs(&Val::Reg(i), &first, &vt);
        self.var_regs.insert(i.id);
        let id = self.label();
        self.loops.push((f.label.clone(), LoopTarget::Loop(id)));
        let cmp = match (f.rev, f.inclusive) {
            (false, false) => BinOp::Lt,
            (false, true) => BinOp::Le,
            (true, false) => BinOp::Gt,
            (true, true) => BinOp::Ge,
        };
        // `i += n` forward, `i -= n` reversed.
        let advance = if f.rev { BinOp::Sub } else { BinOp::Add };
        let one = Val::Const(Const::Int(1));
        let (body, ()) = self.nested(|l| {
            let c = l.binary(cmp, Val::Reg(i), bound.clone(), s, None, None, e.span)?;
            if let Val::Const(Const::Bool(false)) = c {
                l.push(Node::Break(id));
            } else if !matches!(c, Val::Const(Const::Bool(true))) {
                let p = l.in_reg(&c, Scalar::Bool);
                l.push(Node::If {
                    cond: p,
                    negate: true,
                    then: vec![Node::Break(id)],
                    els: vec![],
                });
            }
            if f.rev && !f.inclusive {
                l.binary(BinOp::Sub, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
            }
            l.scopes.push(Vec::new());
            l.bind(&f.var, Val::Reg(i));
            l.block_stmts(&f.body)?;
            l.scopes.pop();
            Ok(())
        })?;
        self.loops.pop();
        let (continuing, ()) = self.nested(|l| {
            match &step {
                None if f.inclusive => {
                    // `a..=MAX` must stop after MAX (reversed, after MIN),
                    // not wrap.
                    let done = l.binary(BinOp::Eq, Val::Reg(i), bound.clone(), s, None, None, e.span)?;
                    let p = l.in_reg(&done, Scalar::Bool);
                    l.push(Node::If {
                        cond: p,
                        negate: false,
                        then: vec![Node::Break(id)],
                        els: vec![],
                    });
                    l.binary(advance, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
                }
                // Reversed, the head decrements.
                None if f.rev => {}
                None => {
                    l.binary(advance, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
                }
                Some(stepv) => {
                    // What is left to the other bound: forward the next value
                    // must stay below the end (`left <= step` leaves),
                    // reversed at or above the start (`left < step` leaves).
                    let us = if s.bits() == 64 { Scalar::U64 } else { Scalar::U32 };
                    let (hi, lo, leave) = if f.rev {
                        (Val::Reg(i), bound.clone(), BinOp::Lt)
                    } else {
                        (bound.clone(), Val::Reg(i), BinOp::Le)
                    };
                    let left = l.binary(BinOp::Sub, hi, lo, us, None, None, e.span)?;
                    let passes = match stepv {
                        Val::Const(Const::Int(n)) if *n <= us.int_range().1 => {
                            let left_s = if s.bits() < 32 {
                                l.cast(left, s, Scalar::U32)
                            } else {
                                left
                            };
                            let c = l.binary(leave, left_s, Val::Const(Const::Int(*n)), us, None, None, e.span)?;
                            l.in_reg(&c, Scalar::Bool)
                        }
                        v => {
                            let wide = l.cast(left, us, Scalar::U64);
                            let c = l.binary(leave, wide, v.clone(), Scalar::U64, None, None, e.span)?;
                            l.in_reg(&c, Scalar::Bool)
                        }
                    };
                    l.push(Node::If {
                        cond: passes,
                        negate: false,
                        then: vec![Node::Break(id)],
                        els: vec![],
                    });
                    let step_s = match stepv {
                        Val::Const(Const::Int(n)) => Val::Const(Const::Int(wrap_int(*n, s))),
                        v => l.cast(v.clone(), Scalar::Usize, s),
                    };
                    l.binary(advance, Val::Reg(i), step_s, s, None, Some(i), e.span)?;
                    if f.rev {
                        // The head takes the last 1.
                        l.binary(BinOp::Add, Val::Reg(i), one.clone(), s, None, Some(i), e.span)?;
                    }
                }
            }
            Ok(())
        })?;
        self.push(Node::Loop { id, body, continuing });
        Ok(Val::Unit)
    }

    /// The loop a `break` or `continue` with `label` leaves: the innermost
    /// one, or the innermost with that label (checked to exist).
    pub(super) fn loop_target(&self, label: &Option<String>) -> Option<LoopTarget> {
        let found = match label {
            None => self.loops.last(),
            Some(l) => self.loops.iter().rev().find(|(name, _)| name.as_ref() == Some(l)),
        };
        found.map(|&(_, target)| target)
    }

    /// An unrolled `for`: one copy of the body per value, the loop variable
    /// a constant in each. `bound`: the end is at most this (a local
    /// array's length, `min` a run-time length: a `zip`), which is unrolled
    /// to, each copy skipped where the run-time end is passed.
    pub(super) fn unrolled_for(&mut self, f: &ForLoop, span: Loc, bound: Option<u64>, range: Range) -> Result<Val> {
        let vt = self.ty(&f.start);
        let s = self.scalar_of(&vt);
        let end = self.copy_if_var(range.end, &vt)?;
        // The end, or the bound with the run-time end to test each value
        // against (not reversed with a step: its values start from the end).
        let (end, run_time_end) = match (&end, bound) {
            (Val::Const(_), _) => (end, None),
            (_, Some(n)) if !(f.rev && f.step.is_some()) => (Val::Const(Const::Int(n.into())), Some(end)),
            _ => (end, None),
        };
        let Some((first, delta, count)) = trip(f, &range.start, &end, range.step.as_ref()) else {
            return err(
                span,
                if f.unroll {
                    "`#[unroll]` needs constant bounds and step (literals, const generics or expressions of them); remove `#[unroll]` to keep a run-time loop"
                } else {
                    "a loop over a local array's indices is unrolled (the array lives in registers), so it needs a constant start (and, reversed with a step, a constant end)"
                },
            );
        };
        if count > MAX_UNROLL {
            return err(
                span,
                format!(
                    "`#[unroll]` of {count} iterations is more than the limit of {MAX_UNROLL}; unroll a smaller inner loop"
                ),
            );
        }
        let outer = self.label();
        let (nodes, ()) = self.nested(|l| {
            let mut i = first;
            for _ in 0..count {
                let iteration = l.label();
                l.loops
                    .push((f.label.clone(), LoopTarget::Unrolled { outer, iteration }));
                let (body, _) = l.nested(|l2| {
                    if let Some(end) = &run_time_end {
                        // Past the end: forward no later value is in range
                        // either, reversed an earlier one may be.
                        let op = if f.inclusive { BinOp::Ge } else { BinOp::Gt };
                        let i = Val::Const(Const::Int(wrap_int(i, s)));
                        let inside = l2.binary(op, end.clone(), i, s, None, None, span)?;
                        let p = l2.in_reg(&inside, Scalar::Bool);
                        l2.push(Node::If {
                            cond: p,
                            negate: true,
                            then: vec![Node::ExitBlock(if f.rev { iteration } else { outer })],
                            els: vec![],
                        });
                    }
                    l2.scopes.push(Vec::new());
                    l2.bind(&f.var, Val::Const(Const::Int(wrap_int(i, s))));
                    let r = l2.block_stmts(&f.body);
                    l2.scopes.pop();
                    r
                })?;
                l.loops.pop();
                l.push(Node::Block { id: iteration, body });
                i += delta;
            }
            Ok(())
        })?;
        self.push(Node::Block { id: outer, body: nodes });
        Ok(Val::Unit)
    }

    /// An assertion: a trap where `cond` is false, noted with the
    /// assertion's source `text`. A `debug` one is left out (its condition
    /// not evaluated, as Rust's) without debug assertions.
    pub(super) fn assert(&mut self, cond: &Expr, text: &str, debug: bool) -> Result<Val> {
        if debug && !self.debug_assertions {
            return Ok(Val::Unit);
        }
        self.func.debug_checks |= debug;
        let note = format!("{ASSERTION_FAILED}{text}");
        match self.expr(cond)? {
            Val::Const(Const::Bool(true)) => {}
            Val::Const(Const::Bool(false)) => self.push(Node::Trap(note)),
            c => {
                let p = self.in_reg(&c, Scalar::Bool);
                self.trap_where(p, true, note);
            }
        }
        Ok(Val::Unit)
    }

    /// A `trap` noted with `note` where the predicate `cond` is set (clear,
    /// if `negate`): the failed check's message, which the emulator reads.
    pub(super) fn trap_where(&mut self, cond: Reg, negate: bool, note: String) {
        self.push(Node::If {
            cond,
            negate,
            then: vec![Node::Trap(note)],
            els: vec![],
        });
    }

    /// `while cond { body }`.
    pub(super) fn while_loop(&mut self, cond: &Expr, body: &Block, label: &Option<String>) -> Result<Val> {
        let id = self.label();
        self.loops.push((label.clone(), LoopTarget::Loop(id)));
        let (body_nodes, ()) = self.nested(|l| {
            let c = l.expr(cond)?;
            match c {
                Val::Const(Const::Bool(true)) => {}
                Val::Const(Const::Bool(false)) => l.push(Node::Break(id)),
                v => {
                    let p = l.in_reg(&v, Scalar::Bool);
                    l.push(Node::If {
                        cond: p,
                        negate: true,
                        then: vec![Node::Break(id)],
                        els: vec![],
                    });
                }
            }
            l.block_stmts(body)?;
            Ok(())
        })?;
        self.loops.pop();
        self.push(Node::Loop {
            id,
            body: body_nodes,
            continuing: vec![],
        });
        Ok(Val::Unit)
    }

    /// `loop { body }`; its value, where a `break value` leaves it, in
    /// registers each such `break` assigns.
    pub(super) fn loop_expr(&mut self, e: &Expr, body: &Block, label: &Option<String>) -> Result<Val> {
        let t = self.ty(e);
        let result = if t == Ty::Unit { Val::Unit } else { self.fresh(&t)? };
        let id = self.label();
        self.loops.push((label.clone(), LoopTarget::Loop(id)));
        self.loop_values.push((id, result.clone(), t));
        let (nodes, _) = self.nested(|l| l.block_stmts(body))?;
        self.loop_values.pop();
        self.loops.pop();
        self.push(Node::Loop {
            id,
            body: nodes,
            continuing: vec![],
        });
        Ok(result)
    }

    /// `for`: unrolled (asked for, over a local array's indices, or
    /// indexing a local array by its variable: see `unroll`) or at run time.
    pub(super) fn for_expr(&mut self, f: &ForLoop, e: &Expr) -> Result<Val> {
        let span = Loc {
            start: f.start.span.start,
            end: f.end.span.end,
        };
        // A loop to a local array's length indexes the array, which
        // lives in registers: it is unrolled.
        let bound = self.array_bound(&f.end);
        let range = self.range(f)?;
        if f.unroll || bound.is_some() {
            return self.unrolled_for(f, span, bound, range);
        }
        if let Some((_, _, count)) = trip(f, &range.start, &range.end, range.step.as_ref())
            && let Some(array) = self.indexes_local_array(f)
        {
            if count > MAX_AUTO_UNROLL {
                return err(
                    span,
                    format!(
                        "this loop indexes {array} by `{}`, and a local array lives in registers, so the loop is unrolled; but its {count} iterations are more than the {MAX_AUTO_UNROLL} unrolled without asking: write `#[unroll]` on it (up to {MAX_UNROLL}), or keep the array in shared memory",
                        f.var
                    ),
                );
            }
            return self.unrolled_for(f, span, None, range);
        }
        self.for_loop(f, e, range)
    }

    /// A `for` loop's bounds and step, evaluated once, in that order.
    fn range(&mut self, f: &ForLoop) -> Result<Range> {
        let start = self.expr(&f.start)?;
        let end = self.expr(&f.end)?;
        let step = match &f.step {
            Some(st) => {
                let v = self.expr(st)?;
                if let Val::Const(Const::Int(0)) = v {
                    return err(st.span, "`step_by(0)` never advances; use a step of at least 1");
                }
                Some(v)
            }
            None => None,
        };
        Ok(Range { start, end, step })
    }

    /// The most a loop's end `e` can be when it is a local array's length,
    /// or the `min` of one and other values (a `zip`'s end).
    fn array_bound(&self, e: &Expr) -> Option<u64> {
        if let Some(n) = self.array_len_call(e) {
            return Some(n);
        }
        match &e.kind {
            ExprKind::MethodCall { receiver, method, args } if method == "min" && args.len() == 1 => {
                match (self.array_bound(receiver), self.array_bound(&args[0])) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            _ => None,
        }
    }

    /// `break` or `break 'label`, with the value of the `loop` it leaves.
    pub(super) fn break_expr(&mut self, label: &Option<String>, value: Option<&Expr>, e: &Expr) -> Result<Val> {
        let target = self.loop_target(label);
        if let Some(value) = value {
            let v = self.expr(value)?;
            // Checked: a value leaves a `loop`, which has its result's registers.
            let (result, t) = match target {
                Some(LoopTarget::Loop(id)) => self
                    .loop_values
                    .iter()
                    .rev()
                    .find(|(loop_id, ..)| *loop_id == id)
                    .map(|(_, result, t)| (result.clone(), t.clone())),
                _ => None,
            }
            .ok_or_else(|| e.span.error("`break` with a value outside a `loop`"))?;
            self.assign_regs(&result, &v, &t);
        }
        match target {
            Some(LoopTarget::Loop(id)) => self.push(Node::Break(id)),
            Some(LoopTarget::Unrolled { outer, .. }) => self.push(Node::ExitBlock(outer)),
            None => return err(e.span, "`break` outside a loop"),
        }
        Ok(Val::Unit)
    }

    /// `continue` or `continue 'label`.
    pub(super) fn continue_expr(&mut self, label: &Option<String>, e: &Expr) -> Result<Val> {
        match self.loop_target(label) {
            Some(LoopTarget::Loop(id)) => self.push(Node::Continue(id)),
            Some(LoopTarget::Unrolled { iteration, .. }) => self.push(Node::ExitBlock(iteration)),
            None => return err(e.span, "`continue` outside a loop"),
        }
        Ok(Val::Unit)
    }
}
