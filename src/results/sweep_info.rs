//! sweep.json: what a sweep's rows alone do not say. The command that
//! reproduces it, the baseline its comparisons are made against, how its
//! repeats were ordered, and what the host was doing at its start and end.
//! The sweep writes it; the report reads it when present.

use serde::{Deserialize, Serialize};

/// File name of the sweep description inside a results directory.
pub const SWEEP_JSON: &str = "sweep.json";

/// How a sweep was run, beside its raw rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepInfo {
    /// The command line that reproduces the sweep, shell-quoted.
    pub command: String,
    /// The target every comparison is made against (`--baseline`); `None`
    /// lets the report choose: nginx when present, else the first target.
    pub baseline: Option<String>,
    /// Round r of every target ran before round r + 1 of any, with every
    /// target started once and kept running for the whole sweep.
    pub interleaved: bool,
    /// The shortest a time-limited cell was let run (`--min-time`).
    pub min_time_s: f64,
    /// The host just before the first run and just after the last.
    pub host_start: Option<HostSample>,
    pub host_end: Option<HostSample>,
    /// What the sweep said about how it ran: where the load generator was
    /// pinned (or why not), dimensions that did not apply to a target.
    pub notes: Vec<String>,
}

/// The host's conditions at one moment, read from /proc over a short
/// interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostSample {
    /// Seconds since the Unix epoch.
    pub at: f64,
    /// /proc/loadavg: 1, 5 and 15 minutes.
    pub loadavg: [f64; 3],
    /// CPU time stolen by the hypervisor over the sampling interval, as a
    /// % of all CPU time in it.
    pub steal_pct: f64,
    /// Processes other than loadlab and its targets that used more than
    /// 10 % of a CPU over the sampling interval.
    pub busy_processes: Vec<BusyProcess>,
}

/// A process that was busy beside the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BusyProcess {
    pub pid: u32,
    pub command: String,
    /// % of one CPU over the sampling interval.
    pub cpu_pct: f64,
}
