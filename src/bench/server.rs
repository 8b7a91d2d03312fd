//! What `bench --server-pid` saw of a server it did not start, as plain
//! data for the report and the JSON: over the run, its process tree's CPU
//! (user and system), memory, run-queue wait and context switches; in a
//! short counting pass before the run, its syscalls by kind where the host
//! lets perf count them; with `--profile`, where its CPU went. The CLI
//! watches (through `proc`); bench only carries and renders the figures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sys::stacks::Summary;

/// A server's figures over one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFigures {
    pub pid: u32,
    /// Processes in its tree when the run ended.
    pub processes: usize,
    /// CPU time of the tree over the run (every thread and child, the
    /// exited ones too), and its split (clock ticks: 10 ms steps).
    pub cpu_ms: f64,
    pub cpu_user_ms: f64,
    pub cpu_system_ms: f64,
    /// `cpu_ms` per answered request, in µs (None without answers).
    pub cpu_us_per_request: Option<f64>,
    pub peak_rss_kb: u64,
    /// Time its threads waited, ready, for a CPU (a lower bound where
    /// threads exited mid-run).
    pub runq_wait_ms: f64,
    /// Context switches of its threads over the run, and the ones the
    /// scheduler forced, from /proc: lower bounds where threads lived
    /// shorter than a sample.
    pub ctx_switches: u64,
    pub ctx_involuntary: u64,
    /// The counting pass's figures; absent where the host forbids perf's
    /// counters (`counted_unavailable` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<Counted>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_unavailable: Option<String>,
    /// `--profile`: where its CPU time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ServerProfile>,
    /// Why `--profile` has no flame graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_unavailable: Option<String>,
}

/// What perf's counters counted over a pass of the same load before the
/// run: the counters slow every syscall (a new thread pays for copying
/// them), so the run itself is not counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// Requests the pass completed: what the counts are per.
    pub requests: u64,
    /// Syscalls by kind (read, write, epoll_wait, ..., other) and in all.
    pub syscalls: BTreeMap<String, u64>,
    pub syscalls_total: u64,
    /// perf's inherited counter: every thread, the exited ones too.
    pub ctx_switches: u64,
    /// io_uring submissions by opcode, where it made any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ring_ops: BTreeMap<String, u64>,
}

/// A profile of the server over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerProfile {
    #[serde(flatten)]
    pub stacks: Summary,
    /// The flame graph's file.
    pub flame_graph: String,
}

/// A count per request (None without requests).
pub fn per_request(n: f64, requests: u64) -> Option<f64> {
    (requests > 0).then(|| n / requests as f64)
}
