//! Child processes and the machine they run on: one way to start and stop
//! a server under test (own process group, death signal, stderr tail),
//! free ports, CPU pinning, nginx, and sampling a process tree from /proc.

pub mod affinity;
pub mod child;
pub mod monitor;
pub mod nginx;
pub mod ports;
