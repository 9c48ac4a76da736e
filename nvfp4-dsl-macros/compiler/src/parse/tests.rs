//! Unit tests of the parser, through `parse_kernel`.

use super::{Result, parse_kernel};
use crate::ast::{ExprKind, Kernel, Lit, StmtKind};
use crate::types::{Scalar, Ty};

fn parse(src: &str) -> Result<Kernel> {
    parse_kernel(&syn::parse_str(src).expect("valid Rust"), &[], &[])
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

/// Compiles `kernel` (sm_90) with the `#[device]` items in `items`, each
/// fetched by its name; the PTX of each specialisation.
fn compile_with(attr: &str, kernel: &str, items: &[&str]) -> Result<Vec<String>> {
    let devices: Vec<(String, syn::Item)> = items
        .iter()
        .map(|src| {
            let item: syn::Item = syn::parse_str(src).expect("valid Rust");
            let name = match &item {
                syn::Item::Const(c) => c.ident.to_string(),
                syn::Item::Fn(f) => f.sig.ident.to_string(),
                other => panic!("not a const or a function: {other:?}"),
            };
            (name, item)
        })
        .collect();
    let item = syn::parse_str(kernel).expect("valid Rust");
    let c = crate::compile(
        attr.parse().expect("tokens"),
        &item,
        &devices,
        &crate::Options::default(),
    )?;
    Ok(c.variants.into_iter().map(|v| v.ptx[0].1.clone()).collect())
}

/// The instructions and declarations of a PTX text, without its comments.
fn code(ptx: &str) -> Vec<&str> {
    ptx.lines().filter(|l| !l.trim_start().starts_with("//")).collect()
}

const ITEMS: &[&str] = &[
    "const TILE: u32 = 32;",
    "const N: usize = (TILE / 16) as usize;",
    "const LUT: [u32; 4] = [1, 2, 3, TILE];",
    "const F: [f32; 3] = [1.5, -0.0, f32::INFINITY];",
    "const SMALL: bool = TILE < 16;",
];

#[test]
fn device_consts_fold_like_the_literals_they_stand_for() {
    let with = compile_with(
        "targets(sm_90)",
        "fn k(x: &mut [u32], i: u32) {
            let a = [0f32; N * 2];
            if TILE > 16 && !SMALL { x[0] = TILE * 2 + a.len() as u32; }
            let s = shared_array::<u32, { TILE as usize * (TILE as usize + 1) }>();
            s[i] = LUT[3];
            #[unroll]
            for j in 0..N { x[j + 1] = LUT[j] + j as u32; }
            match i { TILE => x[5] = 1, _ => {} }
        }",
        ITEMS,
    )
    .unwrap();
    let literal = compile_with(
        "targets(sm_90)",
        "fn k(x: &mut [u32], i: u32) {
            let a = [0f32; 4];
            if 32u32 > 16 && !false { x[0] = 32u32 * 2 + a.len() as u32; }
            let s = shared_array::<u32, 1056>();
            s[i] = 32u32;
            #[unroll]
            for j in 0..2usize { x[j + 1] = [1u32, 2][j] + j as u32; }
            match i { 32 => x[5] = 1, _ => {} }
        }",
        &[],
    )
    .unwrap();
    assert_eq!(code(&with[0]), code(&literal[0]));
    assert!(
        !with[0].contains(".const"),
        "constant indices need no table:\n{}",
        with[0]
    );
}

#[test]
fn a_table_indexed_at_run_time_is_const_data() {
    let ptx = compile_with(
        "targets(sm_90)",
        "fn k(x: &mut [u32], y: &mut [f32], i: u32) {
            x[0] = LUT[i as usize];
            y[0] = F[i as usize % 3];
            x[1] = LUT[i as usize + 1];
        }",
        ITEMS,
    )
    .unwrap();
    let ptx = &ptx[0];
    assert!(ptx.contains(".const .align 4 .u32 k_LUT[4] = {1, 2, 3, 32};"), "{ptx}");
    assert!(
        ptx.contains(".const .align 4 .f32 k_F[3] = {0f3FC00000, 0f80000000, 0f7F800000};"),
        "{ptx}"
    );
    assert_eq!(
        ptx.matches(".const .align").count(),
        2,
        "one declaration per table:\n{ptx}"
    );
    assert!(
        ptx.contains("mov.u64 %rd6, k_LUT;") && ptx.contains("ld.const.u32"),
        "{ptx}"
    );
    assert!(ptx.contains("ld.const.f32"), "{ptx}");
}

#[test]
fn specialize_lists_take_device_consts() {
    let ptx = compile_with(
        "targets(sm_90), specialize(B = [TILE, TILE * 2, 7])",
        "fn k<const B: u32>(x: &mut [u32]) { x[0] = B; }",
        ITEMS,
    )
    .unwrap();
    assert!(
        ptx[0].contains(".entry k__b_32(") && ptx[1].contains(".entry k__b_64("),
        "{}",
        ptx[0]
    );
    let e = compile_with(
        "targets(sm_90), specialize(B = [TILE, 32])",
        "fn k<const B: u32>() {}",
        ITEMS,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("value listed twice for `B`"), "{e}");
}

#[test]
fn device_const_errors_say_what_to_write() {
    let error = |kernel: &str, items: &[&str]| compile_with("targets(sm_90)", kernel, items).unwrap_err().to_string();
    let e = error("fn k(x: &mut [u32]) { x[0] = C; }", &["const C: u32 = make();"]);
    assert!(
        e.contains("a constant here is an expression of literals") && e.contains("`make(..)` is a call"),
        "{e}"
    );
    let e = error(
        "fn k(x: &mut [u32]) { x[0] = C; }",
        &["const C: u32 = 1u32.wrapping_add(2);"],
    );
    assert!(e.contains("`.wrapping_add(..)` is a call"), "{e}");
    let e = error(
        "fn k(x: &mut [u32]) { x[0] = C[0] as u32; }",
        &["const C: [bool; 2] = [true, false];"],
    );
    assert!(e.contains("store `bool`s as `u8`"), "{e}");
    let e = error("fn k(x: &mut [u32]) { x[0] = C as u32; }", &["const C: i8 = 1;"]);
    assert!(e.contains("a `#[device] const` is a number (`u8`"), "{e}");
    let e = error(
        "fn k(x: &mut [u32]) { x[0] = C; }",
        &["const C: u32 = D + 1;", "const D: u32 = C;"],
    );
    assert!(e.contains("defined in terms of itself"), "{e}");
    let e = error("fn k(x: &mut [u32]) { x[0] = C; }", &["const C: u32 = 1 / 0;"]);
    assert!(e.contains("divides by zero"), "{e}");
    let e = error("fn k(x: &mut [u32]) { x[0] = MISSING; }", &[]);
    assert!(
        e.contains("cannot find `MISSING`") && e.contains("#[device] const MISSING"),
        "{e}"
    );
    let e = error("fn k(x: &mut [u32]) { x[0] = LUT[4]; }", ITEMS);
    assert!(e.contains("index 4 is out of bounds for `LUT` of 4 elements"), "{e}");
    let e = error("fn k(i: usize) { LUT[i] = 1; }", ITEMS);
    assert!(e.contains("a `#[device] const` cannot be changed"), "{e}");
    let e = error("fn k<const M: usize>() { let a = [0u32; M * 2]; }", ITEMS);
    assert!(e.contains("`M` is a variable or a const generic"), "{e}");
    let e = error("fn k(x: &mut [u32]) { x[0] = C; }", &["const C: [u32; 2] = [1, 2, 3];"]);
    assert!(e.contains("expected an array of 2 elements, found one of 3"), "{e}");
    let e = error(
        "fn k(x: &mut [u32]) { x[0] = C[0] as u32; }",
        &["const C: [u8; 1 << 20] = [0; 1 << 20];"],
    );
    assert!(e.contains("holds at most 65536 elements"), "{e}");
    let e = error("fn k(x: &mut [u32]) { x[0] = f; }", &["fn f() {}"]);
    assert!(
        e.contains("`f` is a `#[device]` function or struct, not a value"),
        "{e}"
    );
}

#[test]
fn missing_devices_fetches_the_consts_a_kernel_names() {
    let item: syn::ItemFn = syn::parse_str(
        "fn k<const B: u32>(x: &mut [u32]) {
            let t = 4u32;
            x[0] = t + tiles::TILE + LUT[0] + shared_array::<u32, SIZE>()[0u32];
            match x[1] { ONE => {}, other => x[2] = other }
        }",
    )
    .unwrap();
    let attr: proc_macro2::TokenStream = "targets(sm_90), specialize(B = [WIDTH])".parse().unwrap();
    let keys = |devices: &[(String, syn::Item)]| -> Vec<String> {
        crate::missing_devices(attr.clone(), &item, devices)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    // `SIZE` in a turbofish reads as a type: fetched first, like a struct.
    assert_eq!(keys(&[]), ["SIZE"]);
    let size: syn::Item = syn::parse_str("const SIZE: usize = TILE_AREA;").unwrap();
    assert_eq!(
        keys(&[("SIZE".into(), size)]),
        ["tiles::TILE", "LUT", "TILE_AREA", "ONE", "WIDTH"]
    );
}
