//! One conformance suite of raw-socket cases, run against every model (as
//! ripgrep runs each test per regex engine): each group below becomes one
//! `#[test]` per model, e.g. `event_loop::malformed_requests_get_400`.
//!
//! Every error case checks the status, that the connection is closed
//! afterwards, and that the server still answers a good request.

#[macro_use]
mod common;

use std::io::Write;
use std::time::{Duration, SystemTime};

use common::*;

per_model!(
    keep_alive_and_versions,
    date_and_server_headers,
    pipelined_requests_answered_in_order,
    pipelined_requests_beyond_the_read_buffer,
    head_requests,
    expect_100_continue,
    request_bodies,
    absolute_form_targets,
    request_line_limits,
    header_section_limits,
    body_limit_413,
    malformed_requests_get_400,
    incomplete_body_at_eof_gets_400,
    unsupported_codings_methods_versions,
    unknown_known_methods_keep_the_connection,
    header_timeout_408,
    idle_and_body_timeouts,
    static_files_from_a_root,
    path_traversal_never_leaks,
    regression_trickled_head_held_a_blocking_worker_for_ever,
    regression_bare_cr_split_across_reads_was_accepted,
    regression_fresh_connection_closed_unanswered_when_others_waited,
    regression_name_too_long_was_a_500,
    a_closing_response_carries_its_fin,
    regression_error_answers_to_head_carried_a_body,
    regression_205_carried_content_and_an_unknown_reason,
    regression_malformed_line_waited_for_the_header_timeout,
    regression_http_1_2_was_505,
);

const LONG: Duration = Duration::from_secs(5);

fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 200 {
        format!("{}... ({} bytes)", &s[..200], b.len())
    } else {
        s.into_owned()
    }
}

/// Sends `raw` on a fresh connection and expects `status`, a
/// `Connection: close`, the connection closed, and the server alive.
fn expect_error(server: &TestServer, raw: &[u8], status: u16) {
    let mut s = server.connect();
    write_ignoring_errors(&mut s, raw);
    let r = read_response(&mut s, false)
        .unwrap_or_else(|e| panic!("no response to {:?}: {e}", show(raw)));
    assert_eq!(
        r.status,
        status,
        "request {:?} answered {:?}",
        show(raw),
        show(&r.body)
    );
    assert_eq!(r.header("connection"), Some("close"), "{:?}", show(raw));
    assert!(
        is_closed(&mut s, LONG),
        "connection left open after {:?}",
        show(raw)
    );
    assert_alive(server);
}

/// Sends `raw` on a fresh connection and returns the first response.
fn one(server: &TestServer, raw: &[u8]) -> RawResponse {
    let mut s = server.connect();
    s.write_all(raw).unwrap();
    read_response(&mut s, raw.starts_with(b"HEAD "))
        .unwrap_or_else(|e| panic!("no response to {:?}: {e}", show(raw)))
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}

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
fn a_closing_response_carries_its_fin(model: &str) {
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

fn keep_alive_and_versions(model: &str) {
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

fn date_and_server_headers(model: &str) {
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

fn pipelined_requests_answered_in_order(model: &str) {
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
fn pipelined_requests_beyond_the_read_buffer(model: &str) {
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

fn head_requests(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    for (path, len) in [("/", "1652"), ("/bytes/10", "10"), ("/20KB.html", "20480")] {
        s.write_all(format!("HEAD {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        let r = read_response(&mut s, true).unwrap();
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-length"), Some(len), "{path}");
    }
    // No body followed the HEAD responses: the next response parses.
    s.write_all(&get("/bytes/3")).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"abc".to_vec()));
}

fn expect_100_continue(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);

    // Interim 100 before the body is sent, then the final response.
    let mut s = server.connect();
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 100);
    s.write_all(b"hello").unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"hello".to_vec()));
    // The connection stays usable.
    s.write_all(&get("/bytes/2")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().body, b"ab");

    // Chunked with Expect.
    let mut s = server.connect();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 100);
    s.write_all(b"2\r\nhi\r\n0\r\n\r\n").unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"hi".to_vec()));

    // Too large: the final 413 comes instead of 100, and the connection
    // closes because the body was never read.
    expect_error(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n",
        413,
    );

    // A route that answers without reading the body sends no 100 either.
    let mut s = server.connect();
    s.write_all(
        b"POST /bytes/3 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, &r.body[..]), (200, &b"abc"[..]));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(is_closed(&mut s, LONG));

    // HTTP/1.0 clients do not know 100: the expectation is ignored.
    let mut s = server.connect();
    s.write_all(b"POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"ok".to_vec()));
    assert_alive(&server);
}

fn request_bodies(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    let mut send = |raw: &[u8], want: &[u8]| {
        s.write_all(raw).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 200, "{:?}", show(raw));
        assert_eq!(r.body, want, "{:?}", show(raw));
    };
    // Content-Length, including a repeated identical value.
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world",
        b"hello world",
    );
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\n\r\nabc",
        b"abc",
    );
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
        b"",
    );
    // Chunked with extensions, upper- and lower-case hex, and trailers.
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5;name=value\r\nhello\r\n1 ; quoted=\"a;b\"\r\n \r\nA\r\n0123456789\r\na\r\nabcdefghij\r\n\
          0;last\r\nX-Trailer: 1\r\nX-Other: two\r\n\r\n",
        b"hello 0123456789abcdefghij",
    );
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
        b"",
    );
    // A body larger than one read buffer, in many chunks.
    let mut raw = b"PUT /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let mut want = Vec::new();
    for i in 0..200u32 {
        let piece = vec![b'a' + (i % 26) as u8; 1000 + i as usize];
        raw.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        raw.extend_from_slice(&piece);
        raw.extend_from_slice(b"\r\n");
        want.extend_from_slice(&piece);
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    send(&raw, &want);
    // A GET with a body: the body is read and discarded, the connection
    // stays in sync.
    send(
        b"GET /bytes/4 HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nxxxx",
        b"abcd",
    );
    send(
        b"GET /bytes/4 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
        b"abcd",
    );
    send(&get("/bytes/1"), b"a");
}

fn absolute_form_targets(model: &str) {
    let server = TestServer::start(model, &[]);
    for (raw, len) in [
        (
            &b"GET http://example.com/500B.html HTTP/1.1\r\nHost: example.com\r\n\r\n"[..],
            500,
        ),
        (
            b"GET http://example.com:8080/bytes/9?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
            9,
        ),
        (
            b"GET HTTP://EXAMPLE.COM HTTP/1.1\r\nHost: example.com\r\n\r\n",
            1652,
        ),
        (b"GET http://example.com?q HTTP/1.0\r\n\r\n", 1652),
    ] {
        let r = one(&server, raw);
        assert_eq!((r.status, r.body.len()), (200, len), "{:?}", show(raw));
    }
    // Origin-form with a query string.
    let r = one(&server, &get("/500B.html?a=b&c"));
    assert_eq!((r.status, r.body.len()), (200, 500));
    // A target that is none of the forms.
    expect_error(&server, b"GET 500B.html HTTP/1.1\r\nHost: t\r\n\r\n", 400);
}

/// A request line of exactly `len` octets (CRLF not counted).
fn line_of(len: usize) -> Vec<u8> {
    let fixed = "GET /500B.html?".len() + " HTTP/1.1".len();
    let mut line = b"GET /500B.html?".to_vec();
    line.resize(len - " HTTP/1.1".len(), b'a');
    assert!(len > fixed);
    line.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n\r\n");
    line
}

fn request_line_limits(model: &str) {
    let server = TestServer::start(model, &[]);
    for len in [8000, 8192] {
        let r = one(&server, &line_of(len));
        assert_eq!((r.status, r.body.len()), (200, 500), "line of {len}");
    }
    expect_error(&server, &line_of(8193), 414);
    expect_error(&server, &line_of(20_000), 414);
    // A long line with no end at all.
    expect_error(&server, &vec![b'G'; 100_000], 414);
}

fn header_section_limits(model: &str) {
    let server = TestServer::start(model, &[]);
    let with_fields = |n: usize, size: usize| {
        let mut raw = b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n".to_vec();
        for i in 1..n {
            let mut line = format!("X-F{i}: ").into_bytes();
            line.resize(size.max(line.len() + 1), b'v');
            raw.extend_from_slice(&line);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"\r\n");
        raw
    };
    // 100 fields (Host included) are fine, 101 are not.
    assert_eq!(one(&server, &with_fields(100, 10)).status, 200);
    expect_error(&server, &with_fields(101, 10), 431);
    expect_error(&server, &with_fields(1000, 10), 431);
    // A section just under 64 KiB is fine, one over it is not.
    assert_eq!(one(&server, &with_fields(10, 6000)).status, 200);
    expect_error(&server, &with_fields(3, 33_000), 431);
    expect_error(&server, &with_fields(2, 70_000), 431);
    // The longest line and a header section near its limit together fill
    // the largest head buffer; they must still fit.
    let mut raw = line_of(8192);
    raw.truncate(raw.len() - 2);
    let mut field = b"X-Big: ".to_vec();
    field.resize(65_000, b'b');
    raw.extend_from_slice(&field);
    raw.extend_from_slice(b"\r\n\r\n");
    let r = one(&server, &raw);
    assert_eq!((r.status, r.body.len()), (200, 500));
    // Endless header bytes without an end of the section.
    let mut raw = b"GET / HTTP/1.1\r\nHost: t\r\nX-Long: ".to_vec();
    raw.resize(200_000, b'x');
    expect_error(&server, &raw, 431);
}

fn body_limit_413(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);
    let body = vec![b'x'; 1024];
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n".to_vec();
    raw.extend_from_slice(&body);
    let r = one(&server, &raw);
    assert_eq!((r.status, r.body.len()), (200, 1024));

    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n".to_vec();
    raw.extend_from_slice(&[b'x'; 1025]);
    expect_error(&server, &raw, 413);
    // Declared far too large, body never sent.
    expect_error(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000000\r\n\r\n",
        413,
    );
    // Chunked bodies are counted as they arrive.
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        raw.extend_from_slice(b"200\r\n");
        raw.extend_from_slice(&[b'y'; 512]);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    expect_error(&server, &raw, 413);
}

fn malformed_requests_get_400(model: &str) {
    let server = TestServer::start(model, &[]);
    let cases: &[(&str, &[u8])] = &[
        ("missing Host on 1.1", b"GET / HTTP/1.1\r\n\r\n"),
        (
            "duplicate Host",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ),
        (
            "duplicate Host, same value",
            b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
        ),
        (
            "whitespace before colon",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A : b\r\n\r\n",
        ),
        ("whitespace before colon in Host", b"GET / HTTP/1.1\r\nHost : t\r\n\r\n"),
        (
            "obs-fold",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: b\r\n  c\r\n\r\n",
        ),
        (
            "obs-fold with tab",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: b\r\n\tc\r\n\r\n",
        ),
        (
            "bad field name (paren)",
            b"GET / HTTP/1.1\r\nHost: t\r\nX(A): b\r\n\r\n",
        ),
        (
            "bad field name (space)",
            b"GET / HTTP/1.1\r\nHost: t\r\nX A: b\r\n\r\n",
        ),
        ("empty field name", b"GET / HTTP/1.1\r\nHost: t\r\n: b\r\n\r\n"),
        ("field without colon", b"GET / HTTP/1.1\r\nHost: t\r\nXA\r\n\r\n"),
        (
            "NUL in field value",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n",
        ),
        ("NUL in target", b"GET /a\0b HTTP/1.1\r\nHost: t\r\n\r\n"),
        (
            "bare CR in field value",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n",
        ),
        (
            "bare CR ending a field",
            b"GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n\r\n",
        ),
        ("bare CR in request line", b"GET /\r HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("bare CR before request line", b"\rGET / HTTP/1.1\r\nHost: t\r\n\r\n"),
        (
            "Content-Length not a number",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
        ),
        (
            "Content-Length negative",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
        ),
        (
            "Content-Length with plus",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello",
        ),
        (
            "Content-Length empty",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \r\n\r\n",
        ),
        (
            "Content-Length overflow",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        ),
        (
            "Content-Length hex",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0x5\r\n\r\nhello",
        ),
        (
            "conflicting Content-Length fields",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        ),
        (
            "conflicting Content-Length list",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 6\r\n\r\nhello!",
        ),
        (
            "Content-Length with Transfer-Encoding",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "chunked not last",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
        ),
        (
            "chunked twice",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "empty Transfer-Encoding",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: \r\n\r\n",
        ),
        (
            "Transfer-Encoding in HTTP/1.0",
            b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "chunk size not hex",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size with 0x",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size negative",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size empty",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size overflow",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size with space inside",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1 0\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk data without CRLF",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        ),
        (
            "chunk size line with bare LF",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size line too long",
            &[
                &b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;"[..],
                &[b'x'; 10_000][..],
                b"\r\nhello\r\n0\r\n\r\n",
            ]
            .concat(),
        ),
        (
            "bad trailer field",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n",
        ),
        ("malformed version", b"GET / HTTP/1.1x\r\nHost: t\r\n\r\n"),
        ("lowercase version", b"GET / http/1.1\r\nHost: t\r\n\r\n"),
        ("no version", b"GET /\r\n\r\n"),
        ("two spaces", b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("empty method", b" / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("control byte in target", b"GET /a\x01 HTTP/1.1\r\nHost: t\r\n\r\n"),
    ];
    for (what, raw) in cases {
        eprintln!("{what}");
        expect_error(&server, raw, 400);
    }
}

fn incomplete_body_at_eof_gets_400(model: &str) {
    let server = TestServer::start(model, &[]);
    for raw in [
        &b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello"[..],
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
    ] {
        let mut s = server.connect();
        s.write_all(raw).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 400, "{:?}", show(raw));
        assert!(is_closed(&mut s, LONG));
        assert_alive(&server);
    }
    // A head cut short by EOF just ends the connection.
    let mut s = server.connect();
    s.write_all(b"GET / HTTP/1.1\r\nHost").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_rest(&mut s, LONG), b"");
    assert_alive(&server);
}

fn unsupported_codings_methods_versions(model: &str) {
    let server = TestServer::start(model, &[]);
    let cases: &[(&[u8], u16)] = &[
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: foo\r\n\r\n",
            501,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n",
            501,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            501,
        ),
        (b"FOO / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        // Not a proxy: CONNECT is not implemented, whatever its target.
        (
            b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
            501,
        ),
        (b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"get / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"Get / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        // A malformed line is refused when it is complete, not after the
        // header timeout (the regression: 408 ten seconds later).
        (b"GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nno colon here\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: u@host\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: h:8x\r\n\r\n", 400),
        (b"GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET /500B.html#top HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 505),
        (b"GET / HTTP/0.9\r\n\r\n", 505),
    ];
    for (raw, status) in cases {
        expect_error(&server, raw, *status);
    }
}

/// Known methods that no route takes are answered (405 or 501) without
/// ending the connection: they are well-formed requests.
fn unknown_known_methods_keep_the_connection(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    for (raw, status) in [
        (
            &b"PUT / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi"[..],
            405,
        ),
        (b"DELETE /500B.html HTTP/1.1\r\nHost: t\r\n\r\n", 405),
        (b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", 405),
        (b"OPTIONS / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        // The same method gets the same answer on every route: 405 for one
        // the server implements elsewhere, 501 for one it implements nowhere.
        (b"PATCH / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"PATCH /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"PATCH /echo HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"PATCH /files/x HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"OPTIONS /echo HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"TRACE /status/200 HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"DELETE /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n", 405),
        (
            b"PUT /files/ HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
            405,
        ),
        (
            b"POST /500B.html HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi",
            200,
        ),
    ] {
        s.write_all(raw).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, status, "{:?}", show(raw));
        assert_eq!(r.header("connection"), None, "{:?}", show(raw));
        if status == 405 {
            assert!(
                r.header("allow").is_some(),
                "405 names Allow: {:?}",
                show(raw)
            );
        }
    }
    s.write_all(&get("/bytes/2")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().body, b"ab");
}

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

fn header_timeout_408(model: &str) {
    let server = timeout_server(model);
    // A head that stops arriving.
    expect_error(&server, b"GET / HTTP/1.1\r\nHost: t\r\n", 408);
    expect_error(&server, b"G", 408);
}

/// Regression: the blocking models looked at deadlines only when a read
/// timed out, so a head trickling in a byte every 20 ms never timed out and
/// held a worker (or the whole iterative server) for as long as it liked.
fn regression_trickled_head_held_a_blocking_worker_for_ever(model: &str) {
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

/// Regression: a CR that ended one read was skipped as part of an empty
/// line before the request, so "\rGET / ..." was refused when it arrived in
/// one read and accepted when it arrived in two.
fn regression_bare_cr_split_across_reads_was_accepted(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    s.write_all(b"\r").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    write_ignoring_errors(&mut s, b"GET /500B.html HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 400);
    assert!(is_closed(&mut s, LONG));
    // CR LF split the same way is an empty line and is skipped.
    let mut s = server.connect();
    s.write_all(b"\r").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(b"\nGET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"ab".to_vec()));
    assert_alive(&server);
}

/// Regression: a blocking worker with other connections waiting closed a
/// connection that had sent nothing yet after one 100 ms read tick, taking
/// it for an idle keep-alive connection; its request, sent a moment
/// later, got no answer at all. Only connections that have been answered
/// give way early.
fn regression_fresh_connection_closed_unanswered_when_others_waited(model: &str) {
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

fn idle_and_body_timeouts(model: &str) {
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

/// A docroot inside a temp dir, with a secret next to it and symlinks from
/// inside the root to outside it.
struct TraversalRoot {
    _dir: tempfile::TempDir,
    root: String,
}

const SECRET: &str = "TOP-SECRET-must-never-be-served";

fn traversal_root() -> TraversalRoot {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("public");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("index.html"), "<p>index</p>").unwrap();
    std::fs::write(root.join("a.txt"), "plain file").unwrap();
    // What `assert_alive` asks for.
    std::fs::write(root.join("500B.html"), [b'x'; 500]).unwrap();
    std::fs::write(root.join("sub/b.txt"), "nested file").unwrap();
    std::fs::write(dir.path().join("secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("rel.txt")).unwrap();
    // A symlink that stays inside the root is fine.
    std::os::unix::fs::symlink("a.txt", root.join("inside.txt")).unwrap();
    TraversalRoot {
        root: root.to_string_lossy().into_owned(),
        _dir: dir,
    }
}

/// Files under --root: small ones from memory, large ones with sendfile,
/// HEAD without a body, conditional GET, all on one keep-alive connection.
fn static_files_from_a_root(model: &str) {
    let tr = traversal_root();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(std::path::Path::new(&tr.root).join("big.bin"), &big).unwrap();
    let server = TestServer::start(model, &["--root", &tr.root]);
    let mut s = server.connect();
    s.write_all(b"HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, true).unwrap();
    assert_eq!(
        (r.status, r.header("content-length")),
        (200, Some("300000"))
    );
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    // A large file and a small one pipelined behind it.
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == big, "big.bin differs");
    let etag = r.header("etag").expect("ETag").to_string();
    assert!(r.header("last-modified").is_some());
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!((r.status, r.body), (200, b"plain file".to_vec()));
    // If-None-Match with the current ETag: 304, no body.
    s.write_all(
        format!("GET /big.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 304);
    // The same condition on a POST is a failed precondition, not a 304.
    s.write_all(
        format!(
            "POST /big.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\nContent-Length: 0\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 412);
    s.write_all(&get("/sub/b.txt")).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"nested file".to_vec()));
    s.write_all(&get("/missing.txt")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 404);
}

/// Regression: a path segment longer than the filesystem allows (NAME_MAX,
/// 255 bytes) made the lookup fail with ENAMETOOLONG, answered 500.
fn regression_name_too_long_was_a_500(model: &str) {
    let tr = traversal_root();
    let server = TestServer::start(model, &["--root", &tr.root]);
    let mut s = server.connect();
    for name in ["a".repeat(300), format!("sub/{}", "b".repeat(5000))] {
        s.write_all(&get(&format!("/{name}"))).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 404, "a name of {} bytes", name.len());
    }
}

fn path_traversal_never_leaks(model: &str) {
    let tr = traversal_root();
    let server = TestServer::start(model, &["--root", &tr.root]);
    for (path, body) in [
        ("/a.txt", "plain file"),
        ("/sub/b.txt", "nested file"),
        ("/sub/../a.txt", ""),
        ("/inside.txt", "plain file"),
        ("/%61.txt", "plain file"),
        ("/", "<p>index</p>"),
    ] {
        let r = one(&server, &get(path));
        if body.is_empty() {
            // `..` is refused even when it would stay inside the root.
            assert!(matches!(r.status, 400 | 403 | 404), "{path}: {}", r.status);
        } else {
            assert_eq!((r.status, show(&r.body)), (200, body.to_string()), "{path}");
        }
    }
    let targets = [
        "/../secret.txt",
        "/../../secret.txt",
        "/sub/../../secret.txt",
        "/./../secret.txt",
        "//../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/.%2e/secret.txt",
        "/%2e./secret.txt",
        "/..%2fsecret.txt",
        "/..%2Fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "/sub/..%2f..%2fsecret.txt",
        "/%252e%252e/secret.txt",
        "/%252e%252e%252fsecret.txt",
        "/%c0%ae%c0%ae/secret.txt",
        "/%c0%ae%c0%ae%c0%afsecret.txt",
        "/%e0%80%ae%e0%80%ae/secret.txt",
        "/..\\secret.txt",
        "/sub\\..\\..\\secret.txt",
        "/%5c..%5csecret.txt",
        "/..%5csecret.txt",
        "/secret.txt%00",
        "/..%00/secret.txt",
        "/a.txt%00/../../secret.txt",
        "/link.txt",
        "/rel.txt",
        "/up/secret.txt",
        "/up/public/../secret.txt",
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    ];
    for t in targets {
        for raw in [
            format!("GET {t} HTTP/1.1\r\nHost: t\r\n\r\n"),
            format!("GET http://t{t} HTTP/1.1\r\nHost: t\r\n\r\n"),
            format!("HEAD {t} HTTP/1.1\r\nHost: t\r\n\r\n"),
        ] {
            let mut s = server.connect();
            s.write_all(raw.as_bytes()).unwrap();
            let r = read_response(&mut s, raw.starts_with("HEAD"))
                .unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert!(
                matches!(r.status, 400 | 403 | 404),
                "{raw:?} answered {}",
                r.status
            );
            assert!(
                !String::from_utf8_lossy(&r.body).contains(SECRET),
                "{raw:?} leaked the secret"
            );
        }
        // After each refused form the server still serves a good request.
        let ok = one(&server, &get("/a.txt"));
        assert_eq!(
            (ok.status, show(&ok.body)),
            (200, "plain file".into()),
            "after {t}"
        );
    }
    // A raw NUL in the target is refused by the parser.
    expect_error(
        &server,
        b"GET /secret.txt\0 HTTP/1.1\r\nHost: t\r\n\r\n",
        400,
    );
    // Raw `..` sent through a socket, not normalized by any client.
    let r = one(&server, b"GET /.. HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(matches!(r.status, 400 | 403 | 404));
    assert_alive(&server);
}

/// RFC 9110 9.3.2: no content in any answer to HEAD, errors included.
fn regression_error_answers_to_head_carried_a_body(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);
    for (raw, status) in [
        (
            "HEAD /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n",
            "413",
        ),
        (
            "HEAD /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
            "400",
        ),
    ] {
        let mut s = std::net::TcpStream::connect(server.addr).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let bytes = read_rest(&mut s, LONG);
        let text = String::from_utf8_lossy(&bytes);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no head in {text:?}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("Connection: close"), "{head}");
        assert!(body.is_empty(), "{raw:?}: body {body:?}");
    }
}

/// RFC 9110 15.3.6: no content in a 205; and every status it defines has
/// its reason phrase, not "Unknown".
fn regression_205_carried_content_and_an_unknown_reason(model: &str) {
    let server = TestServer::start(model, &[]);
    let answer = |code: u16| {
        let raw = format!("GET /status/{code} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let mut s = std::net::TcpStream::connect(server.addr).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        String::from_utf8(read_rest(&mut s, LONG)).unwrap()
    };
    let text = answer(205);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 205 Reset Content\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Length: 0\r\n"), "{head}");
    assert!(body.is_empty(), "{body:?}");
    for (code, reason) in [
        (429, "Too Many Requests"),
        (502, "Bad Gateway"),
        (410, "Gone"),
    ] {
        let text = answer(code);
        assert!(
            text.starts_with(&format!("HTTP/1.1 {code} {reason}\r\n")),
            "{text}"
        );
    }
}

/// Regression: a bare CR or a field line without a colon, with no blank
/// line after it, was answered 408 when the header timeout ran out (10 s),
/// so a client that would never send a valid head held the connection that
/// long. It is 400 as soon as the line is complete.
fn regression_malformed_line_waited_for_the_header_timeout(model: &str) {
    let server = TestServer::start(model, &[]);
    for raw in [
        &b"GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: t\r\nno colon\r\n",
        b"GET /\r HTTP/1.1\r\n",
    ] {
        let mut s = server.connect();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        write_ignoring_errors(&mut s, raw);
        let r = read_response(&mut s, false)
            .unwrap_or_else(|e| panic!("no answer within 2 s to {:?}: {e}", show(raw)));
        assert_eq!(r.status, 400, "{:?}", show(raw));
    }
    assert_alive(&server);
}

/// Regression: HTTP/1.2 was answered 505. A later minor version of HTTP/1
/// is served as HTTP/1.1 (RFC 9110 section 2.5); another major is still
/// 505.
fn regression_http_1_2_was_505(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    s.write_all(
        b"GET /bytes/2 HTTP/1.2\r\nHost: t\r\n\r\nGET /bytes/3 HTTP/1.9\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    for body in [&b"ab"[..], b"abc"] {
        let r = read_response(&mut s, false).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, body));
    }
    expect_error(&server, b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
}
