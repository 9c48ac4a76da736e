use nvfp4_dsl::prelude::*;

#[device(methods)]
#[derive(Clone, Copy)]
struct NoImpl {
    v: u32,
}

#[device]
#[derive(Clone, Copy)]
struct NotMarked {
    v: u32,
}

#[device]
impl NotMarked {
    fn get(self) -> u32 {
        self.v
    }
}

mod inner {
    #[nvfp4_dsl::device(methods)]
    #[derive(Clone, Copy)]
    pub struct Elsewhere {
        pub v: u32,
    }

    #[nvfp4_dsl::device]
    impl Elsewhere {
        pub fn get(self) -> u32 {
            self.v
        }
    }
}

#[device]
impl inner::Elsewhere {
    fn twice(self) -> u32 {
        self.v * 2
    }
}

#[device]
#[derive(Clone, Copy)]
#[repr(packed)]
struct Packed {
    v: u32,
}

#[device(methods)]
fn not_a_struct() {}

struct Host {
    v: u32,
}

impl Host {
    #[device]
    fn get(&self) -> u32 {
        self.v
    }
}

fn main() {}
