//! Address provenance: which shared variable or pointer parameter each
//! memory instruction's address was computed from, so that an access is
//! checked against that array or view and not only against whatever
//! memory happens to be there (an overrun of one shared array into its
//! neighbour, index 990 of a 990-element view of a larger buffer). For a
//! bulk copy (`cp.async.bulk`) it is the parameter its global operand was
//! computed from: its shared operand must already lie in one shared
//! variable, and a tensor copy reads only what its tensor map describes,
//! which the host checked against the view it was made from.
//!
//! Found once per entry from the PTX, flow-insensitively: a register's
//! origin is the shared variable a `mov` takes the address of, or the
//! parameter an `ld.param` loads, carried through `mov`, `cvta`, `cvt`,
//! `add`, `sub` and `mad` (the addend); a register with two different
//! origins, or none, has none, and its accesses are checked as before
//! (inside some shared variable, inside some allocation).

use super::parse::{Arg, InstAst};
use std::collections::HashMap;

/// What an address was computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Unknown: checked against all of shared or global memory.
    None,
    /// The shared region of this index (`Env::regions`: the static
    /// variables, then the dynamic block).
    Shared(u16),
    /// The pointer parameter of this index (`Entry::params`).
    Param(u16),
}

/// A register's origin while the analysis runs: `None` until a definition
/// gives it one, `Some(Origin::None)` once two definitions disagree.
type Found = HashMap<String, Option<Origin>>;

fn origin_of(arg: &Arg, found: &Found, symbol: &dyn Fn(&str) -> Option<Origin>) -> Option<Origin> {
    match arg {
        Arg::Name(n) | Arg::Off(n, _) => symbol(n).or_else(|| found.get(n).copied().flatten()),
        Arg::Addr(Some(base), _) => origin_of(base, found, symbol),
        _ => None,
    }
}

/// Merges `o` into `acc`; `true` when `acc` changed.
fn merge(acc: &mut Option<Origin>, o: Option<Origin>) -> bool {
    let Some(o) = o else { return false };
    let next = match *acc {
        None => o,
        Some(a) if a == o => a,
        Some(_) => Origin::None,
    };
    let changed = *acc != Some(next);
    *acc = Some(next);
    changed
}

/// The sources whose origin a definition by `op` carries.
fn carried<'a>(op: &str, args: &'a [Arg]) -> &'a [Arg] {
    let name = op.split('.').next().unwrap_or("");
    match name {
        "mov" | "cvta" | "cvt" | "add" | "sub" if args.len() >= 2 => &args[1..],
        "mad" if args.len() == 4 => &args[3..],
        "ld" if op.starts_with("ld.param") && args.len() == 2 => &args[1..],
        _ => &[],
    }
}

/// Whether `op` accesses memory at an address operand.
fn accesses(op: &str) -> bool {
    matches!(op.split('.').next(), Some("ld" | "st" | "atom" | "red")) && !op.starts_with("ld.param")
}

/// The global operand of a non-tensor bulk copy: `[src]` of global to
/// shared (`cp.async.bulk.shared::cluster.global [dst], [src], ...`),
/// `[dst]` of shared to global (`cp.async.bulk.global.shared::cta`).
fn bulk_global<'a>(op: &str, args: &'a [Arg]) -> Option<&'a Arg> {
    let mut parts = op.split('.');
    if parts.next() != Some("cp") || parts.next() != Some("async") || parts.next() != Some("bulk") {
        return None;
    }
    match (parts.next(), parts.next()) {
        (Some("global"), _) => args.first(),
        (Some(_), Some("global")) => args.get(1),
        _ => None,
    }
}

/// Per instruction of `insts`, the origin of its address; `symbol` names
/// the origin of a shared variable or parameter.
pub(crate) fn origins(insts: &[&InstAst], symbol: &dyn Fn(&str) -> Option<Origin>) -> Vec<Origin> {
    let mut found = Found::new();
    // Each pass can only move a register up from "no origin yet" to one
    // origin to `Origin::None`: a few passes reach the fixed point.
    loop {
        let mut changed = false;
        for i in insts {
            let srcs = carried(&i.op, &i.args);
            let Some(Arg::Name(dst)) = i.args.first().filter(|_| !srcs.is_empty()) else {
                continue;
            };
            let mut acc = found.get(dst).copied().flatten();
            for s in srcs {
                merge(&mut acc, origin_of(s, &found, symbol));
            }
            if acc.is_some() && found.get(dst).copied().flatten() != acc {
                found.insert(dst.clone(), acc);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    insts
        .iter()
        .map(|i| {
            if let Some(global) = bulk_global(&i.op, &i.args) {
                // Only a parameter's view bounds a global operand.
                return match origin_of(global, &found, symbol) {
                    Some(o @ Origin::Param(_)) => o,
                    _ => Origin::None,
                };
            }
            if !accesses(&i.op) {
                return Origin::None;
            }
            let addr = i.args.iter().find(|a| matches!(a, Arg::Addr(..)));
            addr.and_then(|a| origin_of(a, &found, symbol)).unwrap_or(Origin::None)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::parse::{instructions, parse_module};

    #[test]
    fn addresses_take_the_origin_of_the_symbol_they_start_from() {
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 k_param_x)\n{\n\
            ld.param.u64 %rd1, [k_param_x];\n\
            cvta.to.global.u64 %rd2, %rd1;\n\
            mul.wide.u32 %rd3, %r1, 4;\n\
            add.s64 %rd4, %rd2, %rd3;\n\
            ld.global.u32 %r2, [%rd4];\n\
            mov.u32 %r3, k_smem0;\n\
            mad.lo.u32 %r4, %r1, 4, %r3;\n\
            st.shared.u32 [%r4+4], %r2;\n\
            mov.u32 %r5, k_smem1;\n\
            @%p1 mov.u32 %r5, k_smem0;\n\
            st.shared.u32 [%r5], %r2;\n\
            st.shared.u32 [k_smem1+8], %r2;\n\
            cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd4], 64, [%r5];\n\
            cp.async.bulk.global.shared::cta.bulk_group [%rd4], [%r3], 64;\n\
            cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%r4], 64, [%r5];\n\
            ret;\n}\n";
        let asts = parse_module(ptx).expect("parses");
        let insts = instructions(&asts[0].body);
        let symbol = |n: &str| match n {
            "k_smem0" => Some(Origin::Shared(0)),
            "k_smem1" => Some(Origin::Shared(1)),
            "k_param_x" => Some(Origin::Param(0)),
            _ => None,
        };
        let found = origins(&insts, &symbol);
        let accesses: Vec<Origin> = insts
            .iter()
            .zip(&found)
            .filter(|(i, _)| accesses(&i.op) || i.op.starts_with("cp"))
            .map(|(_, o)| *o)
            .collect();
        // A register set from two arrays has no origin; a bulk copy's is
        // its global operand's, a parameter's only.
        assert_eq!(
            accesses,
            [
                Origin::Param(0),
                Origin::Shared(0),
                Origin::None,
                Origin::Shared(1),
                Origin::Param(0),
                Origin::Param(0),
                Origin::None
            ]
        );
    }
}
