//! Server accounting (issue 44 item 1): unless --no-accounting, every run
//! of a server loadlab started carries its syscalls by kind, context
//! switches and ring submissions (counted by perf in its cell's unmeasured
//! pass), run-queue wait and user/system split, and the figures agree
//! with what each model is known to do (the strace
//! budgets of tests/syscall_budget.rs); a host that forbids the counters
//! says so in one line and the runs go on without them. Outside the lab's
//! one-at-a-time group: counts per request do not depend on what runs
//! beside them.

use loadlab::results::raw::{self, RawRow};

use crate::lab::support::{summary_json, sweep};

/// Calls of one kind per request of the run's counting pass.
fn per_req(r: &RawRow, n: Option<u64>) -> f64 {
    let counted = r.server_counted_requests.expect("the pass's requests");
    n.unwrap_or_else(|| panic!("not counted: {r:?}")) as f64 / counted as f64
}

#[test]
fn each_model_s_syscalls_per_request_are_what_it_is_known_to_make() {
    assert_eq!(
        loadlab::proc::syscalls::unavailable(),
        None,
        "this host must count syscalls (scripts/test.sh runs as root)"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (_, stderr, code) = sweep(
        // model subset: one per way of serving (event loop, thread per
        // connection, ring entries).
        &[
            "-T",
            "model:event-loop",
            "-T",
            "model:thread-per-conn",
            "-T",
            "model:io-uring",
            "--keepalive",
            "on,off",
            "--concurrency",
            "4",
            "--duration",
            "0.5s",
            "--repeat",
            "1",
            "--no-check",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    let at = |t: &str, ka: bool| {
        rows.iter()
            .find(|r| r.target == format!("model:{t}") && r.keepalive == ka)
            .unwrap_or_else(|| panic!("{t} {ka}: {rows:#?}"))
    };
    for r in &rows {
        assert!(r.complete > 100, "{r:?}");
        // A quarter of a cell: fewer requests than the measured run's.
        let pass = r.server_counted_requests.unwrap();
        assert!(pass > 50 && pass < r.complete, "{r:?}");
        assert_eq!(r.accounting, None, "every event counted: {r:?}");
        assert!(r.server_switches_counted.is_some() && r.server_runq_wait_ms.is_some());
        assert!(
            r.server_ctx_involuntary.unwrap() <= r.server_ctx_switches,
            "{r:?}"
        );
        let (u, s) = (
            r.server_cpu_user_ms.unwrap(),
            r.server_cpu_system_ms.unwrap(),
        );
        assert!(u + s > 0.0, "{r:?}");
    }
    // A keep-alive request to the event loop: one read, one write.
    let el = at("event-loop", true);
    for n in [el.server_sys_reads, el.server_sys_writes] {
        let v = per_req(el, n);
        assert!((0.9..=1.3).contains(&v), "{v}: {el:?}");
    }
    assert!(per_req(el, el.server_sys_clone_exit) < 0.01, "{el:?}");
    // A new connection to thread-per-conn: a clone (and the thread's
    // exit) for each.
    let tpc = at("thread-per-conn", false);
    let clone_exit = per_req(tpc, tpc.server_sys_clone_exit);
    assert!((1.8..=2.4).contains(&clone_exit), "{clone_exit}: {tpc:?}");
    assert!(per_req(tpc, tpc.server_sys_accept) >= 0.9, "{tpc:?}");
    // io-uring's reads and sends are ring entries: no epoll_wait, read or
    // write syscall per request.
    let ring = at("io-uring", true);
    for n in [
        ring.server_sys_reads,
        ring.server_sys_writes,
        ring.server_sys_epoll_wait,
    ] {
        assert!(per_req(ring, n) < 0.05, "{ring:?}");
    }
    assert!(per_req(ring, ring.server_sys_io_uring_enter) > 0.0);
    // Its ring entries by opcode: with keep-alive one send per request
    // and a multishot receive that outlives many requests; without, one
    // receive per connection.
    let op = |r: &RawRow, name: &str| {
        let ops = loadlab::results::accounting::ring_ops(r.server_ring_ops.as_deref().unwrap());
        let n = ops.iter().find(|(o, _)| o == name).map_or(0, |(_, n)| *n);
        per_req(r, Some(n))
    };
    assert!((0.9..=1.3).contains(&op(ring, "send")), "{ring:?}");
    assert!(op(ring, "recv") < 0.05, "{ring:?}");
    let ring_close = at("io-uring", false);
    assert!(
        (0.9..=1.3).contains(&op(ring_close, "recv")),
        "{ring_close:?}"
    );
    assert_eq!(el.server_ring_ops, None, "the event loop has no ring");

    let json = summary_json(&out);
    let errs = crate::common::schema::validate("summary-v4.schema.json", &json);
    assert!(errs.is_empty(), "{errs:#?}");
    let conf = json["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == "model:event-loop" && c["keepalive"] == true)
        .unwrap();
    let reads = conf["sys_reads_per_req"].as_f64().unwrap();
    assert!((0.9..=1.3).contains(&reads), "{conf:#}");
    assert!(conf["cpu_user_pct"].as_f64().unwrap() <= 100.0);
    // /proc's split: forced switches are some of all switches, never more.
    for c in json["configurations"].as_array().unwrap() {
        let forced = c["involuntary_per_req"].as_f64().unwrap();
        let all = c["server_ctx_switches_per_req"].as_f64().unwrap();
        assert!(forced <= all + 1e-9, "{c:#}");
    }
    // Why, in the findings: thread-per-conn without keep-alive, the
    // costliest, first, with its clone and exit.
    let why = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "work")
        .map(|f| f["text"].as_str().unwrap())
        .find(|t| t.contains("keep-alive off"))
        .unwrap_or_else(|| panic!("a work finding: {json:#}"));
    assert!(
        why.contains("why, per request, costliest first: model:thread-per-conn: ")
            && why.contains("clone+exit 2."),
        "{why}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("server work per request")
            && md.contains("| clone+exit |")
            && md.contains("send 1.0"),
        "{md}"
    );
    // The Why section: each target with its model's account, and thread-
    // per-conn without keep-alive against the cheapest other target (at
    // c = 4 without keep-alive the two cheapest cost within a run's noise
    // of each other, so which one is not asserted).
    let why = &md[md.find("## Why").expect("a Why section")..];
    let tpc = &why[why.find("### model:thread-per-conn").unwrap()..];
    assert!(tpc.contains("The main thread accepts connections"), "{why}");
    let off = tpc
        .lines()
        .find(|l| l.starts_with("- keep-alive off"))
        .unwrap_or_else(|| panic!("{why}"));
    assert!(
        off.contains("µs of server CPU per request")
            && off.contains(" x model:")
            && !off.contains(" x model:thread-per-conn's ")
            && off.contains("clone+exit 2.")
            && off.contains("context switches against"),
        "{off}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"why\">"), "the page has it too");
}

/// 200 requests to event-loop over 2 connections, once, by `bin` (as
/// `prefix` says): (stderr, exit).
fn small_sweep(prefix: &[&str], bin: &str, out: &std::path::Path, extra: &[&str]) -> (String, i32) {
    let o = std::process::Command::new(prefix.first().copied().unwrap_or(bin))
        .args(prefix.iter().skip(1))
        .args(if prefix.is_empty() { None } else { Some(bin) })
        .args([
            "sweep",
            "-T",
            "model:event-loop",
            "--concurrency",
            "2",
            "--requests",
            "200",
            "--repeat",
            "1",
            "--no-check",
            "-q",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run loadlab");
    (
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn a_host_that_forbids_counting_says_so_in_one_line_and_the_runs_go_on() {
    use std::os::unix::fs::PermissionsExt;
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
    assert!(
        paranoid.trim().parse::<i32>().unwrap() > -1,
        "this test runs loadlab as nobody, whom perf_event_paranoid {paranoid} must forbid tracepoints"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    // Nobody may not read the build directory: a copy of the binary.
    let bin = dir.path().join("loadlab");
    std::fs::copy(crate::common::loadlab_bin(), &bin).unwrap();
    let out = dir.path().join("res");
    // A uid of no account's, not nobody's: tests/lifecycle/workers.rs
    // caps nobody's processes, and this sweep's threads would count
    // against that cap.
    let setpriv = [
        "setpriv",
        "--reuid=65533",
        "--regid=65533",
        "--clear-groups",
    ];
    let (stderr, code) = small_sweep(&setpriv, bin.to_str().unwrap(), &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no syscall or context-switch counts"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("perf_event_paranoid is ")
            && said[0].contains("sysctl kernel.perf_event_paranoid=-1"),
        "{stderr}"
    );
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert!(r.error.is_empty() && r.complete == 200, "{r:?}");
    assert_eq!(r.server_syscalls, None, "no silent zeros");
    assert!(r
        .accounting
        .as_deref()
        .unwrap()
        .contains("perf_event_paranoid"));
    // With --no-accounting: no figures, and no note either.
    let out2 = dir.path().join("res2");
    let (stderr, code) = small_sweep(
        &[],
        crate::common::loadlab_bin(),
        &out2,
        &["--no-accounting"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("no syscall"), "{stderr}");
    let r = &raw::read(&out2).unwrap()[0];
    assert_eq!((r.server_syscalls, r.accounting.as_deref()), (None, None));
}
