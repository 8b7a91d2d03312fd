//! Requests over time as CSV (`--series-csv`): one row per second of the
//! run, from the per-second counts in the result (docs/guide/bench.md).

use std::fmt::Write as _;

use crate::bench::result::BenchResult;
use crate::bench::series::Series;
use crate::bench::verdict::Verdict;

/// The `--series-csv` header.
pub const SERIES_HEADER: &str = "second,start_unix_s,span_s,complete,failed,answered,requests_per_second,latency_mean_ms,latency_max_ms,run_verdict";

/// One row per second since measuring began; `span_s` is how much of
/// that second the run lasted (1 but for the last), and the rate is
/// `complete` over it. Empty cells where a second has no answered request.
/// Every row carries the whole run's verdict, so no second is read apart
/// from it (a plotted or filtered row keeps it).
pub fn series_csv(r: &BenchResult) -> String {
    let verdict = Verdict::of(r).words();
    let series = &r.stats.series;
    let start = series.start_unix_us.unwrap_or(0);
    let elapsed = r.elapsed.as_secs_f64();
    let mut out = String::with_capacity(64 * (series.seconds.len() + 1));
    out.push_str(SERIES_HEADER);
    out.push('\n');
    for (k, s) in series.seconds.iter().enumerate() {
        // A request may finish just past the measured time (the time limit
        // is when the last one started): its second counts as a whole one.
        let span = match Series::span_s(k, elapsed) {
            x if x > 0.0 => x,
            _ => 1.0,
        };
        let (mean, max) = match s.answered {
            0 => (String::new(), String::new()),
            n => (
                format!("{:.3}", s.latency_sum_us as f64 / n as f64 / 1000.0),
                format!("{:.3}", s.latency_max_us as f64 / 1000.0),
            ),
        };
        let _ = writeln!(
            out,
            "{k},{}.{:06},{span:.6},{},{},{},{:.2},{mean},{max},{verdict}",
            start / 1_000_000 + k as u64,
            start % 1_000_000,
            s.complete,
            s.failed,
            s.answered,
            s.complete as f64 / span,
        );
    }
    out
}
