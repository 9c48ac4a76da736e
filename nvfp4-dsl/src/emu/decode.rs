//! Syntax tree -> executable entry: shared-memory and parameter layout,
//! register numbering (with nested scopes), labels, and one decoded
//! [`Inst`] per instruction through the opcode table in `ops`.

use super::error::EmuError;
use super::inst::{Addr, Flow, Inst, Mods, Operand, Sreg, Ty};
use super::layout::{SHARED_BASE, const_address};
use super::origin::{Origin, origins};
use super::parse::{Arg, ConstDecl, EntryAst, Lit, Stmt, VarDecl, instructions};
use super::source::SourceMap;
use super::synccheck;
use std::collections::HashMap;

/// A kernel parameter's place in the parameter buffer.
#[derive(Clone, Debug)]
pub(crate) struct ParamInfo {
    pub name: String,
    pub offset: u32,
    pub bytes: u32,
}

/// A decoded kernel entry.
#[derive(Debug)]
pub(crate) struct Entry {
    pub name: String,
    pub params: Vec<ParamInfo>,
    pub param_bytes: u32,
    /// The instructions, then a sentinel that reports running past the end.
    pub insts: Vec<Inst>,
    /// Per instruction: PTX line and source text.
    pub lines: Vec<u32>,
    pub texts: Vec<String>,
    /// Per instruction: the Rust statements its PTX comments name.
    pub source: SourceMap,
    /// Per instruction: what its address was computed from.
    pub origins: Vec<Origin>,
    pub nregs: u32,
    pub npreds: u32,
    pub reg_names: Vec<String>,
    pub pred_names: Vec<String>,
    /// Static shared variables `[start, end)` in the shared window.
    pub regions: Vec<(u32, u32)>,
    /// Names of the static regions, then of the dynamic block.
    pub shared_names: Vec<String>,
    pub static_end: u32,
    pub dyn_base: Option<u32>,
    /// The module's `.const` variables, table `i` at const-space address
    /// `layout::const_address(i)`.
    pub tables: Vec<ConstTable>,
    pub maxntid: Option<(u32, u32, u32)>,
    pub reqntid: Option<(u32, u32, u32)>,
    pub minnctapersm: Option<u32>,
    pub maxnreg: Option<u32>,
    pub reqnctapercluster: Option<(u32, u32, u32)>,
    pub maxclusterrank: Option<u32>,
    pub explicitcluster: bool,
    /// Its blocks may communicate through global memory: it has atomics
    /// (`atom`, `red`) or `.volatile`, `.relaxed`, `.acquire`/`.release`
    /// loads or stores that may reach global memory, or bulk reductions.
    /// Its clusters run one after another.
    pub inter_block: bool,
}

/// Whether an instruction may let blocks communicate through global
/// memory (what `Entry::inter_block` says).
fn inter_block(op: &str) -> bool {
    let mut mods = op.split('.');
    let name = mods.next().unwrap_or_default();
    let shared = op.contains(".shared");
    match name {
        "atom" | "red" => !shared,
        "ld" | "st" => !shared && mods.any(|m| matches!(m, "volatile" | "relaxed" | "acquire" | "release")),
        "cp" => op.starts_with("cp.reduce"),
        _ => false,
    }
}

/// A `.const` variable's name and bytes.
#[derive(Debug)]
pub(crate) struct ConstTable {
    pub name: String,
    pub data: Vec<u8>,
}

/// How an opcode's decoder is called: the operands through `Dec`, the
/// modifiers through `Mods`.
pub(crate) type Decoder = fn(&Dec<'_>, &mut Mods<'_>) -> Result<Inst, String>;

#[derive(Clone, Copy, Debug)]
struct RegInfo {
    pred: bool,
    idx: u32,
    bits: u8,
    /// The declared type (`.b8`, `.u32`, ...), which some instructions
    /// check exactly.
    decl: &'static str,
}

/// The register types the emulator has, with their widths.
const REG_TYPES: [(&str, u8); 19] = [
    (".pred", 1),
    (".b8", 8),
    (".u8", 8),
    (".s8", 8),
    (".b16", 16),
    (".u16", 16),
    (".s16", 16),
    (".f16", 16),
    (".bf16", 16),
    (".b32", 32),
    (".u32", 32),
    (".s32", 32),
    (".f32", 32),
    (".f16x2", 32),
    (".bf16x2", 32),
    (".b64", 64),
    (".u64", 64),
    (".s64", 64),
    (".f64", 64),
];

#[derive(Default)]
struct Scope {
    exact: HashMap<String, RegInfo>,
    /// `%r<N>` declarations: prefix, count, first register.
    ranges: Vec<(String, u32, RegInfo)>,
}

impl Scope {
    /// The name that declaring `name` (`name<count>`) here would define a
    /// second time, as ptxas counts them: `%r1` is one of `%r<4>`
    /// (written `%r01` too).
    fn clash(&self, name: &str, count: Option<u32>) -> Option<String> {
        let in_range = |n: &str, prefix: &str, count: u32| {
            n.strip_prefix(prefix).is_some_and(|d| {
                !d.is_empty()
                    && d.bytes().all(|b| b.is_ascii_digit())
                    && d.parse::<u64>().is_ok_and(|k| k < u64::from(count))
            })
        };
        match count {
            None => (self.exact.contains_key(name) || self.ranges.iter().any(|(p, c, _)| in_range(name, p, *c)))
                .then(|| name.to_string()),
            Some(c) if self.ranges.iter().any(|(p, ..)| p == name) => Some(format!("{name}<{c}>")),
            Some(c) => self.exact.keys().find(|n| in_range(n, name, c)).cloned(),
        }
    }
}

/// Name resolution while decoding one entry.
pub(crate) struct Names {
    scopes: Vec<Scope>,
    labels: HashMap<String, u32>,
    shared: HashMap<String, u32>,
    /// `.const` variables' const-space addresses.
    consts: HashMap<String, u64>,
    params: HashMap<String, (u32, u32)>,
    nregs: u32,
    npreds: u32,
    reg_names: Vec<String>,
    pred_names: Vec<String>,
}

impl Names {
    fn lookup(&self, name: &str) -> Option<RegInfo> {
        for s in self.scopes.iter().rev() {
            if let Some(r) = s.exact.get(name) {
                return Some(*r);
            }
            for (prefix, count, base) in s.ranges.iter().rev() {
                if let Some(num) = name.strip_prefix(prefix.as_str())
                    && !num.is_empty()
                    && num.bytes().all(|b| b.is_ascii_digit())
                    && (num == "0" || !num.starts_with('0'))
                    && let Ok(n) = num.parse::<u32>()
                    && n < *count
                {
                    return Some(RegInfo {
                        idx: base.idx + n,
                        ..*base
                    });
                }
            }
        }
        None
    }

    fn declare(&mut self, ty: &str, name: &str, count: Option<u32>) -> Result<(), String> {
        let Some(&(decl, bits)) = REG_TYPES.iter().find(|(t, _)| *t == ty) else {
            return Err(format!("registers of type `{ty}` are not supported by the emulator"));
        };
        if let Some(twice) = self.scopes.last().expect("a scope").clash(name, count) {
            return Err(format!(
                "`{twice}` is declared twice in this scope (ptxas: `Duplicate definition of variable`); declare each register once per `{{ }}` block: a `ptx!` template used more than once declares its temporaries in a block of its own, `{{{{ .reg .b32 t; .. }}}}`"
            ));
        }
        let pred = decl == ".pred";
        let n = count.unwrap_or(1);
        let idx = if pred { self.npreds } else { self.nregs };
        let info = RegInfo { pred, idx, bits, decl };
        let names = if pred {
            &mut self.pred_names
        } else {
            &mut self.reg_names
        };
        match count {
            Some(c) => names.extend((0..c).map(|i| format!("{name}{i}"))),
            None => names.push(name.to_string()),
        }
        if pred {
            self.npreds += n;
        } else {
            self.nregs += n;
        }
        if self.nregs > 1 << 20 || self.npreds > 1 << 20 {
            return Err("too many registers".into());
        }
        let scope = self.scopes.last_mut().expect("a scope");
        match count {
            Some(c) => scope.ranges.push((name.to_string(), c, info)),
            None => {
                scope.exact.insert(name.to_string(), info);
            }
        }
        Ok(())
    }
}

/// What a decoder sees: the operands as written and name resolution.
pub(crate) struct Dec<'a> {
    pub args: &'a [Arg],
    names: &'a Names,
}

type R<T> = Result<T, String>;

/// Converts a literal to the bits of an instruction type.
pub(crate) fn imm_bits(l: Lit, ty: Ty) -> R<u64> {
    use super::fp;
    let f = ty.fmt();
    Ok(match (l, ty) {
        (Lit::Int(v), Ty::Pred) => u64::from(v != 0),
        (Lit::Int(v), _) if f.is_none() || matches!(ty, Ty::F16 | Ty::Bf16 | Ty::F16x2 | Ty::Bf16x2) => {
            if v < i128::from(i64::MIN) || v > i128::from(u64::MAX) {
                return Err(format!("the constant {v} does not fit in 64 bits"));
            }
            (v as u64) & ty.mask()
        }
        (Lit::Int(v), Ty::F32) => u64::from((v as f32).to_bits()),
        (Lit::Int(v), Ty::F64) => (v as f64).to_bits(),
        (Lit::F32(b), Ty::F32) => u64::from(b),
        (Lit::F64(b), Ty::F64) => b,
        (Lit::F32(b), Ty::F64) => f64::from(f32::from_bits(b)).to_bits(),
        (Lit::F64(b), Ty::F32) => fp::from_f64(f64::from_bits(b), fp::F32, fp::Rnd::Rn),
        (Lit::Dec(v), Ty::F32) => fp::from_f64(v, fp::F32, fp::Rnd::Rn),
        (Lit::Dec(v), Ty::F64) => v.to_bits(),
        (Lit::F32(b), _) if ty.bits() == 32 => u64::from(b),
        (Lit::F64(b), _) if ty.bits() == 64 => b,
        (Lit::F32(b), Ty::F16 | Ty::Bf16) => fp::from_f64(f64::from(f32::from_bits(b)), f.expect("float"), fp::Rnd::Rn),
        (Lit::Dec(v), Ty::F16 | Ty::Bf16) => fp::from_f64(v, f.expect("float"), fp::Rnd::Rn),
        (l, t) => return Err(format!("the constant {l:?} cannot be used as a .{t:?} operand")),
    })
}

impl Dec<'_> {
    /// Checks the operand count.
    pub fn count(&self, n: usize) -> R<()> {
        if self.args.len() == n {
            Ok(())
        } else {
            Err(format!("expected {n} operands, found {}", self.args.len()))
        }
    }

    /// Checks the operand count is in `lo..=hi`.
    pub fn count_in(&self, lo: usize, hi: usize) -> R<()> {
        if (lo..=hi).contains(&self.args.len()) {
            Ok(())
        } else {
            Err(format!("expected {lo} to {hi} operands, found {}", self.args.len()))
        }
    }

    /// The declared type of the register named `name` (`.b8`, `.u32`, ...).
    pub fn reg_type(&self, name: &str) -> Option<&'static str> {
        self.names.lookup(name).map(|r| r.decl)
    }

    pub fn arg(&self, i: usize) -> R<&Arg> {
        self.args.get(i).ok_or_else(|| format!("missing operand {}", i + 1))
    }

    /// A source operand of type `ty`: register, predicate (`{!}%p` when
    /// `ty` is `.pred`), special register, immediate or the address of a
    /// shared variable.
    pub fn src(&self, i: usize, ty: Ty) -> R<Operand> {
        self.src_arg(self.arg(i)?, ty)
    }

    pub fn src_arg(&self, a: &Arg, ty: Ty) -> R<Operand> {
        match a {
            Arg::Name(n) => {
                if let Some(r) = self.names.lookup(n) {
                    return Ok(if r.pred {
                        Operand::Pred { idx: r.idx, neg: false }
                    } else {
                        Operand::Reg {
                            idx: r.idx,
                            bits: r.bits,
                        }
                    });
                }
                if let Some(s) = Sreg::parse(n) {
                    return Ok(Operand::Sreg(s));
                }
                if let Some(&addr) = self.names.shared.get(n) {
                    return Ok(Operand::Imm(u64::from(addr)));
                }
                if let Some(&addr) = self.names.consts.get(n) {
                    return Ok(Operand::Imm(addr));
                }
                if let Some(&(off, _)) = self.names.params.get(n) {
                    // The parameter's address in the .param space (its
                    // offset in the buffer); `cvta.param` makes it generic.
                    return Ok(Operand::Imm(u64::from(off)));
                }
                Err(format!("unknown register or symbol `{n}`"))
            }
            Arg::Off(n, off) => match self.names.shared.get(n) {
                Some(&addr) => Ok(Operand::Imm((i64::from(addr) + off) as u64)),
                None => Err(format!("`{n}+{off}`: `{n}` is not a shared variable")),
            },
            Arg::Lit(l) => Ok(Operand::Imm(imm_bits(*l, ty)?)),
            Arg::Not(inner) => match self.src_arg(inner, ty)? {
                Operand::Pred { idx, neg } => Ok(Operand::Pred { idx, neg: !neg }),
                _ => Err("`!` applies to predicate registers only".into()),
            },
            Arg::Sink => Err("`_` cannot be a source operand".into()),
            other => Err(format!("expected a register or constant, found {other:?}")),
        }
    }

    /// A register source (no immediates).
    pub fn reg_src(&self, i: usize) -> R<Operand> {
        match self.src(i, Ty::B64)? {
            op @ Operand::Reg { .. } => Ok(op),
            _ => Err(format!("operand {} must be a register", i + 1)),
        }
    }

    /// A destination: a register, a predicate register or `_`.
    pub fn dst(&self, i: usize) -> R<Operand> {
        self.dst_arg(self.arg(i)?)
    }

    pub fn dst_arg(&self, a: &Arg) -> R<Operand> {
        match a {
            Arg::Sink => Ok(Operand::Sink),
            Arg::Name(n) => match self.names.lookup(n) {
                Some(r) if r.pred => Ok(Operand::Pred { idx: r.idx, neg: false }),
                Some(r) => Ok(Operand::Reg {
                    idx: r.idx,
                    bits: r.bits,
                }),
                None if Sreg::parse(n).is_some() => Err(format!("special register `{n}` is read-only")),
                None => Err(format!("unknown register `{n}`")),
            },
            other => Err(format!("expected a destination register, found {other:?}")),
        }
    }

    /// A general-register destination (or `_`).
    pub fn reg_dst(&self, i: usize) -> R<Operand> {
        match self.dst(i)? {
            Operand::Pred { .. } => Err(format!("operand {} must not be a predicate", i + 1)),
            d => Ok(d),
        }
    }

    /// A predicate destination (or `_`).
    pub fn pred_dst_arg(&self, a: &Arg) -> R<Operand> {
        match self.dst_arg(a)? {
            d @ (Operand::Pred { .. } | Operand::Sink) => Ok(d),
            _ => Err("expected a predicate register".into()),
        }
    }

    /// The elements of a `{a, b, ...}` operand.
    pub fn vec(&self, i: usize) -> R<&[Arg]> {
        match self.arg(i)? {
            Arg::Vec(v) => Ok(v),
            other => Err(format!("expected a vector `{{...}}`, found {other:?}")),
        }
    }

    /// A branch target.
    pub fn label(&self, i: usize) -> R<u32> {
        match self.arg(i)? {
            Arg::Name(n) => self
                .names
                .labels
                .get(n)
                .copied()
                .ok_or_else(|| format!("unknown label `{n}`")),
            other => Err(format!("expected a label, found {other:?}")),
        }
    }

    /// An address operand `[...]` in state space `space` (`shared`,
    /// `param`, `global`, or generic).
    pub fn addr(&self, i: usize, param: bool) -> R<Addr> {
        let Arg::Addr(base, off) = self.arg(i)? else {
            return Err(format!("operand {} must be an address `[...]`", i + 1));
        };
        self.addr_parts(base.as_deref(), *off, param)
    }

    /// A tensor address operand `[map, {c0, c1, ...}]`: the map's address
    /// and the coordinates (32-bit registers or constants).
    pub fn tensor_addr(&self, i: usize) -> R<(Addr, Vec<Operand>)> {
        let Arg::Tensor(base, off, coords) = self.arg(i)? else {
            return Err(format!(
                "operand {} must be a tensor address `[map, {{c0, c1}}]`",
                i + 1
            ));
        };
        let a = self.addr_parts(base.as_deref(), *off, false)?;
        let c = coords.iter().map(|x| self.src_arg(x, Ty::S32)).collect::<R<Vec<_>>>()?;
        Ok((a, c))
    }

    fn addr_parts(&self, base: Option<&Arg>, off: i64, param: bool) -> R<Addr> {
        let off = &off;
        let mut a = Addr {
            base: Operand::None,
            off: *off,
            param: (0, 0),
        };
        match base {
            None => {}
            Some(Arg::Name(n)) => {
                if let Some(&(o, b)) = self.names.params.get(n) {
                    if !param {
                        return Err(format!("`{n}` is a kernel parameter; read it with `ld.param`"));
                    }
                    a.off += i64::from(o);
                    a.param = (o, b);
                } else if let Some(&s) = self.names.shared.get(n) {
                    a.off += i64::from(s);
                } else if let Some(&c) = self.names.consts.get(n) {
                    a.off = a.off.wrapping_add(c as i64);
                } else {
                    match self.names.lookup(n) {
                        Some(r) if !r.pred => {
                            a.base = Operand::Reg {
                                idx: r.idx,
                                bits: r.bits,
                            };
                            if param {
                                // A .param-space address in a register: any
                                // byte of the parameter buffer.
                                a.param = (0, u32::MAX);
                            }
                        }
                        _ => return Err(format!("unknown address base `{n}`")),
                    }
                }
            }
            Some(other) => return Err(format!("bad address base {other:?}")),
        }
        if param && a.param == (0, 0) {
            return Err("`ld.param` needs a parameter name".into());
        }
        Ok(a)
    }
}

fn past_end(_: &mut super::ctx::Ctx<'_>, _: &Inst) -> Result<Flow, super::inst::Fault> {
    Err(super::inst::Fault::new(
        "execution ran past the end of the kernel (no `ret` or `exit` on this path)",
    ))
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Lays out static shared variables from `SHARED_BASE`, then the dynamic
/// block at the largest alignment any `.extern` declaration asks for.
fn layout_shared(decls: &[VarDecl], names: &mut Names, entry: &mut Entry) -> Result<(), EmuError> {
    let mut at = u64::from(SHARED_BASE);
    let mut dyn_align = 0u64;
    let mut dyn_names = Vec::new();
    for d in decls {
        if names.shared.contains_key(&d.name) && d.bytes.is_some() {
            return Err(EmuError::at_line(
                d.line,
                &d.name,
                format!("shared variable `{}` is declared twice", d.name),
            ));
        }
        match d.bytes {
            Some(b) => {
                at = align_up(at, u64::from(d.align));
                names.shared.insert(d.name.clone(), at as u32);
                entry.regions.push((at as u32, (at + b) as u32));
                entry.shared_names.push(d.name.clone());
                at += b;
            }
            None => {
                dyn_align = dyn_align.max(u64::from(d.align));
                dyn_names.push(d.name.clone());
            }
        }
        if at > 1 << 24 {
            return Err(EmuError::at_line(d.line, &d.name, "static shared memory is too large"));
        }
    }
    entry.static_end = at as u32;
    if !dyn_names.is_empty() {
        let base = align_up(at, dyn_align.max(16)) as u32;
        for n in &dyn_names {
            names.shared.insert(n.clone(), base);
        }
        entry.dyn_base = Some(base);
        entry.shared_names.push(dyn_names.join("/"));
    }
    Ok(())
}

/// The bytes of the module's `.const` variables, and their addresses.
fn layout_consts(decls: &[ConstDecl], names: &mut Names, entry: &mut Entry) -> Result<(), EmuError> {
    let mut total = 0u64;
    for (i, d) in decls.iter().enumerate() {
        let fail = |m: String| EmuError::at_line(d.line, &d.name, m);
        let ty = Ty::parse(&d.ty).ok_or_else(|| fail(format!("`.{}` is not a `.const` element type", d.ty)))?;
        let elem = u64::from(ty.bits() / 8);
        total = total.saturating_add(d.count.saturating_mul(elem));
        if total > 64 * 1024 {
            return Err(fail(
                "the module's `.const` variables exceed the 64 KiB of constant memory".into(),
            ));
        }
        if names.consts.insert(d.name.clone(), const_address(i)).is_some() {
            return Err(fail(format!("`.const` variable `{}` is declared twice", d.name)));
        }
        let mut data = vec![0u8; (d.count * elem) as usize];
        for (k, v) in d.values.iter().enumerate() {
            let bits = imm_bits(*v, ty).map_err(fail)?;
            let at = k * elem as usize;
            data[at..at + elem as usize].copy_from_slice(&bits.to_le_bytes()[..elem as usize]);
        }
        entry.tables.push(ConstTable {
            name: d.name.clone(),
            data,
        });
    }
    Ok(())
}

/// Builds an executable entry.
/// The parameters' offsets in the parameter space, each at its
/// alignment, in declaration order.
fn layout_params(ast: &EntryAst, names: &mut Names, entry: &mut Entry) {
    let mut off = 0u32;
    for p in &ast.params {
        off = off.div_ceil(p.align) * p.align;
        names.params.insert(p.name.clone(), (off, p.bytes));
        entry.params.push(ParamInfo {
            name: p.name.clone(),
            offset: off,
            bytes: p.bytes,
        });
        off += p.bytes;
    }
    entry.param_bytes = off;
}

/// Each label's target, the index of the instruction after it; the line
/// and name of a label defined twice, if one is.
fn label_targets(ast: &EntryAst, names: &mut Names) -> Option<(u32, String)> {
    let mut n = 0u32;
    for s in &ast.body {
        match s {
            Stmt::Inst(_) => n += 1,
            Stmt::Label { line, name } if names.labels.insert(name.clone(), n).is_some() => {
                return Some((*line, name.clone()));
            }
            _ => {}
        }
    }
    None
}

pub(crate) fn build(ast: &EntryAst, lines: &[&str]) -> Result<Entry, EmuError> {
    let text_of = |from: u32, to: u32| -> String {
        let (a, b) = (from as usize - 1, (to as usize).min(lines.len()));
        lines
            .get(a..b)
            .map(|l| l.iter().map(|x| x.trim()).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    let mut entry = Entry {
        name: ast.name.clone(),
        params: Vec::new(),
        param_bytes: 0,
        insts: Vec::new(),
        lines: Vec::new(),
        texts: Vec::new(),
        source: SourceMap::default(),
        origins: Vec::new(),
        nregs: 0,
        npreds: 0,
        reg_names: Vec::new(),
        pred_names: Vec::new(),
        regions: Vec::new(),
        shared_names: Vec::new(),
        static_end: SHARED_BASE,
        dyn_base: None,
        tables: Vec::new(),
        maxntid: ast.maxntid,
        reqntid: ast.reqntid,
        minnctapersm: ast.minnctapersm,
        maxnreg: ast.maxnreg,
        reqnctapercluster: ast.reqnctapercluster,
        maxclusterrank: ast.maxclusterrank,
        explicitcluster: ast.explicitcluster,
        inter_block: false,
    };
    let mut names = Names {
        scopes: vec![Scope::default()],
        labels: HashMap::new(),
        shared: HashMap::new(),
        consts: HashMap::new(),
        params: HashMap::new(),
        nregs: 0,
        npreds: 0,
        reg_names: Vec::new(),
        pred_names: Vec::new(),
    };
    // An error names the Rust statements of its line too (a `ptx!`'s).
    let in_kernel = |e: EmuError| {
        let line = e.line().unwrap_or(ast.line);
        e.in_kernel(&ast.name)
            .with_source(SourceMap::build(lines, ast.line, &[line]).of(0))
    };
    // Shared memory: module-scope declarations, then the body's.
    let mut decls = ast.shared.clone();
    decls.extend(ast.body.iter().filter_map(|s| match s {
        Stmt::Shared(d) => Some(d.clone()),
        _ => None,
    }));
    layout_shared(&decls, &mut names, &mut entry).map_err(in_kernel)?;
    layout_consts(&ast.consts, &mut names, &mut entry).map_err(in_kernel)?;
    layout_params(ast, &mut names, &mut entry);
    if let Some((line, name)) = label_targets(ast, &mut names) {
        return Err(in_kernel(EmuError::at_line(
            line,
            &text_of(line, line),
            format!("label `{name}` is defined twice"),
        )));
    }
    // Instructions.
    for s in &ast.body {
        match s {
            Stmt::Reg { line, ty, names: regs } => {
                for (name, count) in regs {
                    names
                        .declare(ty, name, *count)
                        .map_err(|m| in_kernel(EmuError::at_line(*line, &text_of(*line, *line), m)))?;
                }
            }
            Stmt::Open => names.scopes.push(Scope::default()),
            Stmt::Close => {
                names.scopes.pop();
                if names.scopes.is_empty() {
                    names.scopes.push(Scope::default());
                }
            }
            Stmt::Shared(_) | Stmt::Label { .. } => {}
            Stmt::Inst(i) => {
                let text = text_of(i.line, i.end_line);
                let fail = |m: String| in_kernel(EmuError::at_line(i.line, &text, m));
                let (name, mut mods) = Mods::new(&i.op);
                let decoder = super::ops::lookup(name)
                    .ok_or_else(|| fail(format!("unknown or unsupported instruction `{}`", i.op)))?;
                let dec = Dec {
                    args: &i.args,
                    names: &names,
                };
                let mut inst = decoder(&dec, &mut mods).map_err(|m| fail(format!("`{}`: {m}", i.op)))?;
                mods.done().map_err(fail)?;
                if synccheck::is_aligned(&i.op) {
                    inst.aligned = inst.exec;
                    inst.exec = if synccheck::is_cta_barrier(&i.op) {
                        synccheck::exec_aligned_barrier
                    } else {
                        synccheck::exec_aligned
                    };
                }
                if let Some((g, neg)) = &i.guard {
                    match names.lookup(g) {
                        Some(r) if r.pred => {
                            inst.guard = r.idx;
                            inst.guard_neg = *neg;
                        }
                        _ => return Err(fail(format!("guard `{g}` is not a predicate register"))),
                    }
                }
                entry.inter_block |= inter_block(&i.op);
                entry.insts.push(inst);
                entry.lines.push(i.line);
                entry.texts.push(text);
            }
        }
    }
    entry.insts.push(Inst::new(past_end));
    entry.lines.push(ast.close_line);
    entry.texts.push("}".into());
    entry.source = SourceMap::build(lines, ast.line, &entry.lines);
    let insts = instructions(&ast.body);
    let statics = entry.regions.len();
    let symbol = |name: &str| {
        if let Some(k) = entry.shared_names[..statics].iter().position(|n| n == name) {
            return Some(Origin::Shared(k as u16));
        }
        if names.shared.contains_key(name) {
            return Some(Origin::Shared(statics as u16));
        }
        let p = entry.params.iter().position(|p| p.name == name && p.bytes == 8)?;
        Some(Origin::Param(p as u16))
    };
    entry.origins = origins(&insts, &symbol);
    entry.origins.push(Origin::None);
    entry.nregs = names.nregs;
    entry.npreds = names.npreds;
    entry.reg_names = names.reg_names;
    entry.pred_names = names.pred_names;
    Ok(entry)
}
