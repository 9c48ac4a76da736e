//! The AST of the supported Rust subset, produced by `parse` and read by
//! `check` and `lower`. Every node keeps the span of its Rust tokens so later
//! stages can point errors at the source.

use super::lower::fold::Const;
use super::types::{Len, Scalar, Ty};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;

/// Where a piece of source is: its first and its last token, so errors
/// underline the whole construct (stable proc macros cannot join spans).
#[derive(Clone, Copy, Debug)]
pub struct Loc {
    pub start: Span,
    pub end: Span,
}

impl Loc {
    /// The location of a syntax node's tokens.
    pub fn of<T: ToTokens + ?Sized>(node: &T) -> Loc {
        let mut tokens = node.to_token_stream().into_iter();
        let Some(first) = tokens.next() else {
            return Loc::from(Span::call_site());
        };
        let start = first.span();
        let end = tokens.last().map_or_else(|| last_span(&first), |t| last_span(&t));
        Loc { start, end }
    }

    /// An error underlining this location.
    pub fn error(self, msg: impl std::fmt::Display) -> syn::Error {
        let mut range = TokenStream::new();
        range.extend([TokenTree::Punct(punct(self.start)), TokenTree::Punct(punct(self.end))]);
        syn::Error::new_spanned(range, msg)
    }

    /// Line and column (1-based) of the first token.
    pub fn line_col(self) -> (usize, usize) {
        let lc = self.start.start();
        (lc.line, lc.column + 1)
    }
}

/// One error holding `errors` in order (each reported where it is), or
/// `None` for none.
pub fn combine(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    let mut errors = errors.into_iter();
    let mut first = errors.next()?;
    first.extend(errors);
    Some(first)
}

fn last_span(t: &TokenTree) -> Span {
    match t {
        TokenTree::Group(g) => g.span_close(),
        other => other.span(),
    }
}

fn punct(span: Span) -> proc_macro2::Punct {
    let mut p = proc_macro2::Punct::new('.', proc_macro2::Spacing::Alone);
    p.set_span(span);
    p
}

impl From<Span> for Loc {
    fn from(span: Span) -> Loc {
        Loc { start: span, end: span }
    }
}

/// One arm of a `match`.
#[derive(Debug)]
pub struct Arm {
    pub pat: Pat,
    pub guard: Option<Expr>,
    pub body: Expr,
}

/// A `match` pattern on an integer or a `bool`.
#[derive(Debug)]
pub enum Pat {
    /// `_`.
    Wild,
    /// A name: binds the value, or compares with a local `const` of that
    /// name (as Rust does).
    Ident(String, Loc),
    /// A literal or a constant (`3`, `-1`, `true`, `u32::MAX`).
    Lit(Expr),
    /// `a..=b`, `a..b`, `a..`, `..=b`.
    Range {
        lo: Option<Box<Expr>>,
        hi: Option<Box<Expr>>,
        inclusive: bool,
    },
    /// `p | q`.
    Or(Vec<Pat>),
    /// `(p, q, ..)` on a tuple of integers and `bool`s.
    Tuple(Vec<Pat>, Loc),
}

impl Pat {
    /// The names the pattern binds (or compares with a local `const`).
    pub fn bound_names(&self, out: &mut Vec<String>) {
        match self {
            Pat::Ident(name, _) => out.push(name.clone()),
            Pat::Or(pats) | Pat::Tuple(pats, _) => pats.iter().for_each(|p| p.bound_names(out)),
            Pat::Wild | Pat::Lit(_) | Pat::Range { .. } => {}
        }
    }
}

/// The left side of a `let`: a name, `_`, or a tuple or an array of
/// patterns.
#[derive(Debug, Clone)]
pub enum LetPat {
    Name {
        name: String,
        span: Loc,
        mutable: bool,
    },
    Wild,
    Tuple(Vec<LetPat>, Loc),
    /// `[a, b, c]`: a local array's (or a table's) elements, as many
    /// patterns as it has.
    Array(Vec<LetPat>, Loc),
}

impl LetPat {
    /// The names the pattern binds.
    pub fn names(&self) -> Vec<&str> {
        match self {
            LetPat::Name { name, .. } => vec![name.as_str()],
            LetPat::Wild => Vec::new(),
            LetPat::Tuple(pats, _) | LetPat::Array(pats, _) => pats.iter().flat_map(LetPat::names).collect(),
        }
    }
}

/// Index of an expression, unique within one kernel; `check` keys its type
/// table by it.
pub type ExprId = u32;

#[derive(Debug)]
pub struct Kernel {
    pub name: String,
    pub name_span: Loc,
    /// Line of the `fn` token, so statement comments can give lines relative
    /// to the kernel (stable when code above the kernel moves).
    pub fn_line: usize,
    pub consts: Vec<ConstParam>,
    pub params: Vec<Param>,
    pub body: Block,
    /// The `#[device]` functions the kernel calls, directly or through
    /// each other, in the order they were resolved, and the methods of its
    /// `#[device(methods)]` structs.
    pub devices: Vec<DeviceFn>,
    /// The generic `#[device]` functions, whose instantiations are among
    /// `devices` once `check` has asked for them.
    pub generics: Vec<super::generics::GenericFn>,
    /// The `#[device]` structs, by the path their users wrote.
    pub structs: Vec<(String, super::types::StructTy)>,
    /// The `#[device] const` arrays the kernel and its device functions
    /// name, one per distinct content.
    pub tables: Vec<Table>,
    pub expr_count: u32,
    /// Whether statements that failed to parse were left out (see
    /// `Block::failed`): `check` then reports its errors but gives no types.
    pub incomplete: bool,
}

/// A `#[device] const` array of numbers: indexed by a constant, an element
/// is a constant; indexed at run time, it is read from the PTX module's
/// constant memory (`.const`).
#[derive(Debug, Clone)]
pub struct Table {
    /// The const's name (with a number when two tables would share it),
    /// for the PTX symbol.
    pub name: String,
    pub elem: Scalar,
    pub values: Vec<Const>,
}

/// A `#[device]` function or a method of a `#[device] impl` block:
/// inlined at each call.
#[derive(Debug)]
pub struct DeviceFn {
    /// The path the caller wrote (`decode::fp4_pair`), as its key; a
    /// method's is its struct's followed by its name (`shapes::Span::end`).
    pub key: String,
    /// The key that paths in the body resolve from: the function's own, or
    /// for a method its impl block's (in the struct's module).
    pub scope: String,
    /// The name errors and PTX comments show (`Span::end` for a method).
    pub name: String,
    /// A method's struct and its own name (`end`), for `x.end()`.
    pub method_of: Option<(super::types::StructTy, String)>,
    pub name_span: Loc,
    /// Line of the `fn` token, for the statement comments of its body.
    pub fn_line: usize,
    pub consts: Vec<ConstParam>,
    pub params: Vec<Param>,
    pub ret: Ty,
    pub body: Block,
}

#[derive(Debug, Clone)]
pub struct ConstParam {
    pub name: String,
    pub ty: Scalar,
    pub span: Loc,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
    pub pass: Pass,
    pub span: Loc,
}

/// How a device function's parameter takes its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// By value (slices and shared memory too: they are views already).
    Value,
    /// `&[T; N]` or `&self`: reads the caller's value.
    Ref,
    /// `&mut [T; N]` or `&mut self`: the caller's array or struct itself,
    /// read and written in place.
    RefMut,
}

#[derive(Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Loc,
    /// The statements that failed to parse (their errors already
    /// reported), so that `check` can go on past them.
    pub failed: Vec<Failed>,
}

/// A statement left out of a block because it failed to parse.
#[derive(Debug)]
pub struct Failed {
    /// How many of the block's statements come before it.
    pub at: usize,
    /// The names it binds, whose types are unknown.
    pub binds: Vec<String>,
    /// Every identifier in its tokens: the locals it may constrain.
    pub mentions: Vec<String>,
}

#[derive(Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Loc,
    /// Source line of the statement (1-based, in its file).
    pub line: usize,
    pub col: usize,
    /// The statement's source, one line, for the comment before its PTX.
    pub text: String,
}

#[derive(Debug)]
pub enum StmtKind {
    Let {
        pat: LetPat,
        ty: Option<Ty>,
        init: Expr,
    },
    /// A local `const NAME: T = expr;`.
    Const {
        name: String,
        ty: Scalar,
        init: Expr,
    },
    /// An expression statement; the flag says whether it ends in `;`.
    Expr(Expr, bool),
}

#[derive(Debug)]
pub struct Expr {
    pub id: ExprId,
    pub kind: ExprKind,
    pub span: Loc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_lazy(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone)]
pub enum Lit {
    /// An integer literal with its optional suffix.
    Int(u128, Option<Scalar>),
    /// A float literal: its digits (parsed per type later, as rustc does) and
    /// its optional suffix.
    Float(String, Option<Scalar>),
    Bool(bool),
}

/// The callee of a function call: `name(..)` or `Type::name(..)`.
#[derive(Debug, Clone)]
pub struct CallPath {
    /// `Some("f16")` for `f16::from_f32`.
    pub qualifier: Option<String>,
    pub name: String,
    /// The whole path as written, without generic arguments
    /// (`decode::fp4_pair`): how a device function is found.
    pub full: String,
}

impl CallPath {
    pub fn display(&self) -> String {
        match &self.qualifier {
            Some(q) => format!("{q}::{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Generic arguments written with a turbofish (`shared_array::<f32, 32>()`).
#[derive(Debug)]
pub enum GenericArg {
    Type(Ty, Loc),
    Len(Len, Loc),
    /// Any other constant, for a device function's const generic
    /// (`helper::<true>`, `helper::<{ N * 2 }>`).
    Expr(Box<Expr>, Loc),
}

#[derive(Debug)]
pub struct ForLoop {
    pub var: String,
    pub start: Box<Expr>,
    pub end: Box<Expr>,
    pub inclusive: bool,
    pub step: Option<Box<Expr>>,
    pub body: Block,
    pub unroll: bool,
    /// `'name: for ..`: the label, quote included.
    pub label: Option<String>,
    /// `(a..b).rev()`: from the last value down (then `step` down by it).
    pub rev: bool,
}

#[derive(Debug)]
pub enum ExprKind {
    Lit(Lit),
    /// A local, a parameter or a const generic.
    Var(String),
    /// `Cache::Streaming`.
    CacheHint(super::types::CacheHint),
    /// `Target::Sm100a`.
    Target(super::target::Target),
    /// `Swizzle::B128`.
    Swizzle(super::types::Swizzle),
    /// `Order::Relaxed`.
    Order(super::types::Order),
    /// `Scope::Cta`.
    Scope(super::types::Scope),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Assign(Box<Expr>, Box<Expr>),
    AssignOp(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Ty),
    Index(Box<Expr>, Box<Expr>),
    /// `&a[start..]` or `&mut a[start..]`: a view from `start` on; with
    /// an `end` (`&a[start..end]`, `&a[..end]`, `..=`), that many fewer.
    SliceFrom {
        base: Box<Expr>,
        start: Box<Expr>,
        end: Option<Box<Expr>>,
        mutable: bool,
    },
    Field(Box<Expr>, String),
    /// `&mut name` of a local array: only as an intrinsic's accumulator
    /// argument (updated in place), or the argument of a `&mut` parameter
    /// of a device function (`&mut [T; N]`, `&mut self`).
    RefMut(Box<Expr>),
    /// `&name`: only the argument of a device function's `&[T; N]` or
    /// `&self` parameter.
    Ref(Box<Expr>),
    Call {
        path: CallPath,
        generics: Vec<GenericArg>,
        args: Vec<Expr>,
    },
    MethodCall {
        receiver: Box<Expr>,
        method: String,
        args: Vec<Expr>,
    },
    If {
        cond: Box<Expr>,
        then: Block,
        els: Option<Box<Expr>>,
    },
    While {
        cond: Box<Expr>,
        body: Block,
        label: Option<String>,
    },
    Loop(Block, Option<String>),
    For(ForLoop),
    /// `break` or `break 'label` (quote included), with the value of the
    /// `loop` it leaves (`break value`).
    Break(Option<String>, Option<Box<Expr>>),
    /// `continue` or `continue 'label`.
    Continue(Option<String>),
    /// `return` (kernels) or `return value` (device functions).
    Return(Option<Box<Expr>>),
    Block(Block),
    Array(Vec<Expr>),
    Repeat(Box<Expr>, Len),
    /// `match scrutinee { pattern if guard => value, .. }` on an integer
    /// or a `bool`.
    Match {
        scrutinee: Box<Expr>,
        arms: Vec<Arm>,
    },
    /// `(a, b, ..)`.
    Tuple(Vec<Expr>),
    /// `Pair { lo: a, hi: b }` of a `#[device]` struct (its type resolved
    /// by `parse`), each field with its span.
    StructLit {
        ty: super::types::StructTy,
        fields: Vec<(String, Expr, Loc)>,
    },
    /// `t.0`.
    TupleField(Box<Expr>, usize),
    /// A `#[device] const` array, by its index in `Kernel::tables`.
    Table(usize),
    /// `|a: f32, b| body` (also `move`, `-> T { .. }`), the value of a
    /// `let`: called by its name, inlined at each call, what it captures
    /// copied where it is created.
    Closure {
        params: Vec<(LetPat, Option<Ty>)>,
        ret: Option<Ty>,
        body: Box<Expr>,
    },
    /// `f(args)` of a closure `f` bound with `let`.
    ClosureCall {
        name: String,
        args: Vec<Expr>,
    },
    /// `assert!(cond, ..)` (also `assert_eq!`/`assert_ne!`, whose `cond` is
    /// the comparison): a trap where `cond` is false, its PTX comment the
    /// assertion's source `text`. `debug`: a `debug_assert*!`, compiled only
    /// with debug assertions.
    Assert {
        cond: Box<Expr>,
        text: String,
        debug: bool,
    },
    /// `ptx!(ty, "template", args..)`: inline PTX with one result of type
    /// `ty` (or none for `()`), placeholders `{d}` and `{0}`, `{1}`, ...
    InlinePtx {
        ret: Ty,
        template: String,
        args: Vec<Expr>,
    },
}

/// Where a reference may appear in a kernel: the error for one elsewhere.
pub const REFERENCE_USES: &str = "references are supported as sub-slices `&a[start..]`, `&a[start..end]` or `&mut a[start..]`, as `&mut acc` for the accumulator of a `wgmma_*` intrinsic, and as `&x` or `&mut x` for a device function's reference parameter (`&[T; N]`, `&mut [T; N]`, `&Pair`, `&mut Pair`, `&self`, `&mut self`)";

/// Calls `f` on every function call in `b` (nested blocks included).
pub fn walk_calls<'a>(b: &'a Block, f: &mut impl FnMut(&'a Expr, &'a CallPath)) {
    walk_exprs(b, &mut |e| {
        if let ExprKind::Call { path, .. } = &e.kind {
            f(e, path);
        }
    });
}

/// Calls `f` on every expression in `b`, outer ones first.
pub fn walk_exprs<'a>(b: &'a Block, f: &mut impl FnMut(&'a Expr)) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Let { init, .. } | StmtKind::Const { init, .. } => walk_expr(init, f),
            StmtKind::Expr(e, _) => walk_expr(e, f),
        }
    }
}

/// Calls `f` on `e` and every expression in it, outer ones first.
pub fn walk_expr<'a>(e: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Call { args, generics, .. } => {
            for g in generics {
                if let GenericArg::Expr(x, _) = g {
                    walk_expr(x, f);
                }
            }
            args.iter().for_each(|a| walk_expr(a, f));
        }
        ExprKind::MethodCall { receiver, args, .. } => {
            walk_expr(receiver, f);
            args.iter().for_each(|a| walk_expr(a, f));
        }
        ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Field(a, _)
        | ExprKind::Repeat(a, _)
        | ExprKind::RefMut(a)
        | ExprKind::Ref(a) => walk_expr(a, f),
        ExprKind::Return(a) => a.iter().for_each(|a| walk_expr(a, f)),
        ExprKind::Binary(_, a, b) | ExprKind::Assign(a, b) | ExprKind::AssignOp(_, a, b) | ExprKind::Index(a, b) => {
            walk_expr(a, f);
            walk_expr(b, f);
        }
        ExprKind::SliceFrom { base, start, end, .. } => {
            walk_expr(base, f);
            walk_expr(start, f);
            end.iter().for_each(|e| walk_expr(e, f));
        }
        ExprKind::Array(items)
        | ExprKind::InlinePtx { args: items, .. }
        | ExprKind::ClosureCall { args: items, .. } => {
            items.iter().for_each(|a| walk_expr(a, f));
        }
        ExprKind::If { cond, then, els } => {
            walk_expr(cond, f);
            walk_exprs(then, f);
            if let Some(e) = els {
                walk_expr(e, f);
            }
        }
        ExprKind::While { cond, body, .. } => {
            walk_expr(cond, f);
            walk_exprs(body, f);
        }
        ExprKind::Loop(b, _) | ExprKind::Block(b) => walk_exprs(b, f),
        ExprKind::For(l) => {
            walk_expr(&l.start, f);
            walk_expr(&l.end, f);
            if let Some(s) = &l.step {
                walk_expr(s, f);
            }
            walk_exprs(&l.body, f);
        }
        ExprKind::Match { scrutinee, arms } => {
            walk_expr(scrutinee, f);
            for a in arms {
                walk_pattern(&a.pat, f);
                if let Some(g) = &a.guard {
                    walk_expr(g, f);
                }
                walk_expr(&a.body, f);
            }
        }
        ExprKind::Tuple(items) => items.iter().for_each(|a| walk_expr(a, f)),
        ExprKind::Break(_, Some(a)) => walk_expr(a, f),
        ExprKind::StructLit { fields, .. } => fields.iter().for_each(|(_, a, _)| walk_expr(a, f)),
        ExprKind::TupleField(a, _) | ExprKind::Assert { cond: a, .. } | ExprKind::Closure { body: a, .. } => {
            walk_expr(a, f)
        }
        ExprKind::Lit(_)
        | ExprKind::Var(_)
        | ExprKind::CacheHint(_)
        | ExprKind::Target(_)
        | ExprKind::Swizzle(_)
        | ExprKind::Table(_)
        | ExprKind::Order(_)
        | ExprKind::Scope(_)
        | ExprKind::Break(_, None)
        | ExprKind::Continue(_) => {}
    }
}

/// The expressions of a `match` pattern: its literals and range bounds.
fn walk_pattern<'a>(p: &'a Pat, f: &mut impl FnMut(&'a Expr)) {
    match p {
        Pat::Lit(x) => walk_expr(x, f),
        Pat::Range { lo, hi, .. } => [lo, hi].into_iter().flatten().for_each(|x| walk_expr(x, f)),
        Pat::Or(pats) | Pat::Tuple(pats, _) => pats.iter().for_each(|q| walk_pattern(q, f)),
        Pat::Wild | Pat::Ident(..) => {}
    }
}

/// The expression `id` of the kernel or of one of its device functions
/// (a closure, looked up where it is called).
pub fn find_expr(kernel: &Kernel, id: ExprId) -> Option<&Expr> {
    let mut found = None;
    for body in std::iter::once(&kernel.body).chain(kernel.devices.iter().map(|d| &d.body)) {
        walk_exprs(body, &mut |e| {
            if e.id == id {
                found = Some(e);
            }
        });
    }
    found
}

/// The key of the device function that `full`, written in the function
/// with key `caller` (`""` for the kernel), names: relative to the module
/// part of the caller's key (the path the kernel reached the caller by),
/// `crate::` and `::` paths as written. A proc macro cannot know a device
/// function's own module, only the path it was reached by.
pub fn resolve_device(caller: &str, full: &str) -> String {
    let module: Vec<&str> = match caller.rsplit_once("::") {
        Some((m, _)) => m.split("::").collect(),
        None => Vec::new(),
    };
    if full.starts_with("crate::") || full.starts_with("::") || module.is_empty() {
        return full.to_string();
    }
    let mut parts = module;
    let mut rest = full;
    loop {
        if let Some(r) = rest.strip_prefix("self::") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("super::") {
            if parts.pop().is_none() {
                return full.to_string();
            }
            rest = r;
        } else {
            break;
        }
    }
    if parts.is_empty() {
        rest.to_string()
    } else {
        format!("{}::{rest}", parts.join("::"))
    }
}
