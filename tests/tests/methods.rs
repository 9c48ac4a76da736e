//! Methods of `#[device]` structs (`#[device] impl` blocks: `self`,
//! `mut self`, `&self`, `&mut self`, associated functions, method and path
//! syntax, a method calling methods and device functions, `Self`, early
//! `return`, on elements of arrays of structs, in the same module and
//! another), device functions taking `&Pair`, `&mut Pair` and `&[T; N]`
//! (`&x`, `&mut x[i]`, `&mut t.0` as arguments), and structs
//! as kernel parameters (the launcher takes the Rust struct; the kernel
//! reads its `#[repr(C)]` bytes). Run on the emulator against the same
//! methods called on the host, on random inputs, outputs poisoned first.

use nvfp4_dsl::prelude::*;
use nvfp4_kernels::rng::Rng;
use nvfp4_tests::struct_params::{Params, params_bits, read_params, struct_parameter};

/// A running sum of values with their count and extremes.
#[device(methods)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub sum: f32,
    pub count: u32,
    pub lo: f32,
    pub hi: f32,
}

#[device]
impl Stats {
    /// An associated function returning `Self`.
    pub fn starting_at(v: f32) -> Self {
        Self {
            sum: v,
            count: 1,
            lo: v,
            hi: v,
        }
    }

    /// Changes the caller's struct in place.
    pub fn push(&mut self, v: f32) {
        self.sum += v;
        self.count += 1;
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    /// Reads the caller's struct.
    pub fn mean(&self) -> f32 {
        self.sum / self.count as f32
    }

    /// By value; calls a `&self` method and a device function.
    pub fn spread(self) -> f32 {
        relative(self.hi - self.lo, self.mean())
    }

    /// `mut self`: changes a copy, and returns it.
    pub fn merged(mut self, other: Stats) -> Stats {
        self.sum += other.sum;
        self.count += other.count;
        self.lo = self.lo.min(other.lo);
        self.hi = self.hi.max(other.hi);
        self
    }

    /// Passes its `&mut self` on, by method and by path syntax.
    pub fn push_both(&mut self, v: f32) {
        self.push(v);
        Self::push(self, -v);
    }
}

#[device]
fn relative(range: f32, mean: f32) -> f32 {
    range / (mean.abs() + 1.0)
}

mod geometry {
    use nvfp4_dsl::prelude::*;

    /// `len` values from `start`.
    #[device(methods)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Span {
        pub start: u32,
        pub len: u32,
    }

    #[device]
    impl Span {
        pub fn new(start: u32, len: u32) -> Span {
            Span { start, len }
        }

        pub fn end(self) -> u32 {
            self.start.wrapping_add(self.len)
        }

        /// Calls a by-value method on `&self`.
        pub fn contains(&self, x: u32) -> bool {
            x >= self.start && x < self.end()
        }

        pub fn grow(&mut self, by: u32) {
            self.len = self.len.wrapping_add(by);
        }

        /// Shortens the span to end at `limit` at most: an early `return`
        /// out of a `&mut self` method, which still wrote the caller's.
        pub fn clip(&mut self, limit: u32) -> u32 {
            if self.start >= limit {
                self.len = 0;
                return 0;
            }
            if self.end() > limit {
                self.len = limit - self.start;
            }
            self.len
        }

        /// Uses a device function of its module by its plain name.
        pub fn hashed(&self) -> u32 {
            mix(self.start, self.len)
        }
    }

    #[device]
    pub fn mix(a: u32, b: u32) -> u32 {
        (a ^ b.rotate_left(7)).wrapping_mul(0x9E37_79B9)
    }

    /// A device function that takes a struct by `&mut` and by `&`.
    #[device]
    pub fn absorb(into: &mut Span, other: &Span) {
        into.grow(other.len);
        into.start = into.start.min(other.start);
    }
}

// The methods of `Span` call `mix` by its plain name: a kernel that
// imports `Span` imports `mix` too (as for device functions).
use geometry::{Span, mix};

/// What one thread computes from its seed values, on the device and on
/// the host: `[f32; 6]` from the statistics, `[u32; 10]` from the spans.
#[device]
fn thread_results(x: [f32; 4], s: [u32; 4]) -> ([f32; 6], [u32; 10]) {
    let mut st = Stats::starting_at(x[0]);
    st.push(x[1]);
    Stats::push(&mut st, x[2]);
    let other = Stats::starting_at(x[3]);
    let all = st.merged(other);
    let mut both = all;
    both.push_both(x[1] * 0.5);
    let floats = [
        st.mean(),
        Stats::mean(&all),
        all.spread(),
        Stats::spread(st),
        both.sum,
        both.hi,
    ];

    let mut a = geometry::Span::new(s[0] % 1000, s[1] % 100);
    let b = crate::geometry::Span::new(s[2] % 1000, s[3] % 100);
    let inside = a.contains(s[3] % 1100);
    a.grow(3);
    let mut spans = [a, b, Span::new(5, 9)];
    spans[1].grow(s[0] % 7);
    let clipped = spans[2].clip(s[1] % 12);
    geometry::absorb(&mut spans[0], &b);
    let mut c = b;
    Span::grow(&mut c, 11);
    // A field of a tuple by `&mut`, an array by `&`.
    let mut pair = (c, s[2]);
    Span::grow(&mut pair.0, 4);
    let ints = [
        u32::from(inside),
        a.end(),
        spans[0].start,
        spans[0].len,
        spans[1].len,
        clipped,
        spans[2].len ^ pair.0.len,
        Span::end(c),
        c.hashed() ^ sum_of(&s),
        u32::from(Span::contains(&c, s[0] % 1200)),
    ];
    (floats, ints)
}

#[device]
fn sum_of(v: &[u32; 4]) -> u32 {
    v[0].wrapping_add(v[1]).wrapping_add(v[2]).wrapping_add(v[3])
}

#[kernel(targets(sm_90))]
pub fn methods(xs: &[f32], seeds: &[u32], floats: &mut [f32], ints: &mut [u32]) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if i < seeds.len() / 4 {
        let (f, n) = thread_results(
            [xs[4 * i], xs[4 * i + 1], xs[4 * i + 2], xs[4 * i + 3]],
            [seeds[4 * i], seeds[4 * i + 1], seeds[4 * i + 2], seeds[4 * i + 3]],
        );
        #[unroll]
        for j in 0..6 {
            floats[6 * i + j] = f[j];
        }
        #[unroll]
        for j in 0..10 {
            ints[10 * i + j] = n[j];
        }
    }
}

#[test]
fn methods_compute_what_they_compute_on_the_host() {
    let device = Device::emulator(Target::Sm90);
    let n = 300usize;
    let mut rng = Rng::new(23);
    let xs: Vec<f32> = (0..4 * n).map(|_| rng.uniform(-50.0, 50.0)).collect();
    let seeds: Vec<u32> = (0..4 * n).map(|_| rng.next_u32()).collect();
    let (dx, ds) = (
        device.upload(&xs).expect("upload"),
        device.upload(&seeds).expect("upload"),
    );
    let mut floats = device.upload(&vec![f32::NAN; 6 * n]).expect("upload");
    let mut ints = device.upload(&vec![0xDEAD_BEEFu32; 10 * n]).expect("upload");
    // SAFETY: thread i reads 4 values of each input and writes its own 6
    // floats and 10 words.
    unsafe {
        methods::Kernel::launch(&device, LaunchConfig::linear(3, 128), &dx, &ds, &mut floats, &mut ints)
            .expect("launch")
    };
    let floats = device.download(&floats).expect("download");
    let ints = device.download(&ints).expect("download");
    for i in 0..n {
        let x: [f32; 4] = xs[4 * i..4 * i + 4].try_into().expect("4");
        let s: [u32; 4] = seeds[4 * i..4 * i + 4].try_into().expect("4");
        let (f, w) = thread_results(x, s);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&floats[6 * i..6 * i + 6]), bits(&f), "thread {i}: {x:?}");
        assert_eq!(ints[10 * i..10 * i + 10], w, "thread {i}: {s:?}");
    }
}

#[kernel(targets(sm_90))]
pub fn push_in_place(xs: &[f32], out: &mut [f32]) {
    let mut st = Stats::starting_at(xs[0]);
    st.push(xs[1]);
    out[0] = st.sum;
}

#[kernel(targets(sm_90))]
pub fn push_written_inline(xs: &[f32], out: &mut [f32]) {
    let first = xs[0];
    let mut st = Stats {
        sum: first,
        count: 1,
        lo: first,
        hi: first,
    };
    let v = xs[1];
    st.sum += v;
    st.count += 1;
    st.lo = st.lo.min(v);
    st.hi = st.hi.max(v);
    out[0] = st.sum;
}

#[test]
fn a_mut_self_method_adds_no_copy_of_its_struct() {
    // The instructions, with the kernel's name (in its parameters' names)
    // left out.
    let instructions = |v: &nvfp4_dsl::Variant| -> Vec<String> {
        v.ptx[0]
            .1
            .lines()
            .map(str::trim)
            .filter(|l| l.ends_with(';') && !l.starts_with("//") && !l.starts_with('.'))
            .map(|l| l.replace(v.kernel, "kernel"))
            .collect()
    };
    assert_eq!(
        instructions(&push_in_place::VARIANTS[0]),
        instructions(&push_written_inline::VARIANTS[0])
    );
}

#[test]
fn a_struct_parameter_is_read_at_its_repr_c_offsets() {
    let mut rng = Rng::new(7);
    for target in [Target::Sm90, Target::Sm100a] {
        let device = Device::emulator(target);
        for _ in 0..20 {
            let p = Params::random(&mut rng);
            assert_eq!(read_params(&device, p), params_bits(&p), "{p:?}");
        }
    }
    // cudarc's own launches take the struct too.
    fn device_repr<T: cudarc::driver::DeviceRepr>() {}
    device_repr::<Params>();
    // One parameter of the struct's size and alignment, each field loaded
    // from its offset.
    let ptx = struct_parameter::VARIANTS[0].ptx[0].1;
    assert_eq!(std::mem::size_of::<Params>(), 80);
    assert!(
        ptx.contains(".param .align 16 .b8 struct_parameter_param_p[80]"),
        "{ptx}"
    );
    for load in ["ld.param.u16", "[struct_parameter_param_p+20]", "ld.param.v4.u32"] {
        assert!(ptx.contains(load), "{load}: {ptx}");
    }
}

/// A struct parameter with methods, copied into a `mut` parameter.
#[kernel(targets(sm_90))]
pub fn span_parameter(mut span: Span, limit: u32, out: &mut [u32]) {
    let i = thread_idx_x();
    out[4 * i as usize] = u32::from(span.contains(i));
    if i == 0 {
        out[1] = span.clip(limit);
        out[2] = span.end();
        span.grow(1);
        out[3] = span.len;
    }
}

#[test]
fn a_struct_parameter_has_its_methods() {
    let device = Device::emulator(Target::Sm90);
    let mut rng = Rng::new(11);
    for _ in 0..10 {
        let span = Span::new(rng.below(40), rng.below(30));
        let limit = rng.below(80);
        let mut out = device.upload(&[0xDEAD_BEEFu32; 4 * 64]).expect("upload");
        // SAFETY: thread i writes out[4i], thread 0 out[1..4] too.
        unsafe { span_parameter::Kernel::launch(&device, LaunchConfig::linear(1, 64), span, limit, &mut out) }
            .expect("launch");
        let out = device.download(&out).expect("download");
        let mut host = span;
        let clipped = host.clip(limit);
        let end = host.end();
        host.grow(1);
        for i in 0..64u32 {
            assert_eq!(out[4 * i as usize], u32::from(span.contains(i)), "{span:?} {i}");
        }
        assert_eq!(out[1..4], [clipped, end, host.len], "{span:?} {limit}");
    }
}
