//! Exit codes of bench and merge: 1 when nothing usable was measured, 3
//! when a --fail-on condition held, refusals, and a closed pipe.

use std::process::Command;

use crate::common::bench::{bench_json, bench_text};
use crate::common::*;

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
        // The runs were made one after the other, so they did not overlap.
        let out = Command::new(loadlab_bin())
            .args(["merge", "--allow-apart"])
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
        // The runs were made one after the other, so they did not overlap.
        let out = Command::new(loadlab_bin())
            .args(["merge", "--allow-apart"])
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
