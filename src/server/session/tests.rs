//! The session's deadlines: what a silent, slow or trickling peer meets.

use super::*;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::server::outq::Wrote;

const S: Duration = Duration::from_secs(1);

fn limits() -> Limits {
    Limits {
        first_byte_timeout: 3 * S,
        header_timeout: 10 * S,
        header_timeout_max: 20 * S,
        min_header_rate: 500,
        idle_timeout: 5 * S,
        body_timeout: 30 * S,
        min_body_rate: 500,
        send_timeout: 30 * S,
        min_send_rate: 500,
        ..Limits::default()
    }
}

fn app() -> App {
    App::new(None, None, 1 << 20).unwrap()
}

/// A session accepted at `t0` that has read `request` and acted on it.
fn started(t0: Instant, request: &[u8]) -> Session {
    let mut s = Session::accepted_at(limits(), t0);
    arrive(&mut s, t0, request);
    s.process(&app());
    s
}

/// Bytes arriving at `at`, as a model records them.
fn arrive(s: &mut Session, at: Instant, bytes: &[u8]) {
    s.conn.feed(bytes);
    s.on_read(at, bytes.len());
}

#[test]
fn a_new_connection_gets_the_first_byte_timeout_from_acceptance() {
    let t0 = Instant::now();
    let mut s = Session::accepted_at(limits(), t0);
    // Checked later (it waited in a queue): still from acceptance.
    assert_eq!(s.deadline(t0 + 2 * S), Some(t0 + 3 * S));
}

#[test]
fn the_first_head_is_timed_from_acceptance_and_earns_time_by_rate() {
    let t0 = Instant::now();
    let mut s = Session::accepted_at(limits(), t0);
    s.deadline(t0);
    arrive(&mut s, t0 + 2 * S, b"GET / HTTP/1.1\r\n");
    let base = t0 + 10 * S;
    let d = s.deadline(t0 + 2 * S).unwrap();
    assert!(d > base && d < base + S, "{:?}", d - t0);
    // 5,000 bytes more earn ten seconds, up to the 20 s cap.
    arrive(&mut s, t0 + 3 * S, &[b'x'; 5000]);
    assert_eq!(s.deadline(t0 + 3 * S), Some(t0 + 20 * S));
}

#[test]
fn after_a_response_the_idle_and_next_head_clocks_start_fresh() {
    let t0 = Instant::now();
    let mut s = started(t0, b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n");
    let (mut a, _b) = UnixStream::pair().unwrap();
    assert_eq!(s.out.write_to(&mut a, u64::MAX).unwrap(), Wrote::All);
    let t1 = t0 + 4 * S;
    assert_eq!(s.deadline(t1), Some(t1 + 5 * S), "idle keep-alive");
    arrive(&mut s, t1 + S, b"G");
    let d = s.deadline(t1 + S).unwrap();
    assert!(d >= t1 + 11 * S && d < t1 + 12 * S, "{:?}", d - t1);
}

/// Time `bytes` earn at the test limits' 500 B/s.
fn earned(bytes: usize) -> Duration {
    Duration::from_secs_f64(bytes as f64 / 500.0)
}

#[test]
fn a_slow_body_is_cut_after_the_grace_unless_it_averages_the_rate() {
    let t0 = Instant::now();
    let app = app();
    let head = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n";
    let mut s = started(t0, head);
    // The header timeout's grace, and the head's bytes' worth.
    let cut = |n| Some(t0 + 10 * S + earned(head.len() + n));
    assert_eq!(s.deadline(t0), cut(0));
    // A byte a second earns 2 ms a second: the slow-body attack ends
    // about one header timeout after it began, not a 30 s window later.
    for i in 1..5 {
        arrive(&mut s, t0 + i * S, b"x");
        s.process(&app);
        assert_eq!(s.deadline(t0 + i * S), cut(i as usize));
    }
    // Bytes seen waiting unread count, until the next read.
    s.note_unread(5000);
    assert_eq!(s.deadline(t0 + 5 * S), cut(5004));
    // An upload at 500 B/s keeps ahead of it for good.
    arrive(&mut s, t0 + 6 * S, &[b'x'; 3000]);
    s.process(&app);
    assert_eq!(s.deadline(t0 + 6 * S), cut(3004));
}

#[test]
fn a_queued_body_is_judged_from_acceptance_with_the_bytes_read_with_its_head() {
    let t0 = Instant::now();
    let mut s = Session::accepted_at(limits(), t0);
    // It waited 8 s for a worker, which then reads its head and 1,000
    // body bytes in one read.
    let mut raw = b"PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n".to_vec();
    let head = raw.len();
    raw.extend_from_slice(&[b'x'; 1000]);
    arrive(&mut s, t0 + 8 * S, &raw);
    s.process(&app());
    assert_eq!(
        s.deadline(t0 + 8 * S),
        Some(t0 + 10 * S + earned(head + 1000))
    );
}

#[test]
fn a_body_must_also_move_the_minimum_rate_over_each_window() {
    let t0 = Instant::now();
    let app = app();
    let mut s = started(
        t0,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n",
    );
    // A fast start earns 80 s on average, but banks nothing in
    // the window: a byte now and then does not move it, and the trickle
    // ends 30 s after the window began.
    arrive(&mut s, t0, &[b'x'; 40_000]);
    s.process(&app);
    assert_eq!(s.deadline(t0), Some(t0 + 30 * S));
    for i in 1..20 {
        arrive(&mut s, t0 + i * S, b"x");
        s.process(&app);
        assert_eq!(s.deadline(t0 + i * S), Some(t0 + 30 * S));
    }
    // 15,000 bytes (500 B/s x 30 s) open the next window.
    arrive(&mut s, t0 + 25 * S, &[b'x'; 15_000]);
    s.process(&app);
    assert_eq!(s.deadline(t0 + 25 * S), Some(t0 + 55 * S));
}

#[test]
fn a_reader_must_take_the_response_at_the_minimum_rate() {
    let t0 = Instant::now();
    let mut s = started(t0, b"GET /bytes/8000000 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(s.deadline(t0), Some(t0 + 30 * S), "output queued");
    let (mut a, mut b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    // The first write fills the socket buffer: more than one window's
    // due, so the next window starts, but no more credit is banked.
    let _ = s.out.write_to(&mut a, u64::MAX);
    assert!(!s.out.is_empty());
    assert_eq!(s.deadline(t0 + S), Some(t0 + 31 * S));
    // The reader then takes a little at a time: the window stays.
    let mut buf = [0u8; 100];
    for i in 2..10 {
        b.read_exact(&mut buf).unwrap();
        let _ = s.out.write_to(&mut a, u64::MAX);
        assert_eq!(s.deadline(t0 + i * S), Some(t0 + 31 * S));
    }
}
