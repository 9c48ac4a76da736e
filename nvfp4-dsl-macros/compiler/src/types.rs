//! The DSL's value types, their Rust spelling and their PTX representation.
//!
//! Every stage speaks these types: `parse` reads them from Rust syntax,
//! `check` infers them, `lower` picks registers and instructions by them.

use std::fmt;

/// Scalar types a kernel value can have.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    U8,
    U16,
    U32,
    U64,
    Usize,
    I32,
    I64,
    F16,
    Bf16,
    F32,
    F64,
}

impl Scalar {
    pub const ALL: [Scalar; 12] = [
        Scalar::Bool,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::Usize,
        Scalar::I32,
        Scalar::I64,
        Scalar::F16,
        Scalar::Bf16,
        Scalar::F32,
        Scalar::F64,
    ];

    pub fn rust_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    pub fn from_rust_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.rust_name() == name)
    }

    /// Integer types (the ones Rust's integer literals can take).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 | Scalar::Usize | Scalar::I32 | Scalar::I64
        )
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::I64)
    }

    /// Primitive floats: the types Rust's float literals and `as` casts know.
    pub fn is_prim_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// All floating-point types, `half`'s included.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::Bf16 | Scalar::F32 | Scalar::F64)
    }

    /// Width in bits of the Rust type.
    pub fn bits(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::U8 => 8,
            Scalar::U16 | Scalar::F16 | Scalar::Bf16 => 16,
            Scalar::U32 | Scalar::I32 | Scalar::F32 => 32,
            Scalar::U64 | Scalar::Usize | Scalar::I64 | Scalar::F64 => 64,
        }
    }

    /// The register class that holds a value of this type. `u8`/`u16` live
    /// zero-extended in 32-bit registers and are re-truncated after
    /// arithmetic that can carry out of their width.
    pub fn reg_class(self) -> RegClass {
        match self {
            Scalar::Bool => RegClass::Pred,
            Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::I32 => RegClass::B32,
            Scalar::U64 | Scalar::Usize | Scalar::I64 => RegClass::B64,
            Scalar::F16 | Scalar::Bf16 => RegClass::B16,
            Scalar::F32 => RegClass::F32,
            Scalar::F64 => RegClass::F64,
        }
    }

    /// PTX type suffix for arithmetic on this type (`add.u32`, `setp.lt.s64`).
    pub fn ptx_arith(self) -> &'static str {
        match self {
            Scalar::Bool => "pred",
            Scalar::U8 | Scalar::U16 | Scalar::U32 => "u32",
            Scalar::U64 | Scalar::Usize => "u64",
            Scalar::I32 => "s32",
            Scalar::I64 => "s64",
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    /// PTX type of this value in memory and in `.param` space.
    pub fn ptx_mem(self) -> &'static str {
        match self {
            Scalar::Bool | Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 | Scalar::Usize => "u64",
            Scalar::I32 => "s32",
            Scalar::I64 => "s64",
            Scalar::F16 | Scalar::Bf16 => "b16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    /// Smallest and largest value of an integer type, as i128.
    pub fn int_range(self) -> (i128, i128) {
        match self {
            Scalar::U8 => (0, u8::MAX as i128),
            Scalar::U16 => (0, u16::MAX as i128),
            Scalar::U32 => (0, u32::MAX as i128),
            Scalar::U64 | Scalar::Usize => (0, u64::MAX as i128),
            Scalar::I32 => (i32::MIN as i128, i32::MAX as i128),
            Scalar::I64 => (i64::MIN as i128, i64::MAX as i128),
            _ => (0, 0),
        }
    }
}

/// The cache behaviour a load or store asks for (`nvfp4_dsl::Cache`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CacheHint {
    /// No qualifier: cache at all levels.
    Default,
    /// `.cg`: cache in L2 only.
    Global,
    /// `.cs`: streaming, evict first.
    Streaming,
    /// `.nc`: the read-only (texture) path.
    NonCoherent,
    /// `.nc.L1::no_allocate`: read-only path, no L1 allocation.
    NoAllocate,
}

impl CacheHint {
    pub const ALL: [CacheHint; 5] = [
        CacheHint::Default,
        CacheHint::Global,
        CacheHint::Streaming,
        CacheHint::NonCoherent,
        CacheHint::NoAllocate,
    ];

    pub fn rust_name(self) -> &'static str {
        match self {
            CacheHint::Default => "Default",
            CacheHint::Global => "Global",
            CacheHint::Streaming => "Streaming",
            CacheHint::NonCoherent => "NonCoherent",
            CacheHint::NoAllocate => "NoAllocate",
        }
    }
}

/// The memory order of an atomic (`nvfp4_dsl::Order`): PTX's `.sem`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Order {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

impl Order {
    pub const ALL: [Order; 4] = [Order::Relaxed, Order::Acquire, Order::Release, Order::AcqRel];

    pub fn rust_name(self) -> &'static str {
        match self {
            Order::Relaxed => "Relaxed",
            Order::Acquire => "Acquire",
            Order::Release => "Release",
            Order::AcqRel => "AcqRel",
        }
    }

    pub fn ptx(self) -> &'static str {
        match self {
            Order::Relaxed => "relaxed",
            Order::Acquire => "acquire",
            Order::Release => "release",
            Order::AcqRel => "acq_rel",
        }
    }
}

/// The scope of an atomic (`nvfp4_dsl::Scope`): PTX's `.scope`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Scope {
    Cta,
    Cluster,
    Gpu,
    Sys,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Cta, Scope::Cluster, Scope::Gpu, Scope::Sys];

    pub fn rust_name(self) -> &'static str {
        match self {
            Scope::Cta => "Cta",
            Scope::Cluster => "Cluster",
            Scope::Gpu => "Gpu",
            Scope::Sys => "Sys",
        }
    }

    pub fn ptx(self) -> &'static str {
        match self {
            Scope::Cta => "cta",
            Scope::Cluster => "cluster",
            Scope::Gpu => "gpu",
            Scope::Sys => "sys",
        }
    }
}

/// The shared-memory swizzle of a matrix descriptor (`nvfp4_dsl::Swizzle`),
/// with its value in the tcgen05 descriptor's bits 61..64 and in the wgmma
/// descriptor's bits 62..64.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Swizzle {
    None,
    B32,
    B64,
    B128,
}

impl Swizzle {
    pub const ALL: [Swizzle; 4] = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];

    pub fn rust_name(self) -> &'static str {
        match self {
            Swizzle::None => "None",
            Swizzle::B32 => "B32",
            Swizzle::B64 => "B64",
            Swizzle::B128 => "B128",
        }
    }

    /// The layout type field of the tcgen05 shared-memory descriptor.
    pub fn layout_type(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B128 => 2,
            Swizzle::B64 => 4,
            Swizzle::B32 => 6,
        }
    }

    /// The layout type field of the wgmma (sm_90) descriptor.
    pub fn wgmma_layout_type(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B128 => 1,
            Swizzle::B64 => 2,
            Swizzle::B32 => 3,
        }
    }
}

/// Length of an array type: a literal or a const generic parameter.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Len {
    Lit(u64),
    Param(String),
}

impl fmt::Display for Len {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Len::Lit(n) => write!(f, "{n}"),
            Len::Param(p) => write!(f, "{p}"),
        }
    }
}

/// A type in the DSL.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Ty {
    Unit,
    Scalar(Scalar),
    /// Four `u32` in four registers; 16 bytes in memory.
    U32x4,
    /// Two `f16` packed in one 32-bit register.
    F16x2,
    /// Two `bf16` packed in one 32-bit register.
    Bf16x2,
    /// Two e2m1 values in one byte (low nibble = even element).
    Fp4x2,
    /// One e4m3 value (one byte).
    E4m3,
    /// Two e4m3 values (two bytes, low byte = first).
    E4m3x2,
    /// The `nvfp4_dsl::Cache` hint enum; only as a constant argument.
    Cache,
    /// The `nvfp4_dsl::Target` enum; only as a constant argument.
    Target,
    /// The `nvfp4_dsl::Swizzle` enum; only as a constant argument.
    Swizzle,
    /// The `nvfp4_dsl::Order` enum; only as a constant argument.
    Order,
    /// The `nvfp4_dsl::Scope` enum; only as a constant argument.
    Scope,
    /// A 128-byte CUtensorMap kernel parameter (`nvfp4_dsl::TensorMap`).
    TensorMap,
    /// A tcgen05 shared-memory matrix descriptor (64 bits).
    SmemDesc,
    /// A wgmma (sm_90) shared-memory matrix descriptor (64 bits).
    WgmmaDesc,
    /// A tcgen05 instruction descriptor (32 bits).
    InstrDesc,
    /// Global memory: `&[T]` or `&mut [T]`.
    Slice {
        elem: Box<Ty>,
        mutable: bool,
    },
    /// Static shared memory array `SharedArray<T, N>`.
    SharedArray {
        elem: Box<Ty>,
        len: Len,
    },
    /// A view of the dynamic shared block, `SharedSlice<T>`.
    SharedSlice {
        elem: Box<Ty>,
    },
    /// A local array `[T; N]`, one register per element.
    Array {
        elem: Box<Ty>,
        len: Len,
    },
    /// A tuple of values, one register (or more) per field.
    Tuple(Vec<Ty>),
    /// A `#[device]` struct: its fields in registers, in declaration order.
    Struct(StructTy),
}

/// A `#[device] struct`'s name, identity and fields.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct StructTy {
    pub name: String,
    /// Where it is defined (`Pair@12:4`): the same struct reached by two
    /// paths is one type.
    pub id: String,
    pub fields: Vec<(String, Ty)>,
    /// Marked `#[device(methods)]`: its `#[device] impl` block comes with it.
    pub methods: bool,
}

/// Where a `#[repr(C)]` struct's fields are, in bytes (as rustc lays it
/// out on the host, and as a kernel reads it from its parameter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReprC {
    pub offsets: Vec<u64>,
    pub size: u64,
    pub align: u64,
}

impl StructTy {
    /// The C layout of the fields in declaration order; `Err` names the
    /// first field whose type has no fixed layout (a tuple).
    pub fn repr_c(&self) -> Result<ReprC, &(String, Ty)> {
        let (mut offset, mut align) = (0u64, 1u64);
        let mut offsets = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let (size, a) = f.1.c_layout().ok_or(f)?;
            offset = offset.next_multiple_of(a);
            offsets.push(offset);
            offset = offset.saturating_add(size);
            align = align.max(a);
        }
        Ok(ReprC {
            offsets,
            size: offset.next_multiple_of(align),
            align,
        })
    }
}

impl Ty {
    /// The type a plain name stands for: a scalar, a vector, a descriptor
    /// or `TensorMap` (`f32`, `f16x2`, `SmemDesc`).
    pub fn named(name: &str) -> Option<Ty> {
        if let Some(s) = Scalar::from_rust_name(name) {
            return Some(Ty::Scalar(s));
        }
        Some(match name {
            "u32x4" => Ty::U32x4,
            "TensorMap" => Ty::TensorMap,
            "SmemDesc" => Ty::SmemDesc,
            "WgmmaDesc" => Ty::WgmmaDesc,
            "InstrDesc" => Ty::InstrDesc,
            "f16x2" => Ty::F16x2,
            "bf16x2" => Ty::Bf16x2,
            "Fp4x2" => Ty::Fp4x2,
            "E4m3" => Ty::E4m3,
            "E4m3x2" => Ty::E4m3x2,
            _ => return None,
        })
    }

    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    pub fn is_int(&self) -> bool {
        self.scalar().is_some_and(Scalar::is_int)
    }

    pub fn is_memory(&self) -> bool {
        matches!(self, Ty::Slice { .. } | Ty::SharedArray { .. } | Ty::SharedSlice { .. })
    }

    /// The rows of a 2-D shared array `SharedArray<[T; C], R>`: `T` and `C`.
    pub fn shared_rows(&self) -> Option<(&Ty, &Len)> {
        match self {
            Ty::SharedArray { elem, .. } => match &**elem {
                Ty::Array { elem, len } => Some((elem, len)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether shared memory can hold this type: a memory element, or a row
    /// `[T; C]` of them (a 2-D shared array).
    pub fn shared_elem_ok(&self) -> bool {
        match self {
            Ty::Array { elem, .. } => elem.mem_layout().is_some(),
            t => t.mem_layout().is_some(),
        }
    }

    /// Element type of a memory or array type.
    pub fn elem(&self) -> Option<&Ty> {
        match self {
            Ty::Slice { elem, .. }
            | Ty::SharedArray { elem, .. }
            | Ty::SharedSlice { elem }
            | Ty::Array { elem, .. } => Some(elem),
            _ => None,
        }
    }

    /// Whether values of this type can be stored in memory, and their size
    /// and PTX memory type.
    pub fn mem_layout(&self) -> Option<MemLayout> {
        Some(match self {
            Ty::Scalar(Scalar::Bool) => return None,
            Ty::Scalar(s) => MemLayout {
                bytes: s.bits() / 8,
                ptx: s.ptx_mem(),
                vec: 1,
            },
            Ty::U32x4 => MemLayout {
                bytes: 16,
                ptx: "u32",
                vec: 4,
            },
            Ty::F16x2 | Ty::Bf16x2 => MemLayout {
                bytes: 4,
                ptx: "b32",
                vec: 1,
            },
            Ty::Fp4x2 | Ty::E4m3 => MemLayout {
                bytes: 1,
                ptx: "u8",
                vec: 1,
            },
            Ty::E4m3x2 => MemLayout {
                bytes: 2,
                ptx: "u16",
                vec: 1,
            },
            _ => return None,
        })
    }

    /// Size and alignment on the host of a field of a `#[repr(C)]` struct of
    /// this type: numbers, vectors, descriptors and arrays of them (a
    /// tuple's layout is not fixed).
    pub fn c_layout(&self) -> Option<(u64, u64)> {
        Some(match self {
            Ty::Scalar(s) => (u64::from(s.bits() / 8), u64::from(s.bits() / 8)),
            Ty::U32x4 => (16, 16),
            Ty::F16x2 | Ty::Bf16x2 => (4, 4),
            Ty::Fp4x2 | Ty::E4m3 => (1, 1),
            Ty::E4m3x2 => (2, 2),
            Ty::SmemDesc | Ty::WgmmaDesc => (8, 8),
            Ty::InstrDesc => (4, 4),
            Ty::Array { elem, len: Len::Lit(n) } => {
                let (size, align) = elem.c_layout()?;
                (size.saturating_mul(*n), align)
            }
            _ => return None,
        })
    }

    /// Types a value of which lives in registers (parameters excluded).
    pub fn is_value(&self) -> bool {
        match self {
            Ty::Scalar(_)
            | Ty::U32x4
            | Ty::F16x2
            | Ty::Bf16x2
            | Ty::Fp4x2
            | Ty::E4m3
            | Ty::E4m3x2
            | Ty::SmemDesc
            | Ty::WgmmaDesc
            | Ty::InstrDesc => true,
            Ty::Array { elem, .. } => elem.is_value(),
            Ty::Tuple(elems) => elems.iter().all(Ty::is_value),
            Ty::Struct(_) => true,
            _ => false,
        }
    }
}

/// How a value of a memory element type is laid out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MemLayout {
    pub bytes: u32,
    /// PTX type of one vector lane.
    pub ptx: &'static str,
    /// Vector width of the access (`.v4` for `u32x4`).
    pub vec: u32,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Unit => write!(f, "()"),
            Ty::Scalar(s) => write!(f, "{}", s.rust_name()),
            Ty::U32x4 => write!(f, "u32x4"),
            Ty::F16x2 => write!(f, "f16x2"),
            Ty::Bf16x2 => write!(f, "bf16x2"),
            Ty::Fp4x2 => write!(f, "Fp4x2"),
            Ty::E4m3 => write!(f, "E4m3"),
            Ty::E4m3x2 => write!(f, "E4m3x2"),
            Ty::Cache => write!(f, "Cache"),
            Ty::Target => write!(f, "Target"),
            Ty::Swizzle => write!(f, "Swizzle"),
            Ty::Order => write!(f, "Order"),
            Ty::Scope => write!(f, "Scope"),
            Ty::TensorMap => write!(f, "TensorMap"),
            Ty::SmemDesc => write!(f, "SmemDesc"),
            Ty::WgmmaDesc => write!(f, "WgmmaDesc"),
            Ty::InstrDesc => write!(f, "InstrDesc"),
            Ty::Slice { elem, mutable } => {
                write!(f, "&{}[{elem}]", if *mutable { "mut " } else { "" })
            }
            Ty::SharedArray { elem, len } => write!(f, "SharedArray<{elem}, {len}>"),
            Ty::SharedSlice { elem } => write!(f, "SharedSlice<{elem}>"),
            Ty::Array { elem, len } => write!(f, "[{elem}; {len}]"),
            Ty::Struct(st) => write!(f, "{}", st.name),
            Ty::Tuple(elems) if elems.len() == 1 => write!(f, "({},)", elems[0]),
            Ty::Tuple(elems) => write!(
                f,
                "({})",
                elems.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// PTX register classes. Names are the prefixes of the registers.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum RegClass {
    Pred,
    /// Byte registers: only intrinsics use them (operands of the FP4/FP8
    /// conversions).
    B8,
    B16,
    B32,
    B64,
    F32,
    F64,
}

impl RegClass {
    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "%p",
            RegClass::B8 => "%c",
            RegClass::B16 => "%h",
            RegClass::B32 => "%r",
            RegClass::B64 => "%rd",
            RegClass::F32 => "%f",
            RegClass::F64 => "%fd",
        }
    }

    pub fn decl(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B8 => ".b8",
            RegClass::B16 => ".b16",
            RegClass::B32 => ".b32",
            RegClass::B64 => ".b64",
            RegClass::F32 => ".f32",
            RegClass::F64 => ".f64",
        }
    }
}

/// The highest PTX ISA version the project emits: the H100 driver here
/// (CUDA 13.0) accepts nothing newer.
pub const MAX_PTX: u32 = 90;
