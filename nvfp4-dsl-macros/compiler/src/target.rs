//! Compilation targets: the one `Target` of the compiler and the runtime
//! (`nvfp4_dsl::Target` re-exports it). No dependency beyond `core`, so the
//! runtime takes it without the compiler (`default-features = false`).

use std::fmt;

/// A PTX target a kernel can be compiled for (`#[kernel(targets(..))]`),
/// oldest first. The order is the preference among targets a device runs
/// (sm_90a before sm_90 on a Hopper); what a target *has* is
/// [`Target::has`], not the order: sm_100a lacks sm_90a's wgmma.
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
    /// Every target, oldest first.
    pub const ALL: [Target; 4] = [Target::Sm80, Target::Sm90, Target::Sm90a, Target::Sm100a];

    /// The name PTX and ptxas use (`sm_90`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Sm100a => "sm_100a",
        }
    }

    /// The target PTX and ptxas call `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The Rust variant name (`Sm90`).
    pub fn variant(self) -> &'static str {
        match self {
            Target::Sm80 => "Sm80",
            Target::Sm90 => "Sm90",
            Target::Sm90a => "Sm90a",
            Target::Sm100a => "Sm100a",
        }
    }

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

    /// The lowest PTX ISA version (major*10 + minor) that knows the target.
    pub fn min_ptx(self) -> u32 {
        match self {
            Target::Sm80 => 70,
            Target::Sm90 => 78,
            Target::Sm90a => 80,
            Target::Sm100a => 86,
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

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    fn names_round_trip() {
        for t in Target::ALL {
            assert_eq!(Target::from_name(t.name()), Some(t));
            assert_eq!(t.to_string(), t.name());
        }
    }
}
