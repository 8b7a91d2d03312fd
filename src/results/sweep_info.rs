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
    /// `--shards`: each cell's load ran as this many shards, merged before
    /// its row was written (None: one process).
    pub shards: Option<u32>,
    /// `--launcher`: the command that started the shards (None with
    /// shards: local processes).
    pub launcher: Option<String>,
    /// What the sweep said about how it ran: where the load generator was
    /// pinned (or why not), dimensions that did not apply to a target.
    pub notes: Vec<String>,
    /// `--compare-to`: the earlier run the report compares this one with,
    /// as an absolute path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare_to: Option<String>,
    /// What the check before the first run found of each target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnoses: Vec<super::diagnosis::Diagnosis>,
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

/// A load average above this share of the cores means other work was
/// waiting for CPU beside the sweep.
pub const BUSY_LOADAVG_PER_CORE: f64 = 0.5;
/// Steal above this % means the hypervisor took time from the run.
pub const BUSY_STEAL_PCT: f64 = 5.0;

impl HostSample {
    /// Why the host counts as busy in this sample, in a few words each;
    /// empty when it was quiet. A sample taken just after the runs
    /// (`after_runs`) is not judged by its load average: the 1-minute
    /// average then still holds the sweep's own load (a 2-core machine
    /// ends a sweep at about 2).
    pub fn busy_reasons(&self, cores: Option<usize>, after_runs: bool) -> Vec<String> {
        let mut why = Vec::new();
        let over = |n: usize| self.loadavg[0] > BUSY_LOADAVG_PER_CORE * n as f64;
        if let Some(n) = cores.filter(|&n| !after_runs && over(n)) {
            why.push(format!(
                "load average {:.2} on {n} core{}",
                self.loadavg[0],
                if n == 1 { "" } else { "s" }
            ));
        }
        if self.steal_pct > BUSY_STEAL_PCT {
            why.push(format!(
                "{:.1} % of CPU time stolen by the hypervisor",
                self.steal_pct
            ));
        }
        if !self.busy_processes.is_empty() {
            let shown: Vec<String> = self
                .busy_processes
                .iter()
                .take(3)
                .map(|p| {
                    let name = p.command.split_whitespace().next().unwrap_or_default();
                    let name = name.rsplit('/').next().unwrap_or(name);
                    format!("{name} ({:.0} % CPU)", p.cpu_pct)
                })
                .collect();
            let more = self.busy_processes.len() - shown.len();
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            why.push(format!("other busy processes: {}{more}", shown.join(", ")));
        }
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_reasons_leave_the_sweeps_own_load_out() {
        let s = HostSample {
            loadavg: [1.9, 1.0, 0.5],
            steal_pct: 7.0,
            busy_processes: vec![BusyProcess {
                pid: 9,
                command: "/usr/bin/cc1 -O2 x.c".into(),
                cpu_pct: 95.0,
            }],
            ..HostSample::default()
        };
        let at_start = s.busy_reasons(Some(2), false);
        assert_eq!(
            at_start,
            [
                "load average 1.90 on 2 cores",
                "7.0 % of CPU time stolen by the hypervisor",
                "other busy processes: cc1 (95 % CPU)",
            ]
        );
        assert_eq!(s.busy_reasons(Some(2), true).len(), 2);
        assert_eq!(s.busy_reasons(None, false).len(), 2);
        assert!(HostSample::default()
            .busy_reasons(Some(2), false)
            .is_empty());
        let many = HostSample {
            busy_processes: vec![s.busy_processes[0].clone(); 5],
            ..HostSample::default()
        };
        assert_eq!(
            many.busy_reasons(Some(2), false),
            ["other busy processes: cc1 (95 % CPU), cc1 (95 % CPU), cc1 (95 % CPU) and 2 more"]
        );
    }
}
