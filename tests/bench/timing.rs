//! Time limits and the open loop: no hidden request cap, requests in flight
//! at the limit, the corrected tail, warm-up at the rate, and slots that
//! never went out.

use std::time::Duration;

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::fake::{Behaviour, FakeServer};
use crate::common::*;
use serde_json::Value;

#[test]
fn time_limit_has_no_hidden_50000_cap() {
    // ab's -t caps a run at 50,000 requests; loadlab's must not. Four
    // seconds with keep-alive pass 50,000 with room to spare even on a busy
    // two-core machine (an idle one does well over 100,000 a second).
    let server = TestServer::start("event-loop", &[]);
    let r = bench_json(&["-t", "4", "-c", "16", "-k", &server.url("/500B.html")]);
    let t = r["time_taken_s"].as_f64().unwrap();
    assert!(
        (t - 4.0).abs() < 1e-6,
        "a time-limited run lasts its limit, got {t}"
    );
    assert!(
        u(&r, "/complete") > 50_000,
        "complete {} is not past ab's cap",
        u(&r, "/complete")
    );
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(
        r["run"]["requests"],
        Value::Null,
        "-t alone sets no request cap"
    );
}

#[test]
fn time_limit_reports_requests_in_flight_at_a_stalled_server() {
    // The server reads every request and never answers: when the limit
    // passes, all three are on the wire, and the report says so.
    let fake = FakeServer::start(Behaviour::Stall);
    let r = bench_json(&["-t", "1", "-c", "3", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 0);
    assert_eq!(u(&r, "/in_flight_at_end"), 3);
    let (text, err, code) = bench_text(&["-q", "-t", "1", "-c", "3", &fake.url("/")]);
    // No answer at all: the report says what happened, the exit status
    // that nothing usable was measured.
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("measured nothing usable: no request completed"),
        "{err}"
    );
    assert!(
        text.contains("Requests in flight at the time limit: 3"),
        "{text}"
    );
}

#[test]
fn open_loop_shows_a_server_pause_in_the_corrected_tail() {
    // 500 req/s for about 2 s; after 300 requests the server stops for
    // 400 ms. A closed-loop client would just send fewer requests during
    // the pause; the open-loop schedule keeps them and charges the wait.
    let fake = FakeServer::start(Behaviour::PauseOnce {
        after: 300,
        pause: Duration::from_millis(400),
    });
    let r = bench_json(&[
        "-n",
        "1000",
        "-c",
        "4",
        "-k",
        "--rate",
        "500",
        &fake.url("/"),
    ]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/failed"), 0);
    let corrected = r["corrected_latency_ms"]["p99"].as_f64().unwrap();
    let uncorrected = r["latency_ms"]["p99"].as_f64().unwrap();
    assert!(
        corrected >= 200.0,
        "corrected p99 {corrected} ms should show the 400 ms pause"
    );
    assert!(
        uncorrected < corrected / 2.0,
        "uncorrected p99 {uncorrected} ms hides most of it"
    );
    let (text, _, _) = bench_text(&[
        "-q",
        "-n",
        "100",
        "-c",
        "2",
        "--rate",
        "200",
        &fake.url("/"),
    ]);
    assert!(text.contains("corrected"), "{text}");
}

#[test]
fn warmup_with_rate_warms_up_at_that_rate() {
    // One second of warm-up at 100/s is 100 requests, not as many as the
    // server can take; then 50 measured ones.
    let fake = FakeServer::start(Behaviour::Capture);
    let r = bench_json(&[
        "-n",
        "50",
        "-c",
        "2",
        "-k",
        "--rate",
        "100",
        "--warmup",
        "1s",
        &fake.url("/"),
    ]);
    assert_eq!(u(&r, "/complete"), 50);
    assert_eq!(u(&r, "/corrected_latency_ms/count"), 50);
    let seen = || fake.requests.load(std::sync::atomic::Ordering::SeqCst);
    wait_until(Duration::from_secs(2), || seen() >= 150);
    assert_eq!(seen(), 150, "100 warm-up requests at the rate, 50 measured");
}

#[test]
fn open_loop_time_limit_counts_slots_that_never_went_out() {
    // 200/s for 1 s against a server that never answers, on 4 connections:
    // 4 requests go out and stall, the other 196 slots find no connection.
    // They must show up, not vanish: counted as missed, and in the
    // corrected histogram as waiting until the limit.
    let fake = FakeServer::start(Behaviour::Stall);
    let args = ["-t", "1", "-c", "4", "--threads", "2", "--rate", "200"];
    let url = fake.url("/");
    let r = bench_json(&[&args[..], &[url.as_str()]].concat());
    assert_eq!(u(&r, "/complete"), 0);
    assert_eq!(u(&r, "/in_flight_at_end"), 4);
    assert_eq!(u(&r, "/missed"), 196);
    let c = &r["corrected_latency_ms"];
    assert_eq!(c["count"], 200, "every slot due before the limit: {c}");
    let (p50, max) = (c["p50"].as_f64().unwrap(), c["max"].as_f64().unwrap());
    assert!(
        (400.0..=600.0).contains(&p50),
        "waits spread over the second: {c}"
    );
    assert!(
        (950.0..=1010.0).contains(&max),
        "the first slot waited it all: {c}"
    );
    let (text, err, code) = bench_text(&[&["-q"][..], &args[..], &[url.as_str()]].concat());
    assert_eq!(code, 1, "nothing was answered: {err}");
    assert!(
        text.contains("Scheduled requests missed (due before the limit, no free connection): 196"),
        "{text}"
    );
}
