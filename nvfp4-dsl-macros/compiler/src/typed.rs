//! The typed side table: what `check` found out about a kernel and its
//! device functions, and what `lower` reads. It names intrinsics by
//! [`IntrinsicId`] (their place in the table), so it depends on neither
//! pass nor on the intrinsics, whose lowering functions use `lower`.

use super::ast::{Expr, ExprId};
use super::types::{Len, Ty};
use std::collections::HashMap;

/// An intrinsic: its place in `intrinsics::all()`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct IntrinsicId(pub usize);

/// The result of checking: the type of every expression and the intrinsic
/// each call resolved to.
#[derive(Debug)]
pub struct Types {
    pub expr: Vec<Ty>,
    pub calls: HashMap<ExprId, IntrinsicId>,
    /// Calls of device functions: the index in `Kernel::devices`.
    pub devices: HashMap<ExprId, usize>,
    /// The const generics of device calls without a turbofish, inferred
    /// from array lengths.
    pub device_lens: HashMap<ExprId, Vec<(String, Len)>>,
}

impl Types {
    pub fn of(&self, e: &Expr) -> &Ty {
        &self.expr[e.id as usize]
    }
}
