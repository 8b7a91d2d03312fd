//! Running a sweep: the schedule from `plan`, one raw row per run appended
//! as soon as it is measured. Runs already in raw.csv are not made again,
//! so a rerun into the same directory resumes. Ctrl-C ends the run in
//! progress without recording it, stops the target and keeps every row
//! before.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::plan::{self, Instance, Load, PlannedRun, SweepPlan};
use super::record;
use super::target::{Running, StartContext};
use crate::bench::{self, BenchConfig, RequestSpec};
use crate::net::url::HttpUrl;
use crate::proc::monitor::{self_cpu, Monitor};
use crate::proc::nginx::{find_nginx, INSTALL_HINT};
use crate::results::raw::{self, Machine, RawRow, MACHINE_JSON};

/// What a sweep tells its caller as it goes (for progress and notes).
#[derive(Debug)]
pub enum SweepEvent<'a> {
    /// Before the first run: the runs to make, and the measured runs of
    /// this plan that raw.csv already holds (not made again).
    Planned { runs: usize, already_done: usize },
    /// A line for the user: a target skipped, a dimension that does not
    /// apply to a target.
    Note(&'a str),
    /// A run was measured and recorded.
    Run(&'a RawRow),
    /// A target did not start: `row` records why, and its `runs` are off
    /// the total.
    Dropped { runs: usize, row: &'a RawRow },
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct SweepOutcome {
    /// Rows this invocation appended to raw.csv.
    pub rows: Vec<RawRow>,
    /// Ctrl-C ended the sweep; the run in progress then was not recorded.
    pub interrupted: bool,
}

/// `loadlab-results/YYYYmmdd-HHMMSS` in UTC.
pub fn default_out_dir() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = crate::sys::time::civil_from_days(days as i64);
    PathBuf::from(format!(
        "loadlab-results/{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// The results directory a sweep writes into, and its row numbering.
struct Journal<'a> {
    out: &'a Path,
    next_id: u64,
    outcome: SweepOutcome,
}

impl Journal<'_> {
    /// Appends `row` (numbered here) to raw.csv and keeps it.
    fn record(&mut self, mut row: RawRow) -> anyhow::Result<&RawRow> {
        row.run_id = self.next_id;
        self.next_id += 1;
        raw::append(self.out, std::slice::from_ref(&row))?;
        self.outcome.rows.push(row);
        Ok(self.outcome.rows.last().expect("just pushed"))
    }
}

/// Runs the plan into `out`, resuming what raw.csv there already holds.
/// `stop` is polled between runs, during runs and while a target starts;
/// `on_event` hears the plan, notes and each run (for progress).
pub fn run(
    plan: &SweepPlan,
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<SweepOutcome> {
    let existing = open_results(out)?;
    let schedule = plan::schedule(plan, &existing, find_nginx().is_some());
    let mut journal = Journal {
        out,
        next_id: existing.iter().map(|r| r.run_id).max().map_or(1, |m| m + 1),
        outcome: SweepOutcome::default(),
    };
    record_skips(&schedule.skipped, &existing, &mut journal, on_event)?;
    for n in &schedule.notes {
        on_event(SweepEvent::Note(n));
    }
    on_event(SweepEvent::Planned {
        runs: schedule.runs(),
        already_done: schedule.already_done,
    });
    let docroot = tempfile::Builder::new()
        .prefix("loadlab-docroot-")
        .tempdir()?;
    crate::server::handlers::write_embedded_docroot(docroot.path())?;
    let ctx = StartContext {
        exe: std::env::current_exe()?,
        docroot: docroot.path().to_path_buf(),
    };
    for inst in &schedule.instances {
        if stop() || !run_instance(plan, inst, &ctx, &mut journal, stop, on_event)? {
            journal.outcome.interrupted = true;
            break;
        }
    }
    Ok(journal.outcome)
}

/// Creates `out` with an (empty) raw.csv and machine.json, and returns the
/// rows it already holds. Appending to a file that cannot be read back
/// would bury the new rows with the old: that is refused.
fn open_results(out: &Path) -> anyhow::Result<Vec<RawRow>> {
    std::fs::create_dir_all(out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let existing = if out.join(raw::RAW_CSV).exists() {
        raw::read(out)
            .map_err(|e| anyhow::anyhow!("cannot resume into {}: {e:#}", out.display()))?
    } else {
        Vec::new()
    };
    // raw.csv exists from the start, so a sweep stopped before its first
    // run still renders a (empty) report.
    raw::append(out, &[])?;
    let machine_path = out.join(MACHINE_JSON);
    if !machine_path.exists() {
        std::fs::write(
            &machine_path,
            serde_json::to_string_pretty(&Machine::detect())? + "\n",
        )?;
    }
    Ok(existing)
}

/// One line for the user and one raw row per target left out because
/// nginx is not installed. A resumed sweep has recorded the skip already:
/// once is enough for the report, and raw.csv should not grow with every
/// rerun.
fn record_skips(
    skipped: &[(crate::results::config::RunConfig, usize)],
    existing: &[RawRow],
    journal: &mut Journal,
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<()> {
    if skipped.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = skipped.iter().map(|(c, _)| c.target.as_str()).collect();
    let runs: usize = skipped.iter().map(|(_, n)| n).sum();
    on_event(SweepEvent::Note(&format!(
        "{INSTALL_HINT}; skipping {} ({runs} run{})",
        names.join(", "),
        if runs == 1 { "" } else { "s" }
    )));
    for (config, _) in skipped {
        let mut row = record::config_row(config);
        row.set_skipped(INSTALL_HINT);
        let recorded = existing.iter().any(|r| {
            (&r.experiment, &r.target, &r.error) == (&row.experiment, &row.target, &row.error)
        });
        if !recorded {
            journal.record(row)?;
        }
    }
    Ok(())
}

/// Starts one target instance and makes its runs. Returns false when
/// Ctrl-C ended the sweep.
fn run_instance(
    plan: &SweepPlan,
    inst: &Instance,
    ctx: &StartContext,
    journal: &mut Journal,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<bool> {
    let running = match Running::start(inst.spec, ctx, inst.workers, inst.cpus, stop) {
        Ok(r) => r,
        // Ctrl-C while it started: nothing about the target is known.
        Err(_) if stop() => return Ok(false),
        Err(e) => {
            let mut row = record::config_row(&inst.config);
            row.set_failed(format!("target did not start: {e:#}"));
            let row = journal.record(row)?;
            on_event(SweepEvent::Dropped {
                runs: inst.runs.len(),
                row,
            });
            return Ok(true);
        }
    };
    for run in &inst.runs {
        if stop() {
            return Ok(false);
        }
        let row = measure(plan, &running, run, stop);
        // Ctrl-C cut this run short: its numbers describe part of a run,
        // so it is not recorded (a resumed sweep makes it again).
        if stop() {
            return Ok(false);
        }
        let row = journal.record(row)?;
        on_event(SweepEvent::Run(row));
    }
    Ok(true)
}

/// One bench run with the target's process tree and our own CPU watched.
fn measure(
    plan: &SweepPlan,
    running: &Running,
    run: &PlannedRun,
    stop: &(dyn Fn() -> bool + Sync),
) -> RawRow {
    let mut row = record::run_row(run);
    let url = format!("{}{}", running.base, run.config.path);
    let target = match HttpUrl::parse(&url) {
        Ok(t) => t,
        Err(e) => {
            row.set_failed(e.to_string());
            return row;
        }
    };
    let c = run.config.concurrency as usize;
    let cfg = BenchConfig {
        target,
        request: RequestSpec {
            method: "GET".into(),
            keep_alive: run.config.keepalive,
            ..RequestSpec::default()
        },
        requests: match run.load {
            Load::Requests(n) => Some(n.max(c as u64)),
            Load::Duration(_) => None,
        },
        duration: match run.load {
            Load::Duration(d) => Some(d),
            Load::Requests(_) => None,
        },
        concurrency: c,
        threads: plan.threads.unwrap_or_else(crate::sys::cores),
        timeout: plan.timeout,
        rate: None,
        warmup: None,
        variable_length: false,
    };
    let monitor = running.pid.map(Monitor::start);
    let cpu0 = self_cpu();
    let t0 = Instant::now();
    let result = bench::run(&cfg, Some(stop), false);
    let wall = t0.elapsed().as_secs_f64().max(1e-6);
    let client_cpu = (self_cpu() - cpu0).as_secs_f64() / wall * 100.0;
    let usage = monitor.map(Monitor::finish).unwrap_or_default();
    match result {
        Ok(r) => {
            record::fill_measured(&mut row, &r);
            row.server_cpu_pct = usage.cpu_pct;
            row.server_rss_peak_kb = usage.peak_rss_kb;
            row.client_cpu_pct = client_cpu;
            row.ok_responses = r.stats.answered_ok();
            row.ok_rps = row.ok_responses as f64 / r.seconds().max(1e-9);
        }
        Err(e) => row.set_failed(format!("{e:#}")),
    }
    row
}
