//! What `/echo` holds in memory (issue 19 item 2): a body is held up to
//! 64 KiB and then streamed back as it is read. 100 connections with
//! unfinished 8 MiB bodies must leave the server's peak RSS (VmHWM, summed
//! over its processes for prefork) under 300 MB on every model, and every
//! body must still come back whole; the streamed answers are framed right.

use crate::common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use common::*;

per_model!(
    regression_echo_held_every_unfinished_body_in_memory,
    echo_streams_bodies_past_its_hold,
);

/// Connections holding a body at once: the target.
const CONNS: usize = 100;
/// Each body's length: `--max-body`'s default, the largest `/echo` takes.
const BODY: usize = 8 * 1024 * 1024;
/// What the hold phase sends of each body at most. A server that read and
/// held bodies would hold this much each, past `RSS_LIMIT_KB` with
/// `CONNS` of them; a server that streams leaves it in kernel buffers,
/// and the whole body (800 MiB over 100 connections) held there puts the
/// machine's TCP memory under pressure: the kernel then drops loopback
/// segments, and a connection stalled in retransmission backoff for 30 s
/// is closed by the server's timeout.
const HOLD: usize = 4 * 1024 * 1024;
/// The bound on the server's RSS with all of them held.
const RSS_LIMIT_KB: u64 = 300 * 1024;
/// Client socket buffers: small, so what the kernel holds on the client's
/// side does not hide how much the server reads (and so 100 connections do
/// not pin gigabytes of kernel memory on a shared test machine).
const CLIENT_SOCK_BUF: usize = 64 * 1024;
/// The hold phase ends when no connection could send anything for this
/// long: everything the server would read has been read.
const STALL: Duration = Duration::from_millis(1500);
/// Bound on each phase, so a broken server fails the test instead of
/// hanging it.
const PHASE_LIMIT: Duration = Duration::from_secs(120);

/// The byte at `pos` of connection `i`'s body: differs per connection and
/// position, so a mixed-up or shifted echo shows.
fn pattern(i: usize, pos: usize) -> u8 {
    (pos.wrapping_mul(31) ^ i.wrapping_mul(7)) as u8
}

/// One client connection: what it has sent and what it has read back.
struct Client {
    s: TcpStream,
    sent: usize,
    head: Vec<u8>,
    /// Body bytes of the response read and checked so far.
    got: usize,
    /// The response's Content-Length once its head is read.
    len: Option<usize>,
    done: bool,
}

impl Client {
    fn connect(server: &TestServer) -> Client {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        // Before connecting, so the window scale is chosen for them.
        sock.set_recv_buffer_size(CLIENT_SOCK_BUF).unwrap();
        sock.set_send_buffer_size(CLIENT_SOCK_BUF).unwrap();
        sock.connect(&server.addr.into()).expect("connect");
        let mut s: TcpStream = sock.into();
        let head = format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY}\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        s.set_nonblocking(true).unwrap();
        Client {
            s,
            sent: 0,
            head: Vec::new(),
            got: 0,
            len: None,
            done: false,
        }
    }

    /// Writes body bytes up to `upto`; returns how many went out.
    fn send(&mut self, i: usize, upto: usize) -> usize {
        let mut buf = [0u8; 16 * 1024];
        let mut total = 0;
        while self.sent < upto {
            let n = (upto - self.sent).min(buf.len());
            for (k, b) in buf[..n].iter_mut().enumerate() {
                *b = pattern(i, self.sent + k);
            }
            match self.s.write(&buf[..n]) {
                Ok(w) => {
                    self.sent += w;
                    total += w;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("connection {i}: write after {} bytes: {e}", self.sent),
            }
        }
        total
    }

    /// Reads what has arrived of the response, checking it.
    fn receive(&mut self, i: usize) {
        let mut buf = [0u8; 64 * 1024];
        while !self.done {
            let n = match self.s.read(&mut buf) {
                Ok(0) => panic!("connection {i}: closed after {} body bytes", self.got),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => panic!("connection {i}: read: {e}"),
            };
            if self.len.is_none() {
                self.head.extend_from_slice(&buf[..n]);
                let Some(end) = self.head.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&self.head[..end]).to_string();
                assert!(head.starts_with("HTTP/1.1 200 "), "connection {i}: {head}");
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_string())
                    })
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("connection {i}: no Content-Length in {head}"));
                assert_eq!(len, BODY, "connection {i}");
                self.len = Some(len);
                let rest = self.head.split_off(end + 4);
                self.check(i, &rest);
                continue;
            }
            self.check(i, &buf[..n]);
        }
    }

    fn check(&mut self, i: usize, body: &[u8]) {
        for (k, &b) in body.iter().enumerate() {
            let pos = self.got + k;
            assert!(pos < BODY, "connection {i}: more than {BODY} bytes echoed");
            assert_eq!(b, pattern(i, pos), "connection {i}: byte {pos} differs");
        }
        self.got += body.len();
        if self.got == BODY {
            self.done = true;
        }
    }
}

/// Peak resident set of the server and its child processes, in KiB.
fn peak_rss_kb(pid: i32) -> u64 {
    std::iter::once(pid)
        .chain(descendants(pid))
        .map(|p| {
            std::fs::read_to_string(format!("/proc/{p}/status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                })
                .unwrap_or(0)
        })
        .sum()
}

/// Waits (bounded) until one of the sockets is ready for `events`.
fn poll_all(clients: &[Client], events: i16, wait: Duration) {
    let mut fds: Vec<libc::pollfd> = clients
        .iter()
        .filter(|c| !c.done)
        .map(|c| libc::pollfd {
            fd: c.s.as_raw_fd(),
            events,
            revents: 0,
        })
        .collect();
    // SAFETY: the pointer and length describe `fds`, which outlives the
    // call; every descriptor belongs to a live TcpStream in `clients`.
    unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            wait.as_millis() as i32,
        )
    };
}

fn regression_echo_held_every_unfinished_body_in_memory(model: &str) {
    let _turn = socket_memory_turn();
    let server = TestServer::start(model, &[]);
    let baseline = peak_rss_kb(server.pid());
    let mut clients: Vec<Client> = (0..CONNS).map(|_| Client::connect(&server)).collect();

    // Hold: the first `HOLD` bytes of every body sent, the responses not
    // read; the clients send until the server takes nothing more.
    let started = Instant::now();
    let mut last_progress = Instant::now();
    while last_progress.elapsed() < STALL && started.elapsed() < PHASE_LIMIT {
        let mut moved = 0;
        for (i, c) in clients.iter_mut().enumerate() {
            moved += c.send(i, HOLD);
        }
        if moved > 0 {
            last_progress = Instant::now();
        }
        if clients.iter().all(|c| c.sent == HOLD) {
            break;
        }
        poll_all(&clients, libc::POLLOUT, Duration::from_millis(100));
    }
    let held: usize = clients.iter().map(|c| c.sent).sum();
    let held_peak = peak_rss_kb(server.pid());

    // Finish: the rest of every body, every response read and checked.
    let started = Instant::now();
    while !clients.iter().all(|c| c.done) {
        assert!(
            started.elapsed() < PHASE_LIMIT,
            "{model}: {} of {CONNS} echoes complete after {PHASE_LIMIT:?}",
            clients.iter().filter(|c| c.done).count()
        );
        for (i, c) in clients.iter_mut().enumerate() {
            if !c.done {
                c.send(i, BODY);
                c.receive(i);
                if c.done {
                    // Frees the worker of a blocking model for the next.
                    let _ = c.s.shutdown(std::net::Shutdown::Both);
                }
            }
        }
        poll_all(
            &clients,
            libc::POLLIN | libc::POLLOUT,
            Duration::from_millis(100),
        );
    }
    let peak = peak_rss_kb(server.pid());
    eprintln!(
        "{model}: baseline {baseline} KiB, {} MiB of bodies held -> peak {held_peak} KiB, \
         after all {CONNS} echoes {peak} KiB",
        held >> 20
    );
    assert!(
        peak < RSS_LIMIT_KB,
        "{model}: peak RSS {peak} KiB with {CONNS} unfinished {BODY}-byte /echo bodies \
         (limit {RSS_LIMIT_KB} KiB; baseline {baseline} KiB)"
    );
    assert_alive(&server);
}

/// A chunked request body of `len` bytes in 1000-byte chunks.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    for piece in body.chunks(1000) {
        raw.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        raw.extend_from_slice(piece);
        raw.extend_from_slice(b"\r\n");
    }
    raw
}

fn echo_streams_bodies_past_its_hold(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1M"]);
    let body: Vec<u8> = (0..300_000).map(|i| pattern(1, i)).collect();

    // Past the hold with a Content-Length: the same length back, and the
    // connection stays usable.
    let mut s = server.connect();
    let mut raw = format!(
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    s.write_all(&raw).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.header("content-length"), Some("300000"));
    assert!(r.body == body, "Content-Length echo differs");
    s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().body, b"ab");

    // Chunked past the hold: chunked back, and a pipelined request behind
    // it is answered after it.
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(&chunked(&body));
    raw.extend_from_slice(b"0\r\n\r\nGET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\n");
    s.write_all(&raw).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-length"), None);
    assert!(r.body == body, "chunked echo differs");
    assert_eq!(read_response(&mut s, false).unwrap().body, b"abc");

    // Within the hold a chunked body is answered whole.
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(
        (r.header("content-length"), &r.body[..]),
        (Some("3"), &b"abc"[..])
    );

    // A failure after the response started cannot be answered: a bad chunk
    // (and, with --max-body 1M, a body crossing the limit) cuts the
    // response short and closes the connection instead.
    for tail in [&b"zz\r\n"[..], b"100000\r\n"] {
        let mut s = server.connect();
        let mut raw =
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        raw.extend_from_slice(&chunked(&body));
        raw.extend_from_slice(tail);
        s.write_all(&raw).unwrap();
        let err = read_response(&mut s, false).expect_err("a cut-short response");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        assert!(is_closed(&mut s, Duration::from_secs(5)));
    }
    assert_alive(&server);

    // A body that stops past the hold times out without a 408 glued to
    // the body already sent: the connection just closes.
    let server = TestServer::start(model, &["--body-timeout", "1s"]);
    let mut s = server.connect();
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 300000\r\n\r\n".to_vec();
    raw.extend_from_slice(&body[..100_000]);
    s.write_all(&raw).unwrap();
    let asked = Instant::now();
    let got = read_rest(&mut s, Duration::from_secs(10));
    // read_rest returns at EOF, or after 10 s of silence if left open.
    assert!(asked.elapsed() < Duration::from_secs(8), "left open");
    let end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    assert!(
        got.starts_with(b"HTTP/1.1 200 "),
        "{:?}",
        String::from_utf8_lossy(&got[..end])
    );
    assert!(
        got[end..] == body[..100_000],
        "{} bytes after the head",
        got.len() - end
    );
}

/// `/bytes/N` past 1 MiB copied its pattern into a buffer of N bytes per
/// request: 20 clients asking for 64 MiB and reading slowly made the
/// server allocate 20 x 64 MiB. The answers now share the one pattern.
#[test]
fn regression_bytes_n_copied_its_answer_per_request() {
    const CLIENTS: usize = 20;
    const LEN: usize = 64 * 1024 * 1024;
    let server = TestServer::start("event-loop", &[]);
    let mut streams: Vec<TcpStream> = (0..CLIENTS)
        .map(|_| {
            let mut s = server.connect();
            write!(s, "GET /bytes/{LEN} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            s
        })
        .collect();
    // Every request answered (its head arrived), none read further.
    for s in &mut streams {
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
    }
    let peak = peak_rss_kb(server.pid());
    eprintln!("{CLIENTS} answers of {LEN} bytes queued: peak {peak} KiB");
    assert!(
        peak < 100 * 1024,
        "peak RSS {peak} KiB with {CLIENTS} answers of {LEN} bytes queued"
    );
    // And an answer is whole: the pattern, repeated.
    let r = exchange(
        &server,
        format!("GET /bytes/{LEN} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
    );
    assert_eq!((r.status, r.body.len()), (200, LEN));
    let unit = 1024 * 1024;
    assert!(r.body[..unit].starts_with(b"abcdefghijklmnopqrstuvwxyzab"));
    assert!(r.body.chunks(unit).all(|c| c == &r.body[..c.len()]));
}
