//! Slow clients (`bench --slow`, the first-byte and header timeouts): the
//! event-driven models keep a normal client fast beside 2,000 of them;
//! the blocking models are denied while every worker is held, but the
//! timeouts free their workers instead of leaving them held for minutes.

mod common;

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

/// `n` slowloris connections held for `secs` beside a client at c=1: it
/// completes requests, none fails, and none waits longer than the 1 s
/// header timeout plus MARGIN.
fn slowloris_never_denies_longer_than_the_timeout(
    server: &TestServer,
    model: &str,
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
        "header",
        "--slow-conns",
        &n,
    ];
    let (r, stderr) = bench(&args, &server.url("/500B.html"));
    let max = r["latency_ms"]["max"].as_f64().unwrap_or(f64::INFINITY);
    eprintln!(
        "{model}: {} complete, max {max} ms; {}",
        count(&r, "complete"),
        stderr.trim()
    );
    assert!(
        count(&r, "complete") > 0,
        "{model} denied for the whole run"
    );
    assert_eq!(count(&r, "failed"), 0, "{model}");
    assert!(
        max < (Duration::from_secs(1) + MARGIN).as_secs_f64() * 1000.0,
        "{model}: a request waited {max} ms"
    );
}

/// Regression: a slowloris at 2,000 connections denied a thread pool for
/// good: each worker waited out a full header timeout per connection, and
/// the queue of them never drained. Now the timeouts run from acceptance,
/// so a queue of expired connections drains at once and the normal client
/// waits at most about one header timeout.
#[test]
fn regression_2000_slowloris_denied_the_thread_pool_for_good() {
    let server = TestServer::start("thread-pool", &TIMEOUTS);
    slowloris_never_denies_longer_than_the_timeout(&server, "thread-pool", MANY, 6);
}

/// Regression: a connection that connected and sent nothing held a
/// blocking model's worker for the idle timeout, and one that trickled a
/// head for the header timeout; with every worker held, the model denied
/// everyone for as long as the attack lasted. With as many slow clients
/// as workers (the attack that fills them; more only queue in the kernel,
/// see docs/experiments.md e6) each worker is freed after the first-byte
/// or header timeout and the normal client is served.
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
    slowloris_never_denies_longer_than_the_timeout(&server, model, workers, 4);
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
