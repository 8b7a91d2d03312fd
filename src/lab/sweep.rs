//! Runs a sweep: every combination of the plan's dimensions against every
//! target, one raw row per run appended as soon as it is measured. Runs
//! already in raw.csv are not made again, so a rerun into the same
//! directory resumes. Ctrl-C ends the run in progress without recording
//! it, stops the target and keeps every row before.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::target::{Running, StartContext, TargetSpec};
use crate::bench::stats::Summary;
use crate::bench::{self, BenchConfig, BenchResult, RequestSpec};
use crate::net::url::HttpUrl;
use crate::proc::monitor::{self_cpu, Monitor};
use crate::proc::nginx::{find_nginx, INSTALL_HINT};
use crate::report::summary::ConfigKey;
use crate::results::raw::{self, Machine, RawRow, MACHINE_JSON, SKIPPED_PREFIX};

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
    /// Number of bench runs the full plan has, before runs already in
    /// raw.csv, targets left out and dimensions that do not apply to a
    /// target are taken off (`Event::Planned` has the real count).
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

/// What a sweep tells its caller as it goes (for progress and notes).
#[derive(Debug)]
pub enum Event<'a> {
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
pub struct Outcome {
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

/// What identifies a run in raw.csv for resuming: a row with the same key
/// and no error means the run was made. A configuration (as the summaries
/// group runs) plus which repeat, and whether it was a warm-up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RunKey {
    config: ConfigKey,
    repeat: u64,
    warmup: bool,
}

impl RunKey {
    fn of(r: &RawRow) -> RunKey {
        RunKey {
            config: ConfigKey::of(r),
            repeat: r.repeat,
            warmup: r.warmup,
        }
    }

    /// The key the run of `cell` will be recorded under, taken from the
    /// row it would write, so that resuming cannot drift from recording.
    fn planned(base: &RowBase, cell: &Cell) -> RunKey {
        let mut row = base.empty_row(0);
        fill_cell(&mut row, cell, 0.0);
        RunKey::of(&row)
    }
}

/// One started target: a target with one worker count and one CPU
/// restriction, and the runs to make against it.
struct Instance<'a> {
    spec: &'a TargetSpec,
    workers: Option<usize>,
    cpus: Option<usize>,
    base: RowBase,
    cells: Vec<Cell<'a>>,
}

/// The runs of one target instance still to make. A configuration whose
/// measured repeats are all in raw.csv is skipped whole; otherwise its
/// warm-up runs are made again (the target is a fresh process, which is
/// what warm-up is for) and then only the missing repeats.
fn cells_to_do<'a>(
    plan: &'a SweepPlan,
    base: &RowBase,
    done: &HashSet<RunKey>,
    already_done: &mut usize,
) -> Vec<Cell<'a>> {
    let mut out = Vec::new();
    for path in &plan.paths {
        for &ka in &plan.keepalive {
            for &load in &plan.loads {
                for &c in &plan.concurrency {
                    let cell = |repeat: usize, warm: bool| Cell {
                        path,
                        ka,
                        load,
                        c,
                        repeat,
                        warm,
                    };
                    let missing: Vec<usize> = (1..=plan.repeat)
                        .filter(|&r| !done.contains(&RunKey::planned(base, &cell(r, false))))
                        .collect();
                    *already_done += plan.repeat - missing.len();
                    if missing.is_empty() {
                        continue;
                    }
                    out.extend((1..=plan.warmup_runs).map(|w| cell(w, true)));
                    out.extend(missing.into_iter().map(|r| cell(r, false)));
                }
            }
        }
    }
    out
}

/// Runs the plan into `out`, resuming what raw.csv there already holds.
/// `stop` is polled between runs, during runs and while a target starts;
/// `on_event` hears the plan, notes and each run (for progress).
pub fn run(
    plan: &SweepPlan,
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(Event),
) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    // Appending to a file that cannot be read back would bury the new rows
    // with the old: refuse instead.
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
    let done: HashSet<RunKey> = existing
        .iter()
        .filter(|r| r.error.is_empty())
        .map(RunKey::of)
        .collect();
    let mut next_id = existing.iter().map(|r| r.run_id).max().map_or(1, |m| m + 1);
    let mut outcome = Outcome::default();
    // Measured runs of the plan found in raw.csv and not made again.
    let mut already_done = 0;

    // Everything to run, decided before the first run so the total is
    // right from the start.
    let mut instances: Vec<Instance> = Vec::new();
    let mut seen: HashSet<(String, u64, u64)> = HashSet::new();
    let mut no_nginx: Vec<(&TargetSpec, usize)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let restricted = plan.cpus.iter().any(Option::is_some);
    let sized = plan.workers.iter().any(Option::is_some);
    for spec in &plan.targets {
        let nginx_missing = matches!(spec, TargetSpec::Nginx { .. }) && find_nginx().is_none();
        // Dimensions that do not apply to a target would measure the same
        // thing several times under different labels: it runs once.
        let cpus_list = if spec.started_here() {
            plan.cpus.clone()
        } else {
            if restricted {
                notes.push(format!(
                    "--cpus does not apply to {spec} (loadlab does not start it): it runs unrestricted, once"
                ));
            }
            vec![None]
        };
        let workers_list = if spec.takes_workers() {
            plan.workers.clone()
        } else {
            if sized {
                notes.push(format!(
                    "--workers does not apply to {spec}: it runs as it was started, once"
                ));
            }
            vec![None]
        };
        let mut spec_runs = 0;
        let mut merged = false;
        for &workers in &workers_list {
            for &cpus in &cpus_list {
                let base = RowBase {
                    experiment: plan.experiment.clone(),
                    target: spec.to_string(),
                    workers: spec.workers(workers) as u64,
                    cpus: cpus.unwrap_or(0) as u64,
                };
                if !seen.insert((base.target.clone(), base.workers, base.cpus)) {
                    merged = true;
                    continue;
                }
                let cells = cells_to_do(plan, &base, &done, &mut already_done);
                spec_runs += cells.len();
                if !cells.is_empty() && !nginx_missing {
                    instances.push(Instance {
                        spec,
                        workers,
                        cpus,
                        base,
                        cells,
                    });
                }
            }
        }
        if merged && sized && spec.takes_workers() {
            notes.push(format!(
                "{spec} has a fixed worker count: measured once, not once per --workers value"
            ));
        }
        if nginx_missing && spec_runs > 0 {
            no_nginx.push((spec, spec_runs));
        }
    }
    if !no_nginx.is_empty() {
        let names: Vec<String> = no_nginx.iter().map(|(s, _)| s.to_string()).collect();
        let runs: usize = no_nginx.iter().map(|(_, n)| n).sum();
        on_event(Event::Note(&format!(
            "{INSTALL_HINT}; skipping {} ({runs} run{})",
            names.join(", "),
            if runs == 1 { "" } else { "s" }
        )));
        for (spec, _) in &no_nginx {
            let base = RowBase {
                experiment: plan.experiment.clone(),
                target: spec.to_string(),
                workers: spec.workers(None) as u64,
                cpus: 0,
            };
            let error = format!("{SKIPPED_PREFIX}{INSTALL_HINT}");
            // A resumed sweep has recorded this skip already: once is
            // enough for the report, and raw.csv should not grow with
            // every rerun.
            let recorded = existing.iter().any(|r| {
                r.experiment == base.experiment && r.target == base.target && r.error == error
            });
            if recorded {
                continue;
            }
            let mut row = base.empty_row(next_id);
            next_id += 1;
            row.started_at = now_secs();
            row.error = error;
            raw::append(out, std::slice::from_ref(&row))?;
            outcome.rows.push(row);
        }
    }
    notes.dedup();
    for n in &notes {
        on_event(Event::Note(n));
    }
    on_event(Event::Planned {
        runs: instances.iter().map(|i| i.cells.len()).sum(),
        already_done,
    });

    let docroot = tempfile::Builder::new()
        .prefix("loadlab-docroot-")
        .tempdir()?;
    crate::server::handlers::write_embedded_docroot(docroot.path())?;
    let ctx = StartContext {
        exe: std::env::current_exe()?,
        docroot: docroot.path().to_path_buf(),
    };
    'targets: for inst in &instances {
        if stop() {
            outcome.interrupted = true;
            break;
        }
        let running = match Running::start(inst.spec, &ctx, inst.workers, inst.cpus, stop) {
            Ok(r) => r,
            // Ctrl-C while it started: nothing about the target is known.
            Err(_) if stop() => {
                outcome.interrupted = true;
                break;
            }
            Err(e) => {
                let mut row = inst.base.empty_row(next_id);
                next_id += 1;
                row.started_at = now_secs();
                row.error = format!("target did not start: {e:#}");
                raw::append(out, std::slice::from_ref(&row))?;
                on_event(Event::Dropped {
                    runs: inst.cells.len(),
                    row: &row,
                });
                outcome.rows.push(row);
                continue;
            }
        };
        for cell in &inst.cells {
            if stop() {
                outcome.interrupted = true;
                break 'targets;
            }
            let row = measure(plan, &inst.base, &running, cell, next_id, stop);
            // Ctrl-C cut this run short: its numbers describe part of a
            // run, so it is not recorded (a resumed sweep makes it again).
            if stop() {
                outcome.interrupted = true;
                break 'targets;
            }
            next_id += 1;
            raw::append(out, std::slice::from_ref(&row))?;
            on_event(Event::Run(&row));
            outcome.rows.push(row);
        }
    }
    Ok(outcome)
}

struct RowBase {
    experiment: String,
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

impl RowBase {
    fn empty_row(&self, id: u64) -> RawRow {
        let zero = Summary::of(&crate::bench::stats::new_histogram());
        let mut r = row_from(self, id, None, zero, zero, zero, zero);
        r.error.clear();
        r
    }
}

/// The requests and duration a run records: what the plan asked for, so
/// that one `--requests` value is one configuration at every concurrency
/// (bench makes at least one request per connection; `complete` says how
/// many were made).
fn load_fields(load: Load) -> (u64, f64) {
    match load {
        Load::Requests(n) => (n, 0.0),
        Load::Duration(d) => (0, d.as_secs_f64()),
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
    let cfg = match HttpUrl::parse(&url) {
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
            threads: plan.threads.unwrap_or_else(crate::sys::cores),
            timeout: plan.timeout,
            rate: None,
            warmup: None,
            variable_length: false,
        },
        Err(e) => return failed_row(base, id, cell, started_at, e.to_string()),
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
    (row.requests, row.duration_s) = load_fields(cell.load);
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
        experiment: base.experiment.clone(),
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
