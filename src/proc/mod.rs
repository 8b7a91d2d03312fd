//! Child processes and the machine they run on: one way to start and stop
//! a server under test (own process group, death signal, stderr tail),
//! free ports, CPU pinning, nginx, Go's net/http server, sampling a process
//! tree from /proc, the host's conditions around a run, and the targets
//! the jobs start (`target`: the one place that knows how, so check and
//! the lab start a server alike; it reads the model registry in
//! `results` and URLs from `net`).

pub mod affinity;
pub mod child;
pub mod go;
pub mod host;
pub mod monitor;
pub mod nginx;
pub mod ports;
pub mod profile;
pub mod syscalls;
pub mod target;
pub mod which;
