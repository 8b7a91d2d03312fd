//! `loadlab bench` as a command: the progress bar on a real terminal (a
//! pseudo-terminal from util-linux's `script`), the open-file limit it
//! raises, flags that change nothing or are another name for one, the
//! defaults, and the lines of its report that ab does not have.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::bench::{bench_json, bench_text, u};
use common::fake::{Behaviour, FakeServer};
use common::*;

/// Runs `loadlab bench ARGS...` with stdin, stdout and stderr on a
/// pseudo-terminal; returns everything the terminal showed.
fn bench_on_a_terminal(args: &[&str]) -> String {
    let line = std::iter::once(loadlab_bin())
        .chain(std::iter::once("bench"))
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let out = tool("script")
        .args(["-qec", &line, "/dev/null"])
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_progress_bar_on_a_terminal_and_none_with_q() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let shown = bench_on_a_terminal(&["-t", "1", "-c", "2", "-k", &url]);
    assert!(shown.contains("Complete requests:"), "{shown}");
    assert!(
        shown.contains("of the time limit"),
        "the bar's text on a terminal: {shown}"
    );
    assert!(shown.contains('\u{1b}'), "drawn and cleared in place");

    let quiet = bench_on_a_terminal(&["-q", "-t", "1", "-c", "2", "-k", &url]);
    assert!(quiet.contains("Complete requests:"), "{quiet}");
    assert!(!quiet.contains("of the time limit"), "-q: {quiet}");
    assert!(!quiet.contains('\u{1b}'), "-q draws nothing: {quiet}");
}

#[test]
fn the_soft_open_file_limit_is_raised_to_the_hard_one() {
    // Started with a soft limit of 256, bench needs its hard limit for
    // 1,000 connections (and says so at once if that is not enough).
    let hard = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .unwrap()
        .1;
    assert!(
        hard >= 2000,
        "this test needs a hard open-file limit of 2,000 or more, got {hard}"
    );
    let server = TestServer::start("reactors", &["--workers", "2"]);
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -Sn 256 && exec \"$0\" \"$@\"",
            loadlab_bin(),
            "bench",
            "-q",
            "--format",
            "json",
            "-n",
            "1000",
            "-c",
            "1000",
            &server.url("/500B.html"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(r["run"]["concurrency"], 1000);
}

#[test]
fn duration_is_t_by_another_name() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    for flag in ["-t", "--duration"] {
        let r = bench_json(&[flag, "1", "-c", "2", "-k", &url]);
        assert_eq!(r["run"]["duration_s"], 1.0, "{flag}");
        assert_eq!(r["run"]["requests"], serde_json::Value::Null, "{flag}");
        assert_eq!(r["time_taken_s"], 1.0, "{flag}: the run lasts its limit");
        assert!(u(&r, "/complete") > 0, "{flag}");
    }
}

#[test]
fn r_is_accepted_and_errors_never_end_a_run() {
    // ab exits at the first receive error unless given -r; loadlab never
    // does, so -r changes nothing: every request is made and counted.
    let fake = FakeServer::start(Behaviour::CloseEarly);
    for r_flag in [true, false] {
        let mut args = vec!["-n", "40", "-c", "4"];
        if r_flag {
            args.push("-r");
        }
        let url = fake.url("/");
        args.push(&url);
        let r = bench_json(&args);
        assert_eq!(u(&r, "/complete"), 40, "-r {r_flag}");
        assert_eq!(u(&r, "/failures/receive"), 40, "-r {r_flag}");
    }
}

#[test]
fn threads_default_to_the_cores_the_process_may_use() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let cores = std::thread::available_parallelism().unwrap().get();
    let r = bench_json(&["-n", "100", "-c", "8", &url]);
    assert_eq!(r["run"]["threads"], cores);
    let r = bench_json(&["-n", "100", "-c", "8", "--threads", "1", &url]);
    assert_eq!(r["run"]["threads"], 1);
    assert_eq!(u(&r, "/complete"), 100);
}

#[test]
fn warmup_without_rate_loads_the_server_unmeasured_first() {
    // Closed loop: as fast as the connections go for the warm-up, none of
    // it counted; then exactly -n measured requests.
    let fake = FakeServer::start(Behaviour::Capture);
    let r = bench_json(&[
        "-n",
        "50",
        "-c",
        "2",
        "-k",
        "--warmup",
        "300ms",
        &fake.url("/"),
    ]);
    assert_eq!(u(&r, "/complete"), 50);
    assert_eq!(u(&r, "/failed"), 0);
    let seen = fake.requests.load(Ordering::SeqCst);
    assert!(
        seen > 50,
        "the server saw the warm-up too: {seen} requests in all"
    );
    assert!(
        r["time_taken_s"].as_f64().unwrap() < 0.3,
        "the warm-up is not in the measured time: {}",
        r["time_taken_s"]
    );
}

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

#[test]
fn output_files_are_checked_before_the_load_runs() {
    // Nothing listens on port 9: a run would take no time, but must not
    // start at all, so nothing is written either.
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("out.json");
    let ok = ok.to_str().unwrap();
    let missing = dir.path().join("nope/x.csv");
    let missing = missing.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--out", ok, "-e", missing], "no directory"),
        (&["--out", ok, "-e", ok], "name the same file"),
        (&["--out", dir.path().to_str().unwrap()], "is a directory"),
    ];
    for (args, says) in cases {
        let all = [&["-n", "5"][..], args, &["http://127.0.0.1:9/"][..]].concat();
        let (stdout, stderr, code) = bench_text(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!Path::new(ok).exists(), "{args:?}: nothing written");
    }
}

#[test]
fn header_values_cannot_smuggle_another_header() {
    for args in [
        &["-T", "text/plain\r\nContent-Length: 0"][..],
        &["-H", "Bad Name: v"][..],
        &["-H", "X-A: a\u{1}b"][..],
        &["-C", "a=1\nX: y"][..],
    ] {
        let all = [&["-n", "1"][..], args, &["http://127.0.0.1:9/"][..]].concat();
        let (_, stderr, code) = bench_text(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

#[test]
fn a_missing_argument_is_named_in_the_one_line() {
    for (sub, named) in [
        ("bench", "<URL>"),
        ("merge", "<FILES>"),
        ("report", "<DIR>"),
    ] {
        let out = Command::new(loadlab_bin()).arg(sub).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sub}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{sub}: {err}");
        assert!(err.contains(named), "{sub}: {err}");
    }
}

#[test]
fn regression_merge_panicked_on_a_time_no_duration_holds_and_on_a_closed_pipe() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let r = bench_json(&["-n", "20", "-c", "2", &server.url("/")]);
    std::fs::write(&a, r.to_string()).unwrap();

    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(loadlab_bin())
        .args(["merge", a.to_str().unwrap()])
        .stdout(writer)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a closed pipe is not a failure: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let mut huge = r.clone();
    huge["time_taken_s"] = serde_json::json!(2e19);
    let b = dir.path().join("b.json");
    std::fs::write(&b, huge.to_string()).unwrap();
    let out = Command::new(loadlab_bin())
        .args(["merge", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("time_taken_s"), "{err}");
}

#[test]
fn merge_refuses_keep_alive_mixed_with_not_and_a_file_given_twice() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, args: &[&str]| {
        let path = dir.path().join(name);
        let r = bench_json(&[args, &[server.url("/").as_str()][..]].concat());
        std::fs::write(&path, r.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let plain = write("plain.json", &["-n", "20"]);
    let kept = write("kept.json", &["-n", "20", "-k"]);
    let same = format!("{}/./plain.json", dir.path().display());
    for (files, says) in [
        ([&plain, &kept], "keep-alive"),
        ([&plain, &same], "given twice"),
    ] {
        let out = Command::new(loadlab_bin())
            .arg("merge")
            .args(files)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{files:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// A loopback port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Regression (issue 18): `bench http://127.0.0.1:1/` printed "Requests
/// per second: 2959" and exited 0; a run where every answer was a 404
/// exited 0 too. The report still says what happened; the exit status is
/// 1 with one line naming why, and a run with any 2xx answer stays 0.
#[test]
fn regression_a_bench_that_measured_nothing_usable_exited_0() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (stdout, stderr, code) = bench_text(&["-n", "20", "-c", "2", &url]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("Failed requests:        20"), "{stdout}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("measured nothing usable: every connection failed (connect"),
        "{stderr}"
    );

    let server = TestServer::start("event-loop", &[]);
    let (_, stderr, code) = bench_text(&["-n", "30", "-c", "3", &server.url("/status/404")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("none of 30 requests got a 2xx or 3xx answer (answers: 30 4xx)"),
        "{stderr}"
    );
    for path in ["/status/302", "/500B.html"] {
        let (_, stderr, code) = bench_text(&["-n", "30", "-c", "3", &server.url(path)]);
        assert_eq!(code, 0, "{path}: {stderr}");
        assert!(stderr.is_empty(), "{path}: {stderr}");
    }
}

/// `merge` holds merged runs to the same rule: all 404s is exit 1 after
/// the report, a merge with 2xx answers is 0.
#[test]
fn merge_of_runs_that_measured_nothing_usable_exits_1() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, path: &str| {
        let file = dir.path().join(name);
        let (_, stderr, _) = bench_text(&[
            "-n",
            "10",
            "-c",
            "2",
            "--format",
            "json",
            "--out",
            file.to_str().unwrap(),
            &server.url(path),
        ]);
        assert!(file.is_file(), "{stderr}");
        file.to_str().unwrap().to_string()
    };
    let missing = [run("a.json", "/status/404"), run("b.json", "/status/404")];
    let found = run("c.json", "/500B.html");
    let merge = |files: &[&str]| {
        let out = Command::new(loadlab_bin())
            .arg("merge")
            .args(files)
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code(),
        )
    };
    let (stdout, stderr, code) = merge(&[&missing[0], &missing[1]]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.contains("Non-2xx responses:      20"), "{stdout}");
    assert!(
        stderr.contains("the merged runs measured nothing usable"),
        "{stderr}"
    );
    let (_, stderr, code) = merge(&[&missing[0], &found]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// `--fail-on` (issue 18): after the report, one line per condition that
/// held and exit 3; exit 0 when none held; a bad expression is a usage
/// error naming the bad part, before any load; nothing usable (exit 1)
/// comes before any condition.
#[test]
fn fail_on_exits_3_with_a_line_per_condition_that_held_and_0_otherwise() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let run = |cond: &str| bench_text(&["-q", "-n", "200", "-c", "4", "--fail-on", cond, &url]);

    // Every request takes more than a microsecond, and no loopback
    // server answers a billion requests a second.
    let (stdout, stderr, code) = run("failed>0,p99>1us,rps<1000000000,errors>0");
    assert_eq!(code, 3, "{stderr}");
    assert!(stdout.contains("Complete requests:      200"), "{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].starts_with("loadlab: fail-on: p99 = "), "{stderr}");
    assert!(lines[0].ends_with(" us > 1 us"), "{stderr}");
    assert!(
        lines[1].starts_with("loadlab: fail-on: rps = ") && lines[1].ends_with(" < 1000000000"),
        "{stderr}"
    );

    let (_, stderr, code) = run("failed>0,p99>10s,success_ratio<1");
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");

    // Repeated flags add up: any one condition is enough.
    let (_, stderr, code) = bench_text(&[
        "-q",
        "-n",
        "50",
        "--fail-on",
        "failed>0",
        "--fail-on",
        "max>1us",
        &url,
    ]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("fail-on: max = "), "{stderr}");

    for (bad, named) in [
        ("p99>10", "'p99>10': a latency needs a unit"),
        ("p98>1ms", "unknown metric 'p98'"),
        ("failed=0", "expected one of < <= > >= after 'failed'"),
    ] {
        let (stdout, stderr, code) = run(bad);
        assert_eq!(code, 2, "{bad}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{bad}: {stderr}");
        assert!(stderr.contains(named), "{bad}: {stderr}");
        assert!(stdout.is_empty(), "no load ran for {bad}");
    }

    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let (_, stderr, code) = bench_text(&["-q", "-n", "5", "--fail-on", "failed>0", &refused]);
    assert_eq!(code, 1, "nothing usable comes first: {stderr}");
    assert!(!stderr.contains("fail-on"), "{stderr}");
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

/// Ctrl-C during a bench: the report of what was measured, then exit 130
/// with one line.
#[test]
fn ctrl_c_prints_the_report_so_far_and_exits_130() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let server = TestServer::start("event-loop", &[]);
    let mut job = Command::new(loadlab_bin())
        .args([
            "bench",
            "-q",
            "-t",
            "60",
            "-c",
            "2",
            "-k",
            &server.url("/500B.html"),
        ])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let pgid = nix::unistd::Pid::from_raw(job.id() as i32);
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut ended = None;
    assert!(
        wait_until(Duration::from_secs(10), || {
            ended = job.try_wait().unwrap();
            ended.is_some()
        }),
        "bench did not stop after Ctrl-C"
    );
    let (mut out, mut err) = (String::new(), String::new());
    job.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    job.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(ended.unwrap().code(), Some(130), "{err}");
    assert!(out.contains("Complete requests:"), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("interrupted"), "{err}");
}
