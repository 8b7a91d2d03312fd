//! `loadlab bench` against real servers: loadlab serve, ab for comparison,
//! and a fake server that misbehaves on purpose (nginx: bench_nginx.rs).

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use common::bench::{bench_json, bench_text, body_request, u};
use common::fake::{Behaviour, FakeServer};
use common::*;
use serde_json::Value;

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
        // ab's "Total body sent" adds up whole requests, head and body.
        let method = if flag == "-p" { "POST" } else { "PUT" };
        let request_len = body_request(method, &[b'z'; 3000], &url);
        assert!(request_len > 3000);
        assert_eq!(
            u(&r, "/bytes/body_sent"),
            200 * request_len as u64,
            "{flag}"
        );
        // /echo answers with the body it received.
        assert_eq!(u(&r, "/bytes/html_received"), 200 * 3000, "{flag}");
        assert_eq!(r["run"]["method"], method);
    }
}

#[test]
fn kept_alive_bodies_larger_than_the_socket_buffer_are_sent_whole() {
    // A kept-alive connection is polled for READABLE only once connected;
    // a body the kernel cannot take at once must bring WRITABLE back, or
    // the rest of it is never sent.
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    let size = 6 << 20;
    std::fs::write(&body, vec![b'q'; size]).unwrap();
    let r = bench_json(&[
        "-n",
        "6",
        "-c",
        "2",
        "-k",
        "-s",
        "20",
        "-u",
        body.to_str().unwrap(),
        &server.url("/files/big.bin"),
    ]);
    assert_eq!(u(&r, "/complete"), 6);
    assert_eq!(u(&r, "/failed"), 0);
    assert_eq!(u(&r, "/keep_alive_requests"), 6);
    assert!(u(&r, "/bytes/body_sent") > 6 * size as u64);
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
fn five_thousand_concurrent_connections() {
    let server = TestServer::start("reactors", &["--workers", "2"]);
    let r = bench_json(&["-n", "5000", "-c", "5000", &server.url("/500B.html")]);
    assert_eq!(u(&r, "/complete"), 5000);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(r["run"]["concurrency"], 5000);
}

#[test]
fn time_limit_has_no_hidden_50000_cap() {
    // ab's -t caps a run at 50,000 requests; loadlab's must not. Four
    // seconds with keep-alive pass 50,000 with room to spare even on a busy
    // two-core machine (an idle one does well over 100,000 a second).
    let server = TestServer::start("event-loop", &[]);
    let r = bench_json(&["-t", "4", "-c", "16", "-k", &server.url("/500B.html")]);
    let t = r["time_taken_s"].as_f64().unwrap();
    assert!(
        (t - 4.0).abs() < 1e-6,
        "a time-limited run lasts its limit, got {t}"
    );
    assert!(
        u(&r, "/complete") > 50_000,
        "complete {} is not past ab's cap",
        u(&r, "/complete")
    );
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(
        r["run"]["requests"],
        Value::Null,
        "-t alone sets no request cap"
    );
}

#[test]
fn time_limit_reports_requests_in_flight_at_a_stalled_server() {
    // The server reads every request and never answers: when the limit
    // passes, all three are on the wire, and the report says so.
    let fake = FakeServer::start(Behaviour::Stall);
    let r = bench_json(&["-t", "1", "-c", "3", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 0);
    assert_eq!(u(&r, "/in_flight_at_end"), 3);
    let (text, err, code) = bench_text(&["-q", "-t", "1", "-c", "3", &fake.url("/")]);
    // No answer at all: the report says what happened, the exit status
    // that nothing usable was measured.
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("measured nothing usable: no request completed"),
        "{err}"
    );
    assert!(
        text.contains("Requests in flight at the time limit: 3"),
        "{text}"
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
        let (ours, err, code) = bench_text(&args);
        // ab exits 0 whatever the answers; loadlab exits 1 when every
        // answer is a 404, after the same report.
        let all_404 = args.last() == Some(&status.as_str());
        assert_eq!(code, if all_404 { 1 } else { 0 }, "{err}");
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
    let merged_hist = decode_histogram(merged["histograms"]["total"].as_str().unwrap()).unwrap();
    let counts = |h: &hdrhistogram::Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(
        counts(&merged_hist),
        counts(&union),
        "merged histogram is the union"
    );
    // Its statistics are the union's: counts and quantiles exactly; mean and
    // sd are float sums, equal up to rounding in the last place.
    let expect = serde_json::to_value(Summary::of(&union)).unwrap();
    for (key, want) in expect.as_object().unwrap() {
        let got = &merged["latency_ms"][key];
        let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
        if key == "mean" || key == "stdev" {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{key}: {g} vs {w}"
            );
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
    let cases: [&[&str]; 15] = [
        &["-n", "10", "not-a-url"],
        &["-n", "10", "-H", "Content-Length: 5", "http://127.0.0.1:9/"],
        &["-n", "10", "https://127.0.0.1/"],
        &["-n", "10", "-p", "/nonexistent/body", "http://127.0.0.1:9/"],
        &["-n", "5", "-c", "10", "http://127.0.0.1:9/"],
        &["-n", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "-c", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "-s", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "--rate=-5", "http://127.0.0.1:9/"],
        // Finer than the nanosecond schedule: refused, not an overflow.
        &["-t", "1", "--rate", "1e300", "http://127.0.0.1:9/"],
        &["-t", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "--threads", "0", "http://127.0.0.1:9/"],
        // Negative values are refused as values, not as unknown flags.
        &["-n", "-5", "http://127.0.0.1:9/"],
        &["-t", "-1", "http://127.0.0.1:9/"],
        &["-n", "10", "--warmup", "-1s", "http://127.0.0.1:9/"],
    ];
    for args in cases {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        if args
            .iter()
            .any(|a| a.starts_with('-') && a.as_bytes().get(1).is_some_and(u8::is_ascii_digit))
        {
            assert!(stderr.contains("invalid value '-"), "{args:?}: {stderr}");
        }
        if args[2].starts_with("https") {
            assert!(stderr.contains("https is not supported yet"), "{stderr}");
        }
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

#[test]
fn ten_thousand_concurrent_connections() {
    // E3: c = 10,000 against one event loop. The machine's open-file limit
    // (20,000) leaves room for the client and the server, each its own
    // process.
    let server = TestServer::start("event-loop", &[]);
    let r = bench_json(&["-n", "10000", "-c", "10000", &server.url("/500B.html")]);
    assert_eq!(u(&r, "/complete"), 10_000);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(r["run"]["concurrency"], 10_000);
}

#[test]
fn concurrency_beyond_the_open_file_limit_fails_at_once_in_one_line() {
    use std::os::unix::process::CommandExt;
    let fake = FakeServer::start(Behaviour::Capture);
    let mut cmd = Command::new(loadlab_bin());
    cmd.args(["bench", "-n", "1000", "-c", "1000", &fake.url("/")]);
    // SAFETY: the closure runs in the forked child before exec and only
    // calls setrlimit, which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            use nix::sys::resource::{setrlimit, Resource};
            setrlimit(Resource::RLIMIT_NOFILE, 256, 256)
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("256") && stderr.contains("1000"),
        "{stderr}"
    );
    assert_eq!(
        fake.requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "it failed before sending anything"
    );
}

/// A captured request: request line, headers (names lower-cased, in
/// order), body, and its size on the wire.
struct Seen {
    len: u64,
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn parse(raw: &[u8]) -> Seen {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = std::str::from_utf8(&raw[..end]).unwrap();
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap().to_string();
        let headers = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        Seen {
            len: raw.len() as u64,
            line,
            headers,
            body: raw[end..].to_vec(),
        }
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Runs bench against the capture server and returns what it received.
fn capture(fake: &FakeServer, args: &[&str]) -> (Value, Vec<Seen>) {
    let r = bench_json(args);
    assert_eq!(u(&r, "/failed"), 0, "{args:?}: {}", r["errors"]);
    let seen = fake.take_captured();
    assert_eq!(seen.len() as u64, u(&r, "/complete"), "{args:?}");
    (r, seen.iter().map(|raw| Seen::parse(raw)).collect())
}

#[test]
fn request_flags_reach_the_server_as_given() {
    let fake = FakeServer::start(Behaviour::Capture);
    let url = fake.url("/path?x=1");

    let (_, seen) = capture(
        &fake,
        &[
            "-n",
            "3",
            "-H",
            "Host: example.test",
            "-H",
            "X-Trace: abc",
            "-C",
            "a=1",
            "-C",
            "b=2",
            "-A",
            "user:pa:ss",
            &url,
        ],
    );
    assert_eq!(seen.len(), 3);
    let (help, _, _) = bench_text(&["--help"]);
    assert!(
        help.contains(
            "all go in one Cookie header, as RFC 6265 asks, where ab 2.3 sends only the last -C"
        ),
        "{help}"
    );
    for s in &seen {
        assert_eq!(s.line, "GET /path?x=1 HTTP/1.0");
        assert_eq!(s.all("host"), ["example.test"], "-H Host replaces ours");
        assert_eq!(s.all("x-trace"), ["abc"]);
        // Unlike ab 2.3 (the last -C only), and the help says so.
        assert_eq!(s.all("cookie"), ["a=1; b=2"]);
        assert_eq!(s.all("authorization"), ["Basic dXNlcjpwYTpzcw=="]);
        assert!(s.all("connection").is_empty(), "no keep-alive without -k");
        assert!(s.all("content-length").is_empty() && s.body.is_empty());
    }

    let (r, seen) = capture(&fake, &["-n", "2", "-i", "-k", &url]);
    assert_eq!(r["run"]["method"], "HEAD");
    for s in &seen {
        assert_eq!(s.line, "HEAD /path?x=1 HTTP/1.0");
        assert_eq!(s.all("connection"), ["Keep-Alive"]);
        assert_eq!(s.all("host"), [format!("{}", fake.addr)]);
    }
    assert_eq!(
        u(&r, "/bytes/html_received"),
        0,
        "HEAD answers have no body"
    );

    let (_, seen) = capture(&fake, &["-n", "2", "-m", "PATCH", &url]);
    assert!(seen.iter().all(|s| s.line == "PATCH /path?x=1 HTTP/1.0"));

    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(&body, br#"{"k": [1, 2, 3]}"#).unwrap();
    let body = body.to_str().unwrap();
    for (flag, method, ct) in [
        ("-p", "POST", "application/json"),
        ("-u", "PUT", "text/plain"),
    ] {
        let mut args = vec!["-n", "2", flag, body];
        if flag == "-p" {
            args.extend(["-T", ct]);
        }
        args.push(&url);
        let (r, seen) = capture(&fake, &args);
        for s in &seen {
            assert_eq!(s.line, format!("{method} /path?x=1 HTTP/1.0"));
            assert_eq!(s.all("content-type"), [ct], "{flag}: -T, or ab's default");
            assert_eq!(s.all("content-length"), ["16"]);
            assert_eq!(s.body, br#"{"k": [1, 2, 3]}"#);
        }
        let raw: u64 = fake_request_bytes(&seen);
        assert_eq!(u(&r, "/bytes/body_sent"), raw, "{flag}: whole requests");
    }
}

/// Bytes of the captured requests, heads and bodies, as on the wire.
fn fake_request_bytes(seen: &[Seen]) -> u64 {
    seen.iter().map(|s| s.len).sum()
}

/// The number after `label` in a text report.
fn report_value(text: &str, label: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {label} in\n{text}"))
}

#[test]
fn total_body_sent_counts_whole_requests_as_ab_does() {
    // ab adds up every byte it writes for a request with a body: head and
    // body. Each tool is checked against what its own server received.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("five");
    std::fs::write(&body, b"hello").unwrap();
    let body = body.to_str().unwrap();
    let theirs = FakeServer::start(Behaviour::Capture);
    let ab = tool("ab")
        .args(["-q", "-n", "3", "-p", body, &theirs.url("/")])
        .output()
        .unwrap();
    assert!(ab.status.success());
    let ab = String::from_utf8_lossy(&ab.stdout).into_owned();
    let ab_seen: Vec<Seen> = theirs
        .take_captured()
        .iter()
        .map(|r| Seen::parse(r))
        .collect();
    assert_eq!(ab_seen.len(), 3);
    let ab_sent = report_value(&ab, "Total body sent:");
    assert_eq!(
        ab_sent,
        fake_request_bytes(&ab_seen),
        "ab counts whole requests"
    );
    assert!(ab_sent > 3 * 5);

    let ours = FakeServer::start(Behaviour::Capture);
    let (text, err, code) = bench_text(&["-q", "-n", "3", "-p", body, &ours.url("/")]);
    assert_eq!(code, 0, "{err}");
    let seen: Vec<Seen> = ours
        .take_captured()
        .iter()
        .map(|r| Seen::parse(r))
        .collect();
    assert_eq!(
        report_value(&text, "Total body sent:"),
        fake_request_bytes(&seen)
    );
}

#[test]
fn kept_alive_connections_closed_by_the_server_are_resent_not_failed() {
    // The server drops each connection after 10 answers without saying so;
    // the next request on it meets a closed connection before any byte of
    // an answer. As in ab, that request goes again on a new connection.
    let fake = FakeServer::start(Behaviour::CloseAfter(10));
    let r = bench_json(&["-n", "1000", "-c", "4", "-k", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    let retries = u(&r, "/keep_alive_retries");
    assert!(
        (1..=100).contains(&retries),
        "about one resend per dropped connection, got {retries}"
    );
    assert!(wait_until(Duration::from_secs(5), || {
        fake.requests.load(std::sync::atomic::Ordering::SeqCst) >= 1000
    }));
    assert_eq!(
        fake.requests.load(std::sync::atomic::Ordering::SeqCst),
        1000,
        "requests sent into a closed connection never reached the server"
    );
}

#[test]
fn a_resent_request_closed_unanswered_again_is_a_failure() {
    // The first request is answered and its connection dropped; every
    // later connection is closed without a byte. Request 2 is resent once
    // (its kept-alive connection was dropped) and then fails; the rest fail
    // on their fresh connections at once. Nothing loops.
    let fake = FakeServer::start(Behaviour::AnswerFirstOnly);
    let r = bench_json(&["-n", "5", "-c", "1", "-k", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 5);
    assert_eq!(u(&r, "/failed"), 4);
    assert_eq!(u(&r, "/failures/receive"), 4);
    assert_eq!(u(&r, "/keep_alive_retries"), 1);
}

#[test]
fn document_length_baseline_is_run_wide_across_threads() {
    // Each connection gets its own length (10 or 11 bytes), and each of the
    // two threads owns one connection with 50 requests. ab holds every
    // response to the run's first: the other connection's 50 responses
    // fail on length, whichever thread answered first.
    let fake = FakeServer::start(Behaviour::LengthPerConnection);
    let args = ["-n", "100", "-c", "2", "--threads", "2", "-k"];
    let url = fake.url("/");
    let r = bench_json(&[&args[..], &[url.as_str()]].concat());
    assert_eq!(u(&r, "/complete"), 100);
    assert_eq!(u(&r, "/failures/length"), 50, "{r}");
    assert!([10, 11].contains(&u(&r, "/document_length")));
    assert_eq!(r["variable_length"], true);
    let r = bench_json(&[&args[..], &["-l", url.as_str()]].concat());
    assert_eq!(u(&r, "/failed"), 0, "-l accepts any length");
}

#[test]
fn l_always_reports_a_variable_document_length_like_ab() {
    // ab prints "Variable" whenever -l is given, even if every length
    // matched, and the length in bytes otherwise.
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let doc_line = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Document Length:"))
            .unwrap_or_else(|| panic!("no Document Length in {t}"))
            .to_string()
    };
    for extra in [&["-l"][..], &[][..]] {
        let args = [&["-q", "-n", "20", "-c", "2"], extra, &[url.as_str()]].concat();
        let ab = tool("ab").args(&args).output().unwrap();
        assert!(ab.status.success());
        let (ours, _, code) = bench_text(&args);
        assert_eq!(code, 0);
        assert_eq!(
            doc_line(&ours),
            doc_line(&String::from_utf8_lossy(&ab.stdout)),
            "{extra:?}"
        );
    }
}

#[test]
fn head_post_and_put_do_not_mix() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("b");
    std::fs::write(&body, b"x").unwrap();
    let body = body.to_str().unwrap();
    let url = "http://127.0.0.1:9/";
    for args in [
        &["-i", "-p", body, url][..],
        &["-p", body, "-i", url][..],
        &["-i", "-u", body, url][..],
        &["-p", body, "-u", body, url][..],
        &["-i", "-m", "GET", url][..],
    ] {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("cannot mix"), "{args:?}: {stderr}");
    }
}

#[test]
fn warmup_with_rate_warms_up_at_that_rate() {
    // One second of warm-up at 100/s is 100 requests, not as many as the
    // server can take; then 50 measured ones.
    let fake = FakeServer::start(Behaviour::Capture);
    let r = bench_json(&[
        "-n",
        "50",
        "-c",
        "2",
        "-k",
        "--rate",
        "100",
        "--warmup",
        "1s",
        &fake.url("/"),
    ]);
    assert_eq!(u(&r, "/complete"), 50);
    assert_eq!(u(&r, "/corrected_latency_ms/count"), 50);
    let seen = || fake.requests.load(std::sync::atomic::Ordering::SeqCst);
    wait_until(Duration::from_secs(2), || seen() >= 150);
    assert_eq!(seen(), 150, "100 warm-up requests at the rate, 50 measured");
}

#[test]
fn open_loop_time_limit_counts_slots_that_never_went_out() {
    // 200/s for 1 s against a server that never answers, on 4 connections:
    // 4 requests go out and stall, the other 196 slots find no connection.
    // They must show up, not vanish: counted as missed, and in the
    // corrected histogram as waiting until the limit.
    let fake = FakeServer::start(Behaviour::Stall);
    let args = ["-t", "1", "-c", "4", "--threads", "2", "--rate", "200"];
    let url = fake.url("/");
    let r = bench_json(&[&args[..], &[url.as_str()]].concat());
    assert_eq!(u(&r, "/complete"), 0);
    assert_eq!(u(&r, "/in_flight_at_end"), 4);
    assert_eq!(u(&r, "/missed"), 196);
    let c = &r["corrected_latency_ms"];
    assert_eq!(c["count"], 200, "every slot due before the limit: {c}");
    let (p50, max) = (c["p50"].as_f64().unwrap(), c["max"].as_f64().unwrap());
    assert!(
        (400.0..=600.0).contains(&p50),
        "waits spread over the second: {c}"
    );
    assert!(
        (950.0..=1010.0).contains(&max),
        "the first slot waited it all: {c}"
    );
    let (text, err, code) = bench_text(&[&["-q"][..], &args[..], &[url.as_str()]].concat());
    assert_eq!(code, 1, "nothing was answered: {err}");
    assert!(
        text.contains("Scheduled requests missed (due before the limit, no free connection): 196"),
        "{text}"
    );
}

#[test]
fn merge_refuses_to_mix_open_and_closed_loop_runs() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    let mut files = Vec::new();
    for (name, extra) in [
        ("open.json", &["--rate", "1000"][..]),
        ("closed.json", &[][..]),
    ] {
        let path = dir.path().join(name);
        let out = path.to_str().unwrap();
        let args = [
            &[
                "-q", "-n", "100", "-c", "2", "--format", "json", "--out", out,
            ][..],
            extra,
            &[url.as_str()],
        ]
        .concat();
        let (_, err, code) = bench_text(&args);
        assert_eq!(code, 0, "{err}");
        files.push(path);
    }
    let out = Command::new(loadlab_bin())
        .arg("merge")
        .args(&files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("open.json") && stderr.contains("closed.json"),
        "{stderr}"
    );
    // Two open-loop runs merge; their rates add up. (The same run under
    // a second name: one file given twice is refused.)
    let copy = dir.path().join("open-2.json");
    std::fs::copy(&files[0], &copy).unwrap();
    let out = Command::new(loadlab_bin())
        .args(["merge", "--format", "json"])
        .args([&files[0], &copy])
        .output()
        .unwrap();
    assert!(out.status.success());
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["run"]["rate"], 2000.0);
}

#[test]
fn a_runs_summaries_are_those_of_its_own_histograms() {
    use loadlab::bench::stats::{decode_histogram, Summary};
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    for extra in [&[][..], &["--rate", "2000"][..]] {
        let args = [&["-n", "300", "-c", "4"][..], extra, &[url.as_str()]].concat();
        let r = bench_json(&args);
        for (summary, hist) in [
            ("latency_ms", "total"),
            ("connect_ms", "connect"),
            ("waiting_ms", "waiting"),
            ("processing_ms", "processing"),
            ("corrected_latency_ms", "corrected"),
        ] {
            let Some(encoded) = r["histograms"][hist].as_str() else {
                assert!(r[summary].is_null(), "{extra:?}: {summary}");
                continue;
            };
            let h = decode_histogram(encoded).unwrap();
            let expect = serde_json::to_value(Summary::of(&h)).unwrap();
            for (key, want) in expect.as_object().unwrap() {
                let got = &r[summary][key];
                let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
                // Counts, extremes and quantiles are exact; mean and sd
                // are full-precision floats, and serde_json's default
                // parser may land one unit in the last place off.
                if key == "mean" || key == "stdev" {
                    assert!(
                        (g - w).abs() <= 1e-12 * w.abs().max(1e-300),
                        "{extra:?}: {summary}.{key}: {g} vs {w}"
                    );
                } else {
                    assert_eq!(got, want, "{extra:?}: {summary}.{key} of histograms.{hist}");
                }
            }
        }
    }
}
