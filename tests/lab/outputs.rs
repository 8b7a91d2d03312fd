//! What a sweep writes and when it may exit 0: every derived file, resuming
//! without measuring again, each dimension its own configuration, and the
//! regressions that appended to a foreign raw.csv or exited 0 with nothing usable.

use crate::common::*;
use loadlab::results::raw;

use super::support::{charts_of, check_derived, ok_rows, serial, summary_json, sweep};

#[test]
fn sweep_writes_every_file_and_resumes_without_measuring_again() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // model subset: two targets, one with workers, are all a sweep needs.
    let mut args = vec![
        "-T",
        "model:event-loop",
        "-T",
        "model:thread-pool:workers=2",
        "--concurrency",
        "1,4",
        "--requests",
        "200",
        "--keepalive",
        "on,off",
        "--repeat",
        "2",
        "--warmup-runs",
        "1",
    ];
    let (stdout, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Requests per second"), "{stdout}");
    assert!(
        stdout.contains("index.html"),
        "the report location is printed"
    );
    let rows = raw::read(&out).unwrap();
    // 2 targets x 2 keep-alive x 2 concurrency x (1 warm-up + 2 repeats)
    assert_eq!(rows.len(), 24);
    assert_eq!(rows.iter().filter(|r| r.warmup).count(), 8);
    ok_rows(&rows);
    assert!(rows
        .iter()
        .all(|r| r.requests == 200 && (r.complete == 200)));
    assert!(
        rows.iter().all(|r| r.server_rss_peak_kb > 0),
        "server memory sampled in every run"
    );
    // CPU comes from nanosecond CPU clocks: even a run of a few ms shows.
    assert!(
        rows.iter().all(|r| r.server_cpu_pct > 0.0),
        "server CPU measured in every run: {:?}",
        rows.iter().map(|r| r.server_cpu_pct).collect::<Vec<_>>()
    );
    assert!(rows.iter().any(|r| r.client_cpu_pct > 0.0));
    assert!(out.join("machine.json").is_file());
    check_derived(&out, 8, &charts_of("sweep"));

    // The same sweep again: everything is in raw.csv, nothing is measured
    // and raw.csv is not touched.
    let before = std::fs::read(out.join("raw.csv")).unwrap();
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("0 runs to make (16 already in raw.csv"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(out.join("raw.csv")).unwrap(), before);

    // One more repeat: only repeat 3 of each configuration is measured,
    // after its warm-up (the target is a fresh process).
    let at = args.len() - 3;
    args[at] = "3";
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let after = std::fs::read(out.join("raw.csv")).unwrap();
    assert!(
        after.starts_with(&before),
        "existing rows are never rewritten"
    );
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 24 + 16);
    let new = &rows[24..];
    assert_eq!(new.iter().filter(|r| r.warmup).count(), 8);
    assert!(new.iter().filter(|r| !r.warmup).all(|r| r.repeat == 3));
    let ids: std::collections::HashSet<u64> = rows.iter().map(|r| r.run_id).collect();
    assert_eq!(ids.len(), 40, "run ids continue across a resumed sweep");
    let json = summary_json(&out);
    for c in json["configurations"].as_array().unwrap() {
        assert_eq!(c["runs"], 3, "{c}");
    }
    check_derived(&out, 8, &charts_of("sweep"));
}

/// Regression: `--requests 100,300` was averaged as if the two loads were
/// repeats of one configuration.
#[test]
fn each_request_count_is_a_configuration_with_its_own_repeats() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (stdout, stderr, code) = sweep(
        &[
            "-T",
            "model:event-loop",
            "--concurrency",
            "2",
            "--requests",
            "100,300",
            "--repeat",
            "2",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 4);
    ok_rows(&rows);
    for n in [100, 300] {
        let reps: Vec<u64> = rows
            .iter()
            .filter(|r| r.requests == n)
            .map(|r| r.repeat)
            .collect();
        assert_eq!(reps, vec![1, 2], "repeats numbered per request count");
    }
    let json = summary_json(&out);
    let confs = json["configurations"].as_array().unwrap();
    assert_eq!(confs.len(), 2);
    for (c, n) in confs.iter().zip([100, 300]) {
        assert_eq!(c["requests"], n);
        assert_eq!(c["runs"], 2);
    }
    // The terminal table has a line per request count.
    assert!(
        stdout.contains("| n=100 |") && stdout.contains("| n=300 |"),
        "{stdout}"
    );
    check_derived(&out, 2, &charts_of("sweep"));
}

#[test]
fn duration_paths_and_workers_are_dimensions() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (stdout, stderr, code) = sweep(
        // model subset: one model with a workers dimension, one without.
        &[
            "-T",
            "model:thread-pool",
            "-T",
            "model:event-loop",
            "--workers",
            "1,2",
            "--path",
            "/500B.html,/20KB.html",
            "--duration",
            "300ms",
            "--concurrency",
            "2",
            "--keepalive",
            "on",
            // Runs as short as asked, once each: this test is about
            // dimensions, not about --min-time or repeats.
            "--min-time",
            "0",
            "--repeat",
            "1",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    // event-loop has one worker whatever --workers says: it runs once.
    assert!(
        stderr.contains("model:event-loop has a fixed worker count"),
        "{stderr}"
    );
    let rows = raw::read(&out).unwrap();
    ok_rows(&rows);
    // model subset: thread-pool: 2 worker counts x 2 paths; event-loop: 2 paths.
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert_eq!((r.requests, r.duration_s), (0, 0.3), "{r:?}");
        assert!(
            (0.3..1.5).contains(&r.time_taken_s),
            "a 300 ms run took {} s",
            r.time_taken_s
        );
        let size = if r.path == "/20KB.html" { 20480 } else { 500 };
        assert_eq!(r.html_bytes, r.complete * size, "{r:?}");
    }
    let mut pool_workers: Vec<u64> = rows
        .iter()
        .filter(|r| r.target == "model:thread-pool")
        .map(|r| r.workers)
        .collect();
    pool_workers.sort_unstable();
    assert_eq!(pool_workers, vec![1, 1, 2, 2]);
    // One terminal line per target, path and worker count.
    assert!(stdout.contains("| workers |"), "{stdout}");
    let lines = stdout.lines().filter(|l| l.starts_with("| model:")).count();
    assert_eq!(lines, 6, "{stdout}");
    let mut charts = charts_of("sweep-500B.html");
    charts.extend(charts_of("sweep-20KB.html"));
    check_derived(&out, 6, &charts);
}

#[test]
fn regression_resuming_into_a_foreign_or_cut_header_appended_rows_anyway() {
    // A raw.csv whose header is not loadlab's (cut short, or another
    // tool's) is refused before anything runs, and left as it was: rows
    // appended to it were glued onto the header or misread.
    let tmp = tempfile::tempdir().unwrap();
    for header in ["run_id,started_at,exp", "run_id,started_at,experiment\n"] {
        let out = tmp.path().join(format!("r{}", header.len()));
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("raw.csv"), header).unwrap();
        let args = [
            "-T",
            "model:event-loop",
            "--requests",
            "10",
            "--concurrency",
            "1",
        ];
        let (_, err, code) = sweep(&args, &out);
        assert_ne!(code, 0, "{err}");
        assert!(err.contains("cannot resume into"), "{err}");
        assert!(err.contains("header"), "{err}");
        assert_eq!(
            std::fs::read_to_string(out.join("raw.csv")).unwrap(),
            header
        );
    }
}

/// Regression (issue 18): `-T "cmd:/bin/false {port}"` exited 0 with an
/// empty table, and a sweep whose every answer was a 404 exited 0 with
/// requests/s in its table. Both write their report and exit 1 with one
/// line; a sweep with one usable run exits 0.
#[test]
fn regression_a_sweep_that_measured_nothing_usable_exited_0() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let args = ["--concurrency", "1", "--requests", "10"];
    let (_, stderr, code) = sweep(
        &[&["-T", "cmd:/bin/false {port}"][..], &args[..]].concat(),
        &dir.path().join("false"),
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("the sweep measured nothing usable: of its 1 run(s), 1 could not be made"),
        "{stderr}"
    );
    assert!(
        dir.path().join("false/index.html").is_file(),
        "the report is written"
    );

    let server = TestServer::start("event-loop", &[]);
    // A url: target names its path (--path does not go with it).
    let url = format!("url:{}", server.url("/status/404"));
    let missing = [&["-T", url.as_str()][..], &args[..]].concat();
    let (_, stderr, code) = sweep(&missing, &dir.path().join("404"));
    assert_eq!(code, 1, "{stderr}");
    // One line for the reason; a busy host's warning and what the check
    // before the runs found are other matters.
    let reasons = stderr
        .lines()
        .filter(|l| !l.contains("the host was busy") && !l.starts_with("loadlab: check "))
        .count();
    assert_eq!(reasons, 1, "{stderr}");
    assert!(stderr.contains("none got a 2xx answer"), "{stderr}");

    let url = format!("url:{}", server.url("/500B.html"));
    let found = [&["-T", url.as_str()][..], &args[..]].concat();
    let (_, stderr, code) = sweep(&found, &dir.path().join("ok"));
    assert_eq!(code, 0, "{stderr}");
}
