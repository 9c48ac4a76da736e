//! Notes whether this crate (the PTX emulator) is built without
//! optimisation, as a user's crate builds its dependencies in the default
//! dev profile: the emulator then says once how to fix it
//! (`emu::launch_hint`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(emu_unoptimised)");
    println!("cargo::rerun-if-env-changed=OPT_LEVEL");
    if std::env::var("OPT_LEVEL").is_ok_and(|l| l == "0") {
        println!("cargo::rustc-cfg=emu_unoptimised");
    }
}
