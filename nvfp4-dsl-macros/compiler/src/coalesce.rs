//! Copy coalescing and dead initial values, the one pass between `lower`
//! and `ptx`.
//!
//! Lowering computes every expression into a fresh register and then
//! copies it where the value goes (`mul.rn.f16x2 %r9, ..; mov.b32 %r4,
//! %r9;` for `frag[f] = hmul2(..)`, `add.rn.f32 %f9, ..; mov.f32 %f4,
//! %f9;` for `acc += x`). ptxas removes those copies, but the emulator
//! interprets every instruction it is given, and the copies were a
//! quarter of the sm_90a GEMM's. Where a register appears exactly twice in the function,
//! as the destination of an unguarded instruction and as the source of
//! the unguarded `mov` right after it into a register of its class, the
//! instruction writes the `mov`'s destination itself and the `mov` goes.
//!
//! Two appearances are enough to know the first one is the definition: a
//! register read before it is written is never emitted, so a register that
//! is read by the `mov` and appears once more is written there. The `mov`
//! directly follows, so nothing reads or writes the destination between
//! the two (the instruction may read it: its sources are read before its
//! destination is written, as the `mov` was after).
//!
//! A copy `mov d, s` between registers of one class whose destination
//! appears once more, read by the next instruction (comments aside), is
//! read there from `s` and the `mov` goes: nothing runs between them.
//!
//! A `mov` whose destination the same straight run of instructions
//! overwrites before anything reads it goes too: `let mut frag = [0; 4];`
//! followed by `frag[f] = ..` for every `f` writes each register once.
//! Only instructions known to write their first operand count as the
//! overwrite; a branch, loop, guard or inline PTX on the way keeps it.

use std::collections::HashMap;

use crate::ir::{Inst, Node, Operand, Reg, RegId};

/// Removes the copies and dead initial values the module's comment
/// describes, everywhere in `body`.
pub fn coalesce(body: &mut Vec<Node>) {
    let mut uses = HashMap::new();
    count_nodes(body, &mut uses);
    fold_nodes(body, &uses);
    drop_dead_inits(body);
}

/// How often each register appears in `nodes` (any operand, guard or
/// branch condition).
fn count_nodes(nodes: &[Node], uses: &mut HashMap<RegId, u32>) {
    for n in nodes {
        match n {
            Node::Inst(i) => {
                if let Some((g, _)) = i.guard {
                    see(g, uses);
                }
                i.args.iter().for_each(|a| count_operand(a, uses));
            }
            Node::Raw { dest, inputs, .. } => dest.iter().chain(inputs).for_each(|a| count_operand(a, uses)),
            Node::If { cond, then, els, .. } => {
                see(*cond, uses);
                count_nodes(then, uses);
                count_nodes(els, uses);
            }
            Node::Loop { body, continuing, .. } => {
                count_nodes(body, uses);
                count_nodes(continuing, uses);
            }
            Node::Block { body, .. } => count_nodes(body, uses),
            Node::Comment(_) | Node::Loc { .. } | Node::Break(_) | Node::Continue(_) => {}
            Node::ExitBlock(_) | Node::Return | Node::Trap(_) => {}
        }
    }
}

fn see(r: Reg, uses: &mut HashMap<RegId, u32>) {
    *uses.entry(r.id).or_insert(0) += 1;
}

fn count_operand(o: &Operand, uses: &mut HashMap<RegId, u32>) {
    match o {
        Operand::Reg(r) => see(*r, uses),
        Operand::Addr(b, _) => count_operand(b, uses),
        Operand::Vec(v) => v.iter().for_each(|o| count_operand(o, uses)),
        Operand::Pair(a, b) => {
            count_operand(a, uses);
            count_operand(b, uses);
        }
        Operand::TensorCoords(m, c) => {
            count_operand(m, uses);
            c.iter().for_each(|o| count_operand(o, uses));
        }
        Operand::Imm(_) | Operand::Sym(_) | Operand::Sink => {}
    }
}

fn fold_nodes(nodes: &mut Vec<Node>, uses: &HashMap<RegId, u32>) {
    let mut i = 0;
    while i < nodes.len() {
        match &mut nodes[i] {
            Node::If { then, els, .. } => {
                fold_nodes(then, uses);
                fold_nodes(els, uses);
            }
            Node::Loop { body, continuing, .. } => {
                fold_nodes(body, uses);
                fold_nodes(continuing, uses);
            }
            Node::Block { body, .. } => fold_nodes(body, uses),
            _ => {}
        }
        let Node::Inst(first) = &nodes[i] else {
            i += 1;
            continue;
        };
        if let Some(Node::Inst(copy)) = nodes.get(i + 1)
            && let Some(to) = copied_temporary(first, copy, uses)
        {
            // Stay at `i`: the folded instruction may feed another copy.
            let Node::Inst(def) = &mut nodes[i] else {
                unreachable!("matched as an instruction above")
            };
            def.args[0] = Operand::Reg(to);
            nodes.remove(i + 1);
            continue;
        }
        let next = (i + 1..nodes.len()).find(|&j| !matches!(nodes[j], Node::Comment(_) | Node::Loc { .. }));
        if let Some(j) = next
            && let Node::Inst(reader) = &nodes[j]
            && let Some((copy, from)) = read_once_copy(first, reader, uses)
        {
            let Node::Inst(reader) = &mut nodes[j] else {
                unreachable!("matched as an instruction above")
            };
            reader.args[1..].iter_mut().for_each(|a| replace_reg(a, copy, from));
            nodes.remove(i);
            continue;
        }
        i += 1;
    }
}

/// The register `copy` moves `def`'s result into, where `def`'s result is
/// a temporary that nothing else reads (see the module's comment).
fn copied_temporary(def: &Inst, copy: &Inst, uses: &HashMap<RegId, u32>) -> Option<Reg> {
    let (Some(Operand::Reg(temp)), Some((to, from))) = (def.args.first(), register_copy(copy)) else {
        return None;
    };
    let single_use = uses.get(&temp.id) == Some(&2);
    (single_use && def.guard.is_none() && from == *temp && to != *temp).then_some(to)
}

/// `(copy, from)` where `copy` is `mov copy, from` and `reader`, the next
/// instruction, is the one other place `copy` appears, as a source: then
/// `reader` can read `from` instead.
fn read_once_copy(copy: &Inst, reader: &Inst, uses: &HashMap<RegId, u32>) -> Option<(Reg, Reg)> {
    let (to, from) = register_copy(copy)?;
    let head = reader.op.split('.').next().unwrap_or("");
    let reads_rest = WRITES_FIRST.contains(&head) && reader.args.first() != Some(&Operand::Reg(to)) || head == "st";
    let guard_free = reader.guard.is_none_or(|(g, _)| g != to);
    let reads_it = reader.args.iter().skip(1).any(|a| appearances(a, to) > 0);
    (uses.get(&to.id) == Some(&2) && reads_it && reads_rest && guard_free && to != from).then_some((to, from))
}

/// `(to, from)` of an unguarded `mov to, from` between registers of one
/// class.
fn register_copy(i: &Inst) -> Option<(Reg, Reg)> {
    match i.args.as_slice() {
        [Operand::Reg(to), Operand::Reg(from)]
            if i.op.starts_with("mov.") && i.guard.is_none() && to.class == from.class =>
        {
            Some((*to, *from))
        }
        _ => None,
    }
}

/// How often register `r` appears in `o`.
fn appearances(o: &Operand, r: Reg) -> usize {
    match o {
        Operand::Reg(x) => usize::from(*x == r),
        Operand::Addr(b, _) => appearances(b, r),
        Operand::Vec(v) => v.iter().map(|o| appearances(o, r)).sum(),
        Operand::Pair(a, b) => appearances(a, r) + appearances(b, r),
        Operand::TensorCoords(m, c) => appearances(m, r) + c.iter().map(|o| appearances(o, r)).sum::<usize>(),
        Operand::Imm(_) | Operand::Sym(_) | Operand::Sink => 0,
    }
}

/// Replaces register `old` with `new` everywhere in `o`.
fn replace_reg(o: &mut Operand, old: Reg, new: Reg) {
    match o {
        Operand::Reg(r) if *r == old => *r = new,
        Operand::Addr(b, _) => replace_reg(b, old, new),
        Operand::Vec(v) => v.iter_mut().for_each(|o| replace_reg(o, old, new)),
        Operand::Pair(a, b) => {
            replace_reg(a, old, new);
            replace_reg(b, old, new);
        }
        Operand::TensorCoords(m, c) => {
            replace_reg(m, old, new);
            c.iter_mut().for_each(|o| replace_reg(o, old, new));
        }
        Operand::Reg(_) | Operand::Imm(_) | Operand::Sym(_) | Operand::Sink => {}
    }
}

/// PTX instructions whose first operand, a register, is written and not
/// read (the forms lowering emits).
const WRITES_FIRST: &[&str] = &[
    "abs", "add", "and", "bfe", "bfi", "brev", "clz", "cos", "cvt", "cvta", "div", "ex2", "fma", "ld", "lg2", "lop3",
    "mad", "max", "min", "mov", "mul", "neg", "not", "or", "popc", "prmt", "rcp", "rem", "rsqrt", "selp", "set",
    "setp", "shf", "shl", "shr", "sin", "sqrt", "sub", "tanh", "xor",
];

/// Removes every `mov` into a register that the instructions after it in
/// the same list overwrite before reading (see the module's comment).
fn drop_dead_inits(nodes: &mut Vec<Node>) {
    let mut i = 0;
    while i < nodes.len() {
        match &mut nodes[i] {
            Node::If { then, els, .. } => {
                drop_dead_inits(then);
                drop_dead_inits(els);
            }
            Node::Loop { body, continuing, .. } => {
                drop_dead_inits(body);
                drop_dead_inits(continuing);
            }
            Node::Block { body, .. } => drop_dead_inits(body),
            _ => {}
        }
        let dead = match &nodes[i] {
            Node::Inst(init) if init.op.starts_with("mov.") && init.guard.is_none() => match init.args.first() {
                Some(Operand::Reg(r)) => overwritten(*r, &nodes[i + 1..]) == Some(true),
                _ => false,
            },
            _ => false,
        };
        if dead {
            nodes.remove(i);
        } else {
            i += 1;
        }
    }
}

/// Whether the first instruction of `after` that names `r` writes it
/// without reading it, with no control flow, guard or inline PTX first
/// (`None`: nothing in `after` names it, and it runs straight through).
fn overwritten(r: Reg, after: &[Node]) -> Option<bool> {
    for n in after {
        match n {
            Node::Comment(_) | Node::Loc { .. } => {}
            // An unrolled loop's copies, entered at the top.
            Node::Block { body, .. } => {
                if let Some(found) = overwritten(r, body) {
                    return Some(found);
                }
            }
            Node::Inst(i) => {
                let guard = usize::from(i.guard.is_some_and(|(g, _)| g == r));
                let times = guard + i.args.iter().map(|a| appearances(a, r)).sum::<usize>();
                if times > 0 {
                    let writes = WRITES_FIRST.contains(&i.op.split('.').next().unwrap_or(""));
                    return Some(guard == 0 && writes && times == 1 && i.args.first() == Some(&Operand::Reg(r)));
                }
            }
            _ => return Some(false),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::RegClass;

    fn r(id: RegId) -> Operand {
        Operand::Reg(Reg {
            id,
            class: RegClass::B32,
        })
    }

    fn f(id: RegId) -> Operand {
        Operand::Reg(Reg {
            id,
            class: RegClass::F32,
        })
    }

    fn inst(op: &str, args: Vec<Operand>) -> Node {
        Node::Inst(Inst {
            guard: None,
            op: op.into(),
            args,
        })
    }

    fn guarded(op: &str, args: Vec<Operand>) -> Node {
        let p = Reg {
            id: 99,
            class: RegClass::Pred,
        };
        Node::Inst(Inst {
            guard: Some((p, false)),
            op: op.into(),
            args,
        })
    }

    /// The instructions of `body` after the pass, one line each, with
    /// registers by id (`If` bodies indented by `> `).
    fn after(mut body: Vec<Node>) -> Vec<String> {
        fn show(o: &Operand) -> String {
            match o {
                Operand::Reg(r) => format!("{:?}{}", r.class, r.id),
                Operand::Imm(s) | Operand::Sym(s) => s.clone(),
                Operand::Addr(b, off) => format!("[{}+{off}]", show(b)),
                Operand::Vec(v) => format!("{{{}}}", v.iter().map(show).collect::<Vec<_>>().join(", ")),
                other => format!("{other:?}"),
            }
        }
        fn lines(nodes: &[Node], out: &mut Vec<String>, indent: &str) {
            for n in nodes {
                match n {
                    Node::Inst(i) => {
                        let guard = if i.guard.is_some() { "@p " } else { "" };
                        let args: Vec<String> = i.args.iter().map(show).collect();
                        out.push(format!("{indent}{guard}{} {}", i.op, args.join(", ")));
                    }
                    Node::If { then, .. } => lines(then, out, &format!("{indent}> ")),
                    Node::Block { body, .. } => lines(body, out, indent),
                    _ => {}
                }
            }
        }
        coalesce(&mut body);
        let mut out = Vec::new();
        lines(&body, &mut out, "");
        out
    }

    #[test]
    fn a_single_use_temporary_is_computed_where_its_copy_goes() {
        let body = vec![
            inst("mul.rn.f16x2", vec![r(9), r(1), r(2)]),
            inst("mov.b32", vec![r(4), r(9)]),
            inst("add.rn.f32", vec![f(8), f(3), f(5)]),
            inst("mov.f32", vec![f(3), f(8)]),
            inst("st.shared.b32", vec![Operand::Addr(Box::new(r(6)), 0), r(4)]),
        ];
        assert_eq!(
            after(body),
            [
                "mul.rn.f16x2 B324, B321, B322",
                "add.rn.f32 F323, F323, F325",
                "st.shared.b32 [B326+0], B324"
            ]
        );
    }

    #[test]
    fn copies_stay_where_the_temporary_is_read_again_or_guarded() {
        let body = vec![
            // Read twice: the copy stays.
            inst("add.u32", vec![r(9), r(1), r(2)]),
            inst("mov.b32", vec![r(4), r(9)]),
            inst("st.shared.b32", vec![Operand::Addr(Box::new(r(6)), 0), r(9)]),
            // Guarded: the copy stays (the temporary may keep its old value).
            guarded("add.u32", vec![r(10), r(1), r(2)]),
            inst("mov.b32", vec![r(5), r(10)]),
            // A copy between classes is a reinterpretation, not a copy.
            inst("add.u32", vec![r(11), r(1), r(2)]),
            inst("mov.b32", vec![f(7), r(11)]),
            inst("st.shared.b32", vec![Operand::Addr(Box::new(r(6)), 0), r(5)]),
            inst("st.shared.b32", vec![Operand::Addr(Box::new(r(6)), 0), r(4)]),
            inst("st.shared.f32", vec![Operand::Addr(Box::new(r(6)), 0), f(7)]),
        ];
        let out = after(body);
        assert!(out.contains(&"mov.b32 B324, B329".to_string()), "{out:#?}");
        assert!(out.contains(&"@p add.u32 B3210, B321, B322".to_string()), "{out:#?}");
        assert!(out.contains(&"mov.b32 B325, B3210".to_string()), "{out:#?}");
        assert!(out.contains(&"mov.b32 F327, B3211".to_string()), "{out:#?}");
    }

    #[test]
    fn a_copy_read_once_by_the_next_instruction_is_read_from_its_source() {
        let body = vec![
            inst("mov.f32", vec![f(4), f(2)]),
            Node::Comment("the next statement".into()),
            inst("mul.rn.f32", vec![f(5), f(4), Operand::imm("0f4D800000")]),
            // The next instruction does not read the copy: it stays.
            inst("mov.b32", vec![r(6), r(1)]),
            inst("mov.u32", vec![r(7), Operand::Sym("smem".into())]),
            inst("add.s32", vec![r(8), r(7), r(6)]),
            inst("st.shared.f32", vec![Operand::Addr(Box::new(r(8)), 0), f(5)]),
        ];
        assert_eq!(
            after(body),
            [
                "mul.rn.f32 F325, F322, 0f4D800000",
                "mov.b32 B326, B321",
                "mov.u32 B327, smem",
                "add.s32 B328, B327, B326",
                "st.shared.f32 [B328+0], F325"
            ]
        );
    }

    #[test]
    fn an_initial_value_overwritten_before_any_read_goes() {
        let body = vec![
            inst("mov.b32", vec![r(1), Operand::imm(0)]),
            inst("mov.b32", vec![r(2), Operand::imm(0)]),
            inst("mov.b32", vec![r(3), Operand::imm(0)]),
            Node::Block {
                id: 0,
                body: vec![inst("mul.rn.f16x2", vec![r(1), r(7), r(8)])],
            },
            // Read first: stays.
            inst("add.u32", vec![r(2), r(2), Operand::imm(1)]),
            // Behind a branch: stays.
            Node::If {
                cond: Reg {
                    id: 98,
                    class: RegClass::Pred,
                },
                negate: false,
                then: vec![inst("mov.b32", vec![r(3), Operand::imm(1)])],
                els: vec![],
            },
            inst(
                "st.shared.v4.b32",
                vec![
                    Operand::Addr(Box::new(r(6)), 0),
                    Operand::Vec(vec![r(1), r(2), r(3), r(3)]),
                ],
            ),
        ];
        assert_eq!(
            after(body),
            [
                "mov.b32 B322, 0",
                "mov.b32 B323, 0",
                "mul.rn.f16x2 B321, B327, B328",
                "add.u32 B322, B322, 1",
                "> mov.b32 B323, 1",
                "st.shared.v4.b32 [B326+0], {B321, B322, B323, B323}"
            ]
        );
    }
}
