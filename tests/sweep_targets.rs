//! `loadlab sweep`'s targets and exit statuses (issue 18): a `url:` target
//! requests its own path, a `cmd:` target that never comes up fails the
//! sweep with its stderr, a sweep with only failed runs exits 1, and
//! `--fail-on` exits 3 naming the run where a condition held; a worker
//! count a target cannot run with is a usage error (issue 19).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;
use loadlab::results::raw;

/// These tests load real servers; one at a time keeps them from racing
/// each other for the machine's two cores.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `loadlab sweep -q ARGS --out OUT`: (stdout, stderr, exit code).
fn sweep(args: &[&str], out: &Path) -> (String, String, i32) {
    let o = Command::new(loadlab_bin())
        .arg("sweep")
        .arg("-q")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run loadlab sweep");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

const SMALL: [&str; 6] = ["--concurrency", "1", "--requests", "20", "--repeat", "1"];

/// Regression (issue 18): `-T url:http://127.0.0.1:P/20KB.html` requested
/// /20KB.html/500B.html and got 20 answers of 404, drawn as 3,947
/// requests/s.
#[test]
fn regression_a_url_target_requested_its_path_with_the_sweep_path_appended() {
    let _serial = serial();
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let target = format!("url:{}", server.url("/20KB.html"));
    let mut args = vec!["-T", &target];
    args.extend(SMALL);
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r.path, "/20KB.html", "the row records the url's path");
    assert_eq!(
        r.target,
        format!("url:{}", server.url("")),
        "named by its server"
    );
    assert_eq!((r.complete, r.non_2xx, r.failed), (20, 0, 0), "{r:?}");
    assert_eq!(r.ok_responses, 20);
    assert_eq!(r.html_bytes, 20 * 20 * 1024, "20 answers of /20KB.html");

    // A url with no path (or just /) requests /.
    for url in [server.url(""), server.url("/")] {
        let out = dir.path().join(format!("root{}", url.len()));
        let target = format!("url:{url}");
        let mut args = vec!["-T", &target];
        args.extend(SMALL);
        let (_, stderr, code) = sweep(&args, &out);
        assert_eq!(code, 0, "{url}: {stderr}");
        let rows = raw::read(&out).unwrap();
        assert_eq!(rows[0].path, "/", "{url}");
        assert_eq!(rows[0].non_2xx, 0, "{url}");
    }
}

#[test]
fn path_with_a_url_target_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let cases = [
        (
            vec![
                "-T",
                "url:http://127.0.0.1:9/20KB.html",
                "--path",
                "/500B.html",
            ],
            "--path does not go with a url: target",
        ),
        (
            vec![
                "-T",
                "url:http://127.0.0.1:9/a",
                "-T",
                "url:http://127.0.0.1:9/b",
            ],
            "url: targets name different paths (/a and /b)",
        ),
    ];
    for (args, says) in cases {
        let (stdout, stderr, code) = sweep(&args, &out);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(!out.exists(), "nothing ran for {args:?}");
    }
}

/// Regression (issue 19): `model:prefork:workers=0` silently ran one
/// worker. A worker count a target cannot run with is a usage error, in a
/// target spec and in `--workers` alike, as `serve --workers 0` is.
#[test]
fn regression_prefork_workers_0_ran_one_worker() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let cases = [
        (
            vec!["-T", "model:prefork:workers=0"],
            "'model:prefork:workers=0': 0 is too few processes for prefork (at least 1)",
        ),
        (
            vec!["-T", "model:prefork", "--workers", "2,0"],
            "--workers 0 for model:prefork: 0 is too few processes for prefork (at least 1)",
        ),
    ];
    for (args, says) in cases {
        let (stdout, stderr, code) = sweep(&args, &out);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(!out.exists(), "nothing ran for {args:?}");
    }
    let o = Command::new(loadlab_bin())
        .args(["serve", "--model", "prefork", "--workers", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
}

/// Regression (issue 18): `-T "cmd:/bin/false {port}"` exited 0 with an
/// empty table. A command that never accepts connections fails the sweep
/// (exit 1), with what it said on stderr.
#[test]
fn regression_a_cmd_target_that_never_came_up_exited_0() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for (cmd, says) in [
        ("cmd:/bin/false {port}", "exited (exit status: 1)"),
        (
            "cmd:echo cannot listen on {port} >&2; exit 7",
            "cannot listen on",
        ),
    ] {
        let out = dir.path().join(format!("res{}", cmd.len()));
        let mut args = vec!["-T", cmd];
        args.extend(SMALL);
        let (stdout, stderr, code) = sweep(&args, &out);
        assert_eq!(code, 1, "{cmd}: {stderr}");
        assert!(
            stderr.contains(says),
            "{cmd}: the target's stderr is shown: {stderr}"
        );
        assert!(
            stderr.contains("the sweep measured nothing usable"),
            "{stderr}"
        );
        let rows = raw::read(&out).unwrap();
        assert_eq!(rows.len(), 1, "{stdout}");
        assert!(rows[0].error.contains("target did not start"), "{rows:?}");
        assert!(out.join("index.html").is_file(), "the report is written");
    }
}

#[test]
fn a_sweep_whose_every_run_failed_exits_1() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let mut args = vec!["-T", "model:event-loop", "--path", "/a b"];
    args.extend(SMALL);
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("measured nothing usable"), "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert!(rows.iter().all(|r| r.is_failed()), "{rows:?}");
}

/// `--fail-on` on a sweep: a condition holds when it holds for any
/// measured run; the line names the worst run and how many runs it held
/// for; exit 3 after the report. None holding is exit 0.
#[test]
fn fail_on_names_the_run_where_a_condition_held_and_exits_3() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "-T",
        "model:event-loop",
        "--concurrency",
        "1,2",
        "--requests",
        "50",
        "--repeat",
        "1",
    ];
    let out = dir.path().join("held");
    let mut args = base.to_vec();
    args.extend(["--fail-on", "p99>1us,failed>0"]);
    let (stdout, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stdout.contains("Report:"),
        "the report comes first: {stdout}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("fail-on")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("loadlab: fail-on: p99 = ")
            && lines[0].contains(" us > 1 us in model:event-loop /500B.html c=")
            && lines[0].ends_with("round 1 (2 of 2 runs)"),
        "{stderr}"
    );

    let out = dir.path().join("fine");
    let mut args = base.to_vec();
    args.extend(["--fail-on", "failed>0,non2xx>0,success_ratio<1,p99>30s"]);
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("fail-on"), "{stderr}");

    let (_, stderr, code) = sweep(&["-T", "model:event-loop", "--fail-on", "rps<"], &out);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("'rps<': expected a number"), "{stderr}");
}
