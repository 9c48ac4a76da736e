//! The AST of the supported Rust subset, produced by `parse` and read by
//! `check` and `lower`. Every node keeps the span of its Rust tokens so later
//! stages can point errors at the source.

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
}

/// The left side of a `let`: a name, `_`, or a tuple of patterns.
#[derive(Debug, Clone)]
pub enum LetPat {
    Name { name: String, span: Loc, mutable: bool },
    Wild,
    Tuple(Vec<LetPat>, Loc),
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
    /// each other, in the order they were resolved.
    pub devices: Vec<DeviceFn>,
    pub expr_count: u32,
}

/// A `#[device]` function: inlined at each call.
#[derive(Debug)]
pub struct DeviceFn {
    /// The path the caller wrote (`decode::fp4_pair`), as its key.
    pub key: String,
    pub name: String,
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
    pub span: Loc,
}

#[derive(Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Loc,
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
    /// `&a[start..]` or `&mut a[start..]`: a view from `start` on.
    SliceFrom {
        base: Box<Expr>,
        start: Box<Expr>,
        mutable: bool,
    },
    Field(Box<Expr>, String),
    /// `&mut name` of a local array: only as an intrinsic's accumulator
    /// argument (updated in place).
    RefMut(Box<Expr>),
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
    /// `break` or `break 'label` (quote included).
    Break(Option<String>),
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
    /// `ptx!(ty, "template", args..)`: inline PTX with one result of type
    /// `ty` (or none for `()`), placeholders `{d}` and `{0}`, `{1}`, ...
    InlinePtx {
        ret: Ty,
        template: String,
        args: Vec<Expr>,
    },
}

/// Calls `f` on every function call in `b` (nested blocks included).
pub fn walk_calls(b: &Block, f: &mut impl FnMut(&Expr, &CallPath)) {
    walk_exprs(b, &mut |e| {
        if let ExprKind::Call { path, .. } = &e.kind {
            f(e, path);
        }
    });
}

/// Calls `f` on every expression in `b`, outer ones first.
pub fn walk_exprs(b: &Block, f: &mut impl FnMut(&Expr)) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Let { init, .. } | StmtKind::Const { init, .. } => walk_expr_calls(init, f),
            StmtKind::Expr(e, _) => walk_expr_calls(e, f),
        }
    }
}

fn walk_expr_calls(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Call { args, generics, .. } => {
            for g in generics {
                if let GenericArg::Expr(x, _) = g {
                    walk_expr_calls(x, f);
                }
            }
            args.iter().for_each(|a| walk_expr_calls(a, f));
        }
        ExprKind::MethodCall { receiver, args, .. } => {
            walk_expr_calls(receiver, f);
            args.iter().for_each(|a| walk_expr_calls(a, f));
        }
        ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Field(a, _)
        | ExprKind::Repeat(a, _)
        | ExprKind::RefMut(a) => walk_expr_calls(a, f),
        ExprKind::Return(a) => a.iter().for_each(|a| walk_expr_calls(a, f)),
        ExprKind::Binary(_, a, b) | ExprKind::Assign(a, b) | ExprKind::AssignOp(_, a, b) | ExprKind::Index(a, b) => {
            walk_expr_calls(a, f);
            walk_expr_calls(b, f);
        }
        ExprKind::SliceFrom { base, start, .. } => {
            walk_expr_calls(base, f);
            walk_expr_calls(start, f);
        }
        ExprKind::Array(items) | ExprKind::InlinePtx { args: items, .. } => {
            items.iter().for_each(|a| walk_expr_calls(a, f));
        }
        ExprKind::If { cond, then, els } => {
            walk_expr_calls(cond, f);
            walk_exprs(then, f);
            if let Some(e) = els {
                walk_expr_calls(e, f);
            }
        }
        ExprKind::While { cond, body, .. } => {
            walk_expr_calls(cond, f);
            walk_exprs(body, f);
        }
        ExprKind::Loop(b, _) | ExprKind::Block(b) => walk_exprs(b, f),
        ExprKind::For(l) => {
            walk_expr_calls(&l.start, f);
            walk_expr_calls(&l.end, f);
            if let Some(s) = &l.step {
                walk_expr_calls(s, f);
            }
            walk_exprs(&l.body, f);
        }
        ExprKind::Match { scrutinee, arms } => {
            walk_expr_calls(scrutinee, f);
            for a in arms {
                if let Pat::Lit(x) = &a.pat {
                    walk_expr_calls(x, f);
                }
                if let Some(g) = &a.guard {
                    walk_expr_calls(g, f);
                }
                walk_expr_calls(&a.body, f);
            }
        }
        ExprKind::Tuple(items) => items.iter().for_each(|a| walk_expr_calls(a, f)),
        ExprKind::StructLit { fields, .. } => fields.iter().for_each(|(_, a, _)| walk_expr_calls(a, f)),
        ExprKind::TupleField(a, _) => walk_expr_calls(a, f),
        ExprKind::Lit(_)
        | ExprKind::Var(_)
        | ExprKind::CacheHint(_)
        | ExprKind::Target(_)
        | ExprKind::Swizzle(_)
        | ExprKind::Order(_)
        | ExprKind::Scope(_)
        | ExprKind::Break(_)
        | ExprKind::Continue(_) => {}
    }
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
