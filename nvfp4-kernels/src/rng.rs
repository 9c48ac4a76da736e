//! The deterministic random number generator (SplitMix64) of test inputs:
//! reproducible from a seed, the same in every test crate
//! ([`nvfp4_testkit`]).

pub use nvfp4_testkit::Rng;
