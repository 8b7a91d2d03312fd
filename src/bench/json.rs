//! The versioned JSON form of a result (`--format json`, what `loadlab
//! merge` reads): every counter, the histograms encoded so runs merge
//! exactly, readable buckets, the series, and the run's verdict.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::buckets::{linear_buckets, Bucket};
use super::clock::Window;
use super::records::Records;
use super::result::{BenchResult, RunInfo};
use super::series::SeriesJson;
use super::shard::ShardInfo;
use super::stats::{
    decode_histogram, encode_histogram, Failures, Latencies, PerDistribution, Stats, StatusCodes,
    Summary,
};
use super::verdict::Verdict;
use super::violations::Violations;
use super::ClientTime;

/// Identifies the JSON layout; bump on any incompatible change. v2 added
/// `status_codes`, `histograms.buckets`, the per-second `series` (and its
/// start time), the run's `window` and, for a shard, `shard`. v3 counts
/// answers that broke a rule as answered, with `violations` and
/// `violation_closes`, where v2 counted them failed.
pub const SCHEMA_ID: &str = "loadlab.bench/v3";

/// v2, still read: it has no violations (any it met are among its
/// failures).
pub const SCHEMA_V2: &str = "loadlab.bench/v2";

/// The layout before v2, still read (by `loadlab merge`): it lacks status
/// codes (the report then says how many responses have none), buckets
/// (derived again from the histograms), a series and a window.
pub const SCHEMA_V1: &str = "loadlab.bench/v1";

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

/// The JSON document (`docs/schema/bench-v3.schema.json` describes it).
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
    /// Rules broken by answers that still counted as answered: count and
    /// first example by kind (absent in files before v3).
    #[serde(default)]
    pub violations: Violations,
    /// Keep-alive connections closed because a violation left their
    /// framing unknown.
    #[serde(default)]
    pub violation_closes: u64,
    /// Connections the run tried to open, warm-up included (0 in files
    /// before it was counted).
    #[serde(default)]
    pub connections_opened: u64,
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
    /// What the kernel's TCP counters rose by over the run (the network
    /// namespace's, warm-up included); a counter that could not be read is
    /// absent, never 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_tcp: Option<crate::sys::tcp::Reading>,
    /// `--server-pid`: the server's CPU, memory, run-queue wait, context
    /// switches and syscalls over the run (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<super::server::ServerFigures>,
    /// Whether every figure above (rates, latencies, status codes,
    /// buckets, series) can be taken as it stands, and if not why. Derived
    /// from the counters, so ignored when a file is read back.
    #[serde(default, skip_deserializing)]
    pub verdict: Verdict,
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
            violations: s.violations.clone(),
            violation_closes: s.violation_closes,
            connections_opened: s.connects,
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
            kernel_tcp: r.kernel_tcp.clone(),
            server: r.server.clone(),
            verdict: Verdict::of(r),
        }
    }

    /// Rebuilds a result (counters and full histograms) from its JSON.
    pub fn into_result(self) -> anyhow::Result<BenchResult> {
        if ![SCHEMA_ID, SCHEMA_V2, SCHEMA_V1].contains(&self.schema.as_str()) {
            anyhow::bail!(
                "unsupported schema '{}' (this loadlab reads {SCHEMA_ID}, {SCHEMA_V2} and {SCHEMA_V1})",
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
            violations: self.violations,
            violation_closes: self.violation_closes,
            connects: self.connections_opened,
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
            kernel_tcp: self.kernel_tcp,
            server: self.server,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::result::tests::result;

    #[test]
    fn json_round_trip_keeps_the_new_counters() {
        let mut r = result(Some(100.0), true);
        r.stats.latency.record_corrected(2_000, 500, 100);
        let json = BenchJson::from_result(&r);
        assert_eq!(json.achieved_rate, Some(10.0));
        // 2,000 µs behind the schedule + 100 µs connect, to 3 digits.
        let max = json.corrected_connect_ms.unwrap().max;
        assert!((2.1..2.11).contains(&max), "{max}");
        let back = json.into_result().unwrap();
        let c = back.stats.latency.corrected_connect.as_ref().unwrap();
        assert_eq!((c.len(), c.lowest_equivalent(c.max())), (1, 2100));
        assert_eq!(back.stats.missed, 1);
        assert_eq!(back.stats.keep_alive_retries, 2);
        assert!(back.info.accept_variable_length);
    }
}
