//! The mutants: every synchronising instruction of a kernel's PTX
//! removed or given a wrong operand.

/// One mutant: instruction `text` (the `occurrence`-th with that text) at
/// `line` changed by `change`.
pub(super) struct Mutant {
    pub(super) line: usize,
    pub(super) text: String,
    pub(super) occurrence: usize,
    pub(super) change: &'static str,
    pub(super) ptx: String,
}

/// A scratch register the mutants that need one declare.
const SCRATCH: &str = "%mutant";

/// The mutants of a kernel's PTX: every synchronising instruction removed
/// (replaced by a comment, so that lines keep their numbers) or with a
/// wrong operand.
pub(super) fn mutants(ptx: &str) -> Vec<Mutant> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let t = line.trim();
        let (guard, inst) = match t.split_once(' ') {
            Some((g, rest)) if g.starts_with('@') => (format!("{g} "), rest),
            _ => (String::new(), t),
        };
        let op = inst.split_whitespace().next().unwrap_or("");
        let operands: Vec<&str> = inst[op.len()..]
            .trim()
            .trim_end_matches(';')
            .split(',')
            .map(str::trim)
            .collect();
        // (change, the line it replaces, its replacement)
        let mut changes: Vec<(&'static str, usize, Vec<String>)> = Vec::new();
        let removed = vec![format!("// mutant: removed `{t}`")];
        if op.starts_with("mbarrier.try_wait.parity") {
            changes.push(("wait skipped", k, vec![format!("{guard}mov.pred {}, 1;", operands[0])]));
            let parity = operands[2];
            let flipped = match parity {
                "0" => vec![t.replacen(", 0;", ", 1;", 1)],
                "1" => vec![t.replacen(", 1;", ", 0;", 1)],
                reg => vec![
                    format!("{guard}xor.b32 {SCRATCH}, {reg}, 1;"),
                    t.replacen(&format!("], {reg};"), &format!("], {SCRATCH};"), 1),
                ],
            };
            changes.push(("parity flipped", k, flipped));
        } else if op.starts_with("mbarrier.arrive") {
            let dest = operands[0];
            let gone = if dest == "_" {
                removed.clone()
            } else {
                vec![format!("{guard}mov.b64 {dest}, 0;")]
            };
            changes.push(("arrive removed", k, gone));
            if op.contains("expect_tx")
                && let Ok(bytes) = operands[2].parse::<u32>()
            {
                for (change, b) in [
                    ("expect_tx 16 bytes short", bytes - 16),
                    ("expect_tx 16 bytes over", bytes + 16),
                ] {
                    changes.push((
                        change,
                        k,
                        vec![t.replacen(&format!(", {bytes};"), &format!(", {b};"), 1)],
                    ));
                }
            }
        } else if op.starts_with("wgmma.wait_group") || op.starts_with("cp.async.bulk.wait_group") {
            changes.push(("removed", k, removed.clone()));
            if let Ok(n) = operands[0].parse::<u32>()
                && n < 7
            {
                changes.push((
                    "waits for one group fewer",
                    k,
                    vec![t.replacen(&format!(" {n};"), &format!(" {};", n + 1), 1)],
                ));
            }
        } else if [
            "fence.proxy.async",
            "tcgen05.commit",
            "tcgen05.wait::ld",
            "tcgen05.fence::",
            "wgmma.fence",
            "wgmma.commit_group",
            "bar.sync",
            "barrier.sync",
            "bar.warp.sync",
            "barrier.cluster.arrive",
            "barrier.cluster.wait",
            // Item 5 of issue 24.
            "griddepcontrol.wait",
            "fence.acq_rel",
            "fence.mbarrier_init",
        ]
        .iter()
        .any(|p| op.starts_with(p))
        {
            changes.push(("removed", k, removed.clone()));
        }
        // Item 5 of issue 24 (mbarrier phase overrun): an arrive or commit
        // on the next stage's barrier of a ring.
        if (op.starts_with("mbarrier.arrive") && !op.contains("expect_tx")) || op.starts_with("tcgen05.commit") {
            let bar = inst
                .split_once('[')
                .and_then(|(_, r)| r.split_once(']'))
                .map(|(b, _)| b);
            if let Some((at, next)) = bar.and_then(|b| next_stage(&lines, k, b)) {
                changes.push(("arrives on the next stage's barrier", at, next));
            }
        }
        // Item 5 of issue 24: a cluster arrive's release, an atomic's or a
        // strong load's or store's release or acquire, made relaxed.
        if op.starts_with("barrier.cluster.arrive") && !op.contains(".relaxed") {
            let relaxed = op.replacen(".release", "", 1).replacen("arrive", "arrive.relaxed", 1);
            changes.push(("made relaxed", k, vec![t.replacen(op, &relaxed, 1)]));
        }
        if ["atom.", "red.", "ld.", "st."].iter().any(|p| op.starts_with(p))
            && let Some(order) = [".acq_rel", ".release", ".acquire"]
                .into_iter()
                .find(|o| op.contains(o))
        {
            changes.push(("made relaxed", k, vec![t.replacen(order, ".relaxed", 1)]));
        }
        if changes.is_empty() {
            continue;
        }
        let occurrence = seen.iter().filter(|s| *s == t).count();
        seen.push(t.to_string());
        for (change, at, replacement) in changes {
            let mut new_lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            new_lines[at] = replacement.join("\n\t");
            let mut ptx = new_lines.join("\n");
            if ptx.contains(SCRATCH) {
                // Declared with the entry's first registers.
                ptx = ptx.replacen("\t.reg ", &format!("\t.reg .b32 {SCRATCH};\n\t.reg "), 1);
            }
            out.push(Mutant {
                line: k + 1,
                text: t.to_string(),
                occurrence,
                change,
                ptx,
            });
        }
    }
    out
}

/// The mutation that moves the barrier address `bar` of the arrive or
/// commit at line index `k` to the next barrier of its ring: the address
/// is `base + ((N + s) << 3)` for a ring of N (a power of two) barriers
/// from index N (the `empty` barriers after N `full` ones), computed by
/// `add.u32 %i, N, %s; shl.b32 %o, %i, 3; add.s32 bar, base, %o;` just
/// before; `s` becomes `(s + 1) % N`. The line index to replace and its
/// replacement.
fn next_stage(lines: &[&str], k: usize, bar: &str) -> Option<(usize, Vec<String>)> {
    // The last definition of `reg` in the few lines before line `k`, as
    // (line index, opcode, operands).
    let def = |reg: &str| {
        (k.saturating_sub(8)..k).rev().find_map(|j| {
            let t = lines[j].trim().trim_end_matches(';');
            let (op, rest) = t.split_once(' ')?;
            let ops: Vec<String> = rest.split(',').map(|o| o.trim().to_string()).collect();
            (ops.first().map(String::as_str) == Some(reg)).then(|| (j, op.to_string(), ops))
        })
    };
    let (_, op, ops) = def(bar)?;
    if op != "add.s32" || ops.len() != 3 {
        return None;
    }
    let (_, op, shl) = def(&ops[2])?;
    if op != "shl.b32" || shl.get(2).map(String::as_str) != Some("3") {
        return None;
    }
    let (at, op, add) = def(&shl[1])?;
    let n: u32 = add.get(1)?.parse().ok()?;
    if op != "add.u32" || !n.is_power_of_two() || n < 2 {
        return None;
    }
    let (i, s) = (&add[0], &add[2]);
    Some((
        at,
        vec![
            format!("add.u32 {SCRATCH}, {s}, 1;"),
            format!("and.b32 {SCRATCH}, {SCRATCH}, {};", n - 1),
            format!("add.u32 {i}, {n}, {SCRATCH};"),
        ],
    ))
}
