//! The IR between `lower` and `ptx`.
//!
//! Rules:
//! - Values live in typed virtual registers (`Reg`); a register's class never
//!   changes. Registers are mutable (PTX is not SSA): a `let mut` variable is
//!   one register written by every assignment.
//! - Control flow is structured: `If`, `Loop` (with a `continuing` part that
//!   `Continue` jumps to), `Block` (exited early by `ExitBlock`), `Return`.
//!   `Break`/`Continue`/`ExitBlock` name their target by id, so unrolled loop
//!   copies can exit the right scope.
//! - Memory spaces are explicit in each instruction's opcode (`ld.global`,
//!   `ld.shared`, `ld.param`); instructions carry their full PTX opcode, so the
//!   IR needs no table of its own and the printer stays trivial.
//! - Nothing here depends on the order registers were allocated: `ptx`
//!   numbers registers by first use, so lowering changes do not renumber
//!   unrelated code.

use super::target::Target;
use super::types::RegClass;

pub type RegId = u32;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Reg {
    pub id: RegId,
    pub class: RegClass,
}

#[derive(Clone, PartialEq, Debug)]
pub enum Operand {
    Reg(Reg),
    /// An immediate, already written in PTX syntax (`42`, `0f3F800000`).
    Imm(String),
    /// A symbol: a special register (`%tid.x`) or a variable name.
    Sym(String),
    /// `[base+offset]`.
    Addr(Box<Operand>, i64),
    /// `{a, b, c, d}`.
    Vec(Vec<Operand>),
    /// `_`, the sink operand.
    Sink,
    /// `a|b`: an instruction's two destinations (`elect.sync _|p`).
    Pair(Box<Operand>, Box<Operand>),
    /// `[map, {c0, c1}]`: a tensor map address and coordinates.
    TensorCoords(Box<Operand>, Vec<Operand>),
}

impl Operand {
    pub fn imm(v: impl std::fmt::Display) -> Operand {
        Operand::Imm(v.to_string())
    }
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Operand {
        Operand::Reg(r)
    }
}

#[derive(Clone, Debug)]
pub struct Inst {
    /// `@p` or `@!p`.
    pub guard: Option<(Reg, bool)>,
    pub op: String,
    pub args: Vec<Operand>,
}

/// A part of a `ptx!` template.
#[derive(Clone, PartialEq, Debug)]
pub enum Piece {
    /// Text as written, each `{{` and `}}` one brace.
    Text(String),
    /// `{d}`: the result's register.
    Dest,
    /// `{0}`, `{1}`, ...: an input's operand.
    Input(usize),
}

#[derive(Clone, Debug)]
pub enum Node {
    Inst(Inst),
    /// Inline PTX from `ptx!`: the template's text with `{d}`, `{0}`...
    /// replaced by the operands (`d` first, when present, then the inputs).
    Raw {
        template: Vec<Piece>,
        dest: Option<Operand>,
        inputs: Vec<Operand>,
    },
    Comment(String),
    /// Source position for `.loc` (emitted only with line info on).
    Loc {
        line: u32,
        col: u32,
    },
    If {
        cond: Reg,
        negate: bool,
        then: Vec<Node>,
        els: Vec<Node>,
    },
    Loop {
        id: u32,
        body: Vec<Node>,
        continuing: Vec<Node>,
    },
    Block {
        id: u32,
        body: Vec<Node>,
    },
    Break(u32),
    Continue(u32),
    ExitBlock(u32),
    Return,
    /// `trap`, with a note for the comment after it (a failed assertion's
    /// source, which the emulator reports).
    Trap(String),
}

#[derive(Clone, Debug)]
pub struct SharedDecl {
    pub name: String,
    pub align: u32,
    pub bytes: u64,
}

/// A `.const` array with its initializer: a `#[device] const` table read
/// at run time.
#[derive(Clone, Debug)]
pub struct TableDecl {
    pub name: String,
    /// PTX element type: `u32`, `f32` ...
    pub ptx: &'static str,
    /// Bytes per element, its alignment.
    pub align: u32,
    /// The elements, written in PTX syntax.
    pub values: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ptx: ParamTy,
}

/// How a kernel parameter is declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamTy {
    /// `.param .u64 name`, `.param .f32 name` ...
    Scalar(&'static str),
    /// `.param .align A .b8 name[size]`: a `u32x4`, a tensor map, a struct.
    Bytes { align: u64, size: u64 },
}

/// One kernel entry for one target and one specialisation.
#[derive(Clone, Debug)]
pub struct Function {
    pub entry: String,
    pub kernel: String,
    pub spec: String,
    pub target: Target,
    /// PTX ISA version (major*10 + minor).
    pub ptx_version: u32,
    pub params: Vec<Param>,
    pub regs: Vec<RegClass>,
    pub shared: Vec<SharedDecl>,
    pub tables: Vec<TableDecl>,
    /// Alignment of the dynamic shared block, when the kernel uses it.
    pub dynamic_shared: Option<u32>,
    pub launch_bounds: Option<(u32, Option<u32>)>,
    /// The kernel waits for the previous grid (`griddepcontrol.wait`), so it
    /// may be launched to overlap that grid's tail.
    pub programmatic: bool,
    /// Source file for `.file`, when line info is on.
    pub file: Option<String>,
    /// It has code that only builds with debug assertions have
    /// (`debug_assert!`, the column checks of 2-D shared arrays): the
    /// release build needs PTX of its own.
    pub debug_checks: bool,
    pub body: Vec<Node>,
}

impl Function {
    pub fn new_reg(&mut self, class: RegClass) -> Reg {
        let id = self.regs.len() as RegId;
        self.regs.push(class);
        Reg { id, class }
    }

    /// Whether a block may let the next kernel in the stream launch before
    /// the kernel before this one is complete: a path of a thread on which
    /// a `launch_dependents` or an exit comes before an unguarded
    /// `griddepcontrol.wait` (a wait inside an `if` counts after the `if`
    /// only when both branches wait; one inside a loop, or a block that a
    /// `break` may leave, not at all). Then the kernel launched after this
    /// one may run beside this one's predecessor too.
    pub fn may_trigger_before_wait(&self) -> bool {
        waits_on_every_path(&self.body, false).is_none_or(|waited| !waited)
    }
}

/// Whether a thread that runs `nodes` having waited (`waited`) has waited
/// at their end on every path; `None` if some path triggers (or ends the
/// thread) before waiting.
fn waits_on_every_path(nodes: &[Node], mut waited: bool) -> Option<bool> {
    for node in nodes {
        match node {
            Node::Inst(Inst { guard: None, op, .. }) if op == "griddepcontrol.wait" => waited = true,
            Node::If { then, els, .. } => {
                let then_waited = waits_on_every_path(then, waited)?;
                waited = then_waited && waits_on_every_path(els, waited)?;
            }
            Node::Loop { body, continuing, .. } => {
                waits_on_every_path(body, waited)?;
                waits_on_every_path(continuing, waited)?;
            }
            Node::Block { body, .. } => {
                let body_waited = waits_on_every_path(body, waited)?;
                waited = if body.iter().any(leaves) { waited } else { body_waited };
            }
            _ if triggers(node) && !waited => return None,
            _ => {}
        }
    }
    Some(waited)
}

/// Whether `node` may leave the block or loop around it early.
fn leaves(node: &Node) -> bool {
    match node {
        Node::Break(_) | Node::Continue(_) | Node::ExitBlock(_) => true,
        Node::If { then, els, .. } => then.iter().chain(els).any(leaves),
        Node::Loop { body, continuing, .. } => body.iter().chain(continuing).any(leaves),
        Node::Block { body, .. } => body.iter().any(leaves),
        _ => false,
    }
}

/// Whether `node` may execute `launch_dependents` or end the thread.
fn triggers(node: &Node) -> bool {
    match node {
        Node::Inst(i) => matches!(i.op.as_str(), "griddepcontrol.launch_dependents" | "exit" | "ret"),
        Node::Raw { template, .. } => template
            .iter()
            .any(|p| matches!(p, Piece::Text(t) if t.contains("launch_dependents") || t.contains("exit") || t.contains("ret"))),
        Node::Return => true,
        Node::If { then, els, .. } => then.iter().chain(els).any(triggers),
        Node::Loop { body, continuing, .. } => body.iter().chain(continuing).any(triggers),
        Node::Block { body, .. } => body.iter().any(triggers),
        Node::Comment(_)
        | Node::Loc { .. }
        | Node::Break(_)
        | Node::Continue(_)
        | Node::ExitBlock(_)
        | Node::Trap(_) => false,
    }
}
