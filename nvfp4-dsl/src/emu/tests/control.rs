//! Comparisons, predicates and divergent control flow.

use super::*;

#[test]
fn setp_every_comparison() {
    let ins = inputs(256, 16, F32_SPECIALS);
    let iops = ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"];
    let mut body = String::from("\tmov.u32 %r10, 0;\n\tmov.u32 %r11, 0;\n");
    for (k, op) in iops.iter().enumerate() {
        let ty = if k < 6 { "s32" } else { "u32" };
        body += &format!(
            "\tsetp.{op}.{ty} %p1, %r1, %r2;\n\tselp.u32 %r12, {}, 0, %p1;\n\tor.b32 %r10, %r10, %r12;\n",
            1 << k
        );
    }
    let fops = [
        "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
    ];
    body += "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n";
    for (k, op) in fops.iter().enumerate() {
        body += &format!(
            "\tsetp.{op}.f32 %p1, %f1, %f2;\n\tselp.u32 %r12, {}, 0, %p1;\n\tor.b32 %r11, %r11, %r12;\n",
            1 << k
        );
    }
    check(&body, &ins, |x| {
        let (a, b) = (sx(x[0]), sx(x[1]));
        let (ua, ub) = (x[0], x[1]);
        let ints = [
            a == b,
            a != b,
            a < b,
            a <= b,
            a > b,
            a >= b,
            ua < ub,
            ua <= ub,
            ua > ub,
            ua >= ub,
        ];
        let (p, q) = (f(x[0]), f(x[1]));
        let u = p.is_nan() || q.is_nan();
        let floats = [
            p == q,
            !u && p != q,
            p < q,
            p <= q,
            p > q,
            p >= q,
            u || p == q,
            u || p != q,
            u || p < q,
            u || p <= q,
            u || p > q,
            u || p >= q,
            !u,
            u,
        ];
        let bits = |v: &[bool]| v.iter().enumerate().fold(0u32, |m, (k, t)| m | (u32::from(*t) << k));
        [bits(&ints), bits(&floats)]
    });
    // Combining forms, p|q, predicate logic, f16 comparisons.
    check(
        "\tsetp.ne.u32 %p3, %r3, 0;\n\tsetp.lt.and.u32 %p1|%p2, %r1, %r2, %p3;\n\tsetp.ge.xor.s32 %p4, %r1, %r2, !%p3;\n\tand.pred %p5, %p1, %p4;\n\tor.pred %p6, %p2, %p5;\n\tnot.pred %p7, %p6;\n\tselp.u32 %r10, 1, 0, %p1;\n\tselp.u32 %r12, 2, 0, %p2;\n\tselp.u32 %r13, 4, 0, %p4;\n\tselp.u32 %r14, 8, 0, %p7;\n\tor.b32 %r10, %r10, %r12;\n\tor.b32 %r10, %r10, %r13;\n\tor.b32 %r10, %r10, %r14;\n\tmov.b32 {%h1, %h2}, %r4;\n\tsetp.gt.f16 %p8, %h1, %h2;\n\tsetp.leu.f16x2 %p9|%p10, %r4, %r5;\n\tselp.u32 %r12, 1, 0, %p8;\n\tselp.u32 %r13, 2, 0, %p9;\n\tselp.u32 %r14, 4, 0, %p10;\n\tor.b32 %r11, %r12, %r13;\n\tor.b32 %r11, %r11, %r14;\n",
        &inputs(256, 17, H_SPECIALS),
        |x| {
            let c = x[2] != 0;
            let lt = x[0] < x[1];
            let p1 = lt && c;
            let p2 = !lt && c;
            let p4 = (sx(x[0]) >= sx(x[1])) ^ !c;
            let p7 = !(p2 || (p1 && p4));
            let leu = |a: u32, b: u32| hv(a).is_nan() || hv(b).is_nan() || hv(a) <= hv(b);
            [
                u32::from(p1) | (u32::from(p2) << 1) | (u32::from(p4) << 2) | (u32::from(p7) << 3),
                u32::from(hv(x[3] & 0xFFFF) > hv(x[3] >> 16))
                    | (u32::from(leu(x[3] & 0xFFFF, x[4] & 0xFFFF)) << 1)
                    | (u32::from(leu(x[3] >> 16, x[4] >> 16)) << 2),
            ]
        },
    );
}

#[test]
fn divergent_branches_reconverge() {
    // Per-lane trip counts, a nested data-dependent branch, a guarded
    // instruction, then a full-warp shuffle that needs every lane back.
    let body = "
\tand.b32 %r12, %r1, 15;
\tmov.u32 %r10, 0;
\tmov.u32 %r13, 0;
$L_loop:
\tsetp.ge.u32 %p1, %r13, %r12;
\t@%p1 bra $L_done;
\tand.b32 %r14, %r13, 1;
\tsetp.eq.u32 %p2, %r14, 0;
\t@%p2 bra $L_even;
\tmul.lo.u32 %r15, %r13, 3;
\tadd.u32 %r10, %r10, %r15;
\tbra $L_next;
$L_even:
\tadd.u32 %r10, %r10, %r13;
$L_next:
\tadd.u32 %r13, %r13, 1;
\tbra.uni $L_loop;
$L_done:
\tsetp.gt.u32 %p3, %r2, 0x80000000;
\t@%p3 xor.b32 %r10, %r10, 0x100;
\tmov.u32 %r16, %laneid;
\txor.b32 %r17, %r16, 1;
\tshfl.sync.idx.b32 %r11, %r10, %r17, 0x1f, -1;
";
    let ins = inputs(96, 18, &[]);
    let own = |x: &[u32; 8]| {
        let mut s = 0u32;
        for k in 0..(x[0] & 15) {
            s += if k % 2 == 1 { 3 * k } else { k };
        }
        if x[1] > 0x8000_0000 {
            s ^= 0x100;
        }
        s
    };
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[0], own(&ins[t]), "thread {t}");
        assert_eq!(g[1], own(&ins[t ^ 1]), "thread {t}");
    }
}

#[test]
fn a_register_declared_twice_in_one_scope_is_an_error() {
    // What ptxas calls a duplicate definition: the same name, the same
    // range, a name inside a range (either first), whatever the types.
    for (body, twice) in [
        (".reg .b32 t;\n\t.reg .b32 t;", "`t`"),
        (".reg .b32 t;\n\t.reg .pred t;", "`t`"),
        (".reg .b32 a, a;", "`a`"),
        (".reg .b64 %r<2>;", "`%r<2>`"),
        (".reg .b32 %r5;", "`%r5`"),
        (".reg .b32 %r05;", "`%r05`"),
        (".reg .b32 %q7;\n\t.reg .b32 %q<9>;", "`%q7`"),
        ("{ .reg .b32 t; .reg .b32 t; }", "`t`"),
    ] {
        let e = try_run(&format!("\t{body}\n"), &[[0; 8]]).unwrap_err();
        assert!(
            e.message()
                .contains(&format!("{twice} is declared twice in this scope")),
            "{body}: {e}"
        );
        assert!(e.message().contains("Duplicate definition of variable"), "{body}: {e}");
    }
}

#[test]
fn blocks_scope_their_registers() {
    // A block's `t` hides the outer one until the block closes; blocks
    // side by side each have their own; names outside a range are free.
    check(
        "\t.reg .b32 t, %r32, %rd;\n\tmov.b32 t, 1;\n\t{ .reg .b32 t; mov.b32 t, 2; add.u32 %r10, t, %r1; }\n\t{ .reg .b32 t; mov.b32 t, 3; { .reg .b32 t; mov.b32 t, 4; } add.u32 %r11, t, t; }\n\tadd.u32 %r11, %r11, t;\n",
        &inputs(32, 3, &[]),
        |x| [x[0].wrapping_add(2), 7],
    );
}
