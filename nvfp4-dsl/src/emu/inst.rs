//! The decoded instruction: what every instruction family's decoder builds
//! and its executor reads. Operands are resolved to register indices and
//! immediates; types and modifiers are small enums, so executing never
//! looks at text.

use super::ctx::Ctx;
use super::fp::{self, Fmt, Rnd};

/// A PTX data type (instruction type suffix).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    F32,
    F64,
    Tf32,
    E4m3x2,
    E5m2x2,
    E2m1x2,
    E2m3x2,
    E3m2x2,
}

impl Ty {
    pub fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "pred" => Ty::Pred,
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "b128" => Ty::B128,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "f16x2" => Ty::F16x2,
            "bf16" => Ty::Bf16,
            "bf16x2" => Ty::Bf16x2,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "tf32" => Ty::Tf32,
            "e4m3x2" => Ty::E4m3x2,
            "e5m2x2" => Ty::E5m2x2,
            "e2m1x2" => Ty::E2m1x2,
            "e2m3x2" => Ty::E2m3x2,
            "e3m2x2" => Ty::E3m2x2,
            _ => return None,
        })
    }

    pub fn bits(self) -> u32 {
        // By declaration order: a load, where a `match` compiled to a jump
        // in every executor that asks (`tests::the_type_widths`).
        const BITS: [u8; 26] = [
            1, 8, 16, 32, 64, 128, 8, 16, 32, 64, 8, 16, 32, 64, 16, 32, 16, 32, 32, 64, 32, 16, 16, 8, 16, 16,
        ];
        u32::from(BITS[self as usize])
    }

    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub fn is_int(self) -> bool {
        matches!(
            self,
            Ty::B8
                | Ty::B16
                | Ty::B32
                | Ty::B64
                | Ty::U8
                | Ty::U16
                | Ty::U32
                | Ty::U64
                | Ty::S8
                | Ty::S16
                | Ty::S32
                | Ty::S64
        )
    }

    pub fn is_float(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64)
    }

    /// The scalar float format of a float type (of each half for x2 types).
    pub fn fmt(self) -> Option<Fmt> {
        Some(match self {
            Ty::F16 | Ty::F16x2 => fp::F16,
            Ty::Bf16 | Ty::Bf16x2 => fp::BF16,
            Ty::F32 => fp::F32,
            Ty::F64 => fp::F64,
            _ => return None,
        })
    }

    /// All-ones mask of the type's width (64 bits at most).
    pub fn mask(self) -> u64 {
        let b = self.bits();
        if b >= 64 { u64::MAX } else { (1u64 << b) - 1 }
    }
}

/// Special registers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NwarpId,
    SmId,
    NsmId,
    GridId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    Clock,
    Clock64,
    GlobalTimer,
    DynSmem,
    TotalSmem,
    ClusterCtaRank,
    ClusterNctaRank,
    ClusterCtaid(u8),
    ClusterNctaid(u8),
    ClusterId(u8),
    NclusterId(u8),
    IsExplicitCluster,
}

impl Sreg {
    pub fn parse(s: &str) -> Option<Sreg> {
        let dim = |c: &str| match c {
            "x" => Some(0),
            "y" => Some(1),
            "z" => Some(2),
            _ => None,
        };
        if let Some((base, c)) = s.split_once('.') {
            let d = dim(c)?;
            return Some(match base {
                "%tid" => Sreg::Tid(d),
                "%ntid" => Sreg::Ntid(d),
                "%ctaid" => Sreg::Ctaid(d),
                "%nctaid" => Sreg::Nctaid(d),
                "%cluster_ctaid" => Sreg::ClusterCtaid(d),
                "%cluster_nctaid" => Sreg::ClusterNctaid(d),
                "%clusterid" => Sreg::ClusterId(d),
                "%nclusterid" => Sreg::NclusterId(d),
                _ => return None,
            });
        }
        Some(match s {
            "%laneid" => Sreg::LaneId,
            "%warpid" => Sreg::WarpId,
            "%nwarpid" => Sreg::NwarpId,
            "%smid" => Sreg::SmId,
            "%nsmid" => Sreg::NsmId,
            "%gridid" => Sreg::GridId,
            "%lanemask_eq" => Sreg::LaneMaskEq,
            "%lanemask_lt" => Sreg::LaneMaskLt,
            "%lanemask_le" => Sreg::LaneMaskLe,
            "%lanemask_gt" => Sreg::LaneMaskGt,
            "%lanemask_ge" => Sreg::LaneMaskGe,
            "%clock" => Sreg::Clock,
            "%clock64" => Sreg::Clock64,
            "%globaltimer" => Sreg::GlobalTimer,
            "%dynamic_smem_size" => Sreg::DynSmem,
            "%total_smem_size" => Sreg::TotalSmem,
            "%cluster_ctarank" => Sreg::ClusterCtaRank,
            "%cluster_nctarank" => Sreg::ClusterNctaRank,
            "%is_explicit_cluster" => Sreg::IsExplicitCluster,
            _ => return None,
        })
    }
}

/// A resolved operand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Operand {
    None,
    /// A general register: index and declared width in bits.
    Reg {
        idx: u32,
        bits: u8,
    },
    /// A predicate register, possibly negated (`!%p`).
    Pred {
        idx: u32,
        neg: bool,
    },
    /// An immediate, already converted to the instruction type's bits.
    Imm(u64),
    Sreg(Sreg),
    /// `_`.
    Sink,
}

/// How a result narrower than its destination register is widened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ext {
    /// Zero-extend (the value already fits its type).
    Zero,
    /// Sign-extend from this many bits.
    Sign(u8),
}

/// A memory state space.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Space {
    Global,
    /// `.shared` / `.shared::cta`: the executing block's shared memory.
    Shared,
    /// `.shared::cluster` (loads, stores, atomics): any block of the
    /// cluster, through `mapa` addresses.
    SharedCluster,
    Param,
    /// `.const`: the module's `.const` variables (loads only).
    Const,
    /// No space given: the address picks global or shared.
    Generic,
}

/// A memory address operand: `base + off`, where `base` is a register or
/// absent (`[sym+off]` and `[imm]` resolve to a constant).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Addr {
    pub base: Operand,
    pub off: i64,
    /// For `.param` symbols: the parameter's byte range in the buffer.
    pub param: (u32, u32),
}

impl Addr {
    pub const NONE: Addr = Addr {
        base: Operand::None,
        off: 0,
        param: (0, 0),
    };
}

/// What the warp does after an instruction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flow {
    /// Every executing lane continues with the next instruction.
    Next,
    /// The instruction changed lanes' program counters itself (a branch,
    /// an exit): pick the next group of lanes.
    Jump,
    /// Lanes started waiting (a barrier): pick the next group and let the
    /// scheduler look at the block.
    Yield,
}

/// A failure inside an instruction, turned into an `EmuError` with the
/// kernel, block, thread (`lane`, or the first executing lane) and line.
/// Boxed: every instruction returns a `Result<Flow, Fault>`, which then
/// fits in registers.
#[derive(Debug)]
pub(crate) struct Fault(pub Box<Failure>);

/// What a [`Fault`] holds.
#[derive(Debug)]
pub(crate) struct Failure {
    pub msg: String,
    pub lane: Option<u32>,
    /// Other instructions whose Rust statements `msg` names (see
    /// `diag::cite`), resolved to files with the error's own.
    pub cite: Vec<u32>,
}

impl Fault {
    pub fn new(msg: impl Into<String>) -> Fault {
        Fault(Box::new(Failure {
            msg: msg.into(),
            lane: None,
            cite: Vec::new(),
        }))
    }
    pub fn lane(lane: usize, msg: impl Into<String>) -> Fault {
        Fault(Box::new(Failure {
            msg: msg.into(),
            lane: Some(lane as u32),
            cite: Vec::new(),
        }))
    }

    /// The same fault, its message naming instruction `pc`'s statements
    /// too (if any).
    pub fn citing(mut self, pc: impl Into<Option<u32>>) -> Fault {
        self.0.cite.extend(pc.into());
        self
    }

    /// The same fault, of lane `lane`.
    pub fn on_lane(mut self, lane: usize) -> Fault {
        self.0.lane = Some(lane as u32);
        self
    }
}

impl From<String> for Fault {
    fn from(msg: String) -> Fault {
        Fault::new(msg)
    }
}

impl From<&str> for Fault {
    fn from(msg: &str) -> Fault {
        Fault::new(msg)
    }
}

pub(crate) type ExecFn = fn(&mut Ctx<'_>, &Inst) -> Result<Flow, Fault>;

/// No guard predicate.
pub(crate) const NO_GUARD: u32 = u32::MAX;

/// One decoded instruction. Families interpret the generic fields as their
/// decoder documents: `d` destinations, `s` sources, `v` vector elements,
/// `ty`/`ty2` types, `sub` an operation selector, `flags` modifier bits,
/// `imm` a constant (branch target, ...).
#[derive(Clone, Debug)]
pub(crate) struct Inst {
    pub exec: ExecFn,
    /// What an `.aligned` instruction does once `synccheck` found its warp
    /// converged (`exec` is then the check); `exec` otherwise.
    pub aligned: ExecFn,
    pub guard: u32,
    pub guard_neg: bool,
    pub d: [Operand; 2],
    pub s: [Operand; 4],
    pub v: Box<[Operand]>,
    pub addr: Addr,
    /// Further address operands (bulk copies, tcgen05).
    pub addrs: Box<[Addr]>,
    pub space: Space,
    pub ty: Ty,
    pub ty2: Ty,
    pub rnd: Rnd,
    pub ext: Ext,
    pub sub: u8,
    pub flags: u32,
    pub imm: u64,
}

impl Inst {
    pub fn new(exec: ExecFn) -> Inst {
        Inst {
            exec,
            aligned: exec,
            guard: NO_GUARD,
            guard_neg: false,
            d: [Operand::None; 2],
            s: [Operand::None; 4],
            v: Box::new([]),
            addr: Addr::NONE,
            addrs: Box::new([]),
            space: Space::Global,
            ty: Ty::B32,
            ty2: Ty::B32,
            rnd: Rnd::Rn,
            ext: Ext::Zero,
            sub: 0,
            flags: 0,
            imm: 0,
        }
    }
}

/// The dotted modifiers of an opcode after its name, consumed by decoders;
/// whatever is left over is reported as unsupported.
pub(crate) struct Mods<'a> {
    pub op: &'a str,
    parts: Vec<&'a str>,
}

impl<'a> Mods<'a> {
    pub fn new(op: &'a str) -> (&'a str, Mods<'a>) {
        let mut it = op.split('.');
        let name = it.next().unwrap_or("");
        (
            name,
            Mods {
                op,
                parts: it.collect(),
            },
        )
    }

    /// Removes `m` if present.
    pub fn take(&mut self, m: &str) -> bool {
        if let Some(i) = self.parts.iter().position(|p| *p == m) {
            self.parts.remove(i);
            true
        } else {
            false
        }
    }

    /// Removes each modifier of `table` that is present and returns the OR
    /// of their flag bits.
    pub fn flags(&mut self, table: &[(&str, u32)]) -> u32 {
        table
            .iter()
            .filter(|(m, _)| self.take(m))
            .fold(0, |acc, (_, bit)| acc | bit)
    }

    /// Removes the first of `ms` present and returns its index.
    pub fn take_any(&mut self, ms: &[&str]) -> Option<usize> {
        for (k, m) in ms.iter().enumerate() {
            if self.take(m) {
                return Some(k);
            }
        }
        None
    }

    /// Removes every modifier accepted by `f` (cache hints and the like).
    pub fn drop_where(&mut self, f: impl Fn(&str) -> bool) {
        self.parts.retain(|p| !f(p));
    }

    /// Removes and returns the last modifier as a type.
    pub fn ty(&mut self) -> Result<Ty, String> {
        match self.parts.last().and_then(|p| Ty::parse(p)) {
            Some(t) => {
                self.parts.pop();
                Ok(t)
            }
            None => Err(format!("`{}` needs a type suffix", self.op)),
        }
    }

    /// Removes and returns a rounding modifier among `.rn .rz .rm .rp`
    /// (`.rna` too if `rna`).
    pub fn rnd(&mut self, rna: bool) -> Option<Rnd> {
        let all = ["rn", "rz", "rm", "rp", "rna"];
        let n = if rna { 5 } else { 4 };
        self.take_any(&all[..n])
            .map(|k| [Rnd::Rn, Rnd::Rz, Rnd::Rm, Rnd::Rp, Rnd::Rna][k])
    }

    /// Removes and returns an integer rounding modifier (`.rni` ...).
    pub fn irnd(&mut self) -> Option<Rnd> {
        self.take_any(&["rni", "rzi", "rmi", "rpi"])
            .map(|k| [Rnd::Rn, Rnd::Rz, Rnd::Rm, Rnd::Rp][k])
    }

    /// The remaining modifiers, in order.
    pub fn rest(&self) -> &[&'a str] {
        &self.parts
    }

    /// Fails if anything is left.
    pub fn done(&self) -> Result<(), String> {
        match self.parts.first() {
            None => Ok(()),
            Some(p) => Err(format!("unsupported modifier `.{p}` in `{}`", self.op)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ty;

    /// Each type's width, by its name: the widths are a table by
    /// declaration order.
    #[test]
    fn the_type_widths() {
        let widths = [
            ("pred", 1),
            ("b8", 8),
            ("b16", 16),
            ("b32", 32),
            ("b64", 64),
            ("b128", 128),
            ("u8", 8),
            ("u16", 16),
            ("u32", 32),
            ("u64", 64),
            ("s8", 8),
            ("s16", 16),
            ("s32", 32),
            ("s64", 64),
            ("f16", 16),
            ("f16x2", 32),
            ("bf16", 16),
            ("bf16x2", 32),
            ("f32", 32),
            ("f64", 64),
            ("tf32", 32),
            ("e4m3x2", 16),
            ("e5m2x2", 16),
            ("e2m1x2", 8),
            ("e2m3x2", 16),
            ("e3m2x2", 16),
        ];
        for (name, bits) in widths {
            assert_eq!(Ty::parse(name).expect(name).bits(), bits, "{name}");
        }
    }
}
