//! SIGTERM: a slow download finishes, the exit is bounded by the grace
//! period, requests in flight or queued are answered, and a server told to
//! stop while starting stops promptly.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;

use super::support::WAIT;

pub fn sigterm_during_slow_download_lets_it_finish(model: &str) {
    const SIZE: usize = 16 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let content = pattern(SIZE);
    std::fs::write(dir.path().join("big.bin"), &content).unwrap();
    let root = dir.path().to_str().unwrap();
    let mut server = TestServer::start(model, &["--root", root]);

    // Most of the file is still on the server when SIGTERM arrives.
    let (mut s, mut got) = start_slow_download(server.addr, "/big.bin", 256 * 1024);
    let mut buf = vec![0u8; 64 * 1024];

    assert!(send_signal(server.pid(), 15));
    // The server has seen the signal (it polls every 100 ms) and must
    // still be there, sending.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "{model} exited with a download in flight"
    );
    // It has stopped accepting: a new connection is refused or never served.
    assert!(
        !served_within(server.addr, Duration::from_secs(1)),
        "{model} served a new connection after SIGTERM"
    );
    // Read the rest slowly: ~2 ms per 64 KiB, about half a second in all.
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{model}: download broken after {} bytes: {e}", got.len()),
        }
        if got.len() >= SIZE + 200 {
            // Head plus the whole body: the server may keep the
            // connection open only until it notices it is idle.
            let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            if got.len() - head_end >= SIZE {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let head_end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    let head = String::from_utf8_lossy(&got[..head_end]).to_string();
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(
        head.contains(&format!("Content-Length: {SIZE}\r\n")),
        "{head}"
    );
    assert_eq!(got.len() - head_end, SIZE, "{model}: body length");
    assert!(got[head_end..] == content[..], "{model}: body differs");
    // The head went out before SIGTERM (so it could not say close); the
    // connection is closed once the response is complete.
    assert!(is_closed(&mut s, WAIT), "{model} kept the connection open");
    drop(s);
    assert_eq!(server.terminate(), Some(0), "{model} exit status");
}

/// True if a fresh connection gets a 200 within `wait`.
fn served_within(addr: SocketAddr, wait: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, wait) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(wait));
    if s.write_all(b"GET /500B.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// A client that reads too slowly to finish within the grace period does
/// not keep the server alive: it exits soon after the grace period ends.
pub fn sigterm_exit_is_bounded_by_the_grace_period(model: &str) {
    const SIZE: usize = 64 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.bin"), pattern(SIZE)).unwrap();
    let root = dir.path().to_str().unwrap();
    let mut server = TestServer::start(model, &["--root", root, "--shutdown-grace", "1s"]);
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(16 * 1024).unwrap();
    sock.connect(&server.addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 4096];
    assert!(s.read(&mut buf).unwrap() > 0);
    let stopped = Instant::now();
    assert!(send_signal(server.pid(), 15));
    // Keep reading, slowly: ~1 MB/s would need a minute for the file.
    let mut exited = None;
    while stopped.elapsed() < Duration::from_secs(15) {
        if let Ok(Some(status)) = server.child.try_wait() {
            exited = Some(status);
            break;
        }
        if matches!(s.read(&mut buf), Ok(0) | Err(_)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(4));
    }
    let status = exited.unwrap_or_else(|| panic!("{model} still running 15 s after SIGTERM"));
    assert!(
        stopped.elapsed() >= Duration::from_millis(900),
        "{model} cut the download before the grace period ended"
    );
    assert_eq!(status.code(), Some(0), "{model} exit status");
}

/// Keep-alive clients sending back to back while SIGTERM arrives: every
/// request sent is answered (the last ones with `Connection: close`), or
/// the connection is closed before the request could be read. Returns the
/// number of requests that got neither an answer nor a clean close.
fn keep_alive_load_through_sigterm(server: &mut TestServer, clients: usize) -> (usize, usize) {
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (stop, answered) = (stop.clone(), answered.clone());
            std::thread::spawn(move || -> usize {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(WAIT)).unwrap();
                let until = Instant::now() + Duration::from_secs(20);
                while Instant::now() < until {
                    if s.write_all(b"GET /bytes/100 HTTP/1.1\r\nHost: t\r\n\r\n")
                        .is_err()
                    {
                        return 1;
                    }
                    match read_response(&mut s, false) {
                        Ok(r) if r.status == 200 && r.body.len() == 100 => {
                            answered.fetch_add(1, Ordering::Relaxed);
                            if r.header("connection") == Some("close") {
                                return 0;
                            }
                        }
                        // EOF or reset with a request unanswered.
                        _ => return 1,
                    }
                    if stop.load(Ordering::Relaxed) {
                        return 0;
                    }
                }
                0
            })
        })
        .collect();
    assert!(wait_until(WAIT, || answered.load(Ordering::Relaxed) >= 200));
    assert!(send_signal(server.pid(), 15));
    let lost: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(server.terminate(), Some(0));
    (lost, answered.load(Ordering::Relaxed))
}

/// Regression: at SIGTERM every model closed keep-alive connections the
/// moment they were idle, without reading: a request the client had just
/// sent was reset unread, so clients under load lost their last request.
/// Now an idle connection is closed only after a read tick finds nothing.
pub fn regression_sigterm_reset_requests_in_flight_on_keep_alive_connections(model: &str) {
    let mut server = TestServer::start(model, &["--workers", "4"]);
    // The iterative server serves one connection; a second would wait in
    // the listen queue, which no model can answer after it stops accepting.
    let clients = if model == "iterative" { 1 } else { 3 };
    let (lost, answered) = keep_alive_load_through_sigterm(&mut server, clients);
    assert_eq!(
        lost, 0,
        "{model}: {lost} requests lost, {answered} answered"
    );
}

/// Regression: connections accepted into the thread pool's queue before
/// SIGTERM were closed unread when a worker took them after it.
#[test]
fn regression_sigterm_dropped_connections_queued_in_the_pool() {
    let mut server = TestServer::start("thread-pool", &["--workers", "1"]);
    let mut slow = server.connect();
    slow.write_all(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    let mut queued: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = server.connect();
            s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    assert!(send_signal(server.pid(), 15));
    std::thread::sleep(Duration::from_millis(200));
    slow.write_all(b"\r\n").unwrap();
    let r = read_response(&mut slow, false).unwrap();
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    for (i, s) in queued.iter_mut().enumerate() {
        let r = read_response(s, false).unwrap_or_else(|e| panic!("queued {i}: {e}"));
        assert_eq!((r.status, &r.body[..]), (200, &b"ab"[..]), "queued {i}");
        assert_eq!(r.header("connection"), Some("close"));
    }
    assert_eq!(server.terminate(), Some(0));
}

/// Regression: a prefork worker forked just after SIGTERM reached the
/// parent cleared the inherited signal flag, so it could miss the SIGTERM
/// the parent then sent it; the parent waited out the whole grace period
/// (about one start in three). Every model must stop promptly when told
/// to stop while it is starting.
pub fn regression_sigterm_during_startup_waited_out_the_grace_period(model: &str) {
    let rounds = if model == "prefork" { 12 } else { 2 };
    for round in 0..rounds {
        let mut server = TestServer::start(model, &["--workers", "8", "--shutdown-grace", "20s"]);
        let start = Instant::now();
        assert_eq!(server.terminate(), Some(0), "{model} round {round}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{model} round {round}: took {:?} to stop with nothing in flight",
            start.elapsed()
        );
    }
}

/// A connection closed by its body's timeout (408, most of the body
/// unread) is gone once closed: SIGTERM then ends the server at once
/// rather than waiting out the grace period for it. io-uring now removes
/// such a connection where its last completion is handled, no longer in a
/// pass of its own.
pub fn a_timed_out_body_leaves_nothing_for_sigterm_to_wait_for(model: &str) {
    let mut server = TestServer::start(
        model,
        &[
            "--body-timeout",
            "1s",
            "--min-body-rate",
            "0",
            "--shutdown-grace",
            "20s",
        ],
    );
    let mut s = server.connect();
    s.set_read_timeout(Some(WAIT)).unwrap();
    // A body that stops after 10 of its 100,000 bytes: answered 408 when
    // it has paused for the body timeout, with most of it unread.
    s.write_all(
        b"POST /status/200 HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n0123456789",
    )
    .unwrap();
    let resp = read_response(&mut s, false).expect("a response to the stalled body");
    assert_eq!(resp.status, 408, "{model}");
    // The server lingers for what the client may still send, then closes.
    let t = Instant::now();
    let mut buf = [0u8; 1024];
    while !matches!(s.read(&mut buf), Ok(0) | Err(_)) {}
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "{model} kept the connection past its linger"
    );
    let stopped = Instant::now();
    assert!(send_signal(server.pid(), 15));
    while stopped.elapsed() < Duration::from_secs(15) {
        if server.child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{model} waited {:?} after SIGTERM with no connection left",
        stopped.elapsed()
    );
}
