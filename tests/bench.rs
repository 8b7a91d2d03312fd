//! `loadlab bench` against real servers: loadlab serve, nginx (started by
//! the test with a generated config), ab for comparison, and a fake server
//! that misbehaves on purpose.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::process::Command;
use std::time::Duration;

use common::fake::{Behaviour, FakeServer};
use common::*;
use loadlab::lab::nginx::{Nginx, NginxOptions};
use serde_json::Value;

/// Runs `loadlab bench ARGS... --format json -q` and parses the result.
fn bench_json(args: &[&str]) -> Value {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(args)
        .args(["--format", "json", "-q"])
        .output()
        .expect("run loadlab bench");
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench JSON")
}

fn bench_text(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(args)
        .output()
        .expect("run");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} missing in {v}"))
}

fn start_nginx(log: bool) -> (Nginx, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    loadlab::server::handlers::write_embedded_docroot(&root).unwrap();
    let mut opts = NginxOptions::new(&root);
    opts.workers = 2;
    if log {
        opts.access_log = Some(dir.path().join("access.log"));
    }
    (
        Nginx::start(&opts).expect("start nginx (installed by .ci/run)"),
        dir,
    )
}

/// nginx's access log: (connection id, status) per request. nginx writes
/// it as each request completes; give it a moment to land.
fn access_log(dir: &tempfile::TempDir, expect: usize) -> Vec<(u64, u16)> {
    let path = dir.path().join("access.log");
    for _ in 0..100 {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let rows: Vec<(u64, u16)> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[0].parse().unwrap(), f[2].parse().unwrap())
            })
            .collect();
        if rows.len() >= expect {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nginx logged fewer than {expect} requests");
}

#[test]
fn exact_request_counts_against_nginx_with_and_without_keepalive() {
    let (nginx, dir) = start_nginx(true);
    let url = nginx.url("/500B.html");
    let r = bench_json(&["-n", "1000", "-c", "10", &url]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/failed"), 0);
    assert_eq!(u(&r, "/document_length"), 500);
    assert_eq!(u(&r, "/bytes/html_received"), 500_000);
    let rows = access_log(&dir, 1000);
    assert_eq!(rows.len(), 1000, "nginx saw exactly -n requests");
    let conns: HashSet<u64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(
        conns.len(),
        1000,
        "without -k every request has its own connection"
    );

    let r = bench_json(&["-n", "1000", "-c", "10", "-k", &url]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/keep_alive_requests"), 1000);
    let rows = access_log(&dir, 2000);
    assert_eq!(rows.len(), 2000);
    let conns: HashSet<u64> = rows[1000..].iter().map(|r| r.0).collect();
    assert!(
        conns.len() <= 10,
        "with -k the 10 connections are reused, got {}",
        conns.len()
    );
}

#[test]
fn exact_request_counts_against_loadlab_for_odd_splits() {
    let server = TestServer::start("reactors", &["--workers", "2"]);
    for (n, c, k) in [("1234", "7", false), ("1001", "3", true), ("5", "5", false)] {
        let mut args = vec!["-n", n, "-c", c, "--threads", "2"];
        if k {
            args.push("-k");
        }
        let url = server.url("/500B.html");
        args.push(&url);
        let r = bench_json(&args);
        assert_eq!(u(&r, "/complete"), n.parse::<u64>().unwrap(), "{args:?}");
        assert_eq!(u(&r, "/failed"), 0);
        assert_eq!(u(&r, "/status_classes/2xx"), n.parse::<u64>().unwrap());
    }
}

#[test]
fn post_and_put_bodies_reach_the_server() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'z'; 3000]).unwrap();
    let url = server.url("/echo");
    let body = body.to_str().unwrap();
    for flag in ["-p", "-u"] {
        let r = bench_json(&[
            "-n",
            "200",
            "-c",
            "4",
            "-k",
            flag,
            body,
            "-T",
            "application/x-test",
            &url,
        ]);
        assert_eq!(u(&r, "/complete"), 200, "{flag}");
        assert_eq!(u(&r, "/failed"), 0, "{flag}");
        assert_eq!(u(&r, "/bytes/body_sent"), 200 * 3000, "{flag}");
        // /echo answers with the body it received.
        assert_eq!(u(&r, "/bytes/html_received"), 200 * 3000, "{flag}");
        let method = if flag == "-p" { "POST" } else { "PUT" };
        assert_eq!(r["run"]["method"], method);
    }
}

#[test]
fn server_errors_are_non_2xx_not_failures() {
    let server = TestServer::start("event-loop", &[]);
    let r = bench_json(&["-n", "300", "-c", "3", &server.url("/status/500")]);
    assert_eq!(u(&r, "/complete"), 300);
    assert_eq!(u(&r, "/failed"), 0);
    assert_eq!(u(&r, "/non_2xx"), 300);
    assert_eq!(u(&r, "/status_classes/5xx"), 300);
}

#[test]
fn early_close_is_a_receive_failure() {
    let fake = FakeServer::start(Behaviour::CloseEarly);
    let r = bench_json(&["-n", "50", "-c", "5", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 50);
    assert_eq!(u(&r, "/failed"), 50);
    assert_eq!(u(&r, "/failures/receive"), 50);
    assert!(
        r["errors"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.contains("closed")),
        "{}",
        r["errors"]
    );
}

#[test]
fn varying_lengths_fail_unless_l_is_given() {
    let fake = FakeServer::start(Behaviour::VaryingLength);
    let r = bench_json(&["-n", "70", "-c", "1", "-k", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 70);
    assert_eq!(
        u(&r, "/failures/length"),
        60,
        "every length but the first one's (10 of 70 match)"
    );
    assert_eq!(r["variable_length"], true);
    let r = bench_json(&["-n", "70", "-c", "1", "-k", "-l", &fake.url("/")]);
    assert_eq!(u(&r, "/failed"), 0);
    let (text, _, _) = bench_text(&["-q", "-n", "20", "-c", "1", "-l", &fake.url("/")]);
    assert!(text.contains("Document Length:        Variable"), "{text}");
}

#[test]
fn stalls_past_s_are_timeouts() {
    let fake = FakeServer::start(Behaviour::Stall);
    let r = bench_json(&["-n", "4", "-c", "2", "-s", "300ms", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 4);
    assert_eq!(u(&r, "/timeouts"), 4);
    assert_eq!(u(&r, "/failures/exceptions"), 4);
}

#[test]
fn five_thousand_concurrent_connections() {
    let server = TestServer::start("reactors", &["--workers", "2"]);
    let r = bench_json(&["-n", "5000", "-c", "5000", &server.url("/500B.html")]);
    assert_eq!(u(&r, "/complete"), 5000);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(r["run"]["concurrency"], 5000);
}

#[test]
fn time_limit_reports_in_flight_requests_and_has_no_hidden_cap() {
    let server = TestServer::start("event-loop", &[]);
    let r = bench_json(&["-t", "1", "-c", "8", "-k", &server.url("/500B.html")]);
    let t = r["time_taken_s"].as_f64().unwrap();
    assert!(
        (t - 1.0).abs() < 1e-6,
        "a time-limited run lasts its limit, got {t}"
    );
    assert!(u(&r, "/complete") > 0);
    assert!(r.get("in_flight_at_end").is_some());
    assert_eq!(
        r["run"]["requests"],
        Value::Null,
        "-t alone sets no request cap"
    );
}

/// Lines of the form `Label:   value`, keyed by label.
fn labels(report: &str) -> BTreeSet<String> {
    report
        .lines()
        .filter_map(|l| {
            let (label, rest) = l.split_once(':')?;
            let ok = !label.is_empty()
                && label.chars().next()?.is_ascii_uppercase()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-')
                && rest.starts_with(' ');
            // ab's statistical WARNING/ERROR notes are diagnostics that
            // depend on the sample, not report labels.
            let diagnostic = matches!(label, "WARNING" | "ERROR");
            (ok && !diagnostic).then(|| label.trim().to_string())
        })
        .collect()
}

fn percent_rows(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| {
            l.trim_start()
                .split('%')
                .next()
                .is_some_and(|p| !p.is_empty() && p.trim().parse::<u32>().is_ok())
        })
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn report_has_every_label_ab_prints() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("b.txt");
    std::fs::write(&body, b"hello").unwrap();
    let body = body.to_str().unwrap().to_string();
    let page = server.url("/500B.html");
    let echo = server.url("/echo");
    let status = server.url("/status/404");
    let cases: [Vec<&str>; 3] = [
        vec!["-n", "200", "-c", "10", "-k", &page],
        vec![
            "-n",
            "200",
            "-c",
            "10",
            "-p",
            &body,
            "-T",
            "text/plain",
            &echo,
        ],
        vec!["-n", "100", "-c", "5", &status],
    ];
    for args in cases {
        let ab = tool("ab").args(&args).output().unwrap();
        assert!(ab.status.success());
        let ab = String::from_utf8_lossy(&ab.stdout).into_owned();
        let (ours, _, code) = bench_text(&args);
        assert_eq!(code, 0);
        let missing: Vec<_> = labels(&ab).difference(&labels(&ours)).cloned().collect();
        assert!(
            missing.is_empty(),
            "labels ab prints but loadlab does not: {missing:?}\n--- ab\n{ab}\n--- loadlab\n{ours}"
        );
        assert_eq!(
            percent_rows(&ab),
            percent_rows(&ours),
            "percentage table rows"
        );
        for row in ["Connect:", "Processing:", "Waiting:", "Total:"] {
            let count = |t: &str| t.lines().filter(|l| l.starts_with(row)).count();
            assert_eq!(count(&ab), count(&ours), "{row}");
        }
    }
}

#[test]
fn e_writes_ab_style_percentile_csv() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.csv");
    let theirs = dir.path().join("ab.csv");
    let url = server.url("/500B.html");
    let (_, _, code) = bench_text(&[
        "-q",
        "-n",
        "200",
        "-c",
        "4",
        "-e",
        ours.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(code, 0);
    assert!(tool("ab")
        .args([
            "-q",
            "-n",
            "200",
            "-c",
            "4",
            "-e",
            theirs.to_str().unwrap(),
            &url
        ])
        .output()
        .unwrap()
        .status
        .success());
    let ours = std::fs::read_to_string(ours).unwrap();
    let theirs = std::fs::read_to_string(theirs).unwrap();
    assert_eq!(ours.lines().next(), theirs.lines().next());
    assert_eq!(ours.lines().count(), theirs.lines().count());
    let firsts = |t: &str| {
        t.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(firsts(&ours), firsts(&theirs));
    let times: Vec<f64> = ours
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "percentile times never decrease"
    );
}

#[test]
fn merge_of_two_runs_equals_one_run_over_both() {
    use loadlab::bench::stats::{decode_histogram, Summary};
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    let mut files = Vec::new();
    for (name, n) in [("a.json", "300"), ("b.json", "500")] {
        let path = dir.path().join(name);
        let (_, err, code) = bench_text(&[
            "-q",
            "-n",
            n,
            "-c",
            "5",
            "--format",
            "json",
            "--out",
            path.to_str().unwrap(),
            &url,
        ]);
        assert_eq!(code, 0, "{err}");
        files.push(path);
    }
    let out = Command::new(loadlab_bin())
        .args(["merge", "--format", "json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&merged, "/complete"), 800);
    let runs: Vec<Value> = files
        .iter()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect();
    let mut union = decode_histogram(runs[0]["histograms"]["total"].as_str().unwrap()).unwrap();
    union
        .add(decode_histogram(runs[1]["histograms"]["total"].as_str().unwrap()).unwrap())
        .unwrap();
    // The merged histogram holds exactly the union's samples, value by value.
    let merged_hist =
        decode_histogram(merged["histograms"]["total"].as_str().unwrap()).unwrap();
    let counts = |h: &hdrhistogram::Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(counts(&merged_hist), counts(&union), "merged histogram is the union");
    // Its statistics are the union's: counts and quantiles exactly; mean and
    // sd are float sums, equal up to rounding in the last place.
    let expect = serde_json::to_value(Summary::of(&union)).unwrap();
    for (key, want) in expect.as_object().unwrap() {
        let got = &merged["latency_ms"][key];
        let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
        if key == "mean" || key == "stdev" {
            assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{key}: {g} vs {w}");
        } else {
            assert_eq!(got, want, "merged {key} is the union's");
        }
    }
    let t = merged["time_taken_s"].as_f64().unwrap();
    let tmax = runs
        .iter()
        .map(|r| r["time_taken_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(t, tmax);
}

#[test]
fn open_loop_shows_a_server_pause_in_the_corrected_tail() {
    // 500 req/s for about 2 s; after 300 requests the server stops for
    // 400 ms. A closed-loop client would just send fewer requests during
    // the pause; the open-loop schedule keeps them and charges the wait.
    let fake = FakeServer::start(Behaviour::PauseOnce {
        after: 300,
        pause: Duration::from_millis(400),
    });
    let r = bench_json(&[
        "-n",
        "1000",
        "-c",
        "4",
        "-k",
        "--rate",
        "500",
        &fake.url("/"),
    ]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/failed"), 0);
    let corrected = r["corrected_latency_ms"]["p99"].as_f64().unwrap();
    let uncorrected = r["latency_ms"]["p99"].as_f64().unwrap();
    assert!(
        corrected >= 200.0,
        "corrected p99 {corrected} ms should show the 400 ms pause"
    );
    assert!(
        uncorrected < corrected / 2.0,
        "uncorrected p99 {uncorrected} ms hides most of it"
    );
    let (text, _, _) = bench_text(&[
        "-q",
        "-n",
        "100",
        "-c",
        "2",
        "--rate",
        "200",
        &fake.url("/"),
    ]);
    assert!(text.contains("corrected"), "{text}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: [&[&str]; 8] = [
        &["-n", "10", "not-a-url"],
        &["-n", "10", "https://127.0.0.1/"],
        &["-n", "10", "-p", "/nonexistent/body", "http://127.0.0.1:9/"],
        &["-n", "5", "-c", "10", "http://127.0.0.1:9/"],
        &["-n", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "-c", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "-s", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "--rate=-5", "http://127.0.0.1:9/"],
    ];
    for args in cases {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: one line, got {stderr}"
        );
    }
    for args in [
        &["-n", "10", "-c", "-3", "http://127.0.0.1:9/"][..],
        &["--no-such-flag", "http://x/"][..],
    ] {
        let (_, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "clap errors are one line too: {stderr}"
        );
    }
}

#[test]
fn no_progress_output_when_stderr_is_not_a_terminal() {
    let server = TestServer::start("event-loop", &[]);
    let (stdout, stderr, code) = bench_text(&["-n", "300", "-c", "3", &server.url("/")]);
    assert_eq!(code, 0);
    assert!(stderr.is_empty(), "stderr: {stderr}");
    assert!(stdout.contains("Complete requests:      300"));
}
