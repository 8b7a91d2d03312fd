//! E1's ab-style tables: one row per (target, concurrency) with ab's
//! report lines as columns, then ab's connection-times and percentile
//! tables. Numbers are means over the measured runs of a configuration;
//! failed and non-2xx are totals, so a failure in any run shows. These
//! keep ab's definitions (its requests/s counts every complete response,
//! 2xx or not), so they read like ab's report; each row carries the
//! configuration's status, so a broken cell never looks fine.

use super::num::fixed;
use super::summary::{Group, SummaryRow, SweepSummary};
use super::sweep_tables::{of_experiment, slug, status_cell, KeyCols};
use super::table::{Align, Table};
use crate::catalog::presets::Preset;
use crate::results::raw::RawRow;

use Align::{Left, Right};

/// One figure of a run, as a column takes it.
type Field = fn(&RawRow) -> f64;

/// Whether an experiment is E1 and gets these tables.
pub fn applies(experiment: &str) -> bool {
    Preset::of_label(experiment) == Some(Preset::E1)
}

/// The three E1 tables of `experiment`, or none when it has no measured
/// run.
pub fn tables(s: &SweepSummary, experiment: &str) -> Vec<Table> {
    let pairs: Vec<(&Group, &SummaryRow)> = of_experiment(s, experiment);
    let groups: Vec<&Group> = pairs.iter().map(|(g, _)| *g).collect();
    let Some(first) = groups.first() else {
        return Vec::new();
    };
    let kc = KeyCols::new(groups.iter().map(|g| &g.key));
    let note = |what: &str| {
        let fixed_dims = kc.fixed_note(&first.key);
        Some(format!(
            "{what}{}{}",
            if fixed_dims.is_empty() {
                ""
            } else {
                " Fixed: "
            },
            fixed_dims
        ))
    };
    let mean = |g: &Group, f: Field| g.stat(f).0;

    let mut cols = kc.headers();
    cols.extend([
        ("runs", Right),
        ("time taken (s)", Right),
        ("complete", Right),
        ("failed", Right),
        ("non-2xx", Right),
        ("total transferred (bytes)", Right),
        ("HTML transferred (bytes)", Right),
        ("requests/s", Right),
        ("time/request (ms)", Right),
        ("time/request, all (ms)", Right),
        ("transfer rate (KB/s)", Right),
        ("status", Left),
    ]);
    let id = |what: &str| format!("{}-{what}", slug(experiment));
    let mut main = Table::new(
        &id("main"),
        &format!("{experiment}: ab report per server and concurrency"),
        &cols,
    );
    main.note = note(
        "ab's figures, with ab's definitions: requests/s counts every complete response, 2xx or not (the summary's requests/s counts 2xx/3xx only). Means over the runs of each row; failed and non-2xx are totals.",
    );
    for (g, r) in &pairs {
        let mut c = kc.cells(&g.key);
        c.extend([
            g.runs.len().to_string(),
            fixed(mean(g, |r| r.time_taken_s), 3),
            fixed(mean(g, |r| r.complete as f64), 0),
            g.runs.iter().map(|r| r.failed).sum::<u64>().to_string(),
            g.runs.iter().map(|r| r.non_2xx).sum::<u64>().to_string(),
            fixed(mean(g, |r| r.total_bytes as f64), 0),
            fixed(mean(g, |r| r.html_bytes as f64), 0),
            fixed(mean(g, |r| r.requests_per_second), 2),
            fixed(mean(g, |r| r.time_per_request_ms), 3),
            fixed(mean(g, |r| r.time_per_request_all_ms), 3),
            fixed(mean(g, |r| r.transfer_kbps), 2),
            status_cell(r),
        ]);
        main.push(c);
    }

    let mut cols = kc.headers();
    cols.extend([
        ("phase", Left),
        ("min", Right),
        ("mean", Right),
        ("[+/-sd]", Right),
        ("median", Right),
        ("max", Right),
        ("status", Left),
    ]);
    let mut conn = Table::new(
        &id("connection-times"),
        &format!("{experiment}: connection times (ms)"),
        &cols,
    );
    conn.note = note("ab's connection-times table, one block per row of the report above.");
    type Phase = [Field; 5];
    let phases: [(&str, Phase); 4] = [
        (
            "connect",
            [
                |r| r.connect_min_ms,
                |r| r.connect_mean_ms,
                |r| r.connect_sd_ms,
                |r| r.connect_median_ms,
                |r| r.connect_max_ms,
            ],
        ),
        (
            "processing",
            [
                |r| r.processing_min_ms,
                |r| r.processing_mean_ms,
                |r| r.processing_sd_ms,
                |r| r.processing_median_ms,
                |r| r.processing_max_ms,
            ],
        ),
        (
            "waiting",
            [
                |r| r.waiting_min_ms,
                |r| r.waiting_mean_ms,
                |r| r.waiting_sd_ms,
                |r| r.waiting_median_ms,
                |r| r.waiting_max_ms,
            ],
        ),
        (
            "total",
            [
                |r| r.total_min_ms,
                |r| r.total_mean_ms,
                |r| r.total_sd_ms,
                |r| r.total_median_ms,
                |r| r.total_max_ms,
            ],
        ),
    ];
    for (g, r) in &pairs {
        for (name, fields) in &phases {
            let mut c = kc.cells(&g.key);
            c.push((*name).into());
            c.extend(fields.iter().map(|f| fixed(mean(g, *f), 3)));
            c.push(status_cell(r));
            conn.push(c);
        }
    }

    let pct: [(&str, Field); 10] = [
        ("50%", |r| r.p50_ms),
        ("66%", |r| r.p66_ms),
        ("75%", |r| r.p75_ms),
        ("80%", |r| r.p80_ms),
        ("90%", |r| r.p90_ms),
        ("95%", |r| r.p95_ms),
        ("98%", |r| r.p98_ms),
        ("99%", |r| r.p99_ms),
        ("99.9%", |r| r.p99_9_ms),
        ("100%", |r| r.p100_ms),
    ];
    let mut cols = kc.headers();
    cols.extend(pct.iter().map(|(n, _)| (*n, Right)));
    cols.push(("status", Left));
    let mut pcts = Table::new(
        &id("percentiles"),
        &format!("{experiment}: percentage of requests served within a time (ms)"),
        &cols,
    );
    pcts.note = note("ab's percentile table.");
    for (g, r) in &pairs {
        let mut c = kc.cells(&g.key);
        c.extend(pct.iter().map(|(_, f)| fixed(mean(g, *f), 3)));
        c.push(status_cell(r));
        pcts.push(c);
    }

    vec![main, conn, pcts]
}
