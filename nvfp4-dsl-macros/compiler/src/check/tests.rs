//! Unit tests of the pass: inference, the errors, and intrinsic calls, on
//! kernels parsed from source.

use super::*;
use crate::parse::parse_kernel;

fn check_src(src: &str) -> Result<(Kernel, Types)> {
    let item: syn::ItemFn = syn::parse_str(src).expect("test source parses");
    let k = parse_kernel(&item, &[], &[])?;
    match check(&k)? {
        Checked::Types(t) => Ok((k, t)),
        Checked::Instantiate(_) => panic!("no generic device functions here"),
        Checked::Incomplete => panic!("`parse_kernel` gives no incomplete kernel"),
    }
}

fn err_of(src: &str) -> String {
    match check_src(src) {
        Ok(_) => panic!("expected an error for {src}"),
        Err(e) => e.to_string(),
    }
}

fn let_ty(k: &Kernel, t: &Types, name: &str) -> Ty {
    for s in &k.body.stmts {
        if let StmtKind::Let {
            pat: LetPat::Name { name: n, .. },
            init,
            ..
        } = &s.kind
            && n == name
        {
            return t.of(init).clone();
        }
    }
    panic!("no let {name}");
}

/// Found by the differential fuzzer: the arms of a `match` were unified
/// with the context's type hint (a cast's target), rejecting valid code.
#[test]
fn regression_match_arms_take_their_type_from_the_arms_not_the_context() {
    let (k, t) = check_src("fn k(v: u32) { let x = (match v { 0 => 5i32, _ => -3 }) as u64; }").unwrap();
    assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::U64));
}

#[test]
fn literals_take_their_type_from_context() {
    let (k, t) = check_src(
        "fn k(a: &mut [f32], n: u32) { let i = 1 + n; let x = 2.0; a[0] = x; let j = 3; let m = 4; let q = m + 1u64; }",
    )
    .unwrap();
    assert_eq!(let_ty(&k, &t, "i"), Ty::Scalar(Scalar::U32));
    assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::F32));
    assert_eq!(let_ty(&k, &t, "j"), Ty::Scalar(Scalar::I32));
    assert_eq!(let_ty(&k, &t, "m"), Ty::Scalar(Scalar::U64));
    let _ = let_ty(&k, &t, "q");
}

#[test]
fn operand_types_win_over_the_context() {
    let (k, t) = check_src("fn k(n: u32) { let a = (32 * n) as usize; let b: u64 = 1 + 2; }").unwrap();
    assert_eq!(let_ty(&k, &t, "a"), Ty::Scalar(Scalar::Usize));
    assert_eq!(let_ty(&k, &t, "b"), Ty::Scalar(Scalar::U64));
}

#[test]
fn float_literals_default_to_f64() {
    let (k, t) = check_src("fn k() { let x = 1.5; }").unwrap();
    assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::F64));
}

#[test]
fn index_types_follow_rust() {
    let e = err_of("fn k(a: &[f32], i: u32) { let x = a[i]; }");
    assert!(e.contains("indexed by `usize`"), "{e}");
    check_src("fn k(a: &[f32], i: u32) { let x = a[i as usize]; }").unwrap();
}

#[test]
fn mismatches_and_mutability_are_errors() {
    let e = err_of("fn k(n: u32, m: i32) { let x = n + m; }");
    assert!(e.contains("mismatched types"), "{e}");
    let e = err_of("fn k(n: u32) { let x = n; x = 3; }");
    assert!(e.contains("let mut x"), "{e}");
    let e = err_of("fn k(a: &[f32]) { a[0] = 1.0; }");
    assert!(e.contains("&mut [T]"), "{e}");
    let e = err_of("fn k(n: u32) { let x = -n; }");
    assert!(e.contains("cannot be negated"), "{e}");
    let e = err_of("fn k() { let x: u8 = 300; }");
    assert!(e.contains("out of range"), "{e}");
    let e = err_of("fn k() { let x: f32 = 1; }");
    assert!(e.contains("float literal"), "{e}");
}

#[test]
fn negative_literal_minimum_is_in_range() {
    check_src("fn k() { let x: i32 = -2147483648; }").unwrap();
}

#[test]
fn unknown_names_and_calls_are_errors() {
    let e = err_of("fn k() { let x = y; }");
    assert!(e.contains("cannot find `y`"), "{e}");
    let e = err_of("fn k() { let x = C; const C: u32 = 1; }");
    assert!(e.contains("unknown name `C`"), "{e}");
    let e = err_of("fn k() { helper(); }");
    assert!(e.contains("not an intrinsic"), "{e}");
    let e = err_of("fn k() { let t = thread_idx_x(1u32); }");
    assert!(e.contains("takes 0 arguments"), "{e}");
}

#[test]
fn intrinsic_calls_resolve() {
    let (k, t) =
        check_src("fn k(a: &[f32]) { let v = shfl_down(a[0], 1); let s = warp_reduce_sum(v); let l = lane_id(); }")
            .unwrap();
    assert_eq!(let_ty(&k, &t, "s"), Ty::Scalar(Scalar::F32));
    assert_eq!(let_ty(&k, &t, "l"), Ty::Scalar(Scalar::U32));
    assert_eq!(t.calls.len(), 3);
}

#[test]
fn if_else_as_value_and_never() {
    let (k, t) =
        check_src("fn k(n: u32) { let x = if n > 2 { 1u32 } else { 2 }; let y = if n > 3 { 5u64 } else { return; }; }")
            .unwrap();
    assert_eq!(let_ty(&k, &t, "x"), Ty::Scalar(Scalar::U32));
    assert_eq!(let_ty(&k, &t, "y"), Ty::Scalar(Scalar::U64));
    let e = err_of("fn k(n: u32) { let x = if n > 2 { 1u32 }; }");
    assert!(e.contains("without `else`"), "{e}");
}

#[test]
fn casts_follow_rust() {
    check_src("fn k(x: f32, b: bool) { let i = x as i32; let j = b as u32; let f = 3 as f32; }").unwrap();
    let e = err_of("fn k(x: f16) { let y = x as f32; }");
    assert!(e.contains(".to_f32()"), "{e}");
    let e = err_of("fn k(x: u32) { let y = x as bool; }");
    assert!(e.contains("compare instead"), "{e}");
}

#[test]
fn loops_bind_their_variable() {
    let (_, t) =
        check_src("fn k(a: &mut [f32], n: u32) { for i in (0..n).step_by(32) { a[i as usize] = 0.0; } }").unwrap();
    assert!(t.expr.contains(&Ty::Scalar(Scalar::U32)));
    let e = err_of("fn k() { break; }");
    assert!(e.contains("inside a loop"), "{e}");
}

#[test]
fn arrays_infer_from_use() {
    let (k, t) = check_src("fn k(a: &mut [f32]) { let mut acc = [0.0; 4]; acc[1] = a[0]; }").unwrap();
    assert_eq!(
        let_ty(&k, &t, "acc"),
        Ty::Array {
            elem: Box::new(Ty::Scalar(Scalar::F32)),
            len: Len::Lit(4)
        }
    );
    let (k, t) = check_src("fn k(a: &mut [f32]) { let mut acc = [0.0f32; 4]; acc[1] = a[0]; }").unwrap();
    assert_eq!(
        let_ty(&k, &t, "acc"),
        Ty::Array {
            elem: Box::new(Ty::Scalar(Scalar::F32)),
            len: Len::Lit(4)
        }
    );
}
