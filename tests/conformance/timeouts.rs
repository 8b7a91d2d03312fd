//! Timeouts: a head or body that stops arriving gets 408, an idle
//! connection is closed silently, and no blocking worker is held by a
//! trickle or gives up a fresh connection early.

use std::io::Write;
use std::time::Duration;

use crate::common::*;

use super::support::{expect_error, get, LONG};

fn timeout_server(model: &str) -> TestServer {
    TestServer::start(
        model,
        &[
            "--first-byte-timeout",
            "300ms",
            "--header-timeout",
            "300ms",
            "--idle-timeout",
            "300ms",
            "--body-timeout",
            "300ms",
        ],
    )
}

pub fn header_timeout_408(model: &str) {
    let server = timeout_server(model);
    // A head that stops arriving.
    expect_error(&server, b"GET / HTTP/1.1\r\nHost: t\r\n", 408);
    expect_error(&server, b"G", 408);
}

/// Regression: the blocking models looked at deadlines only when a read
/// timed out, so a head trickling in a byte every 20 ms never timed out and
/// held a worker (or the whole iterative server) for as long as it liked.
pub fn regression_trickled_head_held_a_blocking_worker_for_ever(model: &str) {
    let server = timeout_server(model);
    // A head trickling in a byte at a time still times out: the clock runs
    // from its first byte, not its last. Bytes keep coming until the
    // server answers (or 3 s, ten times the timeout, pass).
    let mut s = server.connect();
    let start = std::time::Instant::now();
    s.set_nonblocking(true).unwrap();
    let mut peek = [0u8; 1];
    for &b in b"GET / HTTP/1.1\r\nX-Slow: "
        .iter()
        .chain(std::iter::repeat(&b'a'))
    {
        if s.write_all(&[b]).is_err() || s.peek(&mut peek).is_ok() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "no 408 for a trickled head"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.set_nonblocking(false).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 408);
    assert!(is_closed(&mut s, LONG));
    assert_alive(&server);
}

/// Regression: a blocking worker with other connections waiting closed a
/// connection that had sent nothing yet after one 100 ms read tick, taking
/// it for an idle keep-alive connection; its request, sent a moment
/// later, got no answer at all. Only connections that have been answered
/// give way early.
pub fn regression_fresh_connection_closed_unanswered_when_others_waited(model: &str) {
    let server = TestServer::start(model, &["--workers", "1"]);
    let mut quiet = server.connect();
    std::thread::sleep(Duration::from_millis(100));
    let mut waiting = server.connect();
    waiting.write_all(&get("/bytes/2")).unwrap();
    // Several read ticks pass with a connection waiting.
    std::thread::sleep(Duration::from_millis(400));
    quiet.write_all(&get("/bytes/3")).unwrap();
    let r = read_response(&mut quiet, false).expect("the quiet connection is answered");
    assert_eq!((r.status, r.body), (200, b"abc".to_vec()));
    let r = read_response(&mut waiting, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"ab".to_vec()));
}

pub fn idle_and_body_timeouts(model: &str) {
    let server = timeout_server(model);
    // An idle keep-alive connection is closed without a response.
    let mut s = server.connect();
    s.write_all(&get("/bytes/1")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 200);
    assert_eq!(read_rest(&mut s, LONG), b"", "idle close sends nothing");
    // A connection that never sends anything is closed the same way.
    let mut s = server.connect();
    assert_eq!(read_rest(&mut s, LONG), b"");
    // A body that stops arriving gets 408.
    expect_error(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello",
        408,
    );
    expect_error(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        408,
    );
}
