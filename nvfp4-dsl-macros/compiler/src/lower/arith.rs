//! Operators and casts on lowered values: `binary` (folded when both sides
//! are constants, with Rust's wrapping, division and shift rules) and
//! `cast` (Rust's `as`).

use super::emit::{Lower, Val, bit_type, mov_type};
use super::fold::{Const, Result};
use super::fold::{f32_imm, f64_imm, fold, fold_cast, int_imm};
use crate::ast::*;
use crate::ir::*;
use crate::types::{RegClass, Scalar};

impl Lower<'_> {
    /// Re-truncates a `u8`/`u16` value held in a 32-bit register.
    pub(super) fn normalize(&mut self, v: Val, s: Scalar) -> Val {
        let mask = match s {
            Scalar::U8 => 0xFF,
            Scalar::U16 => 0xFFFF,
            _ => return v,
        };
        let Val::Reg(r) = v else { return v };
        self.emit("and.b32", vec![r.into(), r.into(), Operand::imm(mask)]);
        Val::Reg(r)
    }

    /// A binary operation on scalars of type `s` (`rs` is the right side's
    /// type, which differs only for shifts). Writes into `dst` when given.
    #[allow(clippy::too_many_arguments)]
    pub fn binary(
        &mut self,
        op: BinOp,
        l: Val,
        r: Val,
        s: Scalar,
        rs: Option<Scalar>,
        dst: Option<Reg>,
        span: Loc,
    ) -> Result<Val> {
        let rs = rs.unwrap_or(s);
        if let (Val::Const(a), Val::Const(b)) = (&l, &r) {
            return fold(op, *a, *b, s, rs, span).map(Val::Const);
        }
        if let Some(v) = self.identity(op, &l, &r, s) {
            return Ok(v);
        }
        let class = if op.is_comparison() {
            RegClass::Pred
        } else {
            s.reg_class()
        };
        let d = dst.unwrap_or_else(|| self.reg(class));
        if op.is_shift() {
            // Rust (release) masks the shift amount to the type's width; PTX
            // would clamp instead.
            let amount = match r {
                Val::Const(Const::Int(n)) => Operand::imm((n as u32) & (s.bits() - 1)),
                rv => {
                    let rr = self.in_reg(&rv, rs);
                    let r32 = if rr.class == RegClass::B64 {
                        let t = self.reg(RegClass::B32);
                        self.emit("cvt.u32.u64", vec![t.into(), rr.into()]);
                        t
                    } else {
                        rr
                    };
                    let m = self.reg(RegClass::B32);
                    self.emit("and.b32", vec![m.into(), r32.into(), Operand::imm(s.bits() - 1)]);
                    Operand::Reg(m)
                }
            };
            let lo = self.operand(&l, s);
            let opname = match (op, s.is_signed()) {
                (BinOp::Shl, _) => format!("shl.{}", bit_type(s)),
                (_, true) => format!("shr.{}", s.ptx_arith()),
                (_, false) => format!("shr.{}", if s.bits() == 64 { "u64" } else { "u32" }),
            };
            self.emit(opname, vec![d.into(), lo, amount]);
            return Ok(if op == BinOp::Shl {
                self.normalize(Val::Reg(d), s)
            } else {
                Val::Reg(d)
            });
        }
        if matches!(s, Scalar::F16 | Scalar::Bf16) && op == BinOp::Div {
            // No half-precision division in PTX: divide in f32 and round once
            // more; f32 carries enough bits that this equals the correctly
            // rounded half quotient.
            let name = s.ptx_arith();
            let a = self.in_reg(&l, s);
            let b = self.in_reg(&r, s);
            let (fa, fb, fq) = (
                self.reg(RegClass::F32),
                self.reg(RegClass::F32),
                self.reg(RegClass::F32),
            );
            self.emit(format!("cvt.f32.{name}"), vec![fa.into(), a.into()]);
            self.emit(format!("cvt.f32.{name}"), vec![fb.into(), b.into()]);
            self.emit("div.rn.f32", vec![fq.into(), fa.into(), fb.into()]);
            self.emit(format!("cvt.rn.{name}.f32"), vec![d.into(), fq.into()]);
            return Ok(Val::Reg(d));
        }
        if s == Scalar::Bool {
            let a = self.in_reg(&l, s);
            let b = self.in_reg(&r, s);
            match op {
                BinOp::BitAnd => self.emit("and.pred", vec![d.into(), a.into(), b.into()]),
                BinOp::BitOr => self.emit("or.pred", vec![d.into(), a.into(), b.into()]),
                BinOp::BitXor | BinOp::Ne => self.emit("xor.pred", vec![d.into(), a.into(), b.into()]),
                BinOp::Eq => {
                    self.emit("xor.pred", vec![d.into(), a.into(), b.into()]);
                    self.emit("not.pred", vec![d.into(), d.into()]);
                }
                other => unreachable!("checked: bool {other:?}"),
            }
            return Ok(Val::Reg(d));
        }
        if let Some(v) = self.div_by_power_of_two(op, &l, &r, s, d) {
            return Ok(v);
        }
        let a = self.operand(&l, s);
        let b = self.operand(&r, s);
        let t = s.ptx_arith();
        let float = s.is_float();
        let opname = match op {
            BinOp::Add if float => format!("add.rn.{t}"),
            BinOp::Sub if float => format!("sub.rn.{t}"),
            BinOp::Mul if float => format!("mul.rn.{t}"),
            BinOp::Div if float => format!("div.rn.{t}"),
            BinOp::Add => format!("add.{t}"),
            BinOp::Sub => format!("sub.{t}"),
            BinOp::Mul => format!("mul.lo.{t}"),
            BinOp::Div => format!("div.{t}"),
            BinOp::Rem => format!("rem.{t}"),
            BinOp::BitAnd => format!("and.{}", bit_type(s)),
            BinOp::BitOr => format!("or.{}", bit_type(s)),
            BinOp::BitXor => format!("xor.{}", bit_type(s)),
            BinOp::Eq => format!("setp.eq.{t}"),
            BinOp::Ne if float => format!("setp.neu.{t}"),
            BinOp::Ne => format!("setp.ne.{t}"),
            BinOp::Lt => format!("setp.lt.{t}"),
            BinOp::Le => format!("setp.le.{t}"),
            BinOp::Gt => format!("setp.gt.{t}"),
            BinOp::Ge => format!("setp.ge.{t}"),
            other => unreachable!("handled above: {other:?}"),
        };
        self.emit(opname, vec![d.into(), a, b]);
        Ok(if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
            self.normalize(Val::Reg(d), s)
        } else {
            Val::Reg(d)
        })
    }

    /// Integer `x / 2^k` and `x % 2^k` (k >= 1) as shifts and masks with
    /// Rust's truncating semantics: ptxas does not strength-reduce `div`
    /// and `rem` by constants itself (it emits the generic division).
    pub(super) fn div_by_power_of_two(&mut self, op: BinOp, l: &Val, r: &Val, s: Scalar, d: Reg) -> Option<Val> {
        let Val::Const(Const::Int(divisor)) = *r else {
            return None;
        };
        if !matches!(op, BinOp::Div | BinOp::Rem) || !s.is_int() || divisor < 2 || divisor.count_ones() != 1 {
            return None;
        }
        let k = divisor.trailing_zeros();
        let bits = s.bits().max(32);
        let b = bit_type(s);
        let x = self.operand(l, s);
        if !s.is_signed() {
            if op == BinOp::Div {
                self.emit(
                    format!("shr.{}", if bits == 64 { "u64" } else { "u32" }),
                    vec![d.into(), x, Operand::imm(k)],
                );
            } else {
                let mask = int_imm(divisor - 1, s);
                self.emit(format!("and.{b}"), vec![d.into(), x, Operand::Imm(mask)]);
            }
            return Some(Val::Reg(d));
        }
        // Signed: add 2^k - 1 to negative values so the arithmetic shift
        // rounds toward zero, as Rust's division does.
        let t = s.ptx_arith();
        let class = s.reg_class();
        let sign = self.reg(class);
        self.emit(format!("shr.{t}"), vec![sign.into(), x.clone(), Operand::imm(bits - 1)]);
        let bias = self.reg(class);
        let unsigned = if bits == 64 { "u64" } else { "u32" };
        self.emit(
            format!("shr.{unsigned}"),
            vec![bias.into(), sign.into(), Operand::imm(bits - k)],
        );
        let biased = self.reg(class);
        self.emit(format!("add.{t}"), vec![biased.into(), x.clone(), bias.into()]);
        if op == BinOp::Div {
            self.emit(format!("shr.{t}"), vec![d.into(), biased.into(), Operand::imm(k)]);
        } else {
            let floor = self.reg(class);
            self.emit(
                format!("and.{b}"),
                vec![floor.into(), biased.into(), Operand::Imm(int_imm(-divisor, s))],
            );
            self.emit(format!("sub.{t}"), vec![d.into(), x, floor.into()]);
        }
        Some(Val::Reg(d))
    }

    /// Algebraic identities that need no instruction (`x + 0`, `x * 1`, ...),
    /// for integers only (floats keep `-0.0 + 0.0` semantics).
    pub(super) fn identity(&self, op: BinOp, l: &Val, r: &Val, s: Scalar) -> Option<Val> {
        if !s.is_int() {
            return None;
        }
        let is = |v: &Val, n: i128| matches!(v, Val::Const(Const::Int(x)) if *x == n);
        match op {
            BinOp::Add | BinOp::BitOr | BinOp::BitXor if is(r, 0) => Some(l.clone()),
            BinOp::Add | BinOp::BitOr | BinOp::BitXor if is(l, 0) => Some(r.clone()),
            BinOp::Sub | BinOp::Shl | BinOp::Shr if is(r, 0) => Some(l.clone()),
            BinOp::Mul | BinOp::Div if is(r, 1) => Some(l.clone()),
            BinOp::Mul if is(l, 1) => Some(r.clone()),
            BinOp::Mul if is(r, 0) || is(l, 0) => Some(Val::Const(Const::Int(0))),
            _ => None,
        }
    }

    /// `x as T` with Rust's semantics.
    pub fn cast(&mut self, v: Val, from: Scalar, to: Scalar) -> Val {
        if let Val::Const(c) = v {
            return Val::Const(fold_cast(c, from, to));
        }
        if from == to {
            return v;
        }
        let src = self.in_reg(&v, from);
        let d = self.reg(to.reg_class());
        match (from.is_int(), to.is_int(), from) {
            (_, _, Scalar::Bool) => {
                let (one, zero) = if to.is_int() {
                    ("1".to_string(), "0".to_string())
                } else if to == Scalar::F32 {
                    (f32_imm(1.0), f32_imm(0.0))
                } else {
                    (f64_imm(1.0), f64_imm(0.0))
                };
                let ty = to.ptx_arith();
                self.emit(
                    format!("selp.{ty}"),
                    vec![d.into(), Operand::Imm(one), Operand::Imm(zero), src.into()],
                );
            }
            (true, true, _) => {
                let (fb, tb) = (from.bits(), to.bits());
                if from.reg_class() == to.reg_class() {
                    // Same register width: u8/u16 truncate, the rest keep bits.
                    if tb < 32 && (fb > tb || from.is_signed()) {
                        self.emit(
                            "and.b32",
                            vec![d.into(), src.into(), Operand::imm(if tb == 8 { 0xFF } else { 0xFFFF })],
                        );
                    } else {
                        self.emit(format!("mov.{}", mov_type(to.reg_class())), vec![d.into(), src.into()]);
                    }
                } else if tb == 64 {
                    // Widening to 64 bits: sign-extend from signed sources.
                    let f = if from.is_signed() { "s32" } else { "u32" };
                    self.emit(
                        format!("cvt.{}.{f}", if from.is_signed() { "s64" } else { "u64" }),
                        vec![d.into(), src.into()],
                    );
                } else {
                    self.emit("cvt.u32.u64", vec![d.into(), src.into()]);
                    if tb < 32 {
                        self.emit(
                            "and.b32",
                            vec![d.into(), d.into(), Operand::imm(if tb == 8 { 0xFF } else { 0xFFFF })],
                        );
                    }
                }
            }
            (true, false, _) => {
                let f = if from.reg_class() == RegClass::B64 {
                    if from.is_signed() { "s64" } else { "u64" }
                } else if from.is_signed() {
                    "s32"
                } else {
                    "u32"
                };
                self.emit(format!("cvt.rn.{}.{f}", to.ptx_arith()), vec![d.into(), src.into()]);
            }
            (false, true, _) => {
                // Float -> int saturates in both Rust and PTX; u8/u16
                // saturate through u32 and a clamp. NaN gives 0 in Rust, and
                // in PTX only from f32/f16 into 32 bits (from f64 or into 64
                // bits the hardware gives the most negative integer).
                let t = match to {
                    Scalar::U8 | Scalar::U16 | Scalar::U32 => "u32",
                    Scalar::I32 => "s32",
                    Scalar::I64 => "s64",
                    _ => "u64",
                };
                self.emit(format!("cvt.rzi.{t}.{}", from.ptx_arith()), vec![d.into(), src.into()]);
                if to.bits() < 32 {
                    self.emit(
                        "min.u32",
                        vec![
                            d.into(),
                            d.into(),
                            Operand::imm(if to.bits() == 8 { 0xFF } else { 0xFFFF }),
                        ],
                    );
                }
                if from == Scalar::F64 || to.bits() == 64 {
                    let nan = self.reg(RegClass::Pred);
                    let f = from.ptx_arith();
                    self.emit(format!("setp.nan.{f}"), vec![nan.into(), src.into(), src.into()]);
                    let bits = if to.bits() == 64 { "b64" } else { "b32" };
                    self.emit(
                        format!("selp.{bits}"),
                        vec![d.into(), Operand::imm(0), d.into(), nan.into()],
                    );
                }
            }
            (false, false, _) => {
                let rnd = if to.bits() < from.bits() { "rn." } else { "" };
                self.emit(
                    format!("cvt.{rnd}{}.{}", to.ptx_arith(), from.ptx_arith()),
                    vec![d.into(), src.into()],
                );
            }
        }
        Val::Reg(d)
    }
}
