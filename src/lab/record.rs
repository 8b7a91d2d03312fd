//! Turning a planned run and what bench measured into the raw.csv row that
//! records it. The configuration columns come from the planned run, the
//! figures from the bench result, the resource columns from the monitors.

use std::time::{SystemTime, UNIX_EPOCH};

use super::plan::PlannedRun;
use crate::bench::stats::Summary as LatencySummary;
use crate::bench::BenchResult;
use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;

/// Seconds since the Unix epoch, for `started_at`.
pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A row with `config` and no figures: a target that did not start or was
/// left out (the caller sets `error`). Rows are numbered when recorded.
pub fn config_row(config: &RunConfig) -> RawRow {
    let mut row = RawRow {
        started_at: now_secs(),
        ..RawRow::default()
    };
    row.set_run_config(config);
    row
}

/// The row of a planned run, before its figures are in.
pub fn run_row(run: &PlannedRun) -> RawRow {
    let mut row = config_row(&run.config);
    row.repeat = run.repeat;
    row.warmup = run.warmup;
    row
}

/// Fills in ab's figures and latency tables from a bench result.
pub fn fill_measured(row: &mut RawRow, r: &BenchResult) {
    let s = &r.stats;
    row.time_taken_s = r.seconds();
    row.complete = s.complete;
    row.failed = s.failed();
    row.non_2xx = s.non_2xx;
    row.timeouts = s.timeouts;
    row.total_bytes = s.total_bytes;
    row.html_bytes = s.html_bytes;
    row.requests_per_second = r.requests_per_second();
    row.time_per_request_ms = r.time_per_request_ms();
    row.time_per_request_all_ms = r.time_per_request_all_ms();
    row.transfer_kbps = r.transfer_rate_kbps();
    let l = &s.latency;
    let connect = LatencySummary::of(&l.connect);
    let processing = LatencySummary::of(&l.processing);
    let waiting = LatencySummary::of(&l.waiting);
    let total = LatencySummary::of(&l.total);
    (
        row.connect_min_ms,
        row.connect_mean_ms,
        row.connect_sd_ms,
        row.connect_median_ms,
        row.connect_max_ms,
    ) = five(&connect);
    (
        row.processing_min_ms,
        row.processing_mean_ms,
        row.processing_sd_ms,
        row.processing_median_ms,
        row.processing_max_ms,
    ) = five(&processing);
    (
        row.waiting_min_ms,
        row.waiting_mean_ms,
        row.waiting_sd_ms,
        row.waiting_median_ms,
        row.waiting_max_ms,
    ) = five(&waiting);
    (
        row.total_min_ms,
        row.total_mean_ms,
        row.total_sd_ms,
        row.total_median_ms,
        row.total_max_ms,
    ) = five(&total);
    row.p50_ms = total.p50;
    row.p66_ms = total.p66;
    row.p75_ms = total.p75;
    row.p80_ms = total.p80;
    row.p90_ms = total.p90;
    row.p95_ms = total.p95;
    row.p98_ms = total.p98;
    row.p99_ms = total.p99;
    row.p99_9_ms = total.p99_9;
    row.p100_ms = total.max;
}

/// ab's connection-times columns: min, mean, sd, median, max.
fn five(s: &LatencySummary) -> (f64, f64, f64, f64, f64) {
    (s.min, s.mean, s.stdev, s.p50, s.max)
}
