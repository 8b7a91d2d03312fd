//! Process-wide facts every layer may read: the cores this process may use
//! and the open-file limit. A leaf: it imports nothing from the crate.

pub mod rlimit;

/// Cores this process may run on (1 when the kernel will not say).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
