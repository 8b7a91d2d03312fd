//! What a sweep prints on the terminal when it ends: requests/s per
//! configuration and concurrency, through the one table writer, and the
//! runs that could not be made.

use super::table::{Align, Table};
use crate::results::config::RunConfig;
use crate::results::raw::{RawRow, RowStatus};

/// What sets one line of the table apart from another: its
/// configuration, with concurrency left out (that is the column).
fn line_key(r: &RawRow) -> RunConfig {
    RunConfig {
        concurrency: 0,
        ..RunConfig::of(r)
    }
}

/// The load column: "n=1000" or "t=2s".
fn load(k: &RunConfig) -> String {
    if k.requests > 0 {
        format!("n={}", k.requests)
    } else {
        format!("t={}s", k.duration_s)
    }
}

/// A column naming one configuration field.
type KeyColumn = (&'static str, fn(&RunConfig) -> String);

/// The key columns: target, path and keep-alive always; experiment,
/// workers, cpus and load only when they vary among `keys`.
fn key_columns(keys: &[RunConfig]) -> Vec<KeyColumn> {
    let varies = |f: fn(&RunConfig) -> String| keys.iter().any(|k| f(k) != f(&keys[0]));
    let cpus = |k: &RunConfig| match k.cpus {
        0 => "all".to_string(),
        n => n.to_string(),
    };
    let always: [KeyColumn; 3] = [
        ("target", |k| k.target.clone()),
        ("path", |k| k.path.clone()),
        ("ka", |k| if k.keepalive { "on" } else { "off" }.into()),
    ];
    let experiment: KeyColumn = ("experiment", |k| k.experiment.clone());
    let optional: [KeyColumn; 3] = [
        ("workers", |k| k.workers.to_string()),
        ("cpus", cpus),
        ("load", load),
    ];
    let mut cols: Vec<KeyColumn> = Vec::new();
    cols.extend([experiment].into_iter().filter(|c| varies(c.1)));
    cols.extend(always);
    cols.extend(optional.into_iter().filter(|c| varies(c.1)));
    cols
}

/// Requests/s per configuration (lines) and concurrency (columns), mean
/// over measured repeats; failed requests in brackets, runs that could not
/// be made listed below.
pub fn sweep_table(rows: &[RawRow]) -> String {
    let runs: Vec<&RawRow> = rows
        .iter()
        .filter(|r| !r.warmup && !r.is_skip() && r.concurrency > 0)
        .collect();
    let mut cs: Vec<u64> = runs.iter().map(|r| r.concurrency).collect();
    cs.sort_unstable();
    cs.dedup();
    let mut keys: Vec<RunConfig> = Vec::new();
    for r in &runs {
        let k = line_key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let cols = key_columns(&keys);
    let mut headers: Vec<(String, Align)> = cols
        .iter()
        .map(|(n, _)| (n.to_string(), Align::Left))
        .collect();
    headers.extend(cs.iter().map(|c| (format!("c={c}"), Align::Right)));
    let headers: Vec<(&str, Align)> = headers.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let mut table = Table::new("sweep", "", &headers);
    for k in &keys {
        let mut line: Vec<String> = cols.iter().map(|(_, f)| f(k)).collect();
        for &c in &cs {
            let at: Vec<&RawRow> = runs
                .iter()
                .copied()
                .filter(|r| r.concurrency == c && line_key(r) == *k)
                .collect();
            line.push(rps_cell(&at));
        }
        table.push(line);
    }
    let mut o =
        String::from("\nRequests per second (mean over repeats; failed requests in brackets)\n\n");
    o.push_str(&table.to_terminal());
    for r in rows {
        let (what, text) = match r.status() {
            RowStatus::Measured => continue,
            RowStatus::Failed(why) => ("error", why),
            RowStatus::Skipped(why) => ("skipped", why),
        };
        let at = if r.concurrency > 0 {
            format!(" c={}", r.concurrency)
        } else {
            String::new()
        };
        o.push_str(&format!("{what}: {}{at}: {text}\n", r.target));
    }
    o
}

/// One cell: the mean requests/s of the runs that were made, with their
/// failed requests in brackets; "error" when every run failed, "-" when
/// there was none.
fn rps_cell(at: &[&RawRow]) -> String {
    let ok: Vec<&&RawRow> = at.iter().filter(|r| r.is_measured()).collect();
    if ok.is_empty() {
        return if at.is_empty() { "-" } else { "error" }.to_string();
    }
    let rps = ok.iter().map(|r| r.requests_per_second).sum::<f64>() / ok.len() as f64;
    let failed: u64 = ok.iter().map(|r| r.failed).sum();
    if failed > 0 {
        format!("{rps:.0} [{failed}]")
    } else {
        format!("{rps:.0}")
    }
}
