//! Slow clients (`bench --slow`, the first-byte and header timeouts): the
//! event-driven models keep a normal client fast beside 2,000 of them;
//! the blocking models are denied while every worker is held, but the
//! timeouts free their workers instead of leaving them held for minutes,
//! and shed the slow clients that expired while they queued.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

// model subset: issue 19 holds the event-driven models to a p99 beside
// 2,000 slow clients, and the blocking ones to being freed by timeouts.

/// Slow connections the event-driven models are held to (issue 19).
const MANY: usize = 2000;
/// The p99 the issue holds the event-driven models to beside them.
const P99_BOUND_MS: f64 = 10.0;

/// `loadlab bench ARGS --format json URL`; the report as JSON and stderr.
fn bench(args: &[&str], url: &str) -> (serde_json::Value, String) {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(["-q", "--format", "json"])
        .args(args)
        .arg(url)
        .output()
        .expect("run bench");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bench printed no JSON ({e}): {stderr}"));
    (json, stderr)
}

fn p99(r: &serde_json::Value) -> f64 {
    r["latency_ms"]["p99"].as_f64().unwrap()
}

fn count(r: &serde_json::Value, field: &str) -> u64 {
    r[field].as_u64().unwrap()
}

/// A keep-alive client at c=1 for 2 s, beside `MANY` slow connections of
/// each kind, on one event-driven model: nothing fails and p99 stays under
/// 10 ms. The same client alone is measured first: on a host busy enough
/// that the client alone misses 10 ms, the bound is its own p99 plus
/// 10 ms, so the test measures the slow clients, not the host.
fn event_driven_model_keeps_the_normal_client_fast(model: &str) {
    let _turn = socket_memory_turn();
    let server = TestServer::start(model, &[]);
    let url = server.url("/500B.html");
    let normal = ["-k", "-c", "1", "-t", "2", "--threads", "1"];
    let (alone, _) = bench(&normal, &url);
    assert_eq!(count(&alone, "failed"), 0);
    let bound = P99_BOUND_MS.max(p99(&alone) + P99_BOUND_MS);
    let many = MANY.to_string();
    for kind in ["header", "body", "read"] {
        let mut args = normal.to_vec();
        args.extend(["--slow", kind, "--slow-conns", &many]);
        args.extend(["--slow-path", "/bytes/262144"]);
        let (r, stderr) = bench(&args, &url);
        eprintln!(
            "{model} --slow {kind}: p99 {:.3} ms (alone {:.3} ms), {} complete; {}",
            p99(&r),
            p99(&alone),
            count(&r, "complete"),
            stderr.trim()
        );
        assert!(
            stderr.contains(&format!("{MANY} slow {kind} connections held: ")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!(" {MANY} open at the end")),
            "{stderr}"
        );
        assert_eq!(count(&r, "failed"), 0, "{model} --slow {kind}");
        assert!(count(&r, "complete") > 100, "{model} --slow {kind}");
        assert!(
            p99(&r) < bound,
            "{model} --slow {kind}: p99 {} ms, bound {bound} ms",
            p99(&r)
        );
    }
    assert_alive(&server);
}

#[test]
fn event_loop_keeps_a_normal_client_fast_beside_2000_slow_connections() {
    event_driven_model_keeps_the_normal_client_fast("event-loop");
}

#[test]
fn reactors_keep_a_normal_client_fast_beside_2000_slow_connections() {
    event_driven_model_keeps_the_normal_client_fast("reactors");
}

#[test]
fn async_keeps_a_normal_client_fast_beside_2000_slow_connections() {
    event_driven_model_keeps_the_normal_client_fast("async");
}

#[test]
fn async_local_keeps_a_normal_client_fast_beside_2000_slow_connections() {
    event_driven_model_keeps_the_normal_client_fast("async-local");
}

#[test]
fn io_uring_keeps_a_normal_client_fast_beside_2000_slow_connections() {
    event_driven_model_keeps_the_normal_client_fast("io-uring");
}

/// Short timeouts, so the tests below take seconds.
const TIMEOUTS: [&str; 6] = [
    "--first-byte-timeout",
    "1s",
    "--header-timeout",
    "1s",
    "--header-timeout-max",
    "1s",
];
/// What a request may wait beyond the timeout that frees its worker: the
/// kernel's TCP_DEFER_ACCEPT hold (about 1 s, up to 3 s with a SYN-ACK
/// retransmission), the 100 ms read tick, and a busy host.
const MARGIN: Duration = Duration::from_secs(4);

/// `n` slow connections of `kind` (`bench --slow`) held for `secs` beside
/// a client at c=1: it completes requests, none fails, and none waits
/// longer than the 1 s header timeout plus MARGIN.
fn slow_clients_never_deny_longer_than_the_timeout(
    server: &TestServer,
    model: &str,
    kind: &str,
    n: usize,
    secs: u32,
) {
    let (n, secs) = (n.to_string(), secs.to_string());
    let args = [
        "-c",
        "1",
        "-t",
        &secs,
        "-s",
        "30",
        "--slow",
        kind,
        "--slow-conns",
        &n,
    ];
    let (r, stderr) = bench(&args, &server.url("/500B.html"));
    let max = r["latency_ms"]["max"].as_f64().unwrap_or(f64::INFINITY);
    eprintln!(
        "{model} --slow {kind}: {} complete, max {max} ms; {}",
        count(&r, "complete"),
        stderr.trim()
    );
    assert!(
        count(&r, "complete") > 0,
        "{model} denied for the whole run by slow {kind}s"
    );
    assert_eq!(count(&r, "failed"), 0, "{model} --slow {kind}");
    assert!(
        max < (Duration::from_secs(1) + MARGIN).as_secs_f64() * 1000.0,
        "{model} --slow {kind}: a request waited {max} ms"
    );
}

/// `MANY` slow clients of `kind` for 6 s against `model` with 1 s timeouts.
fn many_slow_clients_never_deny_longer_than_the_timeout(model: &str, kind: &str) {
    let server = TestServer::start(model, &TIMEOUTS);
    slow_clients_never_deny_longer_than_the_timeout(&server, model, kind, MANY, 6);
}

/// Regression: a slowloris at 2,000 connections denied a thread pool for
/// good: each worker waited out a full header timeout per connection, and
/// the queue of them never drained. Now the timeouts run from acceptance,
/// so a queue of expired connections drains at once and the normal client
/// waits at most about one header timeout.
#[test]
fn regression_2000_slowloris_denied_the_thread_pool_for_good() {
    many_slow_clients_never_deny_longer_than_the_timeout("thread-pool", "header");
}

/// Regression: a slowloris at 2,000 connections denied the iterative
/// server for good: the kernel's backlog held the connections with no
/// clock running, and each one reached the one worker with a full header
/// timeout ahead of it. Now the worker accepts the waiting connections
/// whenever the one it serves stalls, so their clocks run while they wait
/// and the expired ones are shed at once.
#[test]
fn regression_2000_slowloris_denied_the_iterative_server_for_good() {
    many_slow_clients_never_deny_longer_than_the_timeout("iterative", "header");
}

/// Regression: as for the one-worker server above, with every prefork
/// worker taking one full header timeout per queued slowloris connection.
#[test]
fn regression_2000_slowloris_denied_prefork_for_good() {
    many_slow_clients_never_deny_longer_than_the_timeout("prefork", "header");
}

/// Regression: a connection that connected and sent nothing held a
/// blocking model's worker for the idle timeout, and one that trickled a
/// head for the header timeout; with every worker held, the model denied
/// everyone for as long as the attack lasted. With as many slow clients
/// as workers (the attack that fills them; the 2,000-connection tests
/// above hold what happens to the ones that queue) each worker is freed
/// after the first-byte or header timeout and the normal client is served.
fn blocking_worker_is_freed_by_the_timeouts(model: &str, workers: usize) {
    let w = workers.to_string();
    let mut args = TIMEOUTS.to_vec();
    args.extend(["--workers", &w]);
    let server = TestServer::start(model, &args);
    // Silent connections, one per worker.
    let mut silent: Vec<TcpStream> = (0..workers).map(|_| server.connect()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let mut s = server.connect();
    s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"ab".to_vec()), "{model}");
    let waited = t0.elapsed();
    assert!(
        waited < Duration::from_secs(1) + MARGIN,
        "{model}: waited {waited:?}"
    );
    for c in &mut silent {
        assert!(
            is_closed(c, MARGIN),
            "{model}: a silent connection kept open"
        );
    }
    // Slowloris connections, one per worker, held (and reopened) by bench.
    slow_clients_never_deny_longer_than_the_timeout(&server, model, "header", workers, 4);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
}

#[test]
fn regression_slow_clients_held_the_iterative_server_past_the_timeouts() {
    blocking_worker_is_freed_by_the_timeouts("iterative", 1);
}

#[test]
fn regression_slow_clients_held_prefork_workers_past_the_timeouts() {
    blocking_worker_is_freed_by_the_timeouts("prefork", 2);
}

#[test]
fn regression_slow_clients_held_thread_pool_workers_past_the_timeouts() {
    blocking_worker_is_freed_by_the_timeouts("thread-pool", 2);
}

/// Regression: 2,000 slow bodies (a complete head, then a byte a second)
/// denied the iterative server for good: the body's minimum rate was
/// first judged a whole 30 s window after the worker read its head, so
/// each held the one worker for 30 s. Now a body averages the minimum
/// rate after a grace of one header timeout, counted from acceptance, so
/// one holds the worker about that long and the queued ones are shed.
#[test]
fn regression_2000_slow_bodies_denied_the_iterative_server_for_good() {
    many_slow_clients_never_deny_longer_than_the_timeout("iterative", "body");
}

/// Regression: as for the one-worker server above, every prefork worker
/// held 30 s by each slow body it took.
#[test]
fn regression_2000_slow_bodies_denied_prefork_for_good() {
    many_slow_clients_never_deny_longer_than_the_timeout("prefork", "body");
}

/// Regression: as for the iterative server, every pool thread held 30 s by
/// each slow body it took from the queue.
#[test]
fn regression_2000_slow_bodies_denied_the_thread_pool_for_good() {
    many_slow_clients_never_deny_longer_than_the_timeout("thread-pool", "body");
}

/// A real upload, far above the minimum rate, that queued for the
/// iterative server's one worker behind a slow body is not cut when the
/// worker reaches it: its age is past the grace, and the one read the
/// worker makes holds a few KiB, but the bytes waiting in its socket
/// count. The minimum rate is raised to 5,000 B/s so that one read's
/// worth would not cover a few seconds' wait on its own.
#[test]
fn an_upload_that_queued_behind_a_slow_body_is_not_cut() {
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    let mut args = TIMEOUTS.to_vec();
    args.extend([
        "--min-body-rate",
        "5000",
        "--files",
        files.to_str().unwrap(),
    ]);
    let server = TestServer::start("iterative", &args);
    // The slow body: 15,000 bytes earn it 3 s at 5,000 B/s beyond the 1 s
    // grace, then nothing more comes; it holds the worker about 4 s.
    let mut slow = server.connect();
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n".to_vec();
    raw.extend_from_slice(&[b'x'; 15_000]);
    slow.write_all(&raw).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let body: Vec<u8> = (0..4_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let src = dir.path().join("up.bin");
    std::fs::write(&src, &body).unwrap();
    let t0 = Instant::now();
    let out = tool("curl")
        .args(["-s", "-m", "30", "-w", "\n%{http_code}"])
        .args(["-H", "Want-Repr-Digest: sha-256=1", "-T"])
        .arg(&src)
        .arg(server.url("/files/up.bin"))
        .output()
        .unwrap();
    let waited = t0.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let (json, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    assert_eq!(code, "201", "the queued upload was answered {code}: {json}");
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let sha: String = Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v["sha256"], sha);
    assert!(
        waited > Duration::from_secs(2),
        "the upload did not queue behind the slow body ({waited:?})"
    );
    let r = read_response(&mut slow, false).unwrap();
    assert_eq!(r.status, 408, "the slow body");
}
