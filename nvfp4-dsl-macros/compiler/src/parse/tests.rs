//! Unit tests of the parser, through `parse_kernel`.

use super::{Result, parse_kernel};
use crate::ast::{ExprKind, Kernel, Lit, StmtKind};
use crate::types::{Scalar, Ty};

fn parse(src: &str) -> Result<Kernel> {
    parse_kernel(&syn::parse_str(src).expect("valid Rust"), &[])
}

fn error(src: &str) -> String {
    parse(src).expect_err("expected a parse error").to_string()
}

#[test]
fn reads_signature_consts_and_params() {
    let k = parse("fn k<const N: u32, const B: bool>(a: &[f32], b: &mut [u8], mut n: u32) {}").unwrap();
    assert_eq!(k.name, "k");
    assert_eq!(
        k.consts.iter().map(|c| (c.name.as_str(), c.ty)).collect::<Vec<_>>(),
        [("N", Scalar::U32), ("B", Scalar::Bool)]
    );
    assert_eq!(k.params.len(), 3);
    assert_eq!(
        k.params[0].ty,
        Ty::Slice {
            elem: Box::new(Ty::Scalar(Scalar::F32)),
            mutable: false
        }
    );
    assert!(matches!(&k.params[1].ty, Ty::Slice { mutable: true, .. }));
    assert!(k.params[2].mutable);
}

#[test]
fn reads_statements_and_loops() {
    let k = parse(
        "fn k(a: &mut [u32]) {
            let mut s = 0u32;
            #[unroll]
            for i in 0..4 { s += i; }
            for j in (0..8).step_by(2) { if j == 2 { continue; } }
            while s > 0 { s -= 1; }
            const C: u32 = 3;
            a[0] = s + C;
        }",
    )
    .unwrap();
    assert_eq!(k.body.stmts.len(), 6);
    let StmtKind::Expr(e, _) = &k.body.stmts[1].kind else {
        panic!("a loop")
    };
    let ExprKind::For(f) = &e.kind else {
        panic!("a for loop")
    };
    assert!(f.unroll && f.step.is_none() && !f.inclusive);
    let StmtKind::Expr(e, _) = &k.body.stmts[2].kind else {
        panic!("a loop")
    };
    let ExprKind::For(f) = &e.kind else {
        panic!("a for loop")
    };
    assert!(!f.unroll && f.step.is_some());
    assert!(matches!(k.body.stmts[4].kind, StmtKind::Const { .. }));
}

#[test]
fn expression_ids_are_unique() {
    let k = parse("fn k(a: &mut [u32]) { a[0] = a[1] + 2 * a[2]; }").unwrap();
    assert_eq!(k.expr_count, 13);
}

#[test]
fn statement_text_is_one_readable_line() {
    let k = parse("fn k(a: &mut [u32]) {\n    let v = shared_array::<u32, 4>();\n    for i in (0..4).step_by(2) { a[i as usize] = !a[0] & 3; }\n}").unwrap();
    assert_eq!(k.body.stmts[0].text, "let v = shared_array::<u32, 4>();");
    assert_eq!(k.body.stmts[1].text, "for i in (0..4).step_by(2) { ... }");
    assert_eq!(k.body.stmts[1].line, 3);
}

#[test]
fn rejects_constructs_outside_the_subset() {
    assert!(error("fn k() { let f = { |x: u32| x }; }").contains("bound with `let`"));
    assert!(error("fn k() { let f = |x: u32| { return x; }; }").contains("`return` in a closure"));
    assert!(error("fn k(a: &[u32]) { for p in a.iter().zip(a.iter()) {} }").contains("`zip` gives pairs"));
    assert!(error("fn k<T>() {}").contains("generic type parameters"));
    assert!(error("fn k(v: Vec<u32>) {}").contains("heap"));
    assert!(error("fn k() -> u32 { 0 }").contains("returns nothing"));
    assert!(error("fn k() { 'a: { break 'a; } }").contains("labeled blocks"));
    assert!(error("fn k(a: &[u32]) { for x in a.iter().skip(1).rev() {} }").contains("must be called on a range"));
    assert!(error("fn k(a: &[u32]) { for x in a.iter().skip(1) {} }").contains("other iterators are not supported"));
    assert!(error("fn k(a: &mut [u32]) { for mut x in a.iter_mut() {} }").contains("binds one name"));
    assert!(error("fn k(a: &mut [u32]) { for x in a.iter_mut() { let y = x; } }").contains("as `*v`"));
    assert!(error("fn k(a: &mut [u32]) { for x in a { *x = 1; } }").contains("by index"));
    assert!(error("fn k(a: &mut [u32]) { for mut x in a { *x += 1; } }").contains("by index"));
    assert!(error("fn k() { println!(\"x\"); }").contains("`ptx!`"));
    assert!(error("fn k() { let s = \"x\"; }").contains("literals"));
}

#[test]
fn named_constants_become_literals() {
    let k = parse("fn k(a: &mut [u32]) { a[0] = u32::MAX; }").unwrap();
    let StmtKind::Expr(e, _) = &k.body.stmts[0].kind else {
        panic!()
    };
    let ExprKind::Assign(_, v) = &e.kind else { panic!() };
    assert!(matches!(v.kind, ExprKind::Lit(Lit::Int(v, Some(Scalar::U32))) if v == u32::MAX as u128));
}
