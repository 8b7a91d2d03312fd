//! `loadlab compare` on real runs: small sweeps of built-in models and of
//! a Python server slowed on purpose, bench JSONs taken as repeats, stress
//! directories, the four outputs, the gates and bad input.

mod bench;
mod inputs;
mod outputs;
mod stress;
pub mod support;
mod sweeps;
