//! Going on past a statement with an error (reported, or a failed parse's
//! `Failed`), without errors that are only its consequences.
//!
//! A failed statement leaves its names bound but poisoned, and poisons the
//! literals' type variables of the locals it names (it may have fixed
//! them, as `let b: u64 = a;` fixes `a`'s). A later statement that names a
//! poisoned local (or calls a closure that captures one) is not checked: it
//! fails silently, its own names poisoned, and so on. Locals whose types
//! are known are left alone: no statement can change them.

use super::*;

impl Checker<'_> {
    /// A statement binding `binds` and naming `mentions` failed: poisons as the module says.
    pub(super) fn fail(&mut self, binds: &[String], mentions: &[String]) {
        self.taints += 1;
        for name in mentions {
            let Some(b) = self.lookup(name).cloned() else { continue };
            if let NameKind::Closure(_) = b.kind {
                // Its first call types it: the failed one may have.
                self.poison_binding(name);
            }
            self.poison_ty(&b.ty);
        }
        for name in binds {
            self.bind(name, TyV::Never, true, NameKind::Local);
            self.poison_binding(name);
        }
    }

    /// Whether a statement naming `mentions` is not checked.
    pub(super) fn names_poisoned(&mut self, mentions: &[String]) -> bool {
        mentions.iter().any(|n| self.is_poisoned(n))
    }

    fn is_poisoned(&mut self, name: &str) -> bool {
        let Some(b) = self.lookup(name).cloned() else {
            return false;
        };
        if b.poisoned || self.ty_poisoned(&b.ty) {
            return true;
        }
        let NameKind::Closure(idx) = b.kind else {
            return false;
        };
        let captured: Vec<Binding> = self.closures[idx]
            .mentions
            .iter()
            .filter_map(|n| {
                let mut scopes = self.closures[idx].scopes.iter().rev();
                scopes.find_map(|s| s.iter().rev().find(|b| b.name == *n))
            })
            .cloned()
            .collect();
        captured.iter().any(|b| b.poisoned || self.ty_poisoned(&b.ty))
    }

    fn poison_binding(&mut self, name: &str) {
        let found = self
            .scopes
            .iter_mut()
            .rev()
            .flat_map(|s| s.iter_mut().rev())
            .find(|b| b.name == name);
        if let Some(b) = found {
            b.poisoned = true;
        }
    }

    fn poison_ty(&mut self, t: &TyV) {
        match self.shallow(t) {
            TyV::Var(v) => self.vars[v as usize].poisoned = true,
            TyV::Array(e, _) => self.poison_ty(&e),
            TyV::Tuple(parts) => parts.iter().for_each(|p| self.poison_ty(p)),
            TyV::Ty(_) | TyV::Never => {}
        }
    }

    fn ty_poisoned(&mut self, t: &TyV) -> bool {
        match self.shallow(t) {
            TyV::Var(v) => self.vars[v as usize].poisoned,
            TyV::Array(e, _) => self.ty_poisoned(&e),
            TyV::Tuple(parts) => parts.iter().any(|p| self.ty_poisoned(p)),
            TyV::Ty(_) | TyV::Never => false,
        }
    }
}

/// The names a statement binds.
pub(super) fn binds(s: &Stmt) -> Vec<String> {
    match &s.kind {
        StmtKind::Let { pat, .. } => pat.names().into_iter().map(str::to_string).collect(),
        StmtKind::Const { name, .. } => vec![name.clone()],
        StmtKind::Expr(..) => Vec::new(),
    }
}

/// The locals a statement names (closures called included).
pub(super) fn mentions(s: &Stmt) -> Vec<String> {
    match &s.kind {
        StmtKind::Let { init, .. } | StmtKind::Const { init, .. } => expr_mentions(init),
        StmtKind::Expr(e, _) => expr_mentions(e),
    }
}

/// The locals an expression names (closures called included).
pub(super) fn expr_mentions(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    walk_expr(e, &mut |x| {
        if let ExprKind::Var(n) | ExprKind::ClosureCall { name: n, .. } = &x.kind {
            out.push(n.clone());
        }
    });
    out
}
