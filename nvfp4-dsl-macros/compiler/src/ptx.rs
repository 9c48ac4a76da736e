//! IR -> PTX text.
//!
//! Deterministic: registers are numbered per class in order of first
//! appearance, labels by the ids lowering gave them, and nothing depends on
//! hashing or addresses. Only labels that some branch targets are printed.

use super::ir::*;
use super::types::RegClass;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

pub fn emit(f: &Function) -> String {
    let mut p = Printer {
        names: BTreeMap::new(),
        counts: BTreeMap::new(),
        used: HashSet::new(),
        next_if: 0,
        out: String::new(),
    };
    p.collect_targets(&f.body);
    p.number_regs(&f.body);
    p.function(f);
    p.out
}

/// A branch target kind and the id lowering gave its scope.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    LoopEnd(u32),
    LoopContinue(u32),
    BlockEnd(u32),
}

struct Printer {
    names: BTreeMap<RegId, String>,
    counts: BTreeMap<RegClass, u32>,
    used: HashSet<Target>,
    next_if: u32,
    out: String,
}

impl Printer {
    fn collect_targets(&mut self, nodes: &[Node]) {
        for n in nodes {
            match n {
                Node::Break(id) => {
                    self.used.insert(Target::LoopEnd(*id));
                }
                Node::Continue(id) => {
                    self.used.insert(Target::LoopContinue(*id));
                }
                Node::ExitBlock(id) => {
                    self.used.insert(Target::BlockEnd(*id));
                }
                Node::If { then, els, .. } => {
                    self.collect_targets(then);
                    self.collect_targets(els);
                }
                Node::Loop { body, continuing, .. } => {
                    self.collect_targets(body);
                    self.collect_targets(continuing);
                }
                Node::Block { body, .. } => self.collect_targets(body),
                _ => {}
            }
        }
    }

    fn see(&mut self, r: Reg) {
        if self.names.contains_key(&r.id) {
            return;
        }
        let n = self.counts.entry(r.class).or_insert(0);
        *n += 1;
        self.names.insert(r.id, format!("{}{}", r.class.prefix(), n));
    }

    fn see_operand(&mut self, o: &Operand) {
        match o {
            Operand::Reg(r) => self.see(*r),
            Operand::Addr(b, _) => self.see_operand(b),
            Operand::Vec(v) => v.iter().for_each(|o| self.see_operand(o)),
            Operand::Pair(a, b) => {
                self.see_operand(a);
                self.see_operand(b);
            }
            Operand::TensorCoords(m, c) => {
                self.see_operand(m);
                c.iter().for_each(|o| self.see_operand(o));
            }
            _ => {}
        }
    }

    fn number_regs(&mut self, nodes: &[Node]) {
        for n in nodes {
            match n {
                Node::Inst(i) => {
                    if let Some((g, _)) = i.guard {
                        self.see(g);
                    }
                    i.args.iter().for_each(|a| self.see_operand(a));
                }
                Node::Raw { dest, inputs, .. } => {
                    dest.iter().chain(inputs).for_each(|a| self.see_operand(a));
                }
                Node::If { cond, then, els, .. } => {
                    self.see(*cond);
                    self.number_regs(then);
                    self.number_regs(els);
                }
                Node::Loop { body, continuing, .. } => {
                    self.number_regs(body);
                    self.number_regs(continuing);
                }
                Node::Block { body, .. } => self.number_regs(body),
                _ => {}
            }
        }
    }

    fn operand(&self, o: &Operand) -> String {
        match o {
            Operand::Reg(r) => self.names[&r.id].clone(),
            Operand::Imm(s) | Operand::Sym(s) => s.clone(),
            Operand::Addr(b, off) => match off {
                0 => format!("[{}]", self.operand(b)),
                o if *o > 0 => format!("[{}+{o}]", self.operand(b)),
                o => format!("[{}{o}]", self.operand(b)),
            },
            Operand::Vec(v) => format!(
                "{{{}}}",
                v.iter().map(|o| self.operand(o)).collect::<Vec<_>>().join(", ")
            ),
            Operand::Sink => "_".to_string(),
            Operand::Pair(a, b) => format!("{}|{}", self.operand(a), self.operand(b)),
            Operand::TensorCoords(m, c) => format!(
                "[{}, {{{}}}]",
                self.operand(m),
                c.iter().map(|o| self.operand(o)).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    fn line(&mut self, s: &str) {
        self.out.push('\t');
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn label(&mut self, l: &str) {
        self.out.push_str(l);
        self.out.push_str(":\n");
    }

    fn function(&mut self, f: &Function) {
        let o = &mut self.out;
        let _ = writeln!(o, "//");
        let _ = writeln!(
            o,
            "// Generated by nvfp4-dsl {}: kernel `{}`, specialisation `{}`, target {}.",
            env!("CARGO_PKG_VERSION"),
            f.kernel,
            f.spec,
            f.target.name()
        );
        let _ = writeln!(o, "//");
        let _ = writeln!(o);
        let _ = writeln!(o, ".version {}.{}", f.ptx_version / 10, f.ptx_version % 10);
        let _ = writeln!(o, ".target {}", f.target.name());
        let _ = writeln!(o, ".address_size 64");
        let _ = writeln!(o);
        if let Some(file) = &f.file {
            let _ = writeln!(o, ".file 1 \"{}\"", file.replace('\\', "/").replace('"', "\\\""));
            let _ = writeln!(o);
        }
        for t in &f.tables {
            // Sixteen values a line.
            let rows: Vec<String> = t.values.chunks(16).map(|c| c.join(", ")).collect();
            let _ = writeln!(
                o,
                ".const .align {} .{} {}[{}] = {{{}}};",
                t.align,
                t.ptx,
                t.name,
                t.values.len(),
                rows.join(",\n\t")
            );
        }
        if !f.tables.is_empty() {
            let _ = writeln!(o);
        }
        for s in &f.shared {
            let _ = writeln!(o, ".shared .align {} .b8 {}[{}];", s.align, s.name, s.bytes);
        }
        if let Some(align) = f.dynamic_shared {
            let _ = writeln!(o, ".extern .shared .align {align} .b8 {}_dyn_smem[];", f.entry);
        }
        if !f.shared.is_empty() || f.dynamic_shared.is_some() {
            let _ = writeln!(o);
        }
        let _ = writeln!(o, ".visible .entry {}(", f.entry);
        for (i, p) in f.params.iter().enumerate() {
            let sep = if i + 1 == f.params.len() { "" } else { "," };
            let decl = match p.ptx {
                ParamTy::Scalar(t) => format!(".param .{t} {}", p.name),
                ParamTy::Bytes { align, size } => format!(".param .align {align} .b8 {}[{size}]", p.name),
            };
            let _ = writeln!(o, "\t{decl}{sep}");
        }
        let _ = writeln!(o, ")");
        if let Some((max, min)) = f.launch_bounds {
            let _ = writeln!(o, ".maxntid {max}, 1, 1");
            if let Some(min) = min {
                let _ = writeln!(o, ".minnctapersm {min}");
            }
        }
        let _ = writeln!(o, "{{");
        for (class, n) in self.counts.clone() {
            self.line(&format!(".reg {} {}<{}>;", class.decl(), class.prefix(), n + 1));
        }
        self.out.push('\n');
        self.nodes(&f.body);
        self.line("ret;");
        self.out.push_str("}\n");
    }

    fn nodes(&mut self, nodes: &[Node]) {
        for n in nodes {
            self.node(n);
        }
    }

    /// The branch a lone jump node takes, for `@p bra` shortcuts.
    fn jump(&self, n: &Node) -> Option<String> {
        Some(match n {
            Node::Break(id) => format!("bra $L_end{id}"),
            Node::Continue(id) => format!("bra $L_cont{id}"),
            Node::ExitBlock(id) => format!("bra $L_exit{id}"),
            Node::Return => "ret".to_string(),
            _ => return None,
        })
    }

    fn node(&mut self, n: &Node) {
        match n {
            Node::Inst(i) => {
                let guard = match i.guard {
                    Some((g, false)) => format!("@{} ", self.names[&g.id]),
                    Some((g, true)) => format!("@!{} ", self.names[&g.id]),
                    None => String::new(),
                };
                let args: Vec<String> = i.args.iter().map(|a| self.operand(a)).collect();
                let text = if args.is_empty() {
                    format!("{guard}{};", i.op)
                } else {
                    format!("{guard}{} {};", i.op, args.join(", "))
                };
                self.line(&text);
            }
            Node::Raw { template, dest, inputs } => {
                let text: String = template
                    .iter()
                    .map(|p| match p {
                        Piece::Text(t) => t.clone(),
                        Piece::Dest => self.operand(dest.as_ref().expect("lowered: `{d}` only with a result")),
                        Piece::Input(i) => self.operand(&inputs[*i]),
                    })
                    .collect();
                for l in text.lines() {
                    let l = l.trim();
                    if !l.is_empty() {
                        self.line(l);
                    }
                }
            }
            Node::Comment(c) => self.line(&format!("// {c}")),
            Node::Trap(note) => self.line(&format!("trap; // {note}")),
            Node::Loc { line, col } => self.line(&format!(".loc 1 {line} {col}")),
            Node::If {
                cond,
                negate,
                then,
                els,
            } => {
                let c = self.names[&cond.id].clone();
                let when = |take_if_true: bool| {
                    if take_if_true {
                        format!("@{c}")
                    } else {
                        format!("@!{c}")
                    }
                };
                // `if c { break; }` (comments aside) is one guarded branch.
                let (notes, rest): (Vec<&Node>, Vec<&Node>) = then
                    .iter()
                    .partition(|n| matches!(n, Node::Comment(_) | Node::Loc { .. }));
                if els.is_empty()
                    && rest.len() == 1
                    && let Some(j) = self.jump(rest[0])
                {
                    for n in notes {
                        self.node(n);
                    }
                    self.line(&format!("{} {j};", when(!negate)));
                    return;
                }
                self.next_if += 1;
                let id = self.next_if;
                let skip = if els.is_empty() {
                    format!("$L_endif{id}")
                } else {
                    format!("$L_else{id}")
                };
                self.line(&format!("{} bra {skip};", when(*negate)));
                self.nodes(then);
                if !els.is_empty() {
                    let ends_in_jump = then.last().is_some_and(|n| self.jump(n).is_some());
                    if !ends_in_jump {
                        self.line(&format!("bra $L_endif{id};"));
                    }
                    self.label(&format!("$L_else{id}"));
                    self.nodes(els);
                }
                self.label(&format!("$L_endif{id}"));
            }
            Node::Loop { id, body, continuing } => {
                self.label(&format!("$L_loop{id}"));
                self.nodes(body);
                if self.used.contains(&Target::LoopContinue(*id)) {
                    self.label(&format!("$L_cont{id}"));
                }
                self.nodes(continuing);
                self.line(&format!("bra $L_loop{id};"));
                if self.used.contains(&Target::LoopEnd(*id)) {
                    self.label(&format!("$L_end{id}"));
                }
            }
            Node::Block { id, body } => {
                self.nodes(body);
                if self.used.contains(&Target::BlockEnd(*id)) {
                    self.label(&format!("$L_exit{id}"));
                }
            }
            Node::Break(_) | Node::Continue(_) | Node::ExitBlock(_) | Node::Return => {
                let j = self.jump(n).expect("a jump node");
                self.line(&format!("{j};"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;

    fn function(body: Vec<Node>, regs: Vec<RegClass>) -> Function {
        Function {
            entry: "k".into(),
            kernel: "k".into(),
            spec: "default".into(),
            target: Target::Sm90,
            ptx_version: 78,
            params: vec![],
            regs,
            shared: vec![],
            tables: vec![],
            dynamic_shared: None,
            launch_bounds: Some((128, Some(2))),
            programmatic: false,
            file: None,
            debug_checks: false,
            body,
        }
    }

    fn inst(op: &str, args: Vec<Operand>) -> Node {
        Node::Inst(Inst {
            guard: None,
            op: op.into(),
            args,
        })
    }

    #[test]
    fn registers_are_numbered_by_first_use_per_class() {
        let r = |id, class| Reg { id, class };
        // Allocated in one order, used in another: numbering follows use.
        let body = vec![
            inst("mov.u32", vec![r(2, RegClass::B32).into(), Operand::imm(1)]),
            inst("mov.u32", vec![r(0, RegClass::B32).into(), r(2, RegClass::B32).into()]),
            inst("mov.f32", vec![r(1, RegClass::F32).into(), Operand::imm("0f00000000")]),
        ];
        let text = emit(&function(body, vec![RegClass::B32, RegClass::F32, RegClass::B32]));
        assert!(
            text.contains("mov.u32 %r1, 1;\n\tmov.u32 %r2, %r1;\n\tmov.f32 %f1, 0f00000000;"),
            "{text}"
        );
        assert!(
            text.contains(".reg .b32 %r<3>;") && text.contains(".reg .f32 %f<2>;"),
            "{text}"
        );
        assert!(text.contains(".maxntid 128, 1, 1\n.minnctapersm 2\n"), "{text}");
    }

    #[test]
    fn loops_print_only_the_labels_they_use() {
        let p = Reg {
            id: 0,
            class: RegClass::Pred,
        };
        let body = vec![Node::Loop {
            id: 7,
            body: vec![Node::If {
                cond: p,
                negate: true,
                then: vec![Node::Break(7)],
                els: vec![],
            }],
            continuing: vec![],
        }];
        let text = emit(&function(body, vec![RegClass::Pred]));
        assert!(
            text.contains("$L_loop7:\n\t@!%p1 bra $L_end7;\n\tbra $L_loop7;\n$L_end7:\n"),
            "{text}"
        );
        assert!(!text.contains("$L_cont7"), "{text}");
    }

    #[test]
    fn if_else_branches_around_both_arms() {
        let p = Reg {
            id: 0,
            class: RegClass::Pred,
        };
        let body = vec![Node::If {
            cond: p,
            negate: false,
            then: vec![inst("bar.sync", vec![Operand::imm(0)])],
            els: vec![inst("bar.sync", vec![Operand::imm(1)])],
        }];
        let text = emit(&function(body, vec![RegClass::Pred]));
        assert!(
            text.contains(
                "\t@!%p1 bra $L_else1;\n\tbar.sync 0;\n\tbra $L_endif1;\n$L_else1:\n\tbar.sync 1;\n$L_endif1:\n"
            ),
            "{text}"
        );
    }
}
