//! `bench --server-pid PID` (issue 44): a server bench did not start,
//! watched over the run, its syscalls counted in a pass before it. They
//! agree with what each model is known to make (tests/syscall_budget.rs's
//! strace counts), the
//! text report has a Server block (one line without the flag), `--profile`
//! writes a static flame graph, and a PID that is not a process, a flag
//! it cannot go with, or a host that forbids the counters each get one
//! line.

use serde_json::Value;

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::*;

/// A count of the counting pass per request of the pass.
fn per_req(r: &Value, path: &str) -> f64 {
    let pass = u(r, "/server/counted/requests");
    assert!(pass > 0 && pass < u(r, "/complete"), "{}", r["server"]);
    u(r, &format!("/server/counted{path}")) as f64 / pass as f64
}

#[test]
fn keep_alive_requests_to_the_event_loop_make_one_read_and_one_write_each() {
    let server = TestServer::start("event-loop", &[]);
    let pid = server.pid().to_string();
    let url = server.url("/500B.html");
    let r = bench_json(&["-n", "3000", "-c", "4", "-k", "--server-pid", &pid, &url]);
    let errs = crate::common::schema::validate("bench-v3.schema.json", &r);
    assert!(errs.is_empty(), "{errs:#?}");
    let s = &r["server"];
    assert_eq!(u(&r, "/server/pid"), server.pid() as u64, "{s}");
    for kind in ["read", "write"] {
        let v = per_req(&r, &format!("/syscalls/{kind}"));
        assert!((0.9..=1.3).contains(&v), "{kind} {v}: {s}");
    }
    assert!(per_req(&r, "/syscalls/clone_exit") < 0.01, "{s}");
    assert!(u(&r, "/server/counted/syscalls_total") >= u(&r, "/server/counted/syscalls/read"));
    assert!(
        u(&r, "/server/ctx_involuntary") <= u(&r, "/server/ctx_switches"),
        "{s}"
    );
    let cpu = s["cpu_us_per_request"].as_f64().unwrap();
    assert!(cpu > 0.0 && s["cpu_ms"].as_f64().unwrap() > 0.0, "{s}");
    assert!(s.get("counted_unavailable").is_none(), "{s}");
}

#[test]
fn a_new_connection_to_thread_per_conn_makes_a_clone_and_the_text_says_so() {
    let server = TestServer::start("thread-per-conn", &[]);
    let pid = server.pid().to_string();
    let url = server.url("/500B.html");
    let (out, err, code) = bench_text(&["-n", "400", "-c", "4", "--server-pid", &pid, &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("Server (pid {pid}")), "{out}");
    for label in [
        "CPU per request:",
        "Run-queue wait:",
        "Context switches:",
        "forced by the scheduler",
        "Context switches per request (perf):",
        "(Counted by perf over ",
    ] {
        assert!(out.contains(label), "{label}: {out}");
    }
    let line = out
        .lines()
        .find(|l| l.contains("Syscalls per request:"))
        .unwrap_or_else(|| panic!("{out}"));
    // "clone+exit" as a key: one clone and one exit per connection.
    let clone = line
        .split(", ")
        .find_map(|p| p.trim().strip_prefix("clone_exit "))
        .unwrap_or_else(|| panic!("{line}"));
    let clone: f64 = clone.parse().unwrap();
    assert!((1.8..=2.3).contains(&clone), "{line}");
}

#[test]
fn io_uring_makes_ring_entries_not_read_write_or_epoll_syscalls() {
    let server = TestServer::start("io-uring", &[]);
    let pid = server.pid().to_string();
    let url = server.url("/500B.html");
    let r = bench_json(&["-n", "2000", "-c", "4", "-k", "--server-pid", &pid, &url]);
    let s = &r["server"];
    for kind in ["read", "write", "epoll_wait"] {
        let v = per_req(&r, &format!("/syscalls/{kind}"));
        assert!(v < 0.05, "{kind} {v}: {s}");
    }
    let send = per_req(&r, "/ring_ops/send");
    assert!((0.9..=1.2).contains(&send), "{send}: {s}");
}

#[test]
fn without_server_pid_one_line_says_there_are_no_server_figures() {
    let server = TestServer::start("event-loop", &[]);
    let (out, err, code) = bench_text(&["-n", "20", &server.url("/")]);
    assert_eq!(code, 0, "{err}");
    let said: Vec<&str> = out.lines().filter(|l| l.contains("Server:")).collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(said[0].contains("no figures") && said[0].contains("--server-pid"));
    let r = bench_json(&["-n", "20", &server.url("/")]);
    assert!(r.get("server").is_none(), "absent, not zeros: {r}");
}

#[test]
fn profile_writes_a_static_flame_graph_of_the_server() {
    let server = TestServer::start("event-loop", &[]);
    let pid = server.pid().to_string();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("flame-{pid}.svg");
    let profile = format!("--profile={}", svg.display());
    let r = bench_json(&[
        "-t",
        "1",
        "-n",
        "1000000",
        "-c",
        "4",
        "-k",
        "--server-pid",
        &pid,
        &profile,
        &server.url("/500B.html"),
    ]);
    let p = &r["server"]["profile"];
    let file = dir.path().join(format!("flame-{pid}.svg"));
    assert_eq!(p["flame_graph"], file.display().to_string(), "{p}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("<?xml") || text.starts_with("<svg"),
        "{text:.200}"
    );
    assert!(!text.contains("<script") && !text.contains(" onload="));
    assert!(u(&r, "/server/profile/samples") > 50, "{p}");
    // Its own server: whole stacks reach loadlab's functions.
    let reached = p["user_in_loadlab_pct"].as_f64().unwrap();
    assert!(reached >= 90.0, "{p}");
    assert!(p["top_kernel"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn a_pid_that_is_no_process_or_a_flag_it_cannot_go_with_is_refused_in_one_line() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/");
    let pid = server.pid().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--server-pid", "999999999"], "no such process"),
        (&["--server-pid", "0"], "no such process"),
        (
            &["--server-pid", &pid, "--warmup", "5"],
            "not with --warmup",
        ),
        (&["--profile"], "--server-pid"),
    ];
    for (flags, says) in cases {
        let mut args = vec!["-n", "10"];
        args.extend_from_slice(flags);
        args.push(&url);
        let (out, err, code) = bench_text(&args);
        assert_eq!(code, 2, "{flags:?}: {out}{err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(!out.contains("Requests per second"), "no load: {out}");
    }
}

#[test]
fn a_host_that_forbids_the_counters_still_gets_the_server_s_cpu() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.path().join("loadlab");
    std::fs::copy(loadlab_bin(), &bin).unwrap();
    // Its own server, started as the same uid of no account's (not
    // nobody: tests/lifecycle/workers.rs caps nobody's processes).
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=65533", "--regid=65533", "--clear-groups"])
        .arg(&bin)
        .args(["serve", "--model", "event-loop", "--addr", "127.0.0.1:0"])
        .args(["--files", dir.path().to_str().unwrap()]);
    let theirs = TestServer::start_command(cmd);
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65533", "--regid=65533", "--clear-groups"])
        .arg(&bin)
        .args(["bench", "-n", "300", "-c", "2", "--format", "json", "-q"])
        .args(["--server-pid", &theirs.pid().to_string()])
        .arg(theirs.url("/"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no syscall counts"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("perf_event_paranoid"), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &r["server"];
    assert!(s.get("counted").is_none(), "no silent zeros: {s}");
    let why = s["counted_unavailable"].as_str().unwrap();
    assert!(why.contains("perf_event_paranoid"), "{s}");
    assert!(s["cpu_ms"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(u(&r, "/complete"), 300, "no pass ran: {s}");
}
