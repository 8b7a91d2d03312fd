//! What the report adds to ab's: tail percentiles, timeouts and errors by
//! kind, corrected beside uncorrected latencies in the open loop, a
//! warning when the rate was not reached, responses by status code and a
//! latency histogram.

use std::time::Duration;

use crate::common::bench::{bench_json, bench_text};
use crate::common::fake::{Behaviour, FakeServer};
use crate::common::*;

/// The three numbers of `  Latency p99.9 / p99.99 / max (ms): a / b / c`.
fn tail_latencies(report: &str) -> [f64; 3] {
    let line = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Latency p99.9 / p99.99 / max (ms):"))
        .unwrap_or_else(|| panic!("no tail latency line in {report}"));
    let v: Vec<f64> = line.split('/').map(|x| x.trim().parse().unwrap()).collect();
    [v[0], v[1], v[2]]
}

#[test]
fn the_report_adds_tail_percentiles_timeouts_and_errors_by_kind() {
    let server = TestServer::start("event-loop", &[]);
    let (text, _, code) = bench_text(&["-q", "-n", "2000", "-c", "4", &server.url("/")]);
    assert_eq!(code, 0);
    let [p999, p9999, max] = tail_latencies(&text);
    assert!(
        0.0 < p999 && p999 <= p9999 && p9999 <= max,
        "{p999} {p9999} {max}"
    );
    assert!(text.contains("\n  Timeouts: 0\n"), "{text}");
    assert!(text.contains("\n  Errors by kind: none\n"), "{text}");

    let stall = FakeServer::start(Behaviour::Stall);
    let (text, _, code) = bench_text(&["-q", "-n", "4", "-c", "2", "-s", "300ms", &stall.url("/")]);
    // Every request timed out: the report lists them, and the run measured
    // nothing usable.
    assert_eq!(code, 1);
    assert!(text.contains("\n  Timeouts: 4\n"), "{text}");
    let kinds: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != "Errors by kind:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect();
    assert_eq!(kinds.len(), 1, "{text}");
    let (count, kind) = kinds[0].trim().split_once("  ").unwrap();
    assert_eq!(count, "4", "{text}");
    assert!(kind.contains("timeout"), "{kind}");
}

#[test]
fn the_open_loop_report_shows_corrected_beside_uncorrected() {
    // A server that pauses for 300 ms once: from the scheduled send times
    // the tail carries the pause, from the actual sends much less of it.
    let fake = FakeServer::start(Behaviour::PauseOnce {
        after: 100,
        pause: Duration::from_millis(300),
    });
    let (text, err, code) = bench_text(&[
        "-q",
        "-n",
        "400",
        "-c",
        "4",
        "-k",
        "--rate",
        "400",
        &fake.url("/"),
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<(String, f64, f64)> = text
        .lines()
        .skip_while(|l| !l.contains("(corrected) vs from the actual send (uncorrected)"))
        .skip(2)
        .take(5)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(labels, ["50%", "90%", "99%", "99.9%", "max"], "{text}");
    let (_, corrected_max, uncorrected_max) = &rows[4];
    assert!(
        *corrected_max >= 250.0,
        "the pause is in the corrected tail: {text}"
    );
    for (label, corrected, uncorrected) in &rows {
        assert!(corrected >= uncorrected, "{label}: {text}");
    }
    assert!(uncorrected_max <= corrected_max);
}

/// The figures of ab's own block, read as an ab parser reads them: the
/// "Total:" row and the " NN%" lines, anchored at the line start.
fn ab_total_max_and_p100(text: &str) -> (f64, f64) {
    let total = text.lines().find(|l| l.starts_with("Total:")).unwrap();
    let max: f64 = total.split_whitespace().last().unwrap().parse().unwrap();
    let p100 = text.lines().find(|l| l.starts_with(" 100%")).unwrap();
    (
        max,
        p100.split_whitespace().nth(1).unwrap().parse().unwrap(),
    )
}

/// Regression (issue 18): in open loop ab's block showed the uncorrected
/// figures (a 3 ms p50 while the corrected one was 2.3 s). Now every
/// latency of ab's block counts from the scheduled send time, ab's labels
/// kept for its parsers, and the uncorrected figures follow, labelled so
/// an anchored parser never reads them.
#[test]
fn regression_the_open_loop_ab_block_showed_uncorrected_latencies() {
    let fake = FakeServer::start(Behaviour::PauseOnce {
        after: 100,
        pause: Duration::from_millis(300),
    });
    let (text, err, code) = bench_text(&[
        "-q",
        "-n",
        "400",
        "-c",
        "4",
        "-k",
        "--rate",
        "400",
        &fake.url("/"),
    ]);
    assert_eq!(code, 0, "{err}");
    let (total_max, p100) = ab_total_max_and_p100(&text);
    assert!(total_max >= 250.0, "ab's Total row holds the pause: {text}");
    assert_eq!(total_max, p100, "{text}");
    // Connect counts the wait behind the schedule, so it holds the pause
    // too (Connect + Processing = Total, as in ab).
    let connect = text.lines().find(|l| l.starts_with("Connect:")).unwrap();
    let connect_max: f64 = connect.split_whitespace().last().unwrap().parse().unwrap();
    assert!(connect_max >= 200.0, "{text}");
    let unc = text
        .lines()
        .find(|l| l.starts_with("Uncorrected Total:"))
        .unwrap_or_else(|| panic!("no uncorrected table: {text}"));
    // The mean: the request in flight during the pause waited all of it
    // either way, but those scheduled during it waited from the schedule.
    let mean = |row: &str| -> f64 {
        row.split_whitespace()
            .rev()
            .nth(3)
            .unwrap()
            .parse()
            .unwrap()
    };
    let total = text.lines().find(|l| l.starts_with("Total:")).unwrap();
    assert!(mean(unc) * 2.0 < mean(total), "{text}");
    assert!(
        text.contains(
            "Percentage of the requests served within a certain time (ms), uncorrected\n Uncorrected  50%"
        ),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with(" 50%") || l.starts_with("  50%"))
            .count(),
        1,
        "one ab-shaped 50% line: {text}"
    );
    // Beyond ab: the tail line is corrected, the uncorrected one beside it.
    let tail = |label: &str| -> f64 {
        let l = text.lines().find(|l| l.starts_with(label)).unwrap();
        l.rsplit(" / ").next().unwrap().trim().parse().unwrap()
    };
    assert!(
        tail("  Latency p99.9 / p99.99 / max (ms): ") >= 250.0,
        "{text}"
    );
    assert!(tail("  Latency p99.9 / p99.99 / max (ms), uncorrected: ") <= total_max + 1.0);

    // JSON and CSV carry both.
    let r = bench_json(&[
        "-n",
        "200",
        "-c",
        "2",
        "-k",
        "--rate",
        "400",
        &fake.url("/"),
    ]);
    assert!(
        r["corrected_connect_ms"]["count"].as_u64() == Some(200),
        "{r}"
    );
    assert!(r["achieved_rate"].as_f64().is_some(), "{r}");
    assert!(r["histograms"]["corrected_connect"].is_string(), "{r}");
}

/// Open loop warns (stderr and report) when the achieved rate is below
/// 95% of --rate, and says nothing when it was kept.
#[test]
fn open_loop_warns_when_the_rate_was_not_reached() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    // 200 requests/s on two kept-alive connections: easily kept.
    let (text, stderr, code) =
        bench_text(&["-q", "-t", "1", "-c", "2", "-k", "--rate", "200", &url]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert!(!text.contains("WARNING: achieved"), "{text}");
    let achieved = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Achieved rate: "))
        .unwrap_or_else(|| panic!("{text}"));
    let pct: f64 = achieved
        .rsplit('(')
        .next()
        .unwrap()
        .trim_end_matches("%)")
        .parse()
        .unwrap();
    assert!(pct >= 95.0, "{text}");

    // One connection without keep-alive cannot make 200,000 requests/s.
    let (text, stderr, code) = bench_text(&[
        "-q",
        "-t",
        "1",
        "-c",
        "1",
        "--threads",
        "1",
        "--rate",
        "200000",
        &url,
    ]);
    assert_eq!(code, 0, "a shortfall is a warning: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("loadlab: warning: achieved ") && stderr.contains("of --rate 200000"),
        "{stderr}"
    );
    assert!(text.contains("  WARNING: achieved "), "{text}");
}

/// The lines of the report's section under `heading`, up to a blank line.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// oha's and hey's "Status code distribution", after ab's report and
/// loadlab's lines; the same counts by code in JSON.
#[test]
fn responses_are_counted_by_status_code_in_text_and_json() {
    static CODES: [u16; 5] = [200, 200, 201, 404, 503];
    let fake = FakeServer::start(Behaviour::StatusCycle(&CODES));
    let url = fake.url("/");
    let (text, err, code) = bench_text(&["-q", "-n", "100", "-c", "1", "-k", "-l", &url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        section(&text, "Status code distribution:"),
        [
            "  [200] 40 responses",
            "  [201] 20 responses",
            "  [404] 20 responses",
            "  [503] 20 responses"
        ],
        "{text}"
    );
    let beyond = text.find("\nBeyond ab (loadlab):\n").unwrap();
    let codes = text.find("\nStatus code distribution:\n").unwrap();
    assert!(beyond < codes, "after ab's report and loadlab's lines");
    assert!(text.contains("Non-2xx responses:      40"), "{text}");

    let fake = FakeServer::start(Behaviour::StatusCycle(&CODES));
    let r = bench_json(&["-n", "50", "-c", "2", "-k", "-l", &fake.url("/")]);
    assert_eq!(
        r["status_codes"],
        serde_json::json!({"200": 20, "201": 10, "404": 10, "503": 10}),
        "{r}"
    );
    assert_eq!(r["status_classes"]["2xx"], 30);
}

/// oha's "Response time histogram" in the text report, and the same
/// buckets in JSON beside the HdrHistogram encodings: every answered
/// request in exactly one bucket, bounds rising from min to max.
#[test]
fn the_latency_histogram_is_readable_in_text_and_json() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let (text, err, code) = bench_text(&["-q", "-n", "400", "-c", "4", &url]);
    assert_eq!(code, 0, "{err}");
    let rows = section(&text, "Response time histogram (ms):");
    assert!(!rows.is_empty() && rows.len() <= 11, "{text}");
    let mut total = 0;
    let mut last = f64::MIN;
    for row in &rows {
        let (bound, rest) = row.trim().split_once(" [").unwrap();
        let bound: f64 = bound.parse().unwrap();
        assert!(bound > last, "{text}");
        last = bound;
        total += rest.split(']').next().unwrap().parse::<u64>().unwrap();
    }
    assert_eq!(total, 400, "{text}");

    let r = bench_json(&["-n", "300", "-c", "3", &url]);
    let b = r["histograms"]["buckets"]["total"].as_array().unwrap();
    let sum: u64 = b.iter().map(|x| x["count"].as_u64().unwrap()).sum();
    assert_eq!(sum, 300, "{r}");
    let bounds: Vec<f64> = b.iter().map(|x| x["le_ms"].as_f64().unwrap()).collect();
    assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
    let max = r["latency_ms"]["max"].as_f64().unwrap();
    assert!(
        (bounds.last().unwrap() - max).abs() < 0.01 * max + 0.002,
        "{bounds:?} {max}"
    );
    assert!(
        r["histograms"]["total"].is_string(),
        "the encoding stays beside it"
    );
}
