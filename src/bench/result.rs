//! The outcome of a run: what was asked, how long it took, what was
//! measured; and its versioned JSON form, which keeps the histograms so
//! runs can be merged exactly.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::buckets::{linear_buckets, Bucket};
use super::clock::{union_ms, Window};
use super::config::BenchConfig;
use super::records::Records;
use super::series::{Series, SeriesJson};
use super::shard::ShardInfo;
use super::stats::{
    decode_histogram, encode_histogram, Failures, Latencies, PerDistribution, Stats, StatusCodes,
    Summary,
};
use super::ClientTime;

/// Identifies the JSON layout; bump on any incompatible change. v2 added
/// `status_codes`, `histograms.buckets`, the per-second `series` (and its
/// start time), the run's `window` and, for a shard, `shard`.
pub const SCHEMA_ID: &str = "loadlab.bench/v2";

/// The layout before v2, still read (by `loadlab merge`): it lacks status
/// codes (the report then says how many responses have none), buckets
/// (derived again from the histograms), a series and a window.
pub const SCHEMA_V1: &str = "loadlab.bench/v1";

/// Open loop: an achieved rate below this share of `--rate` is warned
/// about, because the latencies then describe a lighter load than asked.
pub const RATE_KEPT: f64 = 0.95;

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
    /// How the load threads spent the run (None in a merge and in files
    /// from before it was recorded).
    pub client: Option<ClientTime>,
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
        if achieved >= rate * RATE_KEPT {
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
        // One process's threads, not the merge's: the lab judges each
        // shard's from its own file.
        (out.shard, out.client) = (None, None);
        out.window = None;
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusClasses {
    #[serde(rename = "1xx")]
    pub c1: u64,
    #[serde(rename = "2xx")]
    pub c2: u64,
    #[serde(rename = "3xx")]
    pub c3: u64,
    #[serde(rename = "4xx")]
    pub c4: u64,
    #[serde(rename = "5xx")]
    pub c5: u64,
    pub other: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bytes {
    pub total_received: u64,
    pub html_received: u64,
    pub body_sent: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Always "us": values are microseconds.
    pub unit: String,
    /// Always "hdrhistogram-v2-deflate-base64".
    pub encoding: String,
    /// Each distribution, encoded.
    #[serde(flatten)]
    pub encoded: PerDistribution<String>,
    /// The same distributions as buckets anyone can read (derived from the
    /// encodings, so ignored when a file is read back).
    #[serde(default, skip_deserializing)]
    pub buckets: Option<PerDistribution<Vec<Bucket>>>,
}

/// The JSON document (`docs/schema/bench-v2.schema.json` describes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchJson {
    pub schema: String,
    pub loadlab_version: String,
    pub run: RunInfo,
    pub server_software: Option<String>,
    /// https: the session the server negotiated (absent for http and in
    /// files from before https).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::net::tls::TlsSession>,
    pub document_length: Option<u64>,
    pub variable_length: bool,
    pub time_taken_s: f64,
    pub complete: u64,
    pub failed: u64,
    pub failures: Failures,
    pub timeouts: u64,
    /// Timed-out requests the latency figures leave out (every one: a
    /// request that timed out has no latency to record).
    #[serde(default)]
    pub latency_excludes_timeouts: u64,
    pub in_flight_at_end: u64,
    /// Open loop with a time limit: slots due that never went out.
    #[serde(default)]
    pub missed: u64,
    #[serde(default)]
    pub keep_alive_retries: u64,
    pub non_2xx: u64,
    pub keep_alive_requests: u64,
    pub status_classes: StatusClasses,
    /// Responses by exact status code (absent in v1 files).
    #[serde(default)]
    pub status_codes: BTreeMap<u16, u64>,
    pub errors: BTreeMap<String, u64>,
    pub bytes: Bytes,
    pub requests_per_second: f64,
    pub time_per_request_ms: f64,
    pub time_per_request_all_ms: f64,
    pub transfer_rate_kbps: f64,
    pub latency_ms: Summary,
    pub connect_ms: Summary,
    pub waiting_ms: Summary,
    pub processing_ms: Summary,
    pub corrected_latency_ms: Option<Summary>,
    /// Open loop: Connect from the scheduled send time (absent in files
    /// from before it was recorded).
    #[serde(default)]
    pub corrected_connect_ms: Option<Summary>,
    /// Open loop: requests put on the wire per second (see
    /// `BenchResult::achieved_rate`).
    #[serde(default)]
    pub achieved_rate: Option<f64>,
    pub histograms: Histograms,
    /// Requests over time, per second since measuring began (absent in v1
    /// files, and in merges of runs of which one had none).
    #[serde(default)]
    pub series: Option<SeriesJson>,
    /// When the run measured (absent in files from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// `--shard`: which part of which load this run was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Whether the load generator itself set the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientTime>,
}

impl BenchJson {
    pub fn from_result(r: &BenchResult) -> BenchJson {
        let s = &r.stats;
        let l = &s.latency;
        let c = s.status_classes;
        BenchJson {
            schema: SCHEMA_ID.to_string(),
            loadlab_version: env!("CARGO_PKG_VERSION").to_string(),
            run: r.info.clone(),
            server_software: s.server_software.clone(),
            tls: s.tls.clone(),
            document_length: s.document_length,
            variable_length: s.variable_length,
            time_taken_s: r.elapsed.as_secs_f64(),
            complete: s.complete,
            failed: s.failed(),
            failures: s.failures,
            timeouts: s.timeouts,
            latency_excludes_timeouts: s.timeouts,
            in_flight_at_end: s.in_flight_at_end,
            missed: s.missed,
            keep_alive_retries: s.keep_alive_retries,
            non_2xx: s.non_2xx,
            keep_alive_requests: s.keep_alive_requests,
            status_classes: StatusClasses {
                other: c[0],
                c1: c[1],
                c2: c[2],
                c3: c[3],
                c4: c[4],
                c5: c[5],
            },
            status_codes: s.status_codes.to_map(),
            errors: s.errors.clone(),
            bytes: Bytes {
                total_received: s.total_bytes,
                html_received: s.html_bytes,
                body_sent: s.body_sent,
            },
            requests_per_second: r.requests_per_second(),
            time_per_request_ms: r.time_per_request_ms(),
            time_per_request_all_ms: r.time_per_request_all_ms(),
            transfer_rate_kbps: r.transfer_rate_kbps(),
            latency_ms: Summary::of(&l.total),
            connect_ms: Summary::of(&l.connect),
            waiting_ms: Summary::of(&l.waiting),
            processing_ms: Summary::of(&l.processing),
            corrected_latency_ms: l.corrected.as_ref().map(Summary::of),
            corrected_connect_ms: l.corrected_connect.as_ref().map(Summary::of),
            achieved_rate: r.achieved_rate(),
            histograms: Histograms {
                unit: "us".into(),
                encoding: "hdrhistogram-v2-deflate-base64".into(),
                encoded: l.each(encode_histogram),
                buckets: Some(l.each(linear_buckets)),
            },
            series: SeriesJson::of(&s.series),
            window: r.window,
            shard: r.shard.clone(),
            client: r.client,
        }
    }

    /// Rebuilds a result (counters and full histograms) from its JSON.
    pub fn into_result(self) -> anyhow::Result<BenchResult> {
        if self.schema != SCHEMA_ID && self.schema != SCHEMA_V1 {
            anyhow::bail!(
                "unsupported schema '{}' (this loadlab reads {SCHEMA_ID} and {SCHEMA_V1})",
                self.schema
            );
        }
        let mut status_codes = StatusCodes::default();
        for (&code, &n) in &self.status_codes {
            if !status_codes.add(code, n) {
                anyhow::bail!("status_codes: {code} is not a status code, or its count overflows");
            }
        }
        let h = &self.histograms.encoded;
        let latency = Latencies {
            total: decode_histogram(&h.total)?,
            connect: decode_histogram(&h.connect)?,
            waiting: decode_histogram(&h.waiting)?,
            processing: decode_histogram(&h.processing)?,
            corrected: h.corrected.as_deref().map(decode_histogram).transpose()?,
            corrected_connect: h
                .corrected_connect
                .as_deref()
                .map(decode_histogram)
                .transpose()?,
        };
        let c = &self.status_classes;
        let stats = Stats {
            complete: self.complete,
            failures: self.failures,
            timeouts: self.timeouts,
            in_flight_at_end: self.in_flight_at_end,
            missed: self.missed,
            keep_alive_retries: self.keep_alive_retries,
            hit_deadline: false,
            non_2xx: self.non_2xx,
            keep_alive_requests: self.keep_alive_requests,
            status_classes: [c.other, c.c1, c.c2, c.c3, c.c4, c.c5],
            status_codes,
            errors: self.errors,
            total_bytes: self.bytes.total_received,
            html_bytes: self.bytes.html_received,
            body_sent: self.bytes.body_sent,
            document_length: self.document_length,
            variable_length: self.variable_length,
            server_software: self.server_software,
            tls: self.tls,
            latency,
            series: self
                .series
                .map(SeriesJson::into_series)
                .transpose()?
                .unwrap_or_default(),
        };
        // A hand-edited or foreign file may hold any number here.
        let elapsed = Duration::try_from_secs_f64(self.time_taken_s).map_err(|_| {
            anyhow::anyhow!(
                "time_taken_s {} is not a duration in seconds",
                self.time_taken_s
            )
        })?;
        Ok(BenchResult {
            info: self.run,
            elapsed,
            stats,
            records: Records::default(),
            window: self.window,
            shard: self.shard,
            client: self.client,
        })
    }
}

#[cfg(test)]
mod tests;
