//! Instruction-level tests: small hand-written kernels per instruction
//! family, run through the public API.
