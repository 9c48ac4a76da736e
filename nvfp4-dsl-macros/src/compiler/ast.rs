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
    pub expr_count: u32,
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
        name: String,
        name_span: Loc,
        mutable: bool,
        ty: Option<Ty>,
        init: Expr,
    },
    /// A local `const NAME: T = expr;`.
    Const { name: String, ty: Scalar, init: Expr },
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
#[derive(Debug, Clone)]
pub enum GenericArg {
    Type(Ty, Loc),
    Len(Len, Loc),
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
}

#[derive(Debug)]
pub enum ExprKind {
    Lit(Lit),
    /// A local, a parameter or a const generic.
    Var(String),
    /// `Cache::Streaming`.
    CacheHint(super::types::CacheHint),
    /// `Target::Sm100a`.
    Target(super::types::Target),
    /// `Swizzle::B128`.
    Swizzle(super::types::Swizzle),
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
    },
    Loop(Block),
    For(ForLoop),
    Break,
    Continue,
    Return,
    Block(Block),
    Array(Vec<Expr>),
    Repeat(Box<Expr>, Len),
    /// `ptx!(ty, "template", args..)`: inline PTX with one result of type
    /// `ty` (or none for `()`), placeholders `{d}` and `{0}`, `{1}`, ...
    InlinePtx {
        ret: Ty,
        template: String,
        args: Vec<Expr>,
    },
}
