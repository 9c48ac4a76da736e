use nvfp4_dsl::prelude::*;

#[device(methods)]
#[derive(Clone, Copy)]
struct Acc {
    sum: f32,
}

#[device]
impl Acc {
    fn add<T: Float>(&mut self, v: T) {
        self.sum += v.to_f32();
    }
}

#[kernel(targets(sm_90))]
fn k(x: &mut [f32]) {
    let mut a = Acc { sum: 0.0 };
    a.add(x[1]);
    x[0] = a.sum;
}

fn main() {}
