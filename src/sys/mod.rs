//! Small system facts and helpers every layer may use: the cores this
//! process may use, the open-file limit, civil time, the kernel's TCP
//! counters. A leaf: it imports
//! nothing from the crate.

pub mod rlimit;
pub mod stacks;
pub mod tcp;
pub mod time;

/// Cores this process may run on (1 when the kernel will not say).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
