//! Measurements of a run: per-thread counters and HDR histograms, merged
//! after the threads join. Nothing here is shared while a run is going.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

pub use super::codes::StatusCodes;
use super::series::Series;
use super::violations::{self, Violations};

/// Histogram range: 1 µs .. 1 hour, 3 significant digits.
const HIST_MAX_US: u64 = 3_600_000_000;
const HIST_SIGFIG: u8 = 3;

/// The parameters every latency histogram is made with, as a shard's
/// JSON records them: histograms with other parameters do not merge
/// exactly, so `merge` refuses to mix them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HistogramParams {
    pub lowest_us: u64,
    pub highest_us: u64,
    pub significant_digits: u8,
}

/// This build's [`HistogramParams`].
pub const HISTOGRAM_PARAMS: HistogramParams = HistogramParams {
    lowest_us: 1,
    highest_us: HIST_MAX_US,
    significant_digits: HIST_SIGFIG,
};

pub fn new_histogram() -> Histogram<u64> {
    // The bounds are constants within hdrhistogram's limits, so this holds.
    Histogram::new_with_bounds(1, HIST_MAX_US, HIST_SIGFIG).expect("valid histogram bounds")
}

/// The four distributions of ab's "Connection Times" table, plus the
/// open-loop one measured from each request's scheduled send time.
#[derive(Debug, Clone)]
pub struct Latencies {
    /// Connect start (or send start on a reused connection) to last byte.
    pub total: Histogram<u64>,
    pub connect: Histogram<u64>,
    /// Request fully sent to first response byte.
    pub waiting: Histogram<u64>,
    /// Total minus connect.
    pub processing: Histogram<u64>,
    /// Scheduled send time to last byte (open loop only). When a time limit
    /// ends the run, requests still in flight and slots that never went out
    /// are in it too, as waiting until the limit.
    pub corrected: Option<Histogram<u64>>,
    /// Scheduled send time to connection ready (open loop only): ab's
    /// Connect measured from the schedule, so that in the open-loop report
    /// Connect + Processing = Total holds as in ab's, with the time a
    /// request waited behind its schedule counted in Connect.
    pub corrected_connect: Option<Histogram<u64>>,
}

impl Latencies {
    pub fn new(open_loop: bool) -> Self {
        Latencies {
            total: new_histogram(),
            connect: new_histogram(),
            waiting: new_histogram(),
            processing: new_histogram(),
            corrected: open_loop.then(new_histogram),
            corrected_connect: open_loop.then(new_histogram),
        }
    }

    /// Open loop: latencies are measured from the scheduled send time.
    pub fn open_loop(&self) -> bool {
        self.corrected.is_some()
    }

    /// The total latency every figure of a report gives: from the
    /// scheduled send time in open loop (what a user waiting for that
    /// request saw), from the actual send otherwise.
    pub fn reported(&self) -> &Histogram<u64> {
        self.corrected.as_ref().unwrap_or(&self.total)
    }

    /// Connect as reported: from the scheduled send time in open loop.
    pub fn reported_connect(&self) -> &Histogram<u64> {
        self.corrected_connect.as_ref().unwrap_or(&self.connect)
    }

    /// Open loop: one answered request that went out `behind` µs after
    /// its scheduled time, with its `total` and `connect` times (µs)
    /// measured from the actual send. Nothing in closed loop.
    pub fn record_corrected(&mut self, behind: u64, total: u64, connect: u64) {
        if let Some(h) = self.corrected.as_mut() {
            h.saturating_record(behind.saturating_add(total));
        }
        if let Some(h) = self.corrected_connect.as_mut() {
            h.saturating_record(behind.saturating_add(connect));
        }
    }

    fn merge(&mut self, o: &Latencies) {
        // Same bounds on both sides, so `add` cannot fail.
        let _ = self.total.add(&o.total);
        let _ = self.connect.add(&o.connect);
        let _ = self.waiting.add(&o.waiting);
        let _ = self.processing.add(&o.processing);
        for (mine, theirs) in [
            (&mut self.corrected, &o.corrected),
            (&mut self.corrected_connect, &o.corrected_connect),
        ] {
            match (mine, theirs) {
                (Some(a), Some(b)) => {
                    let _ = a.add(b);
                }
                (mine @ None, Some(b)) => *mine = Some(b.clone()),
                _ => {}
            }
        }
    }
}

/// One value for each distribution of [`Latencies`], under the names the
/// JSON gives them (the encodings and the readable buckets).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PerDistribution<T> {
    pub total: T,
    pub connect: T,
    pub waiting: T,
    pub processing: T,
    pub corrected: Option<T>,
    /// Open loop: Connect from the scheduled send time (absent in files
    /// from before it was recorded).
    #[serde(default)]
    pub corrected_connect: Option<T>,
}

impl Latencies {
    /// `f` of each distribution.
    pub fn each<T>(&self, f: impl Fn(&Histogram<u64>) -> T) -> PerDistribution<T> {
        PerDistribution {
            total: f(&self.total),
            connect: f(&self.connect),
            waiting: f(&self.waiting),
            processing: f(&self.processing),
            corrected: self.corrected.as_ref().map(&f),
            corrected_connect: self.corrected_connect.as_ref().map(&f),
        }
    }
}

/// Ways a request can fail, as ab breaks them down (timeouts are counted
/// among ab's "Exceptions" and also on their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Failures {
    pub connect: u64,
    pub receive: u64,
    pub length: u64,
    pub exceptions: u64,
}

impl Failures {
    pub fn total(&self) -> u64 {
        // Saturating: a merged file may hold counts near u64::MAX.
        [self.receive, self.length, self.exceptions]
            .into_iter()
            .fold(self.connect, u64::saturating_add)
    }
}

/// Everything one thread (or, merged, one run) measured.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Requests that finished, successfully or not.
    pub complete: u64,
    pub failures: Failures,
    pub timeouts: u64,
    /// Requests still in flight when a time limit ended the run.
    pub in_flight_at_end: u64,
    /// Open loop: slots due before the time limit that never got a
    /// connection to go out on.
    pub missed: u64,
    /// Requests sent again because the server closed a kept-alive
    /// connection before answering (not failures, as in ab).
    pub keep_alive_retries: u64,
    /// A time limit (not the request count) ended the run.
    pub hit_deadline: bool,
    pub non_2xx: u64,
    pub keep_alive_requests: u64,
    /// Responses by status class: index 1..=5 for 1xx..5xx, 0 for others.
    pub status_classes: [u64; 6],
    /// Responses by exact status code (empty for runs read from files
    /// written before codes were recorded).
    pub status_codes: StatusCodes,
    /// Errors by kind, e.g. "connect: Connection refused".
    pub errors: BTreeMap<String, u64>,
    /// Rules broken by answers that still count as answered, by kind.
    pub violations: Violations,
    /// Keep-alive connections closed, not reused, because a violation left
    /// where the next response starts unknown.
    pub violation_closes: u64,
    /// Connections this run tried to open (warm-up included), to set
    /// against the kernel's ActiveOpens: what rose beyond them was other
    /// traffic.
    pub connects: u64,
    /// Bytes received (heads and bodies as on the wire).
    pub total_bytes: u64,
    /// Body bytes received after transfer decoding.
    pub html_bytes: u64,
    /// Whole request bytes (head and body) sent for requests with a body:
    /// ab's "Total body sent".
    pub body_sent: u64,
    /// Length of the first response's body (ab's Document Length).
    pub document_length: Option<u64>,
    /// Body lengths differed between responses.
    pub variable_length: bool,
    pub server_software: Option<String>,
    /// https: the first session negotiated (ab's TLS lines).
    pub tls: Option<crate::net::tls::TlsSession>,
    pub latency: Latencies,
    /// Requests over time, per second since measuring began.
    pub series: Series,
}

impl Stats {
    pub fn new(open_loop: bool) -> Self {
        Stats {
            complete: 0,
            failures: Failures::default(),
            timeouts: 0,
            in_flight_at_end: 0,
            missed: 0,
            keep_alive_retries: 0,
            hit_deadline: false,
            non_2xx: 0,
            keep_alive_requests: 0,
            status_classes: [0; 6],
            status_codes: StatusCodes::default(),
            errors: BTreeMap::new(),
            violations: Violations::new(),
            violation_closes: 0,
            connects: 0,
            total_bytes: 0,
            html_bytes: 0,
            body_sent: 0,
            document_length: None,
            variable_length: false,
            server_software: None,
            tls: None,
            latency: Latencies::new(open_loop),
            series: Series::default(),
        }
    }

    pub fn failed(&self) -> u64 {
        self.failures.total()
    }

    /// Answers with a 2xx or 3xx status: the requests that did the work
    /// asked of them. Throughput beyond ab's own lines counts these only.
    pub fn answered_ok(&self) -> u64 {
        self.status_classes[2].saturating_add(self.status_classes[3])
    }

    /// Why the run measured nothing usable, when not one request got a 2xx
    /// or 3xx answer: its rate and latencies then describe failures (the
    /// seed reports published 60 s runs of nothing but errors), and the
    /// CLI exits 1 with this line instead of 0.
    pub fn nothing_usable(&self) -> Option<String> {
        if self.answered_ok() > 0 {
            return None;
        }
        let f = &self.failures;
        let why = if self.complete == 0 {
            "no request completed".to_string()
        } else if f.connect == self.complete {
            let kind = self
                .errors
                .keys()
                .find(|k| k.starts_with("connect"))
                .map_or(String::new(), |k| format!(" ({k})"));
            format!("every connection failed{kind}")
        } else {
            let classes: Vec<String> = [(4, "4xx"), (5, "5xx"), (1, "1xx"), (0, "other")]
                .into_iter()
                .filter(|&(i, _)| self.status_classes[i] > 0)
                .map(|(i, name)| format!("{} {name}", self.status_classes[i]))
                .collect();
            let mut parts = Vec::new();
            if self.failed() > 0 {
                parts.push(format!("{} failed", self.failed()));
            }
            if !classes.is_empty() {
                parts.push(format!("answers: {}", classes.join(", ")));
            }
            format!(
                "none of {} requests got a 2xx or 3xx answer ({})",
                self.complete,
                parts.join("; ")
            )
        };
        Some(why)
    }

    /// Counts an error by kind. Only on the error path, never per success.
    pub fn error(&mut self, kind: String) {
        *self.errors.entry(kind).or_insert(0) += 1;
    }

    /// Adds another thread's (or run's) measurements to these. Counters
    /// saturate at `u64::MAX` instead of wrapping (files given to `loadlab
    /// merge` may hold any number); the first one that did is returned,
    /// so a merge of runs can refuse a sum that does not fit.
    pub fn merge(&mut self, o: &Stats) -> Option<&'static str> {
        let mut over = None;
        let mut add = |name: &'static str, a: &mut u64, b: u64| {
            *a = a.checked_add(b).unwrap_or_else(|| {
                over.get_or_insert(name);
                u64::MAX
            });
        };
        add("complete", &mut self.complete, o.complete);
        let (f, g) = (&mut self.failures, &o.failures);
        add("failures.connect", &mut f.connect, g.connect);
        add("failures.receive", &mut f.receive, g.receive);
        add("failures.length", &mut f.length, g.length);
        add("failures.exceptions", &mut f.exceptions, g.exceptions);
        add("timeouts", &mut self.timeouts, o.timeouts);
        add(
            "in_flight_at_end",
            &mut self.in_flight_at_end,
            o.in_flight_at_end,
        );
        add("missed", &mut self.missed, o.missed);
        add(
            "keep_alive_retries",
            &mut self.keep_alive_retries,
            o.keep_alive_retries,
        );
        add("non_2xx", &mut self.non_2xx, o.non_2xx);
        add(
            "keep_alive_requests",
            &mut self.keep_alive_requests,
            o.keep_alive_requests,
        );
        for (a, b) in self.status_classes.iter_mut().zip(o.status_classes) {
            add("status_classes", a, b);
        }
        for (k, v) in &o.errors {
            add("errors", self.errors.entry(k.clone()).or_insert(0), *v);
        }
        violations::merge(&mut self.violations, &o.violations);
        add(
            "violation_closes",
            &mut self.violation_closes,
            o.violation_closes,
        );
        add("connects", &mut self.connects, o.connects);
        add("bytes.total_received", &mut self.total_bytes, o.total_bytes);
        add("bytes.html_received", &mut self.html_bytes, o.html_bytes);
        add("bytes.body_sent", &mut self.body_sent, o.body_sent);
        if !self.status_codes.merge(&o.status_codes) {
            over.get_or_insert("status_codes");
        }
        self.hit_deadline |= o.hit_deadline;
        match (self.document_length, o.document_length) {
            (None, d) => self.document_length = d,
            (Some(a), Some(b)) if a != b => self.variable_length = true,
            _ => {}
        }
        self.variable_length |= o.variable_length;
        if self.server_software.is_none() {
            self.server_software.clone_from(&o.server_software);
        }
        if self.tls.is_none() {
            self.tls.clone_from(&o.tls);
        }
        self.latency.merge(&o.latency);
        // Threads of one run share its start: second k is second k. (Runs
        // that do not, `BenchResult::merge` aligns on their start times.)
        self.series.add_shifted(&o.series, 0);
        if self.series.start_unix_us.is_none() {
            self.series.start_unix_us = o.series.start_unix_us;
        }
        over
    }
}

/// Summary of one distribution in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
    pub p50: f64,
    pub p66: f64,
    pub p75: f64,
    pub p80: f64,
    pub p90: f64,
    pub p95: f64,
    pub p98: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        let ms = |us: f64| us / 1000.0;
        let q = |p: f64| ms(h.value_at_quantile(p) as f64);
        let empty = h.is_empty();
        Summary {
            count: h.len(),
            min: if empty { 0.0 } else { ms(h.min() as f64) },
            mean: ms(h.mean()),
            stdev: ms(h.stdev()),
            max: if empty { 0.0 } else { ms(h.max() as f64) },
            p50: q(0.50),
            p66: q(0.66),
            p75: q(0.75),
            p80: q(0.80),
            p90: q(0.90),
            p95: q(0.95),
            p98: q(0.98),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        }
    }
}

/// HdrHistogram's compressed V2 encoding, base64: the form the JSON output
/// carries so runs can be merged exactly later.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine as _;
    let mut buf = Vec::new();
    use hdrhistogram::serialization::Serializer as _;
    let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
    // Serializing into a Vec only fails on internal invariant breaks.
    if ser.serialize(h, &mut buf).is_err() {
        buf.clear();
    }
    base64::engine::general_purpose::STANDARD.encode(buf)
}

pub fn decode_histogram(s: &str) -> anyhow::Result<Histogram<u64>> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim())?;
    let mut de = hdrhistogram::serialization::Deserializer::new();
    let h: Histogram<u64> = de
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| anyhow::anyhow!("bad histogram encoding: {e:?}"))?;
    // Re-home into our standard bounds so merges never fail on range.
    let mut out = new_histogram();
    out.add(&h)
        .map_err(|e| anyhow::anyhow!("histogram out of range: {e:?}"))?;
    Ok(out)
}
