//! Aggregation: raw runs grouped by configuration, reduced to means and
//! standard deviations over repeats, plus E4's sliding windows. No IO and
//! no formatting here; the tables, charts and files are built from this.

use std::collections::HashMap;

use serde::Serialize;

use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;

/// The measured runs of one configuration: not warm-up, no error, ordered
/// by repeat number (then run id, should a repeat have been run twice).
#[derive(Debug, Clone)]
pub struct Group {
    pub key: RunConfig,
    pub runs: Vec<RawRow>,
    pub warmup_runs: usize,
    pub error_runs: usize,
}

impl Group {
    /// Mean and sample standard deviation of one field over the runs.
    pub fn stat(&self, field: impl Fn(&RawRow) -> f64) -> (f64, f64) {
        let v: Vec<f64> = self.runs.iter().map(field).collect();
        mean_sd(&v)
    }
}

/// Mean and sample standard deviation (n - 1 in the denominator: repeats
/// are a sample of what the configuration does). One value has sd 0.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

crate::with_run_config! {
    /// One line of summary.csv / summary.json: a configuration and its
    /// figures over the measured repeats. Flat on purpose, so CSV and JSON
    /// share one shape.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    pub struct SummaryRow {
        ..RunConfig,
    /// Measured runs averaged here.
    pub runs: usize,
    /// Warm-up runs of this configuration, left out of the figures.
    pub warmup_runs: usize,
    /// Runs that failed to run; they are in the failed-runs table.
    pub error_runs: usize,
    pub requests_per_second_mean: f64,
    pub requests_per_second_sd: f64,
    pub time_per_request_ms_mean: f64,
    pub time_per_request_ms_sd: f64,
    pub time_per_request_all_ms_mean: f64,
    pub time_per_request_all_ms_sd: f64,
    pub p50_ms_mean: f64,
    pub p50_ms_sd: f64,
    pub p99_ms_mean: f64,
    pub p99_ms_sd: f64,
    /// Summed, not averaged: a failure in any repeat must show.
    pub failed: u64,
    pub non_2xx: u64,
    pub server_cpu_pct_mean: f64,
    pub server_cpu_pct_sd: f64,
    pub server_rss_peak_kb_mean: f64,
    pub server_rss_peak_kb_sd: f64,
    pub client_cpu_pct_mean: f64,
    pub client_cpu_pct_sd: f64,
    /// E4: mean time per request of repeats 1-3, 2-4 and 3-5; empty when
    /// those repeats were not all measured.
    pub window_1_3_ms: Option<f64>,
    pub window_2_4_ms: Option<f64>,
    pub window_3_5_ms: Option<f64>,
}
}

/// The windows E4 reports: the first run pays for warm-up, so the mean of
/// runs 1-3 is compared with 2-4 and 3-5.
pub const WINDOWS: [(u64, u64); 3] = [(1, 3), (2, 4), (3, 5)];

/// Mean time per request over repeats `first..=last`, or `None` unless
/// every one of those repeats was measured.
pub fn window(g: &Group, first: u64, last: u64) -> Option<f64> {
    let mut v = Vec::new();
    for rep in first..=last {
        let at: Vec<f64> = g
            .runs
            .iter()
            .filter(|r| r.repeat == rep)
            .map(|r| r.time_per_request_ms)
            .collect();
        if at.is_empty() {
            return None;
        }
        v.extend(at);
    }
    Some(mean_sd(&v).0)
}

impl SummaryRow {
    pub fn of(g: &Group) -> SummaryRow {
        let (rps, rps_sd) = g.stat(|r| r.requests_per_second);
        let (tpr, tpr_sd) = g.stat(|r| r.time_per_request_ms);
        let (tpra, tpra_sd) = g.stat(|r| r.time_per_request_all_ms);
        let (p50, p50_sd) = g.stat(|r| r.p50_ms);
        let (p99, p99_sd) = g.stat(|r| r.p99_ms);
        let (cpu, cpu_sd) = g.stat(|r| r.server_cpu_pct);
        let (rss, rss_sd) = g.stat(|r| r.server_rss_peak_kb as f64);
        let (ccpu, ccpu_sd) = g.stat(|r| r.client_cpu_pct);
        let mut row = SummaryRow {
            runs: g.runs.len(),
            warmup_runs: g.warmup_runs,
            error_runs: g.error_runs,
            requests_per_second_mean: rps,
            requests_per_second_sd: rps_sd,
            time_per_request_ms_mean: tpr,
            time_per_request_ms_sd: tpr_sd,
            time_per_request_all_ms_mean: tpra,
            time_per_request_all_ms_sd: tpra_sd,
            p50_ms_mean: p50,
            p50_ms_sd: p50_sd,
            p99_ms_mean: p99,
            p99_ms_sd: p99_sd,
            failed: g.runs.iter().map(|r| r.failed).sum(),
            non_2xx: g.runs.iter().map(|r| r.non_2xx).sum(),
            server_cpu_pct_mean: cpu,
            server_cpu_pct_sd: cpu_sd,
            server_rss_peak_kb_mean: rss,
            server_rss_peak_kb_sd: rss_sd,
            client_cpu_pct_mean: ccpu,
            client_cpu_pct_sd: ccpu_sd,
            window_1_3_ms: window(g, 1, 3),
            window_2_4_ms: window(g, 2, 4),
            window_3_5_ms: window(g, 3, 5),
            ..SummaryRow::default()
        };
        row.set_run_config(&g.key);
        row
    }
}

crate::with_run_config! {
    /// A run that could not be made, listed on its own so it is never lost
    /// in an average.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    pub struct FailedRun {
        pub run_id: u64,
        ..RunConfig,
        pub repeat: u64,
        pub warmup: bool,
        pub error: String,
    }
}

impl FailedRun {
    fn of(r: &RawRow) -> FailedRun {
        let mut f = FailedRun {
            run_id: r.run_id,
            repeat: r.repeat,
            warmup: r.warmup,
            error: r.error.clone(),
            ..FailedRun::default()
        };
        f.set_run_config(&r.run_config());
        f
    }
}

/// Everything derived from raw.csv, in report order.
#[derive(Debug, Clone, Default)]
pub struct SweepSummary {
    /// Experiments in the order they first appear in raw.csv.
    pub experiments: Vec<String>,
    pub groups: Vec<Group>,
    pub rows: Vec<SummaryRow>,
    /// In raw.csv order.
    pub failed: Vec<FailedRun>,
    /// Targets left out (nginx not installed), once per experiment, target
    /// and reason, in raw.csv order.
    pub skipped: Vec<FailedRun>,
}

/// Groups the raw rows. Order is fixed by the data alone: experiments,
/// paths and targets as they first appear in raw.csv (the order the sweep
/// ran them), numbers ascending, keep-alive off before on.
pub fn summarize(raw: &[RawRow]) -> SweepSummary {
    let mut experiments = FirstSeen::default();
    let mut targets = FirstSeen::default();
    let mut paths = FirstSeen::default();
    for r in raw {
        experiments.see(&r.experiment);
        targets.see(&r.target);
        paths.see(&r.path);
    }

    let mut by_key: HashMap<RunConfig, Group> = HashMap::new();
    let mut failed = Vec::new();
    let mut skipped: Vec<FailedRun> = Vec::new();
    for r in raw {
        // A target left out made no run: it has no configuration, and a
        // resumed sweep records it again, so it is listed once.
        if r.is_skip() {
            let f = FailedRun::of(r);
            if !skipped.iter().any(|s| {
                (&s.experiment, &s.target, &s.error) == (&f.experiment, &f.target, &f.error)
            }) {
                skipped.push(f);
            }
            continue;
        }
        let key = RunConfig::of(r);
        let g = by_key.entry(key.clone()).or_insert_with(|| Group {
            key,
            runs: Vec::new(),
            warmup_runs: 0,
            error_runs: 0,
        });
        if r.is_failed() {
            g.error_runs += 1;
            failed.push(FailedRun::of(r));
        } else if r.warmup {
            g.warmup_runs += 1;
        } else {
            g.runs.push(r.clone());
        }
    }

    // A configuration whose every run failed has nothing to average; its
    // runs are in `failed`.
    let mut groups: Vec<Group> = by_key
        .into_values()
        .filter(|g| !g.runs.is_empty())
        .collect();
    for g in &mut groups {
        g.runs.sort_by_key(|r| (r.repeat, r.run_id));
    }
    groups.sort_by_key(|g| {
        let k = &g.key;
        (
            experiments.index(&k.experiment),
            paths.index(&k.path),
            targets.index(&k.target),
            k.keepalive,
            k.workers,
            k.cpus,
            k.requests,
            k.duration_us(),
            k.concurrency,
        )
    });
    let rows = groups.iter().map(SummaryRow::of).collect();
    SweepSummary {
        experiments: experiments.order,
        groups,
        rows,
        failed,
        skipped,
    }
}

/// Strings in the order first met, for an ordering that follows the data.
#[derive(Default)]
struct FirstSeen {
    order: Vec<String>,
    index: HashMap<String, usize>,
}

impl FirstSeen {
    fn see(&mut self, s: &str) {
        if !self.index.contains_key(s) {
            self.index.insert(s.to_string(), self.order.len());
            self.order.push(s.to_string());
        }
    }

    fn index(&self, s: &str) -> usize {
        self.index.get(s).copied().unwrap_or(usize::MAX)
    }
}

/// Which key dimensions take more than one value among some configurations:
/// only those earn a table column or a word in a series label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Varies {
    pub target: bool,
    pub workers: bool,
    pub cpus: bool,
    pub path: bool,
    pub keepalive: bool,
    /// Requests or duration per run.
    pub load: bool,
    pub concurrency: bool,
}

impl Varies {
    pub fn of<'a>(keys: impl IntoIterator<Item = &'a RunConfig>) -> Varies {
        let mut first: Option<&RunConfig> = None;
        let mut v = Varies::default();
        for k in keys {
            match first {
                None => first = Some(k),
                Some(f) => {
                    v.target |= f.target != k.target;
                    v.workers |= f.workers != k.workers;
                    v.cpus |= f.cpus != k.cpus;
                    v.path |= f.path != k.path;
                    v.keepalive |= f.keepalive != k.keepalive;
                    v.load |= (f.requests, f.duration_us()) != (k.requests, k.duration_us());
                    v.concurrency |= f.concurrency != k.concurrency;
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_sd() {
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[7.0]), (7.0, 0.0));
        assert_eq!(mean_sd(&[]), (0.0, 0.0));
    }

    fn run(id: u64, requests: u64, duration_s: f64, repeat: u64, tpr: f64) -> RawRow {
        RawRow {
            run_id: id,
            experiment: "sweep".into(),
            target: "model:event-loop".into(),
            path: "/500B.html".into(),
            concurrency: 2,
            requests,
            duration_s,
            repeat,
            time_per_request_ms: tpr,
            requests_per_second: 1000.0 / tpr,
            ..RawRow::default()
        }
    }

    /// Regression: `--requests 100,1000` was averaged as if the two loads
    /// were repeats, and repeat 1 of one load sat in the windows of the
    /// other.
    #[test]
    fn loads_are_configurations_not_repeats() {
        let raw = vec![
            run(1, 100, 0.0, 1, 1.0),
            run(2, 100, 0.0, 2, 2.0),
            run(3, 1000, 0.0, 1, 10.0),
            run(4, 1000, 0.0, 2, 20.0),
            run(5, 0, 0.5, 1, 7.0),
            run(6, 0, 0.5, 2, 9.0),
        ];
        let s = summarize(&raw);
        assert_eq!(s.rows.len(), 3);
        let by = |requests: u64, duration_s: f64| {
            s.rows
                .iter()
                .find(|r| r.requests == requests && r.duration_s == duration_s)
                .expect("a summary row per load")
        };
        assert_eq!(by(100, 0.0).runs, 2);
        assert_eq!(by(100, 0.0).time_per_request_ms_mean, 1.5);
        assert_eq!(by(1000, 0.0).time_per_request_ms_mean, 15.0);
        assert_eq!(by(0, 0.5).time_per_request_ms_mean, 8.0);
        for g in &s.groups {
            let reps: Vec<u64> = g.runs.iter().map(|r| r.repeat).collect();
            assert_eq!(reps, vec![1, 2], "repeats of one load only: {:?}", g.key);
        }
        assert!(Varies::of(s.groups.iter().map(|g| &g.key)).load);
        let labels: Vec<String> = s.groups.iter().map(|g| g.key.load_label()).collect();
        assert_eq!(labels, ["0.5 s", "100 requests", "1000 requests"]);
        assert_eq!(by(0, 0.5).duration_s, 0.5);
    }
}
