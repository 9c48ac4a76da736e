//! Expressions: `Parser::expr` dispatches on the kind of expression to one
//! function per family (operators, places, method calls, control flow,
//! aggregates, `ptx!`); loops are in `loops`, paths and calls in `path`,
//! literals in `literal`.

use super::elements::ElementRef;
use super::span::expr_loc;
use super::{FnKind, Parser, Result, err, reject_attrs};
use crate::ast::{Arm, BinOp, Expr, ExprKind, Loc, REFERENCE_USES, UnOp};
use crate::types::Ty;

/// The iterator consumers and adapters a user may call with a turbofish
/// (`.sum::<f32>()`), which kernels do not have.
const ITERATOR_CONSUMERS: [&str; 9] = [
    "sum",
    "product",
    "collect",
    "fold",
    "map",
    "max_by_key",
    "min_by_key",
    "filter_map",
    "flat_map",
];

impl Parser {
    pub(super) fn expr(&mut self, e: &syn::Expr) -> Result<Expr> {
        use syn::Expr as E;
        let span = expr_loc(e);
        let kind = match e {
            E::Lit(l) => self.lit_expr(l)?,
            E::Paren(p) => return self.expr(&p.expr),
            E::Group(g) => return self.expr(&g.expr),
            E::Path(p) => {
                if let Some(ElementRef { place: Some(_), .. }) = self.element_ref(p) {
                    return err(
                        Loc::of(&p),
                        "an element of `iter_mut` is read and written as `*v` (`*v += 1`, `(*v).abs()`)",
                    );
                }
                self.path_expr(p)?
            }
            E::Unary(u) => return self.unary_expr(u, span),
            E::Binary(b) => self.binary_expr(b)?,
            E::Assign(a) if let E::Tuple(places) = &*a.left => return self.tuple_assign(a, places),
            E::Assign(a) => {
                self.reject_element_write(&a.left)?;
                ExprKind::Assign(Box::new(self.expr(&a.left)?), Box::new(self.expr(&a.right)?))
            }
            E::Cast(c) => ExprKind::Cast(Box::new(self.expr(&c.expr)?), self.parse_ty(&c.ty)?),
            E::Index(i) => self.index_expr(i)?,
            E::Reference(r) => self.reference_expr(r)?,
            E::Field(f) => match &f.member {
                syn::Member::Named(n) => ExprKind::Field(Box::new(self.expr(&f.base)?), n.to_string()),
                syn::Member::Unnamed(i) => ExprKind::TupleField(Box::new(self.expr(&f.base)?), i.index as usize),
            },
            E::Call(c) => match self.mem_swap(c) {
                Some(swap) => return swap,
                None => self.call(c)?,
            },
            E::MethodCall(m) => self.method_call_expr(m)?,
            E::If(i) => self.if_expr(i)?,
            E::While(w) => self.while_expr(w)?,
            E::Loop(l) => self.loop_expr(l)?,
            E::ForLoop(f) => self.for_expr(f)?,
            E::Break(b) => self.break_expr(b)?,
            E::Continue(c) => ExprKind::Continue(c.label.as_ref().map(|l| format!("'{}", l.ident))),
            E::Return(r) => self.return_expr(r)?,
            E::Block(b) => self.block_expr(b)?,
            E::Array(a) => ExprKind::Array(a.elems.iter().map(|x| self.expr(x)).collect::<Result<Vec<_>>>()?),
            E::Repeat(r) => ExprKind::Repeat(Box::new(self.expr(&r.expr)?), self.parse_len(&r.len)?),
            E::Macro(m) => return self.macro_expr(&m.mac),
            E::Match(m) => self.match_expr(m)?,
            E::Struct(lit) => self.struct_expr(lit)?,
            E::Tuple(t) => self.tuple_expr(t)?,
            _ => return unsupported(e, span),
        };
        Ok(self.expr_node(kind, span))
    }

    /// `-x` and `!x`; `*v` of an element loop's `v` is the element it
    /// stands for.
    fn unary_expr(&mut self, u: &syn::ExprUnary, span: Loc) -> Result<Expr> {
        use syn::Expr as E;
        if let (syn::UnOp::Deref(_), E::Path(p)) = (&u.op, &*u.expr)
            && let Some(r) = self.element_ref(p)
        {
            return match r.place.clone() {
                Some(place) => self.expr(&place),
                None => self.expr(&u.expr),
            };
        }
        let op = match u.op {
            syn::UnOp::Neg(_) => UnOp::Neg,
            syn::UnOp::Not(_) => UnOp::Not,
            _ => {
                let what = match &*u.expr {
                    E::MethodCall(m) => format!(
                        "dereferencing what `.{}()` returns is not supported in kernels: they have no references or `Option`s (`.first()`, `.max()`, `.unwrap()`); index slices with `a[i]` (`x[0]`), and find a maximum or an element with a `for` loop",
                        m.method
                    ),
                    _ => "dereferencing is not supported in kernels (but `*v` of a `for v in x.iter()` loop); index slices with `a[i]`".to_string(),
                };
                return err(Loc::of(&u.op), what);
            }
        };
        let kind = ExprKind::Unary(op, Box::new(self.expr(&u.expr)?));
        Ok(self.expr_node(kind, span))
    }

    /// `a + b`, `a == b`, ... and the compound assignments `a += b`, ...
    fn binary_expr(&mut self, b: &syn::ExprBinary) -> Result<ExprKind> {
        let (op, assign) = bin_op(&b.op)?;
        if assign {
            self.reject_element_write(&b.left)?;
        }
        let l = Box::new(self.expr(&b.left)?);
        let r = Box::new(self.expr(&b.right)?);
        Ok(if assign {
            ExprKind::AssignOp(op, l, r)
        } else {
            ExprKind::Binary(op, l, r)
        })
    }

    /// `a[i]`.
    fn index_expr(&mut self, i: &syn::ExprIndex) -> Result<ExprKind> {
        use syn::Expr as E;
        if matches!(&*i.index, E::Range(_)) {
            return err(
                Loc::of(&i.index),
                "a range index makes a view, written with `&`: `&x[a..b]`, `&x[a..]`, `&x[..b]`, `&x[a..=b]` (`&mut x[a..b]` to write through it); `for v in x[a..b].iter()` loops over one",
            );
        }
        Ok(ExprKind::Index(
            Box::new(self.expr(&i.expr)?),
            Box::new(self.expr(&i.index)?),
        ))
    }

    /// `&a[start..]`, `&mut a[start..]`, and `&mut x`, `&x` of a name, a
    /// field or an element (`check` says where those may go).
    fn reference_expr(&mut self, r: &syn::ExprReference) -> Result<ExprKind> {
        use syn::Expr as E;
        if let E::Index(i) = &*r.expr
            && let E::Range(range) = &*i.index
        {
            return self.sub_slice(&i.expr, range, r.mutability.is_some());
        }
        let place = matches!(&*r.expr, E::Path(_) | E::Field(_) | E::Index(_));
        if !place {
            return err(Loc::of(&r), REFERENCE_USES);
        }
        let inner = Box::new(self.expr(&r.expr)?);
        Ok(if r.mutability.is_some() {
            ExprKind::RefMut(inner)
        } else {
            ExprKind::Ref(inner)
        })
    }

    /// `&x[start..]`, `&x[start..end]`, `&x[..end]`, `&x[start..=last]`,
    /// `&x[..]`: a view from `start` (0 if absent) to `end` (the slice's).
    fn sub_slice(&mut self, base: &syn::Expr, range: &syn::ExprRange, mutable: bool) -> Result<ExprKind> {
        let base = Box::new(self.expr(base)?);
        let zero: syn::Expr = syn::parse_quote_spanned!(Loc::of(range).start=> 0usize);
        let start = self.expr(range.start.as_deref().unwrap_or(&zero))?;
        let end = match (&range.end, &range.limits) {
            (None, _) => None,
            (Some(e), syn::RangeLimits::HalfOpen(_)) => Some(Box::new(self.expr(e)?)),
            (Some(e), syn::RangeLimits::Closed(_)) => {
                let past: syn::Expr = syn::parse_quote_spanned!(Loc::of(e).start=> (#e) + 1);
                Some(Box::new(self.expr(&past)?))
            }
        };
        Ok(ExprKind::SliceFrom {
            base,
            start: Box::new(start),
            end,
            mutable,
        })
    }

    /// `x.method(args)`.
    fn method_call_expr(&mut self, m: &syn::ExprMethodCall) -> Result<ExprKind> {
        if let Some(t) = &m.turbofish {
            let instead = if ITERATOR_CONSUMERS.contains(&m.method.to_string().as_str()) {
                format!(
                    "; iterator consumers such as `.{}()` are not supported: write a `for` loop (`let mut s = 0.0f32; for v in x.iter() {{ s += *v; }}`)",
                    m.method
                )
            } else {
                String::new()
            };
            return err(
                Loc::of(&t),
                format!("method calls take no generic arguments in kernels{instead}"),
            );
        }
        if m.method == "step_by" {
            return err(
                Loc::of(&m),
                "`step_by` is only supported directly in a `for` loop: `for i in (a..b).step_by(s)`",
            );
        }
        Ok(ExprKind::MethodCall {
            receiver: Box::new(self.expr(&m.receiver)?),
            method: m.method.to_string(),
            args: m.args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?,
        })
    }

    /// `if cond { .. } else ..`.
    fn if_expr(&mut self, i: &syn::ExprIf) -> Result<ExprKind> {
        use syn::Expr as E;
        if let E::Let(l) = &*i.cond {
            return err(
                Loc::of(&l),
                "`if let` is not supported in kernels; there are no enums to match; use `if` with a condition, or a `match` on a tuple (`match pair { (true, m) => .., _ => .. }`)",
            );
        }
        let els = match &i.else_branch {
            None => None,
            Some((_, e)) => Some(Box::new(self.expr(e)?)),
        };
        Ok(ExprKind::If {
            cond: Box::new(self.expr(&i.cond)?),
            then: self.block(&i.then_branch)?,
            els,
        })
    }

    /// `break`, `break 'label` and, out of a `loop`, `break value`.
    fn break_expr(&mut self, b: &syn::ExprBreak) -> Result<ExprKind> {
        let value = match &b.expr {
            Some(v) => Some(Box::new(self.expr(v)?)),
            None => None,
        };
        Ok(ExprKind::Break(
            b.label.as_ref().map(|l| format!("'{}", l.ident)),
            value,
        ))
    }

    /// `return` and, in a device function, `return value`.
    fn return_expr(&mut self, r: &syn::ExprReturn) -> Result<ExprKind> {
        if self.in_closure > 0 {
            return err(
                Loc::of(r),
                "`return` in a closure is not supported in kernels; make the closure's value its last expression",
            );
        }
        Ok(match &r.expr {
            Some(v) if self.kind == FnKind::Kernel => {
                return err(
                    Loc::of(&v),
                    "a kernel returns nothing; write `return;` and store results through a `&mut [T]` parameter",
                );
            }
            Some(v) => ExprKind::Return(Some(Box::new(self.expr(v)?))),
            None => ExprKind::Return(None),
        })
    }

    /// A block `{ .. }` as an expression.
    fn block_expr(&mut self, b: &syn::ExprBlock) -> Result<ExprKind> {
        if let Some(l) = &b.label {
            return err(Loc::of(&l), "labeled blocks are not supported in kernels");
        }
        reject_attrs(&b.attrs)?;
        Ok(ExprKind::Block(self.block(&b.block)?))
    }

    /// `match` on an integer or a `bool`.
    fn match_expr(&mut self, m: &syn::ExprMatch) -> Result<ExprKind> {
        let scrutinee = Box::new(self.expr(&m.expr)?);
        let mut arms = Vec::with_capacity(m.arms.len());
        for arm in &m.arms {
            reject_attrs(&arm.attrs)?;
            let pat = self.pattern(&arm.pat)?;
            let mut names = Vec::new();
            pat.bound_names(&mut names);
            self.locals.push(names);
            let guard_body = self.arm_guard_body(arm);
            self.locals.pop();
            let (guard, body) = guard_body?;
            arms.push(Arm { pat, guard, body });
        }
        Ok(ExprKind::Match { scrutinee, arms })
    }

    /// An arm's guard and value, with its pattern's names bound.
    fn arm_guard_body(&mut self, arm: &syn::Arm) -> Result<(Option<Expr>, Expr)> {
        let guard = match &arm.guard {
            Some((_, g)) => Some(self.expr(g)?),
            None => None,
        };
        Ok((guard, self.expr(&arm.body)?))
    }

    /// A `#[device]` struct built field by field.
    fn struct_expr(&mut self, lit: &syn::ExprStruct) -> Result<ExprKind> {
        let Some(Ty::Struct(ty)) = self.find_struct(&lit.path) else {
            let name = lit
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let msg = match Ty::named(&name) {
                // A type of the DSL's own: its constructor.
                Some(_) => {
                    format!("`{name}` is not built with a struct literal; use its constructor, `{name}::new(..)`")
                }
                None => "kernels build the structs marked `#[device]` only; mark the struct `#[device]`".to_string(),
            };
            return err(Loc::of(&lit.path), msg);
        };
        if let Some(rest) = &lit.rest {
            return err(Loc::of(rest), "`..base` is not supported in kernels; give every field");
        }
        let mut fields = Vec::with_capacity(lit.fields.len());
        for f in &lit.fields {
            let syn::Member::Named(name) = &f.member else {
                return err(Loc::of(&f.member), "name the field");
            };
            fields.push((name.to_string(), self.expr(&f.expr)?, Loc::of(f)));
        }
        Ok(ExprKind::StructLit { ty, fields })
    }

    /// `(a, b, ..)`.
    fn tuple_expr(&mut self, t: &syn::ExprTuple) -> Result<ExprKind> {
        if t.elems.is_empty() {
            return err(Loc::of(&t), "`()` has no value in a kernel; leave it out");
        }
        Ok(ExprKind::Tuple(
            t.elems.iter().map(|x| self.expr(x)).collect::<Result<Vec<_>>>()?,
        ))
    }
}

/// The expressions kernels do not have, each with what to write instead.
fn unsupported(e: &syn::Expr, span: Loc) -> Result<Expr> {
    use syn::Expr as E;
    match e {
        E::Closure(c) => err(
            Loc::of(&c),
            "a closure in a kernel is bound with `let` and called by its name: `let sq = |v: f32| v * v; y[i] = sq(x[i]);`; iterator adapters that take one (`map`, `fold`, `filter`, ...) are not supported: write a `for` loop",
        ),
        E::Async(a) => err(Loc::of(&a), "`async` blocks are not supported in kernels"),
        E::Await(a) => err(Loc::of(&a), "`.await` is not supported in kernels"),
        E::Try(t) => err(
            Loc::of(&t.question_token),
            "the `?` operator is not supported in kernels; there are no `Result`s on the device",
        ),
        E::TryBlock(t) => err(Loc::of(&t), "`try` blocks are not supported in kernels"),
        E::Yield(y) => err(Loc::of(&y), "`yield` is not supported in kernels"),
        E::Unsafe(u) => err(
            Loc::of(&u.unsafe_token),
            "`unsafe` blocks are not needed in kernels (every access is already device code); remove `unsafe`. What they usually hold (raw pointers, `slice::from_raw_parts`, `transmute`) is not available either: index the slice, use `load_v4`/`store_v4` for 16 bytes at once whatever the element type, and `to_bits`/`from_bits` to reinterpret a value",
        ),
        E::Range(r) => err(
            Loc::of(&r),
            "ranges are only supported in `for` loops (`for i in a..b`) and sub-slices (`&a[i..]`)",
        ),
        E::Let(l) => err(Loc::of(&l), "`let` expressions are not supported in kernels"),
        E::Const(c) => err(Loc::of(&c), "`const` blocks are not supported in kernels"),
        E::Infer(i) => err(Loc::of(&i), "`_` is not an expression"),
        _ => err(span, "this expression is not supported in kernels"),
    }
}

fn bin_op(op: &syn::BinOp) -> Result<(BinOp, bool)> {
    use syn::BinOp as B;
    Ok(match op {
        B::Add(_) => (BinOp::Add, false),
        B::Sub(_) => (BinOp::Sub, false),
        B::Mul(_) => (BinOp::Mul, false),
        B::Div(_) => (BinOp::Div, false),
        B::Rem(_) => (BinOp::Rem, false),
        B::And(_) => (BinOp::And, false),
        B::Or(_) => (BinOp::Or, false),
        B::BitXor(_) => (BinOp::BitXor, false),
        B::BitAnd(_) => (BinOp::BitAnd, false),
        B::BitOr(_) => (BinOp::BitOr, false),
        B::Shl(_) => (BinOp::Shl, false),
        B::Shr(_) => (BinOp::Shr, false),
        B::Eq(_) => (BinOp::Eq, false),
        B::Lt(_) => (BinOp::Lt, false),
        B::Le(_) => (BinOp::Le, false),
        B::Ne(_) => (BinOp::Ne, false),
        B::Ge(_) => (BinOp::Ge, false),
        B::Gt(_) => (BinOp::Gt, false),
        B::AddAssign(_) => (BinOp::Add, true),
        B::SubAssign(_) => (BinOp::Sub, true),
        B::MulAssign(_) => (BinOp::Mul, true),
        B::DivAssign(_) => (BinOp::Div, true),
        B::RemAssign(_) => (BinOp::Rem, true),
        B::BitXorAssign(_) => (BinOp::BitXor, true),
        B::BitAndAssign(_) => (BinOp::BitAnd, true),
        B::BitOrAssign(_) => (BinOp::BitOr, true),
        B::ShlAssign(_) => (BinOp::Shl, true),
        B::ShrAssign(_) => (BinOp::Shr, true),
        other => return err(Loc::of(&other), "this operator is not supported in kernels"),
    })
}
