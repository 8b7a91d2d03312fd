//! Reading one side: a sweep directory (raw.csv with machine.json and
//! sweep.json), a stress directory, or bench JSON files taken as repeats
//! of one cell, each turned into cells of per-run values. A path that is
//! none of these is the caller's mistake (`InputError`).

use std::path::{Path, PathBuf};

use super::model::{Cell, Kind, Metric, Run, Side};
use super::side_files::{bench_side, stress_side};
use crate::report::summary::{Group, SweepSummary};
use crate::report::{baseline, load as load_sweep, stress_page, InputError};
use crate::results::config::RunConfig;
use crate::results::raw::{RawRow, RAW_CSV};
use crate::results::sweep_info::SweepInfo;

/// Reads a side from the paths given for it: one directory, or bench
/// JSON files.
pub fn load(paths: &[PathBuf]) -> Result<Side, InputError> {
    let source = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    match paths {
        [] => Err(InputError::Unreadable("a side names no result".into())),
        [dir] if dir.is_dir() => directory(dir, source),
        files => bench_side(files, source),
    }
}

fn directory(dir: &Path, source: String) -> Result<Side, InputError> {
    if !dir.join(RAW_CSV).exists() && stress_page::is_stress_dir(dir) {
        return stress_side(dir, source);
    }
    let inputs = load_sweep(dir)?;
    let s = inputs.summary();
    if s.groups.is_empty() {
        return Err(InputError::Unreadable(format!(
            "{} has no measured run",
            dir.display()
        )));
    }
    let cores = inputs.machine.as_ref().map(|m| m.cores);
    Ok(Side {
        source,
        kind: Kind::Sweep,
        version: inputs.machine.as_ref().map(|m| m.loadlab_version.clone()),
        machine: inputs.machine.clone(),
        cpu_split: inputs.info.as_ref().map(cpu_split).unwrap_or_default(),
        host: inputs
            .info
            .as_ref()
            .map(|i| host_lines(i, cores))
            .unwrap_or_default(),
        cells: sweep_cells(&s),
    })
}

/// sweep.json's notes on where the server and the load generator ran.
fn cpu_split(info: &SweepInfo) -> Vec<String> {
    info.notes
        .iter()
        .filter(|n| n.contains("CPU") && n.contains("load generator"))
        .cloned()
        .collect()
}

/// The host's condition at the sweep's start and end, in words.
fn host_lines(info: &SweepInfo, cores: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    for (when, sample, after) in [
        ("start", &info.host_start, false),
        ("end", &info.host_end, true),
    ] {
        let Some(h) = sample else { continue };
        let why = h.busy_reasons(cores, after);
        let busy = if why.is_empty() {
            "quiet".to_string()
        } else {
            format!("busy: {}", why.join("; "))
        };
        out.push(format!(
            "at {when}: load {:.2}, steal {:.1} %, {busy}",
            h.loadavg[0], h.steal_pct
        ));
    }
    out
}

/// Each configuration of the sweep as a cell, with its baseline's
/// counterpart for the double ratio.
fn sweep_cells(s: &SweepSummary) -> Vec<Cell> {
    let keys: Vec<&RunConfig> = s.groups.iter().map(|g| &g.key).collect();
    s.groups
        .iter()
        .map(|g| {
            let base = s
                .baseline_of(&g.key.experiment)
                .filter(|b| *b != g.key.target)
                .and_then(|b| baseline::counterpart(&keys, &g.key, b))
                .map(|i| (s.groups[i].key.target.clone(), runs(&s.groups[i])));
            Cell {
                target: g.key.target.clone(),
                dims: dims(&g.key),
                load: g.key.load_label(),
                runs: runs(g),
                failed: g.runs.iter().map(|r| r.failed).sum::<u64>() + g.error_runs as u64,
                client_bound: g.runs.iter().any(|r| r.client_bound),
                baseline: base,
            }
        })
        .collect()
}

/// The dimensions that name a sweep cell besides its target and load.
fn dims(k: &RunConfig) -> Vec<(&'static str, String)> {
    let slow = if k.slow.is_none() {
        String::new()
    } else {
        format!("{}x{}", k.slow_conns, k.slow.name())
    };
    let nonzero = |n: u64| if n == 0 { String::new() } else { n.to_string() };
    vec![
        ("experiment", k.experiment.clone()),
        ("path", k.path.clone()),
        ("c", k.concurrency.to_string()),
        ("rate", k.rate.map(|r| r.to_string()).unwrap_or_default()),
        ("keepalive", if k.keepalive { "on" } else { "off" }.into()),
        ("workers", nonzero(k.workers)),
        ("cpus", nonzero(k.cpus)),
        ("slow", slow),
    ]
}

fn runs(g: &Group) -> Vec<Run> {
    g.runs.iter().map(run_of).collect()
}

/// One raw row's figures. CPU and RSS only where the server was watched
/// (a `url:` target's are unknown, not zero).
fn run_of(r: &RawRow) -> Run {
    let watched = r.server_rss_peak_kb > 0;
    let mut values = vec![
        (Metric::Rps, r.ok_rps),
        (Metric::P50, r.p50_ms),
        (Metric::P99, r.p99_ms),
        (Metric::P999, r.p99_9_ms),
    ];
    if watched && r.server_cpu_ms > 0.0 && r.complete > 0 {
        let per = r.server_cpu_ms * 1000.0 / r.complete as f64;
        values.push((Metric::CpuPerRequest, per));
    }
    if watched {
        values.push((Metric::Rss, r.server_rss_peak_kb as f64 / 1024.0));
    }
    Run {
        round: r.repeat,
        values: values.into_iter().collect(),
    }
}
