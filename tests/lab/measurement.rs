//! How a sweep measures (issue 18): interleaved repeats, a minimum time per
//! run, and the client-bound flag.

use crate::common::*;
use loadlab::results::raw::{self, RawRow};

use super::support::{ok_rows, serial, sweep, sweep_env, sweep_json};

/// raw.csv's rows in the order they were measured.
fn by_start(mut rows: Vec<RawRow>) -> Vec<RawRow> {
    rows.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    rows
}

#[test]
fn repeats_are_interleaved_and_sweep_json_keeps_the_command_and_the_host() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // model subset: two targets are enough to interleave.
    let args = [
        "-T",
        "model:event-loop",
        "-T",
        "model:thread-pool",
        "--concurrency",
        "1,2",
        "--requests",
        "30",
        "--baseline",
        "model:thread-pool",
        "--path",
        "/500B.html",
    ];
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let rows = by_start(raw::read(&out).unwrap());
    ok_rows(&rows);
    assert_eq!(rows.len(), 2 * 2 * 3, "3 rounds by default");
    let rounds: Vec<u64> = rows.iter().map(|r| r.repeat).collect();
    assert_eq!(rounds, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3], "{rows:#?}");
    // Within a round, each target's cells together, in target order.
    let targets: Vec<&str> = rows[..4].iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, [args[1], args[1], args[3], args[3]]);
    for r in &rows {
        assert!(r.server_cpu_ms > 0.0, "{r:?}");
        assert!(r.server_ctx_switches > 0, "{r:?}");
        assert!(r.ok_responses == 30 && r.ok_rps > 0.0, "{r:?}");
        assert!(r.client_thread_max_pct > 0.0, "{r:?}");
    }
    let info = sweep_json(&out);
    assert_eq!(info["baseline"], "model:thread-pool");
    assert_eq!(info["interleaved"], true);
    assert_eq!(info["min_time_s"], 1.0);
    let command = info["command"].as_str().unwrap();
    assert!(
        command.starts_with("loadlab sweep -T model:event-loop")
            && command.contains("--baseline model:thread-pool")
            && command.contains(&format!("--out {}", out.display())),
        "{command}"
    );
    for when in ["host_start", "host_end"] {
        let h = &info[when];
        assert!(h["at"].as_f64().is_some_and(|t| t > 1e9), "{when}: {h}");
        assert_eq!(h["loadavg"].as_array().map(Vec::len), Some(3), "{h}");
        assert!(h["steal_pct"].as_f64().is_some(), "{h}");
        assert!(h["busy_processes"].is_array(), "{h}");
    }
    assert!(info["host_end"]["at"].as_f64() > info["host_start"]["at"].as_f64());

    // A fourth round asked for later: only round 4 is made, for both.
    let mut more = args.to_vec();
    more.extend(["--repeat", "4"]);
    let (_, stderr, code) = sweep(&more, &out);
    assert_eq!(code, 0, "{stderr}");
    let rows = by_start(raw::read(&out).unwrap());
    assert_eq!(rows.len(), 16);
    assert!(rows[12..].iter().all(|r| r.repeat == 4));
}

#[test]
fn time_limited_runs_last_min_time_and_short_runs_say_their_cpu_is_rough() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (_, stderr, code) = sweep(
        &[
            "-T",
            "model:event-loop",
            "--concurrency",
            "2",
            "--duration",
            "100ms",
            "--min-time",
            "400ms",
            "--repeat",
            "1",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    ok_rows(&rows);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].requests, rows[0].duration_s), (0, 0.4));
    assert!(
        (0.4..1.5).contains(&rows[0].time_taken_s),
        "{}",
        rows[0].time_taken_s
    );

    // A count-defined run keeps its count, however short; its progress
    // line says its CPU figures are rough.
    let (_, stderr, code) = sweep_env(
        &[
            "-T",
            "model:event-loop",
            "--concurrency",
            "1",
            "--requests",
            "20",
            "--repeat",
            "1",
        ],
        &dir.path().join("short"),
        &[],
        false,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&dir.path().join("short")).unwrap();
    assert_eq!(rows[0].complete, 20);
    assert!(rows[0].time_taken_s < 0.1, "{}", rows[0].time_taken_s);
    assert!(
        stderr.contains("CPU rough: ") && stderr.contains(" ms run]"),
        "{stderr}"
    );
}

/// The load generator on the CPU the server was not given, one load
/// thread: against the event loop with keep-alive that thread never waits
/// for an answer (client-bound: measured 93-96 % busy); against Python's
/// single-threaded http.server, which keeps its CPU busy at about 3,000
/// requests/s, it waits (server-bound: measured 16-18 %). Not the
/// iterative model, which the issue named: at c = 50 it closes each
/// connection after one answer while others wait, so the one load thread
/// reconnects about 22,000 times a second (97 % busy) while the server
/// idles at about 35 % CPU, and the flag is right to call that
/// client-bound. Nor thread-per-conn: server-bound (98 % CPU), but its
/// load thread reads 84 %, too near the line on a shared host.
#[test]
fn client_bound_is_flagged_for_a_fast_server_and_not_for_a_slow_one() {
    let _serial = serial();
    if loadlab::proc::affinity::allowed_cpus().len() < 2 {
        println!("note: one CPU only: the client cannot be split from the server");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let _ = tool("python3");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("500B.html"), [b'x'; 500]).unwrap();
    let python = format!(
        "cmd:python3 -m http.server {{port}} --bind 127.0.0.1 --directory {}",
        root.display()
    );
    let (_, stderr, code) = sweep_env(
        // model subset: a fast server; Python is the slow one.
        &[
            "-T",
            "model:event-loop",
            "-T",
            &python,
            // No --cpus, no --threads: the default split gives the server
            // the first half of the CPUs, the load generator the rest and
            // one thread per CPU it has.
            "--keepalive",
            "on",
            "--concurrency",
            "50",
            "--duration",
            "1s",
        ],
        &out,
        &[],
        false,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("CPUs split (--cpus 1): the server runs on CPU")
            && stderr.contains("the load generator on CPU"),
        "{stderr}"
    );
    let rows = raw::read(&out).unwrap();
    ok_rows(&rows);
    let half = loadlab::proc::affinity::allowed_cpus().len() as u64 / 2;
    assert!(rows.iter().all(|r| r.cpus == half), "{rows:#?}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("CPUs: CPUs split (--cpus "),
        "the report states the split"
    );
    let of = |t: &str| -> Vec<&RawRow> { rows.iter().filter(|r| r.target == t).collect() };
    let busy =
        |rs: &[&RawRow]| -> Vec<f64> { rs.iter().map(|r| r.client_thread_max_pct).collect() };
    // model subset: the two started above.
    let (fast, slow) = (of("model:event-loop"), of(&python));
    assert_eq!((fast.len(), slow.len()), (3, 3));
    assert!(
        slow.iter().all(|r| !r.client_bound),
        "python: {:?}",
        busy(&slow)
    );
    let info = sweep_json(&out);
    // Other processes busy beside the run (other helpers compiling, say,
    // with a load average of 8 on 2 cores) take the load thread's CPU:
    // the fast server then reads 87-91 %. That is what the host-busy
    // warning is for; the flag is held to it on a quiet host only.
    // The other tests of this binary run beside it too (in one CI run the
    // load thread read 80-90 %), so the host's load average at the start
    // counts, by the sweep's own rule.
    let cores = loadlab::proc::affinity::allowed_cpus().len() as f64;
    let calm_start = info["host_start"]["loadavg"][0]
        .as_f64()
        .is_some_and(|l| l <= loadlab::results::sweep_info::BUSY_LOADAVG_PER_CORE * cores);
    let quiet = calm_start
        && ["host_start", "host_end"].iter().all(|w| {
            info[w]["busy_processes"]
                .as_array()
                .is_some_and(Vec::is_empty)
        });
    if quiet {
        // Server-bound indeed: its one CPU was busy (on a busy host other
        // processes share that CPU: in one full test run it got 67 %).
        assert!(
            slow.iter().all(|r| r.server_cpu_pct > 80.0),
            "python server CPU: {:?}",
            slow.iter().map(|r| r.server_cpu_pct).collect::<Vec<_>>()
        );
        // At least one round: the other tests of this binary run beside
        // it, and a burst of theirs on the server's CPU slows the server,
        // so the client waits (in one fresh-clone CI run two of three
        // rounds read 83 and 85 %, the third 91 %). The flag firing for
        // the fast server, and never for Python, is what is tested.
        assert!(
            fast.iter().any(|r| r.client_bound),
            "event-loop: {:?}",
            busy(&fast)
        );
        assert!(stderr.contains("[client-bound]"), "{stderr}");
        assert!(
            stderr.contains("were client-bound: a load thread"),
            "{stderr}"
        );
    } else {
        println!(
            "note: the host was busy ({}): client-bound not required of event-loop: {:?}",
            info["host_start"]["busy_processes"],
            busy(&fast)
        );
    }
    // Split CPUs share none: never saturated.
    assert!(rows
        .iter()
        .all(|r| r.shared_cpu_busy_pct == 0.0 && !r.cpu_saturated));
    assert!(
        info["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("the load generator on CPU")),
        "{info}"
    );
}

/// One round of 6 requests on 2 connections, each its own: a warm-up of
/// the first run's connections is 2 requests.
/// Small runs, and no pre-check: these tests count every request a
/// target saw.
const SMALL_RUN: [&str; 9] = [
    "--no-check",
    "--requests",
    "6",
    "--concurrency",
    "2",
    "--keepalive",
    "off",
    "--repeat",
    "1",
];

/// The first burst of a sweep runs slow whichever target meets it
/// (docs/guide/lab.md): unless --warmup-runs is given, the
/// sweep first sends the first run's connections one request each, to its
/// first target only, unrecorded, and says so in sweep.json; given, it
/// makes those runs instead (recorded), and 0 means none at all.
#[test]
fn a_sweep_warms_the_host_up_once_unless_warmup_runs_are_given() {
    use crate::common::fake::{Behaviour, FakeServer};
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // (flags, requests each server saw, rows recorded, the note)
    let cases: [(&[&str], [usize; 2], usize, bool); 3] = [
        (&[], [2 + 6, 6], 2, true),
        (&["--warmup-runs", "0"], [6, 6], 2, false),
        (&["--warmup-runs", "1"], [6 + 6, 6 + 6], 4, false),
    ];
    for (k, (flags, seen, recorded, note)) in cases.into_iter().enumerate() {
        let servers = [0, 1].map(|_| FakeServer::start(Behaviour::Capture));
        let urls = servers.each_ref().map(|s| format!("url:{}", s.url("/x")));
        let out = dir.path().join(format!("case-{k}"));
        let mut args = vec!["-T", urls[0].as_str(), "-T", urls[1].as_str()];
        args.extend(SMALL_RUN);
        args.extend(flags);
        let (_, stderr, code) = sweep(&args, &out);
        assert_eq!(code, 0, "{flags:?}: {stderr}");
        let rows = raw::read(&out).unwrap();
        assert_eq!(rows.len(), recorded, "{flags:?}: {rows:?}");
        assert_eq!(rows.iter().filter(|r| !r.warmup).count(), 2);
        assert!(rows.iter().all(|r| r.complete == 6 && r.failed == 0));
        let got = servers.each_ref().map(|s| s.take_captured().len());
        assert_eq!(got, seen, "{flags:?}: requests each target saw");
        let info = sweep_json(&out);
        let notes = info["notes"].as_array().unwrap();
        let said = notes.iter().any(|n| {
            n.as_str()
                .unwrap()
                .starts_with("one unrecorded warm-up run against url:")
        });
        assert_eq!(said, note, "{flags:?}: {info}");
    }
}

/// A first target that does not start makes no runs: the host is warmed
/// up against the first one that did.
#[test]
fn the_host_warm_up_goes_to_the_first_target_that_started() {
    use crate::common::fake::{Behaviour, FakeServer};
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(Behaviour::Capture);
    let url = format!("url:{}", server.url("/x"));
    let mut args = vec!["-T", "cmd:/bin/false {port}", "-T", url.as_str()];
    args.extend(SMALL_RUN);
    let out = dir.path().join("res");
    let (_, stderr, _) = sweep(&args, &out);
    let rows = raw::read(&out).unwrap();
    let measured: Vec<_> = rows.iter().filter(|r| r.error.is_empty()).collect();
    assert_eq!(measured.len(), 1, "{stderr}: {rows:?}");
    assert_eq!(server.take_captured().len(), 2 + 6, "{stderr}");
}
