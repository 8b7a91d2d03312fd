//! Grouping: raw rows into configurations in an order fixed by the data,
//! failed and skipped runs set apart, and each configuration paired with
//! its experiment's baseline.

use std::collections::HashMap;

use super::{FailedRun, Group, SummaryRow, SweepSummary};
use crate::report::baseline;
use crate::results::config::RunConfig;
use crate::results::raw::RawRow;
use crate::stats::ratio::paired as paired_ratio;

/// Groups the raw rows, with the baseline chosen by the default rule
/// (nginx when present, else the first target).
pub fn summarize(raw: &[RawRow]) -> SweepSummary {
    summarize_against(raw, None)
}

/// Groups the raw rows and compares every configuration with the
/// baseline's: `wanted` when an experiment has it, else the default rule. Order is fixed by the data alone: experiments,
/// paths and targets as they first appear in raw.csv (the order the sweep
/// ran them), numbers ascending, keep-alive off before on.
pub fn summarize_against(raw: &[RawRow], wanted: Option<&str>) -> SweepSummary {
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
            // Rates are positive: their bits sort as the numbers do.
            k.rate.map(f64::to_bits),
            k.concurrency,
            (k.slow, k.slow_conns),
        )
    });
    let mut rows: Vec<SummaryRow> = groups.iter().map(SummaryRow::of).collect();
    // Beside slow clients: the same client's figures alone.
    let keys: Vec<&RunConfig> = groups.iter().map(|g| &g.key).collect();
    for (i, k) in keys.iter().enumerate() {
        if let Some(j) = baseline::alone(&keys, k) {
            (rows[i].no_slow_p99_ms, rows[i].no_slow_failed) =
                (Some(rows[j].p99_ms_mean), Some(rows[j].failed));
        }
    }
    let baselines = compare(&experiments.order, &groups, &mut rows, wanted);
    SweepSummary {
        experiments: experiments.order,
        groups,
        rows,
        failed,
        skipped,
        baselines,
    }
}

/// Chooses each experiment's baseline and fills in every row's paired
/// ratio to its baseline configuration (rounds are the `repeat` column).
fn compare(
    experiments: &[String],
    groups: &[Group],
    rows: &mut [SummaryRow],
    wanted: Option<&str>,
) -> Vec<(String, String)> {
    let keys: Vec<&RunConfig> = groups.iter().map(|g| &g.key).collect();
    let mut chosen = Vec::new();
    for exp in experiments {
        let mut targets: Vec<&str> = Vec::new();
        for k in keys.iter().filter(|k| &k.experiment == exp) {
            if !targets.contains(&k.target.as_str()) {
                targets.push(&k.target);
            }
        }
        let Some(base) = baseline::choose(&targets, wanted) else {
            continue;
        };
        for (i, g) in groups.iter().enumerate() {
            if &g.key.experiment != exp {
                continue;
            }
            rows[i].baseline = base.clone();
            let Some(b) = baseline::counterpart(&keys, &g.key, &base) else {
                continue;
            };
            if let Some(r) = paired_ratio(&g.rps_by_round(), &groups[b].rps_by_round()) {
                let ci = r.ci95();
                rows[i].ratio_to_baseline = Some(r.mean);
                rows[i].ratio_ci95_low = ci.map(|c| c.0);
                rows[i].ratio_ci95_high = ci.map(|c| c.1);
            }
        }
        chosen.push((exp.clone(), base));
    }
    chosen
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
