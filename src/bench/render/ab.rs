//! ApacheBench's report, label for label, so scripts that grep ab's output
//! work unchanged; what ab lacks follows below it.

use std::fmt::Write;

use hdrhistogram::Histogram;

use crate::bench::result::BenchResult;
use crate::bench::stats::Latencies;
use crate::bench::verdict::Verdict;

/// ab's rounding of microseconds to whole milliseconds.
pub(super) fn round_ms(us: f64) -> i64 {
    ((us + 500.0) / 1000.0).floor() as i64
}

/// The first line of the report, and all of `-V`.
pub fn version_line() -> String {
    format!(
        "This is loadlab bench {}, an ApacheBench-compatible load generator",
        env!("CARGO_PKG_VERSION")
    )
}

/// What ab's -d and -S leave out of its text report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbLayout {
    /// The "served within" table (-d hides it).
    pub percentiles: bool,
    /// The mean[+/-sd] and median columns (-S hides them, for ab's
    /// `min avg max` layout, and ab's warnings about their spread).
    pub confidence: bool,
}

impl Default for AbLayout {
    fn default() -> Self {
        AbLayout {
            percentiles: true,
            confidence: true,
        }
    }
}

fn conn_row(out: &mut String, prefix: &str, label: &str, h: &Histogram<u64>, confidence: bool) {
    let (min, max) = if h.is_empty() {
        (0, 0)
    } else {
        (h.min(), h.max())
    };
    if !confidence {
        // ab -S: "%5d %5d%5d", min, mean and max.
        let _ = writeln!(
            out,
            "{prefix}{label:<12}{:5} {:5}{:5}",
            round_ms(min as f64),
            round_ms(h.mean()),
            round_ms(max as f64)
        );
        return;
    }
    let _ = writeln!(
        out,
        "{prefix}{label:<12}{:5} {:4} {:5.1} {:6} {:7}",
        round_ms(min as f64),
        round_ms(h.mean()),
        h.stdev() / 1000.0,
        round_ms(h.value_at_quantile(0.5) as f64),
        round_ms(max as f64)
    );
}

/// ab's Connection Times table; `prefix` labels every row (the
/// uncorrected table of an open-loop run).
fn connection_times(
    o: &mut String,
    prefix: &str,
    connect: &Histogram<u64>,
    l: &Latencies,
    total: &Histogram<u64>,
    confidence: bool,
) {
    let pad = " ".repeat(prefix.len());
    match confidence {
        true => writeln!(o, "{pad}              min  mean[+/-sd] median   max"),
        false => writeln!(o, "{pad}              min   avg   max"),
    }
    .ok();
    conn_row(o, prefix, "Connect:", connect, confidence);
    conn_row(o, prefix, "Processing:", &l.processing, confidence);
    conn_row(o, prefix, "Waiting:", &l.waiting, confidence);
    conn_row(o, prefix, "Total:", total, confidence);
}

/// ab's "served within" lines; `prefix` starts every line of the
/// uncorrected copy, so a parser anchored on ab's " 50%" never reads it.
fn percentages(o: &mut String, prefix: &str, h: &Histogram<u64>) {
    for p in [50, 66, 75, 80, 90, 95, 98, 99] {
        let v = h.value_at_quantile(p as f64 / 100.0);
        let _ = writeln!(o, "{prefix} {p:3}%  {:5}", round_ms(v as f64));
    }
    let _ = writeln!(
        o,
        "{prefix} 100%  {:5} (longest request)",
        round_ms(h.max() as f64)
    );
}

/// The line under which loadlab's figures follow ab's report.
pub const BEYOND_AB: &str = "Beyond ab (loadlab):";

/// ab's three banner lines and the blank line after them, with loadlab
/// named where ab names itself: a parser that skips ab's first seven lines
/// (banner, blank, "Benchmarking", two blanks) lands on "Server Software:"
/// here too.
pub fn banner() -> String {
    format!(
        "{}\n\
         Latencies are exact to 3 significant digits (HDR histograms)\n\
         Figures beyond ab's follow its report, under \"{BEYOND_AB}\"\n\n",
        version_line()
    )
}

/// What ab prints on stdout before the run: the banner and "Benchmarking
/// HOST (be patient)", ended by a newline when heartbeats follow on stderr
/// and by "..." otherwise (".." + "done" end the line after the run).
pub fn ab_preamble(host: &str, heartbeats: bool) -> String {
    let end = if heartbeats { "\n" } else { "..." };
    format!("{}Benchmarking {host} (be patient){end}", banner())
}

/// What ab prints on stdout after the run: "..done" to end its progress
/// line when there were no heartbeats, two blank lines, the report (in
/// the layout -d and -S ask for).
pub fn ab_after_run(r: &BenchResult, heartbeats: bool, layout: AbLayout) -> String {
    let done = if heartbeats { "" } else { "..done\n" };
    format!("{done}\n\n{}", ab_body(r, layout))
}

/// The report as a file (`--out`, `loadlab merge`) holds it: ab's stdout
/// line for line, with "Benchmarking HOST" where ab's progress line is, so
/// positional parsers count the same lines and no progress text is kept.
pub fn ab_report(r: &BenchResult) -> String {
    ab_report_as(r, AbLayout::default())
}

/// ab's report in the layout -d and -S ask for, as a file holds it.
pub fn ab_report_as(r: &BenchResult, layout: AbLayout) -> String {
    format!(
        "{}Benchmarking {}\n\n\n{}",
        banner(),
        r.info.host,
        ab_body(r, layout)
    )
}

/// ab's report from "Server Software:" on, then loadlab's figures.
fn ab_body(r: &BenchResult, layout: AbLayout) -> String {
    let s = &r.stats;
    let i = &r.info;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Server Software:        {}",
        s.server_software.as_deref().unwrap_or("")
    );
    let _ = writeln!(o, "Server Hostname:        {}", i.host);
    let _ = writeln!(o, "Server Port:            {}", i.port);
    if let Some(t) = &s.tls {
        let _ = writeln!(o, "SSL/TLS Protocol:       {}", t.protocol);
        if let Some(k) = &t.temp_key {
            let _ = writeln!(o, "Server Temp Key:        {k}");
        }
        if let Some(n) = &t.server_name {
            let _ = writeln!(o, "TLS Server Name:        {n}");
        }
    }
    o.push('\n');
    let _ = writeln!(o, "Document Path:          {}", i.path);
    // As ab: "Variable" exactly when -l was given; otherwise the first
    // response's length, with mismatches counted under Failed (Length).
    if i.accept_variable_length {
        let _ = writeln!(o, "Document Length:        Variable\n");
    } else {
        let _ = writeln!(
            o,
            "Document Length:        {} bytes\n",
            s.document_length.unwrap_or(0)
        );
    }
    let _ = writeln!(o, "Concurrency Level:      {}", i.concurrency);
    let _ = writeln!(o, "Time taken for tests:   {:.3} seconds", r.seconds());
    let _ = writeln!(o, "Complete requests:      {}", s.complete);
    let _ = writeln!(o, "Failed requests:        {}", s.failed());
    if s.failed() > 0 {
        let f = s.failures;
        let _ = writeln!(
            o,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            f.connect, f.receive, f.length, f.exceptions
        );
    }
    if s.non_2xx > 0 {
        let _ = writeln!(o, "Non-2xx responses:      {}", s.non_2xx);
    }
    if i.keep_alive {
        let _ = writeln!(o, "Keep-Alive requests:    {}", s.keep_alive_requests);
    }
    let _ = writeln!(o, "Total transferred:      {} bytes", s.total_bytes);
    if s.body_sent > 0 {
        let _ = writeln!(o, "Total body sent:        {}", s.body_sent);
    }
    let _ = writeln!(o, "HTML transferred:       {} bytes", s.html_bytes);
    let _ = writeln!(
        o,
        "Requests per second:    {:.2} [#/sec] (mean)",
        r.requests_per_second()
    );
    let _ = writeln!(
        o,
        "Time per request:       {:.3} [ms] (mean)",
        r.time_per_request_ms()
    );
    let _ = writeln!(
        o,
        "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
        r.time_per_request_all_ms()
    );
    let _ = writeln!(
        o,
        "Transfer rate:          {:.2} [Kbytes/sec] received",
        r.transfer_rate_kbps()
    );
    if s.body_sent > 0 {
        let sent = s.body_sent as f64 / 1024.0 / r.seconds();
        let _ = writeln!(o, "                        {sent:.2} kb/s sent");
        let _ = writeln!(
            o,
            "                        {:.2} kb/s total",
            sent + r.transfer_rate_kbps()
        );
    }
    let l = &s.latency;
    // Open loop: ab's labels keep ab's meaning for parsers, with every
    // latency measured from the scheduled send time (Connect then holds
    // the time a request waited behind its schedule); the figures from
    // the actual send follow, labelled, where ab's parsers do not look.
    if !l.total.is_empty() {
        let _ = writeln!(o, "\nConnection Times (ms)");
        let conf = layout.confidence;
        connection_times(&mut o, "", l.reported_connect(), l, l.reported(), conf);
        // ab -S leaves out the estimators these notes judge.
        if conf {
            sanity_notes(
                &mut o,
                [
                    ("the initial connection time", l.reported_connect()),
                    ("the processing time", &l.processing),
                    ("the waiting time", &l.waiting),
                    ("the total time", l.reported()),
                ],
            );
        }
        if layout.percentiles {
            let _ = writeln!(
                o,
                "\nPercentage of the requests served within a certain time (ms)"
            );
            percentages(&mut o, "", l.reported());
        }
        left_out(&mut o, r);
        if l.open_loop() {
            let _ = writeln!(
                o,
                "\nConnection Times (ms), uncorrected: from the actual send, not the scheduled time"
            );
            connection_times(&mut o, "Uncorrected ", &l.connect, l, &l.total, conf);
            if layout.percentiles {
                let _ = writeln!(
                    o,
                    "\nPercentage of the requests served within a certain time (ms), uncorrected"
                );
                percentages(&mut o, " Uncorrected", &l.total);
            }
        }
    }
    beyond_ab(&mut o, r);
    super::server::block(&mut o, r);
    super::extras::status_distribution(&mut o, s);
    super::extras::latency_histogram(&mut o, l.reported());
    o
}

/// ab's verdict under its Connection Times table, on the figures the table
/// shows: a row whose mean and median (whole milliseconds) lie more than
/// twice its standard deviation apart gets ab's ERROR, more than once its
/// WARNING, worded and broken into lines as ab 2.3 does.
fn sanity_notes(o: &mut String, rows: [(&str, &Histogram<u64>); 4]) {
    for (what, h) in rows {
        if h.is_empty() {
            continue;
        }
        let mean = round_ms(h.mean()) as f64;
        let median = round_ms(h.value_at_quantile(0.5) as f64) as f64;
        let sd = h.stdev() / 1000.0;
        let d = (mean - median).abs();
        if d > 2.0 * sd {
            let _ = writeln!(
                o,
                "ERROR: The median and mean for {what} are more than twice the standard\n       \
                 deviation apart. These results are NOT reliable."
            );
        } else if d > sd {
            let _ = writeln!(
                o,
                "WARNING: The median and mean for {what} are not within a normal deviation\n        \
                 These results are probably not that reliable."
            );
        }
    }
}

/// Under the percentiles: the timed-out requests they leave out (a
/// failed request has no latency), so a p99 over the ones that finished
/// is not read as the p99 of all.
fn left_out(o: &mut String, r: &BenchResult) {
    let n = r.stats.timeouts;
    if n > 0 {
        let _ = writeln!(
            o,
            "  (not in these times: {n} request{} timed out, no byte for -s {} s)",
            if n == 1 { "" } else { "s" },
            r.info.timeout_s
        );
    }
}

/// What ab does not show: tail percentiles, timeouts and errors by kind,
/// requests cut off by the time limit, and open-loop latency.
fn beyond_ab(o: &mut String, r: &BenchResult) {
    let s = &r.stats;
    let l = &s.latency;
    let ms = |us: u64| us as f64 / 1000.0;
    let _ = writeln!(o, "\n{BEYOND_AB}");
    // First, so no figure of the report is read without it.
    let _ = writeln!(o, "  Verdict: {}", Verdict::of(r).line());
    let tail = |h: &Histogram<u64>| {
        format!(
            "{:.3} / {:.3} / {:.3}",
            ms(h.value_at_quantile(0.999)),
            ms(h.value_at_quantile(0.9999)),
            ms(h.max())
        )
    };
    if !l.total.is_empty() {
        let _ = writeln!(
            o,
            "  Latency p99.9 / p99.99 / max (ms): {}",
            tail(l.reported())
        );
        if l.open_loop() {
            let _ = writeln!(
                o,
                "  Latency p99.9 / p99.99 / max (ms), uncorrected: {}",
                tail(&l.total)
            );
        }
    }
    if let (Some(rate), Some(achieved)) = (r.info.rate, r.achieved_rate()) {
        let _ = writeln!(
            o,
            "  Achieved rate: {achieved:.1} req/s of --rate {rate} ({:.0}%)",
            achieved / rate * 100.0
        );
    }
    if let Some(w) = r.rate_shortfall() {
        let _ = writeln!(o, "  WARNING: {w}");
    }
    let _ = writeln!(o, "  Timeouts: {}", s.timeouts);
    if r.info.duration_s.is_some() {
        let _ = writeln!(
            o,
            "  Requests in flight at the time limit: {}",
            s.in_flight_at_end
        );
        if r.info.rate.is_some() {
            let _ = writeln!(
                o,
                "  Scheduled requests missed (due before the limit, no free connection): {}",
                s.missed
            );
        }
    }
    if r.info.keep_alive {
        let _ = writeln!(
            o,
            "  Requests resent after the server closed an idle keep-alive connection: {}",
            s.keep_alive_retries
        );
    }
    super::extras::violations(o, s);
    if s.errors.is_empty() {
        let _ = writeln!(o, "  Errors by kind: none");
    } else {
        let _ = writeln!(o, "  Errors by kind:");
        for (k, v) in &s.errors {
            let _ = writeln!(o, "    {v:>8}  {k}");
        }
    }
    super::extras::kernel_tcp(o, r);
    if let (Some(c), Some(rate)) = (&l.corrected, r.info.rate) {
        let _ = writeln!(
            o,
            "  Open loop at {rate} req/s: latency from the scheduled send time (corrected) vs from the actual send (uncorrected), ms"
        );
        if s.hit_deadline || s.missed > 0 || s.in_flight_at_end > 0 {
            let _ = writeln!(
                o,
                "  (corrected includes requests in flight and missed at the time limit, as waiting until it)"
            );
        }
        let _ = writeln!(
            o,
            "    {:>7}  {:>10}  {:>11}",
            "", "corrected", "uncorrected"
        );
        for (label, q) in [("50%", 0.5), ("90%", 0.9), ("99%", 0.99), ("99.9%", 0.999)] {
            let _ = writeln!(
                o,
                "    {label:>7}  {:10.3}  {:11.3}",
                ms(c.value_at_quantile(q)),
                ms(l.total.value_at_quantile(q))
            );
        }
        let _ = writeln!(
            o,
            "    {:>7}  {:10.3}  {:11.3}",
            "max",
            ms(c.max()),
            ms(l.total.max())
        );
    }
}

/// ab's `-e` file: the time within which each whole percentage of
/// requests was served, 0 to 100.
pub fn percentile_csv(r: &BenchResult) -> String {
    let h = r.stats.latency.reported();
    let mut o = String::from("Percentage served,Time in ms\n");
    for p in 0..=100 {
        let us = if h.is_empty() {
            0
        } else if p == 0 {
            h.min()
        } else {
            h.value_at_quantile(p as f64 / 100.0)
        };
        let _ = writeln!(o, "{p},{:.3}", us as f64 / 1000.0);
    }
    o
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::{BenchConfig, RequestSpec, Stats};
    use crate::net::url::HttpUrl;

    fn report(variable_length: bool, document_length: Option<u64>, varied: bool) -> String {
        let cfg = BenchConfig {
            requests: Some(1),
            timeout: Duration::from_secs(1),
            variable_length,
            ..BenchConfig::new(
                HttpUrl::parse("http://127.0.0.1:9/x").unwrap(),
                RequestSpec {
                    method: "GET".into(),
                    ..RequestSpec::default()
                },
            )
        };
        let mut stats = Stats::new(false);
        stats.document_length = document_length;
        stats.variable_length = varied;
        ab_report(&BenchResult::new(&cfg, stats, Duration::from_secs(1)))
    }

    fn doc_line(r: &str) -> &str {
        r.lines()
            .find(|l| l.starts_with("Document Length:"))
            .unwrap()
    }

    #[test]
    fn document_length_is_variable_exactly_when_l_is_given() {
        // ab: "Variable" whenever -l is given, even if nothing varied; the
        // first response's length otherwise, even if later ones differed.
        let v = "Document Length:        Variable";
        assert_eq!(doc_line(&report(true, Some(500), false)), v);
        assert_eq!(doc_line(&report(true, Some(500), true)), v);
        let fixed = "Document Length:        500 bytes";
        assert_eq!(doc_line(&report(false, Some(500), false)), fixed);
        assert_eq!(doc_line(&report(false, Some(500), true)), fixed);
    }

    fn notes(spread: &[(u64, u64)]) -> String {
        let mut h = crate::bench::stats::new_histogram();
        for &(us, n) in spread {
            h.record_n(us, n).unwrap();
        }
        let flat = crate::bench::stats::new_histogram();
        let mut o = String::new();
        sanity_notes(
            &mut o,
            [
                ("the initial connection time", &flat),
                ("the processing time", &h),
                ("the waiting time", &flat),
                ("the total time", &h),
            ],
        );
        o
    }

    #[test]
    fn abs_warning_and_error_come_under_abs_conditions() {
        // Every time alike: mean = median, nothing to say.
        assert_eq!(notes(&[(1500, 100)]), "");
        // Mean 0.85 ms (1), median 0.4 ms (0), sd 0.69: apart by more
        // than one deviation, not two.
        assert_eq!(
            notes(&[(400, 70), (1900, 30)]).lines().collect::<Vec<_>>(),
            [
                "WARNING: The median and mean for the processing time are not within a normal deviation",
                "        These results are probably not that reliable.",
                "WARNING: The median and mean for the total time are not within a normal deviation",
                "        These results are probably not that reliable.",
            ]
        );
        // Mean 0.8 ms (1), median 0.4 ms (0), sd 0.49: more than two.
        let e = notes(&[(400, 60), (1400, 40)]);
        assert_eq!(
            e.lines().collect::<Vec<_>>(),
            [
                "ERROR: The median and mean for the processing time are more than twice the standard",
                "       deviation apart. These results are NOT reliable.",
                "ERROR: The median and mean for the total time are more than twice the standard",
                "       deviation apart. These results are NOT reliable.",
            ]
        );
    }
}
