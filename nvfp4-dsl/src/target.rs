//! Compilation targets and which devices run them.

use std::fmt;

/// A PTX target a kernel can be compiled for (`#[kernel(targets(..))]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Ampere (`sm_80`), PTX ISA 7.0+.
    Sm80,
    /// Hopper (`sm_90`), PTX ISA 7.8+.
    Sm90,
    /// Hopper with its architecture-specific features (`sm_90a`), PTX ISA
    /// 8.0+: the warpgroup MMA (`wgmma`) and `setmaxnreg`.
    Sm90a,
    /// Blackwell B200 with its architecture-specific features (`sm_100a`),
    /// PTX ISA 8.6+: the tcgen05 tensor cores and the NVFP4 conversions.
    Sm100a,
}

impl Target {
    /// The name PTX and ptxas use (`sm_90`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Sm100a => "sm_100a",
        }
    }

    /// Whether a device of compute capability `major.minor` runs PTX of this
    /// target. Plain targets run on their own and newer devices (the driver
    /// compiles them); `sm_90a` code runs only on compute capability 9.0 and
    /// `sm_100a` code only on 10.0, as "a" targets are not forward
    /// compatible.
    pub fn runs_on(self, major: u32, minor: u32) -> bool {
        match self {
            Target::Sm80 => major >= 8,
            Target::Sm90 => major >= 9,
            Target::Sm90a => (major, minor) == (9, 0),
            Target::Sm100a => (major, minor) == (10, 0),
        }
    }
}

impl Target {
    /// Whether code for this target may use what `feature` introduced (the
    /// PTX of a kernel compiled for `feature` runs where this target's
    /// would): the plain targets build on each other (sm_80, sm_90, then
    /// sm_90a and sm_100a), an "a" target's own features exist only there.
    pub fn has(self, feature: Target) -> bool {
        match feature {
            Target::Sm80 => true,
            Target::Sm90 => self != Target::Sm80,
            Target::Sm90a | Target::Sm100a => self == feature,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
    /// The PTX text for each target.
    pub ptx: &'static [(Target, &'static str)],
    /// The kernel calls [`grid_dependency_wait`](crate::intrinsics::grid_dependency_wait)
    /// before touching what the previous kernel writes, so the launcher lets
    /// it start while that kernel finishes (programmatic dependent launch).
    pub programmatic: bool,
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
    fn arch_specific_targets_run_only_on_their_device() {
        assert!(Target::Sm90.runs_on(9, 0));
        assert!(Target::Sm90.runs_on(10, 0));
        assert!(!Target::Sm90.runs_on(8, 9));
        assert!(Target::Sm100a.runs_on(10, 0));
        assert!(!Target::Sm100a.runs_on(10, 3));
        assert!(!Target::Sm100a.runs_on(9, 0));
        assert!(Target::Sm90a.runs_on(9, 0));
        assert!(!Target::Sm90a.runs_on(10, 0));
        assert!(!Target::Sm90a.runs_on(9, 1));
    }

    #[test]
    fn a_targets_have_their_own_features_only() {
        assert!(Target::Sm90a.has(Target::Sm90) && Target::Sm90a.has(Target::Sm90a));
        assert!(!Target::Sm100a.has(Target::Sm90a) && !Target::Sm90.has(Target::Sm90a));
        assert!(Target::Sm100a.has(Target::Sm90) && !Target::Sm90a.has(Target::Sm100a));
        assert!(!Target::Sm80.has(Target::Sm90));
    }

    #[test]
    fn selection_prefers_the_newest_fitting_target() {
        let v = Variant {
            kernel: "k",
            spec: "default",
            entry: "k",
            ptx: &[(Target::Sm90, "a"), (Target::Sm100a, "b")],
            programmatic: false,
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
            programmatic: false,
        };
        assert_eq!(hopper.select(9, 0), Some((Target::Sm90a, "h")));
        assert_eq!(hopper.select(10, 0), Some((Target::Sm100a, "b")));
        assert_eq!(hopper.select(12, 0), Some((Target::Sm90, "a")));
        assert_eq!(hopper.best_for(Target::Sm90a), Some((Target::Sm90a, "h")));
        assert_eq!(hopper.best_for(Target::Sm90), Some((Target::Sm90, "a")));
        assert_eq!(v.best_for(Target::Sm90a), Some((Target::Sm90, "a")));
    }
}
