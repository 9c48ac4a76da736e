use nvfp4_dsl::prelude::*;

trait Get {
    fn get(self) -> u32;
}

#[device(methods)]
#[derive(Clone, Copy)]
struct ByTrait {
    v: u32,
}

#[device]
impl Get for ByTrait {
    fn get(self) -> u32 {
        self.v
    }
}

#[device(methods)]
#[derive(Clone, Copy)]
struct WithConst {
    v: u32,
}

#[device]
impl WithConst {
    const ONE: u32 = 1;

    fn get(self) -> u32 {
        self.v + Self::ONE
    }
}

#[device(methods)]
#[derive(Clone, Copy)]
struct TypedSelf {
    v: u32,
}

#[device]
impl TypedSelf {
    #[allow(clippy::needless_arbitrary_self_type)]
    fn get(self: Self) -> u32 {
        self.v
    }
}

#[kernel(targets(sm_90))]
fn by_trait(x: &mut [u32]) {
    let s = ByTrait { v: 1 };
    x[0] = s.get();
}

#[kernel(targets(sm_90))]
fn with_const(x: &mut [u32]) {
    let s = WithConst { v: 1 };
    x[0] = s.get();
}

#[kernel(targets(sm_90))]
fn typed_self(x: &mut [u32]) {
    let s = TypedSelf { v: 1 };
    x[0] = s.get();
}

fn main() {}
