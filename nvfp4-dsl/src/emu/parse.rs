//! PTX text -> tokens -> a syntax tree of module directives, entries and
//! statements. Nothing here knows what an instruction means; `decode`
//! resolves names and builds executable instructions.

use super::error::EmuError;

mod consts;
mod lex;

pub(crate) use consts::ConstDecl;
use consts::const_decl;
pub(crate) use lex::{Lit, Tok, Token, lex, parse_num};

/// An instruction operand as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    /// A register, special register, variable or label.
    Name(String),
    Lit(Lit),
    /// `_`.
    Sink,
    /// `!%p`.
    Not(Box<Arg>),
    /// `[base]`, `[base+off]`, `[off]`.
    Addr(Option<Box<Arg>>, i64),
    /// `[map, {c0, c1, ...}]`: a tensor-map address and coordinates.
    Tensor(Option<Box<Arg>>, i64, Vec<Arg>),
    /// `{a, b, ...}`.
    Vec(Vec<Arg>),
    /// `d|p`.
    Pair(Box<Arg>, Box<Arg>),
    /// `var+off` outside brackets.
    Off(String, i64),
}

/// A `.shared` variable.
#[derive(Clone, Debug)]
pub(crate) struct VarDecl {
    pub name: String,
    pub align: u32,
    /// Bytes; `None` for an unsized array (`.extern .shared ... x[]`).
    pub bytes: Option<u64>,
    pub line: u32,
}

/// A kernel parameter.
#[derive(Clone, Debug)]
pub(crate) struct ParamDecl {
    pub name: String,
    pub align: u32,
    pub bytes: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct InstAst {
    pub line: u32,
    pub end_line: u32,
    pub guard: Option<(String, bool)>,
    pub op: String,
    pub args: Vec<Arg>,
}

/// The instructions of an entry's body, in order.
pub(crate) fn instructions(body: &[Stmt]) -> Vec<&InstAst> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::Inst(i) => Some(i),
            _ => None,
        })
        .collect()
}

#[derive(Clone, Debug)]
pub(crate) enum Stmt {
    /// `.reg .type names;`: each name with the count of `name<N>`.
    Reg {
        line: u32,
        ty: String,
        names: Vec<(String, Option<u32>)>,
    },
    Shared(VarDecl),
    Label {
        line: u32,
        name: String,
    },
    Open,
    Close,
    Inst(InstAst),
}

#[derive(Clone, Debug)]
pub(crate) struct EntryAst {
    pub name: String,
    pub line: u32,
    pub close_line: u32,
    pub params: Vec<ParamDecl>,
    pub maxntid: Option<(u32, u32, u32)>,
    pub reqntid: Option<(u32, u32, u32)>,
    /// `.minnctapersm n`.
    pub minnctapersm: Option<u32>,
    /// `.maxnreg n`.
    pub maxnreg: Option<u32>,
    /// `.reqnctapercluster x, y, z`.
    pub reqnctapercluster: Option<(u32, u32, u32)>,
    /// `.maxclusterrank n`.
    pub maxclusterrank: Option<u32>,
    /// `.explicitcluster`.
    pub explicitcluster: bool,
    pub body: Vec<Stmt>,
    /// Module-scope `.shared` variables declared before this entry.
    pub shared: Vec<VarDecl>,
    /// Module-scope `.const` variables declared before this entry.
    pub consts: Vec<ConstDecl>,
}

struct P<'a> {
    toks: &'a [Token],
    i: usize,
    lines: &'a [&'a str],
}

type R<T> = Result<T, EmuError>;

impl<'a> P<'a> {
    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.i).map(|t| &t.t)
    }
    fn peek_at(&self, k: usize) -> Option<&'a Tok> {
        self.toks.get(self.i + k).map(|t| &t.t)
    }
    fn line(&self) -> u32 {
        self.toks.get(self.i).or_else(|| self.toks.last()).map_or(1, |t| t.line)
    }
    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        let l = self.line();
        let text = self.lines.get(l as usize - 1).copied().unwrap_or("");
        Err(EmuError::at_line(l, text, msg))
    }
    fn next(&mut self) -> Option<&'a Tok> {
        let t = self.peek();
        self.i += 1;
        t
    }
    fn is_p(&self, c: char) -> bool {
        self.peek() == Some(&Tok::P(c))
    }
    fn eat_p(&mut self, c: char) -> bool {
        if self.is_p(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect_p(&mut self, c: char) -> R<()> {
        if self.eat_p(c) {
            Ok(())
        } else {
            self.err(format!("expected `{c}`"))
        }
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x == w)
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if self.is_word(w) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self) -> R<String> {
        match self.next() {
            Some(Tok::Word(w)) => Ok(w.clone()),
            _ => {
                self.i -= 1;
                self.err("expected a name")
            }
        }
    }
    fn uint(&mut self) -> R<u64> {
        match self.next() {
            Some(Tok::Num(n)) => match parse_num(n) {
                Some(Lit::Int(v)) if (0..=u64::MAX as i128).contains(&v) => Ok(v as u64),
                _ => {
                    self.i -= 1;
                    self.err(format!("expected an unsigned integer, found `{n}`"))
                }
            },
            _ => {
                self.i -= 1;
                self.err("expected an unsigned integer")
            }
        }
    }
    /// Skips the rest of the current line (directives without `;`).
    fn skip_line(&mut self) {
        let l = self.line();
        while self.toks.get(self.i).is_some_and(|t| t.line == l) {
            self.i += 1;
        }
    }
    fn skip_to_semi(&mut self) -> R<()> {
        while let Some(t) = self.next() {
            if *t == Tok::P(';') {
                return Ok(());
            }
        }
        self.err("expected `;`")
    }
}

/// Bytes of a PTX fundamental type name (`.b8`, `.u32`, `.f16x2`, ...).
pub(crate) fn type_bytes(t: &str) -> Option<u32> {
    Some(match t {
        ".b8" | ".u8" | ".s8" | ".pred" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// Parses a whole module.
pub(crate) fn parse_module(src: &str) -> R<Vec<EntryAst>> {
    let toks = lex(src)?;
    let lines: Vec<&str> = src.lines().collect();
    let mut p = P {
        toks: &toks,
        i: 0,
        lines: &lines,
    };
    let mut shared = Vec::new();
    let mut consts = Vec::new();
    let mut entries = Vec::new();
    while let Some(t) = p.peek() {
        let Tok::Word(w) = t else {
            return p.err("expected a directive");
        };
        match w.as_str() {
            ".version" | ".target" | ".address_size" | ".file" | ".loc" => p.skip_line(),
            ".pragma" => p.skip_to_semi()?,
            ".visible" | ".weak" | ".extern" => {
                let ext = w == ".extern";
                p.i += 1;
                if p.is_word(".shared") {
                    shared.push(var_decl(&mut p, ext)?);
                } else if !p.is_word(".entry") && !p.is_word(".func") && !p.is_word(".visible") {
                    return p.err(format!("`{w}` must be followed by `.entry` or `.shared` here"));
                }
            }
            ".shared" => shared.push(var_decl(&mut p, false)?),
            ".const" => consts.push(const_decl(&mut p)?),
            ".entry" => {
                let e = entry(&mut p, &shared, &consts)?;
                entries.push(e);
            }
            ".func" => return p.err("device functions (`.func`) are not supported by the emulator"),
            ".global" | ".local" => {
                return p.err(format!(
                    "module-scope `{w}` variables are not supported by the emulator"
                ));
            }
            other => return p.err(format!("unknown or unsupported directive `{other}`")),
        }
    }
    Ok(entries)
}

/// `.shared {.align N} .type name{[N]...};`
fn var_decl(p: &mut P<'_>, ext: bool) -> R<VarDecl> {
    let line = p.line();
    p.word()?; // .shared
    let mut align = None;
    let elem = loop {
        if p.eat_word(".align") {
            align = Some(p.uint()? as u32);
        } else if p.eat_word(".shared::cta") {
        } else if let Some(Tok::Word(w)) = p.peek()
            && let Some(b) = type_bytes(w)
        {
            p.i += 1;
            break b;
        } else {
            return p.err("expected `.align` or a type in a `.shared` declaration");
        }
    };
    let name = p.word()?;
    let mut bytes = Some(u64::from(elem));
    while p.eat_p('[') {
        if p.eat_p(']') {
            bytes = None;
            continue;
        }
        let n = p.uint()?;
        p.expect_p(']')?;
        bytes = bytes.map(|b| b * n);
    }
    if p.is_p('=') {
        return p.err("initialised shared variables are not allowed");
    }
    p.expect_p(';')?;
    if bytes.is_none() && !ext {
        return p.err("an unsized shared array must be declared `.extern`");
    }
    Ok(VarDecl {
        name,
        align: align.unwrap_or(elem).max(1),
        bytes,
        line,
    })
}

fn dims3(p: &mut P<'_>) -> R<(u32, u32, u32)> {
    let x = p.uint()? as u32;
    let mut d = (x, 1, 1);
    if p.eat_p(',') {
        d.1 = p.uint()? as u32;
        if p.eat_p(',') {
            d.2 = p.uint()? as u32;
        }
    }
    Ok(d)
}

fn entry(p: &mut P<'_>, shared: &[VarDecl], consts: &[ConstDecl]) -> R<EntryAst> {
    let line = p.line();
    p.word()?; // .entry
    let name = p.word()?;
    let params = entry_params(p)?;
    let mut maxntid = None;
    let mut reqntid = None;
    let mut minnctapersm = None;
    let mut maxnreg = None;
    let mut reqnctapercluster = None;
    let mut maxclusterrank = None;
    let mut explicitcluster = false;
    loop {
        match p.peek() {
            Some(Tok::P('{')) => break,
            Some(Tok::Word(w)) => {
                let w = w.clone();
                p.i += 1;
                match w.as_str() {
                    ".maxntid" => maxntid = Some(dims3(p)?),
                    ".reqntid" => reqntid = Some(dims3(p)?),
                    ".minnctapersm" => minnctapersm = Some(p.uint()? as u32),
                    ".maxnreg" => maxnreg = Some(p.uint()? as u32),
                    ".maxclusterrank" => maxclusterrank = Some(p.uint()? as u32),
                    ".reqnctapercluster" => reqnctapercluster = Some(dims3(p)?),
                    ".explicitcluster" => explicitcluster = true,
                    ".noreturn" => {}
                    ".pragma" => p.skip_to_semi()?,
                    other => return p.err(format!("unknown entry directive `{other}`")),
                }
            }
            _ => return p.err("expected `{` to open the kernel body"),
        }
    }
    let (body, close_line) = entry_body(p)?;
    Ok(EntryAst {
        name,
        line,
        close_line,
        params,
        maxntid,
        reqntid,
        minnctapersm,
        maxnreg,
        reqnctapercluster,
        maxclusterrank,
        explicitcluster,
        body,
        shared: shared.to_vec(),
        consts: consts.to_vec(),
    })
}

/// An entry's parameter list: `(.param .u64 .ptr.global.align 16 x, ..)`
/// (none without parentheses).
fn entry_params(p: &mut P<'_>) -> R<Vec<ParamDecl>> {
    let mut params = Vec::new();
    if p.eat_p('(') {
        while !p.eat_p(')') {
            if !p.eat_word(".param") {
                return p.err("expected `.param`");
            }
            let mut align = None;
            let mut elem = None;
            loop {
                if p.eat_word(".align") {
                    align = Some(p.uint()? as u32);
                } else if p.eat_word(".ptr") {
                    // `.ptr.space.align N` attributes carry no semantics here.
                    while let Some(Tok::Word(w)) = p.peek() {
                        if w == ".align" {
                            p.i += 1;
                            p.uint()?;
                        } else if w.starts_with('.') && type_bytes(w).is_none() {
                            p.i += 1;
                        } else {
                            break;
                        }
                    }
                } else if let Some(Tok::Word(w)) = p.peek()
                    && let Some(b) = type_bytes(w)
                {
                    elem = Some(b);
                    p.i += 1;
                } else {
                    break;
                }
            }
            let Some(elem) = elem else {
                return p.err("expected a parameter type");
            };
            let pname = p.word()?;
            let mut bytes = elem;
            while p.eat_p('[') {
                let n = p.uint()? as u32;
                p.expect_p(']')?;
                bytes *= n;
            }
            params.push(ParamDecl {
                name: pname,
                align: align.unwrap_or(elem).max(1),
                bytes,
            });
            if !p.eat_p(',') && !p.is_p(')') {
                return p.err("expected `,` or `)` after a parameter");
            }
        }
    }
    Ok(params)
}

/// An entry's body, `{ .. }`: its statements and the closing brace's line.
fn entry_body(p: &mut P<'_>) -> R<(Vec<Stmt>, u32)> {
    p.expect_p('{')?;
    let mut body = Vec::new();
    let mut depth = 1;
    loop {
        let Some(t) = p.peek() else {
            return p.err("the kernel body is not closed");
        };
        match t {
            Tok::P('{') => {
                p.i += 1;
                depth += 1;
                body.push(Stmt::Open);
            }
            Tok::P('}') => {
                let l = p.line();
                p.i += 1;
                depth -= 1;
                if depth == 0 {
                    return Ok((body, l));
                }
                body.push(Stmt::Close);
            }
            Tok::Word(w) if w.starts_with('.') => {
                let l = p.line();
                match w.as_str() {
                    ".reg" => {
                        p.i += 1;
                        body.push(reg_decl(p, l)?);
                    }
                    ".shared" => body.push(Stmt::Shared(var_decl(p, false)?)),
                    ".loc" | ".file" => p.skip_line(),
                    ".pragma" => p.skip_to_semi()?,
                    other => return p.err(format!("unsupported directive `{other}` in a kernel body")),
                }
            }
            Tok::Word(w) if p.peek_at(1) == Some(&Tok::P(':')) => {
                let name = w.clone();
                let l = p.line();
                p.i += 2;
                body.push(Stmt::Label { line: l, name });
            }
            _ => body.push(Stmt::Inst(inst(p)?)),
        }
    }
}

/// A `.reg` declaration after its directive: `.b32 %r<12>, %x;`.
fn reg_decl(p: &mut P<'_>, line: u32) -> R<Stmt> {
    let ty = p.word()?;
    if ty.starts_with(".v") {
        return p.err("vector registers are not supported");
    }
    let mut names = Vec::new();
    loop {
        let n = p.word()?;
        let count = if p.eat_p('<') {
            let c = p.uint()? as u32;
            p.expect_p('>')?;
            Some(c)
        } else {
            None
        };
        names.push((n, count));
        if p.eat_p(';') {
            break;
        }
        p.expect_p(',')?;
    }
    Ok(Stmt::Reg { line, ty, names })
}

fn inst(p: &mut P<'_>) -> R<InstAst> {
    let line = p.line();
    let guard = if p.eat_p('@') {
        let neg = p.eat_p('!');
        Some((p.word()?, neg))
    } else {
        None
    };
    let op = match p.next() {
        Some(Tok::Word(w)) => w.clone(),
        _ => {
            p.i -= 1;
            return p.err("expected an instruction");
        }
    };
    let mut args = Vec::new();
    if !p.is_p(';') {
        loop {
            args.push(arg(p)?);
            if p.eat_p(',') {
                continue;
            }
            break;
        }
    }
    let end_line = p.line();
    if !p.eat_p(';') {
        return p.err(format!("expected `;` after `{op}`"));
    }
    Ok(InstAst {
        line,
        end_line,
        guard,
        op,
        args,
    })
}

fn signed_num(p: &mut P<'_>) -> R<Lit> {
    let neg = p.eat_p('-');
    if !neg {
        p.eat_p('+');
    }
    match p.next() {
        Some(Tok::Num(n)) => match parse_num(n) {
            Some(Lit::Int(v)) => Ok(Lit::Int(if neg { -v } else { v })),
            Some(Lit::Dec(v)) => Ok(Lit::Dec(if neg { -v } else { v })),
            Some(Lit::F32(b)) => Ok(Lit::F32(if neg { b ^ 0x8000_0000 } else { b })),
            Some(Lit::F64(b)) => Ok(Lit::F64(if neg { b ^ (1 << 63) } else { b })),
            None => {
                p.i -= 1;
                p.err(format!("bad number `{n}`"))
            }
        },
        _ => {
            p.i -= 1;
            p.err("expected a number")
        }
    }
}

fn offset(p: &mut P<'_>) -> R<i64> {
    // `+ 8`, `- 8`, `+ -8`
    let neg = p.eat_p('-');
    if !neg {
        p.expect_p('+')?;
    }
    match signed_num(p)? {
        Lit::Int(v) => {
            let v = if neg { -v } else { v };
            i64::try_from(v).or_else(|_| p.err("offset out of range"))
        }
        _ => p.err("an address offset must be an integer"),
    }
}

fn arg(p: &mut P<'_>) -> R<Arg> {
    let a = single_arg(p)?;
    if p.eat_p('|') {
        let b = single_arg(p)?;
        return Ok(Arg::Pair(Box::new(a), Box::new(b)));
    }
    Ok(a)
}

fn single_arg(p: &mut P<'_>) -> R<Arg> {
    match p.peek() {
        Some(Tok::P('{')) => {
            p.i += 1;
            let mut v = Vec::new();
            if !p.eat_p('}') {
                loop {
                    v.push(arg(p)?);
                    if p.eat_p('}') {
                        break;
                    }
                    p.expect_p(',')?;
                }
            }
            Ok(Arg::Vec(v))
        }
        Some(Tok::P('[')) => {
            p.i += 1;
            let (base, mut off) = match p.peek() {
                Some(Tok::Word(_)) => (Some(Box::new(Arg::Name(p.word()?))), 0),
                Some(Tok::Num(_) | Tok::P('-')) => match signed_num(p)? {
                    Lit::Int(v) => (None, i64::try_from(v).or_else(|_| p.err("address out of range"))?),
                    _ => return p.err("an address must be an integer"),
                },
                _ => return p.err("expected an address"),
            };
            while p.is_p('+') || p.is_p('-') {
                off += offset(p)?;
            }
            if p.eat_p(',') {
                let Arg::Vec(coords) = single_arg(p)? else {
                    return p.err("expected `{...}` coordinates after the tensor-map address");
                };
                p.expect_p(']')?;
                return Ok(Arg::Tensor(base, off, coords));
            }
            p.expect_p(']')?;
            Ok(Arg::Addr(base, off))
        }
        Some(Tok::P('!')) => {
            p.i += 1;
            Ok(Arg::Not(Box::new(single_arg(p)?)))
        }
        Some(Tok::P('-' | '+') | Tok::Num(_)) => Ok(Arg::Lit(signed_num(p)?)),
        Some(Tok::Word(w)) => {
            let w = w.clone();
            p.i += 1;
            if w == "_" {
                return Ok(Arg::Sink);
            }
            if p.is_p('+') || (p.is_p('-') && matches!(p.peek_at(1), Some(Tok::Num(_)))) {
                let mut off = 0;
                while p.is_p('+') || p.is_p('-') {
                    off += offset(p)?;
                }
                return Ok(Arg::Off(w, off));
            }
            Ok(Arg::Name(w))
        }
        _ => p.err("expected an operand"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_opcodes_labels_and_numbers() {
        let t = lex("$L_a: ld.global.nc.L1::no_allocate.v4.u32 {%r1}, [%rd2+-16]; // x\n/* y\n */ 0f3F800000 1.5e-3")
            .unwrap();
        let words: Vec<&Tok> = t.iter().map(|t| &t.t).collect();
        assert_eq!(words[0], &Tok::Word("$L_a".into()));
        assert_eq!(words[1], &Tok::P(':'));
        assert_eq!(words[2], &Tok::Word("ld.global.nc.L1::no_allocate.v4.u32".into()));
        assert_eq!(t.last().unwrap().t, Tok::Num("1.5e-3".into()));
        assert_eq!(t.last().unwrap().line, 3);
        assert_eq!(parse_num("0f3F800000"), Some(Lit::F32(0x3F80_0000)));
        assert_eq!(parse_num("0x1f"), Some(Lit::Int(31)));
        assert_eq!(parse_num("2654435761"), Some(Lit::Int(2654435761)));
        assert_eq!(parse_num("010"), Some(Lit::Int(8)));
        assert_eq!(parse_num("0d4008000000000000"), Some(Lit::F64(0x4008_0000_0000_0000)));
    }

    #[test]
    fn parses_an_entry() {
        let src = "
.version 7.8
.target sm_90
.address_size 64
.shared .align 16 .b8 smem[128];
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(
\t.param .u64 k_param_x,
\t.param .align 16 .b8 k_param_v[16]
)
.maxntid 256, 1, 1
.minnctapersm 2
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<4>, q;
\tmov.u32 %r1, smem+4;
$L_x:
\t@!%p1 bra $L_x;
\tsetp.lt.u32 %p1|%p2, %r1, -1;
\tmov.b32 {_, %r2}, %r3;
\tst.shared.v2.u32 [%r1+8], {%r1, %r2};
\tret;
}
";
        let e = parse_module(src).unwrap();
        assert_eq!(e.len(), 1);
        let e = &e[0];
        assert_eq!(e.name, "k");
        assert_eq!(e.params.len(), 2);
        assert_eq!((e.params[1].align, e.params[1].bytes), (16, 16));
        assert_eq!(e.maxntid, Some((256, 1, 1)));
        assert_eq!(e.shared.len(), 2);
        assert_eq!(e.shared[1].bytes, None);
        assert_eq!(e.close_line, 23);
        let insts = instructions(&e.body);
        assert_eq!(insts[0].args[1], Arg::Off("smem".into(), 4));
        assert_eq!(insts[1].guard, Some(("%p1".into(), true)));
        assert_eq!(insts[1].line, 18);
        assert!(matches!(&insts[2].args[0], Arg::Pair(..)));
        assert_eq!(insts[2].args[2], Arg::Lit(Lit::Int(-1)));
        assert_eq!(insts[3].args[0], Arg::Vec(vec![Arg::Sink, Arg::Name("%r2".into())]));
        assert_eq!(insts[4].args[0], Arg::Addr(Some(Box::new(Arg::Name("%r1".into()))), 8));
    }

    #[test]
    fn parses_tensor_addresses() {
        let mut toks = lex("[%rd8, {%r45, %r18}]").unwrap();
        toks.push(Token {
            t: Tok::P(';'),
            line: 1,
        });
        let mut p = P {
            toks: &toks,
            i: 0,
            lines: &[],
        };
        assert_eq!(
            arg(&mut p).unwrap(),
            Arg::Tensor(
                Some(Box::new(Arg::Name("%rd8".into()))),
                0,
                vec![Arg::Name("%r45".into()), Arg::Name("%r18".into())]
            )
        );
    }

    #[test]
    fn reports_errors_with_lines() {
        let e = parse_module(".version 7.8\n.entry k()\n{\n\tadd.u32 %r1, %r2 %r3;\n}\n").unwrap_err();
        assert_eq!(e.line(), Some(4));
        assert!(e.message().contains("expected `;`"), "{e}");
        let e = parse_module(".func f()\n{\n}\n").unwrap_err();
        assert!(e.message().contains(".func"), "{e}");
    }
}
