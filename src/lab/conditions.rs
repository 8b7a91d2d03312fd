//! The conditions a sweep ran under, kept in sweep.json beside its rows:
//! the host at the start and at the end (load average, steal, processes
//! busy beside the run), written before the first run and rewritten after
//! the last, and a one-line warning when the host was busy.

use std::path::Path;

use crate::proc::host::{self, Conditions};
use crate::proc::monitor::tree;
use crate::results::sweep_info::{BusyProcess, HostSample, SweepInfo, SWEEP_JSON};

/// A load average above this share of the cores means other work was
/// waiting for CPU beside the sweep.
const BUSY_LOADAVG_PER_CORE: f64 = 0.5;
/// Steal above this % means the hypervisor took time from the run.
const BUSY_STEAL_PCT: f64 = 5.0;

/// Watches the host for a moment; loadlab and its targets do not count as
/// busy processes.
pub fn sample_host() -> HostSample {
    let ours = tree(std::process::id());
    let Conditions {
        loadavg,
        steal_pct,
        busy,
    } = host::sample(host::SAMPLE_INTERVAL, &ours);
    HostSample {
        at: super::record::now_secs(),
        loadavg,
        steal_pct,
        busy_processes: busy
            .into_iter()
            .map(|b| BusyProcess {
                pid: b.pid,
                command: b.command,
                cpu_pct: b.cpu_pct,
            })
            .collect(),
    }
}

/// Why the host counts as busy, in a few words each; empty when it was
/// quiet.
pub fn busy_reasons(s: &HostSample, cores: usize) -> Vec<String> {
    let mut why = Vec::new();
    if s.loadavg[0] > BUSY_LOADAVG_PER_CORE * cores as f64 {
        why.push(format!(
            "load average {:.2} on {cores} core{}",
            s.loadavg[0],
            if cores == 1 { "" } else { "s" }
        ));
    }
    if s.steal_pct > BUSY_STEAL_PCT {
        why.push(format!("{:.0} % CPU stolen by the hypervisor", s.steal_pct));
    }
    if !s.busy_processes.is_empty() {
        let names: Vec<String> = s
            .busy_processes
            .iter()
            .take(3)
            .map(|p| {
                let name = p.command.split_whitespace().next().unwrap_or_default();
                let name = name.rsplit('/').next().unwrap_or(name);
                format!("{name} ({:.0} %)", p.cpu_pct)
            })
            .collect();
        let more = s.busy_processes.len().saturating_sub(names.len());
        why.push(format!(
            "busy: {}{}",
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    why
}

/// One line for the user when the host was busy at `when`, else None.
pub fn busy_warning(s: &HostSample, when: &str) -> Option<String> {
    let why = busy_reasons(s, crate::sys::cores());
    (!why.is_empty()).then(|| {
        format!(
            "the host was busy {when} ({}): results may be noisy; see sweep.json",
            why.join("; ")
        )
    })
}

/// Writes `out/sweep.json` whole (a rename, so a reader never sees half).
pub fn write(out: &Path, info: &SweepInfo) -> anyhow::Result<()> {
    let tmp = out.join(format!("{SWEEP_JSON}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(info)? + "\n")?;
    std::fs::rename(&tmp, out.join(SWEEP_JSON))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_host_has_no_reasons_and_a_busy_one_names_each() {
        let quiet = HostSample {
            loadavg: [0.9, 0.5, 0.2],
            steal_pct: 1.0,
            ..HostSample::default()
        };
        assert!(busy_reasons(&quiet, 2).is_empty());
        let busy = HostSample {
            loadavg: [3.5, 2.0, 1.0],
            steal_pct: 12.0,
            busy_processes: (0..5)
                .map(|i| BusyProcess {
                    pid: i,
                    command: "/usr/bin/rustc --edition 2021".into(),
                    cpu_pct: 95.0,
                })
                .collect(),
            ..HostSample::default()
        };
        let why = busy_reasons(&busy, 2);
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[0].contains("load average 3.50 on 2 cores"), "{why:?}");
        assert!(why[1].contains("12 % CPU stolen"), "{why:?}");
        assert!(
            why[2].contains("rustc (95 %)") && why[2].contains("and 2 more"),
            "{why:?}"
        );
    }
}
