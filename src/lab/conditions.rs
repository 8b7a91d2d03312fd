//! The conditions a sweep ran under, kept in sweep.json beside its rows:
//! the host at the start and at the end (load average, steal, processes
//! busy beside the run), written before the first run and rewritten after
//! the last, and a one-line warning when the host was busy.

use std::path::Path;

use crate::proc::host::{self, Conditions};
use crate::proc::monitor::tree;
use crate::results::sweep_info::{BusyProcess, HostSample, SweepInfo, SWEEP_JSON};

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

/// One line for the user when the host was busy at `when`, else None.
pub fn busy_warning(s: &HostSample, when: &str, after_runs: bool) -> Option<String> {
    let why = s.busy_reasons(Some(crate::sys::cores()), after_runs);
    (!why.is_empty()).then(|| {
        format!(
            "the host was busy {when} ({}): results may be noisy; see sweep.json",
            why.join("; ")
        )
    })
}

/// Writes `out/sweep.json` whole (a rename, so a reader never sees half).
pub fn write(out: &Path, info: &SweepInfo) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(info)? + "\n";
    crate::results::whole::write_whole(out, SWEEP_JSON, json.as_bytes())?;
    Ok(())
}
