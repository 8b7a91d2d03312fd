//! The outcome of a run: what was asked, how long it took, what was
//! measured, the figures derived from it, and how runs merge. Its JSON
//! form is `json.rs`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::{union_ms, Window};
use super::config::BenchConfig;
use super::records::Records;
use super::series::Series;
use super::shard::ShardInfo;
use super::stats::Stats;
use super::ClientTime;

pub use crate::stats::RATE_KEPT;

/// What the run was asked to do, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub url: String,
    pub host: String,
    pub port: u16,
    pub path: String,
    pub method: String,
    pub concurrency: usize,
    pub threads: usize,
    pub keep_alive: bool,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub rate: Option<f64>,
    pub timeout_s: f64,
    /// -l: responses may vary in length; the report says "Variable" as ab's
    /// does. Absent in files from before it was recorded.
    #[serde(default)]
    pub accept_variable_length: bool,
}

#[derive(Debug, Clone)]
pub struct BenchResult {
    pub info: RunInfo,
    pub elapsed: Duration,
    pub stats: Stats,
    /// Per-request records when asked for (`--per-request`, `-g`); never
    /// in the JSON, empty in results read back from it.
    pub records: Records,
    /// When it measured, on the wall clock (None in files from before).
    pub window: Option<Window>,
    /// The shard of a larger load this run was (`--shard`).
    pub shard: Option<ShardInfo>,
    /// How the load threads spent the run (None in files from before it
    /// was recorded, and in a merge of any such file).
    pub client: Option<ClientTime>,
    /// What the kernel's TCP counters rose by over the run, warm-up
    /// included (`sys::tcp`): the whole network namespace's, so other
    /// traffic counts too. None where /proc/net could not be read, and in
    /// a merge (shards on one machine would count each other twice).
    pub kernel_tcp: Option<crate::sys::tcp::Reading>,
    /// What `--server-pid` saw of the server (None without it, and in a
    /// merge: each shard watched the same server).
    pub server: Option<super::server::ServerFigures>,
}

impl BenchResult {
    pub fn new(cfg: &BenchConfig, stats: Stats, elapsed: Duration) -> Self {
        let t = &cfg.target;
        BenchResult {
            info: RunInfo {
                url: format!("{}://{}{}", t.scheme(), t.host_header(), t.path),
                host: t.host.clone(),
                port: t.port,
                path: t.path.clone(),
                method: cfg.request.method.clone(),
                concurrency: cfg.concurrency,
                threads: cfg.threads.min(cfg.concurrency),
                keep_alive: cfg.request.keep_alive,
                requests: cfg.requests,
                duration_s: cfg.duration.map(|d| d.as_secs_f64()),
                rate: cfg.rate,
                timeout_s: cfg.timeout.as_secs_f64(),
                accept_variable_length: cfg.variable_length,
            },
            elapsed,
            stats,
            records: Records::default(),
            window: None,
            shard: None,
            client: None,
            kernel_tcp: None,
            server: None,
        }
    }

    pub fn seconds(&self) -> f64 {
        self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn requests_per_second(&self) -> f64 {
        self.stats.complete as f64 / self.seconds()
    }

    /// ab's "Time per request (mean)": concurrency x time / requests.
    pub fn time_per_request_ms(&self) -> f64 {
        self.info.concurrency as f64 * self.seconds() * 1000.0 / self.stats.complete.max(1) as f64
    }

    /// ab's "(mean, across all concurrent requests)".
    pub fn time_per_request_all_ms(&self) -> f64 {
        self.seconds() * 1000.0 / self.stats.complete.max(1) as f64
    }

    /// Open loop: requests put on the wire per second of the measured
    /// time (those answered or failed, and those still in flight at the
    /// time limit). Scheduled requests that never went out are not in it.
    pub fn achieved_rate(&self) -> Option<f64> {
        self.info.rate?;
        let s = &self.stats;
        Some((s.complete + s.in_flight_at_end) as f64 / self.seconds())
    }

    /// Open loop: why the run did not apply the load it was asked for,
    /// when it achieved less than [`RATE_KEPT`] of `--rate`.
    pub fn rate_shortfall(&self) -> Option<String> {
        let (rate, achieved) = (self.info.rate?, self.achieved_rate()?);
        if crate::stats::rate_kept(rate, achieved) {
            return None;
        }
        let missed = match self.stats.missed {
            0 => String::new(),
            n => format!(", {n} scheduled requests never went out"),
        };
        Some(format!(
            "achieved {achieved:.0} requests/s, {:.0}% of --rate {rate}{missed}: the server or the load generator could not keep up, so this measures a lighter load than asked (latencies still count from the schedule)",
            achieved / rate * 100.0
        ))
    }

    pub fn transfer_rate_kbps(&self) -> f64 {
        self.stats.total_bytes as f64 / 1024.0 / self.seconds()
    }

    /// Combines runs made at the same time by several clients: counts and
    /// histograms add up, the time taken is the union of the runs' windows
    /// on the wall clock (the longest run for files that do not record
    /// one), concurrency and rate are sums. Latency statistics are exactly those of one run
    /// that saw every request. Open-loop and closed-loop runs measure
    /// different things (latency from the schedule or from the send), so
    /// they are not mixed.
    pub fn merge(results: &[BenchResult]) -> Result<BenchResult, MergeError> {
        let first = results.first().ok_or(MergeError::Empty)?;
        let open = |r: &BenchResult| r.info.rate.is_some();
        if let Some(other) = results.iter().position(|r| open(r) != open(first)) {
            let (open_run, closed_run) = if open(first) { (0, other) } else { (other, 0) };
            return Err(MergeError::MixedLoops {
                open: open_run,
                closed: closed_run,
            });
        }
        // With -k a run's requests carry no connection setup, without it
        // each does: one histogram of both answers neither question.
        if let Some(other) = results
            .iter()
            .position(|r| r.info.keep_alive != first.info.keep_alive)
        {
            return Err(MergeError::MixedKeepAlive { other });
        }
        let mut out = first.clone();
        out.records = Records::default();
        for r in &results[1..] {
            if r.info.url != out.info.url || r.info.method != out.info.method {
                eprintln!(
                    "loadlab: note: merging runs against different targets ({} and {})",
                    out.info.url, r.info.url
                );
            }
            if let Some(field) = out.stats.merge(&r.stats) {
                return Err(MergeError::Overflow { field });
            }
            out.elapsed = out.elapsed.max(r.elapsed);
            let i = &mut out.info;
            i.concurrency =
                i.concurrency
                    .checked_add(r.info.concurrency)
                    .ok_or(MergeError::Overflow {
                        field: "run.concurrency",
                    })?;
            i.threads = i.threads.saturating_add(r.info.threads);
            i.requests = match (i.requests, r.info.requests) {
                (Some(a), Some(b)) => Some(a.checked_add(b).ok_or(MergeError::Overflow {
                    field: "run.requests",
                })?),
                _ => None,
            };
            out.info.rate = out.info.rate.zip(r.info.rate).map(|(a, b)| a + b);
            out.info.accept_variable_length |= r.info.accept_variable_length;
        }
        // Stats::merge added the series second k to second k; runs started
        // at different times are laid out on their start times instead (and
        // without a start time for each, there is no merged series).
        out.stats.series =
            Series::merge_aligned(results.iter().map(|r| &r.stats.series)).unwrap_or_default();
        out.shard = None;
        // The busiest shard's load thread speaks for the merge (a merge of
        // files from before it was recorded has none to judge by).
        out.client = results
            .iter()
            .map(|r| Some((r.client?, r.seconds())))
            .collect::<Option<Vec<_>>>()
            .and_then(ClientTime::combine);
        out.window = None;
        out.kernel_tcp = None;
        out.server = None;
        let windows: Option<Vec<Window>> = results.iter().map(|r| r.window).collect();
        if let Some(w) = windows {
            // A window's time starts where its run's elapsed time does
            // (the planned start, for a late open-loop run).
            let spans: Vec<(f64, f64)> = results
                .iter()
                .zip(&w)
                .map(|(r, w)| (w.end_unix_ms - r.elapsed.as_secs_f64() * 1e3, w.end_unix_ms))
                .collect();
            out.elapsed = Duration::from_secs_f64((union_ms(&spans) / 1e3).max(0.0));
            let fold = |f: fn(&Window) -> f64, pick: fn(f64, f64) -> f64| {
                w.iter().map(f).reduce(pick).unwrap_or(0.0)
            };
            out.window = Some(Window {
                planned_start_unix_ms: first.window.and_then(|w| w.planned_start_unix_ms),
                start_unix_ms: fold(|w| w.start_unix_ms, f64::min),
                end_unix_ms: fold(|w| w.end_unix_ms, f64::max),
                start_skew_ms: Some(
                    fold(|w| w.start_unix_ms, f64::max) - fold(|w| w.start_unix_ms, f64::min),
                ),
            });
        }
        Ok(out)
    }
}

/// Why runs cannot be merged; indices are positions in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge")]
    Empty,
    #[error(
        "cannot merge an open-loop run (--rate, run {open}) with a closed-loop run (run {closed})"
    )]
    MixedLoops { open: usize, closed: usize },
    #[error("cannot merge a keep-alive run (-k) with one without (run 0 and run {other})")]
    MixedKeepAlive { other: usize },
    /// A sum does not fit in 64 bits: the inputs cannot be real runs.
    #[error("the merged {field} does not fit in 64 bits; the files cannot all be real runs")]
    Overflow { field: &'static str },
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::bench::config::RequestSpec;
    use crate::net::url::HttpUrl;

    pub(in crate::bench) fn result(rate: Option<f64>, accept_variable_length: bool) -> BenchResult {
        let cfg = BenchConfig {
            requests: Some(10),
            concurrency: 2,
            timeout: Duration::from_secs(1),
            rate,
            variable_length: accept_variable_length,
            ..BenchConfig::new(
                HttpUrl::parse("http://127.0.0.1:9/").unwrap(),
                RequestSpec {
                    method: "GET".into(),
                    ..RequestSpec::default()
                },
            )
        };
        let mut stats = Stats::new(rate.is_some());
        stats.complete = 10;
        stats.missed = 1;
        stats.keep_alive_retries = 2;
        BenchResult::new(&cfg, stats, Duration::from_secs(1))
    }

    #[test]
    fn open_and_closed_loop_runs_do_not_merge() {
        let open = result(Some(100.0), false);
        let closed = result(None, false);
        let err = BenchResult::merge(&[closed.clone(), closed.clone(), open.clone()]).unwrap_err();
        assert_eq!(err, MergeError::MixedLoops { open: 2, closed: 0 });
        let err = BenchResult::merge(&[open.clone(), closed]).unwrap_err();
        assert_eq!(err, MergeError::MixedLoops { open: 0, closed: 1 });
        assert_eq!(BenchResult::merge(&[]).unwrap_err(), MergeError::Empty);
    }

    #[test]
    fn merged_runs_add_rates_and_counters() {
        let a = result(Some(100.0), false);
        let b = result(Some(50.0), true);
        let m = BenchResult::merge(&[a, b]).unwrap();
        assert_eq!(m.info.rate, Some(150.0));
        assert!(m.info.accept_variable_length);
        assert_eq!((m.stats.complete, m.stats.missed), (20, 2));
        assert_eq!(m.stats.keep_alive_retries, 4);
        assert_eq!(m.info.concurrency, 4);
    }

    #[test]
    fn regression_merged_counters_wrapped_on_overflow() {
        let mut a = result(None, false);
        a.stats.complete = u64::MAX - 1;
        a.stats.status_classes[2] = u64::MAX;
        let b = result(None, false);
        let err = BenchResult::merge(&[a.clone(), b.clone()]).unwrap_err();
        assert_eq!(err, MergeError::Overflow { field: "complete" });
        assert!(err.to_string().contains("complete does not fit"), "{err}");
        // Saturated, not wrapped, where the thread merge ignores it.
        let mut s = a.stats.clone();
        assert_eq!(s.merge(&b.stats), Some("complete"));
        assert_eq!(s.complete, u64::MAX);
        assert_eq!(s.answered_ok(), u64::MAX);
        a.stats.failures.connect = u64::MAX;
        a.stats.failures.exceptions = 3;
        assert_eq!(a.stats.failed(), u64::MAX);
        // Sums that fit still merge.
        let m = BenchResult::merge(&[b.clone(), b]).unwrap();
        assert_eq!(m.stats.complete, 20);
    }

    #[test]
    fn a_rate_below_95_percent_of_the_asked_one_is_a_shortfall() {
        // 10 requests in 1 s at --rate 100: 10% of it.
        let short = result(Some(100.0), false);
        assert_eq!(short.achieved_rate(), Some(10.0));
        let w = short.rate_shortfall().unwrap();
        assert!(
            w.starts_with("achieved 10 requests/s, 10% of --rate 100, 1 scheduled"),
            "{w}"
        );
        // 10 requests in 1 s at --rate 10.4: kept (96%).
        let kept = result(Some(10.4), false);
        assert_eq!(kept.rate_shortfall(), None);
        assert_eq!(result(None, false).achieved_rate(), None);
    }
}
