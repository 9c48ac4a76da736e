//! Memory: element and byte addresses, loads and stores in each space,
//! sub-slices, and shared-memory declarations (static arrays and views of
//! the dynamic block).

use super::emit::{Lower, MemRef, Space, Val};
use super::fold::{Const, Result, err, f32_imm, f64_imm, int_imm};
use crate::ast::*;
use crate::ir::*;
use crate::types::{CacheHint, MemLayout, RegClass, Scalar, Ty};
use crate::{INDEX_OUT_OF_BOUNDS, SLICE_OUT_OF_RANGE};

impl Lower<'_> {
    pub(super) fn elem_layout(&self, elem: &Ty) -> MemLayout {
        elem.mem_layout().expect("checked: a memory element type")
    }

    /// The address of element `index` of `m`, as a base operand and a
    /// constant byte offset.
    pub fn element_addr(&mut self, m: &MemRef, index: Val, index_ty: &Ty, span: Loc) -> Result<(Operand, i64)> {
        // A shared array's length is its type's: a constant index past it
        // is an error here, as rustc's for a Rust array.
        if let (Space::Shared, Val::Const(Const::Int(i)), Some(Val::Const(Const::Int(len)))) =
            (m.space, &index, m.len.as_deref())
            && !(0..*len).contains(i)
        {
            return err(
                span,
                format!("index {i} is out of bounds for a shared array of {len} elements"),
            );
        }
        if m.sub_slice {
            self.check_sub_slice_index(m, &index, index_ty);
        }
        let size = self.elem_layout(&m.elem).bytes as i64;
        self.byte_addr(m, index, index_ty, size, span)
    }

    /// With debug assertions, a trap where `index` is past the end of the
    /// sub-slice `m` (as Rust panics): the elements after its end may still
    /// be in the parameter's view, where the emulator's check cannot see
    /// them. A negative index is a large `usize` here, past the end too.
    fn check_sub_slice_index(&mut self, m: &MemRef, index: &Val, index_ty: &Ty) {
        let Some(len) = m.len.as_deref().cloned() else {
            return;
        };
        if !self.debug_assertions {
            return;
        }
        self.func.debug_checks = true;
        let view = m
            .name
            .as_ref()
            .map_or("a sub-slice".to_string(), |n| format!("the sub-slice `{n}`"));
        let s = self.scalar_of(index_ty);
        let i = self.cast(index.clone(), s, Scalar::Usize);
        let i = self.in_reg(&i, Scalar::Usize);
        let n = self.in_reg(&len, Scalar::Usize);
        let past = self.reg(RegClass::Pred);
        self.emit("setp.ge.u64", vec![past.into(), i.into(), n.into()]);
        self.trap_where(
            past,
            false,
            format!("{INDEX_OUT_OF_BOUNDS}the index is past the end of {view} (`&x[a..b]` has `b - a` elements)"),
        );
    }

    /// With debug assertions, a trap where `&x[start..end]` (`end`: `x`'s
    /// length `len` when there is none) is not inside `x` (as Rust panics):
    /// an end past `x`'s length, or a start past the end. The sub-slice's
    /// own index checks would otherwise let its elements run past `x`.
    fn check_sub_slice_range(&mut self, m: &MemRef, start: &Val, end: Option<&Val>, len: &Val) {
        self.func.debug_checks = true;
        let parent = m.name.as_ref().map_or("the slice".to_string(), |n| format!("`{n}`"));
        let a = self.in_reg(start, Scalar::Usize);
        let n = self.in_reg(len, Scalar::Usize);
        let b = match end {
            Some(end) => self.in_reg(end, Scalar::Usize),
            None => n,
        };
        let past = self.reg(RegClass::Pred);
        self.emit("setp.gt.u64", vec![past.into(), b.into(), n.into()]);
        self.trap_where(
            past,
            false,
            format!("{SLICE_OUT_OF_RANGE}`&x[a..b]` ends past the end of {parent} (`b` must be at most its length)"),
        );
        let backwards = self.reg(RegClass::Pred);
        self.emit("setp.gt.u64", vec![backwards.into(), a.into(), b.into()]);
        self.trap_where(
            backwards,
            false,
            format!("{SLICE_OUT_OF_RANGE}`&x[a..b]` of {parent} starts after it ends (write `a <= b`; `&x[a..]` needs `a` at most its length)"),
        );
    }

    /// `m.base + m.offset + index * scale`.
    pub fn byte_addr(
        &mut self,
        m: &MemRef,
        index: Val,
        index_ty: &Ty,
        scale: i64,
        span: Loc,
    ) -> Result<(Operand, i64)> {
        if let Val::Const(Const::Int(i)) = index {
            let off = m.offset.checked_add((i as i64).checked_mul(scale).unwrap_or(i64::MAX));
            return match off {
                Some(o) if o < i64::MAX => Ok((m.base.clone(), o)),
                _ => err(span, "constant index out of range"),
            };
        }
        let is = self.scalar_of(index_ty);
        let ir = self.in_reg(&index, is);
        let addr = match m.space {
            Space::Global | Space::Const => {
                let wide = if ir.class == RegClass::B64 {
                    let t = self.reg(RegClass::B64);
                    self.mul_imm(t, ir, scale, "u64");
                    t
                } else {
                    let t = self.reg(RegClass::B64);
                    let kind = if is.is_signed() { "s32" } else { "u32" };
                    self.emit(
                        format!("mul.wide.{kind}"),
                        vec![t.into(), ir.into(), Operand::imm(scale)],
                    );
                    t
                };
                let a = self.reg(RegClass::B64);
                self.emit("add.s64", vec![a.into(), m.base.clone(), wide.into()]);
                a
            }
            Space::Shared | Space::SharedCluster => {
                let i32r = self.narrow_u32(ir);
                let scaled = self.reg(RegClass::B32);
                self.mul_imm(scaled, i32r, scale, "u32");
                let base = match &m.base {
                    Operand::Sym(s) => {
                        let b = self.reg(RegClass::B32);
                        self.emit("mov.u32", vec![b.into(), Operand::Sym(s.clone())]);
                        Operand::Reg(b)
                    }
                    other => other.clone(),
                };
                let a = self.reg(RegClass::B32);
                self.emit("add.s32", vec![a.into(), base, scaled.into()]);
                a
            }
        };
        Ok((Operand::Reg(addr), m.offset))
    }

    /// The address of `tile[r][c]` when `base` is the row `tile[r]` of a
    /// 2-D shared array (`SharedArray<[T; C], R>`, its elements in row
    /// order): one index, `r * C + c`, into its elements.
    pub(super) fn shared_cell(&mut self, base: &Expr, col: &Expr) -> Result<Option<(MemRef, (Operand, i64))>> {
        let ExprKind::Index(rows, row) = &base.kind else {
            return Ok(None);
        };
        let rows_ty = self.ty(rows);
        let Some((_, cols)) = rows_ty.shared_rows() else {
            return Ok(None);
        };
        let cols = self.len_value(cols);
        let Val::Mem(m) = self.expr(rows)? else {
            unreachable!("checked: shared memory")
        };
        let (r, c) = (self.expr(row)?, self.expr(col)?);
        if let Val::Const(Const::Int(k)) = c
            && !(0..i128::from(cols)).contains(&k)
        {
            return err(
                col.span,
                format!("index {k} is out of bounds for a row of {cols} elements"),
            );
        }
        if let (Val::Const(Const::Int(k)), Some(Val::Const(Const::Int(len)))) = (&r, m.len.as_deref())
            && let Some(rows) = len.checked_div(i128::from(cols))
            && !(0..rows).contains(k)
        {
            return err(
                row.span,
                format!("row {k} is out of bounds for a 2-D shared array of {rows} rows"),
            );
        }
        let index = match (r, c) {
            (Val::Const(Const::Int(r)), Val::Const(Const::Int(c))) => {
                Val::Const(Const::Int(r.saturating_mul(i128::from(cols)).saturating_add(c)))
            }
            (Val::Const(Const::Int(r)), c) => {
                let ct = self.ty(col);
                let cr = self.index_u32(&c, &ct);
                self.check_column(cr, cols, rows);
                let d = self.reg(RegClass::B32);
                let first = (r as i64).wrapping_mul(cols as i64) as u32;
                self.emit("add.u32", vec![d.into(), cr.into(), Operand::imm(first)]);
                Val::Reg(d)
            }
            (r, c) => {
                let (rt, ct) = (self.ty(row), self.ty(col));
                let rr = self.index_u32(&r, &rt);
                let cr = match c {
                    Val::Const(Const::Int(k)) => Operand::imm(k),
                    c => {
                        let cr = self.index_u32(&c, &ct);
                        self.check_column(cr, cols, rows);
                        cr.into()
                    }
                };
                let d = self.reg(RegClass::B32);
                self.emit("mad.lo.u32", vec![d.into(), rr.into(), Operand::imm(cols), cr]);
                Val::Reg(d)
            }
        };
        let addr = self.element_addr(&m, index, &Ty::Scalar(Scalar::U32), col.span)?;
        Ok(Some((m, addr)))
    }

    /// With debug assertions, a trap where the column `c` of the 2-D shared
    /// array `array` (whose rows have `cols` elements) is past its row:
    /// the address `r * C + c` may still be inside the array (the next
    /// row's), where the emulator's whole-array check cannot see it. A
    /// negative `i32` column is a large `u32` here, past the row too.
    fn check_column(&mut self, c: Reg, cols: u64, array: &Expr) {
        if !self.debug_assertions {
            return;
        }
        self.func.debug_checks = true;
        let name = match &array.kind {
            ExprKind::Var(name) => format!("`{name}`"),
            _ => "the 2-D shared array".to_string(),
        };
        let past = self.reg(RegClass::Pred);
        self.emit("setp.ge.u32", vec![past.into(), c.into(), Operand::imm(cols)]);
        self.trap_where(
            past,
            false,
            format!("{INDEX_OUT_OF_BOUNDS}a column of {name} is {cols} or more, past its rows of {cols} elements"),
        );
    }

    /// A shared-memory index (`u32`, `i32` or `usize`) in a 32-bit register.
    fn index_u32(&mut self, v: &Val, t: &Ty) -> Reg {
        let s = self.scalar_of(t);
        let r = self.in_reg(v, s);
        self.narrow_u32(r)
    }

    /// A shared address is 32 bits: a `usize` index keeps its low half.
    fn narrow_u32(&mut self, r: Reg) -> Reg {
        if r.class != RegClass::B64 {
            return r;
        }
        let t = self.reg(RegClass::B32);
        self.emit("cvt.u32.u64", vec![t.into(), r.into()]);
        t
    }

    pub(super) fn mul_imm(&mut self, d: Reg, s: Reg, scale: i64, ty: &str) {
        if scale == 1 {
            self.emit(
                format!("mov.{}", if ty == "u64" { "b64" } else { "b32" }),
                vec![d.into(), s.into()],
            );
        } else if scale > 0 && (scale & (scale - 1)) == 0 {
            let bits = if ty == "u64" { "b64" } else { "b32" };
            self.emit(
                format!("shl.{bits}"),
                vec![d.into(), s.into(), Operand::imm(scale.trailing_zeros())],
            );
        } else {
            self.emit(format!("mul.lo.{ty}"), vec![d.into(), s.into(), Operand::imm(scale)]);
        }
    }

    pub(super) fn space_name(space: Space) -> &'static str {
        match space {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::SharedCluster => "shared::cluster",
            Space::Const => "const",
        }
    }

    /// `ld.<space><hint>` or `st.<space><hint>` for a cache hint.
    pub fn mem_op(&self, load: bool, space: Space, hint: CacheHint, span: Loc) -> Result<String> {
        let base = if load { "ld" } else { "st" };
        let sp = Self::space_name(space);
        if space != Space::Global && hint != CacheHint::Default {
            return err(span, "shared memory takes no cache hint; use `Cache::Default`");
        }
        let suffix = match (load, hint) {
            (_, CacheHint::Default) => "",
            (_, CacheHint::Global) => ".cg",
            (_, CacheHint::Streaming) => ".cs",
            (true, CacheHint::NonCoherent) => ".nc",
            (true, CacheHint::NoAllocate) => ".nc.L1::no_allocate",
            (false, h) => {
                return err(
                    span,
                    format!(
                        "`Cache::{}` applies to loads only; stores take `Default`, `Global` or `Streaming`",
                        h.rust_name()
                    ),
                );
            }
        };
        Ok(format!("{base}.{sp}{suffix}"))
    }

    /// Loads one element.
    pub fn load(&mut self, m: &MemRef, addr: (Operand, i64), hint: CacheHint, span: Loc) -> Result<Val> {
        let layout = self.elem_layout(&m.elem);
        let op = self.mem_op(true, m.space, hint, span)?;
        let a = Operand::Addr(Box::new(addr.0), addr.1);
        if layout.vec == 4 {
            let parts: Vec<Reg> = (0..4).map(|_| self.reg(RegClass::B32)).collect();
            self.emit(
                format!("{op}.v4.{}", layout.ptx),
                vec![Operand::Vec(parts.iter().map(|r| Operand::Reg(*r)).collect()), a],
            );
            return Ok(Val::Parts(parts.into_iter().map(Val::Reg).collect()));
        }
        let r = self.reg(self.class_of(&m.elem));
        self.emit(format!("{op}.{}", layout.ptx), vec![r.into(), a]);
        Ok(Val::Reg(r))
    }

    /// Stores one element.
    pub fn store(&mut self, m: &MemRef, addr: (Operand, i64), v: Val, hint: CacheHint, span: Loc) -> Result<()> {
        let layout = self.elem_layout(&m.elem);
        let op = self.mem_op(false, m.space, hint, span)?;
        let a = Operand::Addr(Box::new(addr.0), addr.1);
        if layout.vec == 4 {
            let parts = self.parts(&v, 4);
            let regs = parts.iter().map(|p| self.operand(p, Scalar::U32)).collect();
            self.emit(format!("{op}.v4.{}", layout.ptx), vec![a, Operand::Vec(regs)]);
            return Ok(());
        }
        let src = match &m.elem {
            Ty::Scalar(s) => self.operand(&v, *s),
            _ => Operand::Reg(self.bits_reg(&v, RegClass::B32)),
        };
        self.emit(format!("{op}.{}", layout.ptx), vec![a, src]);
        Ok(())
    }

    pub(super) fn slice_from(&mut self, m: MemRef, start: Val, end: Option<Val>) -> MemRef {
        if let Some(len) = m.len.as_deref().cloned()
            && self.debug_assertions
        {
            self.check_sub_slice_range(&m, &start, end.as_ref(), &len);
        }
        let size = self.elem_layout(&m.elem).bytes as i64;
        // Its length is `end - start`, `end` the view's or the slice's.
        let end = end.map(Box::new).or_else(|| m.len.clone());
        let len = end.map(|l| {
            let v = self.binary(
                BinOp::Sub,
                (*l).clone(),
                start.clone(),
                Scalar::Usize,
                None,
                None,
                Loc::from(proc_macro2::Span::call_site()),
            );
            Box::new(v.unwrap_or(Val::Unit))
        });
        let (base, offset) = match start {
            Val::Const(Const::Int(i)) => (m.base.clone(), m.offset + i as i64 * size),
            v => {
                let ir = self.in_reg(&v, Scalar::Usize);
                let t = self.reg(RegClass::B64);
                self.mul_imm(t, ir, size, "u64");
                let a = self.reg(RegClass::B64);
                self.emit("add.s64", vec![a.into(), m.base.clone(), t.into()]);
                (Operand::Reg(a), m.offset)
            }
        };
        MemRef {
            space: m.space,
            base,
            offset,
            elem: m.elem,
            len,
            sub_slice: true,
            name: None,
        }
    }

    /// Element `index` of a `#[device] const` table: the element itself at
    /// a constant index; else a load from the table's `.const` data,
    /// declared in the module at its first such load.
    pub(super) fn table_read(&mut self, table: usize, index: Val, index_ty: &Ty, span: Loc) -> Result<Val> {
        let kernel = self.kernel;
        let t = &kernel.tables[table];
        if let Val::Const(Const::Int(i)) = index {
            return match usize::try_from(i).ok().and_then(|i| t.values.get(i)) {
                Some(c) => Ok(Val::Const(*c)),
                None => err(
                    span,
                    format!(
                        "index {i} is out of bounds for `{}` of {} elements",
                        t.name,
                        t.values.len()
                    ),
                ),
            };
        }
        let name = format!("{}_{}", self.func.entry, t.name);
        if !self.func.tables.iter().any(|d| d.name == name) {
            let s = t.elem;
            let values = t
                .values
                .iter()
                .map(|c| match *c {
                    Const::Int(i) => int_imm(i, s),
                    Const::F32(f) => f32_imm(f),
                    Const::F64(f) => f64_imm(f),
                    Const::Bool(b) => u8::from(b).to_string(),
                })
                .collect::<Vec<_>>();
            let bytes = s.bits() / 8;
            self.func.tables.push(TableDecl {
                name: name.clone(),
                ptx: s.ptx_mem(),
                align: bytes,
                values,
            });
            let total: u64 = self
                .func
                .tables
                .iter()
                .map(|d| d.values.len() as u64 * u64::from(d.align))
                .sum();
            if total > 64 * 1024 {
                return err(
                    span,
                    format!(
                        "the `#[device] const` tables this kernel indexes at run time take {total} bytes, over the 64 KiB of constant memory; index the large ones by constants only, or pass them in a slice"
                    ),
                );
            }
        }
        let base = self.reg(RegClass::B64);
        self.emit("mov.u64", vec![base.into(), Operand::Sym(name)]);
        let m = MemRef {
            space: Space::Const,
            base: base.into(),
            offset: 0,
            elem: Ty::Scalar(t.elem),
            len: None,
            sub_slice: false,
            name: None,
        };
        let addr = self.element_addr(&m, index, index_ty, span)?;
        self.load(&m, addr, CacheHint::Default, span)
    }

    /// Declares a static shared array and returns its view.
    /// A 2-D array `[T; C]` x `len` is `len * C` elements `T`.
    pub fn declare_shared(&mut self, elem: &Ty, len: u64, span: Loc) -> Result<MemRef> {
        let (elem, len) = match elem {
            Ty::Array { elem, len: cols } => (&**elem, len.saturating_mul(self.len_value(cols))),
            elem => (elem, len),
        };
        let layout = self.elem_layout(elem);
        let bytes = len.saturating_mul(u64::from(layout.bytes));
        let name = format!("{}_smem{}", self.func.entry, self.func.shared.len());
        let total: u64 = self
            .func
            .shared
            .iter()
            .map(|s| s.bytes)
            .sum::<u64>()
            .saturating_add(bytes);
        if total > 48 * 1024 {
            return err(
                span,
                format!(
                    "static shared memory would be {total} bytes, over the 48 KiB static limit; use `dynamic_shared` for more"
                ),
            );
        }
        self.func.shared.push(SharedDecl {
            name: name.clone(),
            align: layout.bytes.max(16),
            bytes: bytes.max(1),
        });
        Ok(MemRef {
            space: Space::Shared,
            base: Operand::Sym(name),
            offset: 0,
            elem: elem.clone(),
            len: Some(Box::new(Val::Const(Const::Int(len as i128)))),
            sub_slice: false,
            name: None,
        })
    }

    /// The dynamic shared block, viewed as `elem` from `byte_offset`.
    pub fn dynamic_shared(&mut self, elem: &Ty, byte_offset: Val) -> MemRef {
        let align = 1024;
        self.func.dynamic_shared = Some(align);
        let name = format!("{}_dyn_smem", self.func.entry);
        match byte_offset {
            Val::Const(Const::Int(o)) => MemRef {
                space: Space::Shared,
                base: Operand::Sym(name),
                offset: o as i64,
                elem: elem.clone(),
                len: None,
                sub_slice: false,
                name: None,
            },
            v => {
                let b = self.reg(RegClass::B32);
                self.emit("mov.u32", vec![b.into(), Operand::Sym(name)]);
                let o = self.in_reg(&v, Scalar::U32);
                let a = self.reg(RegClass::B32);
                self.emit("add.s32", vec![a.into(), b.into(), o.into()]);
                MemRef {
                    space: Space::Shared,
                    base: a.into(),
                    offset: 0,
                    elem: elem.clone(),
                    len: None,
                    sub_slice: false,
                    name: None,
                }
            }
        }
    }
}
