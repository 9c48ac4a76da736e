//! Loads, stores, shared memory, the param space and atomics.

use super::*;

#[test]
fn loads_and_stores_of_every_width() {
    let body = "
\tadd.s64 %rd1, %rd28, 1;
\tld.global.u8 %r12, [%rd1];
\tld.global.s8 %r13, [%rd1+1];
\tld.global.s16 %r14, [%rd28+2];
\tld.global.u16 %r15, [%rd28+2];
\tld.global.s8 %rd2, [%rd28+3];
\tld.global.v2.u32 {%r16, %r17}, [%rd28+8];
\tld.global.nc.L1::no_allocate.L2::256B.v2.u64 {%rd3, %rd4}, [%rd28+16];
\tadd.u32 %r10, %r12, %r13;
\txor.b32 %r10, %r10, %r14;
\tshl.b32 %r18, %r15, 7;
\txor.b32 %r10, %r10, %r18;
\tmov.b64 {%r19, %r20}, %rd2;
\txor.b32 %r10, %r10, %r20;
\txor.b32 %r10, %r10, %r17;
\tmov.b64 {_, %r21}, %rd4;
\txor.b32 %r11, %r16, %r21;
\tmov.b64 {%r22, _}, %rd3;
\txor.b32 %r11, %r11, %r22;
";
    let ins = inputs(64, 19, &[0x8080_8080, 0x7F7F_7F7F, 0xFFFF_0000]);
    check(body, &ins, |x| {
        let b = |k: usize| (x[k / 4] >> (8 * (k % 4))) as u8;
        let r12 = u32::from(b(1));
        let r13 = i32::from(b(2) as i8) as u32;
        let r14 = i32::from((x[0] >> 16) as i16) as u32;
        let r15 = x[0] >> 16;
        let r20 = if (b(3) as i8) < 0 { u32::MAX } else { 0 };
        [
            r12.wrapping_add(r13) ^ r14 ^ (r15 << 7) ^ r20 ^ x[3],
            x[2] ^ x[7] ^ x[4],
        ]
    });
    // st.u8/st.u16 store the low bits of wider registers.
    let body = "
\tmul.wide.u32 %rd1, %r30, 8;
\tadd.s64 %rd2, %rd31, %rd1;
\tst.global.v2.u32 [%rd2], {%r1, %r2};
\tst.global.u8 [%rd2+1], %r3;
\tst.global.u16 [%rd2+6], %r3;
\tld.global.v2.u32 {%r10, %r11}, [%rd2];
";
    check(body, &ins, |x| {
        [
            (x[0] & 0xFFFF_00FF) | ((x[2] & 0xFF) << 8),
            (x[1] & 0xFFFF) | (x[2] << 16),
        ]
    });
}

#[test]
fn shared_memory_symbols_vectors_and_generic_addresses() {
    let body = "
\tmov.u32 %r12, sm;
\tshl.b32 %r13, %r30, 3;
\tadd.u32 %r14, %r12, %r13;
\tst.shared.v2.u32 [%r14], {%r1, %r2};
\tbar.sync 0;
\txor.b32 %r15, %r30, 1;
\tshl.b32 %r16, %r15, 3;
\tadd.u32 %r17, %r12, %r16;
\tld.shared.v2.u32 {%r10, %r18}, [%r17];
\tld.shared.u32 %r19, [sm+4];
\tcvta.shared.u64 %rd1, %r17;
\tld.u32 %r20, [%rd1+4];
\tcvta.to.shared.u64 %rd2, %rd1;
\tcvt.u32.u64 %r21, %rd2;
\tsub.u32 %r22, %r21, %r17;
\tadd.u32 %r11, %r20, %r22;
\txor.b32 %r11, %r11, %r19;
\tst.u16 [%rd1], %r1;
";
    let ins = inputs(64, 20, &[]);
    let got = run(body, &ins);
    for (t, g) in got.iter().enumerate() {
        let p = &ins[t ^ 1];
        assert_eq!(*g, [p[0], p[1] ^ ins[0][1]], "thread {t}");
    }
}

#[test]
fn param_space_of_every_size() {
    let src = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry p(
\t.param .u64 p_out,
\t.param .u8 p_b,
\t.param .u16 p_h,
\t.param .f32 p_f,
\t.param .f64 p_d,
\t.param .align 16 .b8 p_v[16]
)
{
\t.reg .b16 %h<2>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [p_out];
\tld.param.u8 %r1, [p_b];
\tld.param.s16 %r2, [p_h];
\tld.param.f32 %r3, [p_f];
\tld.param.u64 %rd2, [p_d];
\tld.param.v4.u32 {%r4, %r5, %r6, %r7}, [p_v];
\tld.param.u32 %r8, [p_v+8];
\tmov.b64 {%r9, %r10}, %rd2;
\tst.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r10};
\tst.global.v4.u32 [%rd1+16], {%r4, %r5, %r7, %r8};
\tret;
}
";
    let m = Module::parse(src).unwrap();
    let mut mem = Memory::new();
    let out = mem.alloc(32, true);
    let mut v = [0u8; 16];
    for (k, b) in v.iter_mut().enumerate() {
        *b = k as u8 * 3;
    }
    m.launch(
        "p",
        &Launch::new((1, 1, 1), (1, 1, 1), 0),
        &[
            ParamValue::U64(out),
            ParamValue::U8(200),
            ParamValue::U16(0x8001),
            ParamValue::F32(1.5),
            ParamValue::F64(-2.0),
            ParamValue::B128(v),
        ],
        &mut mem,
    )
    .unwrap();
    let got: Vec<u32> = mem
        .read(out, 32)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let word = |k: usize| u32::from_le_bytes(v[4 * k..4 * k + 4].try_into().unwrap());
    assert_eq!(
        got,
        vec![
            200,
            0xFFFF_8001,
            1.5f32.to_bits(),
            ((-2.0f64).to_bits() >> 32) as u32,
            word(0),
            word(1),
            word(3),
            word(2)
        ]
    );
}

#[test]
fn atomics() {
    // Thread 0 zeroes the shared counters first: reading shared memory
    // that nothing wrote is an error.
    let body = "
\tmov.u32 %r20, 0;
\tsetp.eq.u32 %p9, %r30, 0;
\t@%p9 st.shared.v4.u32 [sm], {%r20, %r20, %r20, %r20};
\tbar.sync 0;
\tmov.u32 %r12, 1;
\tatom.global.add.u32 %r10, [%rd31], %r12;
\tmax.u32 %r13, %r1, 0;
\tatom.shared.max.s32 %r14, [sm], %r1;
\tbar.sync 0;
\tld.shared.s32 %r11, [sm];
\tatom.shared.cas.b32 %r15, [sm+4], 0, %r30;
\tred.shared.add.f32 [sm+8], 0f3F800000;
";
    let ins = inputs(64, 21, &[]);
    let got = run(body, &ins);
    // Thread 0 wrote its own results over the counters last: check the
    // max and that the adds returned distinct old values.
    let max = ins.iter().map(|x| x[0] as i32).max().unwrap().max(0);
    for (t, g) in got.iter().enumerate() {
        assert_eq!(g[1], max as u32, "thread {t}");
    }
    let mut olds: Vec<u32> = got[1..].iter().map(|g| g[0]).collect();
    olds.sort_unstable();
    assert_eq!(olds.len(), 63);
    assert!(olds.windows(2).all(|w| w[0] < w[1]));
}
