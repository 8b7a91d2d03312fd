//! What the report adds to ab's: tail percentiles, timeouts and errors by
//! kind, corrected beside uncorrected latencies in the open loop, and a
//! warning when the rate was not reached.

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
    assert!(!text.contains("WARNING"), "{text}");
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
