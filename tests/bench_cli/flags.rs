//! `loadlab bench` flags as a command: the progress bar on a terminal, the
//! open-file limit, --duration, -r, thread defaults, warm-up, output files
//! checked first, headers that cannot smuggle, a missing argument, Ctrl-C.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::fake::{Behaviour, FakeServer};
use crate::common::*;

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
fn a_progress_bar_with_live_figures_on_a_terminal_and_none_with_q() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    // Over a second, so the live figures (a second's worth) are drawn.
    let shown = bench_on_a_terminal(&["-t", "2", "-c", "2", "-k", &url]);
    assert!(shown.contains("Complete requests:"), "{shown}");
    assert!(
        shown.contains("of the time limit"),
        "the bar's text on a terminal: {shown}"
    );
    assert!(shown.contains('\u{1b}'), "drawn and cleared in place");
    // oha's and hey's live figures: requests/s, latency and errors.
    assert!(
        shown.contains(" req/s, mean latency ") && shown.contains(" failed in all"),
        "{shown}"
    );
    // ab's heartbeats show above the bar on a terminal too.
    assert!(shown.contains("Finished "), "{shown}");

    let quiet = bench_on_a_terminal(&["-q", "-t", "1", "-c", "2", "-k", &url]);
    assert!(quiet.contains("Complete requests:"), "{quiet}");
    assert!(!quiet.contains("of the time limit"), "-q: {quiet}");
    assert!(!quiet.contains('\u{1b}'), "-q draws nothing: {quiet}");
    assert!(!quiet.contains("Finished"), "-q: no heartbeats: {quiet}");
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
