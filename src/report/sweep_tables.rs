//! The report's tables, built from the summary: machine, one summary table
//! per experiment, repeat windows (E4), and the failed runs; and the cells
//! every table shares (requests/s with its interval, the ratio to the
//! baseline, the status). The same tables go to summary.md and index.html.

use super::num::{fixed, mean_ci, mean_sd, mib};
use super::summary::{self, FailedRun, Group, SummaryRow, SweepSummary, Varies, WINDOWS};
use super::table::{Align, Table};
use crate::results::config::RunConfig;
use crate::results::raw::{Machine, RowStatus};

use Align::{Left, Right};

pub fn machine(m: Option<&Machine>) -> Table {
    let mut t = Table::new("machine", "Machine", &[("property", Left), ("value", Left)]);
    match m {
        Some(m) => {
            for (k, v) in [
                ("CPU", m.cpu_model.clone()),
                ("cores", m.cores.to_string()),
                ("memory (GiB)", fixed(m.memory_gib, 1)),
                ("kernel", m.kernel.clone()),
                ("hostname", m.hostname.clone()),
                ("loadlab", m.loadlab_version.clone()),
            ] {
                t.push(vec![k.into(), v]);
            }
        }
        None => t.note = Some("machine.json was not found: the machine is not recorded.".into()),
    }
    t
}

/// Identifier-safe form of a name from the data (experiment, path).
pub fn slug(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '-' || c == '.').to_string();
    if s.is_empty() {
        "x".into()
    } else {
        s
    }
}

pub fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

fn cpus(n: u64) -> String {
    if n == 0 {
        "all".into()
    } else {
        n.to_string()
    }
}

/// The key columns a table needs: target and concurrency always, the
/// others only when they vary; the fixed ones are named in the note.
pub struct KeyCols {
    v: Varies,
    /// Terminal style: load as `n=1000`/`t=2s` and concurrency as `c=50`,
    /// so a line reads on its own in a scrolled terminal.
    terse: bool,
}

impl KeyCols {
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a RunConfig>) -> KeyCols {
        KeyCols {
            v: Varies::of(keys),
            terse: false,
        }
    }

    /// The same columns in terminal style.
    pub fn terse(self) -> KeyCols {
        KeyCols {
            terse: true,
            ..self
        }
    }

    pub fn headers(&self) -> Vec<(&'static str, Align)> {
        let mut h = vec![("target", Left)];
        if self.v.path {
            h.push(("path", Left));
        }
        if self.v.keepalive {
            h.push(("keep-alive", Left));
        }
        if self.v.workers {
            h.push(("workers", Right));
        }
        if self.v.cpus {
            h.push(("cpus", Right));
        }
        if self.v.load {
            h.push(("load", Right));
        }
        if self.v.slow {
            h.push(("slow clients", Left));
        }
        if self.v.rate {
            h.push(("rate", Right));
        }
        h.push(("c", Right));
        h
    }

    pub fn cells(&self, k: &RunConfig) -> Vec<String> {
        let mut c = vec![k.target.clone()];
        if self.v.path {
            c.push(k.path.clone());
        }
        if self.v.keepalive {
            c.push(on_off(k.keepalive).into());
        }
        if self.v.workers {
            c.push(k.workers.to_string());
        }
        if self.v.cpus {
            c.push(cpus(k.cpus));
        }
        if self.v.load {
            c.push(match (self.terse, k.requests) {
                (false, _) => k.load_label(),
                (true, 0) => format!("t={}s", k.duration_s),
                (true, n) => format!("n={n}"),
            });
        }
        if self.v.slow {
            c.push(k.slow.label(k.slow_conns));
        }
        if self.v.rate {
            c.push(k.rate_label());
        }
        c.push(if self.terse {
            format!("c={}", k.concurrency)
        } else {
            k.concurrency.to_string()
        });
        c
    }

    /// "path /500B.html, keep-alive off, ..." for the dimensions that do
    /// not vary, taken from any one key.
    pub fn fixed_note(&self, k: &RunConfig) -> String {
        let mut parts = Vec::new();
        if !self.v.path {
            parts.push(format!("path {}", k.path));
        }
        if !self.v.keepalive {
            parts.push(format!("keep-alive {}", on_off(k.keepalive)));
        }
        if !self.v.workers {
            parts.push(format!("workers {}", k.workers));
        }
        if !self.v.cpus {
            parts.push(format!("cpus {}", cpus(k.cpus)));
        }
        if !self.v.load {
            parts.push(format!("load {}", k.load_label()));
        }
        // Named only when there were some: most sweeps hold none.
        if !self.v.slow && !k.slow.is_none() {
            parts.push(format!("slow clients {}", k.slow.label(k.slow_conns)));
        }
        if let (false, Some(_)) = (self.v.rate, k.rate) {
            parts.push(format!("offered rate {} (open loop)", k.rate_label()));
        }
        parts.join(", ")
    }
}

/// The configurations of one experiment with their summary rows (the two
/// lists are built in the same order).
pub fn of_experiment<'a>(
    s: &'a SweepSummary,
    experiment: &str,
) -> Vec<(&'a Group, &'a SummaryRow)> {
    s.groups
        .iter()
        .zip(&s.rows)
        .filter(|(g, _)| g.key.experiment == experiment)
        .collect()
}

/// Answered requests/s: `mean ± half-width` of the 95 % interval, or
/// `mean (1 run)`.
pub fn rps_cell(r: &SummaryRow) -> String {
    mean_ci(r.rps_mean, r.rps_ci(), 0)
}

/// The paired ratio to the baseline: `1.23 ± 0.04`, with "no clear
/// difference" when its interval holds 1; "baseline" on the baseline's
/// own rows, "–" when no round was measured by both.
pub fn ratio_cell(r: &SummaryRow) -> String {
    if r.is_baseline() {
        return "baseline".into();
    }
    match r.ratio() {
        None => "–".into(),
        Some((m, ends)) => {
            let text = mean_ci(m, ends, 2);
            match ends {
                Some((lo, hi)) if lo <= 1.0 && 1.0 <= hi => {
                    format!("{text} (no clear difference)")
                }
                _ => text,
            }
        }
    }
}

/// Every status that applies ("ok" when none), and "CPU rough" for a
/// cell with a run shorter than 100 ms.
pub fn status_cell(r: &SummaryRow) -> String {
    let mut words: Vec<&str> = r.flags().iter().map(|f| f.word()).collect();
    if words.is_empty() {
        words.push("ok");
    }
    if r.cpu_rough {
        words.push("CPU rough");
    }
    words.join(", ")
}

/// A per-request figure with `decimals`, "n/a" when unknown (the server
/// was not watched).
pub fn per_request(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "n/a".into(), |v| fixed(v, decimals))
}

/// The header of the ratio column: against which target.
pub fn ratio_header(s: &SweepSummary, experiment: &str) -> String {
    format!("vs {}", s.baseline_of(experiment).unwrap_or("baseline"))
}

/// What the statistics columns mean, for a table's note.
pub const STATS_NOTE: &str = "requests/s counts answers with a 2xx or 3xx status per second: mean ± half-width of the 95 % interval (Student's t over the repeats), or one run's value. vs: requests/s over the baseline's in the same round, mean over the rounds with its 95 % interval; \"no clear difference\" when the interval holds 1. Server CPU and context switches are per completed response. status: every flag that applies (failed, non-2xx, rate-short (open loop: under 95 % of the offered rate went out), client-bound, cpu-saturated, disturbed, noisy, violations), else ok; CPU rough: a run shorter than 100 ms.";

/// One row per configuration of `experiment`: requests/s with its
/// interval, the ratio to the baseline, latencies (mean ± sd), failures,
/// server cost per request and the status.
pub fn experiment_summary(s: &SweepSummary, experiment: &str) -> Option<Table> {
    let pairs = of_experiment(s, experiment);
    let first = &pairs.first()?.0.key;
    let kc = KeyCols::new(pairs.iter().map(|(g, _)| &g.key));
    let vs = ratio_header(s, experiment);
    let mut cols = kc.headers();
    cols.extend([
        ("runs", Right),
        ("requests/s", Right),
        (vs.as_str(), Right),
        ("p50 (ms)", Right),
        ("p99 (ms)", Right),
        ("failed", Right),
        ("non-2xx", Right),
        ("violations", Right),
        ("server CPU µs/req", Right),
        ("ctx switches/req", Right),
        ("server CPU %", Right),
        ("server RSS (MiB)", Right),
        ("busiest client thread %", Right),
        ("status", Left),
    ]);
    let mut t = Table::new(
        &format!("summary-{}", slug(experiment)),
        &format!("{experiment}: summary"),
        &cols,
    );
    let fixed_dims = kc.fixed_note(first);
    t.note = Some(format!(
        "{STATS_NOTE} Latencies: mean ± sd over the measured runs (warm-up and failed runs left out); failed, non-2xx and violations (answers that broke a rule yet count as answered; n/a: not recorded) are totals.{}{}",
        if fixed_dims.is_empty() { "" } else { " Fixed: " },
        fixed_dims
    ));
    for (g, r) in &pairs {
        let n = r.runs;
        // No RSS means the target was not ours to watch (url:), so its CPU
        // is unknown too, not zero.
        let watched = r.server_rss_peak_kb_mean > 0.0;
        let mut c = kc.cells(&g.key);
        c.extend([
            n.to_string(),
            rps_cell(r),
            ratio_cell(r),
            mean_sd(r.p50_ms_mean, r.p50_ms_sd, n, 3),
            mean_sd(r.p99_ms_mean, r.p99_ms_sd, n, 3),
            r.failed.to_string(),
            r.non_2xx.to_string(),
            r.violations.map_or("n/a".into(), |v| v.to_string()),
            per_request(r.server_cpu_us_per_req, 1),
            per_request(r.server_ctx_switches_per_req, 2),
            if watched {
                mean_sd(r.server_cpu_pct_mean, r.server_cpu_pct_sd, n, 1)
            } else {
                "n/a".into()
            },
            if watched {
                mib(r.server_rss_peak_kb_mean)
            } else {
                "n/a".into()
            },
            fixed(r.client_cpu_pct, 1),
            status_cell(r),
        ]);
        t.push(c);
    }
    Some(t)
}

/// Each repeat's time per request and the E4 window means, for
/// experiments where some configuration has at least one full window.
pub fn windows(s: &SweepSummary, experiment: &str) -> Option<Table> {
    let pairs = of_experiment(s, experiment);
    if !pairs.iter().any(|(_, r)| r.window_1_3_ms.is_some()) {
        return None;
    }
    let max_repeat = pairs
        .iter()
        .flat_map(|(g, _)| g.runs.iter().map(|r| r.repeat))
        .max()
        .unwrap_or(0)
        .min(50);
    let kc = KeyCols::new(pairs.iter().map(|(g, _)| &g.key));
    let run_names: Vec<String> = (1..=max_repeat).map(|i| format!("run {i}")).collect();
    let win_names: Vec<String> = WINDOWS
        .iter()
        .map(|(a, b)| format!("mean {a}-{b}"))
        .collect();
    let mut cols = kc.headers();
    cols.extend(run_names.iter().map(|n| (n.as_str(), Right)));
    cols.extend(win_names.iter().map(|n| (n.as_str(), Right)));
    cols.push(("status", Left));
    let mut t = Table::new(
        &format!("windows-{}", slug(experiment)),
        &format!("{experiment}: time per request (ms) by run, and windows"),
        &cols,
    );
    let fixed_dims = pairs
        .first()
        .map(|(g, _)| kc.fixed_note(&g.key))
        .unwrap_or_default();
    t.note =
        Some(format!(
        "The first run pays for warm-up, so the mean of runs 1-3 is set beside 2-4 and 3-5.{}{}",
        if fixed_dims.is_empty() { "" } else { " Fixed: " },
        fixed_dims
    ));
    for (g, r) in &pairs {
        let mut c = kc.cells(&g.key);
        for rep in 1..=max_repeat {
            let v: Vec<f64> = g
                .runs
                .iter()
                .filter(|x| x.repeat == rep)
                .map(|x| x.time_per_request_ms)
                .collect();
            c.push(if v.is_empty() {
                "–".into()
            } else {
                fixed(summary::mean_sd(&v).0, 3)
            });
        }
        for w in [r.window_1_3_ms, r.window_2_4_ms, r.window_3_5_ms] {
            c.push(w.map_or_else(|| "–".into(), |v| fixed(v, 3)));
        }
        c.push(status_cell(r));
        t.push(c);
    }
    Some(t)
}

/// Every run that could not be made, warm-up or not; the slow clients
/// are a column only when some run had them.
pub fn failed_runs(failed: &[FailedRun]) -> Table {
    let slow = failed.iter().any(|f| !f.slow.is_none());
    let open = failed.iter().any(|f| f.rate.is_some());
    let mut cols = vec![
        ("run", Right),
        ("experiment", Left),
        ("target", Left),
        ("workers", Right),
        ("cpus", Right),
        ("path", Left),
        ("keep-alive", Left),
        ("load", Right),
        ("c", Right),
    ];
    if slow {
        cols.push(("slow clients", Left));
    }
    if open {
        cols.push(("rate", Right));
    }
    cols.extend([("repeat", Right), ("warm-up", Left), ("error", Left)]);
    let mut t = Table::new("failed-runs", "Failed runs", &cols);
    t.note = Some(if failed.is_empty() {
        "No run failed.".into()
    } else {
        "Runs that could not be made; they are not in any mean above.".into()
    });
    for f in failed {
        let mut row = vec![
            f.run_id.to_string(),
            f.experiment.clone(),
            f.target.clone(),
            f.workers.to_string(),
            cpus(f.cpus),
            f.path.clone(),
            on_off(f.keepalive).into(),
            crate::results::config::load_label(f.requests, f.duration_s),
            f.concurrency.to_string(),
        ];
        if slow {
            row.push(f.slow.label(f.slow_conns));
        }
        if open {
            row.push(crate::results::config::rate_label(f.rate));
        }
        row.extend([
            f.repeat.to_string(),
            if f.warmup { "yes" } else { "no" }.into(),
            f.error.clone(),
        ]);
        t.push(row);
    }
    t
}

/// Targets the sweep left out (nginx or go not installed), with the reason;
/// `None` when every target ran.
pub fn skipped_targets(skipped: &[FailedRun]) -> Option<Table> {
    if skipped.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "skipped-targets",
        "Skipped targets",
        &[("experiment", Left), ("target", Left), ("reason", Left)],
    );
    t.note = Some("These targets were not measured; the tables below do not have them.".into());
    for f in skipped {
        let reason = RowStatus::of_error(&f.error).reason();
        t.push(vec![f.experiment.clone(), f.target.clone(), reason.into()]);
    }
    Some(t)
}
