//! The connection: keep-alive per HTTP version, the Date and Server
//! headers, pipelined requests answered in order (even past the read
//! buffer), and a closing response that carries its FIN.

use std::io::Write;
use std::time::{Duration, SystemTime};

use crate::common::*;

use super::support::{get, one, show, LONG};

/// The client side's TCP_INFO: connection state and segments received.
fn tcp_info(s: &std::net::TcpStream) -> libc::tcp_info {
    use std::os::fd::AsRawFd;
    // SAFETY: tcp_info is plain data for which all-zero bytes are valid.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which outlives the call.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    info
}

/// A response after which the server closes leaves with the FIN in its
/// last segment, as nginx's corked close sends it: one segment and one
/// client wake-up fewer per connection, which E3 and row 2 of the
/// performance suite pay 10,000 times. Before the client closes it has
/// then received the SYN-ACK, the ACK of its request and the response
/// with the FIN: three segments (two if the ACK rode on the response);
/// a FIN of its own made four.
pub fn a_closing_response_carries_its_fin(model: &str) {
    let server = TestServer::start(model, &[]);
    for raw in [
        &b"GET /500B.html HTTP/1.0\r\n\r\n"[..],
        b"GET /bytes/20000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /nothing-here HTTP/1.0\r\n\r\n",
        b"BREW / HTTP/1.1\r\nHost: t\r\n\r\n",
    ] {
        let mut s = server.connect();
        s.write_all(raw).unwrap();
        let r = read_response(&mut s, false)
            .unwrap_or_else(|e| panic!("no response to {:?}: {e}", show(raw)));
        assert_eq!(r.header("connection"), Some("close"), "{:?}", show(raw));
        assert!(is_closed(&mut s, LONG), "{:?} left open", show(raw));
        let info = tcp_info(&s);
        // Linux's TCP_CLOSE_WAIT (include/net/tcp_states.h): the FIN is in.
        assert_eq!(info.tcpi_state, 8, "{:?}", show(raw));
        assert!(
            info.tcpi_segs_in <= 3,
            "{:?}: {} segments in, the FIN came apart from the response",
            show(raw),
            info.tcpi_segs_in
        );
    }
}

pub fn keep_alive_and_versions(model: &str) {
    let server = TestServer::start(model, &[]);

    // HTTP/1.1 keeps the connection open by default and says nothing.
    let mut s = server.connect();
    for n in [1, 2, 3] {
        s.write_all(&get(&format!("/bytes/{n}"))).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!((r.status, r.body.len()), (200, n));
        assert_eq!(r.header("connection"), None);
    }
    // `Connection: close` on 1.1 is answered with close, then EOF.
    s.write_all(b"GET /bytes/4 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body.len()), (200, 4));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(is_closed(&mut s, LONG));

    // HTTP/1.0 without keep-alive closes; Host is optional in 1.0.
    let mut s = server.connect();
    s.write_all(b"GET /bytes/5 HTTP/1.0\r\n\r\n").unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body.len()), (200, 5));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(is_closed(&mut s, LONG));

    // HTTP/1.0 with `Connection: keep-alive` is answered `Connection:
    // keep-alive` and the connection serves another request.
    let mut s = server.connect();
    for _ in 0..2 {
        s.write_all(b"GET /bytes/6 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
            .unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!((r.status, r.body.len()), (200, 6));
        assert_eq!(r.header("connection"), Some("keep-alive"));
    }
    s.write_all(b"GET /bytes/7 HTTP/1.0\r\n\r\n").unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.header("connection"), Some("close"));
    assert!(is_closed(&mut s, LONG));

    // `Connection: close` among other tokens still closes.
    let mut s = server.connect();
    s.write_all(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\nConnection: te, Close\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.header("connection"), Some("close"));
    assert!(is_closed(&mut s, LONG));

    // Empty lines before a request line are ignored (RFC 9112 2.2), and
    // bare LF line endings are accepted.
    let r = one(&server, b"\r\n\r\nGET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.status, r.body.len()), (200, 2));
    let r = one(&server, b"GET /bytes/2 HTTP/1.1\nHost: t\n\n");
    assert_eq!((r.status, r.body.len()), (200, 2));

    // The embedded docroot.
    for (path, len) in [
        ("/", 1652),
        ("/index.html", 1652),
        ("/500B.html", 500),
        ("/20KB.html", 20480),
    ] {
        let r = one(&server, &get(path));
        assert_eq!((r.status, r.body.len()), (200, len), "{path}");
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    }
    assert_eq!(one(&server, &get("/nope.html")).status, 404);
    assert_alive(&server);
}

pub fn date_and_server_headers(model: &str) {
    let server = TestServer::start(model, &[]);
    for raw in [
        get("/"),
        get("/missing"),
        b"GET / HTTP/1.1\r\n\r\n".to_vec(), // an error response too
    ] {
        let r = one(&server, &raw);
        let server_hdr = r.header("server").expect("Server header");
        assert!(server_hdr.starts_with("loadlab/"), "{server_hdr}");
        let date = r.header("date").expect("Date header");
        assert_eq!(date.len(), 29, "IMF-fixdate: {date}");
        assert!(date.ends_with(" GMT"), "{date}");
        let t = httpdate::parse_http_date(date).expect("Date parses");
        let skew = SystemTime::now()
            .duration_since(t)
            .unwrap_or_else(|e| e.duration());
        assert!(
            skew < Duration::from_secs(60),
            "Date {date} is off by {skew:?}"
        );
    }
}

pub fn pipelined_requests_answered_in_order(model: &str) {
    let server = TestServer::start(model, &[]);

    // Mixed methods and framings in one write, including a response larger
    // than the output high-water mark in the middle.
    let mut s = server.connect();
    let batch = concat!(
        "GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\n",
        "HEAD /500B.html HTTP/1.1\r\nHost: t\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "GET /bytes/300000 HTTP/1.1\r\nHost: t\r\n\r\n",
        "GET /status/404 HTTP/1.1\r\nHost: t\r\n\r\n",
        "GET /bytes/7 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "GET /bytes/8 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    s.write_all(batch.as_bytes()).unwrap();
    let expect: [(bool, u16, usize, &[u8]); 7] = [
        (false, 200, 3, b"abc"),
        (true, 200, 0, b""),
        (false, 200, 5, b"hello"),
        (false, 200, 3, b"abc"),
        (false, 200, 300_000, b"abcdefghij"),
        (false, 404, 14, b"404 Not Found"),
        (false, 200, 7, b"abcdefg"),
    ];
    for (i, (head, status, len, prefix)) in expect.into_iter().enumerate() {
        let r = read_response(&mut s, head).unwrap_or_else(|e| panic!("response {i}: {e}"));
        assert_eq!((r.status, r.body.len()), (status, len), "response {i}");
        assert!(
            r.body.starts_with(prefix),
            "response {i}: {:?}",
            show(&r.body)
        );
        if head {
            assert_eq!(r.header("content-length"), Some("500"));
        }
    }
    // The request after `Connection: close` is not answered.
    assert_eq!(read_rest(&mut s, LONG), b"");

    // Many small requests in one write, more than one read buffer holds.
    let mut s = server.connect();
    let mut batch = Vec::new();
    for i in 0..300 {
        batch.extend_from_slice(
            format!("GET /bytes/{i} HTTP/1.1\r\nHost: t\r\nX-Pad: {i:0>40}\r\n\r\n").as_bytes(),
        );
    }
    s.write_all(&batch).unwrap();
    for i in 0..300 {
        let r = read_response(&mut s, false).unwrap();
        assert_eq!((r.status, r.body.len()), (200, i), "response {i}");
    }

    // HTTP/1.0 keep-alive requests pipelined; the last one closes.
    let mut s = server.connect();
    s.write_all(
        b"GET /bytes/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /bytes/2 HTTP/1.0\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(
        (r.body.len(), r.header("connection")),
        (1, Some("keep-alive"))
    );
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.body.len(), r.header("connection")), (2, Some("close")));
    assert!(is_closed(&mut s, LONG));

    // A good request, then garbage: the first is answered, then 400.
    let mut s = server.connect();
    s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\nGET /x HTTP/1.1\r\nHost : t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body.len()), (200, 2));
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 400);
    assert!(is_closed(&mut s, LONG));
    assert_alive(&server);
}

/// Many pipelined requests whose responses fill the output queue: the
/// server stops decoding while output backs up, and the requests it has
/// not decoded yet pile up in its read buffer. They must all be answered.
pub fn pipelined_requests_beyond_the_read_buffer(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    const N: usize = 1000;
    let req = b"GET /bytes/20000 HTTP/1.1\r\nHost: t\r\n\r\n";
    let mut w = s.try_clone().unwrap();
    // Written from another thread: the server reads only as it answers.
    let writer = std::thread::spawn(move || {
        let batch = req.repeat(N);
        w.write_all(&batch).unwrap();
    });
    for i in 0..N {
        let r = read_response(&mut s, false).unwrap_or_else(|e| panic!("response {i}: {e}"));
        assert_eq!((r.status, r.body.len()), (200, 20_000), "response {i}");
        assert_eq!(r.header("connection"), None, "response {i}");
    }
    writer.join().unwrap();
    s.write_all(&get("/bytes/1")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().body, b"a");
}
