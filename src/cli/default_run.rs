//! `loadlab` with no arguments: the short comparison of every model (and
//! nginx) into a fresh ./loadlab-report/, the one before set aside.

use std::io::Write as _;
use std::path::Path;

use super::sweep::{execute, exit_if_interrupted, fail_if_nothing_usable};
use crate::lab::plan::SweepPlan;
use crate::lab::presets;
use crate::proc::nginx::find_nginx;
use crate::proc::target::TargetSpec;
use crate::results::raw;
use crate::results::sweep_info::SweepInfo;

/// Where `loadlab` with no arguments writes its report.
pub const DEFAULT_REPORT_DIR: &str = "loadlab-report";
/// Where the report of the invocation before goes, so that each
/// invocation's report holds its own runs only.
pub const PREVIOUS_REPORT_DIR: &str = "loadlab-report.previous";

/// `loadlab` with no arguments: the short comparison, into a fresh
/// ./loadlab-report/ (the one before moves to loadlab-report.previous/),
/// so its tables never average over several invocations.
pub fn run_default() -> anyhow::Result<()> {
    let dir = Path::new(DEFAULT_REPORT_DIR);
    if set_aside(dir, Path::new(PREVIOUS_REPORT_DIR))? {
        writeln!(
            std::io::stdout(),
            "loadlab: the previous report is now in {PREVIOUS_REPORT_DIR}/"
        )?;
    }
    let plan = presets::default_plan();
    let servers = plan
        .targets
        .iter()
        .filter(|t| !matches!(t, TargetSpec::Nginx { .. }) || find_nginx().is_some())
        .count();
    let objective = plan
        .capacity
        .as_ref()
        .map_or(String::new(), |c| c.objective.text());
    writeln!(
        std::io::stdout(),
        "loadlab: comparing {servers} servers on /500B.html: each one's capacity within {objective} (keep-alive on, {} connections), then cost and latency at one offered rate, a quarter of the lowest capacity, with keep-alive on and off ({} interleaved rounds of {} s runs); about {} s",
        plan.concurrency.first().copied().unwrap_or(0),
        plan.repeat,
        plan.min_time.as_secs_f64(),
        about_secs(&plan, servers)
    )?;
    let info = SweepInfo {
        command: "loadlab".into(),
        ..SweepInfo::default()
    };
    let outcome = execute(&plan, dir, info, false)?;
    exit_if_interrupted(&outcome);
    fail_if_nothing_usable(&outcome)
}

/// How long the bare run takes with `servers` targets: its cells, each
/// run's cost beyond its measured time, and each target's capacity
/// search (a check, the ladder, bisection and rounds), as measured on the
/// 2-core machine (docs/PERFORMANCE.md).
fn about_secs(plan: &SweepPlan, servers: usize) -> u64 {
    const PER_RUN_S: f64 = 0.05;
    const SEARCH_S: f64 = 7.0;
    const FIXED_S: f64 = 5.0;
    let runs = plan.runs() * servers / plan.targets.len().max(1);
    let cells = runs as f64 * (plan.min_time.as_secs_f64() + PER_RUN_S);
    (cells + servers as f64 * SEARCH_S + FIXED_S).round() as u64
}

/// Moves a previous report out of the way; true when there was one. A
/// directory that is not a loadlab report is never touched.
fn set_aside(dir: &Path, previous: &Path) -> anyhow::Result<bool> {
    let is_report = |d: &Path| d.join(raw::RAW_CSV).is_file();
    let is_empty = |d: &Path| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_none());
    if !dir.exists() {
        return Ok(false);
    }
    if !dir.is_dir() || !(is_report(dir) || is_empty(dir)) {
        anyhow::bail!(
            "{} exists and is not a loadlab report; move it away first",
            dir.display()
        );
    }
    if is_empty(dir) {
        return Ok(false);
    }
    if previous.exists() {
        if !previous.is_dir() || !(is_report(previous) || is_empty(previous)) {
            anyhow::bail!(
                "{} exists and is not a loadlab report; move it away first",
                previous.display()
            );
        }
        std::fs::remove_dir_all(previous)
            .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", previous.display()))?;
    }
    std::fs::rename(dir, previous).map_err(|e| {
        anyhow::anyhow!(
            "cannot move {} to {}: {e}",
            dir.display(),
            previous.display()
        )
    })?;
    Ok(true)
}
