//! Compilation targets (the compiler's own `Target`) and the compiled
//! variants of a kernel, with which device runs which.

pub use nvfp4_dsl_compiler::Target;

/// One compiled specialisation of a kernel: its entry name and its PTX for
/// each target. `#[kernel]` emits these as `<kernel>::VARIANTS`.
#[derive(Debug)]
pub struct Variant {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The specialisation's name: `default`, or the const generics and their
    /// values (`small_k_true`).
    pub spec: &'static str,
    /// The PTX entry name.
    pub entry: &'static str,
    /// The PTX text for each target, of this build: with `debug_assert!`s
    /// and the column checks of 2-D shared arrays where the crate that
    /// defines the kernel builds with `debug_assertions`, without them
    /// otherwise.
    pub ptx: &'static [(Target, &'static str)],
    /// Both builds' PTX, debug then release, where they differ (the kernel
    /// has such checks); `None` where `ptx` is the same for both.
    pub builds: Option<PtxBuilds>,
    /// The kernel and the device functions inlined into it, so that the
    /// emulator's errors name Rust lines.
    pub sources: &'static [SourceFn],
    /// The kernel calls [`grid_dependency_wait`](crate::intrinsics::grid_dependency_wait)
    /// before touching what the previous kernel writes, so the launcher lets
    /// it start while that kernel finishes (programmatic dependent launch).
    pub programmatic: bool,
    /// The kernel may let the next kernel launch before its own
    /// [`grid_dependency_wait`](crate::intrinsics::grid_dependency_wait)
    /// returned (a thread calls
    /// [`launch_dependents`](crate::intrinsics::launch_dependents), or
    /// returns, on a path where it has not waited: a wait in an `if` counts
    /// after it only when both branches wait, one in a loop not at all),
    /// so the kernel after
    /// it may run beside the kernel before it too: see
    /// [`Device::written_by_running_kernel`](crate::Device::written_by_running_kernel).
    pub triggers_early: bool,
}

/// The PTX text per target of a build with debug assertions, then of one
/// without (see [`Variant::builds`]).
pub type PtxBuilds = (&'static [(Target, &'static str)], &'static [(Target, &'static str)]);

/// A function whose statements the PTX's comments name, relative to its
/// `fn` line: `// 12: let x = ..;` in the kernel, `// name:3: ..` in an
/// inlined device function. The emulator turns them into `file:line`.
#[derive(Debug)]
pub struct SourceFn {
    /// The name the comments give it; empty for the kernel.
    pub name: &'static str,
    /// Its file, relative to its crate (`src/gemv.rs`); empty when unknown.
    pub file: &'static str,
    /// The line of its `fn` token.
    pub fn_line: u32,
}

impl Variant {
    /// The PTX for `target`, if the kernel was compiled for it.
    pub fn ptx_for(&self, target: Target) -> Option<&'static str> {
        self.ptx.iter().find(|(t, _)| *t == target).map(|(_, p)| *p)
    }

    /// The newest of this variant's targets whose code `target` runs (see
    /// [`Target::has`]): what an emulated `target` device runs.
    pub fn best_for(&self, target: Target) -> Option<(Target, &'static str)> {
        self.ptx
            .iter()
            .filter(|(t, _)| target.has(*t))
            .max_by_key(|(t, _)| *t)
            .copied()
    }

    /// The newest target of this variant that runs on a device of compute
    /// capability `major.minor` (an "a" target before its plain one).
    pub fn select(&self, major: u32, minor: u32) -> Option<(Target, &'static str)> {
        self.ptx
            .iter()
            .filter(|(t, _)| t.runs_on(major, minor))
            .max_by_key(|(t, _)| *t)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_prefers_the_newest_fitting_target() {
        let v = Variant {
            kernel: "k",
            spec: "default",
            entry: "k",
            ptx: &[(Target::Sm90, "a"), (Target::Sm100a, "b")],
            sources: &[],
            programmatic: false,
            triggers_early: false,
            builds: None,
        };
        assert_eq!(v.select(9, 0), Some((Target::Sm90, "a")));
        assert_eq!(v.select(10, 0), Some((Target::Sm100a, "b")));
        assert_eq!(v.select(12, 0), Some((Target::Sm90, "a")));
        assert_eq!(v.select(8, 0), None);
        let hopper = Variant {
            kernel: "k",
            spec: "default",
            entry: "k",
            ptx: &[(Target::Sm90, "a"), (Target::Sm90a, "h"), (Target::Sm100a, "b")],
            sources: &[],
            programmatic: false,
            triggers_early: false,
            builds: None,
        };
        assert_eq!(hopper.select(9, 0), Some((Target::Sm90a, "h")));
        assert_eq!(hopper.select(10, 0), Some((Target::Sm100a, "b")));
        assert_eq!(hopper.select(12, 0), Some((Target::Sm90, "a")));
        assert_eq!(hopper.best_for(Target::Sm90a), Some((Target::Sm90a, "h")));
        assert_eq!(hopper.best_for(Target::Sm90), Some((Target::Sm90, "a")));
        assert_eq!(v.best_for(Target::Sm90a), Some((Target::Sm90, "a")));
    }
}
