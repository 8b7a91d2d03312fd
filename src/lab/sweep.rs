//! Runs a sweep: every combination of the plan's dimensions against every
//! target, one raw row per run appended as soon as it is measured, then the
//! derived report. Ctrl-C stops between runs; rows so far are kept.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::monitor::{self_cpu, Monitor};
use super::nginx::{find_nginx, INSTALL_HINT};
use super::raw::{self, Machine, RawRow, MACHINE_JSON};
use super::target::{Running, StartContext, TargetSpec};
use crate::bench::stats::Summary;
use crate::bench::{self, BenchConfig, BenchResult, RequestSpec, Target};

/// How much load one run applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    Requests(u64),
    Duration(Duration),
}

/// The dimensions of a sweep; every list is iterated in full.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub experiment: String,
    pub targets: Vec<TargetSpec>,
    pub concurrency: Vec<usize>,
    pub loads: Vec<Load>,
    pub keepalive: Vec<bool>,
    pub paths: Vec<String>,
    /// None = the target's own default.
    pub workers: Vec<Option<usize>>,
    /// None = not restricted.
    pub cpus: Vec<Option<usize>>,
    pub repeat: usize,
    /// Runs before the measured repeats of each configuration, recorded as
    /// warm-up and left out of summaries.
    pub warmup_runs: usize,
    pub timeout: Duration,
    /// Load-generator threads (None: one per core).
    pub threads: Option<usize>,
}

impl SweepPlan {
    /// Number of bench runs the plan makes (for progress and ETA).
    pub fn runs(&self) -> usize {
        self.targets.len()
            * self.workers.len()
            * self.cpus.len()
            * self.paths.len()
            * self.keepalive.len()
            * self.loads.len()
            * self.concurrency.len()
            * (self.repeat + self.warmup_runs)
    }
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<RawRow>,
    /// Targets left out, with the reason (nginx not installed, ...).
    pub skipped: Vec<String>,
    pub interrupted: bool,
}

/// `loadlab-results/YYYYmmdd-HHMMSS` in UTC.
pub fn default_out_dir() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    PathBuf::from(format!(
        "loadlab-results/{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Runs the plan into `out`. `stop` is polled between and during runs;
/// `on_run` is told after each run (for progress).
pub fn run(
    plan: &SweepPlan,
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
    on_run: &mut dyn FnMut(&RawRow),
) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let machine_path = out.join(MACHINE_JSON);
    if !machine_path.exists() {
        std::fs::write(
            &machine_path,
            serde_json::to_string_pretty(&Machine::detect())? + "\n",
        )?;
    }
    let docroot = tempfile::Builder::new()
        .prefix("loadlab-docroot-")
        .tempdir()?;
    crate::server::handlers::write_embedded_docroot(docroot.path())?;
    let ctx = StartContext {
        exe: std::env::current_exe()?,
        docroot: docroot.path().to_path_buf(),
    };
    let mut next_id = raw::read(out)
        .ok()
        .and_then(|rows| rows.iter().map(|r| r.run_id).max())
        .map_or(1, |m| m + 1);
    let mut outcome = Outcome::default();
    'targets: for spec in &plan.targets {
        if matches!(spec, TargetSpec::Nginx { .. }) && find_nginx().is_none() {
            outcome.skipped.push(format!("{spec}: {INSTALL_HINT}"));
            continue;
        }
        for &workers in &plan.workers {
            for &cpus in &plan.cpus {
                if stop() {
                    outcome.interrupted = true;
                    break 'targets;
                }
                let base = RowBase {
                    experiment: &plan.experiment,
                    target: spec.to_string(),
                    workers: spec.workers(workers) as u64,
                    cpus: cpus.unwrap_or(0) as u64,
                };
                let running = match Running::start(spec, &ctx, workers, cpus) {
                    Ok(r) => r,
                    Err(e) => {
                        let mut row = base.empty_row(next_id);
                        next_id += 1;
                        row.error = format!("target did not start: {e:#}");
                        raw::append(out, std::slice::from_ref(&row))?;
                        on_run(&row);
                        outcome.rows.push(row);
                        continue;
                    }
                };
                for path in &plan.paths {
                    for &ka in &plan.keepalive {
                        for &load in &plan.loads {
                            for &c in &plan.concurrency {
                                for i in 0..plan.warmup_runs + plan.repeat {
                                    if stop() {
                                        outcome.interrupted = true;
                                        break 'targets;
                                    }
                                    let warm = i < plan.warmup_runs;
                                    let repeat = if warm {
                                        i + 1
                                    } else {
                                        i - plan.warmup_runs + 1
                                    };
                                    let cfg = Cell {
                                        path,
                                        ka,
                                        load,
                                        c,
                                        repeat,
                                        warm,
                                    };
                                    let row = measure(plan, &base, &running, &cfg, next_id, stop);
                                    next_id += 1;
                                    raw::append(out, std::slice::from_ref(&row))?;
                                    on_run(&row);
                                    outcome.rows.push(row);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(outcome)
}

struct RowBase<'a> {
    experiment: &'a str,
    target: String,
    workers: u64,
    cpus: u64,
}

struct Cell<'a> {
    path: &'a str,
    ka: bool,
    load: Load,
    c: usize,
    repeat: usize,
    warm: bool,
}

impl RowBase<'_> {
    fn empty_row(&self, id: u64) -> RawRow {
        let zero = Summary::of(&crate::bench::stats::new_histogram());
        let mut r = row_from(self, id, None, zero, zero, zero, zero);
        r.error.clear();
        r
    }
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One bench run with the target's process tree and our own CPU watched.
fn measure(
    plan: &SweepPlan,
    base: &RowBase,
    running: &Running,
    cell: &Cell,
    id: u64,
    stop: &(dyn Fn() -> bool + Sync),
) -> RawRow {
    let started_at = now_secs();
    let url = format!("{}{}", running.base, cell.path);
    let cfg = match Target::parse(&url) {
        Ok(target) => BenchConfig {
            target,
            request: RequestSpec {
                method: "GET".into(),
                keep_alive: cell.ka,
                ..RequestSpec::default()
            },
            requests: match cell.load {
                Load::Requests(n) => Some(n.max(cell.c as u64)),
                Load::Duration(_) => None,
            },
            duration: match cell.load {
                Load::Duration(d) => Some(d),
                Load::Requests(_) => None,
            },
            concurrency: cell.c,
            threads: plan
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            timeout: plan.timeout,
            rate: None,
            warmup: None,
            variable_length: false,
        },
        Err(e) => return failed_row(base, id, cell, started_at, e.0),
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
            let l = &r.stats.latency;
            let mut row = row_from(
                base,
                id,
                Some(&r),
                Summary::of(&l.connect),
                Summary::of(&l.processing),
                Summary::of(&l.waiting),
                Summary::of(&l.total),
            );
            fill_cell(&mut row, cell, started_at);
            row.server_cpu_pct = usage.cpu_pct;
            row.server_rss_peak_kb = usage.peak_rss_kb;
            row.client_cpu_pct = client_cpu;
            row
        }
        Err(e) => failed_row(base, id, cell, started_at, format!("{e:#}")),
    }
}

fn failed_row(base: &RowBase, id: u64, cell: &Cell, started_at: f64, error: String) -> RawRow {
    let mut row = base.empty_row(id);
    fill_cell(&mut row, cell, started_at);
    row.error = error;
    row
}

fn fill_cell(row: &mut RawRow, cell: &Cell, started_at: f64) {
    row.started_at = started_at;
    row.path = cell.path.to_string();
    row.concurrency = cell.c as u64;
    row.keepalive = cell.ka;
    row.repeat = cell.repeat as u64;
    row.warmup = cell.warm;
    match cell.load {
        Load::Requests(n) => row.requests = n.max(cell.c as u64),
        Load::Duration(d) => row.duration_s = d.as_secs_f64(),
    }
}

fn row_from(
    base: &RowBase,
    id: u64,
    r: Option<&BenchResult>,
    connect: Summary,
    processing: Summary,
    waiting: Summary,
    total: Summary,
) -> RawRow {
    let s = r.map(|r| &r.stats);
    let n = |f: fn(&crate::bench::Stats) -> u64| s.map_or(0, f);
    let x = |f: fn(&BenchResult) -> f64| r.map_or(0.0, f);
    RawRow {
        run_id: id,
        started_at: 0.0,
        experiment: base.experiment.to_string(),
        target: base.target.clone(),
        workers: base.workers,
        cpus: base.cpus,
        path: String::new(),
        concurrency: 0,
        requests: 0,
        duration_s: 0.0,
        keepalive: false,
        repeat: 0,
        warmup: false,
        time_taken_s: x(BenchResult::seconds),
        complete: n(|s| s.complete),
        failed: n(|s| s.failed()),
        non_2xx: n(|s| s.non_2xx),
        timeouts: n(|s| s.timeouts),
        total_bytes: n(|s| s.total_bytes),
        html_bytes: n(|s| s.html_bytes),
        requests_per_second: x(BenchResult::requests_per_second),
        time_per_request_ms: x(BenchResult::time_per_request_ms),
        time_per_request_all_ms: x(BenchResult::time_per_request_all_ms),
        transfer_kbps: x(BenchResult::transfer_rate_kbps),
        connect_min_ms: connect.min,
        connect_mean_ms: connect.mean,
        connect_sd_ms: connect.stdev,
        connect_median_ms: connect.p50,
        connect_max_ms: connect.max,
        processing_min_ms: processing.min,
        processing_mean_ms: processing.mean,
        processing_sd_ms: processing.stdev,
        processing_median_ms: processing.p50,
        processing_max_ms: processing.max,
        waiting_min_ms: waiting.min,
        waiting_mean_ms: waiting.mean,
        waiting_sd_ms: waiting.stdev,
        waiting_median_ms: waiting.p50,
        waiting_max_ms: waiting.max,
        total_min_ms: total.min,
        total_mean_ms: total.mean,
        total_sd_ms: total.stdev,
        total_median_ms: total.p50,
        total_max_ms: total.max,
        p50_ms: total.p50,
        p66_ms: total.p66,
        p75_ms: total.p75,
        p80_ms: total.p80,
        p90_ms: total.p90,
        p95_ms: total.p95,
        p98_ms: total.p98,
        p99_ms: total.p99,
        p99_9_ms: total.p99_9,
        p100_ms: total.max,
        server_cpu_pct: 0.0,
        server_rss_peak_kb: 0,
        client_cpu_pct: 0.0,
        error: String::new(),
    }
}
