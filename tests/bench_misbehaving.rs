//! `loadlab bench` against servers that break HTTP on purpose (issue 19):
//! a response with bytes past its Content-Length, and one trickled a byte
//! at a time, which `-s` (ab's inactivity timeout) must wait for.

use crate::common;

use std::time::{Duration, Instant};

use common::bench::{bench_json, bench_text, u};
use common::fake::{Behaviour, FakeServer};

#[test]
fn regression_bytes_past_content_length_counted_as_fine() {
    // Every answer is "ok" plus four bytes nobody asked for, on a kept-alive
    // connection: each request fails under Exceptions with the kind
    // "framing", and none counts as a Keep-Alive request.
    let fake = FakeServer::start(Behaviour::ExtraBytes);
    let url = fake.url("/");
    let r = bench_json(&["-n", "40", "-c", "2", "-k", &url]);
    assert_eq!(u(&r, "/complete"), 40);
    assert_eq!(u(&r, "/failed"), 40, "{}", r["errors"]);
    assert_eq!(u(&r, "/failures/exceptions"), 40);
    assert_eq!(u(&r, "/keep_alive_requests"), 0);
    let errors = r["errors"].as_object().unwrap();
    let framing: u64 = errors
        .iter()
        .filter(|(k, _)| k.starts_with("framing"))
        .map(|(_, v)| v.as_u64().unwrap())
        .sum();
    assert_eq!(framing, 40, "{errors:?}");
    // ab's line, with the count under Exceptions.
    let (text, err, code) = bench_text(&["-q", "-n", "10", "-c", "1", "-k", &url]);
    assert_eq!(code, 1, "nothing usable: {err}");
    assert!(
        text.contains("   (Connect: 0, Receive: 0, Length: 0, Exceptions: 10)"),
        "{text}"
    );
    assert!(text.contains("framing"), "{text}");
}

#[test]
fn regression_s_was_a_deadline_for_the_whole_response() {
    // 21 bytes, 100 ms apart: about 2 s for the whole answer, never more
    // than 100 ms without a byte. `-s 1` is ab's per-socket inactivity
    // timeout, so both requests succeed; a deadline would have failed them.
    let gap = Duration::from_millis(100);
    let fake = FakeServer::start(Behaviour::Trickle(gap));
    let t0 = Instant::now();
    let r = bench_json(&["-n", "2", "-c", "2", "-s", "1", &fake.url("/")]);
    let took = t0.elapsed();
    assert!(
        took > Duration::from_millis(1500),
        "the answer took {took:?}, so the test did not outlast -s"
    );
    assert_eq!(u(&r, "/complete"), 2);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(u(&r, "/timeouts"), 0);
    assert_eq!(u(&r, "/latency_excludes_timeouts"), 0);
    assert!(r["latency_ms"]["min"].as_f64().unwrap() > 1500.0);
}

#[test]
fn stalls_past_s_are_timeouts_left_out_of_the_latencies() {
    // The stalling server never answers: with -s 300ms every request times
    // out, under Exceptions, and the JSON says the latency figures leave
    // them out. Against the trickling server a gap longer than -s times out.
    let stall = FakeServer::start(Behaviour::Stall);
    let r = bench_json(&["-n", "4", "-c", "2", "-s", "300ms", &stall.url("/")]);
    assert_eq!(u(&r, "/complete"), 4);
    assert_eq!(u(&r, "/timeouts"), 4);
    assert_eq!(u(&r, "/failures/exceptions"), 4);
    assert_eq!(u(&r, "/latency_excludes_timeouts"), 4);
    assert_eq!(u(&r, "/latency_ms/count"), 0);

    let slow = FakeServer::start(Behaviour::Trickle(Duration::from_millis(1500)));
    let r = bench_json(&["-n", "1", "-c", "1", "-s", "300ms", &slow.url("/")]);
    assert_eq!((u(&r, "/timeouts"), u(&r, "/failed")), (1, 1));
}

#[test]
fn the_text_report_says_how_many_timeouts_the_percentiles_leave_out() {
    // Some requests finish, some time out: the percentile table is there,
    // with the line that says what it leaves out.
    let fake = FakeServer::start(Behaviour::PauseOnce {
        after: 5,
        pause: Duration::from_secs(3),
    });
    let (text, err, code) = bench_text(&["-n", "12", "-c", "1", "-s", "500ms", &fake.url("/")]);
    assert_eq!(code, 0, "{err}");
    let timeouts = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Timeouts: "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no Timeouts line: {text}"));
    assert!(timeouts >= 1, "{text}");
    let want = format!(
        "  (not in these times: {timeouts} request{} timed out, no byte for -s 0.5 s)",
        if timeouts == 1 { "" } else { "s" }
    );
    let table_end = text
        .lines()
        .position(|l| l.contains("(longest request)"))
        .unwrap();
    assert_eq!(
        text.lines().nth(table_end + 1),
        Some(want.as_str()),
        "{text}"
    );
}

#[test]
fn regression_an_answer_that_began_before_the_request_was_sent_was_lost() {
    // /echo streams a large body back while it is still arriving. The
    // readable edge came while bench was sending and was ignored; the
    // server, its output full, then stopped reading, and both sides waited
    // for `-s`. Bench reads while it sends, so every request completes.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    let bytes: Vec<u8> = (0..6 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&body, &bytes).unwrap();
    let server = common::TestServer::start("event-loop", &[]);
    let url = server.url("/echo");
    let body = body.to_str().unwrap();
    for ka in [false, true] {
        let mut args = vec!["-n", "6", "-c", "2", "-s", "20", "-p", body];
        if ka {
            args.push("-k");
        }
        args.push(&url);
        let r = bench_json(&args);
        assert_eq!(u(&r, "/complete"), 6, "keep-alive {ka}");
        assert_eq!(u(&r, "/failed"), 0, "keep-alive {ka}: {}", r["errors"]);
    }
}
