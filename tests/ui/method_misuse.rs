use nvfp4_dsl::prelude::*;

#[device(methods)]
#[derive(Clone, Copy)]
struct Acc {
    sum: u32,
}

#[device]
impl Acc {
    fn new() -> Acc {
        Acc { sum: 0 }
    }

    fn add(&mut self, v: u32) {
        self.sum += v;
    }

    fn get(&self) -> u32 {
        self.sum
    }
}

#[device(methods)]
#[derive(Clone, Copy)]
struct Locked {
    v: u32,
}

#[device]
impl Locked {
    fn reset(&self) {
        self.v = 0;
    }
}

#[device(methods)]
#[derive(Clone, Copy)]
struct Wrong {
    v: u32,
}

#[device]
impl Wrong {
    fn get(self) -> u32 {
        self.v as f32
    }
}

#[device]
#[derive(Clone, Copy)]
struct Plain {
    v: u32,
}

#[kernel(targets(sm_90))]
fn unknown_method(x: &mut [u32]) {
    let a = Acc::new();
    x[0] = a.total();
}

#[kernel(targets(sm_90))]
fn unknown_function(x: &mut [u32]) {
    let a = Acc::zero();
    x[0] = a.get();
}

#[kernel(targets(sm_90))]
fn without_impl(x: &mut [u32]) {
    let p = Plain { v: 1 };
    x[0] = p.twice();
}

#[kernel(targets(sm_90))]
fn immutable_receiver(x: &mut [u32]) {
    let a = Acc::new();
    a.add(1);
    x[0] = a.get();
}

#[kernel(targets(sm_90))]
fn function_as_method(x: &mut [u32]) {
    let a = Acc::new();
    x[0] = a.new().get();
}

#[kernel(targets(sm_90))]
fn by_value_to_mut(x: &mut [u32]) {
    let mut a = Acc::new();
    Acc::add(a, 1);
    x[0] = a.get();
}

#[kernel(targets(sm_90))]
fn assigns_through_shared_self(x: &mut [u32]) {
    let l = Locked { v: 1 };
    l.reset();
    x[0] = l.v;
}

#[kernel(targets(sm_90))]
fn error_in_method(x: &mut [u32]) {
    let w = Wrong { v: 1 };
    x[0] = w.get();
}

#[kernel(targets(sm_90))]
fn method_arity(x: &mut [u32]) {
    let mut a = Acc::new();
    a.add(1, 2);
    x[0] = a.get();
}

fn main() {}
